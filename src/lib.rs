//! # ordo
//!
//! Stream-correct, zero-cost CUDA runtime streams, events, memory, launch and graphs for Rust and
//! C++. This facade re-exports [`ordo_core`]; the C ABI for C++ callers lives here too.
#![cfg_attr(not(feature = "std"), no_std)]

pub use ordo_core::*;

#[cfg(feature = "std")]
pub mod ffi;
