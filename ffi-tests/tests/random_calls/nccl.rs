//! The NCCL exports' refusals before NCCL is loaded: bad arguments, handles that are not live
//! communicators, and (with no libnccl.so.2) `ORDO_ERROR_NOT_SUPPORTED`.

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

/// NCCL's value of ncclFloat32 (ORDO_NCCL_FLOAT32 in ordo.h).
pub(crate) const ORDO_NCCL_FLOAT32_VALUE: i32 = 7;

/// The NCCL exports refuse bad arguments before loading NCCL (ORDO_ERROR_INVALID_ARGUMENT), and
/// handles that are not live communicators (ORDO_ERROR_INVALID_HANDLE); with no libnccl.so.2 the
/// calls that need it return ORDO_ERROR_NOT_SUPPORTED. Runs without a GPU.
#[test]
fn nccl_bad_arguments_and_handles_are_refused_before_nccl() {
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
