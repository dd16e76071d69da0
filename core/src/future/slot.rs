//! Wake slots: the state a future shares with what wakes it (a stream callback on CUDA's thread,
//! or the poller thread). The future and the notifier may let go in either order, so the slot
//! outlives both: slots are never freed, only recycled. They live in chunks leaked once and are
//! handed out from a free list whose capacity is reserved when a chunk is added, so that
//! taking and returning a slot never allocates once the slab has grown to the number of waits
//! in flight at once. The poller's queue is given room for every slot as the slab grows, so
//! that handing a slot to the poller never allocates either.
//!
//! A slot's state and contents sit behind its own mutex, held for a few instructions by each
//! side (never across a wake, a drop of user data, or a wait on the GPU; the poller holds it
//! across one `cudaEventQuery`, which does not block). A slot the poller queries holds a
//! reference to its event, released (outside the lock) when the slot is freed.

use super::poller;
use crate::event::Event;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::task::{Poll, Waker};
use ordo_cuda_sys as sys;
use std::sync::{Mutex, MutexGuard};

/// Where a slot is in its life. Each transition is made under the slot's lock by the side named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotState {
    /// In the free list; nobody holds it.
    Free,
    /// Held by a future and by its notifier (a callback CUDA will call, or the poller).
    Armed,
    /// The notifier fired and let go (the result is in the slot); the future still holds it.
    Fired,
    /// The future let go (dropped before it saw the result); the notifier still holds it, and
    /// with it the payload the future left to be released after the work (an [`InFlight`]'s).
    ///
    /// [`InFlight`]: super::InFlight
    Abandoned,
}

/// A payload left by an abandoned future, released after the work by the releaser thread.
pub(super) type Payload = Box<dyn Send>;

struct SlotInner {
    state: SlotState,
    /// The notifier's result, once fired.
    code: sys::cudaError_t,
    /// The future's waker, while armed.
    waker: Option<Waker>,
    /// For the poller: the event it queries, kept alive by the slot (so that a future forgotten
    /// with `mem::forget` cannot leave the poller a destroyed event).
    event: Option<Arc<Event>>,
    /// What an abandoned future left to release after the work.
    payload: Option<Payload>,
}

/// One wake slot. See the [module documentation](self).
pub(super) struct WakeSlot {
    inner: Mutex<SlotInner>,
}

impl core::fmt::Debug for WakeSlot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WakeSlot").field("state", &self.lock().state).finish()
    }
}

impl WakeSlot {
    const fn new() -> WakeSlot {
        WakeSlot {
            inner: Mutex::new(SlotInner {
                state: SlotState::Free,
                code: sys::cudaError::cudaSuccess,
                waker: None,
                event: None,
                payload: None,
            }),
        }
    }

    /// The slot's lock. A panic while it was held (a waker's `clone` or `will_wake`) leaves it
    /// usable: every change under it is one assignment.
    fn lock(&self) -> MutexGuard<'_, SlotInner> {
        crate::sync::lock(&self.inner)
    }

    /// The state now (for tests).
    #[cfg(test)]
    pub(super) fn state(&self) -> SlotState {
        self.lock().state
    }

    /// Whether the notifier has fired and the future has not yet taken the result.
    pub(super) fn is_fired(&self) -> bool {
        self.lock().state == SlotState::Fired
    }

    /// The notifier's end (a callback on CUDA's thread): records `code` and wakes the future, or,
    /// if the future is gone, hands its payload to the releaser thread and frees the slot. Makes no
    /// CUDA call.
    pub(super) fn fire(&'static self, code: sys::cudaError_t) {
        let mut inner = self.lock();
        match inner.state {
            SlotState::Armed => {
                inner.code = code;
                if let Some(waker) = leave_armed(inner, SlotState::Fired) {
                    waker.wake();
                }
            }
            SlotState::Abandoned => {
                let payload = inner.payload.take();
                free_and_release(self, inner, payload);
            }
            // A notifier fires once, while it holds the slot: not reached.
            SlotState::Free | SlotState::Fired => {}
        }
    }

    /// The future's poll: the result once fired (the slot is then freed: the future holds it no
    /// more), else registers `waker` (keeping the one registered if it would wake the same task).
    pub(super) fn poll_fired(&'static self, waker: &Waker) -> Poll<sys::cudaError_t> {
        let mut inner = self.lock();
        match inner.state {
            SlotState::Armed => {
                let old = match &inner.waker {
                    Some(w) if w.will_wake(waker) => None,
                    _ => inner.waker.replace(waker.clone()),
                };
                drop(inner);
                drop(old);
                Poll::Pending
            }
            SlotState::Fired => {
                let code = inner.code;
                free(self, inner);
                Poll::Ready(code)
            }
            // The future holds the slot: not reached.
            SlotState::Free | SlotState::Abandoned => Poll::Ready(sys::cudaError::cudaErrorUnknown),
        }
    }

    /// The future lets go before it saw the result. Still armed: the payload stays in the slot
    /// until the notifier fires. Fired already: the slot is freed and the payload goes to the
    /// releaser thread (the work is done, but dropping it here may call CUDA, which is not this
    /// thread's to wait on). Never blocks, never calls CUDA; boxes the payload (one allocation)
    /// when there is one.
    pub(super) fn abandon<P: Send + 'static>(&'static self, payload: Option<P>) {
        let payload = payload.map(|p| Box::new(p) as Payload);
        let mut inner = self.lock();
        match inner.state {
            SlotState::Armed => {
                inner.payload = payload;
                drop(leave_armed(inner, SlotState::Abandoned));
            }
            SlotState::Fired => free_and_release(self, inner, payload),
            // The future holds the slot: not reached.
            SlotState::Free | SlotState::Abandoned => {}
        }
    }

    /// Frees a slot that was never given to a notifier (the enqueue failed).
    pub(super) fn unarm(&'static self) {
        let inner = self.lock();
        free(self, inner);
    }

    /// Arms the slot for the poller with the event it is to query.
    pub(super) fn set_event(&self, event: Arc<Event>) {
        self.lock().event = Some(event);
    }

    /// The poller's visit (the poller is the notifier of the slots it holds): an armed slot's
    /// event is queried (`cudaEventQuery`, which never blocks) and the future woken if it has
    /// completed; an abandoned slot is freed. Whether the poller is done with the slot.
    pub(super) fn poll_event(&'static self) -> bool {
        let mut inner = self.lock();
        match (inner.state, inner.event.as_ref()) {
            (SlotState::Armed, Some(event)) => {
                // SAFETY: a live event: the slot holds a reference to it.
                let code = unsafe { sys::cudaEventQuery(event.as_raw()) };
                if code == sys::cudaError::cudaErrorNotReady {
                    return false;
                }
                inner.state = SlotState::Fired;
                inner.code = code;
                let event = inner.event.take();
                let waker = inner.waker.take();
                drop(inner);
                drop(event);
                if let Some(waker) = waker {
                    // The poller is done with the slot whatever the waker does: a panic here must
                    // not leave the slot in the poller's list, where a later round could free it
                    // after its owner let it go and it was armed again (for another future).
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| waker.wake()));
                }
                true
            }
            // Only a slot of the poller's own (it still holds its event: a stream callback's slot
            // never has one) is freed here.
            (SlotState::Abandoned, Some(_)) => {
                let payload = inner.payload.take();
                free(self, inner);
                if let Some(payload) = payload {
                    // Its drop may block: not on the poller, whose other wakes would wait.
                    poller::release_later(payload);
                }
                true
            }
            // Not the poller's (or already let go): not reached.
            _ => true,
        }
    }
}

/// Resets `slot` (whose lock is `inner`) to free and returns it to the free list.
fn free(slot: &'static WakeSlot, mut inner: MutexGuard<'_, SlotInner>) {
    inner.state = SlotState::Free;
    inner.code = sys::cudaError::cudaSuccess;
    let event = inner.event.take();
    let waker = inner.waker.take();
    drop(inner);
    drop((event, waker));
    let mut slab = lock_slab();
    // Capacity for every slot was reserved when its chunk was added: no allocation here, which
    // may run on CUDA's callback thread.
    slab.free.push(slot);
}

/// One side lets go of an armed slot: the slot goes to `to` and is unlocked, and the future's
/// waker is returned, to be woken or dropped outside the lock.
fn leave_armed(mut inner: MutexGuard<'_, SlotInner>, to: SlotState) -> Option<Waker> {
    inner.state = to;
    let waker = inner.waker.take();
    drop(inner);
    waker
}

/// [`free`]s the slot, then hands `payload` (an abandoned future's) to the releaser thread:
/// dropping it may call CUDA, which is not this thread's to wait on.
fn free_and_release(slot: &'static WakeSlot, inner: MutexGuard<'_, SlotInner>, payload: Option<Payload>) {
    free(slot, inner);
    if let Some(payload) = payload {
        poller::release_later(payload);
    }
}

/// Slots added at a time.
const CHUNK: usize = 64;

/// The most slots there may be: the most waits in flight at once, over the whole process.
pub const MAX_WAITS_IN_FLIGHT: usize = 1 << 20;

struct Slab {
    free: Vec<&'static WakeSlot>,
    total: usize,
}

static SLAB: Mutex<Slab> = Mutex::new(Slab { free: Vec::new(), total: 0 });

fn lock_slab() -> MutexGuard<'static, Slab> {
    crate::sync::lock(&SLAB)
}

/// A free slot, armed (held by the caller's future and by the notifier it is about to give it
/// to). Allocates only while the slab grows; `None` past [`MAX_WAITS_IN_FLIGHT`].
pub(super) fn acquire() -> Option<&'static WakeSlot> {
    let mut slab = lock_slab();
    let slot = match slab.free.pop() {
        Some(slot) => slot,
        None => grow(&mut slab)?,
    };
    drop(slab);
    slot.lock().state = SlotState::Armed;
    Some(slot)
}

/// Adds a chunk of slots: one is returned, the rest go to the free list.
#[cold]
fn grow(slab: &mut Slab) -> Option<&'static WakeSlot> {
    if slab.total >= MAX_WAITS_IN_FLIGHT {
        return None;
    }
    let chunk: &'static [WakeSlot] =
        Box::leak((0..CHUNK).map(|_| WakeSlot::new()).collect::<Vec<_>>().into_boxed_slice());
    slab.total += CHUNK;
    // Room for every slot in the free list at once: pushes never reallocate.
    let want = slab.total.saturating_sub(slab.free.len());
    slab.free.reserve(want);
    // And room for every slot in the poller's queue: registrations never reallocate either.
    poller::reserve_registrations(slab.total);
    let (first, rest) = chunk.split_first()?;
    slab.free.extend(rest.iter());
    Some(first)
}

/// How many slots exist (for tests: the slab stops growing in steady state).
#[cfg(test)]
pub(super) fn total() -> usize {
    lock_slab().total
}
