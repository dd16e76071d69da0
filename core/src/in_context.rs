//! [`InContext`]: a value holding CUDA handles of one context, dropped normally while that context
//! lives and forgotten once a `cudaDeviceReset` has destroyed it.
//!
//! `cudaDeviceReset` destroys the device's context and with it every stream, event, graph and
//! allocation made in it. Their handles dangle, and CUDA does not promise an error for a dangling
//! handle: it may crash. A value that must outlive such a reset safely (a pooled pipeline, a graph
//! of a [`SharedGraphCache`](crate::graph::SharedGraphCache), every object behind a C handle)
//! keeps the [`ContextTag`] it was made in, is reached through a check of that context
//! ([`get`](InContext::get)), and is never dropped once the context is gone: CUDA freed its handles
//! with the context.

use crate::context::ContextTag;
use crate::error::{CudaError, Error, Result};
use core::mem::ManuallyDrop;
use ordo_cuda_sys as sys;

/// A value made in one CUDA context: dropped normally while the context lives, forgotten (its
/// handles not freed, CUDA having freed them) once it is gone.
pub struct InContext<T> {
    context: ContextTag,
    value: ManuallyDrop<T>,
}

/// The context of an [`InContext`] value is gone: a `cudaDeviceReset` destroyed it, and with it the
/// value's handles. As an [`Error`]: `cudaErrorContextIsDestroyed`, with a hint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextGone;

impl From<ContextGone> for Error {
    fn from(_: ContextGone) -> Error {
        Error::Cuda(
            CudaError::new(sys::cudaError::cudaErrorContextIsDestroyed, "InContext::get")
                .with_hint("a cudaDeviceReset destroyed the context the value was made in: make a new one"),
        )
    }
}

impl<T> InContext<T> {
    /// `value`, made in the calling thread's current context (call it after the value's CUDA
    /// objects were made, which made the context current).
    pub fn new(value: T) -> Result<InContext<T>> {
        Ok(InContext::made_in(ContextTag::current()?, value))
    }

    /// `value`, made in `context`.
    pub fn made_in(context: ContextTag, value: T) -> InContext<T> {
        InContext { context, value: ManuallyDrop::new(value) }
    }

    /// The context the value was made in.
    pub fn context(&self) -> ContextTag {
        self.context
    }

    /// Whether the value's context still exists ([`ContextTag::alive`]).
    pub fn alive(&self) -> bool {
        self.context.alive()
    }

    /// The value, once its context is known to exist ([`ContextGone`] otherwise).
    pub fn get(&self) -> core::result::Result<&T, ContextGone> {
        if self.context.alive() {
            Ok(&self.value)
        } else {
            Err(ContextGone)
        }
    }

    /// The value, mutably, once its context is known to exist ([`ContextGone`] otherwise).
    pub fn get_mut(&mut self) -> core::result::Result<&mut T, ContextGone> {
        if self.context.alive() {
            Ok(&mut self.value)
        } else {
            Err(ContextGone)
        }
    }

    /// The value without a look at its context: for what makes no CUDA call on its handles
    /// (bookkeeping such as closing a staging ring, safe in a destroyed context too), or for a
    /// caller that has just looked ([`alive`](Self::alive)).
    pub fn unchecked(&self) -> &T {
        &self.value
    }

    /// [`unchecked`](Self::unchecked), mutably.
    pub fn unchecked_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> Drop for InContext<T> {
    /// Drops the value while its context lives; forgets it once the context is gone.
    fn drop(&mut self) {
        if self.context.alive() {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        }
    }
}

impl<T> core::fmt::Debug for InContext<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InContext").field("context", &self.context).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;

    /// A value of a context the driver cannot name is alive (see `ContextTag`) and dropped; one of a
    /// context that is gone is neither reachable nor dropped.
    #[test]
    fn a_value_of_a_destroyed_context_is_never_reached_nor_dropped() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static DROPPED: AtomicUsize = AtomicUsize::new(0);
        struct Counted;
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPPED.fetch_add(1, Ordering::SeqCst);
            }
        }
        let unnamed = ContextTag { device: Device::from_ordinal(0), id: None };
        let mut v = InContext::made_in(unnamed, Counted);
        assert!(v.alive() && v.get().is_ok() && v.get_mut().is_ok());
        drop(v);
        assert_eq!(DROPPED.load(Ordering::SeqCst), 1);
        // An id no context has (ids count up from 1 in a process): gone wherever a driver answers.
        let gone = ContextTag { device: Device::from_ordinal(0), id: Some(u64::MAX) };
        let v = InContext::made_in(gone, Counted);
        assert!(!v.alive());
        assert_eq!(v.get().err(), Some(ContextGone));
        let _ = v.unchecked();
        drop(v);
        assert_eq!(DROPPED.load(Ordering::SeqCst), 1, "a value of a destroyed context was dropped");
        let e = Error::from(ContextGone);
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorContextIsDestroyed));
    }
}
