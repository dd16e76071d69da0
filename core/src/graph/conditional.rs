//! Conditional nodes (CUDA 12.3 and later): a WHILE node runs its body graph again and again while
//! a condition value is non-zero, and kernels set that value on the device
//! (`ordo_set_condition` in `include/ordo/graph.cuh`, over `cudaGraphSetConditional`). So a loop
//! whose trip count only the device knows runs inside one graph launch, with no host round trip.
//!
//! - [`Graph::conditional_handle`] makes the handle (`cudaGraphConditionalHandleCreate`);
//! - [`Graph::add_while_node`] adds the node (`cudaGraphAddNode`, `cudaGraphNodeTypeConditional`)
//!   and returns its [`BodyGraph`];
//! - [`BodyGraph::add_kernel_node`] fills the body (`cudaGraphAddKernelNode`): `unsafe`, as a
//!   capture is, since the kernels run at every iteration of every replay.

use super::node::{kernel_node_params, Node};
use super::Graph;
use crate::error::Result;
use crate::launch::{Kernel, KernelArgs, LaunchConfig};
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// The handle of a graph's condition value (`cudaGraphConditionalHandle`), made by
/// [`Graph::conditional_handle`]. Pass it by value to the kernels that set the condition (its
/// device-side type is `ordo_conditional_handle` in `include/ordo/graph.cuh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct ConditionalHandle(sys::cudaGraphConditionalHandle);

impl ConditionalHandle {
    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraphConditionalHandle {
        self.0
    }
}

/// The body of a conditional node: a graph CUDA made with the node and owns (it lives as long as
/// the node, so as long as the graph that holds the node, which this borrows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyGraph<'g> {
    raw: NonNull<sys::CUgraph_st>,
    _graph: PhantomData<&'g Graph>,
}

impl<'g> BodyGraph<'g> {
    /// The raw handle (owned by CUDA: never destroy it).
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraph_t {
        self.raw.as_ptr()
    }

    /// Adds a launch of `kernel` with `config` and `args` to the body, after `dependencies` (nodes
    /// of this body; CUDA refuses others), and returns the node (`cudaGraphAddKernelNode`). Only
    /// grid, block, shared memory and arguments are taken from `config`: a configuration with
    /// launch attributes (PDL, priority, cluster) is refused with a usage error. The argument
    /// values are copied during the call; nothing allocates.
    ///
    /// # Safety
    /// The kernel runs at every iteration of the body, at every launch of every executable graph
    /// made from (or updated with) the graph that holds the body, not at this call. For each such
    /// run the caller owes what [`Kernel::launch`](crate::launch::Kernel::launch) asks of its
    /// arguments, as [`capture`](super::capture)'s contract states it for captured kernels: every
    /// pointer points to memory still allocated while the kernel may access it, large enough for
    /// what the kernel does with `config`, device-accessible, and not accessed by anything else in
    /// a way that races the kernel. A kernel that sets a condition must be the only writer of it
    /// at that time (`cudaGraphSetConditional` calls that race are undefined).
    pub unsafe fn add_kernel_node<Args: KernelArgs>(
        self,
        dependencies: &[Node<'g>],
        kernel: Kernel<Args>,
        config: &LaunchConfig,
        mut args: Args,
    ) -> Result<Node<'g>> {
        let mut ptrs = args.arg_ptrs();
        let params =
            kernel_node_params(kernel.as_raw(), config, ptrs.as_mut().as_mut_ptr(), "BodyGraph::add_kernel_node")?;
        let mut raw: sys::cudaGraphNode_t = core::ptr::null_mut();
        // SAFETY: a live graph; `dependencies` are node handles (`Node` is a transparent
        // non-null node pointer) counted by their length; CUDA copies `params` and the argument
        // values during the call. What the arguments point to at each run is the caller's
        // contract.
        cuda_call!(unsafe {
            sys::cudaGraphAddKernelNode(
                &mut raw,
                self.as_raw(),
                dependencies.as_ptr().cast(),
                dependencies.len(),
                &params,
            )
        })?;
        NonNull::new(raw).map(Node::new).ok_or_else(|| crate::error::null_handle("cudaGraphAddKernelNode"))
    }
}

impl Graph {
    /// A handle for a condition value of this graph (`cudaGraphConditionalHandleCreate`), to give
    /// to a conditional node of this graph (or of one of its bodies) and to the kernels that set
    /// the value. With `Some(value)` the condition is set to `value` at the start of every launch
    /// (`cudaGraphCondAssignDefault`); with `None` it is not reset, so a kernel upstream of the
    /// node must set it. A handle that no conditional node uses may make instantiation fail.
    pub fn conditional_handle(&self, default: Option<u32>) -> Result<ConditionalHandle> {
        let (value, flags) = match default {
            Some(value) => (value, sys::cudaGraphConditionalHandleFlags::cudaGraphCondAssignDefault.0),
            None => (0, 0),
        };
        let mut raw: sys::cudaGraphConditionalHandle = 0;
        // SAFETY: a live graph; `raw` is writable.
        cuda_call!(unsafe { sys::cudaGraphConditionalHandleCreate(&mut raw, self.as_raw(), value, flags) })?;
        Ok(ConditionalHandle(raw))
    }

    /// Adds a WHILE node after `dependencies` (nodes of this graph): at each launch it runs its
    /// body while the condition of `handle` is non-zero, testing it before each run (so not at all
    /// when it starts at 0). Returns the node and its empty body, to fill with
    /// [`BodyGraph::add_kernel_node`]; a kernel in the body ends the loop by setting the
    /// condition to 0. `cudaGraphAddNode` with a `cudaGraphNodeTypeConditional` node of type
    /// `cudaGraphCondTypeWhile`.
    ///
    /// Safe: the node adds no work by itself; the work of its body is added under
    /// [`BodyGraph::add_kernel_node`]'s contract. A loop that never ends is a hang, not undefined
    /// behaviour.
    pub fn add_while_node(
        &self,
        dependencies: &[Node<'_>],
        handle: ConditionalHandle,
    ) -> Result<(Node<'_>, BodyGraph<'_>)> {
        let mut params = sys::cudaGraphNodeParams {
            type_: sys::cudaGraphNodeType::cudaGraphNodeTypeConditional,
            ..Default::default()
        };
        params.__bindgen_anon_1.conditional = sys::cudaConditionalNodeParams {
            handle: handle.as_raw(),
            type_: sys::cudaGraphConditionalNodeType::cudaGraphCondTypeWhile,
            size: 1,
            phGraph_out: core::ptr::null_mut(),
        };
        let mut raw: sys::cudaGraphNode_t = core::ptr::null_mut();
        // SAFETY: a live graph; `dependencies` are node handles (`Node` is a transparent non-null
        // node pointer) counted by their length; null edge data means default edges; `params` is
        // writable (CUDA writes the body array's address into it).
        cuda_call!(unsafe {
            sys::graph_add_node(
                &mut raw,
                self.as_raw(),
                dependencies.as_ptr().cast(),
                core::ptr::null(),
                dependencies.len(),
                &mut params,
            )
        })?;
        let node = NonNull::new(raw).map(Node::new).ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))?;
        // SAFETY: the union member written above; CUDA filled its output array (one graph for a
        // WHILE node), valid while the node lives.
        let bodies = unsafe { params.__bindgen_anon_1.conditional.phGraph_out };
        // SAFETY: when not null, the CUDA-owned array holds `size` (1) graphs.
        let body = NonNull::new(bodies).and_then(|bodies| NonNull::new(unsafe { *bodies.as_ptr() }));
        let body = body.ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))?;
        Ok((node, BodyGraph { raw: body, _graph: PhantomData }))
    }
}
