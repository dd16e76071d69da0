//! # Safety model
//!
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
//!   (`docs/cuda-behaviours.md`, CB-01 and CB-02). Global mode is therefore never ordo's default,
//!   ordo's own global-mode captures hold a process-wide lock ([`graph::capture_fence`]), and
//!   choosing global mode is an `unsafe` call whose contract keeps the other threads out.
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
//! [`host_fn`]: crate::host_fn
//! [`staging`]: crate::staging
//! [`partition`]: crate::partition
//! [`DeviceCopy`]: crate::DeviceCopy
//! [`DeviceBuffer`]: crate::DeviceBuffer
//! [`DeviceSlice::origin`]: crate::DeviceSlice::origin
//! [`memory::order`]: crate::memory::order
//! [`memory::copy`]: crate::memory::copy
//! [`Kernel::launch`]: crate::Kernel::launch
//! [`launch::launch_raw`]: crate::launch::launch_raw
//! [`PdlKernel::launch`]: crate::PdlKernel::launch
//! [`GraphExec::set_kernel_node_args`]: crate::GraphExec::set_kernel_node_args
//! [`Graph::add_kernel_node`]: crate::Graph::add_kernel_node
//! [`graph::BodyGraph::add_kernel_node`]: crate::graph::BodyGraph::add_kernel_node
//! [`launch::KernelFn`]: crate::launch::KernelFn
//! [`GraphExec::set_memcpy_node`]: crate::GraphExec::set_memcpy_node
//! [`GraphExec::set_memset_node`]: crate::GraphExec::set_memset_node
//! [`capture`]: crate::capture
//! [`capture_into`]: crate::capture_into
//! [`graph::BodyGraph::capture`]: crate::graph::BodyGraph::capture
//! [`StreamRef::begin_capture`]: crate::StreamRef::begin_capture
//! [`StreamRef::end_capture`]: crate::StreamRef::end_capture
//! [`graph::GraphCache::new`]: crate::graph::GraphCache::new
//! [`graph::GraphCache::with_options`]: crate::graph::GraphCache::with_options
//! [`CaptureMode::Global`]: crate::CaptureMode::Global
//! [`StreamRef::per_thread_default`]: crate::StreamRef::per_thread_default
//! [`StreamRef::legacy_default`]: crate::StreamRef::legacy_default
//! [`Stream`]: crate::Stream
//! [`StreamRef`]: crate::StreamRef
//! [`Event`]: crate::Event
//! [`Graph`]: crate::Graph
//! [`GraphExec`]: crate::GraphExec
//! [`graph::capture_fence`]: crate::graph::capture_fence
//! [`PinnedBuffer`]: crate::PinnedBuffer
//! [`ManagedBuffer`]: crate::ManagedBuffer
//! [`error::take_drop_errors`]: crate::error::take_drop_errors
//! [`host_fn::take_host_fn_panics`]: crate::host_fn::take_host_fn_panics
