// Compiles the decoder's kernels (cuda/decoder.cu) with the nvcc ordo was built against
// (DEP_ORDO_CUDA_NVCC), ordo's device headers (DEP_ORDO_CUDA_INCLUDE, for ordo/pdl.cuh) and ordo's
// -gencode flags, as a user's engine would (examples/user-kernel shows the same); and sets the
// cfgs ordo sets on itself (DEP_ORDO_CUDA_CFGS: the version gates, `has_cuda_device` for the GPU
// tests). Under DOCS_RS it compiles nothing (no toolkit there; rustdoc links nothing).
fn main() {
    let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_{key}")).unwrap_or_default();
    for cfg in var("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in var("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
    println!("cargo::rerun-if-changed=cuda/decoder.cu");
    println!("cargo::rerun-if-env-changed=DOCS_RS");
    if std::env::var_os("DOCS_RS").is_some() {
        return;
    }
    let (nvcc, include) = (var("NVCC"), var("INCLUDE"));
    if nvcc.is_empty() || include.is_empty() {
        eprintln!("ordo-example-decode: ordo's CUDA toolkit has no nvcc; set CUDA_HOME to one that has");
        std::process::exit(1);
    }
    std::env::set_var("NVCC", nvcc);
    let mut build = cc::Build::new();
    for flag in var("GENCODE").split_whitespace() {
        build.flag(flag);
    }
    let built = build
        .cuda(true)
        .cudart("none") // ordo links the runtime
        .debug(false)
        .opt_level(3)
        .include(include)
        .flag("-std=c++17")
        .flag("-Xptxas=-O3")
        .warnings(false)
        .file("cuda/decoder.cu")
        .try_compile("ordo_decoder");
    if let Err(e) = built {
        eprintln!("ordo-example-decode: nvcc failed: {e}");
        std::process::exit(1);
    }
}
