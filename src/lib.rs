//! # ordo
//!
//! Stream-correct, zero-cost CUDA runtime streams, events, memory, launch and graphs for Rust and
//! C++. This facade re-exports [`ordo_core`]; the C ABI for C++ callers lives here too, with the
//! `kernels` feature (on by default), which also builds ordo's own CUDA kernels with nvcc. Without
//! it (`default-features = false, features = ["std"]`) the crate is the runtime layer alone.
#![cfg_attr(not(feature = "std"), no_std)]

pub use ordo_core::*;

#[cfg(feature = "kernels")]
pub mod ffi;

/// A newcomer's guide (`docs/guide.md`): the stream-correct rules, the safety model, launching
/// your own kernel, the PDL rule, graphs, the pipeline, the staging ring, several GPUs, the C ABI,
/// kernels compiled at run time, launch events and streams in a struct. Its Rust examples are
/// compiled as doc tests.
#[cfg(feature = "kernels")]
#[doc = include_str!("../docs/guide.md")]
pub mod guide {}
