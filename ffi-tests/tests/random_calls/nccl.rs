//! The NCCL exports' refusals before NCCL is loaded: bad arguments, handles that are not live
//! communicators, and (with no libnccl.so.2) `ORDO_ERROR_NOT_SUPPORTED`. In the fuzz: borrowing
//! the communicator made for it ([`Facts::nccl_comm`]), releasing, refused aborts and destroys of
//! borrowed handles, and waits on them.

use crate::fuzz::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

impl Fuzz<'_> {
    /// `ordo_nccl_comm_borrow` of the fuzz's communicator (or of NULL), into a null, misaligned or
    /// good out. A borrowed handle joins the handles.
    pub(crate) fn nccl_borrow(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let comm = if self.rng.chance(4) { 0 } else { self.facts.nccl_comm };
        let mut slots = [null_mut::<OrdoNcclComm>(); 2];
        let (out, bad_out) = match self.rng.below(8) {
            0 => (null_mut(), true),
            // SAFETY: one byte into the array: still inside it (refused before it is written).
            1 => (unsafe { slots.as_mut_ptr().cast::<u8>().add(1) }.cast::<*mut OrdoNcclComm>(), true),
            _ => (slots.as_mut_ptr(), false),
        };
        let st = self.record(unsafe { ordo_nccl_comm_borrow(comm as *mut c_void, out) }, "nccl_borrow");
        if bad_out || comm == 0 {
            assert_eq!(st, ia, "nccl_borrow: a bad out or a null communicator");
            assert!(slots.iter().all(|p| p.is_null()), "nothing written on a refusal");
        } else {
            assert_eq!(st, ORDO_SUCCESS, "nccl_borrow of a live one-rank communicator");
            assert!(!slots[0].is_null());
            self.add(slots[0] as usize, Kind::Nccl);
        }
    }

    /// `ordo_nccl_comm_release` of a random handle: a borrowed one ends (unless another thread
    /// released it first), anything else is not a live communicator.
    pub(crate) fn nccl_release(&mut self) {
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Nccl);
        let st = self.record(ordo_nccl_comm_release(h as *mut OrdoNcclComm), "nccl_release");
        if live {
            assert!(st == ORDO_SUCCESS || st == ih, "nccl_release: {st}");
            self.forget(h, Kind::Nccl);
        } else {
            assert_eq!(st, ih, "nccl_release: not a live communicator");
        }
    }

    /// `ordo_nccl_comm_abort` or `ordo_nccl_comm_destroy` of a random handle: a borrowed one is
    /// refused and stays (destroy's refusal is the thread's last error); anything else is not a live
    /// communicator.
    pub(crate) fn nccl_refused_ends(&mut self) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Nccl);
        let comm = h as *mut OrdoNcclComm;
        if self.rng.chance(2) {
            let st = self.record(ordo_nccl_comm_abort(comm), "nccl_abort");
            if live {
                assert!(st == ia || st == ih, "nccl_abort of a borrowed handle: {st}");
            } else {
                assert_eq!(st, ih, "nccl_abort: not a live communicator");
            }
        } else {
            ordo_clear_last_error();
            ordo_nccl_comm_destroy(comm);
            let mut info = core::mem::MaybeUninit::<OrdoErrorInfo>::zeroed();
            // SAFETY: zeroed is a valid OrdoErrorInfo; size set before the call.
            let info = unsafe {
                (*info.as_mut_ptr()).size = core::mem::size_of::<OrdoErrorInfo>();
                assert_eq!(ordo_last_error(info.as_mut_ptr()), ORDO_SUCCESS);
                info.assume_init()
            };
            if live {
                // Refused, unless another thread released the handle first (then nothing to do).
                assert!(info.status == ia || info.status == ORDO_SUCCESS, "nccl_destroy: {}", info.status);
            } else {
                assert_eq!(info.status, ORDO_SUCCESS, "nccl_destroy of what is not a live communicator does nothing");
            }
        }
    }

    /// `ordo_nccl_comm_wait` on a random handle and the call's stream: a null stream is refused
    /// first, then a handle that is not a live communicator, then a capturing stream; a borrowed
    /// handle's wait for the stream's work succeeds.
    pub(crate) fn nccl_wait(&mut self, stream: sys::cudaStream_t, capturing: bool) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Nccl);
        let st = self.record(unsafe { ordo_nccl_comm_wait(h as *mut OrdoNcclComm, stream, 60_000) }, "nccl_wait");
        if stream.is_null() {
            assert_eq!(st, ia, "nccl_wait: a null stream");
        } else if !live {
            assert_eq!(st, ih, "nccl_wait: not a live communicator");
        } else if capturing {
            assert!(st == ORDO_ERROR_STREAM_CAPTURING || st == ih, "nccl_wait on a capturing stream: {st}");
        } else {
            assert!(st == ORDO_SUCCESS || st == ih, "nccl_wait: {st}");
        }
    }
}

/// NCCL's value of ncclFloat32 (ORDO_NCCL_FLOAT32 in ordo.h).
pub(crate) const ORDO_NCCL_FLOAT32_VALUE: i32 = 7;

/// The NCCL exports refuse bad arguments before loading NCCL (ORDO_ERROR_INVALID_ARGUMENT), and
/// handles that are not live communicators (ORDO_ERROR_INVALID_HANDLE); with no libnccl.so.2 the
/// calls that need it return ORDO_ERROR_NOT_SUPPORTED. Runs without a GPU.
#[test]
fn nccl_bad_arguments_and_handles_are_refused_before_nccl() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let legacy = sys::cudaStreamLegacy();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let ih = ORDO_ERROR_INVALID_HANDLE;
    let mut id = [0u8; 128];
    let mut comm: *mut OrdoNcclComm = null_mut();
    let mut f = [0f32; 16];
    let p = f.as_mut_ptr().cast::<c_void>();
    let forged = 0x1000 as *mut OrdoNcclComm;
    unsafe {
        assert_eq!(ordo_nccl_get_unique_id(null_mut(), 128), ia);
        assert_eq!(ordo_nccl_get_unique_id(id.as_mut_ptr(), 127), ia);
        assert_eq!(ordo_nccl_get_unique_id(id.as_mut_ptr(), 129), ia);
        assert_eq!(ordo_nccl_comm_init_rank(0, 2, null(), 128, 0, &mut comm), ia);
        assert_eq!(ordo_nccl_comm_init_rank(0, 2, id.as_ptr(), 127, 0, &mut comm), ia);
        assert_eq!(ordo_nccl_comm_init_rank(0, 2, id.as_ptr(), 128, 0, null_mut()), ia);
        assert_eq!(ordo_nccl_comm_init_rank(0, 2, id.as_ptr(), 128, 2, &mut comm), ia, "rank not below nranks");
        assert_eq!(ordo_nccl_comm_init_rank(0, 0, id.as_ptr(), 128, 0, &mut comm), ia, "no ranks");
        assert_eq!(ordo_nccl_comm_init_rank(-1, 2, id.as_ptr(), 128, 0, &mut comm), ia, "negative device");
        assert!(comm.is_null(), "nothing written on a refusal");
        // Handles that are not live communicators.
        for h in [null_mut(), forged] {
            assert_eq!(ordo_nccl_all_reduce(h, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 0, legacy), ih);
            assert_eq!(ordo_nccl_broadcast(h, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 0, legacy), ih);
            assert_eq!(ordo_nccl_reduce(h, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 0, 0, legacy), ih);
            assert_eq!(ordo_nccl_all_gather(h, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, legacy), ih);
            assert_eq!(ordo_nccl_reduce_scatter(h, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 0, legacy), ih);
            assert_eq!(ordo_nccl_comm_wait(h, legacy, 10), ih);
            assert_eq!(ordo_nccl_comm_abort(h), ih);
            assert_eq!(ordo_nccl_comm_release(h), ih);
            ordo_nccl_comm_destroy(h);
        }
        // Borrowing checks its pointers before NCCL is loaded.
        assert_eq!(ordo_nccl_comm_borrow(null_mut(), &mut comm), ia, "null communicator");
        assert_eq!(ordo_nccl_comm_borrow(forged.cast(), null_mut()), ia, "null out");
        assert!(comm.is_null(), "nothing written on a refusal");
        // Null streams and unknown operations are refused before the handle is even looked up.
        assert_eq!(ordo_nccl_all_reduce(forged, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 0, null_mut()), ia);
        assert_eq!(ordo_nccl_all_reduce(forged, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, 5, legacy), ia, "unknown op");
        assert_eq!(ordo_nccl_reduce_scatter(forged, p, p, 4, ORDO_NCCL_FLOAT32_VALUE, -1, legacy), ia);
        assert_eq!(ordo_nccl_comm_wait(forged, null_mut(), 10), ia);
        // The library: present (an id comes back) or absent (NOT_SUPPORTED, for init too).
        let got = ordo_nccl_get_unique_id(id.as_mut_ptr(), 128);
        println!("ordo_nccl_get_unique_id: {got}");
        assert!([ORDO_SUCCESS, ORDO_ERROR_NOT_SUPPORTED, ORDO_ERROR_LIBRARY].contains(&got), "{got}");
        if got == ORDO_ERROR_NOT_SUPPORTED {
            assert_eq!(ordo_nccl_comm_init_rank(0, 2, id.as_ptr(), 128, 0, &mut comm), ORDO_ERROR_NOT_SUPPORTED);
            assert!(comm.is_null());
        }
    }
}
