//! # ordo-cuda-core
//!
//! A thin, zero-cost layer over the CUDA runtime for code that counts microseconds: streams,
//! events, device/pinned/registered/managed memory, stream-ordered allocation and pools (of host
//! memory too), copies one by one and batched, SM partitions ([`partition`]), and errors that
//! keep CUDA's code, the call that failed and the driver's words about it. `no_std` (features
//! `alloc` and `std`, `std` on by default); every handle is a `repr(transparent)` newtype over the
//! raw one.
//!
//! ## Stream-correct
//! Everything that enqueues work takes the caller's stream ([`StreamRef`]) and enqueues on it;
//! nothing here synchronises unless its name says so (`synchronize`, `*_blocking`). Device buffers
//! are allocated with `cudaMallocAsync` and freed with `cudaFreeAsync` on their stream, so dropping
//! one never stalls the device.
//!
//! ## Hot paths
//! Kernel launch, event record, stream wait, queries and stream-ordered allocation are one driver
//! call each: no heap allocation, no lock, nothing the raw call does not need (a launch reads its
//! kernel's driver handle from a lock-free table, see [`launch`]). A GPU test counts heap
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
//!   stream); SM partitions and their streams ([`partition`]: a partition outlives its streams,
//!   and its green context goes only after its work); the CPU's access to a host pool's buffer
//!   (after a synchronise of its stream, never while it captures); instantiating, launching,
//!   updating and uploading graphs (their work was captured under the capture's contract, which
//!   covers every replay). None of these can make Rust code
//!   read freed or uninitialised memory: device buffers hold [`DeviceCopy`] types, which have no
//!   invalid bit patterns, host buffers start zeroed or written (`PinnedBuffer::from_slice`,
//!   `from_fn`), and a [`DeviceBuffer`] cannot outlive its
//!   stream (`DeviceBuffer<'s>`). Work that ordo enqueues on a stream other than a device view's
//!   own ([`DeviceSlice::origin`]) is ordered after that stream, and that stream's later free after
//!   the work ([`memory::order`]).
//! - **`unsafe`**, and why:
//!   - *asynchronous copies and memsets* ([`memory::copy`]), batched copies
//!     (`memory::CopyBatch::enqueue`): the memory must outlive the copy, which a borrow ending at
//!     the call's return cannot show;
//!   - *kernel launches* ([`Kernel::launch`], [`launch::launch_raw`], [`PdlKernel::launch`],
//!     [`GraphExec::set_kernel_node_args`], [`Graph::add_kernel_node`],
//!     [`graph::BodyGraph::add_kernel_node`]): the kernel's use of its pointer arguments is
//!     invisible to Rust, and so are the kernel's parameters: the `extern "C"` declaration (or,
//!     for `launch_raw`, the argument list) states them and ordo cannot check it against the
//!     device code (implementing [`launch::KernelFn`] is `unsafe` for the same reason); the
//!     driver path keeps each kernel's driver handle by its address, so a kernel's code must not
//!     be unloaded and replaced at that address;
//!   - *images loaded at run time* (`library::Library::from_image`): ordo checks every size a
//!     cubin or fatbin declares against the bytes given, and every index or offset one of its
//!     tables holds into another, but not what lies inside NVIDIA's records, the code and the
//!     compressed streams, which CUDA reads as their maker wrote them;
//!   - *retargeted copy and memset nodes* ([`GraphExec::set_memcpy_node`],
//!     [`GraphExec::set_memset_node`]): the node reads and writes the new memory at every later
//!     launch of the executable graph, which has no lifetime to tie that memory to;
//!   - *the pipeline run* (`pipeline::Pipeline::run`): it enqueues asynchronous copies of the
//!     caller's pinned buffers, so it owes what the copies owe until `main` has passed the run
//!     (it joins its worker streams back to `main` on every path out, errors included, so
//!     synchronising `main` is enough);
//!   - *captures* ([`capture`], [`capture_into`], [`graph::BodyGraph::capture`], [`StreamRef::begin_capture`],
//!     [`StreamRef::end_capture`], [`graph::GraphCache::new`],
//!     [`graph::GraphCache::with_options`]): captured work runs at every
//!     launch of every executable graph made from the graph, long after the call; the caller owes
//!     that everything the work uses (memory, events recorded with `record_external`, raw handles,
//!     kernel arguments) is valid at every replay, and that nothing else uses the stream, or ends
//!     the capture, while it is open (the replay contract, in [`capture`]'s `# Safety`); in
//!     global mode, also that the other threads keep out of the capture (see [`CaptureMode::Global`]);
//!   - *pseudo streams* ([`StreamRef::per_thread_default`], [`StreamRef::legacy_default`]): each
//!     names a different stream on each thread or current device, so a handle, or a buffer freed
//!     on one, must stay on the calling thread with the same current device; the legacy stream
//!     also must not be used while another thread captures a blocking stream (the driver
//!     crashes there: `docs/cuda-behaviours.md`, CB-03);
//!   - *raw handles and pointers* (`from_raw`, `from_raw_parts`, `from_raw_parts_on`): the handle
//!     must be live (and owned when the type owns it), the memory allocated for the borrow;
//!   - *host access to managed memory*: no kernel or copy may use it meanwhile.
//! - **Threads**: [`Stream`], [`StreamRef`], [`Event`] and the pools are `Send + Sync`: CUDA allows
//!   a stream to be used from several threads at once and an event to be recorded on one thread
//!   while another queries it. Buffers and views are `Send`/`Sync` as their element type is
//!   (`&mut`-like views need `T: Send` to move). [`Graph`] and [`GraphExec`] are `Send`, not
//!   `Sync` (CUDA does not synchronise calls on one graph). A capture in
//!   [`CaptureMode::Global`] is where threads meet a driver that crashes: another thread's
//!   capture-unsafe call, or a second global-mode capture, kills the process instead of failing
//!   (`docs/cuda-behaviours.md`, CB-01 and CB-02). Global mode is therefore never ordo's default, ordo's own global-mode captures
//!   hold a process-wide lock ([`graph::capture_fence`]), and choosing global mode is an `unsafe`
//!   call whose contract keeps the other threads out.
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
//!
//! ## Compiling your own CUDA C
//! The build script publishes, as `links` metadata, what a crate compiling its own kernels against
//! ordo needs. Cargo passes it to the build script of every crate that depends on `ordo-cuda-core`
//! directly, as environment variables:
//!
//! | variable | value |
//! | --- | --- |
//! | `DEP_ORDO_CUDA_CORE_NVCC` | the nvcc of the toolkit ordo is built against, so that your kernels and ordo's runtime come from one toolkit (absent when that toolkit has no nvcc) |
//! | `DEP_ORDO_CUDA_CORE_INCLUDE` | ordo's device headers: `ordo/pdl.cuh` (`ORDO_PDL_KERNELS`), `ordo/graph.cuh` (`ordo_set_condition`) |
//! | `DEP_ORDO_CUDA_CORE_GENCODE` | the nvcc `-gencode` flags ordo's own kernels are built with, separated by spaces |
//! | `DEP_ORDO_CUDA_CORE_CUDA_VERSION` | the toolkit's version as its headers give it (`13000` for 13.0) |
//! | `DEP_ORDO_CUDA_CORE_CUDA_INCLUDE` | the toolkit's include folders, a search path |
//! | `DEP_ORDO_CUDA_CORE_HAS_DEVICE` | `1` where the build machine has an NVIDIA GPU, else `0` (for `cfg`s of GPU tests) |
//!
//! The facade, `ordo-cuda`, passes the same keys on to its own dependents as `DEP_ORDO_CUDA_*`.
//! A build script with `cc` as its build dependency (not compiled here: `cc` is no dependency of
//! this crate):
//!
//! ```rust,ignore
//! fn main() {
//!     println!("cargo::rerun-if-changed=src/my_kernels.cu");
//!     let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")).unwrap_or_default();
//!     std::env::set_var("NVCC", var("NVCC")); // the compiler cc runs for CUDA files
//!     let mut build = cc::Build::new();
//!     // The CUDA runtime is linked once, by ordo-cuda-sys.
//!     build.cuda(true).cudart("none").include(var("INCLUDE")).file("src/my_kernels.cu");
//!     for flag in var("GENCODE").split_whitespace() {
//!         build.flag(flag);
//!     }
//!     build.compile("my_kernels");
//! }
//! ```
//!
//! Launch them through the host stubs nvcc generates: declare the `extern "C"` kernel in Rust
//! and pass it to [`Kernel::new`].
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

/// One CUDA runtime call, its status turned into a [`Result`] that names the call:
/// `cuda_call!(unsafe { sys::cudaEventRecord(e, s) })` is
/// `check(unsafe { sys::cudaEventRecord(e, s) }, "cudaEventRecord")` with the name taken from the
/// call, so that it cannot disagree with it. The calls whose prototype differs between CUDA
/// releases go through `sys::compat`, under CUDA's names too
/// (`cuda_call!(unsafe { sys::compat::cudaStreamGetCaptureInfo(..) })` names
/// `cudaStreamGetCaptureInfo`). The `unsafe` block stays at the call site, under its `// SAFETY:`
/// comment.
macro_rules! cuda_call {
    ($unsafe:tt { sys::$f:ident($($arg:expr),* $(,)?) }) => {
        $crate::error::check($unsafe { sys::$f($($arg),*) }, stringify!($f))
    };
    ($unsafe:tt { sys::compat::$f:ident($($arg:expr),* $(,)?) }) => {
        $crate::error::check($unsafe { sys::compat::$f($($arg),*) }, stringify!($f))
    };
}

#[macro_use]
mod handle;

#[cfg(feature = "std")]
mod callback;

#[cfg(feature = "std")]
pub mod context;
pub mod device;
mod driver_calls;
pub mod error;
pub mod event;
pub mod graph;
/// The graph bucket cache, at its former path (it lives in [`graph::cache`]).
#[cfg(feature = "alloc")]
pub use graph::cache as graph_cache;
#[cfg(feature = "std")]
pub mod host_fn;
pub mod launch;
#[cfg(all(feature = "alloc", cuda_library_api))]
pub mod library;
pub mod memory;
#[cfg(feature = "std")]
pub mod partition;
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
    DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, HostAllocFlags, HostPool, HostPoolBuffer, HostRegisterFlags,
    Location, ManagedBuffer, ManagedFlags, MemPool, MemPoolBuilder, MemPoolRef, PinnedBuffer, PinnedSlice,
    PinnedSliceMut, PoolAccess, RegisteredHost,
};
pub use ordo_cuda_sys as sys;
pub use stream::{Stream, StreamFlags, StreamRef, StreamStatus};
