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
//! - **Safe**: creating and destroying streams, events, pools and buffers; recording, waiting,
//!   querying, synchronising; allocation; the blocking copies (they return after the copy); managed
//!   prefetch and advice (they only move memory CUDA owns). None of these can make Rust code read
//!   freed or uninitialised host memory: device buffers hold [`DeviceCopy`] types, which have no
//!   invalid bit patterns, and host buffers start zeroed.
//! - **`unsafe`**: asynchronous copies and memsets (the memory must outlive the copy, which a borrow
//!   ending at the call's return cannot show; see [`memory::copy`]); host access to managed memory
//!   (no kernel may be using it); adopting raw handles (`from_raw`: the handle must be live, and
//!   owned when the type owns it).
//! - **Threads**: [`Stream`], [`StreamRef`], [`Event`] and the pools are `Send + Sync`: CUDA allows a
//!   stream to be used from several threads at once and an event to be recorded on one thread while
//!   another queries it. Buffers are `Send`/`Sync` as their element type is.
//! - **Drop**: a [`DeviceBuffer`] is freed on its stream, after the work queued there (safe to drop
//!   while a kernel on that stream still uses it). [`PinnedBuffer`] and [`ManagedBuffer`] are freed
//!   with `cudaFreeHost`/`cudaFree`, which are not stream-ordered: that is why the async copies from
//!   pinned memory are `unsafe`.
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

pub mod device;
pub mod error;
pub mod event;
pub mod graph;
#[cfg(feature = "std")]
pub mod host_fn;
#[cfg(feature = "alloc")]
pub mod graph_cache;
pub mod launch;
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
pub use launch::{Dim3, Kernel, LaunchConfig};
pub use memory::{
    DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, HostAllocFlags, HostRegisterFlags, Location, ManagedBuffer,
    ManagedFlags, MemPool, MemPoolRef, PinnedBuffer, PinnedSlice, PinnedSliceMut, RegisteredHost,
};
pub use ordo_cuda_sys as sys;
pub use stream::{AsStream, Stream, StreamFlags, StreamRef, StreamStatus};
