//! Conditional nodes (CUDA 12.3 and later): a node that runs one of its body graphs, or none, or
//! one again and again, as a condition value says; kernels set that value on the device
//! (`ordo_set_condition` in `include/ordo/graph.cuh`, over `cudaGraphSetConditional`). So
//! branches and loops whose outcome only the device knows run inside one graph launch, with no
//! host round trip.
//!
//! - [`ConditionalKind`]: IF (one body, run when the value is non-zero), IF/ELSE (two: the first
//!   when non-zero, the second when zero), WHILE (one, run while the value is non-zero), SWITCH
//!   (`cases` bodies, the value picks one, none when it is `cases` or more). IF/ELSE and SWITCH
//!   need CUDA 12.8 or later headers; with older ones they are refused with a usage error.
//! - [`Graph::conditional_handle`] makes the handle (`cudaGraphConditionalHandleCreate`);
//!   [`Graph::add_conditional_node`] (and [`Graph::add_if_node`], [`Graph::add_while_node`]) adds
//!   the node (`cudaGraphAddNode`) and returns its [`Bodies`]: a view of CUDA's own array of body
//!   graphs, borrowed from the graph. Nothing here allocates.
//! - A body is filled with kernel nodes ([`BodyGraph::add_kernel_node`]), by stream capture
//!   ([`BodyGraph::capture`]) or with conditional nodes of its own
//!   ([`BodyGraph::add_conditional_node`]). Adding work is `unsafe`, as a capture is: it runs at
//!   every run of the body at every replay.
//! - [`StreamRef::capture_conditional`] adds a conditional node at the current point of a stream
//!   capture (`cudaStreamGetCaptureInfo`, `cudaStreamUpdateCaptureDependencies`), so that a
//!   captured step can hold a loop or a branch.

use super::node::{add_kernel_node, node_ptrs, Node};
use super::{CaptureMode, Graph};
use crate::error::{CudaError, Error, Result, UsageKind};
use crate::launch::{Kernel, KernelArgs, LaunchConfig};
use crate::stream::StreamRef;
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// The handle of a graph's condition value (`cudaGraphConditionalHandle`), made by
/// [`Graph::conditional_handle`] (or by [`StreamRef::capture_conditional`]). Pass it by value to
/// the kernels that set the condition (its device-side type is `ordo_conditional_handle` in
/// `include/ordo/graph.cuh`).
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

/// What a conditional node does with its condition value and its bodies
/// (`cudaGraphConditionalNodeType` and the number of bodies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConditionalKind {
    /// One body, run once when the value is non-zero.
    If,
    /// Two bodies: the first run when the value is non-zero, the second when it is zero. Needs
    /// CUDA 12.8 or later headers (an IF node of two bodies).
    IfElse,
    /// One body, run again and again while the value is non-zero, tested before each run (so not
    /// at all when it is zero at the node). A kernel of the body ends the loop by setting it to 0.
    While,
    /// `cases` bodies: body `n` runs when the value is `n`; none runs when the value is `cases` or
    /// more. At least one case. Needs CUDA 12.8 or later headers.
    Switch {
        /// The number of bodies.
        cases: u32,
    },
}

impl ConditionalKind {
    /// The number of bodies a node of this kind has: 1 for IF and WHILE, 2 for IF/ELSE, `cases`
    /// for SWITCH.
    pub const fn body_count(self) -> u32 {
        match self {
            ConditionalKind::If | ConditionalKind::While => 1,
            ConditionalKind::IfElse => 2,
            ConditionalKind::Switch { cases } => cases,
        }
    }

    /// CUDA's node type and body count for this kind, after ordo's checks: a SWITCH has at least
    /// one case; IF/ELSE and SWITCH need CUDA 12.8 or later headers; the count fits a `usize`.
    fn shape(self, call: &'static str) -> Result<Shape> {
        use sys::cudaGraphConditionalNodeType as T;
        let type_ = match self {
            ConditionalKind::If | ConditionalKind::IfElse => T::cudaGraphCondTypeIf,
            ConditionalKind::While => T::cudaGraphCondTypeWhile,
            ConditionalKind::Switch { cases: 0 } => {
                return Err(Error::invalid(call, "a SWITCH node has at least one case"));
            }
            ConditionalKind::Switch { .. } => switch_type(call)?,
        };
        if self == ConditionalKind::IfElse && !cfg!(cuda_12_8) {
            return Err(Error::usage(
                UsageKind::NotSupported,
                call,
                "IF/ELSE nodes (an IF node of two bodies) need CUDA 12.8 or later headers",
            ));
        }
        let size = self.body_count();
        let len = usize::try_from(size).map_err(|_| Error::invalid(call, "more bodies than a usize counts"))?;
        Ok(Shape { type_, size, len })
    }
}

/// `cudaGraphCondTypeSwitch`, which CUDA 12.8 headers introduced.
#[cfg(cuda_12_8)]
fn switch_type(_call: &'static str) -> Result<sys::cudaGraphConditionalNodeType> {
    Ok(sys::cudaGraphConditionalNodeType::cudaGraphCondTypeSwitch)
}

/// `cudaGraphCondTypeSwitch`, which the headers of this build lack.
#[cfg(not(cuda_12_8))]
fn switch_type(call: &'static str) -> Result<sys::cudaGraphConditionalNodeType> {
    Err(Error::usage(UsageKind::NotSupported, call, "SWITCH nodes need CUDA 12.8 or later headers"))
}

/// A conditional node's type and body count, checked: `len` is `size` as a `usize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    type_: sys::cudaGraphConditionalNodeType,
    size: u32,
    len: usize,
}

/// The body graphs of a conditional node, in CUDA's order (for IF/ELSE: the non-zero body, then
/// the zero body; for SWITCH: case 0 first). A view of the array CUDA made with the node and owns
/// (`phGraph_out`, valid while the node lives, so while the graph that holds it does, which this
/// borrows): nothing is allocated or copied.
#[derive(Debug, Clone, Copy)]
pub struct Bodies<'g> {
    raw: NonNull<sys::cudaGraph_t>,
    len: usize,
    _graph: PhantomData<&'g Graph>,
}

impl<'g> Bodies<'g> {
    /// The number of bodies ([`ConditionalKind::body_count`]).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no body (never, for a node CUDA made).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Body `index`, or `None` past the last.
    #[inline]
    pub fn get(&self, index: usize) -> Option<BodyGraph<'g>> {
        if index >= self.len {
            return None;
        }
        // SAFETY: `index` is within the `len` graphs of CUDA's array, alive while the node is
        // (for `'g`); every entry was checked non-null when the node was made.
        let raw = unsafe { *self.raw.as_ptr().add(index) };
        NonNull::new(raw).map(BodyGraph::new)
    }

    /// The bodies in order.
    #[inline]
    pub fn iter(&self) -> BodyIter<'g> {
        BodyIter { bodies: *self, next: 0 }
    }
}

impl<'g> IntoIterator for Bodies<'g> {
    type Item = BodyGraph<'g>;
    type IntoIter = BodyIter<'g>;

    fn into_iter(self) -> BodyIter<'g> {
        self.iter()
    }
}

/// The bodies of a conditional node, in order ([`Bodies::iter`]).
#[derive(Debug, Clone)]
pub struct BodyIter<'g> {
    bodies: Bodies<'g>,
    next: usize,
}

impl<'g> Iterator for BodyIter<'g> {
    type Item = BodyGraph<'g>;

    fn next(&mut self) -> Option<BodyGraph<'g>> {
        let body = self.bodies.get(self.next)?;
        self.next += 1;
        Some(body)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.bodies.len.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for BodyIter<'_> {}

/// A body of a conditional node: a graph CUDA made with the node and owns (it lives as long as
/// the node, so as long as the graph that holds the node, which this borrows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyGraph<'g> {
    raw: NonNull<sys::CUgraph_st>,
    _graph: PhantomData<&'g Graph>,
}

impl<'g> BodyGraph<'g> {
    fn new(raw: NonNull<sys::CUgraph_st>) -> BodyGraph<'g> {
        BodyGraph { raw, _graph: PhantomData }
    }

    /// The raw handle (owned by CUDA: never destroy it).
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaGraph_t {
        self.raw.as_ptr()
    }

    /// Adds a launch of `kernel` with `config` and `args` to the body, after `dependencies` (nodes
    /// of this body; CUDA refuses others), and returns the node (`cudaGraphAddKernelNode`). The
    /// launch attributes of `config` are set on the node as [`Graph::add_kernel_node`] sets them,
    /// with the same checks and refusals. The argument values are copied during the call; nothing
    /// allocates.
    ///
    /// # Safety
    /// The kernel runs at every run of the body (every iteration of a WHILE node, every time an
    /// IF or SWITCH node picks the body), at every launch of every executable graph made from (or
    /// updated with) the graph that holds the body, not at this call. For each such run:
    /// - what [`Kernel::launch`](crate::launch::Kernel::launch) asks of its arguments holds, as
    ///   [`capture`](super::capture)'s contract states it for captured kernels: every pointer
    ///   points to memory still allocated while the kernel may access it, large enough for what
    ///   the kernel does with `config`, device-accessible, and not accessed by anything else in a
    ///   way that races the kernel;
    /// - a kernel that sets a condition is the only writer of it at that time
    ///   (`cudaGraphSetConditional` calls that race are undefined).
    pub unsafe fn add_kernel_node<Args: KernelArgs>(
        self,
        dependencies: &[Node<'g>],
        kernel: Kernel<Args>,
        config: &LaunchConfig,
        args: Args,
    ) -> Result<Node<'g>> {
        // SAFETY: the body lives for `'g`; the arguments are the caller's contract.
        unsafe { add_kernel_node(self.as_raw(), dependencies, kernel, config, args, "BodyGraph::add_kernel_node") }
    }

    /// Adds a conditional node of `kind` on `handle` to this body, after `dependencies` (nodes of
    /// this body), and returns it with its own bodies: a WHILE body can hold an IF node, and so
    /// on. `handle` comes from [`Graph::conditional_handle`] of the graph that holds this body
    /// (CUDA takes a handle of the graph or of any graph it contains), and serves one node. As
    /// [`Graph::add_conditional_node`] otherwise; safe for the same reason.
    pub fn add_conditional_node(
        self,
        dependencies: &[Node<'g>],
        handle: ConditionalHandle,
        kind: ConditionalKind,
    ) -> Result<(Node<'g>, Bodies<'g>)> {
        let shape = kind.shape("BodyGraph::add_conditional_node")?;
        // SAFETY: the body lives for `'g` (it belongs to a node of the graph borrowed for `'g`);
        // `dependencies` are node handles counted by their length.
        unsafe {
            add_node(self.as_raw(), node_ptrs(dependencies), core::ptr::null(), dependencies.len(), handle, shape)
        }
    }

    /// Captures what `f` enqueues on `stream` into a new graph, as [`capture`](super::capture)
    /// does (the capture ends on every path out, a panic in `f` included), then adds that graph to
    /// this body as a child-graph node after `dependencies` (`cudaGraphAddChildGraphNode`, which
    /// copies it) and returns the node. The new graph is dropped before this returns.
    ///
    /// `stream` must not be capturing: a stream that is (the one whose capture holds this body,
    /// say) is refused with a usage error before anything starts. Capture a body on another
    /// stream.
    ///
    /// The capture is made into a graph of its own rather than into the body
    /// (`cudaStreamBeginCaptureToGraph`): when a capture into a body is invalidated, the CUDA
    /// driver frees the body that the node still owns, and destroying or ending the graph that
    /// holds the node then crashes in the driver (`docs/cuda-behaviours.md`, CB-07). A capture into a new
    /// graph fails alone: on every failure (`f`'s error or panic, an invalidated or unjoined
    /// capture, work CUDA does not allow in a body) the body is left as it was. The cost is one
    /// copy of the captured graph at this call.
    ///
    /// What a body may hold is CUDA's rule: kernels, copies, memsets, empty nodes and child
    /// graphs. A host function, an event record or wait node, or an allocation captured here
    /// makes this call, or the instantiation of the graph, fail. A conditional node captured here
    /// ([`StreamRef::capture_conditional`] inside `f`) is refused too (CUDA does not put a graph
    /// that holds one in a child-graph node): nest conditional nodes with
    /// [`BodyGraph::add_conditional_node`].
    ///
    /// # Safety
    /// As [`capture`](super::capture), for the work captured here, which runs at every run of the
    /// body (every iteration of a WHILE node, every time an IF or SWITCH node picks the body) at
    /// every launch of every executable graph made from (or updated with) the graph that holds the
    /// body. A kernel that sets a condition must be the only writer of it at that time.
    pub unsafe fn capture<F>(
        self,
        dependencies: &[Node<'g>],
        stream: StreamRef<'_>,
        mode: CaptureMode,
        f: F,
    ) -> Result<Node<'g>>
    where
        F: FnOnce(StreamRef<'_>) -> Result<()>,
    {
        if stream.capture_status()? != super::CaptureStatus::None {
            return Err(Error::invalid(
                "BodyGraph::capture",
                "the stream is capturing already: capture a body on a stream that is not",
            ));
        }
        // SAFETY: the capture's contract is forwarded to the caller; `capture` ends it on every
        // path out.
        let graph = unsafe { super::capture(stream, mode, f) }?;
        let mut raw: sys::cudaGraphNode_t = core::ptr::null_mut();
        // SAFETY: live graphs (the body for `'g`; `graph` owned here); `dependencies` are node
        // handles counted by their length. CUDA copies `graph` into the node; ours is destroyed
        // when dropped below.
        cuda_call!(unsafe {
            sys::cudaGraphAddChildGraphNode(
                &mut raw,
                self.as_raw(),
                node_ptrs(dependencies),
                dependencies.len(),
                graph.as_raw(),
            )
        })?;
        drop(graph);
        NonNull::new(raw).map(Node::new).ok_or_else(|| crate::error::null_handle("cudaGraphAddChildGraphNode"))
    }
}

impl Graph {
    /// A handle for a condition value of this graph (`cudaGraphConditionalHandleCreate`), to give
    /// to one conditional node of this graph (or of one of its bodies) and to the kernels that set
    /// the value. With `Some(value)` the condition is set to `value` at the start of every launch
    /// (`cudaGraphCondAssignDefault`); with `None` it is not reset, so a kernel upstream of the
    /// node must set it. A handle that no conditional node uses may make instantiation fail. CUDA
    /// does not clone a graph that holds a handle (`try_clone` and `capture_into` then fail with
    /// `cudaErrorNotSupported`: `docs/cuda-behaviours.md`, CB-25): add kernels to such a graph with [`Graph::add_kernel_node`].
    pub fn conditional_handle(&self, default: Option<u32>) -> Result<ConditionalHandle> {
        // SAFETY: a live graph.
        unsafe { create_handle(self.as_raw(), default) }
    }

    /// Adds a conditional node of `kind` on `handle` after `dependencies` (nodes of this graph)
    /// and returns it with its empty [`Bodies`] (`cudaGraphAddNode` with a
    /// `cudaGraphNodeTypeConditional` node). Each launch tests the condition value when the node
    /// runs and runs the body (or bodies, for a loop) that [`ConditionalKind`] says. Fill the
    /// bodies with [`BodyGraph::add_kernel_node`], [`BodyGraph::capture`] or
    /// [`BodyGraph::add_conditional_node`]. An empty body runs nothing (drivers older than CUDA
    /// 12.8's were reported to hang on one: give every body a node there).
    ///
    /// A SWITCH of no cases is refused with a usage error, and so are IF/ELSE and SWITCH when the
    /// build's headers are older than CUDA 12.8. Nothing allocates: the bodies are CUDA's array.
    ///
    /// Safe: the node adds no work by itself; the work of its bodies is added under the contract
    /// of the calls that add it. A loop that never ends is a hang, not undefined behaviour.
    pub fn add_conditional_node(
        &self,
        dependencies: &[Node<'_>],
        handle: ConditionalHandle,
        kind: ConditionalKind,
    ) -> Result<(Node<'_>, Bodies<'_>)> {
        let shape = kind.shape("Graph::add_conditional_node")?;
        // SAFETY: a live graph, borrowed for the lifetime of the result; `dependencies` are node
        // handles counted by their length.
        unsafe {
            add_node(self.as_raw(), node_ptrs(dependencies), core::ptr::null(), dependencies.len(), handle, shape)
        }
    }

    /// Adds an IF node after `dependencies`: at each launch it runs its body once when the
    /// condition of `handle` is non-zero. Returns the node and its empty body.
    /// [`Graph::add_conditional_node`] with [`ConditionalKind::If`].
    pub fn add_if_node(
        &self,
        dependencies: &[Node<'_>],
        handle: ConditionalHandle,
    ) -> Result<(Node<'_>, BodyGraph<'_>)> {
        let (node, bodies) = self.add_conditional_node(dependencies, handle, ConditionalKind::If)?;
        bodies.get(0).map(|body| (node, body)).ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))
    }

    /// Adds a WHILE node after `dependencies`: at each launch it runs its body while the condition
    /// of `handle` is non-zero, testing it before each run (so not at all when it starts at 0).
    /// Returns the node and its empty body; a kernel in the body ends the loop by setting the
    /// condition to 0. [`Graph::add_conditional_node`] with [`ConditionalKind::While`].
    pub fn add_while_node(
        &self,
        dependencies: &[Node<'_>],
        handle: ConditionalHandle,
    ) -> Result<(Node<'_>, BodyGraph<'_>)> {
        let (node, bodies) = self.add_conditional_node(dependencies, handle, ConditionalKind::While)?;
        bodies.get(0).map(|body| (node, body)).ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))
    }
}

impl StreamRef<'_> {
    /// Adds a conditional node of `kind` at the current point of this stream's capture, and lets
    /// `fill` fill its bodies: the "conditional nodes by stream capture" pattern of the CUDA
    /// programming guide. The node depends on what the stream's next work would have depended on,
    /// and the stream's later work depends on the node, as for any captured work.
    ///
    /// The calls: `cudaStreamGetCaptureInfo` (the capture's graph and the stream's current
    /// dependencies, with their edge data), `cudaGraphConditionalHandleCreate` on that graph (the
    /// condition reset to `default` at every launch when `Some`; see
    /// [`Graph::conditional_handle`]), `cudaGraphAddNode`, and
    /// `cudaStreamUpdateCaptureDependencies` to the node alone. Then `fill` runs with the handle
    /// (for the kernels that set the condition) and the bodies, and its result is returned; fill
    /// each body with [`BodyGraph::capture`] on another stream (this one is capturing), or with
    /// [`BodyGraph::add_kernel_node`]. Nothing allocates.
    ///
    /// The bodies belong to the capture's graph: `fill` gets them for its call only, and they
    /// cannot leave it. A stream that is not capturing is refused with a usage error, one whose
    /// capture was invalidated with `cudaErrorStreamCaptureInvalidated`; a refused `kind` (see
    /// [`Graph::add_conditional_node`]) is refused before CUDA is called. When `fill` fails, the
    /// node stays in the capture, with whatever its bodies hold: return the error from the
    /// capture's function, and the capture's graph is dropped.
    ///
    /// Safe: it adds no work by itself, and it relies on what every capture of ordo's owes (the
    /// capture's second promise in [`capture`](super::capture), which covers the streams that
    /// join a capture as well as the one that began it): while this call runs, the capture stays
    /// open and its graph alive. A stream that joined another thread's capture is that thread's
    /// until the capture ends: calling this on it from here breaks that thread's promise.
    pub fn capture_conditional<R, F>(self, kind: ConditionalKind, default: Option<u32>, fill: F) -> Result<R>
    where
        F: FnOnce(ConditionalHandle, Bodies<'_>) -> Result<R>,
    {
        const CALL: &str = "StreamRef::capture_conditional";
        let shape = kind.shape(CALL)?;
        let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
        let mut graph: sys::cudaGraph_t = core::ptr::null_mut();
        let mut deps: *const sys::cudaGraphNode_t = core::ptr::null();
        let mut edges: *const sys::cudaGraphEdgeData = core::ptr::null();
        let mut n = 0usize;
        // SAFETY: a live stream; every output is writable. Edge data is asked with the
        // dependencies (without it CUDA refuses a query that would lose programmatic edges).
        cuda_call!(unsafe {
            sys::compat::cudaStreamGetCaptureInfo(
                self.as_raw(),
                &mut status,
                core::ptr::null_mut(),
                &mut graph,
                &mut deps,
                &mut edges,
                &mut n,
            )
        })?;
        match status {
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => {}
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusInvalidated => {
                return Err(Error::Cuda(CudaError::new(
                    sys::cudaError::cudaErrorStreamCaptureInvalidated,
                    "cudaStreamGetCaptureInfo",
                )));
            }
            _ => return Err(Error::invalid(CALL, "the stream is not capturing")),
        }
        if graph.is_null() {
            return Err(crate::error::null_handle("cudaStreamGetCaptureInfo"));
        }
        // SAFETY: the capture's graph, alive while this call runs (the capture contract).
        let handle = unsafe { create_handle(graph, default) }?;
        // SAFETY: as above; the dependency array CUDA returned holds `n` nodes (and edge data) of
        // that graph and stays valid until the next call on this stream (the handle was made on
        // the graph, not the stream).
        let (node, bodies) = unsafe { add_node(graph, deps, edges, n, handle, shape) }?;
        let mut raw = node.as_raw();
        // SAFETY: a live stream; one node, of the capture's graph; default edge data.
        cuda_call!(unsafe {
            sys::compat::cudaStreamUpdateCaptureDependencies(
                self.as_raw(),
                &mut raw,
                core::ptr::null(),
                1,
                sys::cudaStreamUpdateCaptureDependenciesFlags::cudaStreamSetCaptureDependencies.0,
            )
        })?;
        fill(handle, bodies)
    }
}

/// `cudaGraphConditionalHandleCreate` on `graph`, reset to `default` at each launch when `Some`.
///
/// # Safety
/// `graph` is a live graph.
unsafe fn create_handle(graph: sys::cudaGraph_t, default: Option<u32>) -> Result<ConditionalHandle> {
    let (value, flags) = match default {
        Some(value) => (value, sys::cudaGraphConditionalHandleFlags::cudaGraphCondAssignDefault.0),
        None => (0, 0),
    };
    let mut raw: sys::cudaGraphConditionalHandle = 0;
    // SAFETY: a live graph (the caller's promise); `raw` is writable.
    cuda_call!(unsafe { sys::cudaGraphConditionalHandleCreate(&mut raw, graph, value, flags) })?;
    Ok(ConditionalHandle(raw))
}

/// Adds a conditional node of `shape` on `handle` to `graph` after `n` dependencies
/// (`cudaGraphAddNode`) and returns it with its bodies, after checking that CUDA returned
/// `shape.len` of them, none null.
///
/// # Safety
/// `graph` is a live graph that lives for `'g` (or a body of one); `deps` holds `n` nodes of it
/// (null when `n` is 0); `edges`, when not null, holds `n` edge data.
unsafe fn add_node<'g>(
    graph: sys::cudaGraph_t,
    deps: *const sys::cudaGraphNode_t,
    edges: *const sys::cudaGraphEdgeData,
    n: usize,
    handle: ConditionalHandle,
    shape: Shape,
) -> Result<(Node<'g>, Bodies<'g>)> {
    // The other fields (the execution context newer headers add) zeroed: the current context.
    let mut params = sys::conditional_node_params(handle.as_raw(), shape.type_, shape.size);
    let mut raw: sys::cudaGraphNode_t = core::ptr::null_mut();
    // SAFETY: the caller's promises on `graph`, `deps` and `edges`; `params` is writable (CUDA
    // writes the body array's address into it).
    cuda_call!(unsafe { sys::compat::cudaGraphAddNode(&mut raw, graph, deps, edges, n, &mut params) })?;
    let node = NonNull::new(raw).map(Node::new).ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))?;
    // SAFETY: made by `conditional_node_params`; CUDA filled in its output array.
    let array = unsafe { sys::conditional_node_bodies(&params) };
    let array = NonNull::new(array).ok_or_else(|| crate::error::null_handle("cudaGraphAddNode"))?;
    for i in 0..shape.len {
        // SAFETY: CUDA's array holds `size` (`len`) graphs, valid while the node lives.
        if unsafe { *array.as_ptr().add(i) }.is_null() {
            return Err(crate::error::null_handle("cudaGraphAddNode"));
        }
    }
    Ok((node, Bodies { raw: array, len: shape.len, _graph: PhantomData }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use sys::cudaGraphConditionalNodeType as T;

    #[test]
    fn each_kind_has_its_number_of_bodies() {
        assert_eq!(ConditionalKind::If.body_count(), 1);
        assert_eq!(ConditionalKind::While.body_count(), 1);
        assert_eq!(ConditionalKind::IfElse.body_count(), 2);
        assert_eq!(ConditionalKind::Switch { cases: 3 }.body_count(), 3);
        assert_eq!(ConditionalKind::Switch { cases: u32::MAX }.body_count(), u32::MAX);
        let shape = ConditionalKind::If.shape("t").unwrap();
        assert_eq!((shape.type_, shape.size, shape.len), (T::cudaGraphCondTypeIf, 1, 1));
        let shape = ConditionalKind::While.shape("t").unwrap();
        assert_eq!((shape.type_, shape.size, shape.len), (T::cudaGraphCondTypeWhile, 1, 1));
    }

    #[test]
    fn a_switch_without_cases_is_refused_before_cuda() {
        let e = ConditionalKind::Switch { cases: 0 }.shape("t").unwrap_err();
        assert!(matches!(&e, Error::Usage(u) if u.kind == UsageKind::InvalidArgument && u.call == "t"), "{e:?}");
        assert!(e.to_string().contains("at least one case"), "{e}");
    }

    #[test]
    fn if_else_and_switch_follow_the_headers() {
        let if_else = ConditionalKind::IfElse.shape("t");
        let switch = ConditionalKind::Switch { cases: 3 }.shape("t");
        if cfg!(cuda_12_8) {
            let shape = if_else.unwrap();
            assert_eq!((shape.type_, shape.size, shape.len), (T::cudaGraphCondTypeIf, 2, 2));
            let shape = switch.unwrap();
            assert_eq!((shape.type_.0, shape.size, shape.len), (2, 3, 3), "cudaGraphCondTypeSwitch is 2");
        } else {
            for e in [if_else.unwrap_err(), switch.unwrap_err()] {
                assert!(matches!(&e, Error::Usage(u) if u.kind == UsageKind::NotSupported), "{e:?}");
                assert!(e.to_string().contains("12.8"), "{e}");
            }
        }
    }

    #[test]
    fn a_view_of_bodies_reads_cudas_array_in_order() {
        let mut a = 0u8;
        let mut b = 0u8;
        let mut array: [sys::cudaGraph_t; 2] = [core::ptr::addr_of_mut!(a).cast(), core::ptr::addr_of_mut!(b).cast()];
        let bodies: Bodies<'_> = Bodies { raw: NonNull::new(array.as_mut_ptr()).unwrap(), len: 2, _graph: PhantomData };
        assert_eq!((bodies.len(), bodies.is_empty()), (2, false));
        assert_eq!(bodies.get(0).unwrap().as_raw(), array[0]);
        assert_eq!(bodies.get(1).unwrap().as_raw(), array[1]);
        assert!(bodies.get(2).is_none() && bodies.get(usize::MAX).is_none());
        let mut it = bodies.iter();
        assert_eq!(it.len(), 2);
        assert_eq!(it.next().map(BodyGraph::as_raw), Some(array[0]));
        assert_eq!(it.len(), 1);
        let rest: alloc::vec::Vec<_> = it.map(BodyGraph::as_raw).collect();
        assert_eq!(rest, [array[1]]);
        assert_eq!(bodies.into_iter().count(), 2);
    }
}
