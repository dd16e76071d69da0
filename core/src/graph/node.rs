//! A graph's nodes and edges, as CUDA reports them: what each node does ([`NodeKind`]), the node
//! handle ([`Node`]) and the edges between nodes ([`Edge`]). Typed kernel nodes, and kernel nodes
//! added by hand, are in `node/kernel.rs`; the parameters of copy and memset nodes
//! ([`LinearCopy`], [`MemcpyNode`], [`MemsetParams`]), which an executable graph can retarget, in
//! `node/copy.rs`. Their items are re-exported here.

mod copy;
mod kernel;

pub use copy::{LinearCopy, MemcpyNode, MemsetParams};
pub use kernel::KernelNode;
pub(crate) use kernel::{add_kernel_node, exec_kernel_node_params};

use super::Graph;
use crate::error::Result;
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
    /// [`Kernel::launch`](crate::launch::Kernel::launch), through `cuLaunchKernelEx`) back to a stub: it then answers
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

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
}
