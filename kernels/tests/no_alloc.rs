//! A launch allocates nothing on the heap (counting global allocator), PDL attribute included:
//! through the default path (the driver's `cuLaunchKernelEx`, where built with CUDA 12.8 or later
//! headers), the runtime path, and `launch_raw` (the C ABI's); nor do the temporaries of ordo's
//! functions once its pool exists.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::launch::{self, LaunchConfig, LaunchPath};
use ordo_cuda_core::*;

#[path = "../../core/tests/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn launches_do_not_allocate() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<f32>::zeroed_async(4096, s).unwrap();
    let k = ordo_cuda_kernels::kernel::add_one();
    let expect = if sys::CUDA_VERSION >= 12080 { LaunchPath::Driver } else { LaunchPath::Runtime };
    assert_eq!(k.launch_path(), expect, "the default path");
    let plain = LaunchConfig::for_elements(4096, 256).unwrap();
    let pdl = plain.with_pdl(true).with_priority(0);
    unsafe { k.launch(s, &plain, (x.as_mut_ptr(), 4096)).unwrap() };
    s.synchronize().unwrap();
    let mut p = x.as_mut_ptr();
    let mut n = 4096i32;
    let mut args = [(&mut p as *mut *mut f32).cast::<core::ffi::c_void>(), (&mut n as *mut i32).cast()];
    let before = allocations();
    for i in 0..1000 {
        let c = if i % 2 == 0 { &plain } else { &pdl };
        unsafe {
            k.launch(s, c, (x.as_mut_ptr(), 4096)).unwrap();
            k.launch_runtime(s, c, (x.as_mut_ptr(), 4096)).unwrap();
            launch::launch_raw(k.as_raw(), s, c, args.as_mut_ptr()).unwrap();
        }
        ordo_cuda_kernels::empty(s).unwrap();
    }
    let after = allocations();
    s.synchronize().unwrap();
    assert_eq!(after - before, 0, "heap allocations while launching");
    let mut back = vec![0f32; 4096];
    memory::copy::d2h_blocking(&mut back, x.as_slice(), s).unwrap();
    assert!(back.iter().all(|&v| v == 3001.0), "1 + 3 x 1000 additions of 1");
}

/// The temporaries of `gemv_normalize` and the frame filter, once ordo's pool exists: a lookup of
/// the pool (the current device and context, then atomic loads) and stream-ordered calls, with
/// no heap allocation.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn temporaries_in_steady_state_do_not_allocate() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let (rows, cols, w, h) = (64usize, 256usize, 64usize, 32usize);
    let a = DeviceBuffer::<f32>::zeroed_async(rows * cols, s).unwrap();
    let x = DeviceBuffer::<f32>::zeroed_async(cols, s).unwrap();
    let mut y = DeviceBuffer::<f32>::zeroed_async(rows, s).unwrap();
    let rgb = DeviceBuffer::<u8>::zeroed_async(w * h * 3, s).unwrap();
    let mut out = DeviceBuffer::<u8>::zeroed_async(w * h, s).unwrap();
    let mut both = || unsafe {
        ordo_cuda_kernels::gemv_normalize(s, a.as_slice(), x.as_slice(), y.as_mut_slice(), rows, cols).unwrap();
        ordo_cuda_kernels::frame_filter(s, rgb.as_slice(), out.as_mut_slice(), w, h).unwrap();
    };
    both(); // the pool is made (or found) and this thread's lookups warmed
    s.synchronize().unwrap();
    let before = allocations();
    for _ in 0..200 {
        both();
    }
    let after = allocations();
    s.synchronize().unwrap();
    assert_eq!(after - before, 0, "heap allocations in the temporaries' steady state");
}
