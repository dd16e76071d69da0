//! Passes ordo-cuda-core's build metadata on to crates that depend on `ordo-cuda` directly (cargo
//! gives `links` metadata only to direct dependents), as `DEP_ORDO_CUDA_*`:
//! - `INCLUDE`: ordo's device headers (`ordo/pdl.cuh` with `ORDO_PDL_KERNELS`, `ordo/graph.cuh`);
//! - `NVCC`: the nvcc of the CUDA toolkit ordo was built against, so the user's kernels and ordo's
//!   runtime come from one toolkit;
//! - `GENCODE`: the nvcc `-gencode` flags ordo's own kernels are built with (space-separated);
//! - `CUDA_VERSION`: that toolkit's version, as read from its headers;
//! - `CUDA_INCLUDE`: the toolkit's include folders;
//! - `HAS_DEVICE`: `1` where the build machine has an NVIDIA GPU (for `cfg`s of GPU tests);
//! - `CFGS` and `CHECK_CFGS`: the cfgs ordo sets on itself (the version gates, `has_cuda_device`) and
//!   every cfg it may set, space-separated, for a build script that wants the same ones.
//!
//! `examples/user-kernel/build.rs` shows the use; a crate that depends on ordo-cuda-core alone reads
//! the same keys as `DEP_ORDO_CUDA_CORE_*`.
fn main() {
    for key in ["INCLUDE", "NVCC", "GENCODE", "CUDA_VERSION", "CUDA_INCLUDE", "HAS_DEVICE", "CFGS", "CHECK_CFGS"] {
        if let Ok(value) = std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")) {
            println!("cargo::metadata={}={value}", key.to_ascii_lowercase());
        }
    }
}
