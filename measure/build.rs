//! Reads ordo-cuda-core's build metadata (`DEP_ORDO_CUDA_CORE_*`) and sets:
//! - `cfg(has_cuda_device)` where the build machine has an NVIDIA GPU (for the GPU tests);
//! - `cfg(measure_engine)` where the toolkit's headers are CUDA 12.5 or later: the engine loads its
//!   helper kernels with `cudaLibraryLoadData` (12.4) and resolves `cuLaunchKernelEx` with
//!   `cudaGetDriverEntryPointByVersion` (12.5). Against older headers the crate builds the parts
//!   that need no CUDA call (statistics, reports, comparison, the command's parser, the PTX
//!   instrumentation), and the command says what is missing;
//! - `ORDO_MEASURE_BUILD_PTXAS`: the `ptxas` beside the nvcc ordo was built with, if any, where the
//!   tests that assemble the helper kernels and instrumented PTX look first.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(has_cuda_device)");
    println!("cargo::rustc-check-cfg=cfg(measure_engine)");
    let core = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")).ok();
    if core("HAS_DEVICE").as_deref() == Some("1") {
        println!("cargo::rustc-cfg=has_cuda_device");
    }
    let version = core("CUDA_VERSION").and_then(|v| v.parse::<u32>().ok());
    if version.is_some_and(|v| v >= 12050) {
        println!("cargo::rustc-cfg=measure_engine");
    }
    let ptxas = core("NVCC")
        .map(std::path::PathBuf::from)
        .and_then(|nvcc| nvcc.parent().map(|bin| bin.join("ptxas")))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!("cargo::rustc-env=ORDO_MEASURE_BUILD_PTXAS={ptxas}");
}
