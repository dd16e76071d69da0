//! GPU tests of the kernels: each against a CPU reference on random data with poisoned outputs;
//! the PDL chain eager and in a graph at 4096 and 4M elements, keeping programmatic edges; every
//! stream-correct function captured in global mode and replayed; launch-configuration errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, CaptureStatus, InstantiateFlags};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_kernels::{kernel, ChainPlan, PdlMode};

/// Every launch mode of the chain: ordo's rule, the two plain baselines, the PDL form over the
/// full grid and over one wave (grid-stride at 4M elements).
const MODES: [PdlMode; 5] =
    [PdlMode::Auto, PdlMode::Plain, PdlMode::PlainOneWave, PdlMode::PdlFullGrid, PdlMode::PdlOneWave];

mod common;
use common::{download, frame_filter_cpu, gpu_lock, poisoned, upload, Rng};

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn kernels_are_loaded_from_sm90_code_on_hopper() {
    let _gpu = gpu_lock::shared();
    let a = kernel::add_one().attributes().unwrap();
    let (major, minor) = Device::current().unwrap().compute_capability().unwrap();
    println!("add_one: binaryVersion {} ptxVersion {} regs {}", a.binaryVersion, a.ptxVersion, a.numRegs);
    if (major, minor) == (9, 0) {
        assert_eq!(a.binaryVersion, 90);
    }
    assert!(a.ptxVersion == 90 || a.ptxVersion == 80);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn elementwise_kernels_match_the_cpu() {
    let _gpu = gpu_lock::shared();
    let s = Stream::new().unwrap();
    let s = s.as_stream();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let n = 1_000_003; // not a multiple of the block
    let x = rng.f32s(n, -4.0, 4.0);

    let mut d = upload(&x, s);
    unsafe { ordo_cuda_kernels::add_one(s, d.as_mut_slice()).unwrap() };
    let expect: Vec<f32> = x.iter().map(|v| v + 1.0).collect();
    assert!(download(&d, s) == expect, "add_one");

    let mut d = upload(&x, s);
    unsafe { ordo_cuda_kernels::heavy(s, d.as_mut_slice()).unwrap() };
    let expect: Vec<f32> = x.iter().map(|&v| common::heavy_cpu(v)).collect();
    assert!(download(&d, s) == expect, "heavy");

    let input = upload(&x, s);
    let mut out = poisoned(n, s);
    unsafe { ordo_cuda_kernels::square(s, input.as_slice(), out.as_mut_slice()).unwrap() };
    let expect: Vec<f32> = x.iter().map(|v| v * v).collect();
    assert!(download(&out, s) == expect, "square");

    ordo_cuda_kernels::empty(s).unwrap();
    s.synchronize().unwrap();
}

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

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gemv_normalize_matches_the_cpu() {
    let _gpu = gpu_lock::shared();
    let s = Stream::new().unwrap();
    let s = s.as_stream();
    let mut rng = Rng(42);
    // Both sides of the one-block limit (1024 rows): one element a thread in one block, and the
    // sum of squares through a temporary beyond; whole and partial warps.
    for (rows, cols) in [(1000, 517), (4096, 4096), (1, 33), (31, 70), (32, 64), (1024, 129), (1025, 129), (3001, 40)] {
        let a = rng.f32s(rows * cols, -1.0, 1.0);
        let x = rng.f32s(cols, -1.0, 1.0);
        let (da, dx) = (upload(&a, s), upload(&x, s));
        let mut dy = poisoned(rows, s);
        unsafe {
            ordo_cuda_kernels::gemv_normalize(s, da.as_slice(), dx.as_slice(), dy.as_mut_slice(), rows, cols).unwrap()
        };
        assert_close(&download(&dy, s), &gemv_normalize_cpu(&a, &x, rows, cols), 2e-3, "gemv_normalize");
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn frame_filter_matches_the_cpu() {
    let _gpu = gpu_lock::shared();
    let s = Stream::new().unwrap();
    let s = s.as_stream();
    let mut rng = Rng(7);
    for (w, h) in [(1024, 1024), (37, 5)] {
        let rgb = rng.bytes(w * h * 3);
        let drgb = upload(&rgb, s);
        let mut out = upload(&vec![0xABu8; w * h], s);
        unsafe { ordo_cuda_kernels::frame_filter(s, drgb.as_slice(), out.as_mut_slice(), w, h).unwrap() };
        assert!(download(&out, s) == frame_filter_cpu(&rgb, w, h), "frame filter {w}x{h}");
    }
}

fn chain_cpu(a: &[f32], scale: &[f32], steps: usize) -> Vec<f32> {
    let mut v = a.to_vec();
    for _ in 0..steps {
        for (x, s) in v.iter_mut().zip(scale) {
            *x = x.mul_add(*s, 1.0);
        }
    }
    v
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pdl_chain_eager_and_graph_match_the_cpu_and_keep_programmatic_edges() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    const STEPS: usize = 100;
    let d = Device::current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut rng = Rng(99);
    for n in [4096usize, 4 << 20] {
        let a0 = rng.f32s(n, -1.0, 1.0);
        let scale = rng.f32s(n, 0.5, 0.99);
        let expect = chain_cpu(&a0, &scale, STEPS);
        let dscale = upload(&scale, s);
        for pdl in MODES {
            let plan = ChainPlan::new(d, n, pdl).unwrap();
            // Eager.
            let mut a = upload(&a0, s);
            let mut b = poisoned(n, s);
            unsafe {
                ordo_cuda_kernels::chain(s, a.as_mut_slice(), b.as_mut_slice(), dscale.as_slice(), STEPS, &plan)
                    .unwrap()
            };
            assert!(download(&a, s) == expect, "eager chain n={n} {pdl:?}");
            // Captured into a graph and replayed.
            let mut a = upload(&a0, s);
            let mut b = poisoned(n, s);
            s.synchronize().unwrap();
            // SAFETY: `a`, `b` and `dscale` outlive the executable graph and its one launch (each
            // is read back after it); nothing else uses `s` during the capture (the test holds
            // the GPU lock exclusively, and this thread only enqueues through `cs`).
            let graph = unsafe {
                capture(s, CaptureMode::Global, |cs| {
                    ordo_cuda_kernels::chain(cs, a.as_mut_slice(), b.as_mut_slice(), dscale.as_slice(), STEPS, &plan)
                })
            }
            .unwrap();
            assert_eq!(graph.node_count().unwrap(), STEPS);
            let edges = graph.edges().unwrap();
            assert_eq!(edges.len(), STEPS - 1);
            let programmatic = edges.iter().filter(|e| e.is_programmatic()).count();
            assert_eq!(programmatic, if plan.pdl() { STEPS - 1 } else { 0 }, "n={n} {pdl:?}: programmatic edges");
            let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
            exec.launch(s).unwrap();
            assert!(download(&a, s) == expect, "graph chain n={n} {pdl:?}");
            if n == 4096 && pdl == PdlMode::Auto {
                println!(
                    "chain plan n={n}: {plan:?}; programmatic edges {programmatic}, edge type {}",
                    edges[0].data.type_
                );
            }
        }
    }
}

/// A chain over an n that is not a multiple of the block matches the CPU for every PDL
/// variant, also when `scale` was written just before by other kernels: here another chain, whose
/// last kernels (under PDL) launch, and trigger the next launch, long before its earlier kernels
/// have finished, and whose `b` (the ping-pong buffer that ends as its result) is our `scale`. The
/// first kernel of a chain must not read `scale` before all that work has finished.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_chain_matches_the_cpu_for_odd_sizes_and_a_scale_written_just_before() {
    let _gpu = gpu_lock::shared();
    const STEPS: usize = 7;
    const BEFORE: usize = 101; // odd: the result of the chain before ends in its `b`
    let d = Device::current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut rng = Rng(1414);
    for n in [1usize, 255, 257, 100_003, (4 << 20) + 3] {
        assert_ne!(n % ordo_cuda_kernels::BLOCK as usize, 0);
        let p = rng.f32s(n, -1.0, 1.0);
        let q = rng.f32s(n, 0.1, 0.5);
        let x0 = rng.f32s(n, -1.0, 1.0);
        // What the chain before writes into `scale`: in 1.1 to 2 once converged.
        let scale = chain_cpu(&p, &q, BEFORE);
        let expect = chain_cpu(&x0, &scale, STEPS);
        let dq = upload(&q, s);
        for pdl in MODES {
            let plan = ChainPlan::new(d, n, pdl).unwrap();
            let mut dp = upload(&p, s);
            let mut dscale = poisoned(n, s);
            let mut a = upload(&x0, s);
            let mut b = poisoned(n, s);
            unsafe {
                ordo_cuda_kernels::chain(s, dp.as_mut_slice(), dscale.as_mut_slice(), dq.as_slice(), BEFORE, &plan)
                    .unwrap();
                ordo_cuda_kernels::chain(s, a.as_mut_slice(), b.as_mut_slice(), dscale.as_slice(), STEPS, &plan)
                    .unwrap();
            }
            assert!(download(&dscale, s) == scale, "n={n} {pdl:?}: the chain before");
            assert!(download(&b, s) == expect, "n={n} {pdl:?}: {plan:?}");
        }
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn every_stream_correct_function_captures_in_global_mode_and_replays_like_eager() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut rng = Rng(5);
    let (rows, cols, w, h, n) = (512, 300, 256, 128, 100_000);
    let (a, x) = (rng.f32s(rows * cols, -1.0, 1.0), rng.f32s(cols, -1.0, 1.0));
    let rgb = rng.bytes(w * h * 3);
    let v = rng.f32s(n, -2.0, 2.0);
    let (da, dx) = (upload(&a, s), upload(&x, s));
    let (drgb, dv) = (upload(&rgb, s), upload(&v, s));
    let scale = upload(&rng.f32s(n, 0.5, 0.9), s);
    let plan = ChainPlan::new(Device::current().unwrap(), n, PdlMode::Auto).unwrap();

    // Runs every function once on `s`, writing into the given outputs.
    let run_all = |s: StreamRef<'_>,
                   y: &mut DeviceBuffer<'_, f32>,
                   frame: &mut DeviceBuffer<'_, u8>,
                   sq: &mut DeviceBuffer<'_, f32>,
                   c1: &mut DeviceBuffer<'_, f32>,
                   c2: &mut DeviceBuffer<'_, f32>|
     -> Result<()> {
        unsafe {
            ordo_cuda_kernels::gemv_normalize(s, da.as_slice(), dx.as_slice(), y.as_mut_slice(), rows, cols)?;
            ordo_cuda_kernels::frame_filter(s, drgb.as_slice(), frame.as_mut_slice(), w, h)?;
            ordo_cuda_kernels::square(s, dv.as_slice(), sq.as_mut_slice())?;
            ordo_cuda_kernels::add_one(s, sq.as_mut_slice())?;
            ordo_cuda_kernels::heavy(s, sq.as_mut_slice())?;
            copy::d2d_async(c1.as_mut_slice(), dv.as_slice(), s)?;
            ordo_cuda_kernels::chain(s, c1.as_mut_slice(), c2.as_mut_slice(), scale.as_slice(), 7, &plan)?;
            ordo_cuda_kernels::empty(s)
        }
    };
    let outputs = |s| (poisoned(rows, s), upload(&vec![0u8; w * h], s), poisoned(n, s), poisoned(n, s), poisoned(n, s));

    let (mut y, mut frame, mut sq, mut c1, mut c2) = outputs(s);
    run_all(s, &mut y, &mut frame, &mut sq, &mut c1, &mut c2).unwrap();
    let eager = (download(&y, s), download(&frame, s), download(&sq, s), download(&c2, s));

    let (mut y, mut frame, mut sq, mut c1, mut c2) = outputs(s);
    s.synchronize().unwrap();
    // SAFETY: every buffer the captured work uses (the inputs and outputs above, and the graph's
    // own allocation nodes) outlives the executable graph, launched once and read back before
    // they drop; nothing else uses `s` during the capture (exclusive GPU lock).
    let graph =
        unsafe { capture(s, CaptureMode::Global, |cs| run_all(cs, &mut y, &mut frame, &mut sq, &mut c1, &mut c2)) }
            .unwrap();
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    let exec = graph.instantiate(InstantiateFlags::AUTO_FREE_ON_LAUNCH).unwrap();
    exec.upload(s).unwrap();
    exec.launch(s).unwrap();
    let replay = (download(&y, s), download(&frame, s), download(&sq, s), download(&c2, s));
    // Same kernels, same inputs: bitwise equal except the atomic sum in gemv_normalize.
    assert_close(&replay.0, &eager.0, 1e-5, "gemv_normalize replay");
    assert!(replay.1 == eager.1, "frame_filter replay");
    assert!(replay.2 == eager.2, "square/add_one/heavy replay");
    assert!(replay.3 == eager.3, "chain replay");
    println!("captured graph: {} nodes", graph.node_count().unwrap());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_synchronise_inside_capture_fails_clearly_and_the_stream_stays_usable() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = upload(&[1.0f32; 1000], s);
    s.synchronize().unwrap();
    // SAFETY: the capture fails, so no graph is ever launched; nothing else uses `s` meanwhile
    // (exclusive GPU lock).
    let err = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_cuda_kernels::add_one(cs, x.as_mut_slice())?;
            cs.synchronize()
        })
    }
    .unwrap_err();
    println!("synchronize inside capture: {err}");
    assert_eq!(err.call(), "cudaStreamSynchronize");
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    // The stream works, and a following capture succeeds.
    unsafe { ordo_cuda_kernels::add_one(s, x.as_mut_slice()).unwrap() };
    // SAFETY (both captures): `x` outlives each executable graph (dropped at the end of its
    // statement, after a launch that `download` below waits for on the same stream); nothing else
    // uses `s` during the captures.
    let g =
        unsafe { capture(s, CaptureMode::ThreadLocal, |cs| ordo_cuda_kernels::add_one(cs, x.as_mut_slice())) }.unwrap();
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    let g = unsafe { capture(s, CaptureMode::Relaxed, |cs| ordo_cuda_kernels::add_one(cs, x.as_mut_slice())) }.unwrap();
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert!(download(&x, s).iter().all(|&v| v == 4.0));
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn launch_configuration_errors_are_clear_and_leave_the_context_usable() {
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = upload(&[0.5f32; 256], s);
    let k = kernel::add_one();
    let e = unsafe { k.launch(s, &LaunchConfig::new(1, 2048), (x.as_mut_ptr(), 256)) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    let e = unsafe { k.launch(s, &LaunchConfig::new(1, 256).with_shared_mem(100 * 1024), (x.as_mut_ptr(), 256)) }
        .unwrap_err();
    println!("100 KiB shared memory without opt-in: {e}");
    assert!(e.to_string().contains("set_max_dynamic_shared_memory"), "{e}");
    assert!(k.set_max_dynamic_shared_memory(100 * 1024).is_ok());
    unsafe { k.launch(s, &LaunchConfig::new(1, 256).with_shared_mem(100 * 1024), (x.as_mut_ptr(), 256)).unwrap() };
    assert!(k.set_max_dynamic_shared_memory(10 << 20).is_err());
    // A kernel launched with a priority and with a cluster runs too.
    let (_, greatest) = Device::current().unwrap().stream_priority_range().unwrap();
    unsafe {
        k.launch(s, &LaunchConfig::new(2, 128).with_priority(greatest).with_cluster(2), (x.as_mut_ptr(), 256)).unwrap()
    };
    error::peek_last_error().unwrap();
    assert!(download(&x, s).iter().all(|&v| v == 2.5));
}

#[cfg(feature = "cublas")]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn cublas_gemv_normalize_matches_the_cpu_and_captures() {
    use ordo_cuda_kernels::cublas::gemv_normalize as gemv_normalize_cublas;
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut blas = ordo_cuda_libs::cublas::Cublas::new().unwrap();
    let mut rng = Rng(3);
    let (rows, cols) = (777, 1025);
    let (a, x) = (rng.f32s(rows * cols, -1.0, 1.0), rng.f32s(cols, -1.0, 1.0));
    let (da, dx) = (upload(&a, s), upload(&x, s));
    let mut y = poisoned(rows, s);
    unsafe { gemv_normalize_cublas(&mut blas, s, da.as_slice(), dx.as_slice(), y.as_mut_slice(), rows, cols).unwrap() };
    let expect = gemv_normalize_cpu(&a, &x, rows, cols);
    assert_close(&download(&y, s), &expect, 2e-3, "cublas gemv_normalize");
    // Another stream between calls: the handle follows the caller's stream each time.
    let other = Stream::new().unwrap();
    let mut y2 = poisoned(rows, other.as_stream());
    other.synchronize().unwrap();
    // SAFETY: the cuBLAS handle, `da`, `dx` and `y2` outlive the executable graph and its one
    // launch (read back below); nothing else uses `other` during the capture (exclusive GPU lock).
    let g = unsafe {
        capture(other.as_stream(), CaptureMode::Global, |cs| {
            gemv_normalize_cublas(&mut blas, cs, da.as_slice(), dx.as_slice(), y2.as_mut_slice(), rows, cols)
        })
    }
    .unwrap();
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(other.as_stream()).unwrap();
    assert_close(&download(&y2, other.as_stream()), &expect, 2e-3, "cublas gemv_normalize in a graph");
}

/// A cooperative launch: the grid-wide sync of `ordok_grid_sum` gives the exact sum of small
/// integers (so no rounding) over a one-wave grid; a grid larger than the device holds at once is
/// refused before CUDA with a clear error; launched in a memory-synchronisation domain, the same.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_cooperative_launch_syncs_the_grid_and_an_oversized_one_is_refused() {
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let d = Device::current().unwrap();
    const N: usize = 1 << 20;
    let x: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let expect: f32 = x.iter().map(|&v| v as u64).sum::<u64>() as f32; // 3M, exact in f32
    let dx = upload(&x, s);
    let k = kernel::grid_sum();
    let per_sm = k.max_active_blocks_per_sm(256, 0).unwrap();
    let wave = per_sm * d.sm_count().unwrap();
    let mut partial = DeviceBuffer::<f32>::zeroed_async(wave as usize + 1, s).unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed_async(1, s).unwrap();
    for config in [
        LaunchConfig::new(wave, 256).with_cooperative(true),
        LaunchConfig::new(wave / 2, 256).with_cooperative(true).with_mem_sync_domain(launch::MemSyncDomain::Remote),
    ] {
        // SAFETY: x holds N floats, partial one a block, out one; all freed on `s` after the kernel.
        unsafe { k.launch(s, &config, (dx.as_ptr(), partial.as_mut_ptr(), out.as_mut_ptr(), N as i32)).unwrap() };
        assert_eq!(download(&out, s), vec![expect], "{config:?}");
    }
    // One block more than fits at once: refused before CUDA, nothing launched.
    let too_many = LaunchConfig::new(wave + 1, 256).with_cooperative(true);
    // SAFETY: refused before the launch.
    let e =
        unsafe { k.launch(s, &too_many, (dx.as_ptr(), partial.as_mut_ptr(), out.as_mut_ptr(), N as i32)) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)) && e.to_string().contains("cooperative grid larger"), "{e}");
    s.synchronize().unwrap();
}

/// The event attributes of a launch: a programmatic event (fired as each block starts, or when
/// every block has triggered, here at its end) and a launch-completion event, each waited on by
/// another stream whose kernel then runs; both kernels' results checked against the CPU and each
/// event complete afterwards. An event with timing (CUDA wants it without) is CUDA's error, not
/// sticky, and the stream still works.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn launch_events_fire_and_order_work_on_another_stream() {
    let _gpu = gpu_lock::shared();
    let (sa, sb) = (Stream::new().unwrap(), Stream::new().unwrap());
    let (a, b) = (sa.as_stream(), sb.as_stream());
    let mut rng = Rng(0x51a7_e0e1_2345_6789);
    let n = (1 << 20) + 3;
    let x = rng.f32s(n, -2.0, 2.0);
    let y = rng.f32s(n, -2.0, 2.0);
    let mut dx = upload(&x, a);
    let dy = upload(&y, b);
    let base = LaunchConfig::for_elements(n, 256).unwrap();
    let mut adds = 0;
    for what in ["programmatic, fired at block start", "programmatic, fired at the end", "launch completion"] {
        let ev = Event::new().unwrap();
        let config = match what {
            "programmatic, fired at block start" => base.with_programmatic_event(&ev, true),
            "programmatic, fired at the end" => base.with_programmatic_event(&ev, false),
            _ => base.with_launch_completion_event(&ev),
        };
        unsafe { kernel::add_one().launch(a, &config, (dx.as_mut_ptr(), n as i32)) }
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        adds += 1;
        b.wait_event(&ev).unwrap();
        let mut out = poisoned(n, b);
        unsafe { kernel::square().launch(b, &base, (dy.as_ptr(), out.as_mut_ptr(), n as i32)) }.unwrap();
        let expect: Vec<f32> = y.iter().map(|v| v * v).collect();
        assert!(download(&out, b) == expect, "{what}: the waiting stream's kernel");
        sa.synchronize().unwrap();
        assert_eq!(ev.query().unwrap(), EventStatus::Complete, "{what}: the event fired");
    }
    let timing = Event::with_flags(EventFlags::empty()).unwrap();
    match unsafe {
        kernel::add_one().launch(a, &base.with_launch_completion_event(&timing), (dx.as_mut_ptr(), n as i32))
    } {
        Ok(()) => {
            println!("CUDA accepted a launch-completion event with timing");
            adds += 1;
        }
        Err(e) => {
            println!("a launch-completion event with timing: {e}");
            assert!(!e.is_sticky(), "{e}");
        }
    }
    let expect: Vec<f32> = x.iter().map(|&v| (0..adds).fold(v, |v, _| v + 1.0)).collect();
    assert!(download(&dx, a) == expect, "add_one {adds} times");
    sb.synchronize().unwrap();
}

/// The driver launch path (`Kernel::for_driver`, `cuLaunchKernelEx`): results checked against the
/// CPU, with attributes (PDL, priority); a bad configuration is ordo's usage error before the
/// driver; a launch the driver refuses (shared memory over the device's limit) comes back as the
/// runtime's error, not sticky; the stream works afterwards.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn driver_launch_path_matches_the_runtime_launch() {
    let _gpu = gpu_lock::shared();
    let device = Device::current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut rng = Rng(0xd21e_0000_1111_2222);
    let n = 300_007;
    let x = rng.f32s(n, -8.0, 8.0);
    let mut d = upload(&x, s);
    let add = kernel::add_one().for_driver(device).unwrap();
    assert_eq!(add.device(), device);
    let config = LaunchConfig::for_elements(n, 256).unwrap();
    // SAFETY: `d` holds n floats on this device and outlives the synchronise below.
    unsafe {
        add.launch(s, &config, (d.as_mut_ptr(), n as i32)).unwrap();
        add.launch(s, &config.with_pdl(true).with_priority(0), (d.as_mut_ptr(), n as i32)).unwrap();
        kernel::empty().for_driver(device).unwrap().launch(s, &LaunchConfig::new(1, 1), ()).unwrap();
    }
    let expect: Vec<f32> = x.iter().map(|v| v + 1.0 + 1.0).collect();
    assert!(download(&d, s) == expect, "two add_one through the driver");
    // SAFETY: refused before the driver.
    let e = unsafe { add.launch(s, &LaunchConfig::new(1, 2048), (d.as_mut_ptr(), n as i32)) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e}");
    // SAFETY: refused by the driver (no block gets 1 GiB of shared memory), then by the runtime.
    let e = unsafe { add.launch(s, &config.with_shared_mem(1 << 30), (d.as_mut_ptr(), n as i32)) }.unwrap_err();
    println!("1 GiB of shared memory through the driver path: {e}");
    assert!(matches!(e, Error::Cuda(ref c) if !c.is_sticky()), "{e}");
    // SAFETY: as above.
    unsafe { add.launch(s, &config, (d.as_mut_ptr(), n as i32)) }.unwrap();
    let expect: Vec<f32> = expect.iter().map(|v| v + 1.0).collect();
    assert!(download(&d, s) == expect, "the stream works after the refusal");
    drop(d);
    stream.synchronize().unwrap();
}
