//! NVRTC without NVRTC: a library that lacks NVRTC's functions is an error (never a panic). One
//! test in this binary, because it sets `ORDO_NVRTC` in the process environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nvrtc")]

use ordo_cuda_core::{Error, UsageKind};
use ordo_cuda_libs::nvrtc::Nvrtc;

#[test]
fn a_library_without_nvrtc_functions_is_an_error_not_a_panic() {
    // libc loads everywhere and has none of NVRTC's functions: the load must say so.
    std::env::set_var("ORDO_NVRTC", "libc.so.6");
    let e = Nvrtc::load().unwrap_err();
    assert!(matches!(e, Error::Usage(ref u) if u.kind == UsageKind::NotSupported), "{e}");
    assert!(e.to_string().contains("symbol is missing"), "{e}");
    std::env::remove_var("ORDO_NVRTC");
}
