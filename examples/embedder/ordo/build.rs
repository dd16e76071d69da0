//! Compiles the app's own kernel (../scale.cu) with what ordo-cuda-core publishes to the crates that
//! depend on it: its toolkit's nvcc (`DEP_ORDO_CUDA_CORE_NVCC`), its `-gencode` flags
//! (`DEP_ORDO_CUDA_CORE_GENCODE`) and its device headers (`DEP_ORDO_CUDA_CORE_INCLUDE`).
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=../scale.cu");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    // docs.rs: no toolkit, so no nvcc published; rustdoc links nothing, so there is nothing to compile.
    if std::env::var_os("DOCS_RS").is_some() {
        return ExitCode::SUCCESS;
    }
    let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")).ok();
    let (Some(nvcc), Some(include), Some(gencode)) = (var("NVCC"), var("INCLUDE"), var("GENCODE")) else {
        eprintln!("embedder-ordo: ordo-cuda-core published no NVCC, INCLUDE or GENCODE (its toolkit has no nvcc?)");
        return ExitCode::FAILURE;
    };
    if !std::path::Path::new(&include).join("ordo/pdl.cuh").is_file() {
        eprintln!("embedder-ordo: DEP_ORDO_CUDA_CORE_INCLUDE={include} holds no ordo/pdl.cuh");
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
            eprintln!("embedder-ordo: nvcc failed: {e}");
            ExitCode::FAILURE
        }
    }
}
