//! Compiles the app's own kernel (../scale.cu) into a fatbin that the app loads with cudarc: nvcc
//! from CUDA_HOME, else from PATH.
use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=../scale.cu");
    println!("cargo::rerun-if-env-changed=CUDA_HOME");
    let nvcc =
        std::env::var_os("CUDA_HOME").map_or_else(|| PathBuf::from("nvcc"), |h| PathBuf::from(h).join("bin/nvcc"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("scale.fatbin");
    // docs.rs: no toolkit, and rustdoc links nothing; an empty fatbin keeps `include_bytes!` compiling.
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    if std::env::var_os("DOCS_RS").is_some() {
        return match std::fs::write(&out, []) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("embedder-cudarc: writing {}: {e}", out.display());
                ExitCode::FAILURE
            }
        };
    }
    let status = Command::new(&nvcc)
        .args(["--fatbin", "-O3"])
        .args(["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"])
        .arg("-gencode=arch=compute_90,code=compute_90")
        .arg("../scale.cu")
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => {
            eprintln!("embedder-cudarc: {} failed ({s})", nvcc.display());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("embedder-cudarc: running {}: {e}", nvcc.display());
            ExitCode::FAILURE
        }
    }
}
