//! The C ABI (`include/ordo.h`): for C and C++ programs that own their streams.
//!
//! Every function that enqueues work takes the caller's `cudaStream_t` and follows the
//! stream-correct rules: it enqueues on that stream only, never synchronises, allocates temporaries
//! with `cudaMallocAsync` on it and joins internal forks back with events. A null stream is refused
//! (`ORDO_ERROR_INVALID_ARGUMENT`): pass `cudaStreamLegacy` or `cudaStreamPerThread` to mean a
//! default stream, so that it is never used by accident.
//!
//! Status codes: `0` is success; CUDA's own codes pass through unchanged (1 to 999); ordo's own
//! sit at 10001 and up, where CUDA has none. No panic crosses the boundary: each function catches
//! one and returns `ORDO_ERROR_PANIC`. Null pointers, zero sizes and handles of the wrong kind give
//! a status, never a crash.
//!
//! The header and these exports are checked against each other by a test (`ffi-tests`).
#![allow(clippy::missing_safety_doc)]

use core::ffi::{c_char, c_int, c_void, CStr};
use ordo_core::graph_cache::{default_buckets, GraphCache, Overflow};
use ordo_core::pipeline::{Buffers, Pipeline, Plan, Schedule};
use ordo_core::staging::{Slot, StagingRing};
use ordo_core::{sys, Device, DeviceSlice, DeviceSliceMut, Error, PinnedSlice, PinnedSliceMut, StreamRef, TimingEvent, UsageKind};
use ordo_kernels::{ChainPdl, ChainPlan};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// A status: 0 success, CUDA's codes, or ordo's below.
pub type OrdoStatus = c_int;

/// Success.
pub const ORDO_SUCCESS: OrdoStatus = 0;
/// A null pointer, zero size, mismatched sizes, a handle of the wrong kind, a value out of range.
pub const ORDO_ERROR_INVALID_ARGUMENT: OrdoStatus = 10001;
/// Pageable host memory where pinned or registered memory is required.
pub const ORDO_ERROR_PAGEABLE_MEMORY: OrdoStatus = 10002;
/// Not supported by the CUDA version ordo was built against, or by the device.
pub const ORDO_ERROR_NOT_SUPPORTED: OrdoStatus = 10003;
/// A Rust panic was caught at the boundary.
pub const ORDO_ERROR_PANIC: OrdoStatus = 10004;
/// Another library (cuBLAS, NCCL) failed.
pub const ORDO_ERROR_LIBRARY: OrdoStatus = 10005;

/// The status for an ordo error.
pub fn status_of(e: &Error) -> OrdoStatus {
    match e {
        Error::Cuda(c) => c.code().0 as OrdoStatus,
        Error::Usage(u) => match u.kind {
            UsageKind::InvalidArgument => ORDO_ERROR_INVALID_ARGUMENT,
            UsageKind::PageableMemory => ORDO_ERROR_PAGEABLE_MEMORY,
            UsageKind::NotSupported => ORDO_ERROR_NOT_SUPPORTED,
            UsageKind::Panicked => ORDO_ERROR_PANIC,
            _ => ORDO_ERROR_INVALID_ARGUMENT,
        },
        Error::Library(_) => ORDO_ERROR_LIBRARY,
    }
}

/// Runs `f`, turning its error into a status and a panic into `ORDO_ERROR_PANIC`.
fn guard(f: impl FnOnce() -> Result<(), Error>) -> OrdoStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => ORDO_SUCCESS,
        Ok(Err(e)) => status_of(&e),
        Err(_) => ORDO_ERROR_PANIC,
    }
}

fn invalid(what: &'static str) -> Error {
    Error::invalid("ordo C ABI", what)
}

fn stream_ref<'a>(raw: sys::cudaStream_t) -> Result<StreamRef<'a>, Error> {
    // SAFETY: the caller passes a live stream (the C contract); null is refused here.
    unsafe { StreamRef::from_raw(raw) }.ok_or(invalid("null stream: pass cudaStreamLegacy or cudaStreamPerThread for a default stream"))
}

/// Refuses a null pointer, and one not aligned for `T` (a misaligned device pointer would fault
/// on the device, a sticky error, instead of failing here).
fn non_null<T>(p: *const T, what: &'static str) -> Result<(), Error> {
    if p.is_null() {
        Err(invalid(what))
    } else if (p as usize) % core::mem::align_of::<T>() != 0 {
        Err(invalid("pointer not aligned for its element type"))
    } else {
        Ok(())
    }
}

/// What `cudaPointerGetAttributes` says of `p`.
fn attributes(p: *const c_void) -> Result<sys::cudaPointerAttributes, Error> {
    // Its layout differs between CUDA 12 and 13 (13 adds reserved words): default-construct it.
    let mut attrs = sys::cudaPointerAttributes::default();
    // SAFETY: `attrs` is writable; any pointer value may be asked about.
    ordo_core::error::check(unsafe { sys::cudaPointerGetAttributes(&mut attrs, p) }, "cudaPointerGetAttributes")?;
    Ok(attrs)
}

fn require_pinned(p: *const c_void) -> Result<(), Error> {
    if attributes(p)?.type_ != sys::cudaMemoryType::cudaMemoryTypeHost {
        return Err(Error::usage(UsageKind::PageableMemory, "ordo C ABI", "host memory must be pinned (cudaHostAlloc) or registered (cudaHostRegister)"));
    }
    Ok(())
}

/// Device or managed memory, of any device (what a copy needs).
fn require_device(p: *const c_void) -> Result<(), Error> {
    let t = attributes(p)?.type_;
    if t != sys::cudaMemoryType::cudaMemoryTypeDevice && t != sys::cudaMemoryType::cudaMemoryTypeManaged {
        return Err(invalid("expected device (or managed) memory"));
    }
    Ok(())
}

/// Device memory of `device`, or managed memory (what a kernel on `device` may touch). Device
/// memory of another device is refused: without peer access the kernel would fault there, a sticky
/// error that loses that device's context.
fn require_device_on(p: *const c_void, device: Device) -> Result<(), Error> {
    let a = attributes(p)?;
    match a.type_ {
        sys::cudaMemoryType::cudaMemoryTypeManaged => Ok(()),
        sys::cudaMemoryType::cudaMemoryTypeDevice if a.device == device.ordinal() => Ok(()),
        sys::cudaMemoryType::cudaMemoryTypeDevice => Err(invalid("device memory of another device than the stream's")),
        _ => Err(invalid("expected device (or managed) memory")),
    }
}

/// Whether the pointer checks may run: not while `stream` is capturing, where CUDA refuses
/// `cudaPointerGetAttributes` (cudaErrorStreamCaptureUnsupported, measured) and the refusal would
/// invalidate the caller's capture. Captured work meets CUDA's own checks when the graph runs.
fn may_check(s: StreamRef<'_>) -> bool {
    matches!(s.capture_status(), Ok(ordo_core::graph::CaptureStatus::None))
}

static VERSION: &CStr = c"0.1.0";

/// ordo's version, e.g. "0.1.0".
#[no_mangle]
pub extern "C" fn ordo_version() -> *const c_char {
    VERSION.as_ptr()
}

/// The CUDA version ordo was built against (`CUDART_VERSION`, e.g. 13000).
#[no_mangle]
pub extern "C" fn ordo_cuda_version() -> c_int {
    sys::CUDA_VERSION as c_int
}

/// The CUDA runtime version in use (`cudaRuntimeGetVersion`).
#[no_mangle]
pub unsafe extern "C" fn ordo_runtime_version(out: *mut c_int) -> OrdoStatus {
    guard(|| {
        non_null(out, "null out pointer")?;
        let v = ordo_core::device::runtime_version()?;
        // SAFETY: checked non-null; the caller passes a writable int.
        unsafe { *out = v as c_int };
        Ok(())
    })
}

/// The status's name: `ordo_success`, `ORDO_ERROR_*`, or CUDA's name for a CUDA code.
#[no_mangle]
pub extern "C" fn ordo_status_name(status: OrdoStatus) -> *const c_char {
    match status {
        ORDO_SUCCESS => c"ORDO_SUCCESS".as_ptr(),
        ORDO_ERROR_INVALID_ARGUMENT => c"ORDO_ERROR_INVALID_ARGUMENT".as_ptr(),
        ORDO_ERROR_PAGEABLE_MEMORY => c"ORDO_ERROR_PAGEABLE_MEMORY".as_ptr(),
        ORDO_ERROR_NOT_SUPPORTED => c"ORDO_ERROR_NOT_SUPPORTED".as_ptr(),
        ORDO_ERROR_PANIC => c"ORDO_ERROR_PANIC".as_ptr(),
        ORDO_ERROR_LIBRARY => c"ORDO_ERROR_LIBRARY".as_ptr(),
        // SAFETY: cudaGetErrorName returns a static string for any value.
        s if s > 0 => unsafe { sys::cudaGetErrorName(sys::cudaError(s as u32)) },
        _ => c"ORDO_UNKNOWN_STATUS".as_ptr(),
    }
}

/// A description of the status.
#[no_mangle]
pub extern "C" fn ordo_status_string(status: OrdoStatus) -> *const c_char {
    match status {
        ORDO_SUCCESS => c"success".as_ptr(),
        ORDO_ERROR_INVALID_ARGUMENT => c"invalid argument (null pointer, zero or mismatched size, wrong handle, value out of range)".as_ptr(),
        ORDO_ERROR_PAGEABLE_MEMORY => c"pageable host memory where pinned or registered memory is required".as_ptr(),
        ORDO_ERROR_NOT_SUPPORTED => c"not supported by this CUDA version or device".as_ptr(),
        ORDO_ERROR_PANIC => c"a Rust panic was caught at the C boundary".as_ptr(),
        ORDO_ERROR_LIBRARY => c"a CUDA library (cuBLAS, NCCL) call failed".as_ptr(),
        // SAFETY: cudaGetErrorString returns a static string for any value.
        s if s > 0 => unsafe { sys::cudaGetErrorString(sys::cudaError(s as u32)) },
        _ => c"unknown status".as_ptr(),
    }
}

/// 1 when the status is a sticky CUDA error (the context is lost), else 0.
#[no_mangle]
pub extern "C" fn ordo_status_is_sticky(status: OrdoStatus) -> c_int {
    c_int::from(status > 0 && status < 10000 && ordo_core::error::is_sticky_code(sys::cudaError(status as u32)))
}

/// y = normalize(A x) on `stream`; `a` row-major rows x cols, all device memory.
#[no_mangle]
pub unsafe extern "C" fn ordo_gemv_normalize(
    stream: sys::cudaStream_t,
    a: *const f32,
    x: *const f32,
    y: *mut f32,
    rows: usize,
    cols: usize,
) -> OrdoStatus {
    guard(|| {
        let s = stream_ref(stream)?;
        non_null(a, "null a")?;
        non_null(x, "null x")?;
        non_null(y, "null y")?;
        let cells = rows.checked_mul(cols).ok_or(invalid("rows * cols overflows"))?;
        if may_check(s) {
            let device = s.device_or_current()?;
            for p in [a, x, y.cast_const()] {
                require_device_on(p.cast(), device)?;
            }
        }
        // SAFETY: the C contract: device buffers of the stated sizes, live until the work completes.
        unsafe {
            ordo_kernels::gemv_normalize(
                s,
                DeviceSlice::from_raw_parts(a, cells),
                DeviceSlice::from_raw_parts(x, cols),
                DeviceSliceMut::from_raw_parts(y, rows),
                rows,
                cols,
            )
        }
    })
}

/// Grayscale + 5x5 Gaussian blur of one interleaved-RGB frame on `stream` (device memory).
#[no_mangle]
pub unsafe extern "C" fn ordo_frame_filter(stream: sys::cudaStream_t, rgb: *const u8, out: *mut u8, width: usize, height: usize) -> OrdoStatus {
    guard(|| {
        let s = stream_ref(stream)?;
        non_null(rgb, "null rgb")?;
        non_null(out, "null out")?;
        let pixels = width.checked_mul(height).ok_or(invalid("width * height overflows"))?;
        let rgb_len = pixels.checked_mul(3).ok_or(invalid("width * height * 3 overflows"))?;
        if may_check(s) {
            let device = s.device_or_current()?;
            require_device_on(rgb.cast(), device)?;
            require_device_on(out.cast_const().cast(), device)?;
        }
        // SAFETY: the C contract.
        unsafe { ordo_kernels::frame_filter(s, DeviceSlice::from_raw_parts(rgb, rgb_len), DeviceSliceMut::from_raw_parts(out, pixels), width, height) }
    })
}

/// `steps` dependent kernels out = prev * scale + 1 ping-ponging between `a` and `b` on `stream`.
/// `pdl`: 0 off, 1 ordo's rule (early trigger within one wave, late beyond).
#[no_mangle]
pub unsafe extern "C" fn ordo_pdl_chain(stream: sys::cudaStream_t, a: *mut f32, b: *mut f32, scale: *const f32, n: usize, steps: usize, pdl: c_int) -> OrdoStatus {
    guard(|| {
        let s = stream_ref(stream)?;
        non_null(a, "null a")?;
        non_null(b, "null b")?;
        non_null(scale, "null scale")?;
        let mode = match pdl {
            0 => ChainPdl::Off,
            1 => ChainPdl::Auto,
            _ => return Err(invalid("pdl must be 0 or 1")),
        };
        // While capturing, no queries of the stream or the pointers: the current device plans.
        let device = if may_check(s) {
            let device = s.device_or_current()?;
            for p in [a.cast_const(), b.cast_const(), scale] {
                require_device_on(p.cast(), device)?;
            }
            device
        } else {
            Device::current()?
        };
        let plan = ChainPlan::new(device, n, mode)?;
        // SAFETY: the C contract.
        unsafe {
            ordo_kernels::chain(s, DeviceSliceMut::from_raw_parts(a, n), DeviceSliceMut::from_raw_parts(b, n), DeviceSlice::from_raw_parts(scale, n), steps, &plan)
        }
    })
}

/// A compute callback for the pipeline: runs on `stream` over `n` elements of `input` (device)
/// into `output` (device). Returns a status (0 on success).
pub type OrdoComputeFn = Option<unsafe extern "C" fn(stream: sys::cudaStream_t, input: *const f32, output: *mut f32, n: usize, user: *mut c_void) -> OrdoStatus>;

/// The chunked pipeline over `n` floats: copy `host_in` (pinned) into `dev_in`, compute into
/// `dev_out` (the callback, or ordo's 64-step kernel when `compute` is NULL), copy `dev_out` out to
/// `host_out` (pinned), in `chunks` chunks, staged over three streams forked from and joined back to
/// `stream`. Pageable host memory gives `ORDO_ERROR_PAGEABLE_MEMORY`.
#[no_mangle]
pub unsafe extern "C" fn ordo_pipeline_run(
    stream: sys::cudaStream_t,
    host_in: *const f32,
    dev_in: *mut f32,
    dev_out: *mut f32,
    host_out: *mut f32,
    n: usize,
    chunks: usize,
    compute: OrdoComputeFn,
    user: *mut c_void,
) -> OrdoStatus {
    guard(|| {
        let s = stream_ref(stream)?;
        for (p, what) in [(host_in as *const c_void, "null host_in"), (dev_in as *const c_void, "null dev_in"), (dev_out as *const c_void, "null dev_out"), (host_out as *const c_void, "null host_out")] {
            non_null(p, what)?;
        }
        if n == 0 {
            return Err(invalid("zero elements"));
        }
        require_pinned(host_in.cast())?;
        require_pinned(host_out.cast())?;
        // The pipeline of the stream's device, run with that device current (its events and
        // streams are made there); device buffers must be that device's.
        let device = s.device_or_current()?;
        require_device_on(dev_in.cast_const().cast(), device)?;
        require_device_on(dev_out.cast_const().cast(), device)?;
        let mut pipelines = PIPELINES.lock().map_err(|_| invalid("pipeline lock poisoned"))?;
        let index = match pipelines.iter().position(|p| p.device() == device) {
            Some(i) => i,
            None => {
                pipelines.push(device.with_current(|| Pipeline::new(3))?);
                pipelines.len() - 1
            }
        };
        let p = &mut pipelines[index];
        // SAFETY: the C contract: buffers of n elements, live until the work on `stream` completes.
        let buffers = unsafe {
            Buffers {
                input: PinnedSlice::from_raw_parts(host_in, n),
                dev_in: DeviceSliceMut::from_raw_parts(dev_in, n),
                dev_out: DeviceSliceMut::from_raw_parts(dev_out, n),
                output: PinnedSliceMut::from_raw_parts(host_out, n),
            }
        };
        let plan = Plan { chunks, schedule: Schedule::Staged };
        let compute_chunk = |cs: StreamRef<'_>, i: DeviceSliceMut<'_, f32>, o: DeviceSliceMut<'_, f32>| match compute {
            // SAFETY: the caller's callback, with the chunk's device pointers and its user pointer.
            Some(f) => match unsafe { f(cs.as_raw(), i.as_mut_ptr(), o.as_mut_ptr(), i.len(), user) } {
                ORDO_SUCCESS => Ok(()),
                code => Err(Error::Library(ordo_core::LibraryError { library: "compute callback", call: "ordo_compute_fn", status: code })),
            },
            // SAFETY: the chunk's views; live as the buffers are.
            None => unsafe { ordo_kernels::heavy_into(cs, i.as_slice(), o) },
        };
        // SAFETY: as above.
        device.with_current(|| unsafe { p.run(s, buffers, plan, compute_chunk) })
    })
}

// One pipeline (its streams and events) a device, shared by C callers; not a hot path.
static PIPELINES: Mutex<Vec<Pipeline>> = Mutex::new(Vec::new());

const CACHE_MAGIC: u64 = 0x6f72_646f_6361_6368; // "ordocach"
const RING_MAGIC: u64 = 0x6f72_646f_7269_6e67; // "ordoring"
const TIMER_MAGIC: u64 = 0x6f72_646f_7469_6d65; // "ordotime"

/// A capture callback: enqueue the work for `bucket` elements on `stream` (which is capturing).
pub type OrdoCaptureFn = Option<unsafe extern "C" fn(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus>;

type CacheBody = Box<dyn FnMut(StreamRef<'_>, usize) -> ordo_core::Result<()> + Send>;

/// An opaque graph bucket cache.
#[repr(C)]
pub struct OrdoGraphCache {
    magic: u64,
    cache: GraphCache<CacheBody>,
}

/// An opaque staging ring.
#[repr(C)]
pub struct OrdoStagingRing {
    magic: u64,
    ring: StagingRing<u8>,
    taken: Mutex<Vec<Option<Slot<u8>>>>,
}

/// An opaque pair of timing events.
#[repr(C)]
pub struct OrdoTimer {
    magic: u64,
    start: TimingEvent,
    stop: TimingEvent,
}

unsafe fn handle<'a, T>(p: *mut T, magic: u64, field: impl Fn(&T) -> u64) -> Result<&'a mut T, Error> {
    if p.is_null() || (p as usize) % core::mem::align_of::<T>() != 0 {
        return Err(invalid("null or misaligned handle"));
    }
    // SAFETY: the caller passes a handle ordo created (or garbage, which the magic check catches as
    // far as reading the first word can).
    let h = unsafe { &mut *p };
    if field(h) != magic {
        return Err(invalid("handle of the wrong kind or already destroyed"));
    }
    Ok(h)
}

/// Creates a graph bucket cache over `buckets` (strictly increasing; NULL/0 for 1, 2, 4, ... 256).
/// `body` captures the work for a bucket; `overflow_eager` runs sizes over the largest bucket
/// eagerly instead of failing.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_create(
    buckets: *const usize,
    n_buckets: usize,
    overflow_eager: c_int,
    body: OrdoCaptureFn,
    user: *mut c_void,
    out: *mut *mut OrdoGraphCache,
) -> OrdoStatus {
    guard(|| {
        non_null(out, "null out")?;
        let body = body.ok_or(invalid("null capture callback"))?;
        let list = if buckets.is_null() || n_buckets == 0 {
            default_buckets()
        } else {
            // SAFETY: the caller passes n_buckets values.
            unsafe { core::slice::from_raw_parts(buckets, n_buckets) }.to_vec()
        };
        let user = user as usize;
        let f: CacheBody = Box::new(move |s: StreamRef<'_>, bucket: usize| {
            // SAFETY: the caller's callback with its own user pointer.
            match unsafe { body(s.as_raw(), bucket, user as *mut c_void) } {
                ORDO_SUCCESS => Ok(()),
                code => Err(Error::Library(ordo_core::LibraryError { library: "capture callback", call: "ordo_capture_fn", status: code })),
            }
        });
        let overflow = if overflow_eager != 0 { Overflow::Eager } else { Overflow::Error };
        let cache = GraphCache::new(list, overflow, f)?;
        // SAFETY: checked non-null.
        unsafe { *out = Box::into_raw(Box::new(OrdoGraphCache { magic: CACHE_MAGIC, cache })) };
        Ok(())
    })
}

/// Captures every bucket's graph now, on `stream`.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_capture_all(cache: *mut OrdoGraphCache, stream: sys::cudaStream_t) -> OrdoStatus {
    guard(|| {
        // SAFETY: checked handle.
        let c = unsafe { handle(cache, CACHE_MAGIC, |h| h.magic) }?;
        c.cache.capture_all(stream_ref(stream)?)
    })
}

/// Runs size `n` on `stream`: replays the graph of the bucket `n` rounds up to (capturing it
/// first if needed); the bucket used goes to `bucket_out` (may be NULL).
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_run(cache: *mut OrdoGraphCache, stream: sys::cudaStream_t, n: usize, bucket_out: *mut usize) -> OrdoStatus {
    guard(|| {
        // SAFETY: checked handle.
        let c = unsafe { handle(cache, CACHE_MAGIC, |h| h.magic) }?;
        let b = c.cache.run(stream_ref(stream)?, n)?;
        if !bucket_out.is_null() {
            // SAFETY: non-null, writable by the C contract.
            unsafe { *bucket_out = b };
        }
        Ok(())
    })
}

/// Destroys a cache (NULL is ignored; a handle of another kind is refused and left alone).
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_destroy(cache: *mut OrdoGraphCache) {
    // SAFETY: checked handle; the magic is cleared before the memory is freed.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        if let Ok(c) = handle(cache, CACHE_MAGIC, |h| h.magic) {
            c.magic = 0;
            drop(Box::from_raw(cache));
        }
    }));
}

/// Creates a ring of `slots` pinned staging slots of `slot_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_create(slots: usize, slot_bytes: usize, out: *mut *mut OrdoStagingRing) -> OrdoStatus {
    guard(|| {
        non_null(out, "null out")?;
        let ring = StagingRing::new(slots, slot_bytes)?;
        let taken = Mutex::new((0..slots).map(|_| None).collect());
        // SAFETY: checked non-null.
        unsafe { *out = Box::into_raw(Box::new(OrdoStagingRing { magic: RING_MAGIC, ring, taken })) };
        Ok(())
    })
}

/// Takes a free slot: its pinned memory to `slot_out` and its ticket to `ticket_out`. With `wait`
/// 0 it returns `cudaErrorNotReady` when no slot is free; with `wait` 1 it waits (on the host) for one.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_acquire(ring: *mut OrdoStagingRing, wait: c_int, slot_out: *mut *mut c_void, ticket_out: *mut usize) -> OrdoStatus {
    guard(|| {
        // SAFETY: checked handle.
        let r = unsafe { handle(ring, RING_MAGIC, |h| h.magic) }?;
        non_null(slot_out, "null slot_out")?;
        non_null(ticket_out, "null ticket_out")?;
        let mut slot = match r.ring.try_acquire() {
            Some(s) => s,
            None if wait != 0 => r.ring.acquire(),
            None => return Err(Error::Cuda(ordo_core::CudaError::new(sys::cudaError::cudaErrorNotReady, "ordo_staging_ring_acquire"))),
        };
        let mut taken = r.taken.lock().map_err(|_| invalid("ring lock poisoned"))?;
        let ticket = taken.iter().position(Option::is_none).ok_or(invalid("no free ticket"))?;
        // SAFETY: checked non-null.
        unsafe {
            *slot_out = slot.as_mut_ptr().cast();
            *ticket_out = ticket;
        }
        taken[ticket] = Some(slot);
        Ok(())
    })
}

/// Enqueues the copy of the first `bytes` of the slot `ticket` to `device_dst` on `stream`; the slot
/// becomes free again once the copy has finished (a host function marks it).
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_submit(ring: *mut OrdoStagingRing, ticket: usize, bytes: usize, device_dst: *mut c_void, stream: sys::cudaStream_t) -> OrdoStatus {
    guard(|| {
        // SAFETY: checked handle.
        let r = unsafe { handle(ring, RING_MAGIC, |h| h.magic) }?;
        let s = stream_ref(stream)?;
        non_null(device_dst, "null device_dst")?;
        require_device(device_dst.cast_const())?;
        let slot = {
            let mut taken = r.taken.lock().map_err(|_| invalid("ring lock poisoned"))?;
            taken.get_mut(ticket).and_then(Option::take).ok_or(invalid("no slot is held under this ticket"))?
        };
        // SAFETY: the C contract: `device_dst` holds `bytes`, live until the copy completes.
        let dst = unsafe { DeviceSliceMut::from_raw_parts(device_dst.cast::<u8>(), bytes) };
        r.ring.submit(slot, bytes, dst, s)
    })
}

/// Destroys a ring. The caller first makes sure no copy from it is still in flight.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_destroy(ring: *mut OrdoStagingRing) {
    // SAFETY: checked handle; the magic is cleared before the memory is freed.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        if let Ok(r) = handle(ring, RING_MAGIC, |h| h.magic) {
            r.magic = 0;
            drop(Box::from_raw(ring));
        }
    }));
}

/// Creates a timer: two timing events.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_create(out: *mut *mut OrdoTimer) -> OrdoStatus {
    guard(|| {
        non_null(out, "null out")?;
        let t = OrdoTimer { magic: TIMER_MAGIC, start: TimingEvent::new()?, stop: TimingEvent::new()? };
        // SAFETY: checked non-null.
        unsafe { *out = Box::into_raw(Box::new(t)) };
        Ok(())
    })
}

/// Records the timer's start on `stream`.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_start(timer: *mut OrdoTimer, stream: sys::cudaStream_t) -> OrdoStatus {
    // SAFETY: checked handle.
    guard(|| unsafe { handle(timer, TIMER_MAGIC, |h| h.magic) }?.start.record(stream_ref(stream)?))
}

/// Records the timer's stop on `stream`.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_stop(timer: *mut OrdoTimer, stream: sys::cudaStream_t) -> OrdoStatus {
    // SAFETY: checked handle.
    guard(|| unsafe { handle(timer, TIMER_MAGIC, |h| h.magic) }?.stop.record(stream_ref(stream)?))
}

/// Milliseconds from start to stop. `cudaErrorNotReady` while the stop has not completed (it does
/// not wait); `ORDO_ERROR_INVALID_ARGUMENT` if either was never recorded.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_elapsed_ms(timer: *mut OrdoTimer, ms: *mut f32) -> OrdoStatus {
    guard(|| {
        // SAFETY: checked handle.
        let t = unsafe { handle(timer, TIMER_MAGIC, |h| h.magic) }?;
        non_null(ms, "null ms")?;
        let v = t.stop.elapsed_ms_since(&t.start)?;
        // SAFETY: checked non-null.
        unsafe { *ms = v };
        Ok(())
    })
}

/// Destroys a timer.
#[no_mangle]
pub unsafe extern "C" fn ordo_timer_destroy(timer: *mut OrdoTimer) {
    // SAFETY: checked handle; the magic is cleared before the memory is freed.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        if let Ok(t) = handle(timer, TIMER_MAGIC, |h| h.magic) {
            t.magic = 0;
            drop(Box::from_raw(timer));
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_never_crosses_the_boundary() {
        // The hook would print the panic; the status is what a C caller sees.
        let status = guard(|| panic!("deliberate panic inside an export"));
        assert_eq!(status, ORDO_ERROR_PANIC);
        assert_eq!(guard(|| Ok(())), ORDO_SUCCESS);
        assert_eq!(guard(|| Err(invalid("x"))), ORDO_ERROR_INVALID_ARGUMENT);
        let cuda = Error::Cuda(ordo_core::CudaError::new(sys::cudaError::cudaErrorInvalidValue, "test"));
        assert_eq!(guard(|| Err(cuda)), 1, "CUDA's codes pass through unchanged");
        let pageable = Error::usage(UsageKind::PageableMemory, "test", "x");
        assert_eq!(guard(|| Err(pageable)), ORDO_ERROR_PAGEABLE_MEMORY);
    }
}
