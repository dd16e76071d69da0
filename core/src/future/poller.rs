//! The two threads ordo's futures share, started at first need and kept for the process:
//!
//! - the poller polls the events of [`Event::completion`](crate::Event::completion) futures
//!   (`cudaEventQuery`), with back-off: it yields between rounds for [`SPIN_WINDOW`] after the
//!   last completion or registration, then sleeps longer and longer (up to [`MAX_POLL_SLEEP`])
//!   while none come, and parks when no future waits on it. On Linux its timer slack is 1 us, so
//!   that a sleep of a few microseconds is not stretched to the default 50;
//! - the releaser releases what futures dropped before their work completed left behind (an
//!   [`InFlight`]'s buffers), once that work has completed: a stream callback may not call CUDA,
//!   and an executor thread should not wait on one. It is a thread of its own because a release
//!   may block (`cudaFreeHost` waits for the device): the poller's wakes go on meanwhile.
//!
//! Both relax their capture mode (`cudaThreadExchangeStreamCaptureMode`), so that their calls
//! neither fail nor invalidate another thread's capture in global mode.
//!
//! [`InFlight`]: super::InFlight

use super::slot::{Payload, WakeSlot};
use alloc::vec::Vec;
use core::time::Duration;
use ordo_cuda_sys as sys;
use std::sync::{Condvar, Mutex, MutexGuard, Once};

/// The longest the poller sleeps between two rounds of queries while events are pending: the
/// worst wake latency of an event completion once the poller has backed off.
pub const MAX_POLL_SLEEP: Duration = Duration::from_micros(200);

/// How long the poller keeps querying with only a yield between rounds after the last completion
/// or registration, before it backs off to sleeps: a wait shorter than this is seen within a
/// round (a query and a yield), a longer one within the back-off's sleep.
pub const SPIN_WINDOW: Duration = Duration::from_millis(1);

/// A queue and the condition variable its thread waits on.
struct Queue<T> {
    items: Mutex<Vec<T>>,
    work: Condvar,
}

impl<T> Queue<T> {
    const fn new() -> Self {
        Queue { items: Mutex::new(Vec::new()), work: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        crate::sync::lock(&self.items)
    }

    /// Adds `item` and wakes the thread. Allocates only if the queue is full.
    fn push(&self, item: T) {
        self.lock().push(item);
        self.work.notify_one();
    }
}

/// Slots registered since the poller last took them.
static POLLER: Queue<&'static WakeSlot> = Queue::new();
/// Payloads to release on the releaser thread.
static RELEASER: Queue<Payload> = Queue::new();

static START: Once = Once::new();
/// Set once both threads run; read to tell whether payloads can be released.
static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts the poller and releaser threads if they are not running; whether they run. Called on
/// threads where spawning is fine (never from a CUDA callback).
pub(super) fn ensure_started() -> bool {
    START.call_once(|| {
        let spawn = |name: &str, f: fn()| std::thread::Builder::new().name(name.into()).spawn(f).is_ok();
        // The releaser first: a poller without it would free slots whose payloads leak.
        let started = spawn("ordo-releaser", release) && spawn("ordo-poller", run);
        STARTED.store(started, std::sync::atomic::Ordering::Release);
    });
    STARTED.load(std::sync::atomic::Ordering::Acquire)
}

/// Hands `slot` (armed, with its event set) to the poller. Never allocates: the queue has room
/// for every slot there is ([`reserve_registrations`]), and a slot is in it at most once (it is
/// registered again only after the poller let go of it).
pub(super) fn register(slot: &'static WakeSlot) {
    POLLER.push(slot);
}

/// Gives the poller's queue room for `slots` registrations at once: called by the slab as it
/// grows (with its lock held, before the new slots can be handed out), so that a registration
/// never reallocates the queue. Without it, a burst of other threads' registrations could make
/// one thread's wait pay for the queue's growth.
pub(super) fn reserve_registrations(slots: usize) {
    let mut queue = POLLER.lock();
    let more = slots.saturating_sub(queue.len());
    queue.reserve(more);
}

/// How many registrations the poller's queue holds without reallocating (for tests).
#[cfg(test)]
pub(super) fn registration_capacity() -> usize {
    POLLER.lock().capacity()
}

/// Releases `payload` on the releaser thread (soon: the work that used it has completed). Makes no
/// CUDA call and does not spawn: the thread was started when the payload's future was made. If it
/// could not be started, the payload is leaked, never released early.
pub(super) fn release_later(payload: Payload) {
    if !STARTED.load(std::sync::atomic::Ordering::Acquire) {
        core::mem::forget(payload);
        return;
    }
    RELEASER.push(payload);
}

/// This thread's capture mode, relaxed for its life.
fn relax_capture_mode() {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable. The thread keeps the relaxed mode for its life.
    unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
}

/// The releaser: drops payloads (and frees what CUDA callbacks deferred) as they come.
fn release() {
    relax_capture_mode();
    let mut garbage: Vec<Payload> = Vec::new();
    loop {
        {
            let mut queue = RELEASER.lock();
            while queue.is_empty() && garbage.is_empty() {
                queue = crate::sync::wait(&RELEASER.work, queue);
            }
            garbage.append(&mut queue);
        }
        // Outside the lock: a payload's drop may call CUDA (`cudaFreeHost`), which may wait. A
        // panic in one drop must not end the thread: the rest are dropped at the next round.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // Frees are capture-unsafe: kept out of ordo's global-mode captures on other
            // threads (CB-02: such a call during one crashes the driver).
            let _fence = crate::graph::capture_fence();
            while let Some(payload) = garbage.pop() {
                drop(payload);
            }
            crate::callback::free_deferred();
        }));
    }
}

fn run() {
    relax_capture_mode();
    // The back-off's sleeps are microseconds: without this, Linux stretches each to 50 us.
    // SAFETY: PR_SET_TIMERSLACK takes a number of nanoseconds (an unsigned long) and sets this
    // thread's slack (threads it creates inherit it; none is made here).
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong)
    };
    let mut pending: Vec<&'static WakeSlot> = Vec::new();
    let mut quiet_rounds: u32 = 0;
    let mut progress = std::time::Instant::now();
    loop {
        {
            let mut queue = POLLER.lock();
            while pending.is_empty() && queue.is_empty() {
                quiet_rounds = 0;
                queue = crate::sync::wait(&POLLER.work, queue);
                progress = std::time::Instant::now();
            }
            if !queue.is_empty() {
                progress = std::time::Instant::now();
            }
            pending.append(&mut queue);
        }
        let before = pending.len();
        // A panic (a waker's) must not end the thread: the rest of the round goes on at the next
        // one (a slot whose waker panicked is let go there).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pending.retain(|slot| !slot.poll_event());
        }));
        if pending.len() < before {
            progress = std::time::Instant::now();
        }
        if pending.is_empty() {
            continue;
        }
        if progress.elapsed() < SPIN_WINDOW {
            quiet_rounds = 0;
            std::thread::yield_now();
        } else {
            // 1, 2, 4, ... microseconds, up to MAX_POLL_SLEEP; a registration or a payload cuts
            // the sleep short.
            let shift = quiet_rounds.min(16);
            quiet_rounds = quiet_rounds.saturating_add(1);
            let sleep = Duration::from_micros(1 << shift).min(MAX_POLL_SLEEP);
            let queue = POLLER.lock();
            if queue.is_empty() {
                drop(crate::sync::wait_timeout(&POLLER.work, queue, sleep));
            }
        }
    }
}
