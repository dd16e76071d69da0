//! NCCL's failures as ordo's [`Error::Library`]: NCCL's status, and NCCL's own words about it
//! (`ncclGetLastError`) as the error's detail.
//!
//! ordo's errors are `Copy` and hold `&'static str`s; NCCL's text lives in a buffer NCCL
//! overwrites. So the text is kept once in a small process-wide table (at most
//! [`KEPT_TEXTS`] distinct texts, each at most [`TEXT_BYTES`] bytes; past that the detail is the
//! status's name alone). Only failures pay for it: the success path compares one integer.

use super::api::{Api, RawComm, Status, STATUS_NAMES, TIMEOUT};
use core::ffi::CStr;
use ordo_core::error::LibraryError;
use ordo_core::Error;
use std::sync::{Mutex, PoisonError};

/// How many distinct texts of NCCL's are kept for errors.
pub const KEPT_TEXTS: usize = 64;
/// The longest text kept, in bytes (cut at a character boundary).
pub const TEXT_BYTES: usize = 480;

static TEXTS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// `text` as a `&'static str` from `texts`: the kept copy, a new one while there is room, or
/// `None`.
fn keep(texts: &Mutex<Vec<&'static str>>, text: &str) -> Option<&'static str> {
    let mut texts = texts.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&kept) = texts.iter().find(|&&t| t == text) {
        return Some(kept);
    }
    if texts.len() >= KEPT_TEXTS {
        return None;
    }
    let kept: &'static str = Box::leak(text.to_owned().into_boxed_str());
    texts.push(kept);
    Some(kept)
}

/// The name of NCCL's status, e.g. `ncclRemoteError`.
pub fn status_name(status: i32) -> &'static str {
    usize::try_from(status).ok().and_then(|i| STATUS_NAMES.get(i)).copied().unwrap_or("unknown NCCL status")
}

/// The longest prefix of `text` of at most `max` bytes that ends at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The error for `status` returned by `call`, with `name: text` as its detail (the status's name
/// and NCCL's last error text).
pub(crate) fn detailed(call: &'static str, status: Status, text: Option<&str>) -> Error {
    detailed_in(&TEXTS, call, status, text)
}

/// [`detailed`] with its texts kept in `texts`.
fn detailed_in(texts: &Mutex<Vec<&'static str>>, call: &'static str, status: Status, text: Option<&str>) -> Error {
    let name = status_name(status);
    let detail = match text.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            let joined = format!("{name}: {}", cut(t, TEXT_BYTES));
            keep(texts, &joined).or(Some(name))
        }
        None => Some(name),
    };
    Error::Library(LibraryError { library: "NCCL", call, status, detail })
}

/// The error for `status` returned by `call` on `comm` (null when there is none): NCCL's text
/// from `ncclGetLastError` where the library has it.
#[cold]
#[inline(never)]
pub(crate) fn nccl_error(api: &Api, comm: RawComm, call: &'static str, status: Status) -> Error {
    let text = api.last_error.and_then(|last| {
        // SAFETY: `comm` is null or a live communicator; NCCL returns a NUL-terminated string (in
        // a buffer it owns, read before any other NCCL call on this thread) or null.
        let p = unsafe { last(comm) };
        // SAFETY: as above: non-null means NUL-terminated and live for now.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    });
    detailed(call, status, text.as_deref())
}

/// The detail of ordo's own deadline error ([`timeout`]).
const TIMEOUT_DETAIL: &str =
    "ncclTimeout: the deadline passed before the work completed; a peer may be gone: abort the communicator";

/// Whether `e` is ordo's own deadline error ([`timeout`]) rather than a failure of NCCL or CUDA.
pub fn is_timeout(e: &Error) -> bool {
    matches!(e, Error::Library(l) if l.library == "NCCL" && l.status == TIMEOUT && l.detail == Some(TIMEOUT_DETAIL))
}

/// The error of a wait on NCCL work whose deadline passed (`ncclTimeout`, named by ordo).
pub fn timeout(call: &'static str) -> Error {
    Error::Library(LibraryError { library: "NCCL", call, status: TIMEOUT, detail: Some(TIMEOUT_DETAIL) })
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
        // The same text is kept once.
        let again = detailed("ncclAllReduce", 6, Some("remote process exited or there was a network error"));
        let Error::Library(m) = again else { panic!() };
        assert!(core::ptr::eq(l.detail.unwrap(), m.detail.unwrap()));
        assert_eq!(detailed("x", 4, None).to_string(), "x failed: NCCL status 4: ncclInvalidArgument");
        assert_eq!(detailed("x", 99, Some("  ")).to_string(), "x failed: NCCL status 99: unknown NCCL status");
        assert_eq!(status_name(-1), "unknown NCCL status");
        assert!(timeout("Communicator::wait").to_string().contains("ncclTimeout"));
        assert!(is_timeout(&timeout("Communicator::wait")));
        assert!(!is_timeout(&detailed("ncclAllReduce", 8, Some("a timeout of NCCL's own"))));
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary_and_the_table_is_bounded() {
        let long = "é".repeat(TEXT_BYTES); // two bytes each
        let e = detailed("x", 3, Some(&long));
        let Error::Library(l) = e else { panic!() };
        let d = l.detail.unwrap();
        assert!(d.len() <= "ncclInternalError: ".len() + TEXT_BYTES && d.ends_with('é'), "{d}");
        assert_eq!(cut("aé", 2), "a");
        // A table of its own: the process-wide one is shared with the other tests, which run
        // at the same time and must find room in it.
        let table = Mutex::new(Vec::new());
        for i in 0..KEPT_TEXTS + 5 {
            let e = detailed_in(&table, "x", 2, Some(&format!("text number {i}")));
            let Error::Library(l) = e else { panic!() };
            assert!(l.detail.is_some(), "at least the status name");
        }
        assert_eq!(table.lock().unwrap().len(), KEPT_TEXTS);
        let Error::Library(l) = detailed_in(&table, "x", 2, Some("a text never seen, past the bound")) else {
            panic!()
        };
        assert_eq!(l.detail, Some("ncclSystemError"), "past the bound: the name alone");
        let Error::Library(l) = detailed_in(&table, "x", 2, Some("text number 3")) else { panic!() };
        assert_eq!(l.detail, Some("ncclSystemError: text number 3"), "a kept text is still found");
    }
}
