// The cfgs ordo sets on itself (its version gates and `has_cuda_device`, where the build machine has
// an NVIDIA GPU), from ordo-cuda's `links` metadata (DEP_ORDO_CUDA_CFGS): the tests that need a GPU
// are marked with `has_cuda_device`.
fn main() {
    let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_{key}")).unwrap_or_default();
    for cfg in var("CHECK_CFGS").split_whitespace() {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for cfg in var("CFGS").split_whitespace() {
        println!("cargo::rustc-cfg={cfg}");
    }
}
