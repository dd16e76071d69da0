//! The fuzz: random calls of every export, with random arguments, on several threads sharing
//! handles, each call's status predicted by a model of the C contract (a refusal exactly where the
//! contract says; on a GPU, success for a valid call). The calls of each export family are in the
//! family's module (`impl Fuzz` there); this module holds the shared state, what the model knows of
//! the machine ([`Facts`]), the choice of call and the threads.

use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::partition::SmGranularity;
use ordo_cuda_core::sys;
use ordo_cuda_core::Device;
use ordo_cuda_libs::nccl::{Communicator, Nccl};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

pub(crate) const CAP: usize = 4096;

/// The most bytes a call may give a buffer argument: a misaligned pointer starts 1 (pinned) or 2
/// (device) bytes into its allocation of `CAP` floats, and one whose offset suits the element
/// size is valid, so it must not reach the allocation's last bytes.
pub(crate) const ROOM: usize = CAP * 4 - 16;

/// Memory the fuzz draws pointers from: device buffers (on a GPU) or host memory (never handed to
/// the device without a driver: every call stops before), pinned buffers, pageable memory.
pub(crate) struct Memory {
    pub(crate) device: Vec<usize>,
    pub(crate) pinned: Vec<usize>,
    pub(crate) pageable: Vec<usize>,
    pub(crate) _host: Vec<Vec<f32>>,
}

impl Memory {
    pub(crate) fn new(gpu: bool) -> Memory {
        let mut host: Vec<Vec<f32>> =
            (0..6).map(|i| (0..CAP).map(|j| 0.25 + ((i * 31 + j) % 97) as f32 * 0.01).collect()).collect();
        let (mut device, mut pinned) = (Vec::new(), Vec::new());
        for buffer in host.iter().take(3) {
            if gpu {
                let mut d = null_mut();
                cuda(raw(|| unsafe { sys::cudaMalloc(&mut d, CAP * 4) }), "cudaMalloc");
                // Initialised (compute-sanitizer initcheck), and never zero.
                cuda(
                    raw(|| unsafe {
                        sys::cudaMemcpy(d, buffer.as_ptr().cast(), CAP * 4, sys::cudaMemcpyKind::cudaMemcpyHostToDevice)
                    }),
                    "cudaMemcpy",
                );
                device.push(d as usize);
                let mut h = null_mut();
                cuda(raw(|| unsafe { sys::cudaHostAlloc(&mut h, CAP * 4, 0) }), "cudaHostAlloc");
                unsafe { core::ptr::copy_nonoverlapping(buffer.as_ptr(), h.cast::<f32>(), CAP) };
                pinned.push(h as usize);
            }
        }
        let pageable = host.iter_mut().skip(3).map(|h| h.as_mut_ptr() as usize).collect::<Vec<_>>();
        if !gpu {
            device = pageable.clone();
            pinned = pageable.clone();
        }
        Memory { device, pinned, pageable, _host: host }
    }

    pub(crate) fn free(&self, gpu: bool) {
        if gpu {
            for &d in &self.device {
                raw(|| unsafe { sys::cudaFree(d as *mut c_void) });
            }
            for &h in &self.pinned {
                raw(|| unsafe { sys::cudaFreeHost(h as *mut c_void) });
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Cache,
    Ring,
    Timer,
    Pipeline,
    /// An SM partition (`ordo_sm_partition`).
    Partition,
    /// A stream of an SM partition (`ordo_sm_stream`).
    SmStream,
    /// A borrowed NCCL communicator (`ordo_nccl_comm_borrow`).
    Nccl,
}

/// Handles shared by the fuzz threads: live ones of each kind, and destroyed ones.
#[derive(Default)]
pub(crate) struct Handles {
    pub(crate) live: Vec<(usize, Kind)>,
    pub(crate) dead: Vec<usize>,
    /// Live pipelines' element size and chunk count (0: planned).
    pub(crate) pipelines: std::collections::BTreeMap<usize, (usize, usize)>,
    /// The pool `ordo_temporary_pool` gave for each device: one pool a device, every time.
    pub(crate) temporary_pools: std::collections::BTreeMap<i32, usize>,
}

/// What the model needs to know of the machine, asked once before the threads start.
pub(crate) struct Facts {
    /// CUDA devices (0 without a driver).
    pub(crate) devices: i32,
    /// Device 0's SMs as a split sees them (`None` without a driver, or without green contexts).
    pub(crate) sm: Option<SmGranularity>,
    /// Device 0's stream priorities, `(least, greatest)` (lower numbers are higher priorities).
    pub(crate) priorities: (i32, i32),
    /// The `ncclComm_t` of a one-rank communicator of device 0 made outside the C ABI (the Rust
    /// API's, standing in for an engine's), for `ordo_nccl_comm_borrow`: 0 where there is none (no
    /// GPU, no loadable NCCL, or `ORDO_FUZZ_NCCL=0`).
    pub(crate) nccl_comm: usize,
}

impl Facts {
    /// The machine's facts, and the communicator behind `nccl_comm` (to be dropped after the last
    /// handle borrowing it is released).
    fn new(gpu: bool) -> (Facts, Option<Communicator>) {
        let devices = ordo_cuda_core::device::count().map_or(0, |n| n as i32);
        if !gpu {
            return (Facts { devices, sm: None, priorities: (0, 0), nccl_comm: 0 }, None);
        }
        let device = Device::from_ordinal(0);
        let sm = SmGranularity::of(device).ok();
        let priorities = device.stream_priority_range().unwrap();
        let wanted = std::env::var("ORDO_FUZZ_NCCL").map_or(true, |v| v != "0");
        let owner = match Nccl::load() {
            Ok(nccl) if wanted => {
                let id = nccl.unique_id().unwrap();
                Some(Communicator::init_rank(&nccl, device, 1, &id, 0).unwrap())
            }
            _ => None,
        };
        let nccl_comm = owner.as_ref().map_or(0, |c| c.as_raw() as usize);
        (Facts { devices, sm, priorities, nccl_comm }, owner)
    }
}

/// A pointer argument: valid (of the right memory), null, misaligned, or another kind of memory.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ptr {
    Valid,
    Null,
    Misaligned,
    Pageable,
}

pub(crate) struct Fuzz<'m> {
    pub(crate) rng: Rng,
    pub(crate) mem: &'m Memory,
    pub(crate) gpu: bool,
    pub(crate) handles: &'m Mutex<Handles>,
    pub(crate) facts: &'m Facts,
    pub(crate) counts: std::collections::BTreeMap<OrdoStatus, u32>,
    /// Successful calls of each export (by the name `record` is given), to show which valid calls
    /// the run made.
    pub(crate) successes: std::collections::BTreeMap<&'static str, u32>,
    /// Tickets this thread acquired and has not submitted: (ring, ticket).
    pub(crate) tickets: Vec<(usize, usize)>,
    /// Time spent in each kind of call (by `which`): total and longest, to tell a slow export.
    pub(crate) times: [(std::time::Duration, std::time::Duration); CALL_KINDS],
}

/// One kind of call of the fuzz: a family's method (in the family's module), given the stream
/// and whether it captures.
type Call = fn(&mut Fuzz<'_>, sys::cudaStream_t, bool);

/// Every kind of call [`Fuzz::call`] chooses among, each as likely as another (an export listed
/// twice is called twice as often), with its name for the timings. [`CALL_KINDS`] is its length:
/// a kind added here is called, with nothing to count.
const CALLS: &[(&str, Call)] = &[
    ("version_and_last_error", |f, _, _| f.version_and_last_error()),
    ("runtime_version", |f, _, _| f.runtime_version()),
    ("status_strings", |f, _, _| f.status_strings()),
    ("status_strings", |f, _, _| f.status_strings()),
    ("status_strings", |f, _, _| f.status_strings()),
    ("gemv_normalize", |f, s, _| f.gemv_normalize(s)),
    ("frame_filter", |f, s, _| f.frame_filter(s)),
    ("pdl_chain", |f, s, _| f.pdl_chain(s)),
    ("pipeline_run", |f, s, _| f.pipeline_run(s)),
    ("graph_cache_create", |f, _, _| f.graph_cache_create()),
    ("graph_cache_capture_all", |f, s, capturing| f.graph_cache_run(true, s, capturing)),
    ("graph_cache_run", |f, s, capturing| f.graph_cache_run(false, s, capturing)),
    ("graph_cache_destroy", |f, _, _| f.graph_cache_destroy()),
    ("ring_create", |f, _, _| f.ring_create()),
    ("ring_acquire", |f, _, _| f.ring_acquire()),
    ("ring_submit", |f, s, _| f.ring_submit(s)),
    ("ring_destroy", |f, _, _| f.ring_destroy()),
    ("timer_create", |f, _, _| f.timer_create()),
    ("timer_start", |f, s, _| f.timer_record(true, s)),
    ("timer_stop", |f, s, _| f.timer_record(false, s)),
    ("timer_elapsed", |f, _, _| f.timer_elapsed()),
    ("timer_destroy", |f, _, _| f.timer_destroy()),
    ("ring_release", |f, _, _| f.ring_release()),
    ("destroy_anything", |f, _, _| f.destroy_anything()),
    ("pdl_plan_launch", |f, _, _| f.pdl_plan_launch()),
    ("launch_kernel", |f, s, capturing| f.launch_kernel(s, capturing)),
    ("pipeline_create", |f, _, _| f.pipeline_create()),
    ("pipeline_run_on", |f, s, _| f.pipeline_run_on(s)),
    ("pipeline_destroy", |f, _, _| f.pipeline_destroy()),
    ("pipeline_run_stencil", |f, s, _| f.pipeline_run_stencil(s)),
    ("temporary_pool", |f, _, _| f.temporary_pool()),
    ("sm_split_query", |f, _, _| f.sm_split_query()),
    ("sm_partitions_create", |f, _, _| f.sm_partitions_create()),
    ("sm_partition_sm_count", |f, _, _| f.sm_partition_sm_count()),
    ("sm_partition_destroy", |f, _, _| f.sm_partition_destroy()),
    ("sm_stream_create", |f, _, _| f.sm_stream_create()),
    ("sm_stream_handle", |f, _, _| f.sm_stream_handle()),
    ("sm_stream_destroy", |f, _, _| f.sm_stream_destroy()),
    ("nccl_borrow", |f, _, _| f.nccl_borrow()),
    ("nccl_release", |f, _, _| f.nccl_release()),
    ("nccl_refused_ends", |f, _, _| f.nccl_refused_ends()),
    ("nccl_wait", |f, s, capturing| f.nccl_wait(s, capturing)),
];

/// How many kinds of call [`Fuzz::call`] chooses among.
pub(crate) const CALL_KINDS: usize = CALLS.len();

impl Fuzz<'_> {
    pub(crate) fn ptr_kind(&mut self) -> Ptr {
        match self.rng.below(10) {
            0 => Ptr::Null,
            1 => Ptr::Misaligned,
            2 => Ptr::Pageable,
            _ => Ptr::Valid,
        }
    }

    pub(crate) fn device_ptr(&mut self, k: Ptr) -> *mut f32 {
        let base = self.mem.device[self.rng.below(self.mem.device.len() as u64) as usize];
        match k {
            Ptr::Valid => base as *mut f32,
            Ptr::Null => null_mut(),
            Ptr::Misaligned => (base + 2) as *mut f32,
            Ptr::Pageable => self.mem.pageable[0] as *mut f32,
        }
    }

    pub(crate) fn pinned_ptr(&mut self, k: Ptr) -> *mut f32 {
        let base = self.mem.pinned[self.rng.below(self.mem.pinned.len() as u64) as usize];
        match k {
            Ptr::Valid => base as *mut f32,
            Ptr::Null => null_mut(),
            Ptr::Misaligned => (base + 1) as *mut f32,
            Ptr::Pageable => self.mem.pageable[1] as *mut f32,
        }
    }

    /// A handle for a call expecting `kind`: `(handle, whether it is a live one of that kind)`.
    pub(crate) fn handle(&mut self, kind: Kind) -> (usize, bool) {
        let h = self.handles.lock().unwrap();
        let of_kind: Vec<usize> = h.live.iter().filter(|(_, k)| *k == kind).map(|(t, _)| *t).collect();
        let other: Vec<usize> = h.live.iter().filter(|(_, k)| *k != kind).map(|(t, _)| *t).collect();
        match self.rng.below(8) {
            0 => (0, false),
            1 if !h.dead.is_empty() => (h.dead[self.rng.below(h.dead.len() as u64) as usize], false),
            2 if !other.is_empty() => (other[self.rng.below(other.len() as u64) as usize], false),
            3 => (self.rng.next() as usize, false),
            _ if !of_kind.is_empty() => (of_kind[self.rng.below(of_kind.len() as u64) as usize], true),
            _ => (0, false),
        }
    }

    pub(crate) fn add(&mut self, handle: usize, kind: Kind) {
        let mut h = self.handles.lock().unwrap();
        h.live.push((handle, kind));
        // Bounded: the oldest beyond 12 are destroyed (by whoever adds).
        while h.live.len() > 12 {
            let (old, kind) = h.live.remove(0);
            h.dead.push(old);
            drop(h);
            destroy(old, kind);
            h = self.handles.lock().unwrap();
        }
    }

    pub(crate) fn record(&mut self, status: OrdoStatus, what: &'static str) -> OrdoStatus {
        check(status, what);
        if ordo_cuda_capi::status::failed(status) {
            // Every failing export records its status as this thread's last error (ORDO_NOT_READY
            // is no failure: it leaves the record as it was).
            let mut info = core::mem::MaybeUninit::<OrdoErrorInfo>::zeroed();
            // SAFETY: zeroed is a valid OrdoErrorInfo; size set before the call.
            let info = unsafe {
                (*info.as_mut_ptr()).size = core::mem::size_of::<OrdoErrorInfo>();
                assert_eq!(ordo_last_error(info.as_mut_ptr()), ORDO_SUCCESS);
                info.assume_init()
            };
            assert_eq!(info.status, status, "{what}: the thread's last error");
            assert!(info.message[0] != 0, "{what}: an empty message");
        }
        *self.counts.entry(status).or_insert(0) += 1;
        if status == ORDO_SUCCESS {
            *self.successes.entry(what).or_insert(0) += 1;
        }
        status
    }

    /// One random call of a random export on `stream`. `capturing`: the stream captures (then
    /// every call must leave the capture valid, which the caller checks).
    pub(crate) fn call(&mut self, stream: sys::cudaStream_t, capturing: bool) {
        let which = self.rng.below(CALL_KINDS as u64) as usize;
        let start = std::time::Instant::now();
        (CALLS[which].1)(self, stream, capturing);
        let took = start.elapsed();
        let t = &mut self.times[which];
        t.0 += took;
        t.1 = t.1.max(took);
    }

    /// Allocation options for a `_with` export, written into `buf`: NULL, valid (no pool, or the
    /// device's default pool on a GPU), a size too small, or misaligned. Also whether they are
    /// refused (then any `_with` call gives `ORDO_ERROR_INVALID_ARGUMENT`; the plain form ignores them).
    pub(crate) fn alloc_options(&mut self, buf: &mut [u64; 4]) -> (*const OrdoAllocOptions, bool) {
        let mut o = OrdoAllocOptions { size: core::mem::size_of::<OrdoAllocOptions>(), pool: null_mut() };
        if self.gpu && self.rng.chance(2) {
            cuda(raw(|| unsafe { sys::cudaDeviceGetDefaultMemPool(&mut o.pool, 0) }), "cudaDeviceGetDefaultMemPool");
        }
        match self.rng.below(6) {
            0 => (null(), false),
            1 => {
                o.size -= 1;
                let p = buf.as_mut_ptr().cast::<OrdoAllocOptions>();
                unsafe { p.write(o) };
                (p, true)
            }
            2 => {
                let p = unsafe { buf.as_mut_ptr().cast::<u8>().add(2) }.cast::<OrdoAllocOptions>();
                unsafe { p.write_unaligned(o) };
                (p, true)
            }
            _ => {
                let p = buf.as_mut_ptr().cast::<OrdoAllocOptions>();
                unsafe { p.write(o) };
                (p, false)
            }
        }
    }

    /// Moves `handle` to the dead ones after a destroy of `kind` (a destroy of another kind left
    /// it alone).
    pub(crate) fn forget(&mut self, handle: usize, kind: Kind) {
        let mut h = self.handles.lock().unwrap();
        if let Some(i) = h.live.iter().position(|&(t, k)| t == handle && k == kind) {
            h.live.remove(i);
            h.dead.push(handle);
        }
    }
}

pub(crate) fn destroy(handle: usize, kind: Kind) {
    match kind {
        Kind::Cache => ordo_graph_cache_destroy(handle as *mut OrdoGraphCache),
        Kind::Ring => ordo_staging_ring_destroy(handle as *mut OrdoStagingRing),
        Kind::Timer => ordo_timer_destroy(handle as *mut OrdoTimer),
        Kind::Pipeline => ordo_pipeline_destroy(handle as *mut OrdoPipeline),
        Kind::Partition => ordo_sm_partition_destroy(handle as *mut OrdoSmPartition),
        Kind::SmStream => ordo_sm_stream_destroy(handle as *mut OrdoSmStream),
        Kind::Nccl => {
            // A borrowed handle ends with a release (ORDO_ERROR_INVALID_HANDLE: released meanwhile).
            let st = ordo_nccl_comm_release(handle as *mut OrdoNcclComm);
            assert!(st == ORDO_SUCCESS || st == ORDO_ERROR_INVALID_HANDLE, "release: {st}");
        }
    }
}

/// The fuzz on several threads. On a GPU each thread also captures its own stream now and then
/// (in a random mode) around a few random calls on it: the capture must stay valid through every
/// call, end cleanly and instantiate; its graph is launched once.
pub(crate) fn fuzz(threads: u64, calls: usize) {
    let gpu = gpu();
    let mem = Memory::new(gpu);
    let (facts, nccl_owner) = Facts::new(gpu);
    let handles = Mutex::new(Handles::default());
    let totals = Mutex::new(std::collections::BTreeMap::new());
    let successes = Mutex::new(std::collections::BTreeMap::new());
    let times = Mutex::new([(std::time::Duration::ZERO, std::time::Duration::ZERO); CALL_KINDS]);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (mem, handles, totals, times, facts) = (&mem, &handles, &totals, &times, &facts);
            let successes = &successes;
            scope.spawn(move || {
                let own = if gpu {
                    let mut s = null_mut();
                    cuda(
                        raw(|| unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }),
                        "cudaStreamCreate",
                    );
                    s
                } else {
                    null_mut()
                };
                // On a GPU, no legacy stream: other fuzz threads' graph caches capture their
                // cudaStreamPerThread (a blocking stream), and legacy-stream work beside a capture
                // on a blocking stream crashes the driver (`docs/cuda-behaviours.md`, CB-03).
                let legacy = (!gpu).then_some(sys::cudaStreamLegacy());
                let streams: Vec<sys::cudaStream_t> = [null_mut(), sys::cudaStreamPerThread()]
                    .into_iter()
                    .chain(legacy)
                    .chain(gpu.then_some(own))
                    .collect();
                let mut f = Fuzz {
                    rng: Rng(0x5eed_1234_abcd_ef01 ^ (t * 0x1000_0001)),
                    mem,
                    gpu,
                    handles,
                    facts,
                    counts: Default::default(),
                    successes: Default::default(),
                    tickets: Vec::new(),
                    times: [(std::time::Duration::ZERO, std::time::Duration::ZERO); CALL_KINDS],
                };
                let mut i = 0;
                while i < calls {
                    if gpu && f.rng.chance(40) {
                        // Not global mode: the other fuzz threads make capture-unsafe calls
                        // meanwhile, which global mode forbids (the driver crashes: CB-02).
                        let mode = CONCURRENT_MODES[f.rng.below(2) as usize];
                        cuda(raw(|| unsafe { sys::cudaStreamBeginCapture(own, mode) }), "begin capture");
                        for _ in 0..1 + f.rng.below(5) {
                            f.call(own, true);
                            i += 1;
                            assert_eq!(
                                capture_status(own),
                                sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive,
                                "an ordo call invalidated the caller's {mode:?} capture"
                            );
                        }
                        let mut g = null_mut();
                        cuda(raw(|| unsafe { sys::cudaStreamEndCapture(own, &mut g) }), "end capture");
                        let mut ge = null_mut();
                        cuda(raw(|| unsafe { sys::cudaGraphInstantiate(&mut ge, g, 0) }), "instantiate");
                        cuda(raw(|| unsafe { sys::cudaGraphLaunch(ge, own) }), "launch");
                        cuda(raw(|| unsafe { sys::cudaStreamSynchronize(own) }), "synchronize the replay");
                        raw(|| unsafe {
                            sys::cudaGraphExecDestroy(ge);
                            sys::cudaGraphDestroy(g);
                        });
                    } else {
                        let s = streams[f.rng.below(streams.len() as u64) as usize];
                        f.call(s, false);
                        i += 1;
                    }
                }
                if gpu {
                    for s in streams.iter().filter(|s| !s.is_null()) {
                        cuda(raw(|| unsafe { sys::cudaStreamSynchronize(*s) }), "synchronize");
                    }
                    raw(|| unsafe { sys::cudaStreamDestroy(own) });
                }
                let mut totals = totals.lock().unwrap();
                for (k, v) in f.counts {
                    *totals.entry(k).or_insert(0u32) += v;
                }
                let mut successes = successes.lock().unwrap();
                for (k, v) in f.successes {
                    *successes.entry(k).or_insert(0u32) += v;
                }
                let mut times = times.lock().unwrap();
                for (all, one) in times.iter_mut().zip(f.times) {
                    all.0 += one.0;
                    all.1 = all.1.max(one.1);
                }
            });
        }
    });
    let left = std::mem::take(&mut handles.lock().unwrap().live);
    for (h, kind) in left {
        destroy(h, kind);
    }
    // Every borrowed handle is released: the communicator goes back to its owner, who ends it.
    drop(nccl_owner);
    println!("statuses seen: {:?}", totals.lock().unwrap());
    println!("successful calls by export: {:?}", successes.lock().unwrap());
    let mut slowest: Vec<_> = times.lock().unwrap().iter().copied().enumerate().collect();
    slowest.sort_by_key(|(_, (total, _))| std::cmp::Reverse(*total));
    for (which, (total, longest)) in slowest.iter().take(5) {
        println!("call kind {which} ({}): {total:?} in all, longest {longest:?}", CALLS[*which].0);
    }
    println!(
        "legacy-stream calls refused while a blocking stream captured: {}",
        LEGACY_CONFLICTS.load(Ordering::Relaxed)
    );
    if gpu {
        cuda(raw(|| unsafe { sys::cudaDeviceSynchronize() }), "device synchronize");
        mem.free(gpu);
        // Refused captures of the legacy stream leave a non-sticky error in the runtime's
        // last-error slot; the context itself is fine.
        if let Err(e) = ordo_cuda_core::error::take_last_error() {
            assert!(!e.is_sticky(), "{e}");
        }
    }
}
