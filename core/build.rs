//! Sets `cfg(has_cuda_device)` for GPU tests when ordo-cuda-sys saw an NVIDIA device (or
//! ORDO_GPU_TESTS=1), `cfg(cuda_library_api)` when the toolkit has `cudaLibraryLoadData` (12.8+), and
//! passes the CUDA include folder on to the tests, which read the headers at compile time.
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
    println!("cargo::rustc-check-cfg=cfg(has_cuda_device)");
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).ok();
    if sys("HAS_DEVICE").as_deref() == Some("1") {
        println!("cargo::rustc-cfg=has_cuda_device");
    }
    // The tests that load PTX at run time need cudaLibraryLoadData (CUDA 12.8 and later headers:
    // the runtime's cudaLibrary* calls are not in 12.4 to 12.6).
    println!("cargo::rustc-check-cfg=cfg(cuda_library_api)");
    let version = sys("VERSION").and_then(|v| v.parse::<u32>().ok());
    if version.is_some_and(|v| v >= 12080) {
        println!("cargo::rustc-cfg=cuda_library_api");
    }
    // The preferred-cluster launch attribute: CUDA 12.8 and later headers.
    println!("cargo::rustc-check-cfg=cfg(cuda_12_8)");
    if version.is_some_and(|v| v >= 12080) {
        println!("cargo::rustc-cfg=cuda_12_8");
    }
    let include = sys("INCLUDE").unwrap_or_default();
    if let Some(first) = std::env::split_paths(&include).next() {
        println!("cargo::rustc-env=ORDO_CUDA_INCLUDE={}", first.display());
    }

    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    println!("cargo::metadata=include={root}/include");
    println!("cargo::metadata=cuda_include={include}");
    for (from, to) in
        [("NVCC", "nvcc"), ("GENCODE", "gencode"), ("VERSION", "cuda_version"), ("HAS_DEVICE", "has_device")]
    {
        if let Some(value) = sys(from) {
            println!("cargo::metadata={to}={value}");
        }
    }
}
