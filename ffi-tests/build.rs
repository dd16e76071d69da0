//! Compiles the header as C99 and C++17 with warnings as errors (a header that does not compile
//! fails the build), and the C++ test programs into a static library linked with the tests.
use std::process::ExitCode;

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed=c");
    println!("cargo::rerun-if-changed=cpp");
    // The C headers (ordo-cuda-capi) and the device headers (ordo-cuda-core), from their metadata.
    let capi_include = std::env::var_os("DEP_ORDO_CUDA_CAPI_INCLUDE").unwrap_or_default();
    let core = |key: &str| std::env::var_os(format!("DEP_ORDO_CUDA_CORE_{key}"));
    let core_include = core("INCLUDE").unwrap_or_default();
    println!("cargo::rerun-if-changed={}", std::path::Path::new(&capi_include).display());
    println!("cargo::rerun-if-changed=../capi/src");
    if let Err(e) = embed_ffi_sources() {
        eprintln!("ordo-ffi-tests: listing ../capi/src failed: {e}");
        return ExitCode::FAILURE;
    }
    // The version gates and `has_cuda_device`, set as ordo-cuda-sys sets them (one list: its build script).
    let sys = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_SYS_{key}")).unwrap_or_default();
    for cfg in sys("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in sys("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }

    let c99 = cc::Build::new()
        .compiler("gcc")
        .include(&capi_include)
        .flag("-std=c99")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pedantic")
        .flag("-Werror")
        .file("c/header_c99.c")
        .try_compile("ordo_header_c99");
    // The header after the CUDA runtime's, where it routes the launch calls through the file's own
    // cudaGetKernel: as C99 and as C++17, the CUDA headers as system headers.
    let cuda_include = core("CUDA_INCLUDE").unwrap_or_default();
    let with_cuda_headers = |build: &mut cc::Build| {
        for dir in std::env::split_paths(&cuda_include) {
            build.flag("-isystem").flag(dir.to_string_lossy().as_ref());
        }
    };
    let mut c99_cudart = cc::Build::new();
    with_cuda_headers(&mut c99_cudart);
    let c99_cudart = c99_cudart
        .compiler("gcc")
        .include(&capi_include)
        .flag("-std=c99")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pedantic")
        .flag("-Werror")
        .file("c/header_c99_cudart.c")
        .try_compile("ordo_header_c99_cudart");
    let mut cpp_cudart = cc::Build::new();
    with_cuda_headers(&mut cpp_cudart);
    let cpp_cudart = cpp_cudart
        .cpp(true)
        .compiler("g++")
        .include(&capi_include)
        .flag("-std=c++17")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror")
        .file("cpp/header_cpp17_cudart.cpp")
        .try_compile("ordo_header_cpp17_cudart");
    let cpp = cc::Build::new()
        .cpp(true)
        .compiler("g++")
        .include(&capi_include)
        .flag("-std=c++17")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-Werror")
        .define("ORDO_TEST_EXPECTED_VERSION", Some(format!("\"{}\"", env!("CARGO_PKG_VERSION")).as_str()))
        .file("cpp/header_cpp17.cpp")
        .file("cpp/status_and_arguments.cpp")
        .file("cpp/hpp_program.cpp")
        .try_compile("ordo_ffi_cpp");
    let Some(nvcc) = core("NVCC") else {
        eprintln!("ordo-ffi-tests: the CUDA toolkit ordo-cuda-sys found has no nvcc");
        return ExitCode::FAILURE;
    };
    std::env::set_var("NVCC", nvcc);
    let mut cuda = cc::Build::new();
    cuda.cuda(true)
        .cudart("none")
        .debug(false)
        .opt_level(2)
        .include(&capi_include)
        .include(&core_include)
        .flag("-std=c++17");
    // nvcc finds its own toolkit's headers: adding the runtime's include folders would mix two
    // toolkits' headers where the nvcc is another toolkit's (ORDO_NVCC, for CUDA 12.x runtimes).
    for flag in core("GENCODE").unwrap_or_default().to_string_lossy().split_whitespace() {
        cuda.flag(flag);
    }
    let mixed = cuda
        .file("cpp/mixed.cu")
        .file("cpp/captures.cu")
        .file("cpp/hpp_gpu.cu")
        .file("cpp/stencil.cu")
        .file("cpp/capture_defects.cu")
        .try_compile("ordo_ffi_mixed");
    for (what, r) in [
        ("header as C99", c99),
        ("header as C99 after the CUDA runtime's", c99_cudart),
        ("header as C++17 after the CUDA runtime's", cpp_cudart),
        ("C++ programs", cpp),
        ("CUDA C++ program", mixed),
    ] {
        if let Err(e) = r {
            eprintln!("ordo-ffi-tests: compiling the {what} failed: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

/// Writes `$OUT_DIR/ffi_sources.rs`: every `.rs` file under `../capi/src`, as `(path, text)` pairs
/// included at compile time, for the header/export agreement test (tests/abi.rs).
fn embed_ffi_sources() -> std::io::Result<()> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        Ok(())
    }
    let manifest = std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dir = manifest.join("../capi/src").canonicalize()?;
    let mut files = Vec::new();
    walk(&dir, &mut files)?;
    files.sort();
    let mut text = String::from("/// Every `.rs` file under capi/src: (path relative to capi/src, text).\npub const FFI_SOURCES: &[(&str, &str)] = &[\n");
    for f in &files {
        let rel = f.strip_prefix(&dir).unwrap_or(f).display().to_string();
        text.push_str(&format!("    ({rel:?}, include_str!({:?})),\n", f.display().to_string()));
    }
    text.push_str("];\n");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("ffi_sources.rs");
    std::fs::write(out, text)
}
