//! # ordo-core
//!
//! A thin, zero-cost layer over the CUDA runtime for code that counts microseconds: streams,
//! events, device/pinned/registered/managed memory, stream-ordered allocation and pools, copies,
//! and errors that keep CUDA's code and the call that failed. `no_std` (features `alloc` and
//! `std`, `std` on by default); every handle is a `repr(transparent)` newtype over the raw one.
//!
//! ## Stream-correct
//! Everything that enqueues work takes the caller's stream ([`StreamRef`]) and enqueues on it;
//! nothing here synchronises unless its name says so (`synchronize`, `*_blocking`). Device buffers
//! are allocated with `cudaMallocAsync` and freed with `cudaFreeAsync` on their stream, so dropping
//! one never stalls the device.
//!
//! ## Hot paths
//! Event record, stream wait, queries and stream-ordered allocation are one driver call each:
//! no heap allocation, no lock, nothing the raw call does not need. A GPU test counts heap
//! allocations across them with a counting global allocator.
//!
//! ## Safety model
//! Safe code cannot reach undefined behaviour through ordo. Where a contract cannot be checked
//! (by types, lifetimes, or a cheap check off the hot path), the function is `unsafe` and its
//! `# Safety` section says exactly what the caller owes.
//!
//! - **Safe**: creating and destroying streams, events, pools, graphs and buffers; recording,
//!   waiting, querying, synchronising; allocation; the blocking copies (they return only once the
//!   copy can no longer touch the host memory, and refuse a capturing stream); managed prefetch
//!   and advice; host functions ([`host_fn`]: `'static` closures, owned by the graph when
//!   captured); the staging ring ([`staging`]: it orders its copy with the destination buffer's
//!   stream); instantiating, launching, updating and uploading graphs (their work was captured
//!   under the capture's contract, which covers every replay). None of these can make Rust code
//!   read freed or uninitialised memory: device buffers hold [`DeviceCopy`] types, which have no
//!   invalid bit patterns, host buffers start zeroed or written (`PinnedBuffer::from_slice`,
//!   `from_fn`), and a [`DeviceBuffer`] cannot outlive its
//!   stream (`DeviceBuffer<'s>`). Work that ordo enqueues on a stream other than a device view's
//!   own ([`DeviceSlice::origin`]) is ordered after that stream, and that stream's later free after
//!   the work ([`memory::order`]).
//! - **`unsafe`**, and why:
//!   - *asynchronous copies and memsets* ([`memory::copy`]): the memory must outlive the copy,
//!     which a borrow ending at the call's return cannot show;
//!   - *kernel launches* ([`Kernel::launch`], [`launch::launch_raw`], [`PdlKernel::launch`],
//!     [`GraphExec::set_kernel_node_args`], [`graph::BodyGraph::add_kernel_node`]): the kernel's
//!     use of its pointer arguments is invisible to Rust (and, for `launch_raw`, that the
//!     arguments match the kernel's parameters);
//!   - *retargeted copy and memset nodes* ([`GraphExec::set_memcpy_node`],
//!     [`GraphExec::set_memset_node`]): the node reads and writes the new memory at every later
//!     launch of the executable graph, which has no lifetime to tie that memory to;
//!   - *the pipeline run* (`pipeline::Pipeline::run`): it enqueues asynchronous copies of the
//!     caller's pinned buffers, so it owes what the copies owe until `main` has passed the run
//!     (it joins its worker streams back to `main` on every path out, errors included, so
//!     synchronising `main` is enough);
//!   - *captures* ([`capture`], [`capture_into`], [`graph::BodyGraph::capture`], [`StreamRef::begin_capture`],
//!     [`StreamRef::end_capture`], [`graph_cache::GraphCache::new`],
//!     [`graph_cache::GraphCache::with_options`]): captured work runs at every
//!     launch of every executable graph made from the graph, long after the call; the caller owes
//!     that everything the work uses (memory, events recorded with `record_external`, raw handles,
//!     kernel arguments) is valid at every replay, and that nothing else uses the stream, or ends
//!     the capture, while it is open (the replay contract, in [`capture`]'s `# Safety`);
//!   - *pseudo streams* ([`StreamRef::per_thread_default`], [`StreamRef::legacy_default`]): each
//!     names a different stream on each thread or current device, so a handle, or a buffer freed
//!     on one, must stay on the calling thread with the same current device;
//!   - *raw handles and pointers* (`from_raw`, `from_raw_parts`, `from_raw_parts_on`): the handle
//!     must be live (and owned when the type owns it), the memory allocated for the borrow;
//!   - *host access to managed memory*: no kernel or copy may use it meanwhile.
//! - **Threads**: [`Stream`], [`StreamRef`], [`Event`] and the pools are `Send + Sync`: CUDA allows
//!   a stream to be used from several threads at once and an event to be recorded on one thread
//!   while another queries it. Buffers and views are `Send`/`Sync` as their element type is
//!   (`&mut`-like views need `T: Send` to move). [`Graph`] and [`GraphExec`] are `Send`, not
//!   `Sync` (CUDA does not synchronise calls on one graph). A capture in
//!   [`CaptureMode::Global`] makes every thread's capture-unsafe calls fail (and the capture with
//!   them): an error, never unsoundness.
//! - **Drop**: a [`DeviceBuffer`] is freed on its stream, after the work queued there (safe to drop
//!   while a kernel on that stream still uses it). [`PinnedBuffer`] and [`ManagedBuffer`] are freed
//!   with `cudaFreeHost`/`cudaFree`, which are not stream-ordered: that is why the async copies from
//!   pinned memory are `unsafe`. A failure met in any `Drop` is kept, not discarded:
//!   [`error::take_drop_errors`] returns them.
//! - **Host functions in graphs**: a host function or staging copy captured into a graph is
//!   replayed at every launch; its state (the closure, the slot) is owned by the graph through a
//!   CUDA user object, shared with every executable graph made from it, and freed once the last of
//!   them is destroyed. A panic in a host function is caught and counted
//!   ([`host_fn::take_host_fn_panics`]); it never unwinds into CUDA.
//!
//! ## Errors
//! See [`error`] for the two waves (launch-configuration errors at the call, execution errors at
//! the next query or synchronise), sticky errors and `CUDA_LAUNCH_BLOCKING=1`.
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

/// One CUDA runtime call, its status turned into a [`Result`] that names the call:
/// `cuda_call!(unsafe { sys::cudaEventRecord(e, s) })` is
/// `check(unsafe { sys::cudaEventRecord(e, s) }, "cudaEventRecord")` with the name taken from the
/// call, so that it cannot disagree with it. The `unsafe` block stays at the call site, under its
/// `// SAFETY:` comment.
macro_rules! cuda_call {
    ($unsafe:tt { sys::$f:ident($($arg:expr),* $(,)?) }) => {
        $crate::error::check($unsafe { sys::$f($($arg),*) }, stringify!($f))
    };
}

#[macro_use]
mod handle;

#[cfg(feature = "std")]
pub mod context;
pub mod device;
mod driver_calls;
pub mod error;
pub mod event;
pub mod graph;
#[cfg(feature = "alloc")]
pub mod graph_cache;
#[cfg(feature = "std")]
pub mod host_fn;
pub mod launch;
#[cfg(all(feature = "alloc", cuda_library_api))]
pub mod library;
pub mod memory;
#[cfg(feature = "alloc")]
pub mod pipeline;
#[cfg(feature = "std")]
pub mod staging;
pub mod stream;

pub use device::Device;
pub use error::{CudaError, Error, LibraryError, Result, UsageError, UsageKind};
pub use event::{Event, EventFlags, EventStatus, TimingEvent};
#[cfg(feature = "alloc")]
pub use graph::capture_into;
pub use graph::{capture, CaptureMode, CaptureStatus, Graph, GraphExec, InstantiateFlags, NodeKind};
pub use launch::{Dim3, Kernel, LaunchConfig, PdlKernel, PdlMode, PdlPlan};
#[cfg(feature = "alloc")]
pub use memory::SharedStreamBuffer;
pub use memory::{
    DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, HostAllocFlags, HostRegisterFlags, Location, ManagedBuffer,
    ManagedFlags, MemPool, MemPoolRef, PinnedBuffer, PinnedSlice, PinnedSliceMut, PoolAccess, RegisteredHost,
};
pub use ordo_cuda_sys as sys;
pub use stream::{Stream, StreamFlags, StreamRef, StreamStatus};
