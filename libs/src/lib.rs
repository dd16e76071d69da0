//! # ordo-cuda-libs
//!
//! CUDA libraries on ordo's streams, each loaded at run time with `dlopen`, so that building needs
//! none of them and a program that never calls one never touches it.
//!
//! ```no_run
//! use ordo_cuda_core::library::Library;
//! use ordo_cuda_core::{DeviceBuffer, LaunchConfig, Stream};
//! use ordo_cuda_libs::nvrtc::Nvrtc;
//!
//! fn main() -> ordo_cuda_core::Result<()> {
//!     let nvrtc = Nvrtc::load()?; // ORDO_NVRTC, else libnvrtc.so.13, .so.12 or .so
//!     let src = r#"extern "C" __global__ void twice(float* x, int n) {
//!         int i = blockIdx.x * blockDim.x + threadIdx.x;
//!         if (i < n) x[i] *= 2.0f;
//!     }"#;
//!     let ptx = nvrtc.compile_ptx(src, "twice.cu", &["--gpu-architecture=compute_90"])?;
//!     let library = Library::from_ptx(ptx.text())?;
//!     // SAFETY: `twice` takes (float*, int).
//!     let twice = unsafe { library.kernel::<(*mut f32, i32)>(c"twice")? };
//!     let stream = Stream::new()?;
//!     let s = stream.as_stream();
//!     let mut x = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
//!     // SAFETY: `twice` stays inside the 4096 elements of `x`, which is freed on `s` after it.
//!     unsafe { twice.launch(s, &LaunchConfig::for_elements(4096, 256)?, (x.as_mut_ptr(), 4096))? };
//!     stream.synchronize()
//! }
//! ```
//!
//! ## Modules
//!
//! One feature a library, all three on by default:
//!
//! | module | what | feature |
//! | --- | --- | --- |
//! | [`nccl`] | NCCL collectives as stream-ordered operations, across devices and processes | `nccl` |
//! | [`cublas`] | a cuBLAS handle bound to the caller's stream on every call | `cublas` |
//! | [`nvrtc`] | CUDA C compiled to PTX at run time, loaded as an [`ordo_cuda_core::library::Library`] | `nvrtc` |
//!
//! Each library is found at the path its environment variable names (`ORDO_NCCL`, `ORDO_CUBLAS`,
//! `ORDO_NVRTC`), else by the loader's search for its usual file names; a missing library or
//! function gives the call that needs it an error, never a panic.
//!
// Each module links to itself where its feature is on, and to docs.rs (all features) where it is
// off, so that the docs build with any features.
#![cfg_attr(feature = "nccl", doc = "[`nccl`]: crate::nccl")]
#![cfg_attr(not(feature = "nccl"), doc = "[`nccl`]: https://docs.rs/ordo-cuda-libs/latest/ordo_cuda_libs/nccl/")]
#![cfg_attr(feature = "cublas", doc = "[`cublas`]: crate::cublas")]
#![cfg_attr(not(feature = "cublas"), doc = "[`cublas`]: https://docs.rs/ordo-cuda-libs/latest/ordo_cuda_libs/cublas/")]
#![cfg_attr(feature = "nvrtc", doc = "[`nvrtc`]: crate::nvrtc")]
#![cfg_attr(not(feature = "nvrtc"), doc = "[`nvrtc`]: https://docs.rs/ordo-cuda-libs/latest/ordo_cuda_libs/nvrtc/")]
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]

#[cfg(feature = "cublas")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "cublas")))]
pub mod cublas;
#[cfg(any(feature = "cublas", feature = "nccl", feature = "nvrtc"))]
mod dl;
#[cfg(any(feature = "nccl", feature = "nvrtc"))]
mod function;
#[cfg(feature = "nccl")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "nccl")))]
pub mod nccl;
#[cfg(feature = "nvrtc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "nvrtc")))]
pub mod nvrtc;
