// Compiles saxpy.cu with the nvcc ordo was built against (DEP_ORDO_CUDA_NVCC) and ordo's headers on the
// include path (DEP_ORDO_CUDA_INCLUDE, for ordo/pdl.cuh): both come from ordo-cuda's `links` metadata, so
// `ordo-cuda` is the only dependency this needs.
//
// With DOCS_RS set (docs.rs: no CUDA toolkit, so ordo publishes no nvcc) it compiles nothing: rustdoc
// links nothing, and the kernels' declarations (`declare_kernels!` in src/main.rs) type-check without
// their code (the pattern: ordo_cuda::docs::user_kernels, "Documentation on docs.rs").
fn main() {
    println!("cargo::rerun-if-changed=saxpy.cu");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    if std::env::var_os("DOCS_RS").is_some() {
        return;
    }
    let (Some(nvcc), Some(include)) =
        (std::env::var_os("DEP_ORDO_CUDA_NVCC"), std::env::var_os("DEP_ORDO_CUDA_INCLUDE"))
    else {
        eprintln!("user-kernel: ordo's CUDA toolkit has no nvcc; set CUDA_HOME to one that has");
        std::process::exit(1);
    };
    std::env::set_var("NVCC", nvcc);
    let mut build = cc::Build::new();
    // The GPU targets ordo's own kernels are built for (DEP_ORDO_CUDA_GENCODE).
    for flag in std::env::var("DEP_ORDO_CUDA_GENCODE").unwrap_or_default().split_whitespace() {
        build.flag(flag);
    }
    let built = build
        .cuda(true)
        .cudart("none") // ordo links the runtime
        .debug(false)
        .opt_level(3)
        .flag("-std=c++17")
        .include(include)
        .file("saxpy.cu")
        .try_compile("user_kernels");
    if let Err(e) = built {
        eprintln!("user-kernel: nvcc failed: {e}");
        std::process::exit(1);
    }
}
