//! Compiles the app's own kernel (../scale.cu) with what the facade passes on from ordo-cuda-core:
//! the nvcc (`DEP_ORDO_CUDA_NVCC`), the `-gencode` flags (`DEP_ORDO_CUDA_GENCODE`) and ordo's device
//! headers (`DEP_ORDO_CUDA_INCLUDE`).
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=../scale.cu");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    // docs.rs: no toolkit, so no nvcc published; rustdoc links nothing, so there is nothing to compile.
    if std::env::var_os("DOCS_RS").is_some() {
        return ExitCode::SUCCESS;
    }
    let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_{key}")).ok();
    let (Some(nvcc), Some(include), Some(gencode)) = (var("NVCC"), var("INCLUDE"), var("GENCODE")) else {
        eprintln!("embedder-facade: ordo-cuda passed on no NVCC, INCLUDE or GENCODE");
        return ExitCode::FAILURE;
    };
    if !std::path::Path::new(&include).join("ordo/pdl.cuh").is_file() {
        eprintln!("embedder-facade: DEP_ORDO_CUDA_INCLUDE={include} holds no ordo/pdl.cuh");
        return ExitCode::FAILURE;
    }
    std::env::set_var("NVCC", nvcc);
    let mut build = cc::Build::new();
    build.cuda(true).cudart("none").debug(false).opt_level(3).include(&include).file("../scale.cu");
    for flag in gencode.split_whitespace() {
        build.flag(flag);
    }
    match build.try_compile("embedder_kernels") {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embedder-facade: nvcc failed: {e}");
            ExitCode::FAILURE
        }
    }
}
