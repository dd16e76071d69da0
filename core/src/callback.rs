//! Code that CUDA calls back on a thread of its own: host functions (`cudaLaunchHostFunc`,
//! [`host_fn`](crate::host_fn)) and the destructors of user objects (the host state a graph owns,
//! [`user_object`](crate::graph::user_object)). CUDA forbids CUDA calls there (they may deadlock or
//! fail). This module
//!
//! - marks such code while it runs ([`run_callback`], [`in_cuda_callback`]), and catches and
//!   counts its panics, which must not unwind into the driver ([`take_panics`]);
//! - defers what such code lets go of but only CUDA can free: a resource whose last owner drops
//!   it on a callback thread (the staging ring's pinned memory, after the host function that
//!   ends the last copy from it, or after a graph holding one of its slots is destroyed) is
//!   handed to [`drop_outside_callbacks`], which keeps it for [`free_deferred`] on a thread where
//!   CUDA calls are allowed. The driver frees what is left at process exit.
//!
//! A deferred resource keeps the [`ContextTag`] of the context it was made in: once that context
//! is gone (`cudaDeviceReset`, which freed the resource with it), the resource is forgotten,
//! never handed to CUDA, whose new context may have reused its handles.

use crate::context::ContextTag;
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::Cell;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

std::thread_local! {
    /// Set while this thread runs ordo code called by CUDA (a host function, a user object's
    /// destructor), where CUDA calls are forbidden.
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Panics caught in callbacks since the last [`take_panics`].
static PANICS: AtomicUsize = AtomicUsize::new(0);

/// Whether the calling thread is running ordo code called back by CUDA (a host function or a
/// graph's host-state destructor), where no CUDA call may be made.
pub(crate) fn in_cuda_callback() -> bool {
    IN_CALLBACK.try_with(Cell::get).unwrap_or(false)
}

/// Runs `f` as CUDA callback code: marked for [`in_cuda_callback`] (the mark restored on every
/// path out), a panic caught and counted.
pub(crate) fn run_callback(f: impl FnOnce()) {
    struct Mark(bool);
    impl Drop for Mark {
        fn drop(&mut self) {
            let _ = IN_CALLBACK.try_with(|c| c.set(self.0));
        }
    }
    let _mark = Mark(IN_CALLBACK.try_with(|c| c.replace(true)).unwrap_or(false));
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        PANICS.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many callbacks (host functions, destructors of their closures) have panicked since the
/// last call, clearing the count. Process-wide.
pub(crate) fn take_panics() -> usize {
    PANICS.swap(0, Ordering::Relaxed)
}

/// Resources let go of on callback threads, with their contexts.
type Deferred = Vec<(ContextTag, Box<dyn Send>)>;

static DEFERRED: Mutex<Deferred> = Mutex::new(Vec::new());
/// Whether [`DEFERRED`] may hold something: read without the lock by [`free_deferred`].
static PENDING: AtomicBool = AtomicBool::new(false);

/// Drops `resource` (made in `context`) now, or, on a CUDA callback thread, keeps it for
/// [`free_deferred`]. Either way a resource of a context that is gone is forgotten, not dropped.
pub(crate) fn drop_outside_callbacks(context: ContextTag, resource: Box<dyn Send>) {
    if in_cuda_callback() {
        let mut list = crate::sync::lock(&DEFERRED);
        list.push((context, resource));
        PENDING.store(true, Ordering::Release);
    } else {
        drop_in(context, resource);
    }
}

/// Drops `resource` if its context lives; forgets it otherwise. Whether it was dropped.
fn drop_in(context: ContextTag, resource: Box<dyn Send>) -> bool {
    if context.alive() {
        drop(resource);
        true
    } else {
        core::mem::forget(resource);
        false
    }
}

/// Frees the resources whose last holder let go on a CUDA callback thread, where CUDA calls are
/// forbidden (the pinned memory and probe events of staging rings, and the green contexts of SM
/// partitions that a graph held last); returns how many were freed. Resources of a context
/// destroyed since (`cudaDeviceReset`) are forgotten instead, never freed: CUDA freed them with the
/// context, and the new context may have reused their handles.
/// [`StagingRing::new`](crate::staging::StagingRing::new), the drop of a ring handle and
/// `SmSplit::new` call it; nothing on a callback thread does. Like every `cudaFreeHost`, it is refused inside a capture
/// in global or thread-local mode (the capture is invalidated): call it outside captures.
pub fn free_deferred() -> usize {
    if in_cuda_callback() || !PENDING.swap(false, Ordering::Acquire) {
        return 0;
    }
    let list = core::mem::take(&mut *crate::sync::lock(&DEFERRED));
    list.into_iter().map(|(context, resource)| drop_in(context, resource)).filter(|&freed| freed).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts its drops.
    struct Probe(&'static AtomicUsize);
    impl Drop for Probe {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn resources_of_a_destroyed_context_are_forgotten_not_freed() {
        static FREED: AtomicUsize = AtomicUsize::new(0);
        // A context that is not the device's current one (here: no driver, or an id no context
        // has): gone, as after cudaDeviceReset. Its resources are forgotten.
        let gone = ContextTag { device: crate::Device::from_ordinal(0), id: Some(u64::MAX) };
        assert!(!gone.alive());
        assert!(!drop_in(gone, Box::new(Probe(&FREED))));
        assert_eq!(FREED.load(Ordering::SeqCst), 0, "freed in a destroyed context");
        // A driver that cannot tell contexts apart: alive, freed as before.
        let unknown = ContextTag { device: crate::Device::from_ordinal(0), id: None };
        assert!(drop_in(unknown, Box::new(Probe(&FREED))));
        assert_eq!(FREED.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn what_a_callback_lets_go_of_waits_for_free_deferred() {
        static FREED: AtomicUsize = AtomicUsize::new(0);
        let alive = ContextTag { device: crate::Device::from_ordinal(0), id: None };
        // Outside a callback: dropped at once.
        drop_outside_callbacks(alive, Box::new(Probe(&FREED)));
        assert_eq!(FREED.load(Ordering::SeqCst), 1);
        // Inside one (as CUDA's thread would run it): kept, and free_deferred there does nothing.
        run_callback(|| {
            assert!(in_cuda_callback());
            drop_outside_callbacks(alive, Box::new(Probe(&FREED)));
            assert_eq!(free_deferred(), 0, "no free on a callback thread");
        });
        assert!(!in_cuda_callback(), "the mark is cleared after the callback");
        assert_eq!(FREED.load(Ordering::SeqCst), 1, "kept while on the callback thread");
        free_deferred();
        assert_eq!(FREED.load(Ordering::SeqCst), 2, "freed by free_deferred");
    }

    #[test]
    fn a_panicking_callback_is_counted_and_the_mark_restored() {
        run_callback(|| panic!("a test panic inside a callback"));
        assert!(!in_cuda_callback());
        assert!(take_panics() >= 1);
    }
}
