//! # ordo-cuda
//!
//! Stream-correct, zero-cost CUDA runtime streams, events, memory, launch and graphs: every call
//! takes your stream and enqueues on it, nothing synchronises unless its name says so, and safe
//! Rust cannot reach undefined behaviour.
//!
//! ```no_run
//! use ordo_cuda::graph::{GraphCache, Overflow};
//! use ordo_cuda::memory::copy;
//! use ordo_cuda::{DeviceBuffer, LaunchConfig, Stream};
//!
//! ordo_cuda::declare_kernels! {
//!     unsafe extern "C" {
//!         /// `extern "C" __global__ void scale(float* x, float a, int n)`, compiled by your build
//!         /// script with the nvcc ordo publishes (see `docs::user_kernels`).
//!         fn scale(x: *mut f32, a: f32, n: i32);
//!     }
//! }
//!
//! fn main() -> ordo_cuda::Result<()> {
//!     let stream = Stream::new()?; // a non-blocking stream of the current device
//!     let s = stream.as_stream();
//!     let mut x = DeviceBuffer::<f32>::alloc_async(4096, s)?; // cudaMallocAsync on `s`
//!     copy::h2d_blocking(x.as_mut_slice(), &[1.0; 4096], s)?;
//!     let x_ptr = x.as_mut_ptr();
//!     // SAFETY: `scale` reads and writes n elements of `x`, which outlives the launch and the graphs.
//!     unsafe { scale().launch(s, &LaunchConfig::for_elements(4096, 256)?, (x_ptr, 2.0, 4096))? };
//!     // One graph a batch-size bucket: captured at its first use, then replayed by one call.
//!     // SAFETY: as above, at every replay; only the closure uses the stream it captures on.
//!     let mut graphs = unsafe {
//!         GraphCache::new(vec![1, 8, 64], Overflow::Error, |cs, batch| {
//!             let n = batch * 64;
//!             scale().launch(cs, &LaunchConfig::for_elements(n, 256)?, (x_ptr, 0.5, n as i32))
//!         })?
//!     };
//!     for batch in [1, 5, 64, 5] {
//!         graphs.run(s, batch)?;
//!     }
//!     let mut out = vec![0.0; 4096];
//!     copy::d2h_blocking(&mut out, x.as_slice(), s)?; // waits for `s`
//!     Ok(())
//! }
//! ```
//!
//! ## Modules
//!
//! The runtime layer, [`ordo_cuda_core`], re-exported (`no_std` without the `std` feature), and the
//! rest of ordo behind one feature each, so that a build holds only what it uses:
//!
//! | module | what | feature |
//! | --- | --- | --- |
//! | [`stream`], [`event`] | streams (owned and borrowed, never the default stream by accident) and events | |
//! | [`memory`] | device buffers from stream-ordered pools; pinned, registered and managed memory; typed views; copies | |
//! | [`launch`], [`declare_kernels!`] | typed kernel launch, arguments and attributes on the stack; kernels declared once by their signature; PDL's two forms and the rule that picks one | |
//! | [`graph`] | capture, instantiate, replay and update CUDA graphs; one graph a batch-size bucket | |
//! | [`device`], [`error`] | devices and their attributes; errors with CUDA's code, the call and the driver's words | |
//! | [`host_fn`], [`staging`], [`partition`], [`pipeline`] | closures on a stream, a staging ring, SM partitions, a copy/compute pipeline | `std` (default) |
//! | [`kernels`] | ordo's CUDA C kernels and the stream-correct functions built on them | `kernels` |
//! | [`nccl`] | NCCL collectives on streams, NCCL loaded at run time | `nccl` |
//! | [`nvrtc`] | CUDA C compiled at run time, NVRTC loaded at run time | `nvrtc` |
//! | [`cublas`] | a cuBLAS handle on the caller's stream, cuBLAS loaded at run time | `cublas` |
//! | [`docs`] | the design, the [safety model](docs::safety), [compiling your own CUDA C](docs::user_kernels) | |
//! | [`guide`] | a newcomer's guide, from the stream-correct rules to the C ABI | `kernels`, `nccl`, `nvrtc` |
//!
//! ## Features
//!
//! | feature | turns on | needs at build time |
//! | --- | --- | --- |
//! | `std` (default) | host functions, the staging ring, SM partitions, the pipeline, the drop-error queue | — |
//! | `kernels` | [`kernels`] (and `std`) | nvcc |
//! | `nccl` | [`nccl`] (and `std`) | — |
//! | `nvrtc` | [`nvrtc`] (and `std`) | — |
//! | `cublas` | [`cublas`] (and `kernels`) | nvcc |
//! | `full` | all of the above | nvcc |
//! | `bindgen` | bindings generated from the toolkit's headers instead of the checked-in ones | libclang |
//!
//! The crates behind it: `ordo-cuda-sys` (bindings), `ordo-cuda-core` (the runtime layer),
//! `ordo-cuda-kernels`, `ordo-cuda-libs` (NCCL, cuBLAS, NVRTC); the C ABI for C and C++ programs is
//! `ordo-cuda-capi`.
//!
// The modules behind features link to themselves where the feature is on, and to docs.rs (built
// with `full`) where it is off, so that the docs build with any features.
#![cfg_attr(feature = "kernels", doc = "[`kernels`]: crate::kernels")]
#![cfg_attr(not(feature = "kernels"), doc = "[`kernels`]: https://docs.rs/ordo-cuda/latest/ordo_cuda/kernels/")]
#![cfg_attr(feature = "nccl", doc = "[`nccl`]: crate::nccl")]
#![cfg_attr(not(feature = "nccl"), doc = "[`nccl`]: https://docs.rs/ordo-cuda/latest/ordo_cuda/nccl/")]
#![cfg_attr(feature = "nvrtc", doc = "[`nvrtc`]: crate::nvrtc")]
#![cfg_attr(not(feature = "nvrtc"), doc = "[`nvrtc`]: https://docs.rs/ordo-cuda/latest/ordo_cuda/nvrtc/")]
#![cfg_attr(feature = "cublas", doc = "[`cublas`]: crate::cublas")]
#![cfg_attr(not(feature = "cublas"), doc = "[`cublas`]: https://docs.rs/ordo-cuda/latest/ordo_cuda/cublas/")]
#![cfg_attr(all(feature = "kernels", feature = "nccl", feature = "nvrtc"), doc = "[`guide`]: crate::guide")]
#![cfg_attr(
    not(all(feature = "kernels", feature = "nccl", feature = "nvrtc")),
    doc = "[`guide`]: https://docs.rs/ordo-cuda/latest/ordo_cuda/guide/"
)]
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]
#![cfg_attr(not(feature = "std"), no_std)]

pub use ordo_cuda_core::*;

/// ordo's own CUDA kernels and the stream-correct functions built on them (`ordo-cuda-kernels`).
#[cfg(feature = "kernels")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "kernels")))]
pub use ordo_cuda_kernels as kernels;

/// NCCL collectives on streams (`ordo-cuda-libs`).
#[cfg(feature = "nccl")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "nccl")))]
pub use ordo_cuda_libs::nccl;

/// CUDA C compiled at run time by NVRTC (`ordo-cuda-libs`).
#[cfg(feature = "nvrtc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "nvrtc")))]
pub use ordo_cuda_libs::nvrtc;

/// A cuBLAS handle on the caller's stream (`ordo-cuda-libs`).
#[cfg(feature = "cublas")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "cublas")))]
pub use ordo_cuda_libs::cublas;

/// A newcomer's guide (`docs/guide.md`): the stream-correct rules, the safety model, launching
/// your own kernel, the PDL rule, graphs, the pipeline, the staging ring, several GPUs, the C ABI,
/// kernels compiled at run time, launch events and streams in a struct. Its Rust examples are
/// compiled as doc tests (with the `full` feature).
#[cfg(all(feature = "kernels", feature = "nccl", feature = "nvrtc"))]
#[cfg_attr(ordo_doc_cfg, doc(cfg(all(feature = "kernels", feature = "nccl", feature = "nvrtc"))))]
#[doc = include_str!("../docs/guide.md")]
pub mod guide {}

/// The README's Rust example, compiled as a doc test exactly as printed (`cargo test --doc`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeExample;
