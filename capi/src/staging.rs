//! The staging ring: the Rust [`StagingRing`] behind a handle, its slots handed to C by
//! [`Ticket`].
//!
//! Everything lives in the Rust API: the slots' states, the ticket table (tickets from a counter
//! that is never reused, so a stale ticket is refused, never a slot handed out again since), the
//! wait that gives up when no slot can come free, and the close that releases tickets and waiters
//! when the ring is destroyed. This file converts: handles, pointers, sizes and statuses.
//! Acquire, submit, release and destroy may run on several threads at once.

use super::check::{byte_len, non_null, require_device_on, stream_device, stream_ref};
use super::context::InContext;
use super::handles;
use super::status::{
    guard, guard_void, invalid, Failure, OrdoStatus, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_INVALID_TICKET,
};
use core::ffi::{c_int, c_void};
use ordo_cuda_core::staging::{StagingRing, Ticket};
use ordo_cuda_core::{sys, DeviceSliceMut};

/// The C handle type of a staging ring: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoStagingRing {
    _opaque: [u8; 0],
}

/// A ring and the context its pinned memory belongs to (see [`super::context`]).
type RingObject = InContext<StagingRing<u8>>;

/// A C ticket as the Rust API's. `size_t` holds every ticket on the 64-bit targets ordo builds for.
///
/// # Safety
/// As [`Ticket::from_raw`]: the C caller passes a ticket it holds (the header's rule: a ticket is
/// used by the code that acquired it); a number the ring does not hold is refused by the ring.
unsafe fn ticket_of(raw: usize) -> Ticket {
    // SAFETY: forwarded to the caller.
    unsafe { Ticket::from_raw(raw as u64) }
}

fn invalid_ticket() -> Failure {
    Failure(ORDO_ERROR_INVALID_TICKET)
}

/// Creates a ring of `slots` pinned staging slots of `slot_bytes` bytes (`slots` at most
/// [`StagingRing::MAX_SLOTS`]).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_create(
    slots: usize,
    slot_bytes: usize,
    out: *mut *mut OrdoStagingRing,
) -> OrdoStatus {
    handles::create("ordo_staging_ring_create", out, || {
        if slots == 0 {
            return Err(invalid("slots", "zero slots"));
        }
        if slot_bytes == 0 {
            return Err(invalid("slot_bytes", "zero slot bytes"));
        }
        if slots > StagingRing::<u8>::MAX_SLOTS {
            return Err(invalid("slots", "more than 65536 slots"));
        }
        let total =
            slots.checked_mul(slot_bytes).ok_or_else(|| invalid("slot_bytes", "slots * slot_bytes overflows"))?;
        byte_len::<u8>(total, "slot_bytes")?;
        let ring = StagingRing::<u8>::new(slots, slot_bytes)?;
        Ok(InContext::new(ring)?)
    })
}

/// Takes a free slot: its pinned memory to `slot_out` and its ticket to `ticket_out`. With `wait`
/// 0 it returns `ORDO_NOT_READY` when no slot is free; with `wait` 1 it waits (on the host) for a
/// slot whose copy is in flight, and returns `ORDO_NOT_READY` once no slot can come free by
/// waiting (every slot held by a ticket not yet submitted or released, or by a graph), whether at
/// the start or during the wait. A ring destroyed while this waits: `ORDO_ERROR_INVALID_HANDLE`.
///
/// # Safety
/// The C contract: `slot_out` and `ticket_out` are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_acquire(
    ring: *mut OrdoStagingRing,
    wait: c_int,
    slot_out: *mut *mut c_void,
    ticket_out: *mut usize,
) -> OrdoStatus {
    guard("ordo_staging_ring_acquire", || {
        let r = handles::get::<RingObject, _>(ring)?;
        let r = r.get()?;
        non_null(slot_out.cast_const(), "slot_out")?;
        non_null(ticket_out.cast_const(), "ticket_out")?;
        if wait != 0 && wait != 1 {
            return Err(invalid("wait", "must be 0 or 1"));
        }
        let (ticket, slot) = match r.acquire_ticket(wait == 1) {
            Ok(t) => t,
            // Destroyed (by another thread) before or during the wait.
            Err(_) if r.is_closed() => return Err(Failure(ORDO_ERROR_INVALID_HANDLE)),
            Err(e) => return Err(e.into()),
        };
        let Ok(raw) = usize::try_from(ticket.number()) else {
            r.release_ticket(ticket);
            return Err(invalid("ticket_out", "ticket numbers exhausted"));
        };
        // A destroy on another thread between the acquire and here released the ticket: the
        // slot is no longer the caller's, so it is not handed out.
        if !r.holds_ticket(&ticket) {
            return Err(Failure(ORDO_ERROR_INVALID_HANDLE));
        }
        // SAFETY: checked non-null and aligned; writable by the C contract.
        unsafe {
            slot_out.write(slot.as_ptr().cast());
            ticket_out.write(raw);
        }
        Ok(())
    })
}

/// Enqueues the copy of the first `bytes` of the slot `ticket` to `device_dst` on `stream`; the
/// slot becomes free again once the copy has finished. `stream` must be a stream of the ring's
/// device (the device current at its create, whose context its pinned memory belongs to), and
/// `device_dst` device memory of that device, or managed memory (the DEVICE POINTERS rule:
/// `ORDO_ERROR_INVALID_ARGUMENT` otherwise, before anything is enqueued). A ticket the ring does not hold (never
/// issued, already submitted or released) gets `ORDO_ERROR_INVALID_TICKET`. The ticket is used up
/// by the call once the arguments passed their checks, also when the call then fails (its slot is
/// then free again, or stays in flight until its copy finishes). Inside a capture the copy is
/// replayed by every launch of the graph, and the slot stays held until the graph (and every
/// executable graph made from it) is destroyed.
///
/// # Safety
/// The C contract: `device_dst` holds `bytes` bytes of device memory that stays allocated until
/// the copy completes (at every replay, if captured); `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_staging_ring_submit(
    ring: *mut OrdoStagingRing,
    ticket: usize,
    bytes: usize,
    device_dst: *mut c_void,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    guard("ordo_staging_ring_submit", || {
        let object = handles::get::<RingObject, _>(ring)?;
        let r = object.get()?;
        let s = stream_ref(stream)?;
        non_null(device_dst.cast_const(), "device_dst")?;
        if bytes == 0 || bytes > r.slot_len() {
            return Err(invalid("bytes", "must be 1..=slot_bytes"));
        }
        // SAFETY: the C contract: the caller holds the ticket it passes.
        let ticket = unsafe { ticket_of(ticket) };
        if !r.holds_ticket(&ticket) {
            return Err(invalid_ticket());
        }
        let device = object.context().device();
        if stream_device(s)? != device {
            return Err(invalid("stream", "a stream of another device than the ring's"));
        }
        require_device_on(device_dst.cast_const(), device, "device_dst")?;
        // Redeemed only now: a refused argument leaves the ticket held. Another thread may have
        // used it meanwhile (the ticket is then refused here).
        let slot = r.redeem(ticket).ok_or_else(invalid_ticket)?;
        // SAFETY: the C contract: `device_dst` holds `bytes`, live until the copy completes.
        let dst = unsafe { DeviceSliceMut::from_raw_parts(device_dst.cast::<u8>(), bytes) };
        r.submit(slot, bytes, dst, s)?;
        Ok(())
    })
}

/// Frees the slot of `ticket` without copying it; the ticket is used up. A ticket the ring does
/// not hold gets `ORDO_ERROR_INVALID_TICKET`.
#[no_mangle]
pub extern "C" fn ordo_staging_ring_release(ring: *mut OrdoStagingRing, ticket: usize) -> OrdoStatus {
    guard("ordo_staging_ring_release", || {
        let r = handles::get::<RingObject, _>(ring)?;
        let r = r.get()?;
        // SAFETY: the C contract: the caller holds the ticket it passes.
        if r.release_ticket(unsafe { ticket_of(ticket) }) {
            Ok(())
        } else {
            Err(invalid_ticket())
        }
    })
}

/// Destroys a ring. NULL, destroyed and unknown handles, and handles of another kind, are ignored.
/// The ring is closed first: tickets not submitted are released (their slots' memory must no
/// longer be written), and acquires waiting on other threads return `ORDO_ERROR_INVALID_HANDLE`;
/// copies in flight (and graphs that captured a submit) keep the ring's pinned memory until they
/// are done with it. Safe for any value: the handle is only looked up, never dereferenced.
#[no_mangle]
pub extern "C" fn ordo_staging_ring_destroy(ring: *mut OrdoStagingRing) {
    guard_void("ordo_staging_ring_destroy", || {
        if let Some(r) = handles::remove::<RingObject, _>(ring) {
            // Bookkeeping only, no CUDA call: safe in a destroyed context too.
            r.unchecked().close();
        }
    });
}
