//! The calling thread's last error: what the last failing export on this thread said, beyond its
//! status (NCCL's `ncclGetLastError`, cuDNN's `cudnnGetLastErrorString`, as a record too).
//!
//! Every export that fails records, on its thread: the status it returned, CUDA's code when the
//! failure came from CUDA, another library's or a callback's status, whether the error is sticky,
//! the call that failed (a CUDA function, an ordo function, or the export when no more is known),
//! and a message. A successful export leaves the record as it was (as `errno`); a failure of a
//! nested export (called from a callback) overwrites it. Recording allocates only on the failure
//! path.

use super::codes::{ordo_status_name, ordo_status_string, OrdoStatus, ORDO_ERROR_INVALID_ARGUMENT, ORDO_SUCCESS};
use core::ffi::{c_char, c_int, CStr};
use ordo_cuda_core::Error;
use std::cell::RefCell;

/// Bytes of [`OrdoErrorInfo::call`], the terminating NUL included.
pub const ORDO_LAST_ERROR_CALL_LEN: usize = 64;
/// Bytes of [`OrdoErrorInfo::message`], the terminating NUL included.
pub const ORDO_LAST_ERROR_MESSAGE_LEN: usize = 512;

/// The record `ordo_last_error` fills (`ordo_error_info` in ordo.h). The caller sets `size` to
/// `sizeof(ordo_error_info)` of the header it was compiled with, so that later versions can add
/// fields at the end.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OrdoErrorInfo {
    /// `sizeof(ordo_error_info)`, set by the caller.
    pub size: usize,
    /// The status the failing export returned; `ORDO_SUCCESS` when none failed on this thread.
    pub status: OrdoStatus,
    /// CUDA's code when the failure came from CUDA, else 0.
    pub cuda_error: c_int,
    /// Another library's (cuBLAS, NCCL) or a callback's own status, else 0.
    pub library_status: c_int,
    /// 1 when the error is a sticky CUDA error (the context is lost), else 0.
    pub sticky: c_int,
    /// The call that failed, NUL-terminated (truncated to fit).
    pub call: [c_char; ORDO_LAST_ERROR_CALL_LEN],
    /// What went wrong, NUL-terminated (truncated to fit).
    pub message: [c_char; ORDO_LAST_ERROR_MESSAGE_LEN],
}

/// One failure, as recorded.
#[derive(Debug, Clone)]
struct Record {
    status: OrdoStatus,
    cuda_error: c_int,
    library_status: c_int,
    sticky: bool,
    call: String,
    message: String,
    /// A refusal of the export's own: the export is named when it is recorded, with the argument
    /// refused (`Some`) or alone (`None`), and `message` is what was wrong.
    refusal: Option<Option<&'static str>>,
}

thread_local! {
    /// The record `ordo_last_error` reads.
    static LAST: RefCell<Option<Record>> = const { RefCell::new(None) };
    /// The detail of the error the running export turned into its status (set when an ordo error
    /// becomes a failure, taken when the export returns).
    static PENDING: RefCell<Option<Record>> = const { RefCell::new(None) };
}

fn text(p: *const c_char) -> String {
    // SAFETY: ordo_status_name and ordo_status_string return static NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Keeps the detail of `e`, which the running export is about to return as `status`.
pub(crate) fn note(e: &Error, status: OrdoStatus) {
    // A C callback's status passed through unchanged is CUDA's code when positive: recorded as
    // such, sticky when CUDA's is.
    let passed_through = matches!(e, Error::Library(l) if l.library == super::codes::CALLBACK && l.status == status);
    let callback_cuda = if passed_through && status > 0 { status } else { 0 };
    let record = Record {
        status,
        cuda_error: e.cuda_code().map_or(callback_cuda, |c| c_int::try_from(c.0).unwrap_or(c_int::MAX)),
        library_status: match e {
            Error::Library(l) => l.status,
            Error::Cuda(_) | Error::Usage(_) => 0,
        },
        sticky: e.is_sticky() || (callback_cuda != 0 && super::codes::ordo_status_is_sticky(callback_cuda) != 0),
        call: e.call().to_string(),
        message: format!("{}: {e}", text(ordo_status_name(status))),
        refusal: None,
    };
    let _ = PENDING.try_with(|p| *p.borrow_mut() = Some(record));
}

/// Keeps the detail of a refusal of the running export's own (`arg`: the argument refused, `None`
/// for the call as a whole), which it is about to return as `status`.
pub(crate) fn note_refusal(status: OrdoStatus, arg: Option<&'static str>, what: &'static str) {
    let record = Record {
        status,
        cuda_error: if status > 0 { status } else { 0 },
        library_status: 0,
        sticky: super::codes::ordo_status_is_sticky(status) != 0,
        call: String::new(),
        message: what.to_string(),
        refusal: Some(arg),
    };
    let _ = PENDING.try_with(|p| *p.borrow_mut() = Some(record));
}

/// Records the failure of `export` with `status` (the detail noted meanwhile when it is for this
/// status; else the status's own description). Called by the guard of every export.
pub(crate) fn record(export: &'static str, status: OrdoStatus) {
    let noted = PENDING.try_with(|p| p.borrow_mut().take()).ok().flatten();
    let record = match noted {
        Some(r) if r.status == status => match r.refusal {
            None => r,
            Some(arg) => {
                let call = match arg {
                    Some(arg) => format!("{export}({arg})"),
                    None => export.to_string(),
                };
                let message = format!("{}: {call}: {}", text(ordo_status_name(status)), r.message);
                Record { call, message, refusal: None, ..r }
            }
        },
        _ => Record {
            status,
            cuda_error: if status > 0 { status } else { 0 },
            library_status: 0,
            sticky: super::codes::ordo_status_is_sticky(status) != 0,
            call: export.to_string(),
            message: format!("{}: {}: {}", text(ordo_status_name(status)), export, text(ordo_status_string(status))),
            refusal: None,
        },
    };
    let _ = LAST.try_with(|l| *l.borrow_mut() = Some(record));
}

/// Forgets a detail noted by an export that then succeeded anyway (an error handled inside).
pub(crate) fn discard_pending() {
    let _ = PENDING.try_with(|p| p.borrow_mut().take());
}

/// Copies `s` into `out` as a NUL-terminated string, truncated at a character boundary to fit.
fn copy_str(s: &str, out: &mut [c_char]) {
    let Some(room) = out.len().checked_sub(1) else { return };
    let mut end = s.len().min(room);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    for (o, b) in out.iter_mut().zip(&s.as_bytes()[..end]) {
        *o = *b as c_char;
    }
    out[end] = 0;
}

/// Fills `*info` with the calling thread's last error (`status` `ORDO_SUCCESS` and empty strings
/// when no export has failed on this thread). `ORDO_ERROR_INVALID_ARGUMENT` when `info` is NULL or
/// misaligned, or `info->size` is smaller than this version's `sizeof(ordo_error_info)`; then
/// nothing is written. Does not change the record itself (a failure of this call is not recorded).
///
/// # Safety
/// The C contract: a non-null `info` points to `info->size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_last_error(info: *mut OrdoErrorInfo) -> OrdoStatus {
    if info.is_null() || !info.is_aligned() {
        return ORDO_ERROR_INVALID_ARGUMENT;
    }
    // SAFETY: non-null and aligned; the caller owes `size` readable bytes (at least the field).
    let size = unsafe { info.cast::<usize>().read() };
    if size < core::mem::size_of::<OrdoErrorInfo>() {
        return ORDO_ERROR_INVALID_ARGUMENT;
    }
    let mut out = OrdoErrorInfo {
        size,
        status: ORDO_SUCCESS,
        cuda_error: 0,
        library_status: 0,
        sticky: 0,
        call: [0; ORDO_LAST_ERROR_CALL_LEN],
        message: [0; ORDO_LAST_ERROR_MESSAGE_LEN],
    };
    let _ = LAST.try_with(|l| {
        if let Some(r) = &*l.borrow() {
            out.status = r.status;
            out.cuda_error = r.cuda_error;
            out.library_status = r.library_status;
            out.sticky = c_int::from(r.sticky);
            copy_str(&r.call, &mut out.call);
            copy_str(&r.message, &mut out.message);
        }
    });
    // SAFETY: checked above: aligned, and at least this struct's size is writable. Fields a later
    // header may add beyond it are left as they were.
    unsafe { info.write(out) };
    ORDO_SUCCESS
}

/// Writes the calling thread's last error message into `buf` (`len` bytes, NUL-terminated,
/// truncated to fit; nothing written when `buf` is NULL or `len` is 0) and returns the message's
/// full length without the NUL, as `snprintf` does: 0 when no export has failed on this thread.
///
/// # Safety
/// The C contract: a non-null `buf` points to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_last_error_message(buf: *mut c_char, len: usize) -> usize {
    let message = LAST.try_with(|l| l.borrow().as_ref().map(|r| r.message.clone())).ok().flatten().unwrap_or_default();
    if !buf.is_null() && len > 0 {
        // Only the bytes written are viewed (the message and its NUL, or `len` when shorter): a
        // `len` past what a slice may span (SIZE_MAX for "big enough") still gets the message.
        let used = len.min(message.len() + 1);
        // SAFETY: the caller owes `len` writable bytes at `buf`, and `used <= len`; `used` is at
        // most the message's length plus one, so within isize; c_char has no alignment needs.
        let out = unsafe { core::slice::from_raw_parts_mut(buf, used) };
        copy_str(&message, out);
    }
    message.len()
}

/// Forgets the calling thread's last error.
#[no_mangle]
pub extern "C" fn ordo_clear_last_error() {
    let _ = LAST.try_with(|l| l.borrow_mut().take());
    discard_pending();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_truncated_at_a_character_and_terminated() {
        let mut out = [1 as c_char; 6];
        copy_str("abcdefgh", &mut out);
        // SAFETY: NUL-terminated above.
        assert_eq!(unsafe { CStr::from_ptr(out.as_ptr()) }.to_str().unwrap(), "abcde");
        copy_str("ab\u{e9}\u{e9}", &mut out); // 2 + 2 + 2 bytes: the second é does not fit whole
        assert_eq!(unsafe { CStr::from_ptr(out.as_ptr()) }.to_bytes(), "ab\u{e9}".as_bytes());
        copy_str("anything", &mut []);
    }
}
