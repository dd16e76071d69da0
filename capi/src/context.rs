//! The CUDA context an object's CUDA handles belong to.
//!
//! `cudaDeviceReset` destroys the device's context and with it every stream, event, graph and
//! allocation made in it. Their handles dangle, and CUDA does not promise an error for a dangling
//! handle: it may crash. So every object behind a C handle (and every pooled pipeline) remembers
//! the context it was made in, by the context's unique id (`cuCtxGetId`, through
//! `cudaGetDriverEntryPoint`), and checks it before it touches CUDA: an object whose context is
//! gone is never touched again. Calls on it return `cudaErrorContextIsDestroyed`, and destroying it
//! forgets its CUDA handles instead of freeing them (CUDA freed them with the context).

use super::status::{refused, OrdoStatus, Outcome};
use core::mem::ManuallyDrop;
use ordo_cuda_core::{sys, Error};

/// A device and the context its objects were made in.
pub(crate) use ordo_cuda_core::context::ContextTag as Context;

/// The C ABI's answer for an object whose context is gone.
pub(crate) trait CheckContext {
    /// `cudaErrorContextIsDestroyed` when the context is gone.
    fn check(&self) -> Outcome;
}

impl CheckContext for Context {
    fn check(&self) -> Outcome {
        if self.alive() {
            Ok(())
        } else {
            let status = sys::cudaError::cudaErrorContextIsDestroyed.0 as OrdoStatus;
            Err(refused(status, None, "a cudaDeviceReset destroyed the handle's context: make a new handle"))
        }
    }
}

/// A value holding CUDA handles of one context: dropped normally while the context lives,
/// forgotten (its handles not freed, CUDA having freed them) once it is gone.
pub(crate) struct InContext<T> {
    context: Context,
    value: ManuallyDrop<T>,
}

impl<T> InContext<T> {
    /// `value`, made in the calling thread's current context.
    pub(crate) fn new(value: T) -> Result<InContext<T>, Error> {
        Ok(InContext::made_in(Context::current()?, value))
    }

    /// `value`, made in `context`.
    pub(crate) fn made_in(context: Context, value: T) -> InContext<T> {
        InContext { context, value: ManuallyDrop::new(value) }
    }

    /// The value, after checking that its context still exists (`cudaErrorContextIsDestroyed`
    /// otherwise).
    pub(crate) fn get(&self) -> Outcome<&T> {
        self.context.check()?;
        Ok(&self.value)
    }

    /// The value without checking its context, for calls that make no CUDA call (bookkeeping
    /// such as closing a staging ring, which is safe in a destroyed context too).
    pub(crate) fn unchecked(&self) -> &T {
        &self.value
    }

    /// The value's context.
    pub(crate) fn context(&self) -> Context {
        self.context
    }

    /// The value, for a caller that has just checked its context.
    pub(crate) fn checked_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> Drop for InContext<T> {
    fn drop(&mut self) {
        if self.context.alive() {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        }
    }
}
