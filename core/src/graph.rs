//! CUDA graphs: stream capture into a [`Graph`], instantiation into a [`GraphExec`], replay on a
//! stream, and the graph's edges with their data (programmatic edges from PDL launches survive
//! capture).

use crate::error::{check, Error, Result};
use crate::stream::StreamRef;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// Stream capture modes (`cudaStreamCaptureMode`): which unsafe calls from other threads (or this
/// one) are refused while the capture runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Refuses potentially unsafe calls from any thread while any global capture runs.
    Global,
    /// Refuses them from this thread only.
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

/// Whether a stream is capturing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// The capture was invalidated by an illegal call; ending it returns an error.
    Invalidated,
}

/// An owned graph (`cudaGraph_t`), destroyed on drop.
#[derive(Debug)]
#[repr(transparent)]
pub struct Graph {
    raw: NonNull<sys::CUgraph_st>,
}

static_assertions::assert_eq_size!(Graph, sys::cudaGraph_t);

// SAFETY: graphs may be used from any thread, one thread at a time (`&mut` for changes).
unsafe impl Send for Graph {}

/// An owned executable graph (`cudaGraphExec_t`), destroyed on drop.
#[derive(Debug)]
#[repr(transparent)]
pub struct GraphExec {
    raw: NonNull<sys::CUgraphExec_st>,
}

static_assertions::assert_eq_size!(GraphExec, sys::cudaGraphExec_t);

// SAFETY: executable graphs may be launched from any thread.
unsafe impl Send for GraphExec {}

bitflags::bitflags! {
    /// `cudaGraphInstantiateWithFlags` flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct InstantiateFlags: u64 {
        /// Free memory allocated by the graph's allocation nodes each time it is launched again.
        const AUTO_FREE_ON_LAUNCH = 1;
        /// Upload the graph to the device as part of instantiation (`cudaGraphInstantiateFlagUpload`;
        /// with `cudaGraphInstantiateWithParams` only: ordo uploads on the stream instead).
        const UPLOAD = 2;
        /// Launch nodes in their captured priority order.
        const USE_NODE_PRIORITY = 8;
    }
}

/// One edge of a graph: from, to, and CUDA's edge data.
#[derive(Debug, Clone, Copy)]
pub struct Edge {
    /// The node the edge leaves.
    pub from: sys::cudaGraphNode_t,
    /// The node it enters.
    pub to: sys::cudaGraphNode_t,
    /// Port and type (`cudaGraphDependencyTypeProgrammatic` for PDL).
    pub data: sys::cudaGraphEdgeData,
}

impl Edge {
    /// Whether this is a programmatic (PDL) edge.
    pub fn is_programmatic(&self) -> bool {
        self.data.type_ == sys::cudaGraphDependencyType::cudaGraphDependencyTypeProgrammatic.0 as u8
    }
}

impl<'a> StreamRef<'a> {
    /// Starts capturing the work enqueued on this stream into a graph (`cudaStreamBeginCapture`).
    /// Prefer [`capture`], which always ends the capture.
    pub fn begin_capture(self, mode: CaptureMode) -> Result<()> {
        // SAFETY: a live stream.
        check(unsafe { sys::cudaStreamBeginCapture(self.as_raw(), mode.to_raw()) }, "cudaStreamBeginCapture")
    }

    /// Ends the capture and returns the graph (`cudaStreamEndCapture`). A capture invalidated by an
    /// illegal call returns `cudaErrorStreamCaptureInvalidated` naming this call; the stream is
    /// usable again either way.
    pub fn end_capture(self) -> Result<Graph> {
        let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
        // SAFETY: a live stream; `raw` is writable.
        let code = unsafe { sys::cudaStreamEndCapture(self.as_raw(), &mut raw) };
        if code != sys::cudaError::cudaSuccess {
            if let Some(g) = NonNull::new(raw) {
                drop(Graph { raw: g });
            }
            return Err(Error::Cuda(crate::error::CudaError::new(code, "cudaStreamEndCapture")));
        }
        NonNull::new(raw).map(|raw| Graph { raw }).ok_or_else(|| crate::error::null_handle("cudaStreamEndCapture"))
    }

    /// Whether the stream is capturing (`cudaStreamGetCaptureInfo`).
    pub fn capture_status(self) -> Result<CaptureStatus> {
        let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
        // SAFETY: a live stream; the other outputs are not requested.
        check(
            unsafe {
                sys::stream_get_capture_info(
                    self.as_raw(),
                    &mut status,
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                    core::ptr::null_mut(),
                )
            },
            "cudaStreamGetCaptureInfo",
        )?;
        Ok(match status {
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => CaptureStatus::Active,
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusInvalidated => CaptureStatus::Invalidated,
            _ => CaptureStatus::None,
        })
    }
}

/// Captures what `f` enqueues on `stream` into a graph. The capture is always ended, also when `f`
/// fails, so the stream stays usable: `f`'s error is returned then; if `f` succeeded but an
/// illegal call (a synchronise, a synchronous copy, a legacy-stream operation) invalidated the
/// capture, the error names `cudaStreamEndCapture` and `cudaErrorStreamCaptureInvalidated` (the
/// illegal call itself returned `cudaErrorStreamCaptureUnsupported` to `f`).
pub fn capture<F>(stream: StreamRef<'_>, mode: CaptureMode, f: F) -> Result<Graph>
where
    F: FnOnce(StreamRef<'_>) -> Result<()>,
{
    stream.begin_capture(mode)?;
    let body = f(stream);
    let ended = stream.end_capture();
    match (body, ended) {
        (Ok(()), ended) => ended,
        (Err(e), _) => Err(e),
    }
}

impl Graph {
    /// An empty graph (`cudaGraphCreate`).
    pub fn new() -> Result<Graph> {
        let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        check(unsafe { sys::cudaGraphCreate(&mut raw, 0) }, "cudaGraphCreate")?;
        NonNull::new(raw).map(|raw| Graph { raw }).ok_or_else(|| crate::error::null_handle("cudaGraphCreate"))
    }

    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(&self) -> sys::cudaGraph_t {
        self.raw.as_ptr()
    }

    /// Number of nodes (`cudaGraphGetNodes`).
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count.
        check(unsafe { sys::cudaGraphGetNodes(self.as_raw(), core::ptr::null_mut(), &mut n) }, "cudaGraphGetNodes")?;
        Ok(n)
    }

    /// Number of edges (`cudaGraphGetEdges`).
    pub fn edge_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live graph; null arrays ask for the count.
        check(
            unsafe {
                sys::graph_get_edges(self.as_raw(), core::ptr::null_mut(), core::ptr::null_mut(), core::ptr::null_mut(), &mut n)
            },
            "cudaGraphGetEdges",
        )?;
        Ok(n)
    }

    /// All edges with their data (`cudaGraphGetEdges`).
    #[cfg(feature = "alloc")]
    pub fn edges(&self) -> Result<alloc::vec::Vec<Edge>> {
        let mut n = self.edge_count()?;
        let mut from = alloc::vec![core::ptr::null_mut(); n];
        let mut to = alloc::vec![core::ptr::null_mut(); n];
        let mut data = alloc::vec![sys::cudaGraphEdgeData::default(); n];
        // SAFETY: arrays of `n` elements.
        check(
            unsafe { sys::graph_get_edges(self.as_raw(), from.as_mut_ptr(), to.as_mut_ptr(), data.as_mut_ptr(), &mut n) },
            "cudaGraphGetEdges",
        )?;
        Ok((0..n.min(from.len())).map(|i| Edge { from: from[i], to: to[i], data: data[i] }).collect())
    }

    /// Instantiates the graph for launching (`cudaGraphInstantiateWithFlags`).
    pub fn instantiate(&self, flags: InstantiateFlags) -> Result<GraphExec> {
        let mut raw: sys::cudaGraphExec_t = core::ptr::null_mut();
        let flags = flags - InstantiateFlags::UPLOAD;
        // SAFETY: a live graph; `raw` is writable.
        check(
            unsafe { sys::cudaGraphInstantiateWithFlags(&mut raw, self.as_raw(), flags.bits() as _) },
            "cudaGraphInstantiateWithFlags",
        )?;
        NonNull::new(raw)
            .map(|raw| GraphExec { raw })
            .ok_or_else(|| crate::error::null_handle("cudaGraphInstantiateWithFlags"))
    }

    /// Writes a Graphviz DOT description to `path` (`cudaGraphDebugDotPrint`), verbose.
    pub fn debug_dot(&self, path: &core::ffi::CStr) -> Result<()> {
        // SAFETY: a live graph; a NUL-terminated path.
        check(
            unsafe {
                sys::cudaGraphDebugDotPrint(
                    self.as_raw(),
                    path.as_ptr(),
                    sys::cudaGraphDebugDotFlags::cudaGraphDebugDotFlagsVerbose.0 as core::ffi::c_uint,
                )
            },
            "cudaGraphDebugDotPrint",
        )
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: owned graph.
        unsafe { sys::cudaGraphDestroy(self.raw.as_ptr()) };
    }
}

impl GraphExec {
    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(&self) -> sys::cudaGraphExec_t {
        self.raw.as_ptr()
    }

    /// Launches the graph on `stream` (`cudaGraphLaunch`): one call, no allocation.
    #[inline(always)]
    pub fn launch(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { sys::cudaGraphLaunch(self.as_raw(), stream.as_raw()) }, "cudaGraphLaunch")
    }

    /// Uploads the graph's work to the device on `stream` ahead of its first launch (`cudaGraphUpload`).
    pub fn upload(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { sys::cudaGraphUpload(self.as_raw(), stream.as_raw()) }, "cudaGraphUpload")
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: owned executable graph.
        unsafe { sys::cudaGraphExecDestroy(self.raw.as_ptr()) };
    }
}
