//! # ordo-cuda-libs
//!
//! CUDA libraries on ordo's streams, each loaded at run time with `dlopen`, so that building needs
//! none of them and a program that never calls one never touches it. One feature a library:
//!
//! - `nccl`: [`nccl`], collectives as stream-ordered operations, across devices and processes;
//! - `cublas`: [`cublas`], a cuBLAS handle bound to the caller's stream on every call;
//! - `nvrtc`: [`nvrtc`], CUDA C compiled to PTX at run time, loaded as an
//!   [`ordo_cuda_core::library::Library`].
//!
//! Each library is found at the path its environment variable names (`ORDO_NCCL`, `ORDO_CUBLAS`,
//! `ORDO_NVRTC`), else by the loader's search for its usual file names; a missing library or
//! function gives the call that needs it an error, never a panic.

#[cfg(feature = "cublas")]
pub mod cublas;
#[cfg(any(feature = "cublas", feature = "nccl", feature = "nvrtc"))]
mod dl;
#[cfg(feature = "nccl")]
pub mod nccl;
#[cfg(feature = "nvrtc")]
pub mod nvrtc;
