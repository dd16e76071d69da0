//! The staging pattern: a ring of pinned host slots. A loader thread takes a free slot, fills it,
//! and enqueues its copy to the device; a host function enqueued after the copy marks the slot free
//! again once the copy has finished. No blocking synchronise anywhere: the loader waits only for a
//! slot to come free (a host-side wait), never on the device.
//!
//! Memory ordering: the host function's store of `FREE` is a `Release`, the loader's load an
//! `Acquire`, and CUDA runs the host function only after the copy completed, so a slot is never
//! written while its copy still reads it.

use crate::error::{Error, Result};
use crate::host_fn::launch_host_fn;
use crate::memory::{copy, DeviceCopy, DeviceSliceMut, HostAllocFlags, PinnedBuffer, PinnedSlice};
use crate::stream::StreamRef;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU8, Ordering};

const FREE: u8 = 0;
const FILLING: u8 = 1;
const IN_FLIGHT: u8 = 2;

struct Slots<T: DeviceCopy> {
    // One pinned allocation, `slot_len` elements a slot.
    memory: PinnedBuffer<T>,
    state: Vec<AtomicU8>,
    slot_len: usize,
}

/// A ring of pinned staging slots. Clone it (cheaply) to hand it to a loader thread.
pub struct StagingRing<T: DeviceCopy> {
    slots: Arc<Slots<T>>,
}

impl<T: DeviceCopy> Clone for StagingRing<T> {
    fn clone(&self) -> Self {
        StagingRing { slots: Arc::clone(&self.slots) }
    }
}

/// A slot taken for filling. Write into it through `DerefMut`, then [`StagingRing::submit`] it.
pub struct Slot<T: DeviceCopy> {
    slots: Arc<Slots<T>>,
    index: usize,
    len: usize,
}

impl<T: DeviceCopy> StagingRing<T> {
    /// `count` slots of `slot_len` elements each, in one pinned allocation.
    pub fn new(count: usize, slot_len: usize) -> Result<StagingRing<T>> {
        if count == 0 || slot_len == 0 {
            return Err(Error::invalid("StagingRing::new", "zero slots or zero slot length"));
        }
        let total = count
            .checked_mul(slot_len)
            .ok_or(Error::invalid("StagingRing::new", "count * slot_len overflows"))?;
        let memory = PinnedBuffer::zeroed(total, HostAllocFlags::empty())?;
        let state = (0..count).map(|_| AtomicU8::new(FREE)).collect();
        Ok(StagingRing { slots: Arc::new(Slots { memory, state, slot_len }) })
    }

    /// Elements a slot.
    pub fn slot_len(&self) -> usize {
        self.slots.slot_len
    }

    /// A free slot, if there is one now (never blocks).
    pub fn try_acquire(&self) -> Option<Slot<T>> {
        for (index, state) in self.slots.state.iter().enumerate() {
            if state.compare_exchange(FREE, FILLING, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return Some(Slot { slots: Arc::clone(&self.slots), index, len: self.slots.slot_len });
            }
        }
        None
    }

    /// A free slot, waiting on the host (yielding the thread) until a copy in flight completes.
    pub fn acquire(&self) -> Slot<T> {
        loop {
            if let Some(slot) = self.try_acquire() {
                return slot;
            }
            std::thread::yield_now();
        }
    }

    /// Enqueues the copy of the first `len` elements of `slot` to `dst` on `stream`, then a host
    /// function that frees the slot once the copy has finished. Returns at once.
    pub fn submit(&self, mut slot: Slot<T>, len: usize, dst: DeviceSliceMut<'_, T>, stream: StreamRef<'_>) -> Result<()> {
        if len == 0 || len > slot.len || dst.len() != len {
            return Err(Error::invalid("StagingRing::submit", "len must be 1..=slot_len and equal to dst's length"));
        }
        slot.len = len;
        let src = slot.pinned();
        // SAFETY: the slot stays IN_FLIGHT (nobody can write it) until the host function below runs,
        // which CUDA does only after the copy has completed; the ring's memory lives while any Slot
        // or host function holds the Arc. The caller owes `dst`'s allocation until then.
        unsafe { copy::h2d_async(dst, src, stream)? };
        let slots = Arc::clone(&slot.slots);
        let index = slot.index;
        slots.state[index].store(IN_FLIGHT, Ordering::Relaxed);
        core::mem::forget(slot);
        // If this fails the copy may still be in flight: the slot stays IN_FLIGHT (lost to the
        // ring) rather than risk being overwritten.
        launch_host_fn(stream, move || slots.state[index].store(FREE, Ordering::Release))
    }

    /// Slots that are free now.
    pub fn free_slots(&self) -> usize {
        self.slots.state.iter().filter(|s| s.load(Ordering::Acquire) == FREE).count()
    }
}

impl<T: DeviceCopy> Slot<T> {
    fn pinned(&self) -> PinnedSlice<'_, T> {
        // SAFETY: inside the ring's pinned allocation; this slot's range.
        unsafe { PinnedSlice::from_raw_parts(self.slots.memory.as_ptr().add(self.index * self.slots.slot_len), self.len) }
    }
}

impl<T: DeviceCopy> core::ops::Deref for Slot<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        let p = self.pinned();
        // SAFETY: the slot is FILLING: only this Slot accesses it.
        unsafe { core::slice::from_raw_parts(p.as_ptr(), p.len()) }
    }
}

impl<T: DeviceCopy> core::ops::DerefMut for Slot<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let p = self.pinned();
        // SAFETY: the slot is FILLING: only this Slot accesses it; the memory is initialised.
        unsafe { core::slice::from_raw_parts_mut(p.as_ptr().cast_mut(), p.len()) }
    }
}

impl<T: DeviceCopy> Drop for Slot<T> {
    fn drop(&mut self) {
        // Dropped without submitting: the slot is free again.
        self.slots.state[self.index].store(FREE, Ordering::Release);
    }
}

// SAFETY: the slot states are atomics; slot memory is accessed by one Slot at a time (FILLING) or
// by CUDA (IN_FLIGHT).
unsafe impl<T: DeviceCopy> Send for StagingRing<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy> Sync for StagingRing<T> {}
// SAFETY: a Slot is the only accessor of its range.
unsafe impl<T: DeviceCopy> Send for Slot<T> {}
