//! Version and build information.

use super::check::write_out;
use super::status::{guard, OrdoStatus};
use core::ffi::{c_char, c_int};
use ordo_cuda_core::sys;

/// The crate's version, NUL-terminated (from Cargo, never a literal).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");

/// ordo's version, e.g. "0.1.0" (the `ordo` crate's version).
#[no_mangle]
pub extern "C" fn ordo_version() -> *const c_char {
    VERSION.as_ptr().cast()
}

/// A decimal version component, at compile time (Cargo gives digits only).
const fn component(digits: &str) -> c_int {
    let bytes = digits.as_bytes();
    let mut value: c_int = 0;
    let mut i = 0;
    while i < bytes.len() {
        value = value * 10 + (bytes[i] - b'0') as c_int;
        i += 1;
    }
    value
}

/// The crate's version as one number: MAJOR * 1000000 + MINOR * 1000 + PATCH.
const VERSION_NUMBER: c_int = component(env!("CARGO_PKG_VERSION_MAJOR")) * 1_000_000
    + component(env!("CARGO_PKG_VERSION_MINOR")) * 1_000
    + component(env!("CARGO_PKG_VERSION_PATCH"));

/// ordo's version as one number, MAJOR * 1000000 + MINOR * 1000 + PATCH, to compare with the
/// header's `ORDO_VERSION_NUMBER`.
#[no_mangle]
pub extern "C" fn ordo_version_number() -> c_int {
    VERSION_NUMBER
}

/// The CUDA version ordo was built against (`CUDART_VERSION`, e.g. 13000).
#[no_mangle]
pub extern "C" fn ordo_cuda_version() -> c_int {
    c_int::try_from(sys::CUDA_VERSION).unwrap_or(c_int::MAX)
}

/// The CUDA runtime version in use (`cudaRuntimeGetVersion`).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_runtime_version(out: *mut c_int) -> OrdoStatus {
    guard("ordo_runtime_version", || {
        super::check::non_null(out.cast_const(), "out")?;
        let v = ordo_cuda_core::device::runtime_version()?;
        write_out(out, c_int::try_from(v).unwrap_or(c_int::MAX), "out")
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_is_the_crates() {
        // SAFETY: a static NUL-terminated string.
        let v = unsafe { core::ffi::CStr::from_ptr(super::ordo_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
        let parts: Vec<i32> = env!("CARGO_PKG_VERSION").split(['.', '-']).take(3).map(|p| p.parse().unwrap()).collect();
        assert_eq!(super::ordo_version_number(), parts[0] * 1_000_000 + parts[1] * 1_000 + parts[2]);
    }
}
