//! What ordo.h promises after `cudaDeviceReset`: handles made before stay in ordo's table, calls on
//! them return `cudaErrorContextIsDestroyed` without reaching CUDA (which segfaults on an old
//! executable graph: `docs/cuda-behaviours.md`, CB-17), destroying them is safe, new handles work, and the
//! pipeline recovers (its internal streams from before are forgotten). A binary of its own: the
//! reset would destroy the work of any test running beside it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use std::sync::atomic::{AtomicBool, Ordering};

unsafe extern "C" fn nop_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    ORDO_SUCCESS
}

const CONTEXT_IS_DESTROYED: OrdoStatus = 709;

/// Holds its stream until `*user` (an `AtomicBool`) is set.
unsafe extern "C" fn hold_stream(user: *mut c_void) {
    let go = unsafe { &*user.cast::<AtomicBool>() };
    while !go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

/// Leaves a staging ring whose last holder let go on CUDA's callback thread (its copy's host
/// function), so that its pinned memory's free is deferred to the next ring creation.
fn ring_freed_on_a_cuda_thread(b: &Buffers) -> *const c_void {
    static GO: AtomicBool = AtomicBool::new(false);
    let mut ring: *mut OrdoStagingRing = null_mut();
    let (mut slot, mut ticket) = (null_mut(), 0usize);
    unsafe {
        assert_eq!(ordo_staging_ring_create(1, 256, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        cuda(
            sys::cudaLaunchHostFunc(b.s, Some(hold_stream), (&GO as *const AtomicBool).cast_mut().cast()),
            "cudaLaunchHostFunc",
        );
        assert_eq!(ordo_staging_ring_submit(ring, ticket, 256, b.d_dst, b.s), ORDO_SUCCESS);
    }
    // The copy in flight holds the ring's memory; the handle goes first.
    ordo_staging_ring_destroy(ring);
    GO.store(true, Ordering::Release);
    cuda(unsafe { sys::cudaStreamSynchronize(b.s) }, "synchronize");
    slot.cast_const()
}

fn is_pinned(p: *const c_void) -> bool {
    let mut attrs = sys::cudaPointerAttributes::default();
    let code = unsafe { sys::cudaPointerGetAttributes(&mut attrs, p) };
    code == sys::cudaError::cudaSuccess && attrs.type_ == sys::cudaMemoryType::cudaMemoryTypeHost
}

fn cuda(code: sys::cudaError_t, what: &str) {
    assert_eq!(code, sys::cudaError::cudaSuccess, "{what}");
}

struct Buffers {
    s: sys::cudaStream_t,
    h_in: *mut f32,
    h_out: *mut f32,
    d_in: *mut f32,
    d_out: *mut f32,
    d_dst: *mut c_void,
}

const N: usize = 4096;

fn buffers() -> Buffers {
    let mut b = Buffers {
        s: null_mut(),
        h_in: null_mut(),
        h_out: null_mut(),
        d_in: null_mut(),
        d_out: null_mut(),
        d_dst: null_mut(),
    };
    unsafe {
        cuda(sys::cudaStreamCreateWithFlags(&mut b.s, sys::cudaStreamNonBlocking), "stream");
        let mut p = null_mut();
        cuda(sys::cudaHostAlloc(&mut p, N * 4, 0), "pinned in");
        b.h_in = p.cast();
        cuda(sys::cudaHostAlloc(&mut p, N * 4, 0), "pinned out");
        b.h_out = p.cast();
        cuda(sys::cudaMalloc(&mut p, N * 4), "device in");
        b.d_in = p.cast();
        cuda(sys::cudaMalloc(&mut p, N * 4), "device out");
        b.d_out = p.cast();
        cuda(sys::cudaMalloc(&mut b.d_dst, 256), "device dst");
        for i in 0..N {
            *b.h_in.add(i) = (i % 100) as f32 * 0.01;
        }
    }
    b
}

fn heavy(mut v: f32) -> f32 {
    for _ in 0..64 {
        v = v.mul_add(0.999, 0.001);
    }
    v
}

fn pipeline(b: &Buffers) -> OrdoStatus {
    unsafe { ordo_pipeline_run(b.s, b.h_in, b.d_in, b.d_out, b.h_out, N, 4, None, null_mut()) }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_handles_made_before_cuda_device_reset_give_statuses_and_destroy_safely() {
    let old = buffers();
    let mut cache: *mut OrdoGraphCache = null_mut();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let mut timer: *mut OrdoTimer = null_mut();
    let (mut slot, mut ticket) = (null_mut(), 0usize);
    unsafe {
        assert_eq!(pipeline(&old), ORDO_SUCCESS);
        assert_eq!(ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut cache), ORDO_SUCCESS);
        assert_eq!(ordo_graph_cache_run(cache, old.s, 3, null_mut()), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_create(2, 256, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        assert_eq!(ordo_timer_create(&mut timer), ORDO_SUCCESS);
        assert_eq!(ordo_timer_start(timer, old.s), ORDO_SUCCESS);
        assert_eq!(ordo_timer_stop(timer, old.s), ORDO_SUCCESS);
        cuda(sys::cudaStreamSynchronize(old.s), "synchronize");
    }
    let deferred = ring_freed_on_a_cuda_thread(&old);
    unsafe { cuda(sys::cudaDeviceReset(), "cudaDeviceReset") };
    let new = buffers();
    // The next ring's creation meets the deferred free of a ring of the destroyed context: it must
    // forget that memory, not pass it to cudaFreeHost (the new context may have reused the
    // address: the buffers just made here).
    let mut fresh: *mut OrdoStagingRing = null_mut();
    assert_eq!(unsafe { ordo_staging_ring_create(1, 64, &mut fresh) }, ORDO_SUCCESS);
    ordo_staging_ring_destroy(fresh);
    for p in [new.h_in.cast_const().cast(), new.h_out.cast_const().cast()] {
        assert!(is_pinned(p), "pinned memory of the new context was freed (the deferred ring was at {deferred:?})");
    }
    let mut seen = Vec::new();
    let mut documented = |what: &str, st: OrdoStatus| {
        assert!(is_documented(st), "{what}: undocumented status {st}");
        seen.push((what.to_string(), st));
    };
    let mut ms = 0f32;
    let (mut slot2, mut ticket2) = (null_mut(), 0usize);
    unsafe {
        documented("timer start", ordo_timer_start(timer, new.s));
        documented("timer elapsed", ordo_timer_elapsed_ms(timer, &mut ms));
        documented("cache run", ordo_graph_cache_run(cache, new.s, 3, null_mut()));
        documented("cache run of a new bucket", ordo_graph_cache_run(cache, new.s, 100, null_mut()));
        documented("ring submit", ordo_staging_ring_submit(ring, ticket, 256, new.d_dst, new.s));
        documented("ring acquire", ordo_staging_ring_acquire(ring, 0, &mut slot2, &mut ticket2));
    }
    println!("statuses after cudaDeviceReset: {seen:?}");
    // ordo never hands a handle of the destroyed context to CUDA (which may crash on it).
    assert!(seen.iter().all(|(_, st)| *st == CONTEXT_IS_DESTROYED), "{seen:?}");
    // The pipeline recovers: a pooled pipeline whose streams are gone is discarded.
    let mut status = pipeline(&new);
    if status != ORDO_SUCCESS {
        assert!(is_documented(status));
        status = pipeline(&new);
    }
    assert_eq!(status, ORDO_SUCCESS, "the pipeline after a reset");
    cuda(unsafe { sys::cudaStreamSynchronize(new.s) }, "synchronize");
    let out = unsafe { core::slice::from_raw_parts(new.h_out, N) };
    let input = unsafe { core::slice::from_raw_parts(new.h_in, N) };
    assert!(out.iter().zip(input).all(|(&o, &i)| o == heavy(i)), "pipeline result after the reset");
    // Destroying the old handles is safe, twice too.
    for _ in 0..2 {
        ordo_timer_destroy(timer);
        ordo_graph_cache_destroy(cache);
        ordo_staging_ring_destroy(ring);
    }
    let mut t: *mut OrdoTimer = null_mut();
    unsafe {
        assert_eq!(ordo_timer_elapsed_ms(timer, &mut ms), ORDO_ERROR_INVALID_HANDLE);
        assert_eq!(ordo_timer_create(&mut t), ORDO_SUCCESS);
        assert_eq!(ordo_timer_start(t, new.s), ORDO_SUCCESS);
        assert_eq!(ordo_timer_stop(t, new.s), ORDO_SUCCESS);
        cuda(sys::cudaStreamSynchronize(new.s), "synchronize");
        assert_eq!(ordo_timer_elapsed_ms(t, &mut ms), ORDO_SUCCESS);
    }
    ordo_timer_destroy(t);
}
