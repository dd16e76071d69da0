//! The life of ordo's pool for temporaries in one process, in order (a binary of its own: it needs
//! the process's first use of the pool, and a `cudaDeviceReset` would destroy the work of any
//! test running beside it):
//! 1. sixteen threads race for the first use: one pool is made, every thread finds it;
//! 2. `cudaDeviceReset`: the old pool's handle is never looked up again (it may be destroyed);
//! 3. the first use in the new context happens inside a global-mode capture (a pipeline run
//!    with device temporaries, which names its device's pool there): the pool is made there
//!    (capture-unsafe calls, made with the thread's capture mode relaxed) and the capture stays
//!    valid; the replay's result is right;
//! 4. the new pool is a fresh one (the old one's marker threshold is not seen), used eagerly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::pipeline::{Pipeline, Plan, RunBuffers, RunOptions, Schedule};
use ordo_cuda_core::*;
use std::sync::{Arc, Barrier};

mod common;
use common::{download, heavy_cpu, poisoned, upload, Rng};

fn gemv_normalize_cpu(a: &[f32], x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let y: Vec<f64> = (0..rows).map(|r| (0..cols).map(|c| a[r * cols + c] as f64 * x[c] as f64).sum()).collect();
    let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
    y.iter().map(|v| (v / norm) as f32).collect()
}

fn assert_close(got: &[f32], expect: &[f32], what: &str) {
    assert_eq!(got.len(), expect.len());
    for (i, (g, e)) in got.iter().zip(expect).enumerate() {
        assert!((g - e).abs() <= 2e-3 * e.abs().max(1e-3), "{what}[{i}]: got {g}, expected {e}");
    }
}

/// One gemv_normalize of `rows x cols` random data on `s` (eagerly, or captured when `s`
/// captures); returns the output buffer and the CPU result.
fn gemv<'s>(
    s: StreamRef<'s>,
    seed: u64,
    rows: usize,
    cols: usize,
) -> (DeviceBuffer<'s, f32>, DeviceBuffer<'s, f32>, DeviceBuffer<'s, f32>, Vec<f32>) {
    let mut rng = Rng(seed);
    let (a, x) = (rng.f32s(rows * cols, -1.0, 1.0), rng.f32s(cols, -1.0, 1.0));
    let expected = gemv_normalize_cpu(&a, &x, rows, cols);
    (upload(&a, s), upload(&x, s), poisoned(rows, s), expected)
}

/// The marker threshold set on the first context's pool before the reset.
const MARKER: u64 = 12_345;

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_first_use_by_racing_threads_then_after_a_reset_inside_a_global_capture() {
    let device = Device::current().unwrap();
    assert_eq!(temporaries::existing(device).unwrap(), None, "nothing is made before the first use");

    // 1. Sixteen threads race for the first use.
    let start = Arc::new(Barrier::new(16));
    let threads: Vec<_> = (0..16u64)
        .map(|t| {
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                device.set_current().unwrap();
                let stream = Stream::new().unwrap();
                let s = stream.as_stream();
                // Over 1024 rows: gemv_normalize's sum of squares takes a temporary, so each
                // thread's call is a first use of the pool (up to 1024 rows it takes none).
                let rows = 1025 + t as usize;
                let (a, x, mut y, expected) = gemv(s, 1 + t, rows, 300);
                s.synchronize().unwrap();
                start.wait();
                // SAFETY: the buffers outlive the work (synchronised below).
                unsafe {
                    ordo_cuda_kernels::gemv_normalize(s, a.as_slice(), x.as_slice(), y.as_mut_slice(), rows, 300)
                        .unwrap()
                };
                assert_close(&download(&y, s), &expected, &format!("thread {t}"));
                temporaries::pool(device).unwrap().as_raw() as usize
            })
        })
        .collect();
    let handles: Vec<usize> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(handles.iter().all(|&h| h == handles[0]), "one pool for every thread: {handles:?}");
    let old = temporaries::pool(device).unwrap();
    assert_eq!(old.as_raw() as usize, handles[0]);
    old.set_release_threshold(MARKER).unwrap();

    // 2. The reset destroys the context (and with it, maybe, the pool).
    assert_eq!(unsafe { sys::cudaDeviceReset() }, sys::cudaError::cudaSuccess);
    match temporaries::existing(device) {
        Ok(None) | Err(_) => {}
        Ok(Some(p)) => panic!("the pool of the destroyed context was found again: {p:?}"),
    }

    // 3. The first use in the new context, inside a global-mode capture.
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 1 << 18;
    let input: Vec<f32> = (0..n).map(|i| (i % 991) as f32 * 0.002 + 0.125).collect();
    let expected: Vec<f32> = input.iter().map(|&v| heavy_cpu(v)).collect();
    let host_in = PinnedBuffer::from_slice(&input).unwrap();
    let mut host_out = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty()).unwrap();
    let mut pipeline = Pipeline::new(3).unwrap();
    let plan = Plan { chunks: 4, schedule: Schedule::Staged };
    s.synchronize().unwrap();
    assert_eq!(temporaries::existing(device).unwrap(), None, "the new context has no pool yet");
    // SAFETY: the pinned buffers outlive the executable graph (dropped first, after its replay is
    // synchronised); nothing else uses `s` or any other stream while it captures.
    let graph = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            let buffers =
                RunBuffers { input: host_in.pinned(), dev_in: None, dev_out: None, output: host_out.pinned_mut() };
            pipeline.run_with(cs, buffers, plan, RunOptions::default(), |ps, i, o| {
                ordo_cuda_kernels::heavy_into(ps, i.as_slice(), o)
            })
        })
    }
    .expect("the capture stays valid while ordo makes its pool inside it");
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    s.synchronize().unwrap();
    assert!(host_out[..] == expected[..], "replay of the capture that made the pool");

    // 4. A fresh pool, with the default cap: not the old one.
    let new = temporaries::existing(device).unwrap().expect("made inside the capture");
    assert_eq!(temporaries::pool(device).unwrap(), new);
    let (mut free, mut total) = (0usize, 0usize);
    assert_eq!(unsafe { sys::cudaMemGetInfo(&mut free, &mut total) }, sys::cudaError::cudaSuccess);
    assert_eq!(new.release_threshold().unwrap(), temporaries::default_keep(total as u64), "a fresh pool");
    assert_ne!(new.release_threshold().unwrap(), MARKER);
    let (a, x, mut y, expected) = gemv(s, 7, 1100, 256);
    new.reset_high_watermarks().unwrap();
    // SAFETY: the buffers outlive the work (synchronised below).
    unsafe { ordo_cuda_kernels::gemv_normalize(s, a.as_slice(), x.as_slice(), y.as_mut_slice(), 1100, 256).unwrap() };
    s.synchronize().unwrap();
    assert_close(&download(&y, s), &expected, "eagerly in the new context");
    assert!(new.used_high_bytes().unwrap() >= 4, "the temporary came from the new pool");
    drop(exec);
}
