//! A launch allocates nothing on the heap (counting global allocator), PDL attribute included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::launch::LaunchConfig;
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
    let plain = LaunchConfig::for_elements(4096, 256).unwrap();
    let pdl = plain.with_pdl(true).with_priority(0);
    unsafe { k.launch(s, &plain, (x.as_mut_ptr(), 4096)).unwrap() };
    s.synchronize().unwrap();
    let before = allocations();
    for i in 0..1000 {
        let c = if i % 2 == 0 { &plain } else { &pdl };
        unsafe { k.launch(s, c, (x.as_mut_ptr(), 4096)).unwrap() };
        ordo_cuda_kernels::empty(s).unwrap();
    }
    let after = allocations();
    s.synchronize().unwrap();
    assert_eq!(after - before, 0, "heap allocations while launching");
}
