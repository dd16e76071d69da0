//! Sets `cfg(has_cuda_device)` for GPU tests when ordo-cuda-sys saw an NVIDIA device (or
//! ORDO_GPU_TESTS=1), `cfg(cuda_library_api)` when the toolkit has `cudaLibraryLoadData` (12.8+), and
//! passes the CUDA include folder on to the tests, which read the headers at compile time.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_cuda_device)");
    if std::env::var("DEP_CUDART_HAS_DEVICE").as_deref() == Ok("1") {
        println!("cargo::rustc-cfg=has_cuda_device");
    }
    // The tests that load PTX at run time need cudaLibraryLoadData (CUDA 12.8 and later headers:
    // the runtime's cudaLibrary* calls are not in 12.4 to 12.6).
    println!("cargo::rustc-check-cfg=cfg(cuda_library_api)");
    let version = std::env::var("DEP_CUDART_VERSION").ok().and_then(|v| v.parse::<u32>().ok());
    if version.is_some_and(|v| v >= 12080) {
        println!("cargo::rustc-cfg=cuda_library_api");
    }
    // The preferred-cluster launch attribute: CUDA 12.8 and later headers.
    println!("cargo::rustc-check-cfg=cfg(cuda_12_8)");
    if version.is_some_and(|v| v >= 12080) {
        println!("cargo::rustc-cfg=cuda_12_8");
    }
    let include = std::env::var_os("DEP_CUDART_INCLUDE").unwrap_or_default();
    if let Some(first) = std::env::split_paths(&include).next() {
        println!("cargo::rustc-env=ORDO_CUDA_INCLUDE={}", first.display());
    }
}
