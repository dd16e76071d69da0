//! The default launch path keeps each kernel's driver handle (`CUkernel`) for the life of the
//! process. `cudaDeviceReset` destroys the device's context, not the runtime's modules, so the
//! handle stays valid: kernels launched before a reset launch after it, on new streams and
//! buffers, with the right results, through both paths. A binary of its own: the reset would
//! destroy the work of any test running beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::launch::{LaunchConfig, LaunchPath};
use ordo_cuda_core::*;
use ordo_cuda_kernels::kernel;

mod common;
use common::{download, upload, Rng};

/// `k` add_one launches over `x` on a new stream, half through each path; the result.
fn add_ones(x: &[f32], k: usize) -> Vec<f32> {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut d = upload(x, s);
    let config = LaunchConfig::for_elements(x.len(), 256).unwrap();
    for i in 0..k {
        // SAFETY: `d` holds x.len() floats on this stream, read back below.
        unsafe {
            if i % 2 == 0 {
                kernel::add_one().launch(s, &config, (d.as_mut_ptr(), x.len() as i32)).unwrap();
            } else {
                kernel::add_one().launch_runtime(s, &config, (d.as_mut_ptr(), x.len() as i32)).unwrap();
            }
        }
    }
    download(&d, s)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn kernels_launch_after_a_device_reset() {
    let n = 100_003;
    let x = Rng(0x2e5e_7000_0000_0001).f32s(n, -10.0, 10.0);
    let expect = |k: usize| -> Vec<f32> { x.iter().map(|&v| (0..k).fold(v, |v, _| v + 1.0)).collect() };
    let expect_path = if sys::CUDA_VERSION >= 12080 { LaunchPath::Driver } else { LaunchPath::Runtime };
    assert_eq!(kernel::add_one().launch_path(), expect_path);
    assert!(add_ones(&x, 4) == expect(4), "before the reset");
    for round in 0..2 {
        // SAFETY: nothing of this process uses the device meanwhile (its own binary; every stream
        // and buffer above was dropped).
        assert_eq!(unsafe { sys::cudaDeviceReset() }, sys::cudaError::cudaSuccess);
        assert_eq!(kernel::add_one().launch_path(), expect_path, "round {round}");
        assert!(add_ones(&x, 6) == expect(6), "after reset {round}");
    }
    error::peek_last_error().unwrap();
}
