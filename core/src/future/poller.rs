//! The one thread ordo's futures share, started at first need and kept for the process:
//!
//! - it polls the events of [`Event::completion`](crate::Event::completion) futures
//!   (`cudaEventQuery`), with back-off: it yields between rounds for [`SPIN_WINDOW`] after the
//!   last completion or registration, then sleeps longer and longer (up to [`MAX_POLL_SLEEP`])
//!   while none come, and parks when no future waits on it. On Linux its timer slack is 1 us, so
//!   that a sleep of a few microseconds is not stretched to the default 50;
//! - it releases what futures dropped before their work completed left behind (an [`InFlight`]'s
//!   buffers), once that work has completed: a stream callback may not call CUDA, and an executor
//!   thread should not wait on one.
//!
//! The thread relaxes its capture mode (`cudaThreadExchangeStreamCaptureMode`), so that its
//! queries neither fail nor invalidate another thread's capture in global mode.
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

struct Queue {
    /// Slots registered since the poller last took them.
    new: Vec<&'static WakeSlot>,
    /// Payloads to release on the poller thread.
    garbage: Vec<Payload>,
}

struct Poller {
    queue: Mutex<Queue>,
    work: Condvar,
}

static POLLER: Poller =
    Poller { queue: Mutex::new(Queue { new: Vec::new(), garbage: Vec::new() }), work: Condvar::new() };

static START: Once = Once::new();
/// Set once the thread runs; read to tell whether payloads can be released.
static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn lock() -> MutexGuard<'static, Queue> {
    crate::sync::lock(&POLLER.queue)
}

/// Starts the poller thread if it is not running; whether it runs. Called on threads where
/// spawning is fine (never from a CUDA callback).
pub(super) fn ensure_started() -> bool {
    START.call_once(|| {
        let spawned = std::thread::Builder::new().name("ordo-poller".into()).spawn(run);
        STARTED.store(spawned.is_ok(), std::sync::atomic::Ordering::Release);
    });
    STARTED.load(std::sync::atomic::Ordering::Acquire)
}

/// Hands `slot` (armed, with its event set) to the poller. Allocates only while the queue grows.
pub(super) fn register(slot: &'static WakeSlot) {
    lock().new.push(slot);
    POLLER.work.notify_one();
}

/// Releases `payload` on the poller thread (soon: the work that used it has completed). Makes no
/// CUDA call and does not spawn: the thread was started when the payload's future was made. If it
/// could not be started, the payload is leaked, never released early.
pub(super) fn release_later(payload: Payload) {
    if !STARTED.load(std::sync::atomic::Ordering::Acquire) {
        core::mem::forget(payload);
        return;
    }
    lock().garbage.push(payload);
    POLLER.work.notify_one();
}

fn run() {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable. The thread keeps the relaxed mode for its life.
    unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    // The back-off's sleeps are microseconds: without this, Linux stretches each to 50 us.
    // SAFETY: PR_SET_TIMERSLACK takes a number of nanoseconds (an unsigned long) and sets this
    // thread's slack (threads it creates inherit it; none is made here).
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong)
    };
    let mut pending: Vec<&'static WakeSlot> = Vec::new();
    let mut garbage: Vec<Payload> = Vec::new();
    let mut quiet_rounds: u32 = 0;
    let mut progress = std::time::Instant::now();
    loop {
        {
            let mut queue = lock();
            while pending.is_empty() && queue.new.is_empty() && queue.garbage.is_empty() {
                quiet_rounds = 0;
                queue = crate::sync::wait(&POLLER.work, queue);
                progress = std::time::Instant::now();
            }
            if !queue.new.is_empty() {
                progress = std::time::Instant::now();
            }
            pending.append(&mut queue.new);
            garbage.append(&mut queue.garbage);
        }
        let before = pending.len();
        // Outside the lock: a payload's drop may call CUDA (`cudaFreeHost`), which may wait. A
        // panic (a payload's drop, a waker) must not end the thread: the rest of the round goes
        // on at the next one (a slot whose waker panicked is let go there).
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if !garbage.is_empty() {
                // Frees are capture-unsafe: kept out of ordo's global-mode captures on other
                // threads (CB-02: such a call during one crashes the driver).
                let _fence = crate::graph::capture_fence();
                garbage.clear();
                crate::callback::free_deferred();
            }
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
            let queue = lock();
            if queue.new.is_empty() && queue.garbage.is_empty() {
                drop(crate::sync::wait_timeout(&POLLER.work, queue, sleep));
            }
        }
    }
}
