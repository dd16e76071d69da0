//! The CUDA context an object's CUDA handles belong to.
//!
//! `cudaDeviceReset` destroys the device's context and with it every stream, event, graph and
//! allocation made in it. Their handles dangle, and CUDA does not promise an error for a dangling
//! handle: it may crash. So every object behind a C handle (and every pooled pipeline) remembers
//! the context it was made in, by the context's unique id (`cuCtxGetId`, through
//! `cudaGetDriverEntryPoint`), and checks it before it touches CUDA: an object whose context is
//! gone is never touched again. Calls on it return `cudaErrorContextIsDestroyed`, and destroying it
//! forgets its CUDA handles instead of freeing them (CUDA freed them with the context).

use super::status::{refused, Failure, OrdoStatus};
use ordo_cuda_core::in_context::ContextGone;
use ordo_cuda_core::sys;

/// A device and the context its objects were made in.
pub(crate) use ordo_cuda_core::context::ContextTag as Context;
/// A value holding CUDA handles of one context: dropped normally while the context lives,
/// forgotten once it is gone (the Rust API's; `get()?` gives the C ABI's refusal below).
pub(crate) use ordo_cuda_core::in_context::InContext;

/// The C ABI's answer for an object whose context is gone: `cudaErrorContextIsDestroyed`.
impl From<ContextGone> for Failure {
    fn from(_: ContextGone) -> Failure {
        let status = sys::cudaError::cudaErrorContextIsDestroyed.0 as OrdoStatus;
        refused(status, None, "a cudaDeviceReset destroyed the handle's context: make a new handle")
    }
}
