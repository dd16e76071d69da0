//! A graph's nodes and edges, as CUDA reports them: what each node does, and typed kernel nodes
//! whose arguments an executable graph can replace.

use super::Graph;
use crate::error::Result;
use crate::launch::Kernel;
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
    /// Crate-internal: `raw` must be a node of that graph.
    #[cfg(feature = "alloc")]
    pub(crate) fn new(raw: NonNull<sys::CUgraphNode_st>) -> Node<'g> {
        Node { raw, _graph: PhantomData }
    }

    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraphNode_t {
        self.raw.as_ptr()
    }

    /// What the node does.
    pub fn kind(self) -> Result<NodeKind> {
        let mut t = sys::cudaGraphNodeType::cudaGraphNodeTypeEmpty;
        // SAFETY: a live node; `t` is writable.
        cuda_call!(unsafe { sys::cudaGraphNodeGetType(self.as_raw(), &mut t) })?;
        Ok(NodeKind::from_raw(t))
    }

    /// For a kernel node, the kernel's host-stub address (`cudaGraphKernelNodeGetParams`).
    pub fn kernel_function(self) -> Result<*const core::ffi::c_void> {
        let mut p = sys::cudaKernelNodeParams::default();
        // SAFETY: a live node; `p` is writable.
        cuda_call!(unsafe { sys::cudaGraphKernelNodeGetParams(self.as_raw(), &mut p) })?;
        Ok(p.func)
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
