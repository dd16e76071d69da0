//! Stream capture: the work enqueued on a stream is recorded into a graph instead of running.
//!
//! [`capture`] (into a new [`Graph`]) and [`capture_into`] (into an existing one) open a capture,
//! run the caller's function on the stream, and close the capture on every path out, a panic
//! included. They are `unsafe`: captured work does not run at the call, it runs at every launch
//! of every executable graph made from the graph, long after the borrows of the call have ended.
//! Their `# Safety` section is the contract every graph in ordo rests on.
//!
//! Every capture ordo begins is counted while it is open (a blocking call on the legacy default
//! stream is refused meanwhile, see [`StreamRef::legacy_default`]), and one in global mode holds
//! the process-wide global-capture lock from its begin to its end (see [`CaptureMode::Global`]).

use super::Graph;
use crate::error::{check, Result};
#[cfg(feature = "alloc")]
use crate::error::{CudaError, Error};
use crate::stream::StreamRef;
use core::ptr::NonNull;
use core::sync::atomic::Ordering;
use ordo_cuda_sys as sys;

/// Stream capture modes (`cudaStreamCaptureMode`): which potentially unsafe calls (those that may
/// synchronise implicitly, such as `cudaMalloc`) CUDA refuses while the capture runs, and from
/// which threads. A refused call fails with `cudaErrorStreamCaptureUnsupported` and invalidates the
/// capture.
///
/// **Global mode crashes the driver when other threads are not kept out of it.** Two threads
/// capturing in global mode at once, or one global-mode capture while another thread synchronises
/// or instantiates, kill the process inside libcuda instead of the documented refusal
/// (`docs/cuda-behaviours.md`, CB-01 and CB-02). Thread-local and relaxed captures run clean. So ordo begins
/// its own captures in [`ThreadLocal`](Self::ThreadLocal) mode wherever global mode is not the
/// point ([`CacheOptions::default`](super::CacheOptions)); a capture ordo begins in global mode
/// holds a process-wide lock (no two of them overlap; see [`capture_fence`](super::capture_fence));
/// and every API that lets the caller choose global mode asks the rest in its `# Safety` section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Refuses potentially unsafe calls from any thread while the capture runs. Choosing it, the
    /// caller owes, until the capture ends: no other thread of the process makes a capture-unsafe
    /// call (synchronises or queries a stream, event or device; instantiates, uploads or destroys an
    /// executable graph; `cudaMalloc`, `cudaFree`, `cudaHostAlloc`, `cudaFreeHost`; a blocking or
    /// pageable copy; drops a [`PinnedBuffer`](crate::PinnedBuffer)), except under a
    /// [`capture_fence`](super::capture_fence), and none begins a global-mode capture other than
    /// through ordo (ordo's own wait for each other). Without the `std` feature ordo has no lock:
    /// no other global-mode capture may be open at all.
    Global,
    /// Refuses them from the capturing thread only: ordo's default.
    ThreadLocal,
    /// Refuses nothing: the caller vouches for every call made meanwhile.
    Relaxed,
}

impl CaptureMode {
    fn to_raw(self) -> sys::cudaStreamCaptureMode {
        match self {
            CaptureMode::Global => sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal,
            CaptureMode::ThreadLocal => sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal,
            CaptureMode::Relaxed => sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed,
        }
    }
}

#[cfg(feature = "std")]
type GlobalHold = Option<super::global_lock::GlobalCapture>;
#[cfg(not(feature = "std"))]
type GlobalHold = ();

/// A capture ordo has begun: counted open, and holding the global-capture lock when in global
/// mode, until dropped (after the capture has ended).
struct Opened {
    global: GlobalHold,
}

/// Begins a capture on `stream` in `mode` through `begin` (the CUDA call), with the global-capture
/// lock taken first for a global-mode capture (`call` names the capture in the lock's error).
fn open(
    stream: StreamRef<'_>,
    mode: CaptureMode,
    call: &'static str,
    begin: impl FnOnce(StreamRef<'_>, sys::cudaStreamCaptureMode) -> Result<()>,
) -> Result<Opened> {
    #[cfg(feature = "std")]
    let global = match mode {
        CaptureMode::Global => Some(super::global_lock::exclusive(call)?),
        CaptureMode::ThreadLocal | CaptureMode::Relaxed => None,
    };
    #[cfg(not(feature = "std"))]
    let global = {
        let _ = call;
    };
    begin(stream, mode.to_raw())?;
    crate::capture_state::OPEN_CAPTURES.fetch_add(1, Ordering::AcqRel);
    Ok(Opened { global })
}

impl Opened {
    /// Keeps the capture counted open, and the lock held, past this value, for a capture that
    /// [`StreamRef::end_capture`] ends (it undoes both).
    fn keep_until_end(mut self, stream: StreamRef<'_>) {
        #[cfg(feature = "std")]
        if let Some(global) = self.global.take() {
            global.keep_until_end(stream.as_raw() as usize);
        }
        #[cfg(not(feature = "std"))]
        let _ = (stream, &mut self.global);
        core::mem::forget(self);
    }
}

/// One capture fewer open (saturating: a count broken by a contract breach stays a count).
fn closed() {
    let _ = crate::capture_state::OPEN_CAPTURES.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
}

impl Drop for Opened {
    fn drop(&mut self) {
        closed();
    }
}

/// Before a capture ordo began ends: its graph takes a hold on the SM partition of each partition
/// stream in it, the origin `stream` and the streams that joined it
/// ([`partition`](crate::partition#lifetimes)), so that no replay runs on a destroyed green
/// context. Nothing without the `std` feature, which has no partitions.
fn hold_partitions(stream: StreamRef<'_>) -> Result<()> {
    #[cfg(feature = "std")]
    return crate::partition::hold_for_capture(stream);
    #[cfg(not(feature = "std"))]
    {
        let _ = stream;
        Ok(())
    }
}

/// Where work enqueued on a stream goes now (`cudaStreamGetCaptureInfo`).
#[cfg(feature = "std")]
pub(crate) enum CaptureTarget {
    /// Not capturing: the work runs.
    None,
    /// Capturing into this graph (the capture's graph, owned by the capture until it ends, or the
    /// caller's graph in [`capture_into`]).
    Active(NonNull<sys::CUgraph_st>),
    /// The capture was invalidated: nothing enqueued now will run or be replayed.
    Invalidated,
}

/// Where work enqueued on `stream` goes now. A stream that joined another stream's capture (by
/// waiting on an event recorded in it) reports that capture's graph.
#[cfg(feature = "std")]
pub(crate) fn capture_target(stream: StreamRef<'_>) -> Result<CaptureTarget> {
    // SAFETY: a live stream.
    let (status, _, graph) = unsafe { crate::capture_state::capture_info(stream.as_raw()) }?;
    Ok(match status {
        sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => match NonNull::new(graph) {
            Some(graph) => CaptureTarget::Active(graph),
            None => return Err(crate::error::null_handle("cudaStreamGetCaptureInfo")),
        },
        sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusInvalidated => CaptureTarget::Invalidated,
        _ => CaptureTarget::None,
    })
}

/// The error for work refused because the stream's capture was invalidated.
#[cfg(feature = "std")]
pub(crate) fn invalidated(call: &'static str) -> Error {
    Error::Cuda(CudaError::new(sys::cudaError::cudaErrorStreamCaptureInvalidated, call))
}

impl<'a> StreamRef<'a> {
    /// Starts capturing the work enqueued on this stream into a new graph
    /// (`cudaStreamBeginCapture`). Prefer [`capture`], which ends the capture on every path out.
    ///
    /// # Safety
    /// The caller owes, for the capture this opens, what [`capture`]'s `# Safety` section lists:
    /// (1) everything the captured work uses is valid at every launch of every executable graph
    /// made from (or updated with) the graph; (2) until the capture is ended, the stream, and every
    /// stream that joins the capture from when it joins, is used only by the caller's capturing
    /// code (on the capturing thread), and only the caller ends the capture, with
    /// [`end_capture`](Self::end_capture) (so the graph CUDA returns has exactly one owner);
    /// (3) every buffer allocated on the stream (or on a stream that joined the capture) while it
    /// captures is used only by captured work and dropped before the capture ends: no lifetime
    /// enforces this here, as the handle [`capture`] gives its function does; (4) in
    /// [`CaptureMode::Global`], what that mode asks of the other threads until the capture ends;
    /// (5) the capture is ended with [`end_capture`](Self::end_capture) on the thread that began
    /// it: a global-mode capture holds the process-wide global-capture lock until then, and every
    /// other global-mode capture of ordo's waits for it.
    pub unsafe fn begin_capture(self, mode: CaptureMode) -> Result<()> {
        let opened = open(self, mode, "StreamRef::begin_capture", |s, m| {
            // SAFETY: a live stream; the capture's contract is forwarded to the caller.
            cuda_call!(unsafe { sys::cudaStreamBeginCapture(s.as_raw(), m) })
        })?;
        opened.keep_until_end(self);
        Ok(())
    }

    /// Ends the capture and returns the graph (`cudaStreamEndCapture`). A capture invalidated by an
    /// illegal call returns `cudaErrorStreamCaptureInvalidated` naming this call; the stream is
    /// usable again either way.
    ///
    /// # Safety
    /// The capture open on this stream was begun by the caller with
    /// [`begin_capture`](Self::begin_capture) (not by [`capture`] or [`capture_into`], whose
    /// functions must never end their capture, nor by code outside ordo), so that the graph CUDA
    /// returns is new and owned by nobody else: ending a capture into an existing graph returns
    /// that graph's handle, and the returned [`Graph`] would be a second owner, destroyed twice.
    /// The contract of `begin_capture` still covers every replay of the returned graph.
    pub unsafe fn end_capture(self) -> Result<Graph> {
        let held = hold_partitions(self);
        let (code, raw) = end_raw(self);
        closed();
        #[cfg(feature = "std")]
        super::global_lock::release_begun(self.as_raw() as usize);
        // Owned from here (when the end succeeded): destroyed on the error paths below.
        let graph = owned_if_ended(code, raw);
        held?;
        check(code, "cudaStreamEndCapture")?;
        graph.ok_or_else(|| crate::error::null_handle("cudaStreamEndCapture"))
    }
}

/// The graph a successful `cudaStreamEndCapture` returned, owned. After a failed end (an
/// invalidated or unjoined capture) CUDA returns null or a graph it has already destroyed (seen
/// with captures into an existing graph): any handle it wrote then is forgotten, never destroyed,
/// so that a failure can leak a graph but never destroy one twice.
fn owned_if_ended(code: sys::cudaError_t, raw: sys::cudaGraph_t) -> Option<Graph> {
    if code != sys::cudaError::cudaSuccess {
        return None;
    }
    NonNull::new(raw).map(Graph::from_captured)
}

/// `cudaStreamEndCapture` on `stream`: the status and the graph handle CUDA returned (null when
/// none).
fn end_raw(stream: StreamRef<'_>) -> (sys::cudaError_t, sys::cudaGraph_t) {
    let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
    // SAFETY: a live stream; `raw` is writable.
    let code = unsafe { sys::cudaStreamEndCapture(stream.as_raw(), &mut raw) };
    (code, raw)
}

/// Captures what `f` enqueues on `stream` into a new graph (`cudaStreamBeginCapture` ...
/// `cudaStreamEndCapture`).
///
/// The capture is ended on every path out: when `f` returns `Ok`, the graph is returned unless an
/// illegal call (a synchronise, a synchronous copy, a legacy-stream operation) invalidated the
/// capture, in which case the error names `cudaStreamEndCapture` and
/// `cudaErrorStreamCaptureInvalidated` (the illegal call itself returned
/// `cudaErrorStreamCaptureUnsupported` to `f`); when `f` returns an error, the partial graph is
/// destroyed and `f`'s error returned; when `f` panics, the capture is ended and the partial graph
/// destroyed while the panic unwinds (an error met there goes to
/// [`take_drop_errors`](crate::error::take_drop_errors)). The stream is usable again in every case.
///
/// `f` gets the stream as a handle whose lifetime ends with the call, so what it allocates on
/// that handle cannot leave `f`.
///
/// # Safety
/// Captured work does not run now. It runs at every launch of every [`GraphExec`] instantiated
/// from the returned graph (or from a copy of it), or [updated](super::GraphExec::update) with
/// it, for as long as any of them lives. The caller owes:
///
/// 1. **Everything the captured work uses is valid at every such launch**, until that launch
///    has completed on the device (not merely until this call returns):
///    - *device memory* a captured kernel, copy or memset reads or writes (kernel pointer
///      arguments included): still allocated, the same allocation, and accessed by nothing else
///      in a way that races the replay. A [`DeviceBuffer`] may be dropped only once every launch
///      that uses it is ordered before its free (launched on the buffer's own stream, or
///      completed), and no executable graph that uses it may be launched afterwards;
///    - *host memory* of captured copies (the pinned or registered source or destination of an
///      async copy): still allocated and, as for any async copy ([`memory::copy`]), not written
///      while a replay reads it nor accessed while a replay writes it;
///    - *kernels*: what [`Kernel::launch`](crate::launch::Kernel::launch) asks of the arguments
///      holds at each launch of the graph, with the argument values captured at the call (a
///      pointer argument keeps pointing at the address it had, whatever lives there later);
///      kernels from modules loaded at run time stay loaded;
///    - *events*: an event recorded with
///      [`record_external`](crate::event::Event::record_external) (an external event-record
///      node) is recorded again at each replay, by its raw handle: the [`Event`] must not be
///      destroyed while any such executable graph may launch (a destroyed handle may be reused
///      by CUDA for another event, whose state the replay would then change). Records and waits
///      between the streams of one capture only order the captured work (fork and join) and keep
///      no handle;
///    - *raw handles and pointers* given to CUDA or to other libraries inside `f` (a cuBLAS or
///      NCCL handle and its workspace, a texture object, a memory pool, a user's own
///      `cudaLaunchHostFunc` data): live and valid at every launch;
///    - *ordo's host state is the exception*: the closures of
///      [`launch_host_fn`](crate::host_fn::launch_host_fn) and the slots of
///      [`StagingRing::submit`](crate::staging::StagingRing::submit) are owned by the graph (CUDA
///      user objects) and by every executable graph made from it, and freed when the last of them
///      is destroyed. A captured host function is called at every replay. So are the SM
///      partitions of the capture's streams: a capture begun on a
///      [`PartitionStream`](crate::partition::PartitionStream), or joined by one, keeps that
///      partition alive as long as the graph or an executable graph made from it lives
///      ([`partition`](crate::partition#lifetimes)).
/// 2. **Only `f`'s handle uses the stream while the capture is open**: no other thread, and no
///    other handle to the same stream (`stream` itself or a copy of it, even inside `f`; the
///    [`Stream`](crate::stream::Stream) that owns it; a raw handle given to C code), enqueues work
///    on it, allocates or frees on it (a [`DeviceBuffer`] of that stream dropped meanwhile
///    included), synchronises or queries it; and nothing but this function ends the capture (`f`
///    must not call [`StreamRef::end_capture`]). The same holds for every other stream that joins
///    the capture (by waiting on an event recorded in it), from that wait until the capture ends,
///    joined back or not: only code inside `f`, on this thread, uses it; another thread holding
///    the [`Stream`](crate::stream::Stream) must not enqueue on it, query it or call
///    [`StreamRef::capture_conditional`] on it meanwhile. ordo code that finds a stream capturing
///    relies on this: the capture's graph stays alive, and the stream capturing, for its call.
/// 3. **Allocations made while capturing stay in the graph.** A [`DeviceBuffer`] allocated on a
///    capturing stream is not memory yet: CUDA adds an allocation node to the graph, and the
///    address is valid only for work captured into the same graph, while an executable graph made
///    from it runs. A buffer allocated on the handle `f` receives cannot leave `f` (its lifetime
///    ends with the call), so it is freed inside the capture. For a buffer allocated on another
///    stream that joined the capture (by waiting on an event recorded in it) the caller owes the
///    same: it is used only by captured work and dropped (its free captured) before the capture
///    ends.
/// 4. **In [`CaptureMode::Global`], the other threads keep out** until the capture ends: no other
///    thread makes a capture-unsafe call except under a [`capture_fence`](super::capture_fence),
///    and none begins a global-mode capture other than through ordo (the list is at
///    [`CaptureMode::Global`]; the driver crashes the process otherwise: CB-02).
///
/// [`GraphExec`]: super::GraphExec
/// [`GraphExec::update`]: super::GraphExec::update
/// [`DeviceBuffer`]: crate::memory::DeviceBuffer
/// [`memory::copy`]: crate::memory::copy
/// [`Event`]: crate::event::Event
pub unsafe fn capture<F>(stream: StreamRef<'_>, mode: CaptureMode, f: F) -> Result<Graph>
where
    F: FnOnce(StreamRef<'_>) -> Result<()>,
{
    let _opened = open(stream, mode, "capture", |s, m| {
        // SAFETY: a live stream; the capture's contract is forwarded to the caller; `scope` ends
        // it, before `_opened` (declared first) lets the lock go.
        cuda_call!(unsafe { sys::cudaStreamBeginCapture(s.as_raw(), m) })
    })?;
    let mut scope = NewCapture { stream, open: true };
    let body = f(stream).and_then(|()| hold_partitions(stream));
    let (code, raw) = scope.end();
    // Owned from here (when the end succeeded): dropped (destroyed) on every error path below.
    let graph = owned_if_ended(code, raw);
    body?;
    check(code, "cudaStreamEndCapture")?;
    graph.ok_or_else(|| crate::error::null_handle("cudaStreamEndCapture"))
}

/// An open capture into a new graph; ends it (and destroys the partial graph) if dropped open,
/// which happens only when the capture's function panics.
struct NewCapture<'s> {
    stream: StreamRef<'s>,
    open: bool,
}

impl NewCapture<'_> {
    fn end(&mut self) -> (sys::cudaError_t, sys::cudaGraph_t) {
        self.open = false;
        end_raw(self.stream)
    }
}

impl Drop for NewCapture<'_> {
    fn drop(&mut self) {
        if self.open {
            let (code, raw) = self.end();
            crate::error::record_drop_error(code, "cudaStreamEndCapture");
            // The graph is new (the contract: nobody else ended the capture); Graph's drop
            // destroys it and records a failure.
            drop(owned_if_ended(code, raw));
        }
    }
}

/// Captures what `f` enqueues on `stream` into the existing `graph`, after the graph's current
/// leaf nodes (`cudaStreamBeginCaptureToGraph`, CUDA 12.3 and later): the new work depends on
/// everything already in the graph. An empty graph works (the work then depends on nothing).
///
/// The capture is ended on every path out, a panic in `f` included, and the end is checked to
/// return `graph` itself. On success the captured nodes are in `graph`. On failure (`f` returns
/// an error or panics, or the capture was invalidated) `graph` holds exactly what it held before
/// the call: CUDA destroys a graph whose capture into it fails to end (after
/// `cudaErrorStreamCaptureInvalidated` or `cudaErrorStreamCaptureUnjoined` the handle is gone, host
/// state released: `docs/cuda-behaviours.md`, CB-06), so this function keeps a copy made before the capture
/// (`cudaGraphClone`, which also holds the graph's host state) and puts it in `graph`'s place:
/// the nodes, edges and host state are those of before, under a new raw handle. The copy costs
/// one clone of the graph a call.
///
/// # Safety
/// As [`capture`], for the work captured here, at every launch of every executable graph made
/// from (or updated with) `graph` from now on.
#[cfg(feature = "alloc")]
pub unsafe fn capture_into<F>(graph: &mut Graph, stream: StreamRef<'_>, mode: CaptureMode, f: F) -> Result<()>
where
    F: FnOnce(StreamRef<'_>) -> Result<()>,
{
    let mut leaves = alloc::vec::Vec::new();
    for node in super::template::raw_nodes(graph.as_raw())? {
        if super::template::is_leaf(node)? {
            leaves.push(node);
        }
    }
    let before = graph.try_clone()?;
    // CUDA reads no dependency array for a zero count; pass null rather than a dangling pointer.
    let deps = if leaves.is_empty() { core::ptr::null() } else { leaves.as_ptr() };
    let target = graph.as_raw();
    let _opened = open(stream, mode, "capture_into", |s, m| {
        // SAFETY: live handles; `deps` holds `leaves.len()` nodes of `graph`; default edges. The
        // capture's contract is forwarded to the caller; `scope` ends it, before `_opened`
        // (declared first) lets the lock go.
        cuda_call!(unsafe {
            sys::cudaStreamBeginCaptureToGraph(s.as_raw(), target, deps, core::ptr::null(), leaves.len(), m)
        })
    })?;
    let mut scope = IntoCapture { stream, graph, before: Some(before) };
    let body = f(stream).and_then(|()| hold_partitions(stream));
    let ended = scope.finish(body.is_ok());
    body.and(ended)
}

/// An open capture into the caller's graph, with a copy of the graph as it was. Dropped open
/// (only when the capture's function panics), it ends the capture and restores the copy.
#[cfg(feature = "alloc")]
struct IntoCapture<'s, 'g> {
    stream: StreamRef<'s>,
    graph: &'g mut Graph,
    /// The graph as it was before the capture; `None` once the capture has ended.
    before: Option<Graph>,
}

#[cfg(feature = "alloc")]
impl IntoCapture<'_, '_> {
    /// Ends the capture. When it ended into the caller's graph and `keep` is true, the copy is
    /// dropped and the captured work stays. Otherwise the copy takes the graph's place, and the
    /// graph is destroyed when CUDA left it alive (the capture ended but the work is not kept),
    /// forgotten when CUDA destroyed it (it refused to end the capture), and forgotten too when
    /// CUDA returned another graph (possible only if the capture contract was broken; who owns
    /// the caller's handle is unknown then, and leaking beats destroying it twice).
    fn finish(&mut self, keep: bool) -> Result<()> {
        let Some(before) = self.before.take() else {
            return Ok(());
        };
        let (code, raw) = end_raw(self.stream);
        let ended = if code != sys::cudaError::cudaSuccess {
            Err(Error::Cuda(CudaError::from_failed_call(code, "cudaStreamEndCapture")))
        } else if raw != self.graph.as_raw() {
            Err(Error::invalid(
                "capture_into",
                "the capture ended with another graph than the caller's: something else ended or began a capture on the stream",
            ))
        } else {
            Ok(())
        };
        match ended {
            Ok(()) if keep => drop(before),
            Ok(()) => drop(core::mem::replace(&mut *self.graph, before)),
            Err(_) => core::mem::forget(core::mem::replace(&mut *self.graph, before)),
        }
        ended
    }
}

#[cfg(feature = "alloc")]
impl Drop for IntoCapture<'_, '_> {
    fn drop(&mut self) {
        if let Err(e) = self.finish(false) {
            crate::error::record_drop_error_value(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    /// While a capture ordo began is open, a synchronise of the legacy stream is refused before
    /// CUDA is called (the CUDA defect it avoids needs a GPU; the refusal does not). Other
    /// streams are not affected. The count is raised by hand: without a driver no capture begins.
    #[test]
    fn the_legacy_stream_is_refused_while_an_ordo_capture_is_open() {
        crate::capture_state::OPEN_CAPTURES.fetch_add(1, Ordering::AcqRel);
        // SAFETY: used on this thread only, current device unchanged; no other thread captures.
        let legacy = unsafe { StreamRef::legacy_default() };
        let e = legacy.synchronize().unwrap_err();
        assert!(e.cuda_code().is_none(), "refused before CUDA: {e}");
        assert!(e.to_string().contains("legacy default stream"), "{e}");
        assert!(legacy.is_capturing().is_err());
        // SAFETY: as above.
        let per_thread = unsafe { StreamRef::per_thread_default() };
        if let Err(e) = per_thread.synchronize() {
            assert!(e.cuda_code().is_some(), "only the legacy stream is refused: {e}");
        }
        closed();
    }
}
