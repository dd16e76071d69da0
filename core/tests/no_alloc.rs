//! The hot paths allocate nothing on the heap: a counting global allocator around event record,
//! stream wait, queries, stream-ordered allocation and free (the calling thread's allocations);
//! launches of a kernel loaded at run time, through the default (driver) path and the runtime
//! path; nor do conditional nodes, their bodies and body captures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::*;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn record_wait_query_and_async_alloc_do_not_allocate() {
    let a = Stream::new().unwrap();
    let b = Stream::new().unwrap();
    let e = Event::new().unwrap();
    // Warm up: the runtime's own lazy set-up may allocate once (through malloc, not this allocator,
    // but warm up anyway so only the steady state is measured).
    for _ in 0..10 {
        let buf = DeviceBuffer::<f32>::alloc_async(1 << 16, a.as_stream()).unwrap();
        drop(buf);
        e.record(a.as_stream()).unwrap();
        b.wait_event(&e).unwrap();
    }
    a.synchronize().unwrap();
    let before = allocations();
    for _ in 0..1000 {
        e.record(a.as_stream()).unwrap();
        b.wait_event(&e).unwrap();
        let _ = e.query().unwrap();
        let _ = a.query().unwrap();
        let buf = DeviceBuffer::<f32>::alloc_async(1 << 16, a.as_stream()).unwrap();
        buf.free_async().unwrap();
    }
    let after = allocations();
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    assert_eq!(after - before, 0, "heap allocations on the hot paths");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn conditional_nodes_and_body_captures_do_not_allocate() {
    use ordo_cuda_core::graph::ConditionalKind;
    let stream = Stream::new().unwrap();
    let body_stream = Stream::new().unwrap();
    let (s, bs) = (stream.as_stream(), body_stream.as_stream());
    let g = Graph::new().unwrap();
    // Nothing is captured: every body stays empty, and no graph here is instantiated.
    let add = |kind| {
        let c = g.conditional_handle(Some(0)).unwrap();
        let (_, bodies) = g.add_conditional_node(&[], c, kind).unwrap();
        for body in bodies {
            // SAFETY: nothing is captured.
            unsafe { body.capture(&[], s, CaptureMode::ThreadLocal, |_| Ok(())) }.unwrap();
        }
    };
    // SAFETY: nothing is captured; nothing else uses `s` or `bs`.
    let in_capture = || {
        unsafe {
            capture(s, CaptureMode::ThreadLocal, |cs| {
                cs.capture_conditional(ConditionalKind::While, Some(0), |_, bodies| {
                    for body in bodies {
                        body.capture(&[], bs, CaptureMode::ThreadLocal, |_| Ok(()))?;
                    }
                    Ok(())
                })
            })
        }
        .unwrap()
    };
    add(ConditionalKind::If);
    drop(in_capture());
    let before = allocations();
    for kind in [ConditionalKind::If, ConditionalKind::While] {
        add(kind);
    }
    drop(in_capture());
    let after = allocations();
    assert_eq!(after - before, 0, "heap allocations making conditional nodes");
}

/// A library's kernel (from the fatbin fixture) launched through `Kernel::launch`, the default
/// path (the driver's, with the kernel's own handle, where built with CUDA 12.8 or later
/// headers), through `LibraryKernel::launch`, and through the runtime path, with and without
/// attributes: no heap allocation. The values are checked afterwards.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn library_kernel_launches_do_not_allocate() {
    use ordo_cuda_core::launch::{LaunchConfig, LaunchPath};
    use ordo_cuda_core::library::Library;
    const FATBIN: &[u8] = include_bytes!("fixtures/add_const.fatbin");
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 4096;
    let mut x = DeviceBuffer::<f32>::zeroed_async(N, s).unwrap();
    // SAFETY: the fixture is nvcc's own fatbin.
    let library = unsafe { Library::from_image(FATBIN) }.unwrap();
    // SAFETY: ordo_add_const takes (float*, float, int).
    let k = unsafe { library.kernel::<(*mut f32, f32, i32)>(c"ordo_add_const") }.unwrap();
    let kernel = k.as_kernel();
    let expect = if sys::CUDA_VERSION >= 12080 { LaunchPath::Driver } else { LaunchPath::Runtime };
    assert_eq!(kernel.launch_path(), expect);
    let plain = LaunchConfig::for_elements(N, 256).unwrap();
    let with_attributes = plain.with_priority(0).with_pdl(true);
    // SAFETY (every launch): `x` holds N floats on this stream, freed on it after the kernels.
    unsafe { kernel.launch(s, &plain, (x.as_mut_ptr(), 1.0, N as i32)).unwrap() };
    s.synchronize().unwrap();
    let before = allocations();
    for i in 0..300 {
        let c = if i % 2 == 0 { &plain } else { &with_attributes };
        unsafe {
            kernel.launch(s, c, (x.as_mut_ptr(), 1.0, N as i32)).unwrap();
            k.launch(s, c, (x.as_mut_ptr(), 1.0, N as i32)).unwrap();
            kernel.launch_runtime(s, c, (x.as_mut_ptr(), 1.0, N as i32)).unwrap();
        }
    }
    let after = allocations();
    assert_eq!(after - before, 0, "heap allocations while launching");
    let mut back = vec![0f32; N];
    memory::copy::d2h_blocking(&mut back, x.as_slice(), s).unwrap();
    assert!(back.iter().all(|&v| v == 901.0), "1 + 3 x 300 additions of 1");
}

#[test]
fn the_counter_counts() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert!(allocations() > before);
    drop(v);
}
