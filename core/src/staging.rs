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
//! or to [`free_deferred`]; the driver frees it at process exit otherwise. A slot whose copy may
//! still be in flight when nothing can tell (see [`StagingRing::submit`]'s errors) is *lost*: it is
//! never handed out again, and the memory is never freed (leaked rather than freed under a copy).

use crate::error::{Error, Result};
use crate::event::Event;
use crate::graph::{capture_target, invalidated, user_object, CaptureTarget};
use crate::host_fn::{in_cuda_callback, launch_once, HostCall};
use crate::memory::{
    copy, order, DeviceCopy, DeviceSliceMut, HostAllocFlags, PinnedBuffer, PinnedSlice,
};
use crate::stream::StreamRef;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use ordo_cuda_sys as sys;

const FREE: u8 = 0;
const FILLING: u8 = 1;
const IN_FLIGHT: u8 = 2;
/// Reserved by a graph that captured the slot's copy.
const GRAPH: u8 = 3;
/// Its copy may still be in flight and nothing will report its end: never reused.
const LOST: u8 = 4;

/// How many failed attempts [`StagingRing::acquire`] makes between checks of the context and of
/// the slots' states.
const CHECK_EVERY: u32 = 256;

/// What must be freed outside CUDA callbacks.
struct Resources<T: DeviceCopy> {
    memory: PinnedBuffer<T>,
    /// Never recorded: queried to learn whether the context is lost.
    probe: Event,
}

struct Shared<T: DeviceCopy> {
    resources: ManuallyDrop<Resources<T>>,
    /// The pinned memory's first element, taken from an exclusive borrow at creation: each slot
    /// writes and reads its own range through it.
    base: NonNull<T>,
    state: Box<[AtomicU8]>,
    slot_len: usize,
}

// SAFETY: the slot states are atomics; each slot's range is accessed by one `Slot` at a time
// (FILLING) or by CUDA (IN_FLIGHT, GRAPH); the rest is read-only after creation. `T: DeviceCopy`
// is `Send + Sync`.
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

    /// Whether the context is lost: the probe event's query fails with a sticky error. The query
    /// runs with this thread's capture mode relaxed, so it neither fails nor invalidates another
    /// thread's global-mode capture (CUDA 13.0 refuses an event query then, and the capture is
    /// lost).
    fn context_lost(&self) -> Option<Error> {
        let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
        // SAFETY: `mode` is writable; the previous mode comes back in it.
        if unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) }
            != sys::cudaError::cudaSuccess
        {
            return None;
        }
        let status = self.resources.probe.query();
        // SAFETY: restores the thread's mode.
        unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
        status.err().filter(Error::is_sticky)
    }
}

impl<T: DeviceCopy> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: taken once, here; not used afterwards.
        let resources = unsafe { ManuallyDrop::take(&mut self.resources) };
        if self.state.iter().any(|s| s.load(Ordering::Acquire) == LOST) {
            // A copy may still read the memory: leak it rather than free it under the copy.
            crate::error::record_drop_error_value(Error::invalid(
                "StagingRing",
                "a slot was lost (its copy could not be confirmed complete): the ring's pinned memory is leaked",
            ));
            core::mem::forget(resources.memory);
            defer_or_drop(Box::new(resources.probe));
        } else {
            defer_or_drop(Box::new(resources));
        }
    }
}

/// Frees now, or later when on a CUDA callback thread.
fn defer_or_drop(resources: Box<dyn Send>) {
    if in_cuda_callback() {
        let mut list = DEFERRED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        list.push(resources);
        PENDING.store(true, Ordering::Release);
    } else {
        drop(resources);
    }
}

static DEFERRED: std::sync::Mutex<Vec<Box<dyn Send>>> = std::sync::Mutex::new(Vec::new());
static PENDING: AtomicBool = AtomicBool::new(false);

/// Frees the pinned memory (and probe events) of rings whose last holder let go on a CUDA
/// callback thread, where CUDA calls are forbidden; returns how many rings' resources were freed.
/// [`StagingRing::new`] and the drop of a ring handle call it; nothing on a callback thread does.
/// Like every `cudaFreeHost`, it is refused inside a capture in global or thread-local mode (the
/// capture is invalidated): call it outside captures.
pub fn free_deferred() -> usize {
    if in_cuda_callback() || !PENDING.swap(false, Ordering::Acquire) {
        return 0;
    }
    let list = core::mem::take(
        &mut *DEFERRED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let n = list.len();
    drop(list);
    n
}

/// A ring of pinned staging slots. Clone it (cheaply) to hand it to a loader thread.
pub struct StagingRing<T: DeviceCopy> {
    shared: Arc<Shared<T>>,
}

impl<T: DeviceCopy> Clone for StagingRing<T> {
    fn clone(&self) -> Self {
        StagingRing {
            shared: Arc::clone(&self.shared),
        }
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
        self.shared.state[self.index].store(state, Ordering::Release);
    }

    /// Marks the slot lost (never reused; the ring's memory is then never freed).
    fn lose(self) {
        self.set(LOST);
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; its Arc is moved out once.
        drop(unsafe { core::ptr::read(&this.shared) });
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
    /// `count` slots of `slot_len` elements each, in one pinned allocation, zeroed.
    pub fn new(count: usize, slot_len: usize) -> Result<StagingRing<T>> {
        if count == 0 || slot_len == 0 {
            return Err(Error::invalid(
                "StagingRing::new",
                "zero slots or zero slot length",
            ));
        }
        let total = count.checked_mul(slot_len).ok_or(Error::invalid(
            "StagingRing::new",
            "count * slot_len overflows",
        ))?;
        free_deferred();
        let mut memory = PinnedBuffer::zeroed(total, HostAllocFlags::empty())?;
        let probe = Event::new()?;
        let base = NonNull::new(memory.pinned_mut().as_mut_ptr())
            .ok_or(Error::invalid("StagingRing::new", "null pinned memory"))?;
        let state = (0..count).map(|_| AtomicU8::new(FREE)).collect();
        let shared = Shared {
            resources: ManuallyDrop::new(Resources { memory, probe }),
            base,
            state,
            slot_len,
        };
        Ok(StagingRing {
            shared: Arc::new(shared),
        })
    }

    /// Elements a slot.
    pub fn slot_len(&self) -> usize {
        self.shared.slot_len
    }

    /// Number of slots.
    pub fn slot_count(&self) -> usize {
        self.shared.state.len()
    }

    /// A free slot, if there is one now (never blocks).
    pub fn try_acquire(&self) -> Option<Slot<T>> {
        for (index, state) in self.shared.state.iter().enumerate() {
            if state
                .compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return Some(Slot {
                    lease: Lease {
                        shared: Arc::clone(&self.shared),
                        index,
                    },
                });
            }
        }
        None
    }

    /// A free slot, waiting on the host (yielding the thread) until a copy in flight completes or a
    /// slot being filled is dropped.
    ///
    /// Returns an error instead of waiting forever when no slot can come free: the CUDA context is
    /// lost (a sticky error; host functions never run again), or every slot is lost or held by a
    /// graph. It cannot tell a slot filled (and never submitted) by this very thread: taking more
    /// slots than the ring has on one thread without submitting waits for ever, as a channel would.
    pub fn acquire(&self) -> Result<Slot<T>> {
        let mut attempts = 0u32;
        loop {
            if let Some(slot) = self.try_acquire() {
                return Ok(slot);
            }
            attempts = attempts.wrapping_add(1);
            if attempts % CHECK_EVERY == 0 {
                self.check_progress()?;
            }
            std::thread::yield_now();
        }
    }

    /// An error when no slot can come free by itself.
    fn check_progress(&self) -> Result<()> {
        if let Some(e) = self.shared.context_lost() {
            return Err(e);
        }
        let stuck = self
            .shared
            .state
            .iter()
            .all(|s| matches!(s.load(Ordering::Acquire), GRAPH | LOST));
        if stuck {
            return Err(Error::invalid(
                "StagingRing::acquire",
                "no slot can come free: every slot is lost or held by a graph (drop the graphs that captured them)",
            ));
        }
        Ok(())
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
    /// the slot reused), frees the slot, and returns the error; if even the synchronise fails, the
    /// slot is lost (never reused). Inside a capture, a slot given to the graph stays the graph's
    /// on every error after that.
    pub fn submit(
        &self,
        slot: Slot<T>,
        len: usize,
        dst: DeviceSliceMut<'_, T>,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        const CALL: &str = "StagingRing::submit";
        if !Arc::ptr_eq(&slot.lease.shared, &self.shared) {
            return Err(Error::invalid(CALL, "the slot belongs to another ring"));
        }
        if len == 0 || len > self.shared.slot_len || dst.len() != len {
            return Err(Error::invalid(
                CALL,
                "len must be 1..=slot_len and equal to dst's length",
            ));
        }
        match capture_target(stream)? {
            CaptureTarget::None => submit_now(slot.lease, len, dst, stream),
            CaptureTarget::Active(graph) => submit_captured(slot.lease, graph, len, dst, stream),
            CaptureTarget::Invalidated => Err(invalidated(CALL)),
        }
    }

    /// Slots that are free now.
    pub fn free_slots(&self) -> usize {
        self.shared
            .state
            .iter()
            .filter(|s| s.load(Ordering::Acquire) == FREE)
            .count()
    }

    /// Slots reserved by graphs that captured their copies.
    pub fn graph_slots(&self) -> usize {
        self.shared
            .state
            .iter()
            .filter(|s| s.load(Ordering::Acquire) == GRAPH)
            .count()
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
    // SAFETY: the slot is not FREE until the copy has completed: the host function (or the
    // synchronise below) frees it only then, and the ring's memory lives while the lease does.
    // `dst` is ordered after its origin above and its origin after the copy below.
    unsafe { copy::h2d_async(dst, src, stream)? };
    lease.set(IN_FLIGHT);
    let ordered = order::origin_after(origin, stream);
    let launched = launch_once(stream, lease);
    if ordered.is_ok() && launched.is_ok() {
        return Ok(());
    }
    // Error path: wait for the copy, so neither the slot nor `dst` is used after this returns.
    let synced = stream.synchronize();
    let error = match launched {
        Ok(()) => None,
        Err((e, lease)) => {
            match synced {
                Ok(()) => drop(lease),
                Err(_) => lease.lose(),
            }
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
