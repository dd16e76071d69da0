//! Drives **every** export of the C API, checking that it never crashes and always returns a
//! documented status (0, a CUDA code 1..=999, or one of ordo's negative codes), and that each documented refusal
//! happens where it must:
//! - null, misaligned and overflowing arguments: `ORDO_ERROR_INVALID_ARGUMENT`, before CUDA;
//! - stale, destroyed-twice, forged and wrong-kind handles: `ORDO_ERROR_INVALID_HANDLE`;
//! - several threads at once on shared handles, destroys racing uses;
//! - failing callbacks: their status comes back, nothing of ordo's keeps running;
//! - on a GPU, calls inside the caller's captures in each mode (global, thread-local, relaxed):
//!   the capture stays valid, its graph replays, results match a CPU reference; and the work
//!   enqueued while another thread holds a global-mode capture open (what that mode allows other
//!   threads) leaves that capture valid.
//!
//! The CPU-runnable tests run everywhere (without a driver every call stops at its argument checks
//! or at CUDA's status); the GPU ones are ignored without a device. Valid device pointers are only
//! paired with sizes inside their allocation (the C API cannot see an allocation's size).
//!
//! One module a family of exports (`version`, `kernels`, `pipeline`, `graph_cache`, `staging`,
//! `timer`, `temporaries`, `sm`, `handles`, `nccl`), each with its share of the fuzz's calls
//! (`impl Fuzz`) and its own tests; `fuzz` holds the fuzz's state, what it knows of the machine,
//! its choice of call and its threads; `every_export` the GPU tests that run every export on one
//! workload. `ORDO_FUZZ_CALLS` sets the calls a fuzz thread makes (800); `ORDO_FUZZ_NCCL=0` keeps
//! NCCL out of the fuzz (no communicator is made to borrow).
//!
//! Every test takes `gpu_lock`, the CPU-only ones too: some tests capture in global mode, and a
//! global-mode capture beside another thread's CUDA calls can crash the driver (CB-01, CB-02 in
//! docs/cuda-behaviours.md); on the H200 with the 13.5 runtime the unlocked CPU-only tests did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod every_export;
mod fuzz;
mod graph_cache;
mod handles;
mod kernels;
mod nccl;
mod pipeline;
mod sm;
mod staging;
mod support;
mod temporaries;
mod timer;
mod version;

use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;

/// Null streams, null and misaligned pointers and overflowing sizes are refused before CUDA by
/// every export that takes them; status strings exist for any value.
#[test]
fn bad_arguments_are_refused_before_cuda() {
    let _gpu = gpu_lock();
    let legacy = sys::cudaStreamLegacy();
    let mut f = [0f32; 16];
    let p = f.as_mut_ptr();
    let m = unsafe { p.cast::<u8>().add(1).cast::<f32>() }; // misaligned
    let b = [0u8; 16];
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    unsafe {
        // Null stream; null and misaligned pointers; overflowing sizes.
        assert_eq!(ordo_gemv_normalize(null_mut(), p, p, p, 1, 1), ia);
        assert_eq!(ordo_gemv_normalize(legacy, null(), p, p, 1, 1), ia);
        assert_eq!(ordo_gemv_normalize(legacy, p, m, p, 1, 1), ia);
        assert_eq!(ordo_gemv_normalize(legacy, p, p, p, usize::MAX, 2), ia);
        assert_eq!(ordo_gemv_normalize(legacy, p, p, p, 1 << 31, 1 << 31), ia, "rows * cols * 4 overflows");
        assert_eq!(ordo_frame_filter(legacy, b.as_ptr(), null_mut(), 4, 4), ia);
        assert_eq!(ordo_frame_filter(legacy, b.as_ptr(), b.as_ptr().cast_mut(), usize::MAX, 2), ia);
        assert_eq!(
            ordo_frame_filter(legacy, b.as_ptr(), b.as_ptr().cast_mut(), usize::MAX / 4, 2),
            ia,
            "* 3 overflows"
        );
        assert_eq!(ordo_pdl_chain(legacy, p, p, p, 4, 1, 2), ia, "pdl out of range");
        assert_eq!(ordo_pdl_chain(legacy, p, m, p, 4, 1, 0), ia);
        assert_eq!(ordo_pdl_chain(legacy, p, p, p, usize::MAX / 2, 1, 0), ia);
        assert_eq!(ordo_pipeline_run(legacy, p, p, p, null_mut(), 4, 1, None, null_mut()), ia);
        assert_eq!(ordo_pipeline_run(legacy, p, p, p, m, 4, 1, None, null_mut()), ia);
        assert_eq!(ordo_pipeline_run(legacy, p, p, p, p, 0, 1, None, null_mut()), ia);
        assert_eq!(
            ordo_pipeline_run(legacy, p, p, p, p, usize::MAX / 4 + 1, 1, None, null_mut()),
            ia,
            "n * 4 overflows"
        );
        assert_eq!(ordo_pipeline_run(legacy, p, p, p, p, 4, 0, None, null_mut()), ia);
        assert_eq!(ordo_pipeline_run(legacy, p, p, p, p, 4, 5, None, null_mut()), ia, "more chunks than elements");
        assert_eq!(ordo_pipeline_run(null_mut(), p, p, p, p, 4, 1, None, null_mut()), ia);
        assert_eq!(ordo_runtime_version(null_mut()), ia);
        assert_eq!(ordo_runtime_version(m.cast()), ia);
        let mut ring: *mut OrdoStagingRing = null_mut();
        assert_eq!(ordo_staging_ring_create(0, 16, &mut ring), ia);
        assert_eq!(ordo_staging_ring_create(16, 0, &mut ring), ia);
        assert_eq!(ordo_staging_ring_create(usize::MAX / 2, 4, &mut ring), ia);
        assert_eq!(ordo_staging_ring_create(2, 16, null_mut()), ia);
        assert!(ring.is_null(), "nothing written on a refusal");
        let mut timer: *mut OrdoTimer = null_mut();
        assert_eq!(ordo_timer_create(null_mut()), ia);
        assert_eq!(ordo_timer_create(m.cast()), ia);
        assert!(timer.is_null());
        let _ = &mut timer;
        // Status strings for any value.
        for s in [i32::MIN, -10, -9, -1, 0, 1, 35, 600, 700, 999, 1000, 9999, 10000, 10001, 10010, i32::MAX] {
            assert!(!ordo_status_name(s).is_null() && !ordo_status_string(s).is_null());
            assert!(ordo_status_is_sticky(s) <= 1);
        }
        assert_eq!(ordo_status_is_sticky(700), 1);
    }
}

/// The fuzz: 4 threads of random calls (800 each, `ORDO_FUZZ_CALLS` to change) never crash, return
/// documented statuses, refuse exactly where the model says, and leave the caller's captures valid.
#[test]
fn random_calls_never_crash_and_return_documented_statuses() {
    // On a GPU machine this holds the binary's GPU lock: its threads' calls must meet no other
    // test's captures.
    let _gpu = gpu_lock();
    // ORDO_FUZZ_CALLS (calls a thread) lets a slow harness, such as compute-sanitizer, run fewer.
    let calls = std::env::var("ORDO_FUZZ_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(800);
    fuzz::fuzz(4, calls);
}
