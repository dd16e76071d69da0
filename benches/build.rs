//! Compiles the plain CUDA C++ baselines (cuda/baseline.cu, and the decode step's cuda/decode.cu)
//! with the nvcc ordo-cuda-sys found: once into a static library linked into the benches, and
//! baseline.cu once more into a fatbin (`$OUT_DIR/baseline.fatbin`) that the cudarc comparison
//! loads as a module, so both launch the very same kernels.
use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=cuda");
    let core = |key: &str| std::env::var_os(format!("DEP_ORDO_CUDA_CORE_{key}"));
    let include = PathBuf::from(core("INCLUDE").unwrap_or_default());
    println!("cargo::rerun-if-changed={}", include.join("ordo").display());
    // The version gates and `has_cuda_device`, set as ordo-cuda-sys sets them (one list: its build script);
    // `cuda_13`: cudaMemcpyBatchAsync in its CUDA 13.0 form (12.8 and 12.9 had one more parameter).
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).unwrap_or_default();
    for cfg in sys("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in sys("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
    let Some(nvcc) = core("NVCC") else {
        eprintln!("ordo-benches: the CUDA toolkit ordo-cuda-sys found has no nvcc; build against one that has");
        return ExitCode::FAILURE;
    };
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("ordo-benches: cargo did not set OUT_DIR");
        return ExitCode::FAILURE;
    };
    std::env::set_var("NVCC", &nvcc);
    // The targets ordo-cuda-sys publishes for every crate.
    let gencode = core("GENCODE").unwrap_or_default().to_string_lossy().into_owned();
    let gencode: Vec<&str> = gencode.split_whitespace().collect();
    // One library a file: cc compiles several .cu files of one build as relocatable device code
    // and device-links them, and that link dropped decode.cu's extern "C" kernels (bl_user_step:
    // "cannot be found in library" at run time, with nvcc 13.0 and 13.5). A file alone is compiled
    // whole, as a user's single .cu usually is.
    for (file, lib) in [
        ("cuda/baseline.cu", "ordo_baseline"),
        ("cuda/decode.cu", "ordo_decode"),
        ("cuda/green.cu", "ordo_green"),
        ("cuda/streams.cu", "ordo_streams"),
    ] {
        let mut build = cc::Build::new();
        build.cuda(true).cudart("none").debug(false).opt_level(3).flag("-std=c++17").include(&include).warnings(false);
        for g in &gencode {
            build.flag(g);
        }
        if let Err(e) = build.file(file).try_compile(lib) {
            eprintln!("ordo-benches: nvcc failed on {file}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let fatbin = out_dir.join("baseline.fatbin");
    let status = Command::new(&nvcc)
        .args(["-std=c++17", "--fatbin"])
        .arg(format!("-I{}", include.display()))
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
