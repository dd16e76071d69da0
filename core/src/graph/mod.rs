//! CUDA graphs: stream capture into a [`Graph`] (new or existing), instantiation into a
//! [`GraphExec`], replay on a stream, the graph's nodes and edges (programmatic edges from PDL
//! launches survive capture), and changes without re-instantiating: whole-graph
//! [`GraphExec::update`] (an [`UpdateOutcome`]), typed kernel-node argument updates
//! ([`GraphExec::set_kernel_node_args`]), copy and memset nodes pointed at other memory
//! ([`GraphExec::set_memcpy_node`], [`GraphExec::set_memset_node`]), nodes enabled and disabled
//! ([`GraphExec::set_node_enabled`]); device-launchable instantiation
//! ([`InstantiateFlags::DEVICE_LAUNCH`]); conditional nodes (IF, IF/ELSE, WHILE, SWITCH) whose
//! condition kernels set on the device ([`Graph::add_conditional_node`], [`ConditionalKind`],
//! [`BodyGraph`]), also at the current point of a capture ([`StreamRef::capture_conditional`]).
//!
//! - [`capture`]: the `unsafe` captures and their replay contract, the capture modes and status;
//! - [`Graph`]: a graph of captured work, its nodes and edges, instantiation;
//! - [`GraphExec`]: an executable graph: launch, update, upload;
//! - [`Node`], [`KernelNode`], [`MemcpyNode`], [`Edge`]: what a graph holds;
//! - [`cache`]: [`GraphCache`], a graph per batch-size bucket, as inference engines keep them;
//!   [`shared`]: [`SharedGraphCache`] (`std`), the same run by several threads at once;
//! - [`capture_fence`]: the process-wide lock that keeps ordo's global-mode captures apart, and
//!   capture-unsafe work out of them (the driver crashes otherwise: see [`CaptureMode::Global`]);
//! - [`Graph::add_conditional_node`], [`ConditionalKind`], [`Bodies`], [`BodyGraph`],
//!   [`ConditionalHandle`]: conditional nodes whose condition kernels set on the device (CUDA 12.3
//!   and later, which every supported toolkit is; IF/ELSE and SWITCH 12.8 and later), their bodies
//!   filled node by node or by capture, and [`StreamRef::capture_conditional`] for one added inside
//!   a capture.
//!
//! A graph does not borrow what its work uses. Making one is `unsafe` (the capture), and the
//! capture's contract covers every replay; launching is safe. Host state that ordo itself puts in
//! a graph (host functions, staging slots) is owned by the graph through CUDA user objects.
//!
//! [`StreamRef::capture_conditional`]: crate::stream::StreamRef::capture_conditional

#[cfg(feature = "alloc")]
pub mod cache;
mod capture;
mod conditional;
mod exec;
#[cfg(feature = "std")]
mod global_lock;
mod node;
#[cfg(feature = "std")]
pub mod shared;
mod template;
#[cfg(feature = "std")]
pub(crate) mod user_object;

#[cfg(feature = "alloc")]
pub use cache::{CacheOptions, GraphCache, Overflow};
#[cfg(feature = "std")]
pub use shared::SharedGraphCache;

#[cfg(feature = "std")]
pub(crate) use crate::capture_state::capture_info;
pub use crate::capture_state::CaptureStatus;
#[cfg(feature = "alloc")]
pub use capture::capture_into;
pub use capture::{capture, CaptureMode};
#[cfg(feature = "std")]
pub(crate) use capture::{capture_target, invalidated, CaptureTarget};
pub use conditional::{Bodies, BodyGraph, BodyIter, ConditionalHandle, ConditionalKind};
pub use exec::{GraphExec, InstantiateFlags, UpdateNodes, UpdateOutcome};
#[cfg(feature = "std")]
pub use global_lock::{capture_fence, CaptureFence};
pub use node::{Edge, KernelNode, LinearCopy, MemcpyNode, MemsetParams, Node, NodeKind};
pub use template::Graph;
