//! A graph's nodes and edges, as CUDA reports them: what each node does, typed kernel nodes whose
//! arguments an executable graph can replace, and the parameters of copy and memset nodes
//! ([`LinearCopy`], [`MemcpyNode`], [`MemsetParams`]), which an executable graph can retarget.

use super::Graph;
use crate::error::{Error, Result, UsageKind};
use crate::launch::{Kernel, LaunchConfig};
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
    /// (seen with 12.9 on driver 580): the runtime cannot name the kind the driver reports. That
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
    pub fn kernel_function(self) -> Result<*const core::ffi::c_void> {
        let mut p = sys::cudaKernelNodeParams::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphKernelNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(p.func)
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

/// A kernel node's parameters for `kernel` with `config` and the argument addresses `args`, after
/// ordo's checks: a valid configuration without launch attributes (a kernel node's parameters
/// carry none; those of a captured node stay as captured).
pub(crate) fn kernel_node_params(
    kernel: *const core::ffi::c_void,
    config: &LaunchConfig,
    args: *mut *mut core::ffi::c_void,
    call: &'static str,
) -> Result<sys::cudaKernelNodeParams> {
    config.validate()?;
    if config.cluster.is_some() || config.pdl || config.priority.is_some() {
        return Err(Error::usage(
            UsageKind::InvalidArgument,
            call,
            "only grid, block, shared memory and arguments can be set on a node; attributes stay as captured",
        ));
    }
    Ok(sys::cudaKernelNodeParams {
        func: kernel.cast_mut(),
        gridDim: sys::dim3 { x: config.grid.x, y: config.grid.y, z: config.grid.z },
        blockDim: sys::dim3 { x: config.block.x, y: config.block.y, z: config.block.z },
        sharedMemBytes: config.shared_mem_bytes,
        kernelParams: args,
        extra: core::ptr::null_mut(),
    })
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
}
