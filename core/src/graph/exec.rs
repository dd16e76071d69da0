//! [`GraphExec`]: an executable graph (`cudaGraphExec_t`), launched on a stream, and changed in
//! place without re-instantiating: whole-graph update ([`UpdateOutcome`]), kernel arguments, copy
//! and memset nodes pointed at other memory, nodes enabled and disabled.

use super::node::{exec_kernel_node_params, KernelNode, MemcpyNode, MemsetParams, Node};
use super::Graph;
use crate::error::{Error, Result};
use crate::launch::{KernelArgs, LaunchConfig};
use crate::memory::DeviceCopy;
use crate::stream::StreamRef;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

owned_handle! {
    /// An owned executable graph (`cudaGraphExec_t`), destroyed on drop (a failure is kept for
    /// [`take_drop_errors`](crate::error::take_drop_errors)).
    ///
    /// Its launches replay the work captured into the graph it was instantiated from (or last
    /// [updated](GraphExec::update) with): the same pointers, events and kernels. Launching is safe
    /// because making such a graph is not: the contract of [`capture`](super::capture) covers every
    /// launch. It holds its own reference to the host state ordo put into that graph (host-function
    /// closures, staging slots) and to the SM partitions it was captured on
    /// ([`partition`](crate::partition#lifetimes)), so dropping the graph, the partition or its
    /// streams first is fine.
    ///
    /// Dropping it destroys it; CUDA defers the release of what launches still running use (their user
    /// objects included) until those launches complete.
    #[derive(Debug)]
    pub struct GraphExec(sys::CUgraphExec_st) = sys::cudaGraphExec_t, destroyed by cudaGraphExecDestroy;
}

// SAFETY: executable graphs may be launched and destroyed from any thread (not `Sync`: updates
// take `&mut`, and CUDA does not synchronise calls on one executable graph).
unsafe impl Send for GraphExec {}

bitflags::bitflags! {
    /// `cudaGraphInstantiateWithFlags` flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct InstantiateFlags: u64 {
        /// Free memory allocated by the graph's allocation nodes each time it is launched again.
        const AUTO_FREE_ON_LAUNCH = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagAutoFreeOnLaunch.0 as u64;
        /// Upload the graph to the device as part of instantiation (`cudaGraphInstantiateFlagUpload`):
        /// needs a stream, so only [`Graph::instantiate_and_upload`] takes it.
        const UPLOAD = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagUpload.0 as u64;
        /// Make the executable graph launchable from the device as well as from the host
        /// (`cudaGraphInstantiateFlagDeviceLaunch`): only kernel, memset and device-memory copy
        /// nodes, all on one device; it must be [uploaded](GraphExec::upload) (or launched from the
        /// host) before a kernel launches it. Not with `AUTO_FREE_ON_LAUNCH`.
        const DEVICE_LAUNCH = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagDeviceLaunch.0 as u64;
        /// Launch nodes in their captured priority order.
        const USE_NODE_PRIORITY = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagUseNodePriority.0 as u64;
    }
}

impl InstantiateFlags {
    /// ordo's check before CUDA is called: `DEVICE_LAUNCH` cannot be combined with
    /// `AUTO_FREE_ON_LAUNCH` (CUDA's rule, `cudaGraphInstantiateFlags`).
    pub(crate) fn check(self, call: &'static str) -> Result<()> {
        if self.contains(InstantiateFlags::DEVICE_LAUNCH | InstantiateFlags::AUTO_FREE_ON_LAUNCH) {
            return Err(Error::invalid(call, "DEVICE_LAUNCH cannot be combined with AUTO_FREE_ON_LAUNCH"));
        }
        Ok(())
    }
}

/// The nodes a refused [`GraphExec::update`] names (`cudaGraphExecUpdateResultInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateNodes {
    /// The node of the new graph that could not be updated (null when none is named).
    pub node: sys::cudaGraphNode_t,
    /// The node of the executable graph it was matched to (null when none).
    pub from_node: sys::cudaGraphNode_t,
}

/// What [`GraphExec::update`] did: updated in place, or which kind of change CUDA refused
/// (`cudaGraphExecUpdateResult`). After a refusal the executable graph is unchanged and still
/// launchable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Updated: later launches run the new graph's work.
    Updated,
    /// Nodes or edges were added or removed.
    TopologyChanged,
    /// A node's type changed.
    NodeTypeChanged(UpdateNodes),
    /// A kernel node's function changed.
    FunctionChanged(UpdateNodes),
    /// A node's parameters changed in a way that cannot be updated (a copy's direction or memory
    /// kind, for example).
    ParametersChanged(UpdateNodes),
    /// Something in the graph does not support update.
    NotSupported(UpdateNodes),
    /// A kernel's function changed in an unsupported way.
    UnsupportedFunctionChange(UpdateNodes),
    /// A node's attributes changed in a way that cannot be updated.
    AttributesChanged(UpdateNodes),
    /// Refused for another reason (`cudaGraphExecUpdateError`, or a value a later CUDA adds).
    Other(sys::cudaGraphExecUpdateResult, UpdateNodes),
}

impl UpdateOutcome {
    /// The outcome CUDA reported in `info`.
    pub fn from_info(info: &sys::cudaGraphExecUpdateResultInfo) -> UpdateOutcome {
        use sys::cudaGraphExecUpdateResult as R;
        let nodes = UpdateNodes { node: info.errorNode, from_node: info.errorFromNode };
        match info.result {
            R::cudaGraphExecUpdateSuccess => UpdateOutcome::Updated,
            R::cudaGraphExecUpdateErrorTopologyChanged => UpdateOutcome::TopologyChanged,
            R::cudaGraphExecUpdateErrorNodeTypeChanged => UpdateOutcome::NodeTypeChanged(nodes),
            R::cudaGraphExecUpdateErrorFunctionChanged => UpdateOutcome::FunctionChanged(nodes),
            R::cudaGraphExecUpdateErrorParametersChanged => UpdateOutcome::ParametersChanged(nodes),
            R::cudaGraphExecUpdateErrorNotSupported => UpdateOutcome::NotSupported(nodes),
            R::cudaGraphExecUpdateErrorUnsupportedFunctionChange => UpdateOutcome::UnsupportedFunctionChange(nodes),
            R::cudaGraphExecUpdateErrorAttributesChanged => UpdateOutcome::AttributesChanged(nodes),
            other => UpdateOutcome::Other(other, nodes),
        }
    }

    /// Whether the executable graph was updated.
    pub fn is_updated(&self) -> bool {
        matches!(self, UpdateOutcome::Updated)
    }

    /// The nodes CUDA named for a refusal (`None` when updated or when the topology changed).
    pub fn nodes(&self) -> Option<UpdateNodes> {
        match *self {
            UpdateOutcome::Updated | UpdateOutcome::TopologyChanged => None,
            UpdateOutcome::NodeTypeChanged(n)
            | UpdateOutcome::FunctionChanged(n)
            | UpdateOutcome::ParametersChanged(n)
            | UpdateOutcome::NotSupported(n)
            | UpdateOutcome::UnsupportedFunctionChange(n)
            | UpdateOutcome::AttributesChanged(n)
            | UpdateOutcome::Other(_, n) => Some(n),
        }
    }

    /// The outcome in words.
    pub fn reason(&self) -> &'static str {
        match self {
            UpdateOutcome::Updated => "updated",
            UpdateOutcome::TopologyChanged => "the graph's topology changed (nodes or edges added or removed)",
            UpdateOutcome::NodeTypeChanged(_) => "a node's type changed",
            UpdateOutcome::FunctionChanged(_) => "a kernel node's function changed",
            UpdateOutcome::ParametersChanged(_) => "a node's parameters changed in a way that cannot be updated",
            UpdateOutcome::NotSupported(_) => "something in the graph does not support update",
            UpdateOutcome::UnsupportedFunctionChange(_) => "a kernel's function changed in an unsupported way",
            UpdateOutcome::AttributesChanged(_) => "a node's attributes changed in a way that cannot be updated",
            UpdateOutcome::Other(..) => "update refused",
        }
    }
}

impl GraphExec {
    /// Owns an executable graph that an instantiate call (`call`) returned.
    pub(crate) fn from_instantiated(raw: sys::cudaGraphExec_t, call: &'static str) -> Result<GraphExec> {
        NonNull::new(raw).map(|raw| GraphExec { raw }).ok_or_else(|| crate::error::null_handle(call))
    }

    /// Launches the graph on `stream`: the driver's `cuGraphLaunch` where it is there, else or
    /// where the driver refuses it `cudaGraphLaunch`, whose error is the one reported. One call,
    /// no allocation. The launch replays the captured work (see the type's documentation for why
    /// this is safe).
    #[inline(always)]
    pub fn launch(&self, stream: StreamRef<'_>) -> Result<()> {
        #[cfg(cuda_12_8)]
        if let Some(launch) = crate::driver_calls::graph_launch() {
            // SAFETY: live handles (CUgraphExec and CUstream are these); the replay's contract
            // as below.
            if unsafe { launch(self.as_raw(), stream.as_raw()) } == 0 {
                return Ok(());
            }
        }
        // SAFETY: live handles. What the replayed work touches is owed by the capture contract.
        cuda_call!(unsafe { sys::cudaGraphLaunch(self.as_raw(), stream.as_raw()) })
    }

    /// Updates this executable graph in place to match `graph` (`cudaGraphExecUpdate`): same
    /// topology, new parameters. The outcome says whether it was updated or which kind of change
    /// CUDA refused (then the executable graph is unchanged and still launchable); `Err` is kept
    /// for CUDA errors other than a refused update.
    ///
    /// On success the later launches of this executable graph run `graph`'s work: its pointers,
    /// events and kernels, which the contract of the capture that made `graph` covers (it names
    /// every executable graph updated with the graph); the work this one was made from is no
    /// longer used once the launches already enqueued have completed. CUDA replaces this
    /// executable graph's references to host state with `graph`'s (ordo's host-function closures
    /// and staging slots), releasing the old ones once earlier launches have finished, so it stays
    /// valid after `graph` is dropped.
    pub fn update(&mut self, graph: &Graph) -> Result<UpdateOutcome> {
        let mut info = sys::cudaGraphExecUpdateResultInfo {
            result: sys::cudaGraphExecUpdateResult::cudaGraphExecUpdateSuccess,
            errorNode: core::ptr::null_mut(),
            errorFromNode: core::ptr::null_mut(),
        };
        // SAFETY: live handles; `info` is writable.
        let status = cuda_call!(
            unsafe { sys::cudaGraphExecUpdate(self.as_raw(), graph.as_raw(), &mut info) },
            answers: cudaErrorGraphExecUpdateFailure
        )?;
        if status == sys::cudaError::cudaErrorGraphExecUpdateFailure {
            // SAFETY: clears the error the failed update left in the last-error slot.
            unsafe { sys::cudaGetLastError() };
            return Ok(match UpdateOutcome::from_info(&info) {
                // A failure reported as success names no reason: keep it a refusal.
                UpdateOutcome::Updated => UpdateOutcome::Other(
                    info.result,
                    UpdateNodes { node: info.errorNode, from_node: info.errorFromNode },
                ),
                outcome => outcome,
            });
        }
        Ok(UpdateOutcome::Updated)
    }

    /// Replaces the launch configuration and arguments of a kernel node in this executable graph
    /// (`cudaGraphExecKernelNodeSetParams`): new pointers or scalars for a captured kernel, without
    /// re-instantiating. `node` comes from the graph this was instantiated from (CUDA refuses
    /// another graph's node). The node keeps the launch attributes it was made with: a `config`
    /// that sets one is refused with a usage error naming it, and the new grid is checked against
    /// the node's own (a cooperative grid must fit the calling thread's current device at once,
    /// a clustered grid be a multiple of the cluster). The argument values are copied during the
    /// call.
    ///
    /// # Safety
    /// The kernel runs with these arguments at every later launch of this executable graph (until
    /// they are replaced again, by this call or by [`update`](Self::update)), not at this call.
    /// For each such launch the caller owes what [`Kernel::launch`](crate::launch::Kernel::launch)
    /// asks of its arguments, at the time the launch runs on the device: every pointer points to
    /// memory that is still allocated (not freed and reused) for as long as the kernel may access
    /// it, large enough for what the kernel does with `config`, accessible from the device the
    /// graph runs on, and not accessed by anything else in a way that races the kernel's accesses.
    pub unsafe fn set_kernel_node_args<Args: KernelArgs>(
        &mut self,
        node: KernelNode<'_, Args>,
        config: &LaunchConfig,
        mut args: Args,
    ) -> Result<()> {
        let mut ptrs = args.arg_ptrs();
        let params = exec_kernel_node_params(
            node.node,
            node.kernel.as_raw(),
            config,
            ptrs.as_mut().as_mut_ptr(),
            "GraphExec::set_kernel_node_args",
        )?;
        // SAFETY: live handles; CUDA copies the argument values during the call. What they point
        // to at each later launch is the caller's contract.
        cuda_call!(unsafe { sys::cudaGraphExecKernelNodeSetParams(self.as_raw(), node.node.as_raw(), &params) })
    }

    /// Points a copy node of this executable graph at other memory
    /// (`cudaGraphExecMemcpyNodeSetParams1D`): `len` elements from `src` to `dst`, in the direction
    /// the node was captured with. `node` comes from the graph this was instantiated from (CUDA
    /// refuses another graph's node). CUDA refuses (`cudaErrorInvalidValue`) memory of another kind
    /// or context than the captured copy's (pinned host memory for pinned host memory, device
    /// memory of the same device for device memory). The graph's `node` itself is unchanged.
    ///
    /// # Safety
    /// The copy runs with these pointers at every later launch of this executable graph (until
    /// they are replaced again, by this call or by [`update`](Self::update)), not at this call.
    /// For each such launch the caller owes, at the time the copy runs: `src` and `dst` each point
    /// to `len` elements of memory that is still allocated (not freed and reused), of the kind the
    /// captured copy used, and not accessed by anything else in a way that races the copy.
    pub unsafe fn set_memcpy_node<T: DeviceCopy>(
        &mut self,
        node: MemcpyNode<'_>,
        dst: *mut T,
        src: *const T,
        len: usize,
    ) -> Result<()> {
        const CALL: &str = "GraphExec::set_memcpy_node";
        let bytes = len.checked_mul(core::mem::size_of::<T>()).ok_or(Error::invalid(CALL, "size overflows usize"))?;
        if bytes == 0 {
            return Err(Error::invalid(CALL, "CUDA supports no empty copy node"));
        }
        // SAFETY: live handles; what the pointers address at each later launch is the caller's
        // contract.
        cuda_call!(unsafe {
            sys::cudaGraphExecMemcpyNodeSetParams1D(
                self.as_raw(),
                node.node().as_raw(),
                dst.cast(),
                src.cast(),
                bytes,
                node.copy().kind,
            )
        })
    }

    /// Replaces a memset node's destination and value in this executable graph
    /// (`cudaGraphExecMemsetNodeSetParams`). `node` comes from the graph this was instantiated
    /// from; start from its [`memset_params`](Node::memset_params) and change `dst` and `value`:
    /// CUDA refuses a destination of another kind of allocation or context than the captured one,
    /// any change of height, and other changes of shape that do not fit the node's resources.
    /// ordo refuses an element size other than 1, 2 or 4 and an empty memset before calling CUDA.
    ///
    /// # Safety
    /// The memset runs with these parameters at every later launch of this executable graph (until
    /// replaced again), not at this call. For each such launch the caller owes, at the time it
    /// runs: `params` describes memory (`height` rows of `width` elements, `pitch` bytes apart)
    /// that is still allocated, device-accessible, and not accessed by anything else in a way that
    /// races the memset.
    pub unsafe fn set_memset_node(&mut self, node: Node<'_>, params: &MemsetParams) -> Result<()> {
        let raw = params.to_raw("GraphExec::set_memset_node")?;
        // SAFETY: live handles; CUDA copies `raw` during the call. What it addresses at each later
        // launch is the caller's contract.
        cuda_call!(unsafe { sys::cudaGraphExecMemsetNodeSetParams(self.as_raw(), node.as_raw(), &raw) })
    }

    /// Enables or disables a node of this executable graph for its later launches
    /// (`cudaGraphNodeSetEnabled`). A disabled node does nothing (as an empty node) and keeps its
    /// place in the graph's order and its parameters; enabling it again restores its work. CUDA
    /// supports kernel, memset and copy nodes (others: `cudaErrorInvalidValue`). `node` comes from
    /// the graph this was instantiated from.
    ///
    /// Safe: a disabled node's work simply does not happen, and enabled work is the captured work,
    /// which the capture's contract covers.
    pub fn set_node_enabled(&mut self, node: Node<'_>, enabled: bool) -> Result<()> {
        // SAFETY: live handles.
        cuda_call!(unsafe { sys::cudaGraphNodeSetEnabled(self.as_raw(), node.as_raw(), u32::from(enabled)) })
    }

    /// Whether a node of this executable graph is enabled (`cudaGraphNodeGetEnabled`).
    pub fn node_enabled(&self, node: Node<'_>) -> Result<bool> {
        let mut enabled: core::ffi::c_uint = 0;
        // SAFETY: live handles; `enabled` is writable.
        cuda_call!(unsafe { sys::cudaGraphNodeGetEnabled(self.as_raw(), node.as_raw(), &mut enabled) })?;
        Ok(enabled != 0)
    }

    /// The flags CUDA reports for this executable graph (`cudaGraphExecGetFlags`); bits that
    /// [`InstantiateFlags`] does not name are kept. CUDA does not report every flag it was
    /// instantiated with: a graph instantiated with `USE_NODE_PRIORITY` alone reports no flags,
    /// while `DEVICE_LAUNCH` is reported (`docs/cuda-behaviours.md`, CB-18).
    pub fn flags(&self) -> Result<InstantiateFlags> {
        let mut flags: core::ffi::c_ulonglong = 0;
        // SAFETY: a live executable graph; `flags` is writable.
        cuda_call!(unsafe { sys::cudaGraphExecGetFlags(self.as_raw(), &mut flags) })?;
        Ok(InstantiateFlags::from_bits_retain(flags))
    }

    /// Uploads the graph's work to the device on `stream` ahead of its first launch (`cudaGraphUpload`).
    pub fn upload(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: live handles.
        cuda_call!(unsafe { sys::cudaGraphUpload(self.as_raw(), stream.as_raw()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn device_launch_is_refused_with_auto_free() {
        let e = (InstantiateFlags::DEVICE_LAUNCH | InstantiateFlags::AUTO_FREE_ON_LAUNCH).check("t").unwrap_err();
        assert!(e.to_string().contains("AUTO_FREE_ON_LAUNCH"), "{e}");
        assert!((InstantiateFlags::DEVICE_LAUNCH | InstantiateFlags::USE_NODE_PRIORITY).check("t").is_ok());
        assert!(InstantiateFlags::AUTO_FREE_ON_LAUNCH.check("t").is_ok());
    }
}
