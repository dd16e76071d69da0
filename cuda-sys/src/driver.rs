//! The driver's launch types that the runtime's headers do not declare: `CUlaunchConfig` and the
//! signature of `cuLaunchKernelEx` (cuda.h), for callers that reach `cuLaunchKernelEx` through the
//! runtime's entry-point query (`cudaGetDriverEntryPointByVersion`), so that nothing links to
//! `libcuda`.

use crate::bindings::{cudaFunction_t, cudaLaunchAttribute, cudaStream_t};
use core::ffi::{c_int, c_uint, c_void};

/// `CUlaunchConfig` (cuda.h), which the runtime's headers do not declare.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CuLaunchConfig {
    /// `gridDimX`, `gridDimY`, `gridDimZ`.
    pub grid: [c_uint; 3],
    /// `blockDimX`, `blockDimY`, `blockDimZ`.
    pub block: [c_uint; 3],
    /// `sharedMemBytes`.
    pub shared_mem_bytes: c_uint,
    /// `hStream` (a runtime stream is the driver's `CUstream`).
    pub stream: cudaStream_t,
    /// `attrs`: `CUlaunchAttribute` has the layout of the runtime's `cudaLaunchAttribute`.
    pub attrs: *mut cudaLaunchAttribute,
    /// `numAttrs`.
    pub num_attrs: c_uint,
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(core::mem::size_of::<CuLaunchConfig>() == 56);
    assert!(core::mem::offset_of!(CuLaunchConfig, stream) == 32);
    assert!(core::mem::offset_of!(CuLaunchConfig, attrs) == 40);
    assert!(core::mem::offset_of!(CuLaunchConfig, num_attrs) == 48);
    // `CUlaunchAttribute`: the id, 4 bytes of padding, the 64-byte value at offset 8.
    assert!(core::mem::size_of::<cudaLaunchAttribute>() == 72);
    assert!(core::mem::offset_of!(cudaLaunchAttribute, val) == 8);
};

/// `cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void** params, void** extra)`.
pub type CuLaunchKernelExFn =
    unsafe extern "C" fn(*const CuLaunchConfig, cudaFunction_t, *mut *mut c_void, *mut *mut c_void) -> c_int;
