//! # ordo-cuda-core
//!
//! A thin, zero-cost, `no_std` layer over the CUDA runtime: streams, events, memory, typed kernel
//! launch and graphs. Everything that enqueues work takes your stream and enqueues on it, nothing
//! synchronises unless its name says so, and safe code cannot reach undefined behaviour.
//!
//! ```no_run
//! use ordo_cuda_core::memory::copy;
//! use ordo_cuda_core::{capture, CaptureMode, DeviceBuffer, InstantiateFlags, LaunchConfig, Stream};
//!
//! ordo_cuda_core::declare_kernels! {
//!     unsafe extern "C" {
//!         /// `extern "C" __global__ void scale(float* x, float a, int n)`, compiled by your build
//!         /// script (see `docs::user_kernels`).
//!         fn scale(x: *mut f32, a: f32, n: i32);
//!     }
//! }
//!
//! fn main() -> ordo_cuda_core::Result<()> {
//!     let stream = Stream::new()?; // a non-blocking stream of the current device
//!     let s = stream.as_stream();
//!     let mut x = DeviceBuffer::<f32>::alloc_async(4096, s)?; // cudaMallocAsync on `s`
//!     copy::h2d_blocking(x.as_mut_slice(), &[1.0; 4096], s)?;
//!     let x_ptr = x.as_mut_ptr();
//!     let config = LaunchConfig::for_elements(4096, 256)?;
//!     // SAFETY: `scale` stays inside the 4096 elements of `x`, which is freed on `s`, after it.
//!     unsafe { scale().launch(s, &config, (x_ptr, 2.0, 4096))? };
//!     // The same launch captured into a graph, then replayed by one call.
//!     // SAFETY: as above at every replay (`x` outlives the graph); only the closure uses `s`
//!     // while it captures.
//!     let graph = unsafe { capture(s, CaptureMode::ThreadLocal, |cs| scale().launch(cs, &config, (x_ptr, 0.5, 4096)))? };
//!     graph.instantiate(InstantiateFlags::empty())?.launch(s)?;
//!     let mut out = vec![0.0; 4096];
//!     copy::d2h_blocking(&mut out, x.as_slice(), s)?; // waits for `s`
//!     Ok(())
//! }
//! ```
//!
//! ## Modules
//!
//! | module | what |
//! | --- | --- |
//! | [`stream`] | [`Stream`] (owned) and [`StreamRef`] (borrowed; never the default stream by accident) |
//! | [`event`] | [`Event`] for ordering, [`TimingEvent`] for elapsed time |
//! | [`memory`] | device buffers from stream-ordered pools; pinned, registered and managed memory; host pools; typed views; copies one by one and batched |
//! | [`launch`], [`declare_kernels!`] | typed kernel launch, arguments and attributes on the stack; kernels declared once by their signature; PDL's two forms and the rule that picks one |
//! | [`graph`] | capture, instantiate, replay and update CUDA graphs; conditional nodes; one graph a batch-size bucket ([`graph::GraphCache`]) |
//! | [`device`] | devices: count, current device, attributes, versions, peer access |
//! | [`error`] | errors with CUDA's code, the call that failed and the driver's words; the two waves; errors met in `Drop` |
//! | [`host_fn`] | (`std`) Rust closures run on a stream (`cudaLaunchHostFunc`) |
//! | [`staging`] | (`std`) a ring of pinned slots that a loader thread fills and copies to the device |
//! | [`partition`] | (`std`) SM partitions (green contexts), each with its own streams |
//! | `ipc` | (`std`, Unix) memory, events and pools shared between processes (CUDA IPC, file descriptors over Unix sockets) |
//! | `future` | (`async`) a stream's or an event's completion as a future; buffers owned by work in flight |
//! | [`in_context`] | (`std`) a value tied to the CUDA context it was made in, refused once a device reset destroyed it |
//! | [`context`] | (`std`) the CUDA context each object belongs to, to tell when `cudaDeviceReset` destroyed it |
//! | [`pipeline`] | (`alloc`) a chunked copy-in, compute, copy-out pipeline over several streams |
//! | [`library`] | (`alloc`, CUDA 12.8 headers or later) kernels loaded at run time from PTX, cubin or fatbin |
//! | [`sys`] | the raw runtime bindings (`ordo-cuda-sys`) |
//! | [`docs`] | the design, the [safety model](docs::safety), [compiling your own CUDA C](docs::user_kernels) (and documenting it on docs.rs) |
//!
//! The types used most are re-exported at the crate root (listed below). Features: `std` (the
//! default, implies `alloc`) and `alloc` add the modules marked so, `async` (implies `std`) adds
//! `future`; with neither `std` nor `alloc`, the crate needs no allocator. `bindgen` generates the
//! bindings from the toolkit's headers instead of taking the checked-in ones.
#![no_std]
#![warn(missing_docs)]
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// `cuda_call!` (error/call.rs) is used by every module below.
#[macro_use]
pub mod error;
#[macro_use]
mod handle;

#[cfg(feature = "std")]
mod callback;
mod capture_state;

#[cfg(feature = "std")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "std")))]
pub mod context;
pub mod device;
pub mod docs;
mod driver_calls;
pub mod event;
#[cfg(feature = "async")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "async")))]
pub mod future;
pub mod graph;
/// The graph bucket cache, at its former path (it lives in [`graph::cache`]).
#[cfg(feature = "alloc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "alloc")))]
#[doc(inline)]
pub use graph::cache as graph_cache;
#[cfg(feature = "std")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "std")))]
pub mod host_fn;
#[cfg(feature = "std")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "std")))]
pub mod in_context;
#[cfg(all(feature = "std", unix))]
#[cfg_attr(ordo_doc_cfg, doc(cfg(all(feature = "std", unix))))]
pub mod ipc;
pub mod launch;
#[cfg(all(feature = "alloc", cuda_library_api))]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "alloc")))]
pub mod library;
pub mod memory;
#[cfg(feature = "std")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "std")))]
pub mod partition;
#[cfg(feature = "alloc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "alloc")))]
pub mod pipeline;
#[cfg(feature = "std")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "std")))]
pub mod staging;
pub mod stream;
/// Poison-recovering locks, for ordo's crates.
#[cfg(feature = "std")]
#[doc(hidden)]
pub mod sync;

#[doc(inline)]
pub use device::Device;
#[doc(inline)]
pub use error::{CudaError, Error, LibraryError, Result, UsageError, UsageKind};
#[doc(inline)]
pub use event::{Event, EventFlags, EventStatus, TimingEvent};
#[cfg(feature = "alloc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "alloc")))]
#[doc(inline)]
pub use graph::capture_into;
#[doc(inline)]
pub use graph::{capture, CaptureMode, CaptureStatus, Graph, GraphExec, InstantiateFlags, NodeKind};
#[doc(inline)]
pub use launch::{Dim3, Kernel, LaunchConfig, PdlKernel, PdlMode, PdlPlan};
#[cfg(feature = "alloc")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "alloc")))]
#[doc(inline)]
pub use memory::SharedStreamBuffer;
#[doc(inline)]
pub use memory::{
    DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, HostAllocFlags, HostPool, HostPoolBuffer, HostRegisterFlags,
    Location, ManagedBuffer, ManagedFlags, MemPool, MemPoolBuilder, MemPoolRef, PinnedBuffer, PinnedSlice,
    PinnedSliceMut, PoolAccess, RegisteredHost,
};
pub use ordo_cuda_sys as sys;
#[doc(inline)]
pub use stream::{Stream, StreamFlags, StreamRef, StreamStatus};
