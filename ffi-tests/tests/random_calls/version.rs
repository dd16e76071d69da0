//! The exports without a handle or a stream: `ordo_version` and the last error's message,
//! `ordo_runtime_version`, the status names and strings.

use crate::fuzz::*;
use core::ptr::null_mut;
use ordo_cuda_capi::*;

impl Fuzz<'_> {
    /// `ordo_version`, `ordo_cuda_version`, `ordo_version_number`, and the last error's
    /// message into a buffer that is null, empty, short or long (cleared now and then).
    pub(crate) fn version_and_last_error(&mut self) {
        let v = unsafe { core::ffi::CStr::from_ptr(ordo_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        assert!(ordo_cuda_version() >= 12000);
        let part = |v: &str| v.parse::<i32>().unwrap();
        let want = part(env!("CARGO_PKG_VERSION_MAJOR")) * 1_000_000
            + part(env!("CARGO_PKG_VERSION_MINOR")) * 1_000
            + part(env!("CARGO_PKG_VERSION_PATCH"));
        assert_eq!(ordo_version_number(), want);
        // The last error's message, into a buffer that is null, empty, short or long.
        let mut buf = [0x7f as core::ffi::c_char; 24];
        let (ptr, len) = match self.rng.below(4) {
            0 => (null_mut(), 24),
            1 => (buf.as_mut_ptr(), 0),
            2 => (buf.as_mut_ptr(), 1 + self.rng.below(4) as usize),
            _ => (buf.as_mut_ptr(), buf.len()),
        };
        let full = unsafe { ordo_last_error_message(ptr, len) };
        if !ptr.is_null() && len > 0 {
            let written = unsafe { core::ffi::CStr::from_ptr(buf.as_ptr()) }.to_bytes().len();
            assert_eq!(written, full.min(len - 1).min(written), "NUL-terminated within len");
            assert!(written < len && written <= full);
        }
        if self.rng.chance(4) {
            ordo_clear_last_error();
            assert_eq!(unsafe { ordo_last_error_message(null_mut(), 0) }, 0, "cleared");
        }
    }

    /// `ordo_runtime_version` into a null, misaligned or good pointer.
    pub(crate) fn runtime_version(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let k = self.ptr_kind();
        let mut v = [0i32; 2];
        let p = match k {
            Ptr::Null => null_mut(),
            Ptr::Misaligned => unsafe { v.as_mut_ptr().cast::<u8>().add(1).cast() },
            _ => v.as_mut_ptr(),
        };
        let st = self.record(unsafe { ordo_runtime_version(p) }, "ordo_runtime_version");
        match k {
            Ptr::Null | Ptr::Misaligned => assert_eq!(st, ia),
            _ if gpu => assert!(st == ORDO_SUCCESS && v[0] >= 12000),
            _ => {}
        }
    }

    /// The status name, string and stickiness of any value.
    pub(crate) fn status_strings(&mut self) {
        let s = self.rng.next() as i32;
        let s = if self.rng.chance(2) { s % 11000 } else { s };
        let (name, text) = (ordo_status_name(s), ordo_status_string(s));
        assert!(!name.is_null() && !text.is_null());
        assert!(ordo_status_is_sticky(s) <= 1);
    }
}
