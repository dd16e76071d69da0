//! GPU tests of the pool ordo's temporaries come from (`ordo_cuda_core::memory::temporaries`):
//! `gemv_normalize`'s, the frame filter's and the pipeline's temporaries come from it (never from
//! the device's default pool, which is left as it was), stay mapped across synchronisations up to
//! the cap, are given back by a trim, become allocation nodes of a global-mode capture, come from
//! the caller's pool in the `_in` forms, from one pool a device on every device, and from many
//! threads at once; results against the CPU on data that is never all zero.
//!
//! The tests that read a pool's statistics hold the GPU lock exclusively (another test's
//! temporaries would move them); the others hold it shared.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags, NodeKind};
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::pipeline::{Pipeline, Plan, RunBuffers, RunOptions, Schedule};
use ordo_cuda_core::*;

mod common;
use common::{download, frame_filter_cpu, gpu_lock, heavy_cpu, poisoned, upload, Rng};

fn gemv_normalize_cpu(a: &[f32], x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let y: Vec<f64> = (0..rows).map(|r| (0..cols).map(|c| a[r * cols + c] as f64 * x[c] as f64).sum()).collect();
    let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
    y.iter().map(|v| (v / norm) as f32).collect()
}

fn assert_close(got: &[f32], expect: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), expect.len());
    for (i, (g, e)) in got.iter().zip(expect).enumerate() {
        assert!((g - e).abs() <= tol * e.abs().max(1e-3), "{what}[{i}]: got {g}, expected {e}");
    }
}

/// The device's total memory (`cudaMemGetInfo`, the current device).
fn total_memory() -> u64 {
    let (mut free, mut total) = (0usize, 0usize);
    assert_eq!(unsafe { sys::cudaMemGetInfo(&mut free, &mut total) }, sys::cudaError::cudaSuccess);
    total as u64
}

/// A frame filter and a gemv_normalize with their inputs on `s`, and their CPU results.
struct Work<'s> {
    w: usize,
    h: usize,
    rows: usize,
    cols: usize,
    rgb: DeviceBuffer<'s, u8>,
    a: DeviceBuffer<'s, f32>,
    x: DeviceBuffer<'s, f32>,
    frame_expected: Vec<u8>,
    gemv_expected: Vec<f32>,
}

impl<'s> Work<'s> {
    fn new(s: StreamRef<'s>, seed: u64, (w, h): (usize, usize), (rows, cols): (usize, usize)) -> Work<'s> {
        let mut rng = Rng(seed);
        let rgb = rng.bytes(w * h * 3);
        let (a, x) = (rng.f32s(rows * cols, -1.0, 1.0), rng.f32s(cols, -1.0, 1.0));
        let frame_expected = frame_filter_cpu(&rgb, w, h);
        assert!(frame_expected.iter().any(|&v| v != 0), "never all zero");
        Work {
            w,
            h,
            rows,
            cols,
            rgb: upload(&rgb, s),
            a: upload(&a, s),
            x: upload(&x, s),
            frame_expected,
            gemv_expected: gemv_normalize_cpu(&a, &x, rows, cols),
        }
    }

    /// The grayscale intermediate's bytes (the frame filter's temporary).
    fn gray_bytes(&self) -> u64 {
        (self.w * self.h * 4) as u64
    }

    /// Both functions on `s` into `frame` and `y`, temporaries from `pool` (`None`: ordo's).
    fn run(
        &self,
        s: StreamRef<'_>,
        pool: Option<MemPoolRef<'_>>,
        frame: &mut DeviceBuffer<'_, u8>,
        y: &mut DeviceBuffer<'_, f32>,
    ) -> Result<()> {
        // SAFETY: the inputs and outputs outlive the work (the callers synchronise or replay
        // before dropping them).
        unsafe {
            ordo_cuda_kernels::frame_filter_in(s, pool, self.rgb.as_slice(), frame.as_mut_slice(), self.w, self.h)?;
            ordo_cuda_kernels::gemv_normalize_in(
                s,
                pool,
                self.a.as_slice(),
                self.x.as_slice(),
                y.as_mut_slice(),
                self.rows,
                self.cols,
            )
        }
    }

    fn outputs<'b>(&self, s: StreamRef<'b>) -> (DeviceBuffer<'b, u8>, DeviceBuffer<'b, f32>) {
        (upload(&vec![0xABu8; self.w * self.h], s), poisoned(self.rows, s))
    }

    fn check(&self, s: StreamRef<'_>, frame: &DeviceBuffer<'_, u8>, y: &DeviceBuffer<'_, f32>, what: &str) {
        assert!(download(frame, s) == self.frame_expected, "frame filter, {what}");
        assert_close(&download(y, s), &self.gemv_expected, 2e-3, &format!("gemv_normalize, {what}"));
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_temporaries_come_from_ordos_pool_and_stay_mapped_across_synchronises() {
    let _gpu = gpu_lock::exclusive(); // reads pool statistics that other tests' temporaries move
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let device = Device::current().unwrap();
    // Over 1024 rows, so that gemv_normalize takes a temporary too (up to 1024 it takes none).
    let work = Work::new(s, 11, (1024, 768), (1100, 256));
    let (mut frame, mut y) = work.outputs(s);
    let default = MemPool::device_default(device).unwrap();
    let default_threshold = default.release_threshold().unwrap();
    let ours = temporaries::pool(device).unwrap();
    assert_ne!(ours, default, "ordo's pool is its own");
    s.synchronize().unwrap();
    ours.trim_to(0).unwrap();
    ours.reset_high_watermarks().unwrap();
    default.reset_high_watermarks().unwrap();

    for round in 0..5 {
        work.run(s, None, &mut frame, &mut y).unwrap();
        s.synchronize().unwrap();
        work.check(s, &frame, &y, &format!("round {round}"));
        assert_eq!(ours.used_bytes().unwrap(), 0, "every temporary was freed");
        assert!(ours.used_high_bytes().unwrap() >= work.gray_bytes(), "the temporaries came from ordo's pool");
        // With a release threshold of 0 (the default pool's) the synchronise gives it all back.
        assert!(ours.reserved_bytes().unwrap() >= work.gray_bytes(), "round {round}: unmapped at the synchronise");
    }
    let reserved = ours.reserved_bytes().unwrap();
    assert_eq!(ours.reserved_high_bytes().unwrap(), reserved, "mapped once, then reused: never grown");
    assert_eq!(
        default.used_high_bytes().unwrap(),
        default.used_bytes().unwrap(),
        "nothing came from the device's default pool, not even for a while"
    );
    assert_eq!(default.release_threshold().unwrap(), default_threshold, "the default pool is left as it was");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_the_cap_bounds_what_stays_mapped_and_a_trim_returns_it() {
    let _gpu = gpu_lock::exclusive(); // changes the pool's threshold
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let device = Device::current().unwrap();
    let work = Work::new(s, 12, (1024, 1024), (33, 100));
    let (mut frame, mut y) = work.outputs(s);
    let ours = temporaries::pool(device).unwrap();
    let cap = temporaries::default_keep(total_memory());
    assert!(cap > 0);
    assert_eq!(ours.release_threshold().unwrap(), cap, "an eighth of the device's memory");
    assert!(!ours.internal_dependencies().unwrap(), "no waits on other streams' frees");

    // A cap of 0: the synchronise gives everything back, as the default pool does.
    ours.set_release_threshold(0).unwrap();
    work.run(s, None, &mut frame, &mut y).unwrap();
    s.synchronize().unwrap();
    let kept_at_zero = ours.reserved_bytes().unwrap();
    work.check(s, &frame, &y, "cap 0");
    // Back to the default cap: it stays, until a trim.
    ours.set_release_threshold(cap).unwrap();
    work.run(s, None, &mut frame, &mut y).unwrap();
    s.synchronize().unwrap();
    work.check(s, &frame, &y, "default cap");
    assert!(kept_at_zero < work.gray_bytes(), "with a cap of 0 the synchronise unmaps ({kept_at_zero} bytes kept)");
    assert!(ours.reserved_bytes().unwrap() >= work.gray_bytes(), "within the cap it stays mapped");
    ours.trim_to(0).unwrap();
    assert_eq!(ours.reserved_bytes().unwrap(), 0, "a trim returns what is not in use");
    work.run(s, None, &mut frame, &mut y).unwrap();
    s.synchronize().unwrap();
    work.check(s, &frame, &y, "after the trim");
}

/// Inside a global-mode capture every temporary is an allocation node of the caller's graph:
/// `gemv_normalize`'s and the frame filter's through `cudaMallocAsync` (no pool named while the
/// stream captures: the graph memory pool serves them whichever pool is named), the pipeline's
/// from ordo's pool of its device. None of them takes memory of ordo's pool at capture time; the
/// replays compute what the eager calls compute.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_temporaries_become_allocation_nodes_of_a_global_capture() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode; reads pool statistics
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let device = Device::current().unwrap();
    // 1500 rows: gemv_normalize takes a temporary (up to 1024 rows it normalises in one block).
    let work = Work::new(s, 13, (300, 200), (1500, 129));
    let (mut frame, mut y) = work.outputs(s);
    let n = 1 << 16;
    let input: Vec<f32> = (0..n).map(|i| (i % 613) as f32 * 0.003 + 0.25).collect();
    let expected: Vec<f32> = input.iter().map(|&v| heavy_cpu(v)).collect();
    let host_in = PinnedBuffer::from_slice(&input).unwrap();
    let mut host_out = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty()).unwrap();
    let mut pipeline = Pipeline::new(3).unwrap();
    let plan = Plan { chunks: 4, schedule: Schedule::Staged };
    let ours = temporaries::pool(device).unwrap();
    s.synchronize().unwrap();
    ours.reset_high_watermarks().unwrap();
    // SAFETY: the inputs and outputs (device and pinned) outlive the executable graph (dropped
    // first, after the replays are synchronised); nothing else uses `s` while it captures
    // (exclusive lock).
    let graph = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            assert_eq!(temporaries::pool_for(None, cs)?, None, "no pool named while capturing");
            work.run(cs, None, &mut frame, &mut y)?;
            let buffers =
                RunBuffers { input: host_in.pinned(), dev_in: None, dev_out: None, output: host_out.pinned_mut() };
            pipeline.run_with(cs, buffers, plan, RunOptions::default(), |ps, i, o| {
                ordo_cuda_kernels::heavy_into(ps, i.as_slice(), o)
            })
        })
    }
    .unwrap();
    let kinds: Vec<NodeKind> = graph.nodes().unwrap().into_iter().map(|n| n.kind().unwrap()).collect();
    let count = |k: NodeKind| kinds.iter().filter(|&&x| x == k).count();
    assert_eq!((count(NodeKind::MemAlloc), count(NodeKind::MemFree)), (4, 4), "{kinds:?}");
    assert_eq!(ours.used_high_bytes().unwrap(), 0, "a capture takes nothing from the pool now");
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    for replay in 0..3 {
        host_out.fill(f32::NAN);
        exec.launch(s).unwrap();
        s.synchronize().unwrap();
        work.check(s, &frame, &y, &format!("replay {replay}"));
        assert!(host_out[..] == expected[..], "pipeline, replay {replay}");
    }
    drop(exec);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_the_in_forms_and_run_options_take_the_callers_pool() {
    let _gpu = gpu_lock::exclusive(); // reads pool statistics
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let device = Device::current().unwrap();
    let work = Work::new(s, 14, (640, 480), (1030, 64));
    let (mut frame, mut y) = work.outputs(s);
    let mine = MemPool::builder(device).release_threshold(u64::MAX).build().unwrap();
    let ours = temporaries::pool(device).unwrap();
    s.synchronize().unwrap();
    ours.reset_high_watermarks().unwrap();
    work.run(s, Some(mine.as_pool()), &mut frame, &mut y).unwrap();
    s.synchronize().unwrap();
    work.check(s, &frame, &y, "the caller's pool");
    assert!(mine.as_pool().used_high_bytes().unwrap() >= work.gray_bytes(), "from the caller's pool");
    assert_eq!(ours.used_high_bytes().unwrap(), 0, "nothing from ordo's");

    // The pipeline: temporaries from RunOptions::pool, else from ordo's pool of its device.
    let n = 1 << 18;
    let input: Vec<f32> = (0..n).map(|i| (i % 997) as f32 * 0.002 + 0.5).collect();
    let host_in = PinnedBuffer::from_slice(&input).unwrap();
    let mut host_out = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty()).unwrap();
    let mut pipeline = Pipeline::new(3).unwrap();
    let plan = Plan { chunks: 4, schedule: Schedule::Staged };
    let expected: Vec<f32> = input.iter().map(|&v| heavy_cpu(v)).collect();
    for pool in [Some(mine.as_pool()), None] {
        mine.as_pool().reset_high_watermarks().unwrap();
        ours.reset_high_watermarks().unwrap();
        host_out.fill(f32::NAN);
        let buffers =
            RunBuffers { input: host_in.pinned(), dev_in: None, dev_out: None, output: host_out.pinned_mut() };
        // SAFETY: the host buffers outlive the run: `s` is synchronised before they are read or dropped.
        unsafe {
            pipeline
                .run_with(s, buffers, plan, RunOptions { record_len: 1, pool }, |cs, i, o| {
                    ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)
                })
                .unwrap()
        };
        s.synchronize().unwrap();
        assert!(host_out[..] == expected[..], "pipeline with temporaries ({pool:?})");
        let (from_mine, from_ours) = (mine.as_pool().used_high_bytes().unwrap(), ours.used_high_bytes().unwrap());
        let both = 2 * (n * 4) as u64;
        if pool.is_some() {
            assert!(from_mine >= both && from_ours == 0, "mine {from_mine}, ordo's {from_ours}");
        } else {
            assert!(from_ours >= both && from_mine == 0, "mine {from_mine}, ordo's {from_ours}");
            assert!(ours.reserved_bytes().unwrap() >= both, "kept mapped for the next run");
        }
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_every_device_has_its_own_pool_found_again() {
    let _gpu = gpu_lock::shared();
    let devices = device::count().unwrap();
    let mut pools = Vec::new();
    for d in 0..devices {
        let device = Device::new(d).unwrap();
        device
            .with_current(|| {
                let pool = temporaries::pool(device)?;
                assert_eq!(temporaries::pool(device)?, pool, "made once");
                assert_eq!(temporaries::existing(device)?, Some(pool));
                assert_eq!(pool.access(device)?, PoolAccess::ReadWrite);
                assert_eq!(pool.release_threshold()?, temporaries::default_keep(total_memory()));
                let stream = Stream::new()?;
                let s = stream.as_stream();
                assert_eq!(temporaries::pool_for(None, s)?, Some(pool), "the stream's device's pool");
                let probe = DeviceBuffer::<f32>::alloc_from_pool_async(1024, pool, s)?;
                let mut attrs = sys::cudaPointerAttributes::default();
                assert_eq!(
                    unsafe { sys::cudaPointerGetAttributes(&mut attrs, probe.as_ptr().cast()) },
                    sys::cudaError::cudaSuccess
                );
                assert_eq!(attrs.device, device.ordinal(), "the pool's memory is on its device");
                drop(probe);
                let work = Work::new(s, 20 + d as u64, (128, 96), (40, 300));
                let (mut frame, mut y) = work.outputs(s);
                work.run(s, None, &mut frame, &mut y)?;
                s.synchronize()?;
                work.check(s, &frame, &y, &format!("device {d}"));
                pools.push(pool);
                Ok(())
            })
            .unwrap();
    }
    let distinct: std::collections::HashSet<_> = pools.iter().map(|p| p.as_raw() as usize).collect();
    assert_eq!(distinct.len(), devices, "one pool a device");
    if devices < 2 {
        println!("one device: the pool of a second device is not exercised here");
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_many_threads_use_the_pool_at_once() {
    let _gpu = gpu_lock::shared();
    let device = Device::current().unwrap();
    let expected = temporaries::pool(device).unwrap();
    let threads: Vec<_> = (0..16u64)
        .map(|t| {
            std::thread::spawn(move || {
                device.set_current().unwrap();
                let stream = Stream::new().unwrap();
                let s = stream.as_stream();
                let work = Work::new(s, 100 + t, (64 + t as usize, 48), (8 + t as usize, 257));
                let (mut frame, mut y) = work.outputs(s);
                for i in 0..20 {
                    work.run(s, None, &mut frame, &mut y).unwrap();
                    if i % 5 == 4 {
                        s.synchronize().unwrap();
                        work.check(s, &frame, &y, &format!("thread {t}, call {i}"));
                    }
                }
                temporaries::pool(device).unwrap().as_raw() as usize
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), expected.as_raw() as usize, "every thread finds the one pool");
    }
}

/// Up to 1024 rows `gemv_normalize` normalises in one block and allocates nothing: captured, it
/// adds no allocation node (a graph replayed per decode step pays for none) and takes nothing from
/// any pool; one row more, and its sum of squares takes a temporary (one allocation and one free
/// node). The replays compute the CPU's result either way.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_gemv_normalize_takes_no_temporary_up_to_1024_rows() {
    let _gpu = gpu_lock::exclusive(); // reads pool statistics
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let device = Device::current().unwrap();
    let ours = temporaries::pool(device).unwrap();
    for (rows, nodes) in [(1usize, 0usize), (64, 0), (1024, 0), (1025, 1)] {
        let cols = 96;
        let mut rng = Rng(300 + rows as u64);
        let (a, x) = (rng.f32s(rows * cols, -1.0, 1.0), rng.f32s(cols, -1.0, 1.0));
        let expected = gemv_normalize_cpu(&a, &x, rows, cols);
        let (da, dx) = (upload(&a, s), upload(&x, s));
        let mut y = poisoned(rows, s);
        s.synchronize().unwrap();
        ours.reset_high_watermarks().unwrap();
        // SAFETY: the buffers outlive the eager work (synchronised below).
        unsafe {
            ordo_cuda_kernels::gemv_normalize(s, da.as_slice(), dx.as_slice(), y.as_mut_slice(), rows, cols).unwrap()
        };
        s.synchronize().unwrap();
        assert_close(&download(&y, s), &expected, 2e-3, &format!("{rows} rows, eager"));
        let took = ours.used_high_bytes().unwrap();
        assert_eq!(took > 0, nodes > 0, "{rows} rows: {took} bytes from ordo's pool");
        let mut y2 = poisoned(rows, s);
        s.synchronize().unwrap();
        // SAFETY: the buffers outlive the executable graph (dropped below, after its replay is
        // synchronised); nothing else uses `s` while it captures (thread-local mode).
        let graph = unsafe {
            capture(s, CaptureMode::ThreadLocal, |cs| {
                ordo_cuda_kernels::gemv_normalize(cs, da.as_slice(), dx.as_slice(), y2.as_mut_slice(), rows, cols)
            })
        }
        .unwrap();
        let kinds: Vec<NodeKind> = graph.nodes().unwrap().into_iter().map(|n| n.kind().unwrap()).collect();
        let count = |k: NodeKind| kinds.iter().filter(|&&x| x == k).count();
        assert_eq!((count(NodeKind::MemAlloc), count(NodeKind::MemFree)), (nodes, nodes), "{rows} rows: {kinds:?}");
        let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
        exec.launch(s).unwrap();
        s.synchronize().unwrap();
        assert_close(&download(&y2, s), &expected, 2e-3, &format!("{rows} rows, replayed"));
        drop(exec);
    }
}
