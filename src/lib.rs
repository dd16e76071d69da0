//! # ordo-cuda
//!
//! Stream-correct, zero-cost CUDA runtime streams, events, memory, launch and graphs. This facade
//! re-exports the runtime layer, [`ordo_cuda_core`] (`no_std` without the `std` feature), and puts
//! the rest of ordo behind one feature each, so that a build holds only what it uses:
//!
//! | feature | what | needs at build time |
//! | --- | --- | --- |
//! | `std` (default) | host functions, the staging ring, the drop-error queue | — |
//! | `kernels` | [`kernels`]: ordo's CUDA C kernels and the stream-correct functions built on them | nvcc |
//! | `nccl` | [`nccl`]: NCCL collectives on streams, NCCL loaded at run time | — |
//! | `nvrtc` | [`nvrtc`]: CUDA C compiled at run time, NVRTC loaded at run time | — |
//! | `cublas` | [`cublas`]: a cuBLAS handle on the caller's stream, cuBLAS loaded at run time | nvcc |
//! | `full` | all of the above | nvcc |
//!
//! The crates behind it: `ordo-cuda-sys` (bindings), `ordo-cuda-core` (the runtime layer),
//! `ordo-cuda-kernels`, `ordo-cuda-libs` (NCCL, cuBLAS, NVRTC); the C ABI for C and C++ programs is
//! `ordo-cuda-capi`.
#![cfg_attr(not(feature = "std"), no_std)]

pub use ordo_cuda_core::*;

/// ordo's own CUDA kernels and the stream-correct functions built on them (`ordo-cuda-kernels`).
#[cfg(feature = "kernels")]
pub use ordo_cuda_kernels as kernels;

/// NCCL collectives on streams (`ordo-cuda-libs`).
#[cfg(feature = "nccl")]
pub use ordo_cuda_libs::nccl;

/// CUDA C compiled at run time by NVRTC (`ordo-cuda-libs`).
#[cfg(feature = "nvrtc")]
pub use ordo_cuda_libs::nvrtc;

/// A cuBLAS handle on the caller's stream (`ordo-cuda-libs`).
#[cfg(feature = "cublas")]
pub use ordo_cuda_libs::cublas;

/// A newcomer's guide (`docs/guide.md`): the stream-correct rules, the safety model, launching
/// your own kernel, the PDL rule, graphs, the pipeline, the staging ring, several GPUs, the C ABI,
/// kernels compiled at run time, launch events and streams in a struct. Its Rust examples are
/// compiled as doc tests (with the `full` feature).
#[cfg(all(feature = "kernels", feature = "nccl", feature = "nvrtc"))]
#[doc = include_str!("../docs/guide.md")]
pub mod guide {}
