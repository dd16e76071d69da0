//! The two launch paths side by side: `Kernel::launch` (the driver's `cuLaunchKernelEx` by
//! default, with the kernel's handle resolved once) and `Kernel::launch_runtime`
//! (`cudaLaunchKernelExC`). Each result checked against the CPU; attributes through both paths;
//! many threads resolving the same kernels at once; a pseudo stream on a thread new to CUDA (the
//! driver refuses, the runtime launches); `launch_raw`, the C ABI's path; captured launches found
//! by `Graph::kernel_nodes` and retargeted. Captures are thread-local: the tests of this binary
//! run in parallel.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::launch::{self, LaunchConfig, LaunchPath, MemSyncDomain};
use ordo_cuda_core::*;
use ordo_cuda_kernels::kernel;

mod common;
use common::{download, upload, Rng};

/// Whether this build has the driver path (CUDA 12.8 or later headers).
const DRIVER_PATH_BUILT: bool = sys::CUDA_VERSION >= 12080;

fn plus(x: &[f32], k: usize) -> Vec<f32> {
    x.iter().map(|&v| (0..k).fold(v, |v, _| v + 1.0)).collect()
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_default_launch_goes_through_the_driver_and_agrees_with_the_runtime_launch() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let add = kernel::add_one();
    let expect_path = if DRIVER_PATH_BUILT { LaunchPath::Driver } else { LaunchPath::Runtime };
    assert_eq!(add.launch_path(), expect_path);
    assert_eq!(kernel::empty().launch_path(), expect_path);
    let n = 1_000_003;
    let x = Rng(0x1a0c_0000_0000_0001).f32s(n, -100.0, 100.0);
    let mut d = upload(&x, s);
    let base = LaunchConfig::for_elements(n, 256).unwrap();
    let configs = [
        base,
        base.with_pdl(true),
        base.with_priority(0),
        base.with_mem_sync_domain(MemSyncDomain::Remote),
        base.with_pdl(true).with_priority(0).with_mem_sync_domain(MemSyncDomain::Default),
    ];
    for config in &configs {
        // SAFETY: `d` holds n floats on this stream's device, alive until read back below.
        unsafe {
            add.launch(s, config, (d.as_mut_ptr(), n as i32)).unwrap();
            add.launch_runtime(s, config, (d.as_mut_ptr(), n as i32)).unwrap();
        }
    }
    assert!(download(&d, s) == plus(&x, 2 * configs.len()), "every launch ran once, through either path");
    // Refused the same way by both: a zero grid before CUDA, a block CUDA refuses with the
    // runtime's error (the driver's refusal is made again through the runtime).
    for bad in [LaunchConfig::new(0, 32), LaunchConfig::new(1, 2048)] {
        // SAFETY: refused before any kernel runs.
        let a = unsafe { add.launch(s, &bad, (d.as_mut_ptr(), n as i32)) }.unwrap_err();
        let b = unsafe { add.launch_runtime(s, &bad, (d.as_mut_ptr(), n as i32)) }.unwrap_err();
        assert!(matches!(a, Error::Usage(_)) && matches!(b, Error::Usage(_)), "{a} / {b}");
    }
    let huge = base.with_shared_mem(1 << 30);
    // SAFETY: refused by CUDA: nothing runs.
    let e = unsafe { add.launch(s, &huge, (d.as_mut_ptr(), n as i32)) }.unwrap_err();
    println!("1 GiB of shared memory, default path: {e}");
    assert_eq!(e.call(), "cudaLaunchKernelExC", "the runtime's error, code and name");
    assert!(!e.is_sticky());
    error::peek_last_error().unwrap();
    // SAFETY: as above.
    unsafe { add.launch(s, &base, (d.as_mut_ptr(), n as i32)) }.unwrap();
    assert!(download(&d, s) == plus(&x, 2 * configs.len() + 1), "the stream works after the refusal");
}

/// `launch_raw` (what `ordo_launch_kernel` calls) takes the driver path too, and a kernel without
/// parameters takes a null argument array.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn launch_raw_takes_the_default_path() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 70_001;
    let x = Rng(0x1a0c_0000_0000_0002).f32s(n, -1.0, 1.0);
    let mut d = upload(&x, s);
    let config = LaunchConfig::for_elements(n, 128).unwrap();
    let mut p = d.as_mut_ptr();
    let mut len = n as i32;
    let mut args = [(&mut p as *mut *mut f32).cast::<core::ffi::c_void>(), (&mut len as *mut i32).cast()];
    let add = kernel::add_one().as_raw();
    // SAFETY: `ordok_add_one(float*, int)` and its two arguments; `d` outlives the launches.
    unsafe {
        launch::launch_raw(add, s, &config, args.as_mut_ptr()).unwrap();
        launch::launch_raw_runtime(add, s, &config, args.as_mut_ptr()).unwrap();
        launch::launch_raw(kernel::empty().as_raw(), s, &LaunchConfig::new(1, 1), core::ptr::null_mut()).unwrap();
    }
    assert!(download(&d, s) == plus(&x, 2));
}

/// Many threads launch the same kernels for the first time at once, each on its own stream: the
/// kernels' handles are resolved and entered while others look them up. Every thread's result is
/// checked.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn many_threads_resolve_and_launch_at_once() {
    const THREADS: usize = 16;
    let go = std::sync::Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let go = &go;
            scope.spawn(move || {
                let stream = Stream::new().unwrap();
                let s = stream.as_stream();
                let n = 10_000 + 37 * t;
                let x = Rng(0x1a0c_0000_0100_0000 + t as u64).f32s(n, -4.0, 4.0);
                let mut d = upload(&x, s);
                let mut sq = upload(&vec![f32::NAN; n], s);
                let config = LaunchConfig::for_elements(n, 64).unwrap();
                go.wait();
                for _ in 0..50 {
                    // SAFETY: `d` and `sq` hold n floats on this stream, read back below.
                    unsafe {
                        kernel::add_one().launch(s, &config, (d.as_mut_ptr(), n as i32)).unwrap();
                        kernel::square().launch(s, &config, (d.as_ptr(), sq.as_mut_ptr(), n as i32)).unwrap();
                        kernel::empty().launch(s, &LaunchConfig::new(1, 1), ()).unwrap();
                    }
                }
                let after = plus(&x, 50);
                assert!(download(&d, s) == after, "thread {t}: add_one");
                let squares: Vec<f32> = after.iter().map(|v| v * v).collect();
                assert!(download(&sq, s) == squares, "thread {t}: square");
            });
        }
    });
}

/// A per-thread default stream on a thread whose first CUDA call is the launch: no context is
/// current there, so the driver cannot tell which context the pseudo stream names and refuses;
/// the launch is made through the runtime, which sets the context up, and the next launches on
/// that thread go through the driver. Results checked.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_pseudo_stream_on_a_thread_new_to_cuda() {
    let stream = Stream::new().unwrap();
    let n = 4099;
    let x = Rng(0x1a0c_0000_0000_0003).f32s(n, -2.0, 2.0);
    let mut d = upload(&x, stream.as_stream());
    stream.synchronize().unwrap();
    let p = d.as_mut_ptr() as usize;
    std::thread::spawn(move || {
        // SAFETY: the handle stays on this thread, whose current device does not change; `d`
        // (n floats, uploaded and synchronised above) outlives the synchronise below.
        let s = unsafe { StreamRef::per_thread_default() };
        let config = LaunchConfig::for_elements(n, 256).unwrap();
        for _ in 0..3 {
            unsafe { kernel::add_one().launch(s, &config, (p as *mut f32, n as i32)).unwrap() };
        }
        s.synchronize().unwrap();
    })
    .join()
    .unwrap();
    assert!(download(&d, stream.as_stream()) == plus(&x, 3));
}

/// A capture of default-path launches (recorded from `cuLaunchKernelEx` with the kernel's
/// handle): `Graph::kernel_nodes` finds each by its kernel, the runtime reports what it reports
/// for the node (printed), new arguments retarget it, replays compute the right values; the same
/// with runtime-path launches in one graph.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn captured_default_launches_are_found_and_retargeted() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 50_000;
    let (xa, xb) = (Rng(0x1a0c_0000_0000_0004).f32s(n, -3.0, 3.0), Rng(0x1a0c_0000_0000_0005).f32s(n, -3.0, 3.0));
    let (mut a, mut b) = (upload(&xa, s), upload(&xb, s));
    let mut out = upload(&vec![f32::NAN; n], s);
    let config = LaunchConfig::for_elements(n, 256).unwrap();
    // SAFETY: `a` and `out` outlive the executable graph and its replays (read back after them);
    // nothing else uses `s` during the capture; `b`, pointed at below, too.
    let g = unsafe {
        capture(s, CaptureMode::ThreadLocal, |cs| {
            kernel::add_one().launch(cs, &config, (a.as_mut_ptr(), n as i32))?;
            kernel::square().launch_runtime(cs, &config, (a.as_ptr(), out.as_mut_ptr(), n as i32))
        })
    }
    .unwrap();
    let adds = g.kernel_nodes(kernel::add_one()).unwrap();
    let squares = g.kernel_nodes(kernel::square()).unwrap();
    assert_eq!((adds.len(), squares.len()), (1, 1), "each launch found by its kernel");
    assert!(g.kernel_nodes(kernel::heavy()).unwrap().is_empty());
    println!(
        "the runtime reports the default-path node's function as {:?} (stub {:?}): {:?}",
        adds[0].node().kernel_function(),
        kernel::add_one().as_raw(),
        adds[0].node().kernel_function().map(|f| f == kernel::add_one().as_raw()),
    );
    // The runtime may refuse to name it (CB-30); the refusal is returned, not left behind.
    error::peek_last_error().expect("a query of the node leaves no last error");
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&a, s) == plus(&xa, 1));
    // SAFETY: `b` and `out` outlive the replays below.
    unsafe {
        exec.set_kernel_node_args(adds[0], &config, (b.as_mut_ptr(), n as i32)).unwrap();
        exec.set_kernel_node_args(squares[0], &config, (b.as_ptr(), out.as_mut_ptr(), n as i32)).unwrap();
    }
    exec.launch(s).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&a, s) == plus(&xa, 1), "a is no longer touched");
    let b2 = plus(&xb, 2);
    assert!(download(&b, s) == b2);
    assert!(download(&out, s) == b2.iter().map(|v| v * v).collect::<Vec<_>>());
    drop(exec);
    drop(g);
    error::peek_last_error().unwrap();
}
