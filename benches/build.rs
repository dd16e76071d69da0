//! Compiles the plain CUDA C++ baselines (cuda/baseline.cu) with the nvcc ordo-cuda-sys found: once
//! into a static library linked into the benches, and once into a fatbin (`$OUT_DIR/baseline.fatbin`)
//! that the cudarc comparison loads as a module, so both launch the very same kernels.
use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=cuda");
    println!("cargo::rerun-if-changed=../include/ordo");
    // cudaMemcpyBatchAsync in its CUDA 13.0 form (12.8 and 12.9 had one more parameter).
    println!("cargo::rustc-check-cfg=cfg(cuda_13)");
    if std::env::var("DEP_CUDART_VERSION").ok().and_then(|v| v.parse::<u32>().ok()).is_some_and(|v| v >= 13000) {
        println!("cargo::rustc-cfg=cuda_13");
    }
    let Some(nvcc) = std::env::var_os("DEP_CUDART_NVCC") else {
        eprintln!("ordo-benches: the CUDA toolkit ordo-cuda-sys found has no nvcc; build against one that has");
        return ExitCode::FAILURE;
    };
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("ordo-benches: cargo did not set OUT_DIR");
        return ExitCode::FAILURE;
    };
    std::env::set_var("NVCC", &nvcc);
    // The targets ordo-cuda-sys publishes for every crate.
    let gencode = std::env::var("DEP_CUDART_GENCODE").unwrap_or_default();
    let gencode: Vec<&str> = gencode.split_whitespace().collect();
    let mut build = cc::Build::new();
    build.cuda(true).cudart("none").debug(false).opt_level(3).flag("-std=c++17").include("../include").warnings(false);
    for g in &gencode {
        build.flag(g);
    }
    if let Err(e) = build.file("cuda/baseline.cu").try_compile("ordo_baseline") {
        eprintln!("ordo-benches: nvcc failed: {e}");
        return ExitCode::FAILURE;
    }
    let fatbin = out_dir.join("baseline.fatbin");
    let status = Command::new(&nvcc)
        .args(["-std=c++17", "-I../include", "--fatbin"])
        .args(&gencode)
        .arg("-o")
        .arg(&fatbin)
        .arg("cuda/baseline.cu")
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("ordo-benches: nvcc --fatbin cuda/baseline.cu failed ({s})");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("ordo-benches: running {}: {e}", PathBuf::from(&nvcc).display());
            ExitCode::FAILURE
        }
    }
}
