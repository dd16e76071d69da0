//! NCCL without a GPU: a library that is missing, or that lacks NCCL's functions, is an error
//! (never a panic), and the checks one rank can make refuse bad arguments before NCCL is called.
//! One test in this binary, because it sets `ORDO_NCCL` in the process environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use ordo_cuda_core::{Error, UsageKind};
use ordo_cuda_libs::nccl::{Communicators, Nccl, UniqueId};

fn not_supported(e: &Error, what: &str) {
    match e {
        Error::Usage(u) => assert_eq!(u.kind, UsageKind::NotSupported, "{what}: {e}"),
        other => panic!("{what}: expected a NotSupported usage error, got {other}"),
    }
}

#[test]
fn a_library_without_nccl_functions_is_an_error_not_a_panic() {
    // libc loads everywhere and has none of NCCL's functions: the load must say so.
    std::env::set_var("ORDO_NCCL", "libc.so.6");
    let e = Nccl::load().unwrap_err();
    not_supported(&e, "libc as NCCL");
    assert!(e.to_string().contains("symbol is missing"), "{e}");
    let e = Communicators::new(&[ordo_cuda_core::Device::from_ordinal(0), ordo_cuda_core::Device::from_ordinal(1)])
        .err()
        .expect("no communicators from libc");
    not_supported(&e, "Communicators::new with libc as NCCL");

    // A path that does not exist: an error naming it, never a fall-back to the loader's search
    // (which would load another library than the one asked for).
    std::env::set_var("ORDO_NCCL", "/nonexistent/libnccl.so.2");
    let e = Nccl::load().unwrap_err();
    not_supported(&e, "ORDO_NCCL naming a missing file");
    assert!(e.to_string().contains("/nonexistent/libnccl.so.2 not found"), "{e}");
    assert!(e.to_string().contains("ORDO_NCCL"), "{e}");
    std::env::remove_var("ORDO_NCCL");
    // The id needs no library.
    assert!(UniqueId::from_bytes(&[1u8; UniqueId::BYTES]).is_ok());
}
