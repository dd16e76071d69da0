//! A kernel loaded at run time that busy-waits: a slow piece of work to queue ahead of a write on a
//! stream, so that an unordered read or free would be seen. PTX, JIT-compiled by the driver, so that
//! a binary that uses it needs no nvcc. Needs `cudaLibraryLoadData` (CUDA 12.8 and later headers).
#![allow(dead_code)]

use ordo_cuda_core::error;
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::{sys, StreamRef};

/// A kernel `ordo_spin(u64 cycles)` that busy-waits for `cycles` clock ticks: a slow piece of work
/// to queue ahead of a write on a stream. PTX, JIT-compiled by the driver.
const SPIN_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry ordo_spin(
    .param .u64 ordo_spin_param_0
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [ordo_spin_param_0];
    mov.u64 %rd2, %clock64;
$L_spin:
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
\0";

/// About 0.1 s of spinning at H200 clocks (1.98 GHz).
pub const SPIN_CYCLES: u64 = 200_000_000;

/// The spin kernel, loaded once (its library is never unloaded).
pub fn spin_kernel() -> Kernel<(u64,)> {
    static KERNEL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let raw = *KERNEL.get_or_init(|| {
        let mut lib: sys::cudaLibrary_t = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; no options. The library is never unloaded.
        let code = unsafe {
            sys::cudaLibraryLoadData(
                &mut lib,
                SPIN_PTX.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        error::check(code, "cudaLibraryLoadData").unwrap();
        let mut kernel: sys::cudaKernel_t = std::ptr::null_mut();
        // SAFETY: a loaded library; a NUL-terminated name.
        let code = unsafe { sys::cudaLibraryGetKernel(&mut kernel, lib, c"ordo_spin".as_ptr()) };
        error::check(code, "cudaLibraryGetKernel").unwrap();
        kernel as usize
    });
    // SAFETY: a cudaKernel_t, which the runtime's launch and attribute calls take as a function
    // pointer; its one parameter is a u64.
    unsafe { Kernel::from_raw(raw as *const std::ffi::c_void) }.unwrap()
}

/// Queues about 0.1 s of spinning on `s`.
pub fn spin(s: StreamRef<'_>) {
    // SAFETY: the kernel takes one u64 and touches no memory.
    unsafe { spin_kernel().launch(s, &LaunchConfig::new(1, 1), (SPIN_CYCLES,)) }.unwrap();
}
