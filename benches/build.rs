//! Compiles the plain CUDA C++ baselines (cuda/baseline.cu) with the nvcc ordo-cuda-sys found.
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=cuda");
    let Some(nvcc) = std::env::var_os("DEP_CUDART_NVCC") else {
        eprintln!("ordo-benches: the CUDA toolkit ordo-cuda-sys found has no nvcc; build against one that has");
        return ExitCode::FAILURE;
    };
    std::env::set_var("NVCC", nvcc);
    let built = cc::Build::new()
        .cuda(true)
        .cudart("none")
        .debug(false)
        .opt_level(3)
        .flag("-std=c++17")
        .flag("-gencode=arch=compute_80,code=sm_80")
        .flag("-gencode=arch=compute_90,code=sm_90")
        .warnings(false)
        .file("cuda/baseline.cu")
        .try_compile("ordo_baseline");
    if let Err(e) = built {
        eprintln!("ordo-benches: nvcc failed: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
