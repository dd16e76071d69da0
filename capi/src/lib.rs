//! # ordo-cuda-capi
//!
//! The C ABI (`include/ordo.h`): for C and C++ programs that own their streams. It only converts:
//! the state and the logic live in the Rust API, so C and Rust callers get the same behaviour.
//! The exports are `extern "C"` functions of this crate too; the example makes from Rust the
//! calls a C program makes (`include/ordo.h` has the C side, `ffi-tests/cpp` complete programs):
//!
//! ```no_run
//! use ordo_cuda_capi::{ordo_gemv_normalize, ordo_last_error_message, ORDO_SUCCESS};
//! use ordo_cuda_sys as sys;
//! use std::ffi::c_void;
//!
//! let (rows, cols) = (1024, 512);
//! let mut stream: sys::cudaStream_t = std::ptr::null_mut();
//! let mut buffers = [std::ptr::null_mut::<c_void>(); 3]; // A, x, y
//! // SAFETY: the CUDA calls of a C program: its stream, and its buffers allocated on it.
//! unsafe {
//!     sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking);
//!     for (p, floats) in buffers.iter_mut().zip([rows * cols, cols, rows]) {
//!         sys::cudaMallocAsync(p, floats * 4, stream);
//!     }
//! }
//! let [a, x, y] = buffers.map(|p| p.cast::<f32>());
//! // y = A x / |A x|, enqueued on `stream` with its temporaries; nothing synchronised.
//! // SAFETY: device pointers to rows * cols, cols and rows floats, freed on `stream` after the work.
//! let status = unsafe { ordo_gemv_normalize(stream, a, x, y, rows, cols) };
//! if status != ORDO_SUCCESS {
//!     let mut message = [0u8; 256];
//!     // SAFETY: `message` is 256 writable bytes.
//!     unsafe { ordo_last_error_message(message.as_mut_ptr().cast(), message.len()) };
//!     eprintln!("{}", String::from_utf8_lossy(&message));
//! }
//! ```
//!
//! ## Modules
//!
//! One file a concept; every export is also listed at the crate root. The machinery every export
//! shares:
//!
//! | module | what |
//! | --- | --- |
//! | [`codes`] | the status codes, their names, and the exports that name and classify a status |
//! | [`status`] | the conversion of ordo's errors into codes, and the guard every export runs in (panics caught, the thread's capture mode relaxed for ordo's own calls by `capture_mode.rs`, a failure recorded as the thread's [`last_error`]) |
//! | [`handles`] | the registry of live handles (tokens, never dereferenced; stale, foreign and wrong-kind handles give `ORDO_ERROR_INVALID_HANDLE`) |
//! | [`check`] | the capture-aware checks of streams, pointers and sizes |
//! | [`context`] | the CUDA context each object was made in, so that nothing of a context destroyed by `cudaDeviceReset` is touched again |
//! | [`last_error`] | the calling thread's last error, beyond its status |
//!
//! The exports, a module a concept:
//!
//! | module | what |
//! | --- | --- |
//! | [`kernels`] | ordo's kernels on the caller's stream (`ordo_gemv_normalize`, `ordo_frame_filter`, `ordo_pdl_chain`) |
//! | [`launch`] | the caller's own kernels with ordo's launch configuration and PDL rule |
//! | [`graph_cache`] | one graph a batch-size bucket, captured by the caller's callback |
//! | [`pipeline`] | the chunked copy/compute pipeline |
//! | [`staging`] | the staging ring of pinned slots |
//! | [`partition`] | SM partitions (green contexts) and their streams |
//! | [`nccl`] | NCCL collectives on the caller's stream |
//! | [`timer`] | event-based timing |
//! | [`version`] | version and build information |
//!
//! ## Streams
//! Every function that enqueues work takes the caller's `cudaStream_t` and follows the
//! stream-correct rules: it enqueues on that stream only, never synchronises, allocates temporaries
//! stream-ordered on it and joins internal forks back with events, on every path out. A
//! null stream is refused (`ORDO_ERROR_INVALID_ARGUMENT`): pass `cudaStreamLegacy` or
//! `cudaStreamPerThread` to mean a default stream, so that it is never used by accident.
//!
//! The header and these exports are checked against each other by `ffi-tests/tests/abi.rs`, which
//! parses this folder with `syn`. The features `kernels` and `nccl` (both default) change no
//! export: without one, its exports return `ORDO_ERROR_NOT_SUPPORTED`.
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]

mod capture_mode;
pub mod check;
pub mod codes;
pub mod context;
pub mod graph_cache;
pub mod handles;
pub mod ipc;
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

#[doc(inline)]
pub use graph_cache::*;
#[doc(inline)]
pub use handles::live_handles;
#[doc(inline)]
pub use ipc::*;
#[doc(inline)]
pub use kernels::*;
#[doc(inline)]
pub use last_error::*;
#[doc(inline)]
pub use launch::*;
#[doc(inline)]
pub use nccl::*;
#[doc(inline)]
pub use partition::*;
#[doc(inline)]
pub use pipeline::*;
#[doc(inline)]
pub use staging::*;
#[doc(inline)]
pub use status::*;
#[doc(inline)]
pub use timer::*;
#[doc(inline)]
pub use version::*;
