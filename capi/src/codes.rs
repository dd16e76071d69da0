//! The status codes of the C ABI (`ordo_status`): ordo's own, their names and descriptions, and the
//! three exports that name and classify any status. Below [`status`](super::status) (the
//! conversion of errors and the guard) and [`last_error`](super::last_error), which both use them.

use core::ffi::{c_char, c_int};
use ordo_cuda_core::sys;

/// A status (`int32_t`): 0 success, CUDA's codes (positive, unchanged), or ordo's own (negative,
/// where CUDA has none).
pub type OrdoStatus = i32;

/// Success.
pub const ORDO_SUCCESS: OrdoStatus = 0;
/// Not a failure: the answer "not yet". CUDA's `cudaErrorNotReady`.
pub const ORDO_NOT_READY: OrdoStatus = 600;
/// A null pointer, a misaligned pointer, a zero size, a size whose byte count overflows,
/// mismatched sizes, a value out of range.
pub const ORDO_ERROR_INVALID_ARGUMENT: OrdoStatus = -1;
/// Pageable host memory where pinned or registered memory is required.
pub const ORDO_ERROR_PAGEABLE_MEMORY: OrdoStatus = -2;
/// Not supported by the CUDA version ordo was built against, or by the device.
pub const ORDO_ERROR_NOT_SUPPORTED: OrdoStatus = -3;
/// A Rust panic was caught at the boundary.
pub const ORDO_ERROR_PANIC: OrdoStatus = -4;
/// Another library (cuBLAS, NCCL) failed, or a callback returned a status outside the documented
/// ranges.
pub const ORDO_ERROR_LIBRARY: OrdoStatus = -5;
/// A handle that is not a live handle of the expected kind: NULL, destroyed, never made by ordo,
/// or a handle of another kind. Nothing was done.
pub const ORDO_ERROR_INVALID_HANDLE: OrdoStatus = -6;
/// The call cannot be made while its stream is capturing, and was refused before anything was
/// enqueued: the capture is untouched and stays valid.
pub const ORDO_ERROR_STREAM_CAPTURING: OrdoStatus = -7;
/// A callback called back into the handle whose call is running it, on the same thread (the
/// call would recurse without end). Nothing was done.
pub const ORDO_ERROR_HANDLE_BUSY: OrdoStatus = -8;
/// A staging-ring ticket the ring does not hold: never issued by it, already submitted or
/// released, or released by the ring's destroy. Nothing was done.
pub const ORDO_ERROR_INVALID_TICKET: OrdoStatus = -9;

/// Every status of ordo's own, with its name and description (the tables `ordo_status_name` and
/// `ordo_status_string` read).
pub const ORDO_STATUSES: [(OrdoStatus, &core::ffi::CStr, &core::ffi::CStr); 10] = [
    (ORDO_SUCCESS, c"ORDO_SUCCESS", c"success"),
    (
        ORDO_ERROR_INVALID_ARGUMENT,
        c"ORDO_ERROR_INVALID_ARGUMENT",
        c"invalid argument (null or misaligned pointer, zero or mismatched size, size overflow, value out of range)",
    ),
    (
        ORDO_ERROR_PAGEABLE_MEMORY,
        c"ORDO_ERROR_PAGEABLE_MEMORY",
        c"pageable host memory where pinned or registered memory is required",
    ),
    (ORDO_ERROR_NOT_SUPPORTED, c"ORDO_ERROR_NOT_SUPPORTED", c"not supported by this CUDA version or device"),
    (ORDO_ERROR_PANIC, c"ORDO_ERROR_PANIC", c"a Rust panic was caught at the C boundary"),
    (
        ORDO_ERROR_LIBRARY,
        c"ORDO_ERROR_LIBRARY",
        c"a CUDA library (cuBLAS, NCCL) call failed, or a callback returned an undocumented status",
    ),
    (
        ORDO_ERROR_INVALID_HANDLE,
        c"ORDO_ERROR_INVALID_HANDLE",
        c"not a live handle of this kind (NULL, destroyed, foreign, or of another kind)",
    ),
    (
        ORDO_ERROR_STREAM_CAPTURING,
        c"ORDO_ERROR_STREAM_CAPTURING",
        c"refused because the stream is capturing; the capture is untouched",
    ),
    (ORDO_ERROR_HANDLE_BUSY, c"ORDO_ERROR_HANDLE_BUSY", c"a callback called back into the handle that is running it"),
    (
        ORDO_ERROR_INVALID_TICKET,
        c"ORDO_ERROR_INVALID_TICKET",
        c"not a ticket the staging ring holds (never issued, already submitted or released)",
    ),
];

/// The first of ordo's own codes (-1); they run down to [`ORDO_LAST_CODE`].
pub const ORDO_FIRST_CODE: OrdoStatus = ORDO_ERROR_INVALID_ARGUMENT;
/// The last of ordo's own codes (the most negative).
pub const ORDO_LAST_CODE: OrdoStatus = ORDO_ERROR_INVALID_TICKET;

/// Whether `status` is one the header documents: success, a CUDA code (any positive value), or
/// ordo's own.
pub fn is_documented(status: OrdoStatus) -> bool {
    status >= ORDO_SUCCESS || (ORDO_LAST_CODE..=ORDO_FIRST_CODE).contains(&status)
}

/// Whether `status` is a CUDA code.
fn is_cuda(status: OrdoStatus) -> bool {
    status > 0
}

/// Whether a status is a failure: neither success nor [`ORDO_NOT_READY`] (`ORDO_FAILED` in ordo.h).
pub fn failed(status: OrdoStatus) -> bool {
    status != ORDO_SUCCESS && status != ORDO_NOT_READY
}

/// The name ordo gives a failed C callback in the [`LibraryError`](ordo_cuda_core::LibraryError) that
/// carries its status through the Rust API.
pub(crate) const CALLBACK: &str = "C callback";

/// The status's name: `ORDO_SUCCESS`, `ORDO_ERROR_*`, or CUDA's name for a CUDA code.
#[no_mangle]
pub extern "C" fn ordo_status_name(status: OrdoStatus) -> *const c_char {
    match ORDO_STATUSES.iter().find(|(s, _, _)| *s == status) {
        Some((_, name, _)) => name.as_ptr(),
        // SAFETY: cudaGetErrorName returns a static string for any value.
        None if is_cuda(status) => unsafe { sys::cudaGetErrorName(sys::cudaError(status.unsigned_abs())) },
        None => c"ORDO_UNKNOWN_STATUS".as_ptr(),
    }
}

/// A description of the status.
#[no_mangle]
pub extern "C" fn ordo_status_string(status: OrdoStatus) -> *const c_char {
    match ORDO_STATUSES.iter().find(|(s, _, _)| *s == status) {
        Some((_, _, text)) => text.as_ptr(),
        // SAFETY: cudaGetErrorString returns a static string for any value.
        None if is_cuda(status) => unsafe { sys::cudaGetErrorString(sys::cudaError(status.unsigned_abs())) },
        None => c"unknown status".as_ptr(),
    }
}

/// 1 when the status is a sticky CUDA error (the context is lost), else 0.
#[no_mangle]
pub extern "C" fn ordo_status_is_sticky(status: OrdoStatus) -> c_int {
    c_int::from(is_cuda(status) && ordo_cuda_core::error::is_sticky_code(sys::cudaError(status.unsigned_abs())))
}
