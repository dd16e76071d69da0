//! Sets the cfgs ordo-cuda-sys sets on itself, from the list it publishes (`DEP_ORDO_CUDA_SYS_CFGS`):
//! the version gates (`cuda_12_8`, ...) and `has_cuda_device` for GPU tests (an NVIDIA device seen,
//! or ORDO_GPU_TESTS=1); `cfg(cuda_library_api)` with `cuda_12_8` (the toolkit has
//! `cudaLibraryLoadData`); and passes the CUDA include folder on to the tests, which read the
//! headers at compile time.
//!
//! It also publishes, as `links = "ordo_cuda_core"` metadata, what a crate that compiles its own
//! CUDA C against ordo needs (cargo passes it to the build scripts of crates that depend on
//! ordo-cuda-core directly, as `DEP_ORDO_CUDA_CORE_*`):
//! - `INCLUDE`: ordo's device headers (`ordo/pdl.cuh` with `ORDO_PDL_KERNELS`, `ordo/graph.cuh`);
//! - `NVCC`: the nvcc of the CUDA toolkit ordo was built against, so that the crate's kernels and
//!   ordo's runtime come from one toolkit (absent where that toolkit has no nvcc);
//! - `GENCODE`: the nvcc `-gencode` flags ordo's own kernels are built with (space-separated);
//! - `CUDA_VERSION`: that toolkit's version as read from its headers (`13000` for 13.0);
//! - `CUDA_INCLUDE`: the toolkit's include folders (a search path);
//! - `HAS_DEVICE`: `1` where the build machine has an NVIDIA GPU (for `cfg`s of GPU tests).
fn main() {
    println!("cargo::rerun-if-changed=include");
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).ok();
    let (all, set) = (sys("CHECK_CFGS").unwrap_or_default(), sys("CFGS").unwrap_or_default());
    for cfg in all.split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in set.split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
    // For the test that this crate's cfgs are those (tests/version_gates.rs).
    println!("cargo::rustc-env=ORDO_CUDA_SYS_CHECK_CFGS={all}");
    println!("cargo::rustc-env=ORDO_CUDA_SYS_CFGS={set}");
    // The tests that load PTX at run time need cudaLibraryLoadData (CUDA 12.8 and later headers:
    // the runtime's cudaLibrary* calls are not in 12.4 to 12.6).
    println!("cargo::rustc-check-cfg=cfg(cuda_library_api)");
    if set.split_whitespace().any(|cfg| cfg == "cuda_12_8") {
        println!("cargo::rustc-cfg=cuda_library_api");
    }
    let include = sys("INCLUDE").unwrap_or_default();
    if let Some(first) = std::env::split_paths(&include).next() {
        println!("cargo::rustc-env=ORDO_CUDA_INCLUDE={}", first.display());
    }

    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo::metadata=include={root}/include");
    println!("cargo::metadata=cuda_include={include}");
    for (from, to) in [
        ("NVCC", "nvcc"),
        ("GENCODE", "gencode"),
        ("VERSION", "cuda_version"),
        ("HAS_DEVICE", "has_device"),
        ("CFGS", "cfgs"),
        ("CHECK_CFGS", "check_cfgs"),
    ] {
        if let Some(value) = sys(from) {
            println!("cargo::metadata={to}={value}");
        }
    }
}
