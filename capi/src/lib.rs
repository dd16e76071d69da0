//! The C ABI (`include/ordo.h`): for C and C++ programs that own their streams. It only converts:
//! the state and the logic live in the Rust API, so C and Rust callers get the same behaviour.
//!
//! Every function that enqueues work takes the caller's `cudaStream_t` and follows the
//! stream-correct rules: it enqueues on that stream only, never synchronises, allocates temporaries
//! stream-ordered on it and joins internal forks back with events, on every path out. A
//! null stream is refused (`ORDO_ERROR_INVALID_ARGUMENT`): pass `cudaStreamLegacy` or
//! `cudaStreamPerThread` to mean a default stream, so that it is never used by accident.
//!
//! One file a concept; the machinery every export shares sits in three of them:
//! - [`status`]: the codes, the conversion of ordo's errors, and the guard every export runs in
//!   (panics caught, the thread's capture mode relaxed for ordo's own calls, a failure recorded as
//!   the thread's [`last_error`]);
//! - [`handles`]: the registry of live handles (tokens, never dereferenced; stale, foreign and
//!   wrong-kind handles give `ORDO_ERROR_INVALID_HANDLE`);
//! - [`check`]: the capture-aware checks of streams, pointers and sizes;
//! - [`context`]: the CUDA context each object was made in, so that nothing of a context destroyed
//!   by `cudaDeviceReset` is touched again.
//!
//! The header and these exports are checked against each other by `ffi-tests/tests/abi.rs`, which
//! parses this folder with `syn`.

pub mod check;
pub mod context;
pub mod graph_cache;
pub mod handles;
pub mod kernels;
pub mod last_error;
pub mod launch;
pub mod nccl;
pub mod partition;
pub mod pipeline;
pub mod staging;
pub mod status;
pub mod timer;
pub mod version;

pub use graph_cache::*;
pub use handles::live_handles;
pub use kernels::*;
pub use last_error::*;
pub use launch::*;
pub use nccl::*;
pub use partition::*;
pub use pipeline::*;
pub use staging::*;
pub use status::*;
pub use timer::*;
pub use version::*;
