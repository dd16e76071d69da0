//! The process-wide lock of the captures ordo begins in global mode, and the fence that keeps
//! capture-unsafe work out of them.
//!
//! Two threads capturing in `cudaStreamCaptureModeGlobal` at once crash the process inside libcuda,
//! and so does one global-mode capture while another thread makes a capture-unsafe call (a
//! synchronise, an instantiation), where CUDA documents a refused call and an invalidated capture
//! (`docs/cuda-behaviours.md`, CB-01 and CB-02). Thread-local and relaxed captures run clean. So:
//!
//! - every capture ordo begins in [`CaptureMode::Global`](super::CaptureMode::Global) holds this
//!   lock **exclusively** from its begin to its end: no two of them overlap, on any threads;
//! - a [`CaptureFence`] holds it **shared**: work done under a fence never overlaps a global-mode
//!   capture that ordo began. ordo's [`GraphCache`](super::cache::GraphCache) instantiates, uploads
//!   and destroys its graphs under a fence; a program fences its own capture-unsafe calls with
//!   [`capture_fence`];
//! - both are re-entrant on the thread that holds the lock exclusively: a capture nested inside a
//!   global-mode capture on the same thread (a conditional node's body captured on another stream,
//!   a graph cache run from inside a capture) and a fence taken there pass at once (the thread's
//!   own capture-unsafe calls inside its capture fail cleanly: that is CUDA's documented refusal,
//!   not the crash);
//! - a thread that holds a fence and begins a global-mode capture gets an error instead of waiting
//!   for itself.
//!
//! Every guard releases on every path out, a panic's unwinding included. The lock waits (a mutex
//! and a condition variable); it is taken per capture, never on a launch, record or wait.
//!
//! The lock cannot fence calls that do not take it: another library's, the program's own, and
//! ordo's own outside the graph cache. That is why global mode is written into the contract of
//! every API that lets the caller choose it.

use crate::error::{Error, Result};
use core::cell::{Cell, RefCell};
use core::marker::PhantomData;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::vec::Vec;

struct State {
    /// The thread that holds the lock exclusively, and how many times (nested global captures).
    owner: Option<ThreadId>,
    depth: usize,
    /// Fences held by threads other than the owner.
    fences: usize,
    /// Threads waiting to hold the lock exclusively: new fences wait behind them.
    waiting: usize,
}

static STATE: Mutex<State> = Mutex::new(State { owner: None, depth: 0, fences: 0, waiting: 0 });
static CHANGED: Condvar = Condvar::new();

std::thread_local! {
    /// Fences this thread holds that are counted in `State::fences` (those taken while it was not
    /// the owner, and those it took as the owner and still holds after its capture ended).
    static COUNTED: Cell<usize> = const { Cell::new(0) };
    /// Fences this thread took while it owned the lock, not counted in `State::fences` while it
    /// still owns it (its own captures do not fence it out). When its last global-mode capture
    /// ends they become counted fences: a fence held past the capture it was taken in still keeps
    /// other threads' global-mode captures out.
    static OWNED: Cell<usize> = const { Cell::new(0) };
    /// Streams whose global-mode capture this thread began with `StreamRef::begin_capture`: the
    /// lock is held for each until `StreamRef::end_capture` ends it.
    static BEGUN: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn state() -> MutexGuard<'static, State> {
    // Nothing panics while the state is changed: a poisoned lock is recovered as it is.
    crate::sync::lock(&STATE)
}

fn wait(s: MutexGuard<'static, State>) -> MutexGuard<'static, State> {
    crate::sync::wait(&CHANGED, s)
}

/// The lock held exclusively for one global-mode capture; released when dropped. Not `Send`: it
/// belongs to the thread that took it.
#[must_use = "the lock is held only while the guard lives"]
pub(crate) struct GlobalCapture {
    _thread: PhantomData<*const ()>,
}

/// Takes the lock exclusively for a global-mode capture on the calling thread: at once when the
/// thread holds it already (a nested capture), else once no other thread holds it or a fence.
/// `call` names the capture in the error given to a thread that holds a fence.
pub(crate) fn exclusive(call: &'static str) -> Result<GlobalCapture> {
    let me = std::thread::current().id();
    let mut s = state();
    if s.owner == Some(me) {
        s.depth += 1;
        return Ok(GlobalCapture { _thread: PhantomData });
    }
    if COUNTED.try_with(Cell::get).unwrap_or(0) > 0 {
        return Err(Error::invalid(
            call,
            "a global-mode capture cannot begin on a thread that holds a capture fence (it would wait for itself)",
        ));
    }
    s.waiting += 1;
    while s.owner.is_some() || s.fences > 0 {
        s = wait(s);
    }
    s.waiting -= 1;
    s.owner = Some(me);
    s.depth = 1;
    Ok(GlobalCapture { _thread: PhantomData })
}

impl GlobalCapture {
    /// Keeps the lock past this guard, until [`release_begun`] is called for `stream` on this
    /// thread (the capture `StreamRef::begin_capture` began, ended by `StreamRef::end_capture`).
    pub(crate) fn keep_until_end(self, stream: usize) {
        // During the thread's exit cleanup the record is gone: the lock is released at once then.
        if BEGUN.try_with(|b| b.borrow_mut().push(stream)).is_ok() {
            core::mem::forget(self);
        }
    }
}

/// Releases the lock kept for `stream` by [`GlobalCapture::keep_until_end`] on this thread, if any.
pub(crate) fn release_begun(stream: usize) {
    let kept = BEGUN
        .try_with(|b| {
            let mut b = b.borrow_mut();
            b.iter().rposition(|&s| s == stream).map(|i| b.swap_remove(i)).is_some()
        })
        .unwrap_or(false);
    if kept {
        drop(GlobalCapture { _thread: PhantomData });
    }
}

impl Drop for GlobalCapture {
    fn drop(&mut self) {
        let mut s = state();
        s.depth = s.depth.saturating_sub(1);
        if s.depth == 0 {
            s.owner = None;
            // Fences taken inside the capture and still held outlive it: from now on they fence
            // other threads' global-mode captures out, as any fence does.
            let kept = OWNED.try_with(|o| o.replace(0)).unwrap_or(0);
            if kept > 0 {
                s.fences += kept;
                let _ = COUNTED.try_with(|c| c.set(c.get() + kept));
            }
            drop(s);
            CHANGED.notify_all();
        }
    }
}

/// Capture-unsafe work fenced off from the global-mode captures ordo begins: while a fence is held,
/// no such capture is open on another thread, and none begins. Released when dropped; not `Send`.
#[must_use = "the fence holds only while the guard lives"]
pub struct CaptureFence {
    _thread: PhantomData<*const ()>,
}

/// Waits until no global-mode capture begun by ordo is open on another thread, and keeps new ones
/// from beginning until the fence is dropped. Hold it around capture-unsafe calls (a synchronise,
/// an instantiation, a `cudaMalloc` or `cudaFree`, a blocking copy) made while other threads may
/// run ordo's global-mode captures: such a call during a global-mode capture of another thread
/// crashes the process (see [`CaptureMode::Global`](super::CaptureMode::Global)).
///
/// Re-entrant: a thread that holds a fence, or that is itself inside a global-mode capture ordo
/// began, gets another at once. Do not begin a global-mode capture while holding a fence (refused
/// with an error), and do not wait for another thread's global-mode capture while holding one (it
/// waits for the fence: a deadlock).
pub fn capture_fence() -> CaptureFence {
    let me = std::thread::current().id();
    let held = COUNTED.try_with(Cell::get).unwrap_or(0);
    let mut s = state();
    if s.owner == Some(me) {
        // Inside the thread's own global-mode capture: not counted while it owns the lock (see
        // `OWNED`).
        let _ = OWNED.try_with(|o| o.set(o.get() + 1));
    } else {
        // A thread that holds a counted fence already (so no other thread can own the lock) takes
        // another at once, even past waiting captures: waiting behind them would wait for itself.
        while held == 0 && (s.owner.is_some() || s.waiting > 0) {
            s = wait(s);
        }
        s.fences += 1;
        drop(s);
        let _ = COUNTED.try_with(|c| c.set(held + 1));
    }
    CaptureFence { _thread: PhantomData }
}

impl Drop for CaptureFence {
    /// While the thread owns the lock every fence it holds is one of its own (a thread holding a
    /// counted fence cannot begin a global-mode capture); once it does not, every one is counted
    /// (its own became counted when its capture ended). So which count this fence leaves is the
    /// thread's state now, not the state it was taken in.
    fn drop(&mut self) {
        let me = std::thread::current().id();
        let mut s = state();
        if s.owner == Some(me) && OWNED.try_with(Cell::get).unwrap_or(0) > 0 {
            let _ = OWNED.try_with(|o| o.set(o.get() - 1));
            return;
        }
        let _ = COUNTED.try_with(|c| c.set(c.get().saturating_sub(1)));
        s.fences = s.fences.saturating_sub(1);
        let last = s.fences == 0;
        drop(s);
        if last {
            CHANGED.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn global_captures_never_overlap_and_nest_on_their_thread() {
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (inside, most) = (inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let _outer = exclusive("test").unwrap();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        {
                            let _nested = exclusive("test").unwrap();
                            let _fence = capture_fence();
                        }
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "two global captures overlapped");
    }

    #[test]
    fn fences_keep_global_captures_out_and_refuse_the_upgrade() {
        let fence = capture_fence();
        let nested = capture_fence();
        assert!(exclusive("test").is_err(), "a fence holder beginning a global capture would wait for itself");
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _g = exclusive("test").unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "began under a fence");
        drop(nested);
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "began under a fence");
        drop(fence);
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("released with the last fence");
        t.join().unwrap();
    }

    #[test]
    fn a_panicking_capture_releases_the_lock() {
        let r = std::thread::spawn(|| {
            let _g = exclusive("test").unwrap();
            panic!("deliberate panic inside a global capture");
        })
        .join();
        assert!(r.is_err());
        let _g = exclusive("test").unwrap();
        let _f = capture_fence();
    }

    /// A fence taken inside the thread's own global-mode capture and held past its end keeps
    /// other threads' global-mode captures out, as every fence does (taken while the thread owned
    /// the lock, it is not counted until the capture ends).
    #[test]
    fn a_fence_taken_inside_a_global_capture_still_fences_after_it_ends() {
        let capture = exclusive("test").unwrap();
        let fence = capture_fence();
        drop(capture);
        let (tx, rx) = std::sync::mpsc::channel();
        let other = std::thread::spawn(move || {
            let _g = exclusive("test").unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(),
            "another thread's global capture began while a fence was held"
        );
        assert!(exclusive("test").is_err(), "the fence holder beginning a global capture would wait for itself");
        let nested = capture_fence();
        drop(fence);
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err(), "began under a fence");
        drop(nested);
        rx.recv_timeout(std::time::Duration::from_secs(10)).expect("released with the last fence");
        other.join().unwrap();
        // Fences taken and dropped inside a capture leave nothing behind.
        let capture = exclusive("test").unwrap();
        drop(capture_fence());
        drop(capture);
        assert!(std::thread::spawn(|| exclusive("test").map(drop).is_ok()).join().unwrap());
    }

    #[test]
    fn a_capture_begun_by_hand_holds_the_lock_until_its_end() {
        exclusive("test").unwrap().keep_until_end(0x1234);
        let other = std::thread::spawn(|| {
            let _f = capture_fence();
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!other.is_finished(), "a fence passed an open global capture");
        release_begun(0x9999); // not begun here: nothing released
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!other.is_finished());
        release_begun(0x1234);
        other.join().unwrap();
    }
}
