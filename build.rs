//! Publishes what a crate that compiles its own CUDA C against ordo needs, as `links = "ordo"`
//! metadata (cargo passes it to the build scripts of crates depending on `ordo` directly):
//! - `DEP_ORDO_INCLUDE`: ordo's header folder (`ordo.h`, `ordo/pdl.cuh` with `ORDO_PDL_KERNELS`);
//! - `DEP_ORDO_NVCC`: the nvcc of the CUDA toolkit ordo was built against (from ordo-cuda-sys),
//!   so the user's kernels and ordo's runtime come from one toolkit;
//! - `DEP_ORDO_CUDA_VERSION`: that toolkit's version, as ordo-cuda-sys read it from its headers;
//! - `DEP_ORDO_HAS_DEVICE`: `1` where the build machine has an NVIDIA GPU (for `cfg`s of GPU tests);
//! - `DEP_ORDO_GENCODE`: the nvcc `-gencode` flags ordo's own kernels are built with (space-separated).
//!
//! `examples/user-kernel/build.rs` shows the use. It also gives the shared library (`cdylib`) its
//! SONAME, `libordo.so.MAJOR`.
fn main() {
    println!("cargo::rerun-if-changed=include");
    // The shared library's SONAME: libordo.so.MAJOR (scripts/package.sh installs it so).
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap_or_else(|_| "0".into());
    println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libordo.so.{major}");
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo::metadata=include={root}/include");
    if let Ok(has_device) = std::env::var("DEP_CUDART_HAS_DEVICE") {
        println!("cargo::metadata=has_device={has_device}");
    }
    if let Ok(nvcc) = std::env::var("DEP_CUDART_NVCC") {
        println!("cargo::metadata=nvcc={nvcc}");
    }
    if let Ok(gencode) = std::env::var("DEP_CUDART_GENCODE") {
        println!("cargo::metadata=gencode={gencode}");
    }
    if let Ok(version) = std::env::var("DEP_CUDART_VERSION") {
        println!("cargo::metadata=cuda_version={version}");
    }
}
