//! What the headers define as macros that bindgen does not turn into items.
//!
//! `cudaStreamLegacy` and `cudaStreamPerThread` are `((cudaStream_t)0x1)` and `((cudaStream_t)0x2)`
//! in driver_types.h; bindgen skips casts to pointer types. They are functions here because a
//! `const` raw pointer made from an integer is not allowed in every context.

use crate::bindings::cudaStream_t;
use core::ffi::c_int;

/// The legacy default stream (`cudaStreamLegacy`): synchronises with every blocking stream of the device.
#[inline(always)]
pub const fn cudaStreamLegacy() -> cudaStream_t {
    0x1 as cudaStream_t
}

/// The per-thread default stream (`cudaStreamPerThread`).
#[inline(always)]
pub const fn cudaStreamPerThread() -> cudaStream_t {
    0x2 as cudaStream_t
}

/// `cudaCpuDeviceId`: the device id that stands for the host in the int-device forms of the API.
pub const cudaCpuDeviceId: c_int = -1;

/// `cudaInvalidDeviceId`.
pub const cudaInvalidDeviceId: c_int = -2;
