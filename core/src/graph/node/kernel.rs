//! Kernel nodes: typed kernel nodes whose arguments an executable graph can replace
//! ([`KernelNode`]), and kernel nodes added by hand ([`Graph::add_kernel_node`], and
//! [`BodyGraph::add_kernel_node`](crate::graph::BodyGraph::add_kernel_node) in a conditional
//! node's body), which get their launch attributes as a launch would, with the same checks.
//!
//! # Kernel nodes and launch attributes
//! [`attributes`](crate::launch::attributes) says, for each attribute of a [`LaunchConfig`],
//! whether CUDA keeps it on a kernel node. A node added by hand gets those it keeps
//! (`cudaGraphKernelNodeSetAttribute`: priority, cluster and preferred cluster dimensions,
//! cooperative, memory-synchronisation domain), after the checks [`Kernel::launch`] makes (a
//! cooperative grid must fit the calling thread's current device at once, the device the node
//! runs on); the others (PDL, the programmatic and launch-completion events) are refused with an
//! error naming them. An executable graph's kernel node keeps the attributes it was made with:
//! new arguments for it ([`GraphExec::set_kernel_node_args`](crate::graph::GraphExec::set_kernel_node_args))
//! come with a configuration that sets none, and its new grid is checked against the node's own
//! (cooperative, cluster).

use super::{node_ptrs, Node};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::launch::{Attribute, Dim3, Kernel, KernelArgs, LaunchConfig};
use core::ffi::c_void;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

impl<'g> Node<'g> {
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

impl Graph {
    /// Adds a launch of `kernel` with `config` and `args` to this graph after `dependencies`
    /// (nodes of this graph), built by hand rather than captured (`cudaGraphAddKernelNode`), and
    /// returns the node: for example the kernel that sets a condition before a conditional node.
    /// The launch attributes of `config` that CUDA keeps on kernel nodes are set on the node
    /// (priority, cluster and preferred cluster dimensions, cooperative, memory-synchronisation
    /// domain), after the checks [`Kernel::launch`] makes (a cooperative grid must fit the calling
    /// thread's current device at once); PDL and the programmatic and launch-completion events
    /// are refused with a usage error naming them (see the [`graph`](crate::graph) module). The argument
    /// values are copied during the call, and nothing allocates. Unlike a capture, this works on
    /// a graph that already holds conditional nodes or handles.
    ///
    /// # Safety
    /// - The kernel runs at every launch of every executable graph made from (or updated with)
    ///   this graph, not at this call; for each, the caller owes what
    ///   [`BodyGraph::add_kernel_node`](crate::graph::BodyGraph::add_kernel_node) states.
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

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
