//! The ring itself: one pinned allocation cut into slots, the [`Slot`] a loader fills, and the
//! submit that enqueues a slot's copy and the host function that frees the slot after it (or,
//! inside a capture, gives the slot to the capture's graph). See the [module docs](super).

use super::probe::context_lost;
use super::slots::{closed, NoSlot, SlotState, Slots};
use super::tickets::Ticket;
use crate::callback::{drop_outside_callbacks, free_deferred};
use crate::context::ContextTag;
use crate::error::{CudaError, Error, Result};
use crate::event::Event;
use crate::graph::{capture_target, invalidated, user_object, CaptureTarget};
use crate::host_fn::{launch_once, HostCall};
use crate::memory::{copy, order, DeviceCopy, DeviceSliceMut, HostAllocFlags, PinnedBuffer, PinnedSlice};
use crate::stream::StreamRef;
use alloc::boxed::Box;
use alloc::sync::Arc;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// What must be freed outside CUDA callbacks, in the context it was made in.
struct Resources<T: DeviceCopy> {
    /// Held for its drop (`cudaFreeHost`); the slots are reached through `Shared::base`.
    _memory: PinnedBuffer<T>,
    /// Never recorded: queried to learn whether the context is lost ([`context_lost`]).
    probe: Event,
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
// one `Slot` or ticket holder at a time (Filling, Ticket) or by CUDA (InFlight, Graph); the rest
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

    /// Whether the ring's context is gone or lost (see [`context_lost`]).
    fn context_lost(&self) -> Option<Error> {
        context_lost(self.context, &self.resources.probe)
    }
}

impl<T: DeviceCopy> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; not used afterwards.
        let resources = unsafe { ManuallyDrop::take(&mut self.resources) };
        drop_outside_callbacks(self.context, Box::new(resources));
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
    fn set(&self, state: SlotState) {
        self.shared.slots.set(self.index, state);
    }
}

impl<T: DeviceCopy> Drop for Lease<T> {
    fn drop(&mut self) {
        self.set(SlotState::Free);
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
        self.shared.slots.len()
    }

    fn slot(&self, index: usize) -> Slot<T> {
        Slot { lease: Lease { shared: Arc::clone(&self.shared), index } }
    }

    /// A free slot, if there is one now (never blocks); `None` also once the ring is closed.
    pub fn try_acquire(&self) -> Option<Slot<T>> {
        self.shared.slots.take_free(SlotState::Filling).ok().map(|index| self.slot(index))
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
        let index = shared.slots.wait_free(SlotState::Filling, "StagingRing::acquire", || shared.context_lost())?;
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
            shared.slots.wait_free(SlotState::Ticket, CALL, || shared.context_lost()).map_err(|e| match e {
                Error::Usage(_) if !shared.slots.closed() => Error::Cuda(
                    CudaError::new(sys::cudaError::cudaErrorNotReady, CALL)
                        .with_hint("no slot can come free by waiting: every slot is held by a graph"),
                ),
                e => e,
            })?
        } else {
            match shared.slots.take_free(SlotState::Ticket) {
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
        let index = self.shared.slots.take_ticket(ticket, SlotState::Filling)?;
        Some(self.slot(index))
    }

    /// Frees the slot held by `ticket` without submitting it; the ticket is used up. `false` for a
    /// ticket this ring does not hold (as [`redeem`](Self::redeem)).
    pub fn release_ticket(&self, ticket: Ticket) -> bool {
        self.shared.slots.take_ticket(ticket, SlotState::Free).is_some()
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
    /// graph (see the [module documentation](super)): each replay copies the slot's contents to
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
        self.shared.slots.count(SlotState::Free)
    }

    /// Slots reserved by graphs that captured their copies.
    pub fn graph_slots(&self) -> usize {
        self.shared.slots.count(SlotState::Graph)
    }

    /// Slots held by tickets not yet redeemed or released.
    pub fn ticket_slots(&self) -> usize {
        self.shared.slots.count(SlotState::Ticket)
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
    // SAFETY: the slot is not Free until the copy has completed: the host function (or, on the
    // error path, the wait below) frees it only then, and the ring's memory lives while the lease
    // does. `dst` is ordered after its origin above, and its origin after the copy below, or the
    // error path waits for the copy to be done before returning.
    unsafe { copy::h2d_async(dst, src, stream)? };
    lease.set(SlotState::InFlight);
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
    lease.set(SlotState::Graph);
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
        // SAFETY: the slot is Filling: only this Slot accesses its range; initialised memory.
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }
}

impl<T: DeviceCopy> core::ops::DerefMut for Slot<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let (ptr, len) = self.range();
        // SAFETY: the slot is Filling: only this Slot accesses its range, borrowed exclusively.
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
