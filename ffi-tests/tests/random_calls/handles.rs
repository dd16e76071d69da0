//! Handles of every kind: stale, destroyed twice, forged and of the wrong kind, given to every
//! export that takes one; shared by threads while others destroy them.

use crate::fuzz::*;
use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

impl Fuzz<'_> {
    /// Every destroy function given any value at all.
    pub(crate) fn destroy_anything(&mut self) {
        // Destroy functions given anything at all.
        let v = self.rng.next() as usize;
        ordo_graph_cache_destroy(v as *mut OrdoGraphCache);
        ordo_staging_ring_destroy(v as *mut OrdoStagingRing);
        ordo_timer_destroy(v as *mut OrdoTimer);
        ordo_pipeline_destroy(v as *mut OrdoPipeline);
        ordo_sm_partition_destroy(v as *mut OrdoSmPartition);
        ordo_sm_stream_destroy(v as *mut OrdoSmStream);
        ordo_nccl_comm_destroy(v as *mut OrdoNcclComm);
    }
}

/// Forged values, live handles of the wrong kind and stale handles get `ORDO_ERROR_INVALID_HANDLE`
/// from every export that takes a handle; a wrong-kind destroy leaves the handle alone; a stale
/// handle never reaches a newer object.
#[test]
fn stale_forged_and_wrong_kind_handles_get_invalid_handle() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let ih = ORDO_ERROR_INVALID_HANDLE;
    let legacy = sys::cudaStreamLegacy();
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut cache) }, ORDO_SUCCESS);
    let zeros = [0u64; 16];
    let mut f = [0f32; 4];
    let mut slot: *mut c_void = null_mut();
    let mut ticket = 0usize;
    let mut ms = 0f32;
    // Forged values: NULL, addresses of ordinary memory, small integers, all-ones.
    let forged: [usize; 6] = [0, zeros.as_ptr() as usize, f.as_ptr() as usize, 8, 0xb, usize::MAX];
    let mut others: Vec<usize> = forged.to_vec();
    others.push(cache as usize); // a live handle of the wrong kind for rings and timers
    for &h in &others {
        unsafe {
            let (ring, timer) = (h as *mut OrdoStagingRing, h as *mut OrdoTimer);
            assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ih);
            assert_eq!(ordo_staging_ring_acquire(ring, 1, &mut slot, &mut ticket), ih);
            assert_eq!(ordo_staging_ring_submit(ring, 0, 4, f.as_mut_ptr().cast(), legacy), ih);
            assert_eq!(ordo_staging_ring_release(ring, 1), ih);
            assert_eq!(ordo_timer_start(timer, legacy), ih);
            assert_eq!(ordo_timer_stop(timer, legacy), ih);
            assert_eq!(ordo_timer_elapsed_ms(timer, &mut ms), ih);
            let pipeline = h as *mut OrdoPipeline;
            let p = f.as_mut_ptr().cast::<c_void>();
            assert_eq!(ordo_pipeline_run_on(pipeline, legacy, p, p, p, p, 1, None, null_mut()), ih);
            assert_eq!(ordo_pipeline_run_stencil(pipeline, legacy, p, p, p, p, 1, 4, 4, 1, None, null_mut()), ih);
            let (partition, sm_stream) = (h as *mut OrdoSmPartition, h as *mut OrdoSmStream);
            let mut sms = 0u32;
            assert_eq!(ordo_sm_partition_sm_count(partition, &mut sms), ih);
            let mut made = null_mut();
            assert_eq!(ordo_sm_stream_create(partition, 0, &mut made), ih);
            assert!(made.is_null());
            let mut raw_stream: sys::cudaStream_t = null_mut();
            assert_eq!(ordo_sm_stream_handle(sm_stream, &mut raw_stream), ih);
            assert!(raw_stream.is_null());
            assert_eq!(ordo_nccl_comm_release(h as *mut OrdoNcclComm), ih);
            ordo_staging_ring_destroy(ring);
            ordo_timer_destroy(timer);
            ordo_pipeline_destroy(pipeline);
            ordo_sm_partition_destroy(partition);
            ordo_sm_stream_destroy(sm_stream);
        }
    }
    for &h in &forged {
        let c = h as *mut OrdoGraphCache;
        unsafe {
            assert_eq!(ordo_graph_cache_run(c, legacy, 1, null_mut()), ih);
            assert_eq!(ordo_graph_cache_capture_all(c, legacy), ih);
            ordo_graph_cache_destroy(c);
        }
    }
    // The wrong-kind destroys above left the cache alone: it still answers (here: a NULL stream).
    assert_eq!(unsafe { ordo_graph_cache_run(cache, null_mut(), 1, null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
    let stale = cache;
    ordo_graph_cache_destroy(cache);
    ordo_graph_cache_destroy(cache); // twice: harmless
    unsafe {
        assert_eq!(ordo_graph_cache_run(stale, legacy, 1, null_mut()), ih);
        assert_eq!(ordo_graph_cache_capture_all(stale, legacy), ih);
        // A stale handle never reaches a newer object.
        let mut fresh: *mut OrdoGraphCache = null_mut();
        assert_eq!(ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut fresh), ORDO_SUCCESS);
        assert_ne!(fresh, stale);
        assert_eq!(ordo_graph_cache_run(stale, legacy, 1, null_mut()), ih);
        assert_eq!(ordo_timer_elapsed_ms(fresh.cast(), &mut ms), ih);
        ordo_graph_cache_destroy(fresh);
    }
}

/// 8 threads make, use and destroy caches in random order on shared slots: every status is
/// documented, and a destroyed handle answers `ORDO_ERROR_INVALID_HANDLE` for good.
#[test]
fn handles_shared_by_threads_while_others_destroy_them() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    // 8 threads share a table of handle slots: each makes, uses and destroys caches in random
    // order, including ones another thread is using or has just destroyed. Every status is
    // documented; a destroyed handle answers ORDO_ERROR_INVALID_HANDLE for good.
    let slots: Arc<Vec<AtomicUsize>> = Arc::new((0..16).map(|_| AtomicUsize::new(0)).collect());
    let destroyed: Arc<Mutex<Vec<usize>>> = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let (slots, destroyed) = (Arc::clone(&slots), Arc::clone(&destroyed));
            std::thread::spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t + 1));
                for _ in 0..2000 {
                    let i = rng.below(16) as usize;
                    match rng.below(4) {
                        0 => {
                            let mut c: *mut OrdoGraphCache = null_mut();
                            let st = unsafe {
                                ordo_graph_cache_create(
                                    null(),
                                    0,
                                    rng.below(2) as i32,
                                    Some(nop_body),
                                    null_mut(),
                                    &mut c,
                                )
                            };
                            assert_eq!(st, ORDO_SUCCESS);
                            let old = slots[i].swap(c as usize, Ordering::AcqRel);
                            if old != 0 {
                                ordo_graph_cache_destroy(old as *mut OrdoGraphCache);
                                destroyed.lock().unwrap().push(old);
                            }
                        }
                        1 => {
                            let old = slots[i].swap(0, Ordering::AcqRel);
                            ordo_graph_cache_destroy(old as *mut OrdoGraphCache);
                            if old != 0 {
                                destroyed.lock().unwrap().push(old);
                            }
                        }
                        _ => {
                            // A use racing destroys: a status, never a crash. The NULL stream makes
                            // the call stop after the handle check, without CUDA.
                            let h = slots[i].load(Ordering::Acquire) as *mut OrdoGraphCache;
                            let st = unsafe { ordo_graph_cache_run(h, null_mut(), 3, null_mut()) };
                            assert!(st == ORDO_ERROR_INVALID_ARGUMENT || st == ORDO_ERROR_INVALID_HANDLE, "{st}");
                            let t = h.cast::<OrdoTimer>();
                            let mut ms = 0f32;
                            assert_eq!(unsafe { ordo_timer_elapsed_ms(t, &mut ms) }, ORDO_ERROR_INVALID_HANDLE);
                        }
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for s in slots.iter() {
        let h = s.swap(0, Ordering::AcqRel);
        ordo_graph_cache_destroy(h as *mut OrdoGraphCache);
        if h != 0 {
            destroyed.lock().unwrap().push(h);
        }
    }
    for &h in destroyed.lock().unwrap().iter() {
        assert_eq!(
            unsafe { ordo_graph_cache_run(h as *mut OrdoGraphCache, sys::cudaStreamLegacy(), 1, null_mut()) },
            ORDO_ERROR_INVALID_HANDLE
        );
    }
}
