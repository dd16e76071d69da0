//! [`GraphExec`]: an executable graph (`cudaGraphExec_t`), launched on a stream, and updated in
//! place without re-instantiating.

use super::node::KernelNode;
use super::Graph;
use crate::error::{check, Error, Result, UsageKind};
use crate::launch::{KernelArgs, LaunchConfig};
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
    /// closures, staging slots), so dropping the graph first is fine.
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
        /// Launch nodes in their captured priority order.
        const USE_NODE_PRIORITY = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagUseNodePriority.0 as u64;
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
            R::cudaGraphExecUpdateErrorTopologyChanged => {
                "the graph's topology changed (nodes or edges added or removed)"
            }
            R::cudaGraphExecUpdateErrorNodeTypeChanged => "a node's type changed",
            R::cudaGraphExecUpdateErrorFunctionChanged => "a kernel node's function changed",
            R::cudaGraphExecUpdateErrorParametersChanged => {
                "a node's parameters changed in a way that cannot be updated"
            }
            R::cudaGraphExecUpdateErrorNotSupported => "something in the graph does not support update",
            R::cudaGraphExecUpdateErrorUnsupportedFunctionChange => "a kernel's function changed in an unsupported way",
            R::cudaGraphExecUpdateErrorAttributesChanged => {
                "a node's attributes changed in a way that cannot be updated"
            }
            _ => "update failed",
        }
    }
}

impl GraphExec {
    /// Owns an executable graph that an instantiate call (`call`) returned.
    pub(crate) fn from_instantiated(raw: sys::cudaGraphExec_t, call: &'static str) -> Result<GraphExec> {
        NonNull::new(raw).map(|raw| GraphExec { raw }).ok_or_else(|| crate::error::null_handle(call))
    }

    /// Launches the graph on `stream` (`cudaGraphLaunch`): one call, no allocation. The launch
    /// replays the captured work (see the type's documentation for why this is safe).
    #[inline(always)]
    pub fn launch(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: live handles. What the replayed work touches is owed by the capture contract.
        cuda_call!(unsafe { sys::cudaGraphLaunch(self.as_raw(), stream.as_raw()) })
    }

    /// Updates this executable graph in place to match `graph` (`cudaGraphExecUpdate`): same
    /// topology, new parameters. `Ok(Err(failure))` says which node could not be updated and why;
    /// the executable graph is unchanged then and still launchable.
    ///
    /// On success the later launches of this executable graph run `graph`'s work: its pointers,
    /// events and kernels, which the contract of the capture that made `graph` covers (it names
    /// every executable graph updated with the graph); the work this one was made from is no
    /// longer used once the launches already enqueued have completed. CUDA replaces this
    /// executable graph's references to host state with `graph`'s (ordo's host-function closures
    /// and staging slots), releasing the old ones once earlier launches have finished, so it stays
    /// valid after `graph` is dropped.
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
            return Ok(Err(UpdateFailure {
                result: info.result,
                error_node: info.errorNode,
                error_from_node: info.errorFromNode,
            }));
        }
        check(code, "cudaGraphExecUpdate")?;
        Ok(Ok(()))
    }

    /// Replaces the launch configuration and arguments of a kernel node in this executable graph
    /// (`cudaGraphExecKernelNodeSetParams`): new pointers or scalars for a captured kernel, without
    /// re-instantiating. `node` comes from the graph this was instantiated from (CUDA refuses
    /// another graph's node). Launch attributes (PDL, priority) stay as captured. The argument
    /// values are copied during the call.
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
        // SAFETY: live handles; CUDA copies the argument values during the call. What they point
        // to at each later launch is the caller's contract.
        cuda_call!(unsafe { sys::cudaGraphExecKernelNodeSetParams(self.as_raw(), node.node.as_raw(), &params) })
    }

    /// Uploads the graph's work to the device on `stream` ahead of its first launch (`cudaGraphUpload`).
    pub fn upload(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: live handles.
        cuda_call!(unsafe { sys::cudaGraphUpload(self.as_raw(), stream.as_raw()) })
    }
}
