//! Compiles kernels/cuda/*.cu with the nvcc that ordo-cuda-sys found, for sm_80 and sm_90 machine
//! code plus compute_90 PTX, with ordo's device headers on the include path: both from
//! ordo-cuda-core's links metadata (`DEP_ORDO_CUDA_CORE_NVCC`, `_INCLUDE`, `_GENCODE`). The CUDA
//! runtime itself is linked by ordo-cuda-sys. With `DOCS_RS` set (docs.rs: no toolkit), it compiles
//! nothing.
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=cuda");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    // The version gates and `has_cuda_device`, set as ordo-cuda-sys sets them (one list: its build script).
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).unwrap_or_default();
    for cfg in sys("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in sys("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
    // docs.rs documents the crate with no CUDA toolkit: rustdoc links nothing, so there is nothing
    // to compile.
    if std::env::var_os("DOCS_RS").is_some() {
        return ExitCode::SUCCESS;
    }
    let core = |key: &str| std::env::var_os(format!("DEP_ORDO_CUDA_CORE_{key}"));
    let include = PathBuf::from(core("INCLUDE").unwrap_or_default());
    println!("cargo::rerun-if-changed={}", include.join("ordo").display());
    let Some(nvcc) = core("NVCC") else {
        eprintln!(
            "ordo-cuda-kernels: the CUDA toolkit ordo-cuda-sys found has no nvcc, which compiles ordo's kernels. \
             Install NVIDIA's CUDA toolkit 12.3 or later (https://developer.nvidia.com/cuda-downloads; nvcc is \
             part of it) and set CUDA_HOME to its root, the folder holding bin/nvcc."
        );
        return ExitCode::FAILURE;
    };
    // cc picks the CUDA compiler from NVCC (it treats a `.compiler(...)` override as gcc-like).
    std::env::set_var("NVCC", &nvcc);
    let mut build = cc::Build::new();
    build
        .cuda(true)
        .cudart("none")
        // Device code is always optimised: `-G` (cc's default in debug builds) makes kernels
        // many times slower, and the GPU tests run in debug builds too.
        .debug(false)
        .opt_level(3)
        .include(&include)
        .flag("-std=c++17")
        .flag("-Xptxas=-O3")
        .warnings(false)
        // One translation unit: the C/C++ archive merges its objects into one, and nvcc cannot
        // device-link an object holding two CUDA modules (docs/cuda-behaviours.md, CB-32).
        .file("cuda/kernels.cu");
    // The targets ordo-cuda-sys publishes for every crate (sm_80, sm_90, compute_90 PTX).
    for flag in core("GENCODE").unwrap_or_default().to_string_lossy().split_whitespace() {
        build.flag(flag);
    }
    if let Err(e) = build.try_compile("ordo_kernels") {
        eprintln!("ordo-cuda-kernels: nvcc failed: {e}");
        return ExitCode::FAILURE;
    }
    list_fatbin(Path::new(&nvcc));
    ExitCode::SUCCESS
}

/// Writes what `cuobjdump --list-elf --list-ptx` says of the built library to
/// OUT_DIR/fatbin-listing.txt, for the test that checks the compiled targets (or why it could not).
fn list_fatbin(nvcc: &Path) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let cuobjdump = nvcc.with_file_name("cuobjdump");
    // Listed again once cuobjdump is installed beside nvcc (scripts/toolkits.sh adds it to a cache
    // toolkit that lacks it), rather than keeping the listing that says it was missing.
    if let Some(bin) = cuobjdump.parent() {
        println!("cargo::rerun-if-changed={}", bin.display());
    }
    let text = match std::process::Command::new(&cuobjdump)
        .args(["--list-elf", "--list-ptx"])
        .arg(out.join("libordo_kernels.a"))
        .output()
    {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => format!("cuobjdump failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => format!("cuobjdump not runnable at {}: {e}", cuobjdump.display()),
    };
    let _ = std::fs::write(out.join("fatbin-listing.txt"), text);
    // The compute_90 PTX, for the test that checks which kernels carry griddepcontrol.
    let ptx = match std::process::Command::new(&cuobjdump).arg("--dump-ptx").arg(out.join("libordo_kernels.a")).output()
    {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => format!("cuobjdump failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => format!("cuobjdump not runnable at {}: {e}", cuobjdump.display()),
    };
    let _ = std::fs::write(out.join("kernels-ptx.txt"), ptx);
}
