//! CUDA graphs: stream capture into a [`Graph`] (new or existing), instantiation into a
//! [`GraphExec`], replay on a stream, the graph's nodes and edges (programmatic edges from PDL
//! launches survive capture), and updates without re-instantiating: whole-graph
//! [`GraphExec::update`] and typed kernel-node argument updates
//! ([`GraphExec::set_kernel_node_args`]).

use crate::error::{check, Error, Result, UsageKind};
use crate::launch::{Kernel, KernelArgs, LaunchConfig};
use crate::stream::StreamRef;
use core::marker::PhantomData;
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
        /// Upload the graph to the device as part of instantiation (`cudaGraphInstantiateFlagUpload`):
        /// needs a stream, so only [`Graph::instantiate_and_upload`] takes it.
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

/// What a graph node does (`cudaGraphNodeGetType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A kernel launch.
    Kernel,
    /// A copy.
    Memcpy,
    /// A memset.
    Memset,
    /// A host function.
    Host,
    /// A child graph.
    ChildGraph,
    /// No operation (a join point).
    Empty,
    /// A wait on an event.
    WaitEvent,
    /// An event record.
    EventRecord,
    /// A stream-ordered allocation (`cudaMallocAsync` captured).
    MemAlloc,
    /// A stream-ordered free (`cudaFreeAsync` captured).
    MemFree,
    /// A conditional node.
    Conditional,
    /// Another kind (external semaphores, or one a later CUDA adds), by CUDA's value.
    Other(u32),
}

impl NodeKind {
    fn from_raw(t: sys::cudaGraphNodeType) -> NodeKind {
        use sys::cudaGraphNodeType as T;
        match t {
            T::cudaGraphNodeTypeKernel => NodeKind::Kernel,
            T::cudaGraphNodeTypeMemcpy => NodeKind::Memcpy,
            T::cudaGraphNodeTypeMemset => NodeKind::Memset,
            T::cudaGraphNodeTypeHost => NodeKind::Host,
            T::cudaGraphNodeTypeGraph => NodeKind::ChildGraph,
            T::cudaGraphNodeTypeEmpty => NodeKind::Empty,
            T::cudaGraphNodeTypeWaitEvent => NodeKind::WaitEvent,
            T::cudaGraphNodeTypeEventRecord => NodeKind::EventRecord,
            T::cudaGraphNodeTypeMemAlloc => NodeKind::MemAlloc,
            T::cudaGraphNodeTypeMemFree => NodeKind::MemFree,
            T::cudaGraphNodeTypeConditional => NodeKind::Conditional,
            other => NodeKind::Other(other.0),
        }
    }
}

/// A node of a graph (borrowed from it; valid while the graph lives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Node<'g> {
    raw: NonNull<sys::CUgraphNode_st>,
    _graph: PhantomData<&'g Graph>,
}

impl<'g> Node<'g> {
    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraphNode_t {
        self.raw.as_ptr()
    }

    /// What the node does.
    pub fn kind(self) -> Result<NodeKind> {
        let mut t = sys::cudaGraphNodeType::cudaGraphNodeTypeEmpty;
        // SAFETY: a live node; `t` is writable.
        check(unsafe { sys::cudaGraphNodeGetType(self.as_raw(), &mut t) }, "cudaGraphNodeGetType")?;
        Ok(NodeKind::from_raw(t))
    }

    /// For a kernel node, the kernel's host-stub address (`cudaGraphKernelNodeGetParams`).
    pub fn kernel_function(self) -> Result<*const core::ffi::c_void> {
        let mut p = sys::cudaKernelNodeParams::default();
        // SAFETY: a live node; `p` is writable.
        check(unsafe { sys::cudaGraphKernelNodeGetParams(self.as_raw(), &mut p) }, "cudaGraphKernelNodeGetParams")?;
        Ok(p.func)
    }
}

/// A kernel node known to launch the kernel with argument tuple `Args`, so its arguments can be
/// replaced with values of the right types. Found with [`Graph::kernel_nodes`].
#[derive(Debug)]
pub struct KernelNode<'g, Args> {
    node: Node<'g>,
    kernel: Kernel<Args>,
}

impl<Args> Clone for KernelNode<'_, Args> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Args> Copy for KernelNode<'_, Args> {}

impl<'g, Args> KernelNode<'g, Args> {
    /// The node.
    pub fn node(&self) -> Node<'g> {
        self.node
    }
}

/// Why [`GraphExec::update`] could not update in place (`cudaGraphExecUpdateResultInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateFailure {
    /// CUDA's reason (`cudaGraphExecUpdateResult`): topology changed, node type changed, function
    /// changed, parameters changed in a way that cannot be updated, not supported, ...
    pub result: sys::cudaGraphExecUpdateResult,
    /// The node of the new graph that could not be updated (null when the topology changed).
    pub error_node: sys::cudaGraphNode_t,
    /// The node of the executable graph it was matched to (null when none).
    pub error_from_node: sys::cudaGraphNode_t,
}

impl UpdateFailure {
    /// CUDA's reason in words.
    pub fn reason(&self) -> &'static str {
        use sys::cudaGraphExecUpdateResult as R;
        match self.result {
            R::cudaGraphExecUpdateErrorTopologyChanged => "the graph's topology changed (nodes or edges added or removed)",
            R::cudaGraphExecUpdateErrorNodeTypeChanged => "a node's type changed",
            R::cudaGraphExecUpdateErrorFunctionChanged => "a kernel node's function changed",
            R::cudaGraphExecUpdateErrorParametersChanged => "a node's parameters changed in a way that cannot be updated",
            R::cudaGraphExecUpdateErrorNotSupported => "something in the graph does not support update",
            R::cudaGraphExecUpdateErrorUnsupportedFunctionChange => "a kernel's function changed in an unsupported way",
            R::cudaGraphExecUpdateErrorAttributesChanged => "a node's attributes changed in a way that cannot be updated",
            _ => "update failed",
        }
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

/// Captures what `f` enqueues on `stream` into the existing `graph`, after the graph's current
/// leaf nodes (`cudaStreamBeginCaptureToGraph`, CUDA 12.3 and later): the new work depends on
/// everything already in the graph. The capture is always ended.
#[cfg(feature = "alloc")]
pub fn capture_into<F>(graph: &mut Graph, stream: StreamRef<'_>, mode: CaptureMode, f: F) -> Result<()>
where
    F: FnOnce(StreamRef<'_>) -> Result<()>,
{
    let leaves: alloc::vec::Vec<sys::cudaGraphNode_t> = graph.leaf_nodes()?.iter().map(|n| n.as_raw()).collect();
    // SAFETY: live handles; `leaves` holds `leaves.len()` nodes of `graph`; default edges.
    check(
        unsafe {
            sys::stream_begin_capture_to_graph(
                stream.as_raw(),
                graph.as_raw(),
                leaves.as_ptr(),
                core::ptr::null(),
                leaves.len(),
                mode.to_raw(),
            )
        },
        "cudaStreamBeginCaptureToGraph",
    )?;
    let body = f(stream);
    let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
    // SAFETY: a live stream; the graph returned is `graph` itself, still owned by the caller.
    let ended = check(unsafe { sys::cudaStreamEndCapture(stream.as_raw(), &mut raw) }, "cudaStreamEndCapture");
    body.and(ended)
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

    /// The nodes (`cudaGraphGetNodes`).
    #[cfg(feature = "alloc")]
    pub fn nodes(&self) -> Result<alloc::vec::Vec<Node<'_>>> {
        let mut n = self.node_count()?;
        let mut raw = alloc::vec![core::ptr::null_mut(); n];
        // SAFETY: an array of `n` elements.
        check(unsafe { sys::cudaGraphGetNodes(self.as_raw(), raw.as_mut_ptr(), &mut n) }, "cudaGraphGetNodes")?;
        raw.truncate(n);
        Ok(raw.into_iter().filter_map(NonNull::new).map(|raw| Node { raw, _graph: PhantomData }).collect())
    }

    /// The nodes nothing depends on (`cudaGraphNodeGetDependentNodes` count zero).
    #[cfg(feature = "alloc")]
    pub fn leaf_nodes(&self) -> Result<alloc::vec::Vec<Node<'_>>> {
        let mut leaves = alloc::vec::Vec::new();
        for node in self.nodes()? {
            let mut n = 0usize;
            // SAFETY: a live node; null arrays ask for the count.
            check(
                unsafe { sys::graph_node_get_dependent_nodes(node.as_raw(), core::ptr::null_mut(), core::ptr::null_mut(), &mut n) },
                "cudaGraphNodeGetDependentNodes",
            )?;
            if n == 0 {
                leaves.push(node);
            }
        }
        Ok(leaves)
    }

    /// The kernel nodes that launch `kernel`, typed by its arguments, in CUDA's node order.
    #[cfg(feature = "alloc")]
    pub fn kernel_nodes<Args>(&self, kernel: Kernel<Args>) -> Result<alloc::vec::Vec<KernelNode<'_, Args>>>
    where
        Args: KernelArgs,
    {
        let mut out = alloc::vec::Vec::new();
        for node in self.nodes()? {
            if node.kind()? == NodeKind::Kernel && node.kernel_function()? == kernel.as_raw() {
                out.push(KernelNode { node, kernel });
            }
        }
        Ok(out)
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

    /// Instantiates the graph for launching (`cudaGraphInstantiateWithFlags`). `UPLOAD` needs a
    /// stream: it is refused here with a usage error; use [`Graph::instantiate_and_upload`].
    pub fn instantiate(&self, flags: InstantiateFlags) -> Result<GraphExec> {
        if flags.contains(InstantiateFlags::UPLOAD) {
            return Err(Error::invalid("Graph::instantiate", "UPLOAD needs a stream: use Graph::instantiate_and_upload"));
        }
        let mut raw: sys::cudaGraphExec_t = core::ptr::null_mut();
        // SAFETY: a live graph; `raw` is writable.
        check(
            unsafe { sys::cudaGraphInstantiateWithFlags(&mut raw, self.as_raw(), flags.bits() as _) },
            "cudaGraphInstantiateWithFlags",
        )?;
        NonNull::new(raw)
            .map(|raw| GraphExec { raw })
            .ok_or_else(|| crate::error::null_handle("cudaGraphInstantiateWithFlags"))
    }

    /// Instantiates the graph and uploads it on `stream` as part of instantiation
    /// (`cudaGraphInstantiateWithParams` with `cudaGraphInstantiateFlagUpload`), so its first
    /// launch on that stream pays no upload.
    pub fn instantiate_and_upload(&self, flags: InstantiateFlags, stream: StreamRef<'_>) -> Result<GraphExec> {
        let mut params = sys::cudaGraphInstantiateParams {
            flags: (flags | InstantiateFlags::UPLOAD).bits() as _,
            uploadStream: stream.as_raw(),
            errNode_out: core::ptr::null_mut(),
            result_out: sys::cudaGraphInstantiateResult::cudaGraphInstantiateSuccess,
        };
        let mut raw: sys::cudaGraphExec_t = core::ptr::null_mut();
        // SAFETY: a live graph and stream; `params` and `raw` are writable.
        check(
            unsafe { sys::cudaGraphInstantiateWithParams(&mut raw, self.as_raw(), &mut params) },
            "cudaGraphInstantiateWithParams",
        )?;
        NonNull::new(raw)
            .map(|raw| GraphExec { raw })
            .ok_or_else(|| crate::error::null_handle("cudaGraphInstantiateWithParams"))
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

    /// Updates this executable graph in place to match `graph` (`cudaGraphExecUpdate`): same
    /// topology, new parameters. `Ok(Err(failure))` says which node could not be updated and why;
    /// the executable graph is unchanged then and still launchable.
    pub fn update(&mut self, graph: &Graph) -> Result<core::result::Result<(), UpdateFailure>> {
        let mut info = sys::cudaGraphExecUpdateResultInfo {
            result: sys::cudaGraphExecUpdateResult::cudaGraphExecUpdateSuccess,
            errorNode: core::ptr::null_mut(),
            errorFromNode: core::ptr::null_mut(),
        };
        // SAFETY: live handles; `info` is writable.
        let code = unsafe { sys::cudaGraphExecUpdate(self.as_raw(), graph.as_raw(), &mut info) };
        if code == sys::cudaError::cudaErrorGraphExecUpdateFailure {
            // SAFETY: clears the error the failed update left in the last-error slot.
            unsafe { sys::cudaGetLastError() };
            return Ok(Err(UpdateFailure { result: info.result, error_node: info.errorNode, error_from_node: info.errorFromNode }));
        }
        check(code, "cudaGraphExecUpdate")?;
        Ok(Ok(()))
    }

    /// Replaces the launch configuration and arguments of a kernel node in this executable graph
    /// (`cudaGraphExecKernelNodeSetParams`): new pointers or scalars for a captured kernel, without
    /// re-instantiating. `node` comes from the graph this was instantiated from. Launch attributes
    /// (PDL, priority) stay as captured.
    ///
    /// # Safety
    /// As [`Kernel::launch`]: the arguments must be valid for what the kernel does with them
    /// whenever the graph is launched.
    pub unsafe fn set_kernel_node_args<Args: KernelArgs>(
        &mut self,
        node: KernelNode<'_, Args>,
        config: &LaunchConfig,
        mut args: Args,
    ) -> Result<()> {
        config.validate()?;
        if config.cluster.is_some() || config.pdl || config.priority.is_some() {
            return Err(Error::usage(
                UsageKind::InvalidArgument,
                "GraphExec::set_kernel_node_args",
                "only grid, block, shared memory and arguments can be set on a node; attributes stay as captured",
            ));
        }
        let mut ptrs = args.arg_ptrs();
        let params = sys::cudaKernelNodeParams {
            func: node.kernel.as_raw().cast_mut(),
            gridDim: sys::dim3 { x: config.grid.x, y: config.grid.y, z: config.grid.z },
            blockDim: sys::dim3 { x: config.block.x, y: config.block.y, z: config.block.z },
            sharedMemBytes: config.shared_mem_bytes,
            kernelParams: ptrs.as_mut().as_mut_ptr(),
            extra: core::ptr::null_mut(),
        };
        // SAFETY: live handles; CUDA copies the argument values during the call.
        check(
            unsafe { sys::cudaGraphExecKernelNodeSetParams(self.as_raw(), node.node.as_raw(), &params) },
            "cudaGraphExecKernelNodeSetParams",
        )
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
