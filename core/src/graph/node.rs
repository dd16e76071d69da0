//! A graph's nodes and edges, as CUDA reports them: what each node does, typed kernel nodes whose
//! arguments an executable graph can replace, and the parameters of copy and memset nodes
//! ([`LinearCopy`], [`MemcpyNode`], [`MemsetParams`]), which an executable graph can retarget.
//! Kernel nodes added by hand ([`Graph::add_kernel_node`], and
//! [`BodyGraph::add_kernel_node`](super::BodyGraph::add_kernel_node) in a conditional node's
//! body) get their launch attributes as a launch would, with the same checks.
//!
//! # Kernel nodes and launch attributes
//! [`attributes`](crate::launch::attributes) says, for each attribute of a [`LaunchConfig`],
//! whether CUDA keeps it on a kernel node. A node added by hand gets those it keeps
//! (`cudaGraphKernelNodeSetAttribute`: priority, cluster and preferred cluster dimensions,
//! cooperative, memory-synchronisation domain), after the checks [`Kernel::launch`] makes (a
//! cooperative grid must fit the calling thread's current device at once, the device the node
//! runs on); the others (PDL, the programmatic and launch-completion events) are refused with an
//! error naming them. An executable graph's kernel node keeps the attributes it was made with:
//! new arguments for it ([`GraphExec::set_kernel_node_args`](super::GraphExec::set_kernel_node_args))
//! come with a configuration that sets none, and its new grid is checked against the node's own
//! (cooperative, cluster).

use super::Graph;
use crate::error::{Error, Result};
use crate::launch::{Attribute, Dim3, Kernel, KernelArgs, LaunchConfig};
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

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

/// The kind the runtime reported (`code`, `t`), or, where it answered `cudaErrorUnknown`, the kind
/// `driver` reports (`CUgraphNodeType`, whose values are the runtime's: a test of ordo-cuda-sys
/// checks them against cuda.h), with the runtime's error cleared from the thread; otherwise the
/// runtime's error.
fn kind_or_drivers(
    code: sys::cudaError_t,
    t: sys::cudaGraphNodeType,
    driver: impl FnOnce() -> Option<u32>,
) -> Result<NodeKind> {
    if code == sys::cudaError::cudaErrorUnknown {
        if let Some(v) = driver() {
            // SAFETY: no arguments. Clears the 999 this call left as the thread's last error (not
            // sticky); any earlier error there had been replaced by it already.
            unsafe { sys::cudaGetLastError() };
            return Ok(NodeKind::from_raw(sys::cudaGraphNodeType(v)));
        }
    }
    crate::error::check(code, "cudaGraphNodeGetType")?;
    Ok(NodeKind::from_raw(t))
}

/// A node of a graph (borrowed from it; valid while the graph lives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Node<'g> {
    raw: NonNull<sys::CUgraphNode_st>,
    _graph: PhantomData<&'g Graph>,
}

impl<'g> Node<'g> {
    /// A node of a graph borrowed for `'g`.
    ///
    /// Crate-internal: `raw` must be a node of that graph (or of a body of one of its conditional
    /// nodes).
    pub(crate) fn new(raw: NonNull<sys::CUgraphNode_st>) -> Node<'g> {
        Node { raw, _graph: PhantomData }
    }

    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraphNode_t {
        self.raw.as_ptr()
    }

    /// What the node does.
    ///
    /// A CUDA 12 runtime on a CUDA 13 driver answers `cudaErrorUnknown` for a conditional node
    /// (`docs/cuda-behaviours.md`, CB-08): the runtime cannot name the kind the driver reports. That
    /// answer is then asked of the driver itself (`cuGraphNodeGetType`, through the runtime's
    /// entry-point query), whose node kinds have the runtime's values; where the driver cannot
    /// answer either, the runtime's error is returned.
    pub fn kind(self) -> Result<NodeKind> {
        let mut t = sys::cudaGraphNodeType::cudaGraphNodeTypeEmpty;
        // SAFETY: a live node; `t` is writable.
        let code = unsafe { sys::cudaGraphNodeGetType(self.as_raw(), &mut t) };
        kind_or_drivers(code, t, || {
            let get_type = crate::driver_calls::graph_node_get_type()?;
            let mut v = 0u32;
            // SAFETY: a live node (a driver `CUgraphNode` is the runtime's handle); `v` is writable.
            (unsafe { get_type(self.as_raw(), &mut v) } == 0).then_some(v)
        })
    }

    /// For a kernel node, the kernel's host-stub address (`cudaGraphKernelNodeGetParams`).
    ///
    /// The runtime cannot always map a node recorded from a driver launch (ordo's default
    /// [`Kernel::launch`], through `cuLaunchKernelEx`) back to a stub: it then answers
    /// `cudaErrorInvalidDeviceFunction` (under `compute-sanitizer`, for one: CB-30 in
    /// `docs/cuda-behaviours.md`). That error is returned here and cleared from the thread's last
    /// error, where the runtime leaves it, so that a later `cudaGetLastError` does not report the
    /// query as a failed launch.
    pub fn kernel_function(self) -> Result<*const core::ffi::c_void> {
        let mut p = sys::cudaKernelNodeParams::default();
        // SAFETY: a live node; `p` is writable.
        let code = unsafe { sys::cudaGraphKernelNodeGetParams(self.as_raw(), &mut p) };
        // Cleared only where the runtime recorded it: a runtime that returned the refusal without
        // recording it would otherwise take another error still waiting to be read.
        // SAFETY (both calls): no arguments; the refusal is not sticky, and is returned below.
        if code == sys::cudaError::cudaErrorInvalidDeviceFunction
            && unsafe { sys::cudaPeekAtLastError() } == sys::cudaError::cudaErrorInvalidDeviceFunction
        {
            unsafe { sys::cudaGetLastError() };
        }
        crate::error::check(code, "cudaGraphKernelNodeGetParams")?;
        Ok(p.func)
    }

    /// Whether this kernel node launches the kernel at `func` (a host stub, or a library's
    /// `cudaKernel_t`): the runtime reports `func` for it, or the kernel's driver handle
    /// (`CUkernel`, with which [`Kernel::launch`] launches through the driver and a capture
    /// records the node). Where the runtime cannot tell (`cudaErrorInvalidDeviceFunction`, a node
    /// recorded from a driver launch it does not map back), the driver's parameters of the node
    /// are compared with that handle.
    #[cfg(feature = "alloc")]
    pub(crate) fn launches(self, func: *const c_void) -> Result<bool> {
        match self.kernel_function() {
            Ok(f) => Ok(f == func || driver_handle(func).is_some_and(|k| k.as_ptr().cast_const() == f)),
            // The refusal is cleared from the thread's last error by kernel_function.
            Err(e) if e.cuda_code() == Some(sys::cudaError::cudaErrorInvalidDeviceFunction) => {
                Ok(match (driver_handle(func), driver_node_kernel(self)?) {
                    (Some(k), Some(node)) => k.as_ptr() == node,
                    _ => false,
                })
            }
            Err(e) => Err(e),
        }
    }

    /// For a kernel node, the value of one of its launch attributes
    /// (`cudaGraphKernelNodeGetAttribute`).
    fn kernel_attribute(self, id: sys::cudaLaunchAttributeID) -> Result<sys::cudaLaunchAttributeValue> {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        // SAFETY: a live node; `val` is writable (64 bytes, the union CUDA writes).
        cuda_call!(unsafe { sys::cudaGraphKernelNodeGetAttribute(self.as_raw(), id, &mut val) })?;
        Ok(val)
    }

    /// For a copy node, its parameters (`cudaGraphMemcpyNodeGetParams`).
    pub fn memcpy_params(self) -> Result<sys::cudaMemcpy3DParms> {
        let mut p = sys::cudaMemcpy3DParms::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphMemcpyNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(p)
    }

    /// For a copy node, the node typed as a [`MemcpyNode`] when its copy is linear
    /// ([`LinearCopy::from_params`]), `None` when it is not.
    pub fn memcpy(self) -> Result<Option<MemcpyNode<'g>>> {
        Ok(LinearCopy::from_params(&self.memcpy_params()?).map(|copy| MemcpyNode { node: self, copy }))
    }

    /// For a memset node, its parameters (`cudaGraphMemsetNodeGetParams`).
    pub fn memset_params(self) -> Result<MemsetParams> {
        let mut p = sys::cudaMemsetParams::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphMemsetNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(MemsetParams::from_raw(&p))
    }
}

/// A kernel node known to launch the kernel with argument tuple `Args`, so its arguments can be
/// replaced with values of the right types. Found with [`Graph::kernel_nodes`].
#[derive(Debug)]
pub struct KernelNode<'g, Args> {
    pub(crate) node: Node<'g>,
    pub(crate) kernel: Kernel<Args>,
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

/// The `CUkernel` a launch of `func` through the driver uses, where there is one.
#[cfg(all(feature = "alloc", cuda_12_8))]
fn driver_handle(func: *const c_void) -> Option<NonNull<c_void>> {
    crate::launch::resolved_kernel(func)
}

#[cfg(all(feature = "alloc", not(cuda_12_8)))]
fn driver_handle(_func: *const c_void) -> Option<NonNull<c_void>> {
    None
}

/// The kernel of a kernel node as the driver holds it (`cuGraphKernelNodeGetParams`): its
/// `CUkernel`, or else its function; `None` where the driver's call is not there.
#[cfg(all(feature = "alloc", cuda_12_8))]
fn driver_node_kernel(node: Node<'_>) -> Result<Option<*mut c_void>> {
    /// `CUDA_KERNEL_NODE_PARAMS_v2` (cuda.h), the form `cuGraphKernelNodeGetParams` fills as of
    /// CUDA 12.0.
    #[repr(C)]
    struct Params {
        func: *mut c_void,
        dims: [core::ffi::c_uint; 7],
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
        kern: *mut c_void,
        ctx: *mut c_void,
    }
    #[cfg(target_pointer_width = "64")]
    const _: () = {
        assert!(core::mem::size_of::<Params>() == 72);
        assert!(core::mem::offset_of!(Params, kernel_params) == 40);
        assert!(core::mem::offset_of!(Params, kern) == 56);
    };
    type GetParams = unsafe extern "C" fn(sys::cudaGraphNode_t, *mut Params) -> core::ffi::c_int;
    let Some(get) = crate::driver_calls::query(c"cuGraphKernelNodeGetParams").1 else {
        return Ok(None);
    };
    // SAFETY: the address of `cuGraphKernelNodeGetParams` as of CUDA 12.0 (the `_v2` form, which
    // fills `CUDA_KERNEL_NODE_PARAMS_v2`), whose signature `GetParams` is.
    let get = unsafe { core::mem::transmute::<*mut c_void, GetParams>(get) };
    let mut p = Params {
        func: core::ptr::null_mut(),
        dims: [0; 7],
        kernel_params: core::ptr::null_mut(),
        extra: core::ptr::null_mut(),
        kern: core::ptr::null_mut(),
        ctx: core::ptr::null_mut(),
    };
    // SAFETY: a live kernel node; `p` is writable and of the layout the call fills.
    if unsafe { get(node.as_raw(), &mut p) } != 0 {
        return Ok(None);
    }
    Ok(Some(if p.kern.is_null() { p.func } else { p.kern }))
}

#[cfg(all(feature = "alloc", not(cuda_12_8)))]
fn driver_node_kernel(_node: Node<'_>) -> Result<Option<*mut c_void>> {
    Ok(None)
}

/// A kernel node's parameters for `kernel` with `config` and the argument addresses `args`.
fn raw_params(kernel: *const c_void, config: &LaunchConfig, args: *mut *mut c_void) -> sys::cudaKernelNodeParams {
    sys::cudaKernelNodeParams {
        func: kernel.cast_mut(),
        gridDim: config.grid.to_raw(),
        blockDim: config.block.to_raw(),
        sharedMemBytes: config.shared_mem_bytes,
        kernelParams: args,
        extra: core::ptr::null_mut(),
    }
}

/// The checks of a kernel node added by hand, as [`Kernel::launch`] makes them: a valid
/// configuration; no attribute CUDA keeps only on launches (refused, named); a cooperative grid
/// that fits the calling thread's current device (the node's) at once.
fn check_new_node(kernel: *const c_void, config: &LaunchConfig, call: &'static str) -> Result<()> {
    config.validate()?;
    if let Some(why) = config.first_refused(|r| r.node) {
        return Err(Error::usage(crate::UsageKind::NotSupported, call, why));
    }
    if config.cooperative {
        crate::launch::check_co_resident(kernel, crate::Device::current()?, config)?;
    }
    Ok(())
}

/// New parameters for an executable graph's kernel node `node`, which launches `kernel`, with
/// `config` and the argument addresses `args`, after the checks a launch of the node would
/// make: `config` sets no attribute (the node keeps those it was made with: each is refused,
/// named), and the new grid and block, with the node's own cooperative and cluster attributes,
/// make a valid launch (a cooperative grid that fits the calling thread's current device at
/// once, a grid that is a multiple of the node's cluster dimensions).
pub(crate) fn exec_kernel_node_params(
    node: Node<'_>,
    kernel: *const c_void,
    config: &LaunchConfig,
    args: *mut *mut c_void,
    call: &'static str,
) -> Result<sys::cudaKernelNodeParams> {
    config.validate()?;
    if let Some(why) = config.first_refused(|r| Some(r.exec)) {
        return Err(Error::invalid(call, why));
    }
    let as_made = with_node_attributes(node, *config)?;
    as_made.validate()?;
    if as_made.cooperative {
        crate::launch::check_co_resident(kernel, crate::Device::current()?, &as_made)?;
    }
    Ok(raw_params(kernel, config, args))
}

/// `config` with the cooperative and cluster attributes kernel node `node` holds.
fn with_node_attributes(node: Node<'_>, mut config: LaunchConfig) -> Result<LaunchConfig> {
    let dims = |id| -> Result<Option<Dim3>> {
        // SAFETY: the union member both cluster ids use (`clusterDim`, `preferredClusterDim`:
        // three unsigned ints at the same place).
        let d = unsafe { node.kernel_attribute(id)?.clusterDim };
        let d = Dim3::new(d.x, d.y, d.z);
        Ok((!d.has_zero() && d != Dim3::new(1, 1, 1)).then_some(d))
    };
    let one = Dim3::new(1, 1, 1);
    // SAFETY: the union member the cooperative id uses.
    config.cooperative = unsafe { node.kernel_attribute(Attribute::Cooperative.id())?.cooperative } != 0;
    config.cluster = dims(Attribute::Cluster(one).id())?;
    if cfg!(cuda_12_8) && config.cluster.is_some() {
        config.preferred_cluster = dims(Attribute::PreferredCluster(one).id())?;
    }
    Ok(config)
}

/// Adds a launch of `kernel` with `config` and `args` to `graph` after `dependencies`
/// (`cudaGraphAddKernelNode`), then sets on the node the attributes of `config` that CUDA keeps
/// on nodes (`cudaGraphKernelNodeSetAttribute`), after [`check_new_node`]. Where setting one
/// fails, the node is destroyed again (`cudaGraphDestroyNode`) and CUDA's error returned: no
/// node is left without the attributes it was asked to have.
///
/// # Safety
/// - `graph` is live for `'g` and holds `dependencies`.
/// - What the arguments point to at each run is owed as
///   [`BodyGraph::add_kernel_node`](super::BodyGraph::add_kernel_node) states.
pub(crate) unsafe fn add_kernel_node<'g, Args: KernelArgs>(
    graph: sys::cudaGraph_t,
    dependencies: &[Node<'g>],
    kernel: Kernel<Args>,
    config: &LaunchConfig,
    mut args: Args,
    call: &'static str,
) -> Result<Node<'g>> {
    check_new_node(kernel.as_raw(), config, call)?;
    let mut ptrs = args.arg_ptrs();
    let params = raw_params(kernel.as_raw(), config, ptrs.as_mut().as_mut_ptr());
    let mut raw: sys::cudaGraphNode_t = core::ptr::null_mut();
    // SAFETY: a live graph; `dependencies` are node handles counted by their length; CUDA copies
    // `params` and the argument values during the call. What the arguments point to at each run
    // is the caller's contract.
    cuda_call!(unsafe {
        sys::cudaGraphAddKernelNode(&mut raw, graph, node_ptrs(dependencies), dependencies.len(), &params)
    })?;
    let node = NonNull::new(raw).map(Node::new).ok_or_else(|| crate::error::null_handle("cudaGraphAddKernelNode"))?;
    let mut set = Ok(());
    config.for_each_attribute(|a| {
        if set.is_ok() {
            let raw = a.to_raw();
            // SAFETY: a live kernel node; CUDA reads the value during the call.
            set = cuda_call!(unsafe { sys::cudaGraphKernelNodeSetAttribute(node.as_raw(), raw.id, &raw.val) });
        }
    });
    if let Err(e) = set {
        // SAFETY: the node made above, which nothing else has seen.
        let code = unsafe { sys::cudaGraphDestroyNode(node.as_raw()) };
        crate::error::record_drop_error(code, "cudaGraphDestroyNode");
        return Err(e);
    }
    Ok(node)
}

/// `dependencies` as CUDA's array: null for none (CUDA reads no array for a zero count).
pub(crate) fn node_ptrs(dependencies: &[Node<'_>]) -> *const sys::cudaGraphNode_t {
    if dependencies.is_empty() {
        core::ptr::null()
    } else {
        // `Node` is a transparent non-null node pointer.
        dependencies.as_ptr().cast()
    }
}

impl Graph {
    /// Adds a launch of `kernel` with `config` and `args` to this graph after `dependencies`
    /// (nodes of this graph), built by hand rather than captured (`cudaGraphAddKernelNode`), and
    /// returns the node: for example the kernel that sets a condition before a conditional node.
    /// The launch attributes of `config` that CUDA keeps on kernel nodes are set on the node
    /// (priority, cluster and preferred cluster dimensions, cooperative, memory-synchronisation
    /// domain), after the checks [`Kernel::launch`] makes (a cooperative grid must fit the calling
    /// thread's current device at once); PDL and the programmatic and launch-completion events
    /// are refused with a usage error naming them (see the [`graph`](super) module). The argument
    /// values are copied during the call, and nothing allocates. Unlike a capture, this works on
    /// a graph that already holds conditional nodes or handles.
    ///
    /// # Safety
    /// - The kernel runs at every launch of every executable graph made from (or updated with)
    ///   this graph, not at this call; for each, the caller owes what
    ///   [`BodyGraph::add_kernel_node`](super::BodyGraph::add_kernel_node) states.
    pub unsafe fn add_kernel_node<'g, Args: KernelArgs>(
        &'g self,
        dependencies: &[Node<'g>],
        kernel: Kernel<Args>,
        config: &LaunchConfig,
        args: Args,
    ) -> Result<Node<'g>> {
        // SAFETY: a live graph, borrowed for the node's lifetime; the caller's contract.
        unsafe { add_kernel_node(self.as_raw(), dependencies, kernel, config, args, "Graph::add_kernel_node") }
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

/// A copy node's work seen as one linear copy (`cudaGraphMemcpyNodeGetParams`): `bytes` bytes from
/// `src` to `dst`. Copies captured from `cudaMemcpyAsync` (every copy of
/// [`memory::copy`](crate::memory::copy)) have this form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinearCopy {
    /// The destination address.
    pub dst: *mut core::ffi::c_void,
    /// The source address.
    pub src: *const core::ffi::c_void,
    /// The number of bytes copied.
    pub bytes: usize,
    /// CUDA's direction of the copy, as captured.
    pub kind: sys::cudaMemcpyKind,
}

impl LinearCopy {
    /// The linear form of a copy node's parameters, or `None` when the copy involves a CUDA array
    /// or more than one row (CUDA can retarget only one-dimensional copies).
    pub fn from_params(p: &sys::cudaMemcpy3DParms) -> Option<LinearCopy> {
        let one_dimensional = p.extent.height <= 1
            && p.extent.depth <= 1
            && p.srcPos.y == 0
            && p.srcPos.z == 0
            && p.dstPos.y == 0
            && p.dstPos.z == 0;
        if !p.srcArray.is_null() || !p.dstArray.is_null() || !one_dimensional || p.extent.width == 0 {
            return None;
        }
        Some(LinearCopy {
            dst: p.dstPtr.ptr.cast::<u8>().wrapping_add(p.dstPos.x).cast(),
            src: p.srcPtr.ptr.cast::<u8>().cast_const().wrapping_add(p.srcPos.x).cast(),
            bytes: p.extent.width,
            kind: p.kind,
        })
    }
}

/// A copy node whose work is one [`LinearCopy`], so that an executable graph can point it at other
/// memory ([`GraphExec::set_memcpy_node`](super::GraphExec::set_memcpy_node)). Found with
/// [`Graph::memcpy_nodes`] or [`Node::memcpy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcpyNode<'g> {
    pub(crate) node: Node<'g>,
    pub(crate) copy: LinearCopy,
}

impl<'g> MemcpyNode<'g> {
    /// The node.
    pub fn node(&self) -> Node<'g> {
        self.node
    }

    /// The copy as it is in the graph (an executable graph's later changes are not seen here).
    pub fn copy(&self) -> LinearCopy {
        self.copy
    }
}

/// A memset node's parameters (`cudaMemsetParams`): `height` rows of `width` elements of
/// `element_size` bytes (1, 2 or 4), rows `pitch` bytes apart, each element set to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemsetParams {
    /// The first byte set.
    pub dst: *mut core::ffi::c_void,
    /// Bytes from one row to the next (unused for one row).
    pub pitch: usize,
    /// The value of each element (its low `element_size` bytes).
    pub value: u32,
    /// Bytes per element: 1, 2 or 4.
    pub element_size: u32,
    /// Elements per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
}

impl MemsetParams {
    fn from_raw(p: &sys::cudaMemsetParams) -> MemsetParams {
        MemsetParams {
            dst: p.dst,
            pitch: p.pitch,
            value: p.value,
            element_size: p.elementSize,
            width: p.width,
            height: p.height,
        }
    }

    /// CUDA's form, after ordo's checks: an element size of 1, 2 or 4 bytes and at least one
    /// element (CUDA supports no empty memset node).
    pub(crate) fn to_raw(self, call: &'static str) -> Result<sys::cudaMemsetParams> {
        if !matches!(self.element_size, 1 | 2 | 4) {
            return Err(Error::invalid(call, "a memset element is 1, 2 or 4 bytes"));
        }
        if self.width == 0 || self.height == 0 {
            return Err(Error::invalid(call, "a memset node sets at least one element"));
        }
        Ok(sys::cudaMemsetParams {
            dst: self.dst,
            pitch: self.pitch,
            value: self.value,
            elementSize: self.element_size,
            width: self.width,
            height: self.height,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn memset(element_size: u32, width: usize, height: usize) -> MemsetParams {
        MemsetParams { dst: core::ptr::null_mut(), pitch: 0, value: 7, element_size, width, height }
    }

    #[test]
    fn a_kind_the_runtime_cannot_name_is_asked_of_the_driver() {
        use sys::cudaError as E;
        use sys::cudaGraphNodeType as T;
        let never = || -> Option<u32> { panic!("the driver is asked only after cudaErrorUnknown") };
        // The runtime's answer, when it has one; its error, other than 999, as it is.
        assert_eq!(kind_or_drivers(E::cudaSuccess, T::cudaGraphNodeTypeKernel, never).unwrap(), NodeKind::Kernel);
        let e = kind_or_drivers(E::cudaErrorInsufficientDriver, T::cudaGraphNodeTypeEmpty, never).unwrap_err();
        assert_eq!(e.cuda().map(|c| c.code()), Some(E::cudaErrorInsufficientDriver), "{e}");
        // 999: the driver's kind (13 is CU_GRAPH_NODE_TYPE_CONDITIONAL, 12 the batch memory
        // operation that the runtime has no name for).
        let kind = |v| kind_or_drivers(E::cudaErrorUnknown, T::cudaGraphNodeTypeEmpty, || Some(v)).unwrap();
        assert_eq!(kind(13), NodeKind::Conditional);
        assert_eq!(kind(0), NodeKind::Kernel);
        assert_eq!(kind(12), NodeKind::Other(12));
        // 999 and no answer from the driver (none here; or it refused): the runtime's error.
        let e = kind_or_drivers(E::cudaErrorUnknown, T::cudaGraphNodeTypeEmpty, || None).unwrap_err();
        assert_eq!(e.cuda().map(|c| c.code()), Some(E::cudaErrorUnknown), "{e}");
        assert!(e.to_string().contains("cudaGraphNodeGetType"), "{e}");
        // Without a driver, the entry-point query finds no cuGraphNodeGetType.
        if !std::path::Path::new("/dev/nvidiactl").exists() {
            assert!(crate::driver_calls::graph_node_get_type().is_none());
        }
    }

    #[test]
    fn memset_params_are_checked_before_cuda() {
        for size in [1, 2, 4] {
            let raw = memset(size, 10, 1).to_raw("t").unwrap();
            assert_eq!((raw.elementSize, raw.width, raw.height, raw.value), (size, 10, 1, 7));
        }
        for size in [0, 3, 8] {
            let e = memset(size, 10, 1).to_raw("t").unwrap_err();
            assert!(e.to_string().contains("1, 2 or 4"), "{e}");
        }
        for (w, h) in [(0, 1), (1, 0)] {
            let e = memset(4, w, h).to_raw("t").unwrap_err();
            assert!(e.to_string().contains("at least one element"), "{e}");
        }
    }

    fn event() -> crate::launch::LaunchEvent {
        crate::launch::LaunchEvent::from_raw(NonNull::dangling().as_ptr()).unwrap()
    }

    /// A kernel node added by hand refuses, before CUDA, each attribute CUDA keeps only on
    /// launches, naming it (the events were dropped without a word before).
    #[test]
    fn a_new_kernel_node_refuses_launch_only_attributes_by_name() {
        let kernel = NonNull::<c_void>::dangling().as_ptr().cast_const();
        let base = LaunchConfig::new(4, 32);
        let mut programmatic = base;
        programmatic.programmatic_event =
            Some(crate::launch::ProgrammaticEvent { event: event(), trigger_at_block_start: false });
        let mut completion = base;
        completion.launch_completion_event = Some(event());
        for (config, name) in [
            (base.with_pdl(true), "cudaLaunchAttributeProgrammaticStreamSerialization"),
            (programmatic, "cudaLaunchAttributeProgrammaticEvent"),
            (completion, "cudaLaunchAttributeLaunchCompletionEvent"),
            (base.with_priority(0).with_pdl(true), "cudaLaunchAttributeProgrammaticStreamSerialization"),
        ] {
            let e = check_new_node(kernel, &config, "t").unwrap_err();
            assert!(
                matches!(&e, Error::Usage(u) if u.kind == crate::UsageKind::NotSupported && u.call == "t"),
                "{e:?}"
            );
            assert!(e.to_string().contains(name), "{e}");
        }
        // Kept on nodes, no device needed to check: let through.
        for config in [
            base.with_priority(0),
            base.with_cluster(2),
            base.with_mem_sync_domain(crate::launch::MemSyncDomain::Remote),
        ] {
            check_new_node(kernel, &config, "t").unwrap();
        }
        assert!(check_new_node(kernel, &LaunchConfig::new(0, 32), "t").is_err(), "validated first");
    }

    /// New arguments for an executable graph's kernel node refuse every attribute, naming it,
    /// before the node or CUDA is asked anything (cooperative, the domain and the events were
    /// dropped without a word before).
    #[test]
    fn new_arguments_for_an_executable_graphs_node_refuse_every_attribute_by_name() {
        let kernel = NonNull::<c_void>::dangling().as_ptr().cast_const();
        // Never touched: every configuration here is refused first.
        let node = Node::new(NonNull::dangling());
        let base = LaunchConfig::new(4, 32);
        let mut completion = base;
        completion.launch_completion_event = Some(event());
        for (config, name) in [
            (base.with_pdl(true), "cudaLaunchAttributeProgrammaticStreamSerialization"),
            (base.with_priority(-1), "cudaLaunchAttributePriority"),
            (base.with_cluster(2), "cudaLaunchAttributeClusterDimension"),
            (base.with_cooperative(true), "cudaLaunchAttributeCooperative"),
            (base.with_mem_sync_domain(crate::launch::MemSyncDomain::Remote), "cudaLaunchAttributeMemSyncDomain"),
            (completion, "cudaLaunchAttributeLaunchCompletionEvent"),
        ] {
            let e = exec_kernel_node_params(node, kernel, &config, core::ptr::null_mut(), "t").unwrap_err();
            assert!(matches!(&e, Error::Usage(u) if u.call == "t"), "{e:?}");
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
