//! The staging ring: the Rust [`StagingRing`] behind a handle, its slots handed to C by ticket.
//!
//! A ticket names a slot the caller has acquired and not yet submitted; the ticket table is the
//! only state kept here (the ring itself keeps which slots are free, filling or in flight).
//! Acquire, submit and destroy may run on several threads at once: the ring's slot states are
//! atomics and the ticket table sits behind its own lock, held for a lookup only.

use super::check::{byte_len, non_null, require_device, stream_ref};
use super::context::InContext;
use super::handles;
use super::status::{guard, guard_void, invalid, OrdoStatus};
use core::ffi::{c_int, c_void};
use ordo_core::staging::{Slot, StagingRing};
use ordo_core::{sys, CudaError, DeviceSliceMut, Error};
use std::sync::{Mutex, PoisonError};

/// The C handle type of a staging ring: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoStagingRing {
    _opaque: [u8; 0],
}

/// A ring and the context its pinned memory belongs to (see [`super::context`]).
type RingObject = InContext<Ring>;

struct Ring {
    ring: StagingRing<u8>,
    /// Slots acquired and not yet submitted, by ticket (one entry a slot).
    tickets: Mutex<Vec<Option<Slot<u8>>>>,
}

impl Ring {
    fn tickets(&self) -> std::sync::MutexGuard<'_, Vec<Option<Slot<u8>>>> {
        self.tickets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Creates a ring of `slots` pinned staging slots of `slot_bytes` bytes.
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_create(slots: usize, slot_bytes: usize, out: *mut *mut OrdoStagingRing) -> OrdoStatus {
    guard(|| {
        non_null(out.cast_const(), "null out")?;
        if slots == 0 || slot_bytes == 0 {
            return Err(invalid("zero slots or zero slot bytes"));
        }
        let total = slots.checked_mul(slot_bytes).ok_or_else(|| invalid("slots * slot_bytes overflows"))?;
        byte_len::<u8>(total)?;
        // One ticket a slot; the table's size is checked like the ring's.
        byte_len::<Option<Slot<u8>>>(slots)?;
        let ring = StagingRing::new(slots, slot_bytes)?;
        let tickets = Mutex::new((0..slots).map(|_| None).collect());
        let handle = handles::register(InContext::new(Ring { ring, tickets })?)?;
        // SAFETY: checked non-null and aligned; writable by the C contract.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Takes a free slot: its pinned memory to `slot_out` and its ticket to `ticket_out`. With `wait`
/// 0 it returns `cudaErrorNotReady` when no slot is free; with `wait` 1 it waits (on the host) for a
/// slot whose copy is in flight. When every slot is held by a ticket not yet submitted, nothing
/// can come free by waiting: `cudaErrorNotReady` then too.
///
/// # Safety
/// The C contract: `slot_out` and `ticket_out` are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_acquire(ring: *mut OrdoStagingRing, wait: c_int, slot_out: *mut *mut c_void, ticket_out: *mut usize) -> OrdoStatus {
    guard(|| {
        let r = handles::get::<RingObject, _>(ring)?;
        let r = r.get()?;
        non_null(slot_out.cast_const(), "null slot_out")?;
        non_null(ticket_out.cast_const(), "null ticket_out")?;
        if wait != 0 && wait != 1 {
            return Err(invalid("wait must be 0 or 1"));
        }
        let not_ready = || Error::Cuda(CudaError::new(sys::cudaError::cudaErrorNotReady, "ordo_staging_ring_acquire"));
        let mut slot = match r.ring.try_acquire() {
            Some(slot) => slot,
            None if wait == 0 => return Err(not_ready().into()),
            None => {
                // Slots held by tickets (filled, not yet submitted) or by graphs come free only by
                // the caller's own doing: waiting for them could last forever.
                let held = r.tickets().iter().filter(|t| t.is_some()).count();
                if held.saturating_add(r.ring.graph_slots()) >= r.ring.slot_count() {
                    return Err(not_ready().into());
                }
                r.ring.acquire()?
            }
        };
        let mut tickets = r.tickets();
        // A slot is held by at most one ticket, so a slot in hand always finds a free entry.
        let ticket = tickets.iter().position(Option::is_none).ok_or_else(|| invalid("no free ticket"))?;
        // SAFETY: checked non-null and aligned; writable by the C contract.
        unsafe {
            slot_out.write(slot.as_mut_ptr().cast());
            ticket_out.write(ticket);
        }
        tickets[ticket] = Some(slot);
        Ok(())
    })
}

/// Enqueues the copy of the first `bytes` of the slot `ticket` to `device_dst` on `stream`; the
/// slot becomes free again once the copy has finished. The ticket is used up by the call, also
/// when the call fails after the checks of its arguments (its slot is then free again, or stays in
/// flight until its copy finishes). Inside a capture the copy is replayed by every launch of the
/// graph, and the slot stays held until the graph (and every executable graph made from it) is
/// destroyed.
///
/// # Safety
/// The C contract: `device_dst` holds `bytes` bytes of device memory that stays allocated until
/// the copy completes (at every replay, if captured); `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_submit(ring: *mut OrdoStagingRing, ticket: usize, bytes: usize, device_dst: *mut c_void, stream: sys::cudaStream_t) -> OrdoStatus {
    guard(|| {
        let r = handles::get::<RingObject, _>(ring)?;
        let r = r.get()?;
        let s = stream_ref(stream)?;
        non_null(device_dst.cast_const(), "null device_dst")?;
        if bytes == 0 || bytes > r.ring.slot_len() {
            return Err(invalid("bytes must be 1..=slot_bytes"));
        }
        if !r.tickets().get(ticket).is_some_and(Option::is_some) {
            return Err(invalid("no slot is held under this ticket"));
        }
        require_device(device_dst.cast_const())?;
        let slot = r.tickets().get_mut(ticket).and_then(Option::take).ok_or_else(|| invalid("no slot is held under this ticket"))?;
        // SAFETY: the C contract: `device_dst` holds `bytes`, live until the copy completes.
        let dst = unsafe { DeviceSliceMut::from_raw_parts(device_dst.cast::<u8>(), bytes) };
        r.ring.submit(slot, bytes, dst, s)?;
        Ok(())
    })
}

/// Destroys a ring. NULL, destroyed and unknown handles, and handles of another kind, are ignored.
/// Slots held by tickets are released; copies in flight (and graphs that captured a submit) keep
/// the ring's pinned memory until they are done with it. Safe for any value: the handle is only
/// looked up, never dereferenced.
#[no_mangle]
pub extern "C" fn ordo_staging_ring_destroy(ring: *mut OrdoStagingRing) {
    guard_void(|| drop(handles::remove::<RingObject, _>(ring)));
}
