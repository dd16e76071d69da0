//! NCCL's failures as ordo's [`Error::Library`]: NCCL's status, and NCCL's own words about it
//! (`ncclGetLastError`) as the error's detail.
//!
//! The text lives in a buffer NCCL overwrites, so the error keeps its own copy, whole (an owned
//! [`Text`](ordo_cuda_core::error::Text)). Only failures pay for it: the success path compares one
//! integer.

use super::api::{Api, RawComm, Status, IN_PROGRESS, STATUS_NAMES, SUCCESS, TIMEOUT};
use crate::function::Returned;
use core::ffi::CStr;
use ordo_cuda_core::error::{LibraryError, Text};
use ordo_cuda_core::{Error, Result};

/// The name of NCCL's status, e.g. `ncclRemoteError`.
pub fn status_name(status: i32) -> &'static str {
    usize::try_from(status).ok().and_then(|i| STATUS_NAMES.get(i)).copied().unwrap_or("unknown NCCL status")
}

/// The error for `status` returned by `call`, with `name: text` as its detail (the status's name
/// and NCCL's last error text).
pub(crate) fn detailed(call: &'static str, status: Status, text: Option<&str>) -> Error {
    let name = status_name(status);
    let detail = match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => Text::from(format!("{name}: {t}")),
        None => Text::from_static(name),
    };
    Error::Library(LibraryError { library: "NCCL", call, status, detail: Some(detail) })
}

/// The error for `status` returned by `call` on `comm` (null when there is none): NCCL's text
/// from `ncclGetLastError` where the library has it.
#[cold]
#[inline(never)]
pub(crate) fn nccl_error(api: &Api, comm: RawComm, call: &'static str, status: Status) -> Error {
    let text = api.last_error.f.and_then(|last| {
        // SAFETY: `comm` is null or a live communicator; NCCL returns a NUL-terminated string (in
        // a buffer it owns, read before any other NCCL call on this thread) or null.
        let p = unsafe { last(comm) };
        // SAFETY: as above: non-null means NUL-terminated and live for now.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    });
    detailed(call, status, text.as_deref())
}

/// Which statuses of a NCCL call are success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Success {
    /// `ncclSuccess` only.
    Done,
    /// `ncclSuccess` or `ncclInProgress`: a call of a non-blocking communicator may run on in the
    /// background (a collective, an init with a config, a split, a group's end, a destroy).
    Started,
}

impl Success {
    /// Whether the call `r` succeeded, as `self` counts success.
    #[inline(always)]
    pub(crate) fn of(self, r: Returned) -> bool {
        r.status == SUCCESS || (self == Success::Started && r.status == IN_PROGRESS)
    }
}

/// The error of the failed call `r`, with NCCL's text of `comm` (null: none).
#[cold]
pub(crate) fn failed(api: &Api, comm: RawComm, r: Returned) -> Error {
    nccl_error(api, comm, r.call, r.status)
}

/// `Ok` where the call `r` succeeded as `success` counts; its error, with NCCL's text of `comm`
/// (null: none), otherwise.
#[inline(always)]
pub(crate) fn check(api: &Api, comm: RawComm, r: Returned, success: Success) -> Result<()> {
    if success.of(r) {
        Ok(())
    } else {
        Err(failed(api, comm, r))
    }
}

/// The detail of ordo's own deadline error ([`timeout`]).
const TIMEOUT_DETAIL: &str =
    "ncclTimeout: the deadline passed before the work completed; a peer may be gone: abort the communicator";

/// Whether `e` is ordo's own deadline error ([`timeout`]) rather than a failure of NCCL or CUDA.
pub fn is_timeout(e: &Error) -> bool {
    matches!(e, Error::Library(l) if l.library == "NCCL" && l.status == TIMEOUT && l.detail.as_ref().and_then(Text::as_static) == Some(TIMEOUT_DETAIL))
}

/// The error of a wait on NCCL work whose deadline passed (`ncclTimeout`, named by ordo).
pub fn timeout(call: &'static str) -> Error {
    Error::Library(LibraryError {
        library: "NCCL",
        call,
        status: TIMEOUT,
        detail: Some(Text::from_static(TIMEOUT_DETAIL)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_status_name_and_nccl_text() {
        let e = detailed("ncclAllReduce", 6, Some("remote process exited or there was a network error\n"));
        assert_eq!(
            e.to_string(),
            "ncclAllReduce failed: NCCL status 6: ncclRemoteError: remote process exited or there was a network error"
        );
        let Error::Library(l) = e else { panic!("{e:?}") };
        assert_eq!((l.library, l.call, l.status), ("NCCL", "ncclAllReduce", 6));
        assert_eq!(detailed("x", 4, None).to_string(), "x failed: NCCL status 4: ncclInvalidArgument");
        assert_eq!(detailed("x", 99, Some("  ")).to_string(), "x failed: NCCL status 99: unknown NCCL status");
        assert_eq!(status_name(-1), "unknown NCCL status");
        assert!(timeout("Communicator::wait").to_string().contains("ncclTimeout"));
        assert!(is_timeout(&timeout("Communicator::wait")));
        assert!(!is_timeout(&detailed("ncclAllReduce", 8, Some("a timeout of NCCL's own"))));
    }

    #[test]
    fn long_texts_are_kept_whole_and_the_timeout_is_told_apart_by_its_static_detail() {
        let long = "é".repeat(2000);
        let Error::Library(l) = detailed("x", 3, Some(&long)) else { panic!() };
        assert_eq!(l.detail.unwrap().as_str(), format!("ncclInternalError: {long}"));
        // A text equal to ordo's deadline detail but made at run time is NCCL's, not ordo's.
        let lookalike = Error::Library(LibraryError {
            library: "NCCL",
            call: "x",
            status: TIMEOUT,
            detail: Some(Text::from(TIMEOUT_DETAIL.to_owned())),
        });
        assert!(!is_timeout(&lookalike));
        assert!(is_timeout(&timeout("x")));
    }
}
