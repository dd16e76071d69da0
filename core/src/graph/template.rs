//! [`Graph`]: a graph of work (`cudaGraph_t`), as captured; instantiate it into a
//! [`GraphExec`](super::GraphExec) to launch it.

#[cfg(feature = "alloc")]
use super::node::{Edge, KernelNode, MemcpyNode, Node, NodeKind};
use super::{GraphExec, InstantiateFlags};
use crate::error::{Error, Result};
#[cfg(feature = "alloc")]
use crate::launch::{Kernel, KernelArgs};
use crate::stream::StreamRef;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

owned_handle! {
    /// An owned graph (`cudaGraph_t`), destroyed on drop (a failure is kept for
    /// [`take_drop_errors`](crate::error::take_drop_errors)).
    ///
    /// A graph does not borrow what its work uses: the raw pointers, events and kernels of its nodes
    /// are what [`capture`](super::capture) recorded, and the `unsafe` capture's contract is what keeps
    /// them valid at every launch of an executable graph made from it. The exception is the host state
    /// ordo itself puts in a graph (the closures of [`launch_host_fn`](crate::host_fn::launch_host_fn),
    /// the staging slots of [`StagingRing::submit`](crate::staging::StagingRing::submit)): the graph
    /// owns it through CUDA user objects, and so does every executable graph instantiated from it; it
    /// is freed once the last of them is destroyed.
    ///
    /// [`Graph::new`] makes an empty graph; work is added by a capture, or, for a branch or a loop
    /// run on the device, with [`Graph::add_conditional_node`] and the calls that fill its bodies
    /// ([`BodyGraph::add_kernel_node`](super::BodyGraph::add_kernel_node),
    /// [`BodyGraph::capture`](super::BodyGraph::capture): `unsafe`, with the capture's replay
    /// contract). A graph that holds a conditional node cannot be copied (CUDA refuses
    /// [`Graph::try_clone`], so [`capture_into`](super::capture_into) refuses it too).
    ///
    /// Dropping it destroys the graph; executable graphs made from it keep working, and the user
    /// objects it holds are released (their host state freed once nothing else holds them).
    #[derive(Debug)]
    pub struct Graph(sys::CUgraph_st) = sys::cudaGraph_t, destroyed by cudaGraphDestroy;
}

// SAFETY: graphs may be used from any thread, one thread at a time (`&mut` for changes; not
// `Sync`: CUDA does not synchronise calls on one graph, read-only ones included).
unsafe impl Send for Graph {}

impl Graph {
    /// An empty graph (`cudaGraphCreate`).
    pub fn new() -> Result<Graph> {
        let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaGraphCreate(&mut raw, 0) })?;
        NonNull::new(raw).map(|raw| Graph { raw }).ok_or_else(|| crate::error::null_handle("cudaGraphCreate"))
    }

    /// Owns a graph that a capture returned.
    pub(crate) fn from_captured(raw: NonNull<sys::CUgraph_st>) -> Graph {
        Graph { raw }
    }

    /// A copy of the graph (`cudaGraphClone`): the same nodes and edges, under new handles, and
    /// its own references to the host state ordo put in the graph. Launches of executable graphs
    /// made from the copy replay the same captured work: the contract of the capture that made
    /// this graph covers them too.
    pub fn try_clone(&self) -> Result<Graph> {
        let mut raw: sys::cudaGraph_t = core::ptr::null_mut();
        // SAFETY: a live graph; `raw` is writable.
        cuda_call!(unsafe { sys::cudaGraphClone(&mut raw, self.as_raw()) })?;
        NonNull::new(raw).map(|raw| Graph { raw }).ok_or_else(|| crate::error::null_handle("cudaGraphClone"))
    }

    /// Number of nodes (`cudaGraphGetNodes`).
    pub fn node_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count.
        cuda_call!(unsafe { sys::cudaGraphGetNodes(self.as_raw(), core::ptr::null_mut(), &mut n) })?;
        Ok(n)
    }

    /// The nodes (`cudaGraphGetNodes`); empty for an empty graph.
    #[cfg(feature = "alloc")]
    pub fn nodes(&self) -> Result<alloc::vec::Vec<Node<'_>>> {
        Ok(raw_nodes(self.as_raw())?.into_iter().filter_map(NonNull::new).map(Node::new).collect())
    }

    /// The nodes that depend on nothing (`cudaGraphGetRootNodes`): where each replay starts.
    #[cfg(feature = "alloc")]
    pub fn root_nodes(&self) -> Result<alloc::vec::Vec<Node<'_>>> {
        let mut n = 0usize;
        // SAFETY: a live graph; a null array asks for the count.
        cuda_call!(unsafe { sys::cudaGraphGetRootNodes(self.as_raw(), core::ptr::null_mut(), &mut n) })?;
        if n == 0 {
            // CUDA refuses the array form with a zero count: nothing to ask.
            return Ok(alloc::vec::Vec::new());
        }
        let mut raw = alloc::vec![core::ptr::null_mut(); n];
        // SAFETY: an array of `n` elements; CUDA writes at most `n` and stores the count in `n`.
        cuda_call!(unsafe { sys::cudaGraphGetRootNodes(self.as_raw(), raw.as_mut_ptr(), &mut n) })?;
        raw.truncate(n);
        Ok(raw.into_iter().filter_map(NonNull::new).map(Node::new).collect())
    }

    /// The copy nodes whose copy is linear ([`LinearCopy`](super::LinearCopy)), in CUDA's node
    /// order, each with its copy as captured: the nodes an executable graph can point at other
    /// memory with [`GraphExec::set_memcpy_node`].
    #[cfg(feature = "alloc")]
    pub fn memcpy_nodes(&self) -> Result<alloc::vec::Vec<MemcpyNode<'_>>> {
        let mut out = alloc::vec::Vec::new();
        for node in self.nodes()? {
            if node.kind()? == NodeKind::Memcpy {
                out.extend(node.memcpy()?);
            }
        }
        Ok(out)
    }

    /// The nodes nothing depends on (`cudaGraphNodeGetDependentNodes` count zero).
    #[cfg(feature = "alloc")]
    pub fn leaf_nodes(&self) -> Result<alloc::vec::Vec<Node<'_>>> {
        let mut leaves = alloc::vec::Vec::new();
        for node in self.nodes()? {
            if is_leaf(node.as_raw())? {
                leaves.push(node);
            }
        }
        Ok(leaves)
    }

    /// The kernel nodes that launch `kernel`, typed by its arguments, in CUDA's node order: those
    /// the runtime reports with `kernel`'s address, and those recorded from its launches through
    /// the driver (with its `CUkernel`).
    #[cfg(feature = "alloc")]
    pub fn kernel_nodes<Args>(&self, kernel: Kernel<Args>) -> Result<alloc::vec::Vec<KernelNode<'_, Args>>>
    where
        Args: KernelArgs,
    {
        let mut out = alloc::vec::Vec::new();
        for node in self.nodes()? {
            if node.kind()? == NodeKind::Kernel && node.launches(kernel.as_raw())? {
                out.push(KernelNode { node, kernel });
            }
        }
        Ok(out)
    }

    /// Number of edges (`cudaGraphGetEdges`).
    pub fn edge_count(&self) -> Result<usize> {
        let mut n = 0usize;
        // SAFETY: a live graph; null arrays ask for the count.
        cuda_call!(unsafe {
            sys::compat::cudaGraphGetEdges(
                self.as_raw(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                &mut n,
            )
        })?;
        Ok(n)
    }

    /// All edges with their data (`cudaGraphGetEdges`); empty for a graph without edges.
    #[cfg(feature = "alloc")]
    pub fn edges(&self) -> Result<alloc::vec::Vec<Edge>> {
        let mut n = self.edge_count()?;
        if n == 0 {
            // CUDA refuses the array form with a zero count: nothing to ask.
            return Ok(alloc::vec::Vec::new());
        }
        let mut from = alloc::vec![core::ptr::null_mut(); n];
        let mut to = alloc::vec![core::ptr::null_mut(); n];
        let mut data = alloc::vec![sys::cudaGraphEdgeData::default(); n];
        // SAFETY: arrays of `n` elements; CUDA writes at most `n` and stores the count in `n`.
        cuda_call!(unsafe {
            sys::compat::cudaGraphGetEdges(self.as_raw(), from.as_mut_ptr(), to.as_mut_ptr(), data.as_mut_ptr(), &mut n)
        })?;
        let n = n.min(from.len());
        Ok(from.into_iter().zip(to).zip(data).take(n).map(|((from, to), data)| Edge { from, to, data }).collect())
    }

    /// Instantiates the graph for launching (`cudaGraphInstantiateWithFlags`). `UPLOAD` needs a
    /// stream: it is refused here with a usage error; use [`Graph::instantiate_and_upload`].
    /// `DEVICE_LAUNCH` with `AUTO_FREE_ON_LAUNCH` is refused with a usage error too (CUDA does not
    /// allow the two together).
    ///
    /// The executable graph is independent of this one afterwards (dropping the graph leaves it
    /// launchable) and holds its own reference to the host state ordo put in the graph. Its
    /// launches replay the captured work: the contract of the capture that made the graph covers
    /// them.
    pub fn instantiate(&self, flags: InstantiateFlags) -> Result<GraphExec> {
        flags.check("Graph::instantiate")?;
        if flags.contains(InstantiateFlags::UPLOAD) {
            return Err(Error::invalid(
                "Graph::instantiate",
                "UPLOAD needs a stream: use Graph::instantiate_and_upload",
            ));
        }
        let mut raw: sys::cudaGraphExec_t = core::ptr::null_mut();
        // SAFETY: a live graph; `raw` is writable.
        cuda_call!(unsafe { sys::cudaGraphInstantiateWithFlags(&mut raw, self.as_raw(), flags.bits() as _) })?;
        GraphExec::from_instantiated(raw, "cudaGraphInstantiateWithFlags")
    }

    /// Instantiates the graph and uploads it on `stream` as part of instantiation
    /// (`cudaGraphInstantiateWithParams` with `cudaGraphInstantiateFlagUpload`), so its first
    /// launch on that stream pays no upload. As [`Graph::instantiate`] otherwise.
    pub fn instantiate_and_upload(&self, flags: InstantiateFlags, stream: StreamRef<'_>) -> Result<GraphExec> {
        flags.check("Graph::instantiate_and_upload")?;
        let mut params = sys::cudaGraphInstantiateParams {
            flags: (flags | InstantiateFlags::UPLOAD).bits() as _,
            uploadStream: stream.as_raw(),
            errNode_out: core::ptr::null_mut(),
            result_out: sys::cudaGraphInstantiateResult::cudaGraphInstantiateSuccess,
        };
        let mut raw: sys::cudaGraphExec_t = core::ptr::null_mut();
        // SAFETY: a live graph and stream; `params` and `raw` are writable.
        cuda_call!(unsafe { sys::cudaGraphInstantiateWithParams(&mut raw, self.as_raw(), &mut params) })?;
        GraphExec::from_instantiated(raw, "cudaGraphInstantiateWithParams")
    }

    /// Writes a Graphviz DOT description to `path` (`cudaGraphDebugDotPrint`), verbose.
    pub fn debug_dot(&self, path: &core::ffi::CStr) -> Result<()> {
        // SAFETY: a live graph; a NUL-terminated path.
        cuda_call!(unsafe {
            sys::cudaGraphDebugDotPrint(
                self.as_raw(),
                path.as_ptr(),
                sys::cudaGraphDebugDotFlags::cudaGraphDebugDotFlagsVerbose.0 as core::ffi::c_uint,
            )
        })
    }
}

/// The raw nodes of `graph` (`cudaGraphGetNodes`): the count first, then the array (CUDA refuses
/// the array form with a zero count, so an empty graph makes one call).
#[cfg(feature = "alloc")]
pub(crate) fn raw_nodes(graph: sys::cudaGraph_t) -> Result<alloc::vec::Vec<sys::cudaGraphNode_t>> {
    let mut n = 0usize;
    // SAFETY: a live graph (the caller's); a null array asks for the count.
    cuda_call!(unsafe { sys::cudaGraphGetNodes(graph, core::ptr::null_mut(), &mut n) })?;
    if n == 0 {
        return Ok(alloc::vec::Vec::new());
    }
    let mut raw = alloc::vec![core::ptr::null_mut(); n];
    // SAFETY: an array of `n` elements; CUDA writes at most `n` and stores the count in `n`.
    cuda_call!(unsafe { sys::cudaGraphGetNodes(graph, raw.as_mut_ptr(), &mut n) })?;
    raw.truncate(n);
    Ok(raw)
}

/// Whether nothing depends on `node` (`cudaGraphNodeGetDependentNodes` count zero).
#[cfg(feature = "alloc")]
pub(crate) fn is_leaf(node: sys::cudaGraphNode_t) -> Result<bool> {
    let mut n = 0usize;
    // SAFETY: a live node (the caller's); null arrays ask for the count.
    cuda_call!(unsafe {
        sys::compat::cudaGraphNodeGetDependentNodes(node, core::ptr::null_mut(), core::ptr::null_mut(), &mut n)
    })?;
    Ok(n == 0)
}
