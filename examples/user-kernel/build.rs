// Compiles saxpy.cu with the nvcc ordo found (DEP_CUDART_NVCC, from ordo-cuda-sys's links metadata).
fn main() {
    println!("cargo::rerun-if-changed=saxpy.cu");
    let Some(nvcc) = std::env::var_os("DEP_CUDART_NVCC") else {
        eprintln!("user-kernel: ordo's CUDA toolkit has no nvcc; set CUDA_HOME to one that has");
        std::process::exit(1);
    };
    std::env::set_var("NVCC", nvcc);
    let built = cc::Build::new()
        .cuda(true)
        .cudart("none") // ordo-cuda-sys links the runtime
        .debug(false)
        .opt_level(3)
        .flag("-gencode=arch=compute_90,code=sm_90")
        .flag("-gencode=arch=compute_80,code=sm_80")
        .file("saxpy.cu")
        .try_compile("user_kernels");
    if let Err(e) = built {
        eprintln!("user-kernel: nvcc failed: {e}");
        std::process::exit(1);
    }
}
