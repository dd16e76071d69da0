//! Reads ordo-cuda-sys's and ordo-cuda-core's build metadata (`DEP_ORDO_CUDA_SYS_*`, `_CORE_*`) and sets:
//! - the cfgs ordo-cuda-sys sets on itself: the version gates, and `has_cuda_device` where the
//!   build machine has an NVIDIA GPU (for the GPU tests);
//! - `cfg(measure_engine)` with `cuda_12_5` (CUDA 12.5 or later headers): the engine loads its
//!   helper kernels with `cudaLibraryLoadData` (12.4) and resolves `cuLaunchKernelEx` with
//!   `cudaGetDriverEntryPointByVersion` (12.5). Against older headers the crate builds the parts
//!   that need no CUDA call (statistics, reports, comparison, the command's parser, the PTX
//!   instrumentation), and the command says what is missing;
//! - `ORDO_MEASURE_BUILD_PTXAS`: the `ptxas` beside the nvcc ordo was built with, if any, where the
//!   tests that assemble the helper kernels and instrumented PTX look first.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // The version gates and `has_cuda_device`, set as ordo-cuda-sys sets them (one list: its build script).
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).unwrap_or_default();
    for cfg in sys("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in sys("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
    println!("cargo::rustc-check-cfg=cfg(measure_engine)");
    if sys("CFGS").split_whitespace().any(|cfg| cfg == "cuda_12_5") {
        println!("cargo::rustc-cfg=measure_engine");
    }
    let core = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")).ok();
    let ptxas = core("NVCC")
        .map(std::path::PathBuf::from)
        .and_then(|nvcc| nvcc.parent().map(|bin| bin.join("ptxas")))
        .filter(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!("cargo::rustc-env=ORDO_MEASURE_BUILD_PTXAS={ptxas}");
}
