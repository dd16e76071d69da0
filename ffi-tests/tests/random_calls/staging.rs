//! The staging-ring exports: `ordo_staging_ring_create`, `_acquire`, `_submit`, `_release` and
//! `_destroy`; sizes past the caps; tickets that are stale or used up; a destroy that releases a
//! waiting acquire.

use crate::fuzz::*;
use crate::support::*;
use core::ffi::c_void;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;
use std::sync::atomic::Ordering;

impl Fuzz<'_> {
    /// `ordo_staging_ring_create` of random sizes (valid ones of gigabytes made 16 MiB: CB-26).
    pub(crate) fn ring_create(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let slots = self.rng.size(4);
        let mut bytes = self.rng.size(1024);
        // A valid ring of gigabytes would really be pinned, stalling every other thread's CUDA
        // calls for tens of seconds (`docs/cuda-behaviours.md`, CB-26). Such sizes become
        // 16 MiB; the sizes that overflow or pass the caps stay.
        if slots <= ordo_cuda_core::staging::StagingRing::<u8>::MAX_SLOTS
            && slots.checked_mul(bytes).is_some_and(|t| t > 1 << 24 && t <= isize::MAX as usize)
        {
            bytes = (1 << 24) / slots.max(1);
        }
        let mut out: *mut OrdoStagingRing = null_mut();
        let st = self.record(unsafe { ordo_staging_ring_create(slots, bytes, &mut out) }, "ring_create");
        let bad = slots == 0
            || bytes == 0
            || slots > 65_536
            || slots.checked_mul(bytes).is_none_or(|t| t > isize::MAX as usize);
        if bad {
            assert_eq!(st, ia);
        } else if gpu && slots <= 4 && bytes <= 1024 {
            assert_eq!(st, ORDO_SUCCESS, "ring create");
        }
        if st == ORDO_SUCCESS {
            self.add(out as usize, Kind::Ring);
        }
    }

    /// `ordo_staging_ring_acquire` on a random handle, waiting or not, with a null slot now and then.
    pub(crate) fn ring_acquire(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Ring);
        let mut slot: *mut c_void = null_mut();
        let mut ticket = usize::MAX;
        let wait = self.rng.below(3) as i32;
        let null_out = self.rng.chance(8);
        let st = self.record(
            unsafe {
                ordo_staging_ring_acquire(
                    h as *mut OrdoStagingRing,
                    wait,
                    if null_out { null_mut() } else { &mut slot },
                    &mut ticket,
                )
            },
            "ring_acquire",
        );
        if !live {
            assert_eq!(st, ih);
        } else if null_out || wait == 2 {
            assert!(st == ia || st == ih, "{st}");
        } else if st == ORDO_SUCCESS {
            assert!(!slot.is_null() && ticket != 0 && ticket != usize::MAX);
            // Fill what the slot holds (a slot is at least one byte).
            unsafe { *slot.cast::<u8>() = 0x5a };
            self.tickets.push((h, ticket));
        } else {
            assert!(st == CUDA_NOT_READY || st == ih, "acquire: {st}");
        }
    }

    /// `ordo_staging_ring_submit` of a ticket this thread holds or a made-up one, to random memory.
    pub(crate) fn ring_submit(&mut self, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Ring);
        let ticket = match self.tickets.pop() {
            Some((ring, t)) if ring == h => t,
            Some(_) | None => self.rng.below(6) as usize,
        };
        let k = self.ptr_kind();
        let dst = self.device_ptr(k);
        let bytes = self.rng.size(64);
        let st = self.record(
            unsafe { ordo_staging_ring_submit(h as *mut OrdoStagingRing, ticket, bytes, dst.cast(), stream) },
            "ring_submit",
        );
        if !live {
            assert_eq!(st, ih);
        } else if matches!(k, Ptr::Null) || bytes == 0 || stream.is_null() {
            assert!(st == ia || st == ih, "{st}");
        }
    }

    /// `ordo_staging_ring_release` of a ticket this thread holds or a made-up one.
    pub(crate) fn ring_release(&mut self) {
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Ring);
        let ticket = match self.tickets.pop() {
            Some((ring, t)) if ring == h && self.rng.chance(2) => t,
            Some(_) | None => self.rng.next() as usize,
        };
        let st = self.record(ordo_staging_ring_release(h as *mut OrdoStagingRing, ticket), "ring_release");
        if !live {
            assert_eq!(st, ih);
        } else {
            assert!(st == ORDO_SUCCESS || st == ORDO_ERROR_INVALID_TICKET || st == ih, "release: {st}");
        }
    }

    /// `ordo_staging_ring_destroy` of a random handle.
    pub(crate) fn ring_destroy(&mut self) {
        let (h, _) = self.handle(Kind::Ring);
        ordo_staging_ring_destroy(h as *mut OrdoStagingRing);
        self.forget(h, Kind::Ring);
    }
}

/// Slot counts past the cap (65536) are refused before any allocation.
#[test]
fn staging_ring_sizes_past_the_cap_are_refused_before_cuda() {
    let _gpu = gpu_lock();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    unsafe {
        assert_eq!(ordo_staging_ring_create(65_537, 1, &mut ring), ia);
        assert_eq!(ordo_staging_ring_create(1 << 40, 1, &mut ring), ia);
        assert_eq!(ordo_staging_ring_create(usize::MAX, 1, &mut ring), ia);
    }
    assert!(ring.is_null());
}

/// A ticket released, submitted, or never issued is refused (`ORDO_ERROR_INVALID_TICKET`) and never
/// reaches the slot handed out again under a new ticket; a refused argument leaves the ticket held.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_stale_ticket_never_reaches_a_slot_handed_out_again() {
    let _gpu = gpu_lock();
    let s = own_stream();
    let dst = upload(&[0u8; 64]);
    let mut ring: *mut OrdoStagingRing = null_mut();
    let (mut p1, mut p2) = (null_mut::<c_void>(), null_mut::<c_void>());
    let (mut t1, mut t2) = (0usize, 0usize);
    let it = ORDO_ERROR_INVALID_TICKET;
    unsafe {
        assert_eq!(ordo_staging_ring_create(1, 64, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut p1, &mut t1), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_release(ring, t1), ORDO_SUCCESS, "release without a copy");
        assert_eq!(ordo_staging_ring_release(ring, t1), it, "released twice");
        // The one slot again, under a new ticket.
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut p2, &mut t2), ORDO_SUCCESS);
        assert_eq!(p1, p2, "the same slot");
        assert_ne!(t1, t2, "under a new ticket");
        core::ptr::write_bytes(p2.cast::<u8>(), 0x5a, 64);
        assert_eq!(ordo_staging_ring_submit(ring, t1, 64, dst.cast(), s), it, "the stale ticket");
        assert_eq!(ordo_staging_ring_release(ring, t1), it);
        assert_eq!(ordo_staging_ring_submit(ring, 0, 64, dst.cast(), s), it, "never issued");
        assert_eq!(ordo_staging_ring_submit(ring, t2 + 1000, 64, dst.cast(), s), it, "never issued");
        // A refused argument leaves the ticket held.
        assert_eq!(ordo_staging_ring_submit(ring, t2, 65, dst.cast(), s), ORDO_ERROR_INVALID_ARGUMENT);
        assert_eq!(ordo_staging_ring_submit(ring, t2, 64, dst.cast(), s), ORDO_SUCCESS, "the holder's own ticket");
        assert_eq!(ordo_staging_ring_submit(ring, t2, 64, dst.cast(), s), it, "used up");
    }
    assert!(download(dst.cast_const(), 64, s).iter().all(|&b| b == 0x5a));
    ordo_staging_ring_destroy(ring);
    raw(|| unsafe {
        sys::cudaFree(dst.cast());
        sys::cudaStreamDestroy(s);
    });
}

/// An acquire waiting for the only slot (its copy held in flight by a host function) returns
/// `ORDO_ERROR_INVALID_HANDLE` when another thread destroys the ring.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_destroy_releases_an_acquire_waiting_on_the_ring() {
    // The only slot's copy is held in flight by a host function; another thread waits for the
    // slot; destroying the ring makes it return ORDO_ERROR_INVALID_HANDLE.
    static GO: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let _gpu = gpu_lock();
    let s = own_stream();
    let dst = upload(&[0u8; 64]);
    let mut ring: *mut OrdoStagingRing = null_mut();
    let (mut slot, mut ticket) = (null_mut::<c_void>(), 0usize);
    unsafe {
        assert_eq!(ordo_staging_ring_create(1, 64, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        hold(s, &GO);
        assert_eq!(ordo_staging_ring_submit(ring, ticket, 64, dst.cast(), s), ORDO_SUCCESS);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let ring_raw = ring as usize;
    let waiter = std::thread::spawn(move || {
        let (mut slot, mut ticket) = (null_mut::<c_void>(), 0usize);
        tx.send(unsafe { ordo_staging_ring_acquire(ring_raw as *mut OrdoStagingRing, 1, &mut slot, &mut ticket) })
            .unwrap();
    });
    assert!(rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(), "waits while the copy is in flight");
    ordo_staging_ring_destroy(ring);
    let answer = rx.recv_timeout(std::time::Duration::from_secs(20));
    GO.store(true, Ordering::Release);
    assert_eq!(answer.expect("destroy did not release the waiter"), ORDO_ERROR_INVALID_HANDLE);
    waiter.join().unwrap();
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    raw(|| unsafe {
        sys::cudaFree(dst.cast());
        sys::cudaStreamDestroy(s);
    });
}
