//! The staging pattern: a ring of pinned host slots. A loader thread takes a free slot, fills it,
//! and enqueues its copy to the device; a host function enqueued after the copy marks the slot free
//! again once the copy has finished. No blocking synchronise on the way (the loader waits only for
//! a slot to come free, a host-side wait), except on an error path, which says so.
//!
//! Memory ordering: a slot is marked free by a `Release` store made after CUDA has completed the
//! copy (in the host function, or after a synchronise on an error path), and taken by an `Acquire`
//! compare-exchange, so a slot is never written while its copy still reads it.
//!
//! # Slots in graphs
//! [`StagingRing::submit`] on a capturing stream captures the copy into the capture's graph. The
//! slot then belongs to that graph: every launch of an executable graph made from it copies the
//! slot's contents (as filled before `submit`, never written again) to the destination, and the
//! slot stays reserved, never handed out by [`acquire`](StagingRing::acquire), until the last graph
//! or executable graph holding it is destroyed (a CUDA user object); then it is free again. The
//! ring's pinned memory lives as long as any graph holds one of its slots.
//!
//! # Freeing the pinned memory
//! The memory is freed (`cudaFreeHost`) when the last holder lets go: the ring's handles, the
//! slots taken from it, the copies in flight and the graphs holding slots. When that last holder
//! lets go on a CUDA callback thread (a host function or a graph's destructor, where CUDA calls
//! are forbidden), the free is deferred to the next [`StagingRing::new`] or drop of a ring handle,
//! or to [`free_deferred`]; the driver frees it at process exit otherwise. A submit whose copy
//! was enqueued but could not be followed (see [`StagingRing::submit`]'s errors) waits until the
//! stream can run nothing more before it frees the slot, so no slot is freed under a copy.
//!
//! # Tickets
//! [`StagingRing::acquire_ticket`] hands out a slot under a [`Ticket`], a plain number (for callers
//! that cannot hold a [`Slot`], such as the C ABI): the slot's memory is the caller's to fill
//! until the ticket is redeemed ([`StagingRing::redeem`], then [`StagingRing::submit`]) or
//! released ([`StagingRing::release_ticket`]). Tickets come from a counter that is never reused:
//! a ticket already submitted or released is refused for good, and never names a slot handed out
//! again since. A slot held by a ticket comes free only when its holder submits or releases it, so
//! a waiting acquire does not wait for it (see [`StagingRing::acquire`]).
//!
//! # Closing
//! [`StagingRing::close`] releases every ticket, refuses every later acquire, and makes acquires
//! waiting on other threads return: a ring whose owner has gone can no longer hold a thread.
//!
//! # After `cudaDeviceReset`
//! The ring remembers the CUDA context its pinned memory and probe event were made in. Once that
//! context is gone, the ring touches neither again: its memory and event are forgotten (CUDA freed
//! them with the context), never passed to `cudaFreeHost` or `cudaEventDestroy` (whose handles the
//! new context may have reused), and acquires return `cudaErrorContextIsDestroyed`.

use crate::context::ContextTag;
use crate::error::{CudaError, Error, Result};
use crate::event::Event;
use crate::graph::{capture_target, invalidated, user_object, CaptureTarget};
use crate::host_fn::{in_cuda_callback, launch_once, HostCall};
use crate::memory::{copy, order, DeviceCopy, DeviceSliceMut, HostAllocFlags, PinnedBuffer, PinnedSlice};
use crate::stream::StreamRef;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use ordo_cuda_sys as sys;
use std::sync::{Mutex, MutexGuard, PoisonError};

const FREE: u8 = 0;
const FILLING: u8 = 1;
const IN_FLIGHT: u8 = 2;
/// Reserved by a graph that captured the slot's copy.
const GRAPH: u8 = 3;
/// Held by a [`Ticket`] not yet redeemed or released.
const TICKET: u8 = 5;

/// How many failed attempts [`StagingRing::acquire`] makes between checks of the context and of
/// the slots' states.
const CHECK_EVERY: u32 = 256;

/// What must be freed outside CUDA callbacks.
struct Resources<T: DeviceCopy> {
    /// Held for its drop (`cudaFreeHost`); the slots are reached through `Shared::base`.
    _memory: PinnedBuffer<T>,
    /// Never recorded: queried to learn whether the context is lost.
    probe: Event,
}

/// The slots' states and the tickets: the ring's bookkeeping, apart from its CUDA resources (and
/// testable without them).
struct Slots {
    state: Box<[AtomicU8]>,
    /// Tickets issued and not yet redeemed or released: ticket -> slot index.
    tickets: Mutex<BTreeMap<u64, usize>>,
    /// The next ticket; never reused.
    /// Set by [`StagingRing::close`] (under the tickets' lock).
    closed: AtomicBool,
}

/// Why no slot came.
enum NoSlot {
    /// None is free now.
    Busy,
    /// The ring is closed.
    Closed,
}

impl Slots {
    /// `count` free slots; `None` when the states' allocation fails.
    fn new(count: usize) -> Option<Slots> {
        let mut state = Vec::new();
        state.try_reserve_exact(count).ok()?;
        state.extend((0..count).map(|_| AtomicU8::new(FREE)));
        Some(Slots {
            state: state.into_boxed_slice(),
            tickets: Mutex::new(BTreeMap::new()),
            closed: AtomicBool::new(false),
        })
    }

    fn tickets(&self) -> MutexGuard<'_, BTreeMap<u64, usize>> {
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, index: usize, state: u8) {
        self.state[index].store(state, Ordering::Release);
    }

    fn count(&self, state: u8) -> usize {
        self.state.iter().filter(|s| s.load(Ordering::Acquire) == state).count()
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes a free slot into state `to` (never blocks).
    fn take_free(&self, to: u8) -> core::result::Result<usize, NoSlot> {
        if self.closed() {
            return Err(NoSlot::Closed);
        }
        for (index, state) in self.state.iter().enumerate() {
            if state.compare_exchange(FREE, to, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                // A slot that `close` released from a ticket: close marks the ring closed before
                // it frees the slot (Release), so the Acquire above sees the mark. The slot goes
                // back, and the closed ring hands nothing out.
                if self.closed() {
                    state.store(FREE, Ordering::Release);
                    return Err(NoSlot::Closed);
                }
                return Ok(index);
            }
        }
        Err(NoSlot::Busy)
    }

    /// Takes a free slot into state `to`, waiting (yielding the thread) while one may come free.
    /// `lost` is asked first and then every [`CHECK_EVERY`] attempts: an error there (the context
    /// is lost or gone) ends the wait. So do [`close`](Self::close) (checked at every attempt)
    /// and a ring whose every slot is held by a ticket or a graph (see
    /// [`stuck`](Self::stuck)).
    fn wait_free(&self, to: u8, call: &'static str, lost: impl Fn() -> Option<Error>) -> Result<usize> {
        let mut attempts = 0u32;
        loop {
            match self.take_free(to) {
                Ok(index) => return Ok(index),
                Err(NoSlot::Closed) => return Err(closed(call)),
                Err(NoSlot::Busy) => {}
            }
            if attempts % CHECK_EVERY == 0 {
                if let Some(e) = lost() {
                    return Err(e);
                }
                self.stuck(call)?;
            }
            attempts = attempts.wrapping_add(1);
            std::thread::yield_now();
        }
    }

    /// An error when no slot can come free without the caller's own doing: every slot is held
    /// by a graph or by a ticket (which comes free only when its holder submits or releases it).
    /// With a ticket among them: `cudaErrorNotReady`, as for a ring with no free slot; with
    /// graphs only: a usage error.
    fn stuck(&self, call: &'static str) -> Result<()> {
        let mut tickets = false;
        for s in self.state.iter() {
            match s.load(Ordering::Acquire) {
                GRAPH => {}
                TICKET => tickets = true,
                _ => return Ok(()),
            }
        }
        if tickets {
            Err(Error::Cuda(
                CudaError::new(sys::cudaError::cudaErrorNotReady, call).with_hint(
                    "no slot can come free by waiting: every slot is held by a ticket not yet submitted or released, or by a graph",
                ),
            ))
        } else {
            Err(Error::invalid(
                call,
                "no slot can come free: every slot is held by a graph (drop the graphs that captured them)",
            ))
        }
    }

    /// Records a ticket for slot `index` (in state [`TICKET`]); frees the slot and refuses when
    /// the ring was closed meanwhile.
    fn issue(&self, index: usize, call: &'static str) -> Result<Ticket> {
        let mut tickets = self.tickets();
        if self.closed() {
            self.set(index, FREE);
            return Err(closed(call));
        }
        let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
        tickets.insert(ticket, index);
        Ok(Ticket(ticket))
    }

    /// The slot of a held ticket, taken out of the table (the ticket is used up); the slot moves
    /// to state `to`.
    fn take_ticket(&self, ticket: Ticket, to: u8) -> Option<usize> {
        let index = self.tickets().remove(&ticket.0)?;
        self.set(index, to);
        Some(index)
    }

    fn holds(&self, ticket: &Ticket) -> bool {
        self.tickets().contains_key(&ticket.0)
    }

    /// Closes: later acquires are refused, waiting ones return, every ticket is released.
    fn close(&self) {
        let mut tickets = self.tickets();
        self.closed.store(true, Ordering::Release);
        for (_, index) in core::mem::take(&mut *tickets) {
            self.set(index, FREE);
        }
    }
}

fn closed(call: &'static str) -> Error {
    Error::invalid(call, "the ring is closed (StagingRing::close)")
}

struct Shared<T: DeviceCopy> {
    resources: ManuallyDrop<Resources<T>>,
    /// The context `resources` belong to.
    context: ContextTag,
    /// The pinned memory's first element, taken from an exclusive borrow at creation: each slot
    /// writes and reads its own range through it.
    base: NonNull<T>,
    slots: Slots,
    slot_len: usize,
}

// SAFETY: the slot states are atomics, the tickets behind a lock; each slot's range is accessed by
// one `Slot` or ticket holder at a time (FILLING, TICKET) or by CUDA (IN_FLIGHT, GRAPH); the rest
// is read-only after creation. `T: DeviceCopy` is `Send + Sync`.
unsafe impl<T: DeviceCopy> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> Sync for Shared<T> {}

impl<T: DeviceCopy> Shared<T> {
    /// The first element of slot `index` (`< count`, as every lease's is).
    fn slot_ptr(&self, index: usize) -> *mut T {
        // SAFETY: `index < count` and `count * slot_len` elements were allocated (checked at
        // creation), so the offset stays inside the allocation.
        unsafe { self.base.as_ptr().add(index * self.slot_len) }
    }

    /// Whether the context is gone (`cudaErrorContextIsDestroyed`: a `cudaDeviceReset`, the probe
    /// event then never touched) or lost (the probe event's query fails with a sticky error). The
    /// query runs with this thread's capture mode relaxed, so it neither fails nor invalidates
    /// another thread's global-mode capture (CUDA 13.0 refuses an event query then, and the
    /// capture is lost).
    fn context_lost(&self) -> Option<Error> {
        if !self.context.alive() {
            return Some(context_destroyed());
        }
        let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
        // SAFETY: `mode` is writable; the previous mode comes back in it.
        if unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } != sys::cudaError::cudaSuccess {
            return None;
        }
        let status = self.resources.probe.query();
        // SAFETY: restores the thread's mode.
        unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
        status.err().filter(Error::is_sticky)
    }
}

fn context_destroyed() -> Error {
    Error::Cuda(
        CudaError::new(sys::cudaError::cudaErrorContextIsDestroyed, "StagingRing")
            .with_hint("a cudaDeviceReset destroyed the ring's context: make a new ring"),
    )
}

impl<T: DeviceCopy> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; not used afterwards.
        let resources = unsafe { ManuallyDrop::take(&mut self.resources) };
        defer_or_drop(self.context, Box::new(resources));
    }
}

/// Frees now, or later when on a CUDA callback thread; forgets, never frees, what belongs to a
/// context that is gone (`cudaDeviceReset` freed it; its handles may have been reused since).
fn defer_or_drop(context: ContextTag, resources: Box<dyn Send>) {
    if in_cuda_callback() {
        let mut list = DEFERRED.lock().unwrap_or_else(PoisonError::into_inner);
        list.push((context, resources));
        PENDING.store(true, Ordering::Release);
    } else {
        drop_in(context, resources);
    }
}

/// Drops `resources` if their context lives; forgets them otherwise. Whether they were dropped.
fn drop_in(context: ContextTag, resources: Box<dyn Send>) -> bool {
    if context.alive() {
        drop(resources);
        true
    } else {
        core::mem::forget(resources);
        false
    }
}

type Deferred = Vec<(ContextTag, Box<dyn Send>)>;

static DEFERRED: Mutex<Deferred> = Mutex::new(Vec::new());
static PENDING: AtomicBool = AtomicBool::new(false);

/// Frees the pinned memory (and probe events) of rings whose last holder let go on a CUDA
/// callback thread, where CUDA calls are forbidden; returns how many rings' resources were freed.
/// Resources of a context destroyed since (`cudaDeviceReset`) are forgotten instead, never
/// freed: CUDA freed them with the context, and the new context may have reused their handles.
/// [`StagingRing::new`] and the drop of a ring handle call it; nothing on a callback thread does.
/// Like every `cudaFreeHost`, it is refused inside a capture in global or thread-local mode (the
/// capture is invalidated): call it outside captures.
pub fn free_deferred() -> usize {
    if in_cuda_callback() || !PENDING.swap(false, Ordering::Acquire) {
        return 0;
    }
    let list = core::mem::take(&mut *DEFERRED.lock().unwrap_or_else(PoisonError::into_inner));
    list.into_iter().map(|(context, resources)| drop_in(context, resources)).filter(|&freed| freed).count()
}

/// A slot held under a number rather than a [`Slot`] value: see [`StagingRing::acquire_ticket`].
/// Tickets are never reused, by any ring of the process (one 64-bit counter), so a ticket of
/// another ring, or one used up, is refused. Not `Clone`: redeeming or releasing it consumes the
/// only copy, so safe code cannot take a slot away from the ticket's holder.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// The next ticket number, for every ring of the process (0 is never issued).
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

impl Ticket {
    /// The ticket with this number (as [`into_raw`](Self::into_raw) gave it). A number the ring
    /// did not issue, or whose ticket was used up, is refused by the ring.
    ///
    /// # Safety
    /// If `raw` names a ticket the ring holds now, the caller is that ticket's holder (the code
    /// that got it from [`StagingRing::acquire_ticket`], or was handed it): redeeming or
    /// releasing it ends the holder's right to write the slot through the pointer
    /// `acquire_ticket` returned, so a ticket made from a number may be used only by the code
    /// that no longer writes the slot.
    pub const unsafe fn from_raw(raw: u64) -> Ticket {
        Ticket(raw)
    }

    /// The ticket's number (never 0), for a caller that must pass it as a number (the C ABI).
    pub const fn into_raw(self) -> u64 {
        self.0
    }

    /// The ticket's number, keeping the ticket.
    pub const fn number(&self) -> u64 {
        self.0
    }
}

/// A ring of pinned staging slots. Clone it (cheaply) to hand it to a loader thread.
pub struct StagingRing<T: DeviceCopy> {
    shared: Arc<Shared<T>>,
}

impl<T: DeviceCopy> Clone for StagingRing<T> {
    fn clone(&self) -> Self {
        StagingRing { shared: Arc::clone(&self.shared) }
    }
}

impl<T: DeviceCopy> Drop for StagingRing<T> {
    fn drop(&mut self) {
        free_deferred();
    }
}

/// A slot's reservation: while it lives, the slot is not handed out. Dropped, it marks the slot
/// free (after its copy, wherever it was moved to wait for it).
struct Lease<T: DeviceCopy> {
    shared: Arc<Shared<T>>,
    index: usize,
}

impl<T: DeviceCopy> Lease<T> {
    fn set(&self, state: u8) {
        self.shared.slots.set(self.index, state);
    }
}

impl<T: DeviceCopy> Drop for Lease<T> {
    fn drop(&mut self) {
        self.set(FREE);
    }
}

/// The host function after a copy: dropping the lease marks the slot free.
impl<T: DeviceCopy> HostCall for Lease<T> {
    fn call(self) {}
}

/// A slot taken for filling. Write into it through `DerefMut`, then [`StagingRing::submit`] it.
/// Dropped without submitting, it is free again.
pub struct Slot<T: DeviceCopy> {
    lease: Lease<T>,
}

impl<T: DeviceCopy> StagingRing<T> {
    /// The most slots a ring may have.
    pub const MAX_SLOTS: usize = 1 << 16;

    /// `count` slots of `slot_len` elements each, in one pinned allocation, zeroed. A usage error
    /// for zero slots or elements, more than [`MAX_SLOTS`](Self::MAX_SLOTS) slots, or a size that
    /// overflows; `cudaErrorMemoryAllocation` when the host cannot allocate the bookkeeping.
    pub fn new(count: usize, slot_len: usize) -> Result<StagingRing<T>> {
        const CALL: &str = "StagingRing::new";
        if count == 0 || slot_len == 0 {
            return Err(Error::invalid(CALL, "zero slots or zero slot length"));
        }
        if count > Self::MAX_SLOTS {
            return Err(Error::invalid(CALL, "more than StagingRing::MAX_SLOTS slots"));
        }
        let total = count.checked_mul(slot_len).ok_or(Error::invalid(CALL, "count * slot_len overflows"))?;
        let slots =
            Slots::new(count).ok_or(Error::Cuda(CudaError::new(sys::cudaError::cudaErrorMemoryAllocation, CALL)))?;
        free_deferred();
        let mut memory = PinnedBuffer::zeroed(total, HostAllocFlags::empty())?;
        let probe = Event::new()?;
        let context = ContextTag::current()?;
        let base = NonNull::new(memory.pinned_mut().as_mut_ptr()).ok_or(Error::invalid(CALL, "null pinned memory"))?;
        let shared = Shared {
            resources: ManuallyDrop::new(Resources { _memory: memory, probe }),
            context,
            base,
            slots,
            slot_len,
        };
        Ok(StagingRing { shared: Arc::new(shared) })
    }

    /// Elements a slot.
    pub fn slot_len(&self) -> usize {
        self.shared.slot_len
    }

    /// Number of slots.
    pub fn slot_count(&self) -> usize {
        self.shared.slots.state.len()
    }

    fn slot(&self, index: usize) -> Slot<T> {
        Slot { lease: Lease { shared: Arc::clone(&self.shared), index } }
    }

    /// A free slot, if there is one now (never blocks); `None` also once the ring is closed.
    pub fn try_acquire(&self) -> Option<Slot<T>> {
        self.shared.slots.take_free(FILLING).ok().map(|index| self.slot(index))
    }

    /// A free slot, waiting on the host (yielding the thread) until a copy in flight completes or a
    /// slot being filled is dropped.
    ///
    /// Returns an error instead of waiting forever when no slot can come free: the CUDA context is
    /// lost (a sticky error; host functions never run again) or gone (`cudaDeviceReset`:
    /// `cudaErrorContextIsDestroyed`); every slot is held by a graph (a usage error); every
    /// slot is held by a ticket or a graph, with at least one ticket (`cudaErrorNotReady`: a
    /// ticket comes free only when its holder submits or releases it); the ring was closed, before
    /// or during the wait ([`close`](Self::close): a usage error). These are checked when the
    /// wait begins and then every few hundred attempts, the close at every attempt. It cannot tell
    /// a slot filled (and never submitted) by this very thread, nor a [`Slot`] forgotten
    /// (`mem::forget`) or parked where nobody will submit or drop it: taking more slots than the
    /// ring has without giving any back waits for ever, as a channel or a mutex would.
    pub fn acquire(&self) -> Result<Slot<T>> {
        let shared = &self.shared;
        let index = shared.slots.wait_free(FILLING, "StagingRing::acquire", || shared.context_lost())?;
        Ok(self.slot(index))
    }

    /// A free slot held under a [`Ticket`], and the slot's first element: the caller may write
    /// the slot's [`slot_len`](Self::slot_len) elements through that pointer until it redeems
    /// ([`redeem`](Self::redeem)) or releases ([`release_ticket`](Self::release_ticket)) the
    /// ticket, or the ring is closed (which releases it); never after, nor after the last handle
    /// of the ring is dropped. The ring's memory is initialised (zeroed at creation).
    ///
    /// With `wait` false: `cudaErrorNotReady` when no slot is free now. With `wait` true: waits
    /// as [`acquire`](Self::acquire) does, with the same errors, except that when every slot is
    /// held by a graph it returns `cudaErrorNotReady` too (nothing can come free by
    /// waiting). A closed ring: a usage error ([`is_closed`](Self::is_closed) tells).
    pub fn acquire_ticket(&self, wait: bool) -> Result<(Ticket, NonNull<T>)> {
        const CALL: &str = "StagingRing::acquire_ticket";
        let shared = &self.shared;
        let index = if wait {
            shared.slots.wait_free(TICKET, CALL, || shared.context_lost()).map_err(|e| match e {
                Error::Usage(_) if !shared.slots.closed() => Error::Cuda(
                    CudaError::new(sys::cudaError::cudaErrorNotReady, CALL)
                        .with_hint("no slot can come free by waiting: every slot is held by a graph"),
                ),
                e => e,
            })?
        } else {
            match shared.slots.take_free(TICKET) {
                Ok(index) => index,
                Err(NoSlot::Closed) => return Err(closed(CALL)),
                Err(NoSlot::Busy) => return Err(Error::Cuda(CudaError::new(sys::cudaError::cudaErrorNotReady, CALL))),
            }
        };
        let ticket = shared.slots.issue(index, CALL)?;
        // `slot_ptr` is inside the allocation, whose base is not null.
        let ptr = NonNull::new(shared.slot_ptr(index)).unwrap_or(shared.base);
        Ok((ticket, ptr))
    }

    /// The slot held by `ticket`, to [`submit`](Self::submit) (or drop, which frees it); the
    /// ticket is used up. `None` for a ticket this ring does not hold: never issued by it, already
    /// redeemed or released, or released by [`close`](Self::close).
    pub fn redeem(&self, ticket: Ticket) -> Option<Slot<T>> {
        let index = self.shared.slots.take_ticket(ticket, FILLING)?;
        Some(self.slot(index))
    }

    /// Frees the slot held by `ticket` without submitting it; the ticket is used up. `false` for a
    /// ticket this ring does not hold (as [`redeem`](Self::redeem)).
    pub fn release_ticket(&self, ticket: Ticket) -> bool {
        self.shared.slots.take_ticket(ticket, FREE).is_some()
    }

    /// Whether the ring holds `ticket` now (issued, not yet redeemed or released).
    pub fn holds_ticket(&self, ticket: &Ticket) -> bool {
        self.shared.slots.holds(ticket)
    }

    /// Closes the ring, for every handle of it: releases every ticket (their slots' memory must
    /// no longer be written), makes [`acquire`](Self::acquire) and
    /// [`acquire_ticket`](Self::acquire_ticket) refuse from now on (waiting ones, on other
    /// threads, return), and [`try_acquire`](Self::try_acquire) return `None`. Slots already held
    /// as [`Slot`] values may still be submitted; copies in flight and graphs are unaffected.
    /// Closing twice is harmless.
    pub fn close(&self) {
        self.shared.slots.close();
    }

    /// Whether [`close`](Self::close) was called on any handle of this ring.
    pub fn is_closed(&self) -> bool {
        self.shared.slots.closed()
    }

    /// Enqueues the copy of the first `len` elements of `slot` to `dst` on `stream`, and a host
    /// function that frees the slot once the copy has finished. Returns at once.
    ///
    /// `dst` may belong to a buffer of another stream (its [`origin`](DeviceSliceMut::origin)):
    /// the copy is then ordered after the work queued there so far, and the origin after the copy
    /// (an event each way, see [`order`]), so the buffer's later free waits for the copy. A view
    /// without an origin (made by `from_raw_parts`) is ordered by its maker's contract.
    ///
    /// On a capturing stream the copy is captured instead, and the slot is given to the capture's
    /// graph (see the [module documentation](self)): each replay copies the slot's contents to
    /// `dst`, whose memory the capture's contract ([`capture`](crate::graph::capture)) keeps valid
    /// at every replay; no ordering with the origin is added inside a graph. On a stream whose
    /// capture was invalidated, nothing is enqueued.
    ///
    /// Errors: a length that is zero, over the slot's, or not `dst`'s; a slot of another ring. If
    /// the copy could not be enqueued, the slot is free again. If the copy was enqueued but
    /// ordering it with the origin or enqueuing the host function failed, this synchronises
    /// `stream` (an error path: the copy must be complete before `dst`'s buffer may be freed and
    /// the slot reused; should the synchronise fail too, it waits until the stream can run nothing
    /// more), frees the slot, and returns the error. Inside a capture, a slot given to the graph
    /// stays the graph's on every error after that.
    pub fn submit(&self, slot: Slot<T>, len: usize, dst: DeviceSliceMut<'_, T>, stream: StreamRef<'_>) -> Result<()> {
        const CALL: &str = "StagingRing::submit";
        if !Arc::ptr_eq(&slot.lease.shared, &self.shared) {
            return Err(Error::invalid(CALL, "the slot belongs to another ring"));
        }
        if len == 0 || len > self.shared.slot_len || dst.len() != len {
            return Err(Error::invalid(CALL, "len must be 1..=slot_len and equal to dst's length"));
        }
        match capture_target(stream)? {
            CaptureTarget::None => submit_now(slot.lease, len, dst, stream),
            CaptureTarget::Active(graph) => submit_captured(slot.lease, graph, len, dst, stream),
            CaptureTarget::Invalidated => Err(invalidated(CALL)),
        }
    }

    /// Slots that are free now.
    pub fn free_slots(&self) -> usize {
        self.shared.slots.count(FREE)
    }

    /// Slots reserved by graphs that captured their copies.
    pub fn graph_slots(&self) -> usize {
        self.shared.slots.count(GRAPH)
    }

    /// Slots held by tickets not yet redeemed or released.
    pub fn ticket_slots(&self) -> usize {
        self.shared.slots.count(TICKET)
    }
}

fn submit_now<T: DeviceCopy>(
    lease: Lease<T>,
    len: usize,
    dst: DeviceSliceMut<'_, T>,
    stream: StreamRef<'_>,
) -> Result<()> {
    let origin = dst.origin();
    order::after_origin(origin, stream)?;
    // SAFETY: the slot's range, `len <= slot_len` elements, initialised (zeroed at creation).
    let src = unsafe { PinnedSlice::from_raw_parts(lease.shared.slot_ptr(lease.index), len) };
    // SAFETY: the slot is not FREE until the copy has completed: the host function (or, on the
    // error path, the wait below) frees it only then, and the ring's memory lives while the lease
    // does. `dst` is ordered after its origin above, and its origin after the copy below, or the
    // error path waits for the copy to be done before returning.
    unsafe { copy::h2d_async(dst, src, stream)? };
    lease.set(IN_FLIGHT);
    let ordered = order::origin_after(origin, stream);
    let launched = launch_once(stream, lease);
    if ordered.is_ok() && launched.is_ok() {
        return Ok(());
    }
    // Error path: wait until nothing queued on the stream can run (the copy done, or the context
    // lost), so that neither the slot nor `dst` is used after this returns, even when `dst`'s own
    // stream could not be ordered after the copy. The slot is then free to reuse.
    let synced = stream.synchronize_or_wait_idle();
    let error = match launched {
        Ok(()) => None,
        Err((e, lease)) => {
            drop(lease);
            Some(e)
        }
    };
    match (ordered, error) {
        (Err(e), _) | (Ok(()), Some(e)) => Err(e),
        (Ok(()), None) => synced,
    }
}

fn submit_captured<T: DeviceCopy>(
    lease: Lease<T>,
    graph: NonNull<sys::CUgraph_st>,
    len: usize,
    dst: DeviceSliceMut<'_, T>,
    stream: StreamRef<'_>,
) -> Result<()> {
    let src = lease.shared.slot_ptr(lease.index);
    lease.set(GRAPH);
    // The graph owns the reservation (and, through it, the ring's memory) from here on: the copy
    // node below reads the slot at every replay.
    // SAFETY: the capture's graph is alive while the capture is open (the capture contract).
    unsafe { user_object::give_to_graph(graph, Box::new(lease))? };
    // SAFETY: the slot's range, initialised; it is reserved and its memory held for as long as the
    // graph or an executable graph made from it lives. `dst` at every replay: the capture contract.
    let src = unsafe { PinnedSlice::from_raw_parts(src, len) };
    // SAFETY: as above.
    unsafe { copy::h2d_async(dst, src, stream) }
}

impl<T: DeviceCopy> Slot<T> {
    fn range(&self) -> (*mut T, usize) {
        let len = self.lease.shared.slot_len;
        (self.lease.shared.slot_ptr(self.lease.index), len)
    }
}

impl<T: DeviceCopy> core::ops::Deref for Slot<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        let (ptr, len) = self.range();
        // SAFETY: the slot is FILLING: only this Slot accesses its range; initialised memory.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }
}

impl<T: DeviceCopy> core::ops::DerefMut for Slot<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let (ptr, len) = self.range();
        // SAFETY: the slot is FILLING: only this Slot accesses its range, borrowed exclusively.
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    fn never_lost() -> Option<Error> {
        None
    }

    fn take_ticket(slots: &Slots) -> (Ticket, usize) {
        let index = slots.take_free(TICKET).ok().unwrap();
        (slots.issue(index, "test").unwrap(), index)
    }

    #[test]
    fn a_stale_ticket_never_reaches_a_slot_handed_out_again() {
        // Stale numbers made into tickets again, as a C caller might pass them.
        // SAFETY: no test code writes the slots through a pointer.
        let again = |n: u64| unsafe { Ticket::from_raw(n) };
        let slots = Slots::new(1).unwrap();
        let (first, index) = take_ticket(&slots);
        let first_n = first.number();
        assert_eq!(slots.take_ticket(first, FREE), Some(index), "released");
        // The same slot, handed out again under a new ticket.
        let (second, index_again) = take_ticket(&slots);
        let second_n = second.number();
        assert_eq!(index_again, index);
        assert_ne!(first_n, second_n, "tickets are never reused");
        assert!(!slots.holds(&again(first_n)));
        assert_eq!(slots.take_ticket(again(first_n), FILLING), None, "the stale ticket is refused");
        assert_eq!(slots.state[index].load(Ordering::Acquire), TICKET);
        assert!(slots.holds(&second), "and the new holder keeps its slot");
        assert_eq!(slots.take_ticket(second, FILLING), Some(index));
        assert_eq!(slots.take_ticket(again(second_n), FILLING), None, "used up");
        assert_eq!(slots.take_ticket(again(0), FREE), None);
        assert_eq!(slots.take_ticket(again(u64::MAX), FREE), None, "never issued");
    }

    #[test]
    fn a_ticket_of_another_ring_is_refused() {
        let a = Slots::new(1).unwrap();
        let b = Slots::new(1).unwrap();
        let (ta, _) = take_ticket(&a);
        let (tb, ib) = take_ticket(&b);
        assert_ne!(ta.number(), tb.number(), "one counter for every ring");
        assert!(!b.holds(&ta));
        assert_eq!(b.take_ticket(ta, FREE), None, "ring a's ticket takes nothing from ring b");
        assert!(b.holds(&tb), "ring b's holder keeps its slot");
        assert_eq!(b.take_ticket(tb, FREE), Some(ib));
    }

    #[test]
    fn a_wait_with_every_slot_held_by_tickets_returns_not_ready() {
        let slots = Slots::new(2).unwrap();
        let _a = take_ticket(&slots);
        let _b = take_ticket(&slots);
        let e = slots.wait_free(FILLING, "test", never_lost).unwrap_err();
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorNotReady));
        // Graphs alone: the usage error the Rust API always gave.
        let slots = Slots::new(2).unwrap();
        slots.set(0, GRAPH);
        slots.set(1, GRAPH);
        let e = slots.wait_free(FILLING, "test", never_lost).unwrap_err();
        assert!(e.to_string().contains("held by a graph"), "{e}");
    }

    #[test]
    fn a_waiter_stops_when_the_last_slot_in_flight_goes_to_a_ticket() {
        // One slot in flight (it will come free), one held by a ticket: the waiter waits. The
        // in-flight slot is then taken by another thread's ticket before the waiter sees it free:
        // nothing can come free any more, and the waiter must notice in its loop, not only on
        // entry.
        let slots = Arc::new(Slots::new(2).unwrap());
        let _held = take_ticket(&slots);
        slots.set(1, IN_FLIGHT);
        let (tx, rx) = channel();
        let waiter = Arc::clone(&slots);
        let thread =
            std::thread::spawn(move || tx.send(waiter.wait_free(FILLING, "test", never_lost).map(|_| ())).unwrap());
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "waits while a copy is in flight");
        // The copy completes and the slot goes straight to a ticket (the host function frees it,
        // another thread's acquire_ticket takes it: one step here).
        slots.set(1, TICKET);
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("the waiter spun on slots held by tickets");
        assert_eq!(answer.unwrap_err().cuda_code(), Some(sys::cudaError::cudaErrorNotReady));
        thread.join().unwrap();
    }

    #[test]
    fn close_releases_tickets_and_returns_waiters() {
        let slots = Arc::new(Slots::new(2).unwrap());
        let (ticket, index) = take_ticket(&slots);
        slots.set(1, IN_FLIGHT); // a copy that never completes here: the waiter would wait for ever
        let (tx, rx) = channel();
        let waiter = Arc::clone(&slots);
        let thread =
            std::thread::spawn(move || tx.send(waiter.wait_free(TICKET, "test", never_lost).map(|_| ())).unwrap());
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        slots.close();
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("close did not end the wait");
        assert!(answer.unwrap_err().to_string().contains("closed"));
        thread.join().unwrap();
        assert!(!slots.holds(&ticket), "tickets are released");
        assert_eq!(slots.state[index].load(Ordering::Acquire), FREE);
        assert!(matches!(slots.take_free(TICKET), Err(NoSlot::Closed)));
        assert!(slots.wait_free(FILLING, "test", never_lost).is_err());
        // A slot taken just before the close gets no ticket, and is free again.
        let slots = Slots::new(1).unwrap();
        let index = slots.take_free(TICKET).ok().unwrap();
        slots.close();
        assert!(slots.issue(index, "test").is_err());
        assert_eq!(slots.state[index].load(Ordering::Acquire), FREE);
        slots.close(); // twice: harmless
    }

    #[test]
    fn a_lost_context_ends_the_wait() {
        let slots = Slots::new(1).unwrap();
        slots.set(0, IN_FLIGHT);
        let gone = || Some(context_destroyed());
        let e = slots.wait_free(FILLING, "test", gone).unwrap_err();
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorContextIsDestroyed));
    }

    #[test]
    fn resources_of_a_destroyed_context_are_forgotten_not_freed() {
        use core::sync::atomic::AtomicUsize;
        static FREED: AtomicUsize = AtomicUsize::new(0);
        struct Probe;
        impl Drop for Probe {
            fn drop(&mut self) {
                FREED.fetch_add(1, Ordering::SeqCst);
            }
        }
        // A context that is not the device's current one (here: no driver, or an id no context
        // has): gone, as after cudaDeviceReset. Its resources are forgotten.
        let gone = ContextTag { device: crate::Device::from_ordinal(0), id: Some(u64::MAX) };
        assert!(!gone.alive());
        assert!(!drop_in(gone, Box::new(Probe)));
        assert_eq!(FREED.load(Ordering::SeqCst), 0, "freed in a destroyed context");
        // A driver that cannot tell contexts apart: alive, freed as before.
        let unknown = ContextTag { device: crate::Device::from_ordinal(0), id: None };
        assert!(drop_in(unknown, Box::new(Probe)));
        assert_eq!(FREED.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn absurd_ring_sizes_are_refused_before_cuda_or_any_allocation() {
        let max = StagingRing::<u8>::MAX_SLOTS;
        for (count, len) in [(max + 1, 1), (1 << 40, 1), (usize::MAX, 1), (0, 1), (1, 0)] {
            let e = StagingRing::<u8>::new(count, len).err().unwrap();
            assert!(matches!(e, Error::Usage(_)), "{count} x {len}: {e:?}");
        }
        assert!(Slots::new(max).is_some());
        assert!(Slots::new(usize::MAX).is_none(), "an impossible table is an error, not an abort");
    }
}
