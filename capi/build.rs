//! Gives the shared library (`cdylib`) its SONAME, `libordo.so.MAJOR` (scripts/package.sh installs it
//! so), and publishes the C header folder (`ordo.h`, `ordo.hpp`) as `links` metadata
//! (`DEP_ORDO_CUDA_CAPI_INCLUDE`) for crates that compile C or C++ against it.
fn main() {
    println!("cargo::rerun-if-changed=include");
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libordo.so.{major}");
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo::metadata=include={root}/include");
}
