//! The conversion of ordo's errors into status codes, and the guard every export runs in: it
//! catches panics, relaxes the calling thread's capture mode for ordo's own CUDA calls (see
//! [`check`](super::check)), turns the outcome into a status and records a failure as the thread's
//! [`last_error`](super::last_error). The codes themselves are in [`codes`](super::codes)
//! (re-exported here), below both this module and the last error.

use super::capture_mode::RelaxedCaptureMode;
pub use super::codes::*;
use ordo_cuda_core::{Error, UsageKind};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The status for an ordo error. A C callback's own status comes back unchanged when it is
/// documented ([`is_documented`]) and a failure; otherwise (an undocumented value, or
/// `ORDO_NOT_READY`, which `ORDO_FAILED` does not count as a failure although the call stopped at
/// that callback) as `ORDO_ERROR_LIBRARY`.
pub fn status_of(e: &Error) -> OrdoStatus {
    match e {
        Error::Cuda(c) => OrdoStatus::try_from(c.code().0).unwrap_or(ORDO_ERROR_LIBRARY),
        Error::Usage(u) => match u.kind {
            UsageKind::InvalidArgument => ORDO_ERROR_INVALID_ARGUMENT,
            UsageKind::PageableMemory => ORDO_ERROR_PAGEABLE_MEMORY,
            UsageKind::NotSupported => ORDO_ERROR_NOT_SUPPORTED,
            UsageKind::Panicked => ORDO_ERROR_PANIC,
            _ => ORDO_ERROR_INVALID_ARGUMENT,
        },
        Error::Library(l) if l.library == CALLBACK && failed(l.status) && is_documented(l.status) => l.status,
        Error::Library(_) => ORDO_ERROR_LIBRARY,
    }
}

/// A failed export: the status it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failure(pub(crate) OrdoStatus);

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let status = status_of(&e);
        super::last_error::note(&e, status);
        Failure(status)
    }
}

/// What the body of an export returns.
pub(crate) type Outcome<T = ()> = Result<T, Failure>;

/// An `ORDO_ERROR_INVALID_ARGUMENT` refusal of the running export's argument `arg` (its name in
/// ordo.h; `options.pool` for a field): the record names the export and the argument, `what` says
/// what was wrong.
pub(crate) fn invalid(arg: &'static str, what: &'static str) -> Failure {
    refused(ORDO_ERROR_INVALID_ARGUMENT, Some(arg), what)
}

/// A refusal of ordo's own with `status`, of argument `arg` (`None`: of the call as a whole), before
/// anything was done: recorded as the export's, with `what`.
pub(crate) fn refused(status: OrdoStatus, arg: Option<&'static str>, what: &'static str) -> Failure {
    super::last_error::note_refusal(status, arg, what);
    Failure(status)
}

/// `ORDO_ERROR_NOT_SUPPORTED` for an export whose library was built without `feature`
/// (`kernels`, `nccl`): the export exists in every build, so that the ABI does not change.
#[cfg(not(all(feature = "kernels", feature = "nccl")))]
pub(crate) fn missing_feature(feature: &'static str) -> Failure {
    let what = match feature {
        "kernels" => "ordo was built without its `kernels` feature (ordo's CUDA kernels, which need nvcc)",
        _ => "ordo was built without its `nccl` feature (NCCL through the C ABI)",
    };
    refused(ORDO_ERROR_NOT_SUPPORTED, None, what)
}

/// The error a C callback's non-zero status becomes inside the Rust API.
pub(crate) fn callback_error(call: &'static str, status: OrdoStatus) -> Error {
    Error::Library(ordo_cuda_core::LibraryError::new(CALLBACK, call, status))
}

/// Runs the body of `export`: with the thread's capture mode relaxed (restored after, also on a
/// panic), a panic turned into `ORDO_ERROR_PANIC`, the outcome into a status, and a failure
/// recorded as the thread's last error ([`last_error`](super::last_error)).
pub(crate) fn guard(export: &'static str, f: impl FnOnce() -> Outcome) -> OrdoStatus {
    let run = || {
        let _relaxed = RelaxedCaptureMode::enter();
        f()
    };
    let status = match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(())) => ORDO_SUCCESS,
        Ok(Err(Failure(status))) => status,
        Err(_) => ORDO_ERROR_PANIC,
    };
    if failed(status) {
        super::last_error::record(export, status);
    } else {
        // Success, or ORDO_NOT_READY ("not yet", not a failure): the record stays as it was.
        super::last_error::discard_pending();
    }
    status
}

/// [`guard`] for the exports that return nothing (the destroy functions).
pub(crate) fn guard_void(export: &'static str, f: impl FnOnce()) {
    let _ = guard(export, || {
        f();
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ordo_cuda_core::sys;

    #[test]
    fn a_panic_never_crosses_the_boundary() {
        // The hook would print the panic; the status is what a C caller sees.
        let status = guard("test", || panic!("deliberate panic inside an export"));
        assert_eq!(status, ORDO_ERROR_PANIC);
        assert_eq!(guard("test", || Ok(())), ORDO_SUCCESS);
        assert_eq!(guard("test", || Err(invalid("x", "x is wrong"))), ORDO_ERROR_INVALID_ARGUMENT);
        let cuda = Error::Cuda(ordo_cuda_core::CudaError::new(sys::cudaError::cudaErrorInvalidValue, "test"));
        assert_eq!(guard("test", || Err(cuda.into())), 1, "CUDA's codes pass through unchanged");
        let pageable = Error::usage(UsageKind::PageableMemory, "test", "x");
        assert_eq!(guard("test", || Err(pageable.into())), ORDO_ERROR_PAGEABLE_MEMORY);
    }

    /// `ORDO_NOT_READY` is no failure (ordo.h): a poll that answers "not yet" must not overwrite
    /// the detail of the last real failure (before the fix the record became status 600).
    #[test]
    fn not_ready_leaves_the_last_error_as_it_was() {
        super::super::last_error::ordo_clear_last_error();
        assert_eq!(guard("first", || Err(invalid("x", "the real failure"))), ORDO_ERROR_INVALID_ARGUMENT);
        let not_ready =
            Error::Cuda(ordo_cuda_core::CudaError::new(sys::cudaError::cudaErrorNotReady, "cudaEventQuery"));
        assert_eq!(guard("poll", || Err(not_ready.into())), ORDO_NOT_READY);
        assert_eq!(guard("poll", || Err(Failure(ORDO_NOT_READY))), ORDO_NOT_READY);
        let mut info = core::mem::MaybeUninit::<super::super::last_error::OrdoErrorInfo>::zeroed();
        // SAFETY: a zeroed record of the right size, `size` set before the call.
        let info = unsafe {
            (*info.as_mut_ptr()).size = core::mem::size_of::<super::super::last_error::OrdoErrorInfo>();
            assert_eq!(super::super::last_error::ordo_last_error(info.as_mut_ptr()), ORDO_SUCCESS);
            info.assume_init()
        };
        assert_eq!(info.status, ORDO_ERROR_INVALID_ARGUMENT, "the record is still the real failure");
        super::super::last_error::ordo_clear_last_error();
    }

    #[test]
    fn callback_statuses_pass_through_when_documented() {
        assert_eq!(status_of(&callback_error("cb", 700)), 700);
        assert_eq!(status_of(&callback_error("cb", ORDO_ERROR_INVALID_HANDLE)), ORDO_ERROR_INVALID_HANDLE);
        assert_eq!(status_of(&callback_error("cb", -3)), ORDO_ERROR_NOT_SUPPORTED, "one of ordo's own");
        assert_eq!(status_of(&callback_error("cb", -300)), ORDO_ERROR_LIBRARY);
        assert_eq!(status_of(&callback_error("cb", ORDO_NOT_READY)), ORDO_ERROR_LIBRARY, "\"not yet\" is no failure");
        assert_eq!(status_of(&callback_error("cb", 12345)), 12345, "CUDA's space, unchanged");
        let cublas = Error::Library(ordo_cuda_core::LibraryError::new("cuBLAS", "x", 7));
        assert_eq!(status_of(&cublas), ORDO_ERROR_LIBRARY, "other libraries' codes are not CUDA's");
    }

    #[test]
    fn every_code_has_a_name_and_is_documented() {
        for (code, name, text) in ORDO_STATUSES {
            assert!(is_documented(code));
            // SAFETY: static NUL-terminated strings.
            unsafe {
                assert_eq!(core::ffi::CStr::from_ptr(ordo_status_name(code)), name);
                assert_eq!(core::ffi::CStr::from_ptr(ordo_status_string(code)), text);
            }
            assert_eq!(ordo_status_is_sticky(code), 0);
        }
        assert!(is_documented(1000) && is_documented(10001) && is_documented(i32::MAX), "CUDA's, unchanged");
        assert!(!is_documented(ORDO_LAST_CODE - 1) && !is_documented(i32::MIN));
        assert!(!failed(ORDO_SUCCESS) && !failed(ORDO_NOT_READY) && failed(ORDO_ERROR_PANIC) && failed(700));
    }
}
