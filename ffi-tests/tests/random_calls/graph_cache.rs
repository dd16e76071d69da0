//! The graph-cache exports: `ordo_graph_cache_create`(`_with_options`), `_run`, `_capture_all`,
//! `_destroy`; the checks of their options and buckets; a body that waits for another thread's run
//! of the same cache.

use crate::fuzz::*;
use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;
use std::sync::atomic::{AtomicUsize, Ordering};

impl Fuzz<'_> {
    /// `ordo_graph_cache_create` with random buckets (null, misaligned, overflowing counts) and
    /// bodies (none, failing, returning garbage, doing nothing).
    pub(crate) fn graph_cache_create(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let buckets = [1usize, 3, 8, 40, 100];
        let (ptr, n): (*const usize, usize) = match self.rng.below(6) {
            0 => (null(), 0),
            1 => (null(), 3),
            2 => (unsafe { buckets.as_ptr().cast::<u8>().add(1).cast() }, 2),
            3 => (buckets.as_ptr(), usize::MAX / 8 + 1),
            _ => (buckets.as_ptr(), 1 + self.rng.below(5) as usize),
        };
        let body = match self.rng.below(5) {
            0 => None,
            1 => Some(failing_body as unsafe extern "C" fn(_, _, _) -> _),
            2 => Some(garbage_body as unsafe extern "C" fn(_, _, _) -> _),
            _ => Some(nop_body as unsafe extern "C" fn(_, _, _) -> _),
        };
        let mut out: *mut OrdoGraphCache = null_mut();
        let eager = self.rng.below(2) as i32;
        let st =
            self.record(unsafe { ordo_graph_cache_create(ptr, n, eager, body, null_mut(), &mut out) }, "cache_create");
        let valid = body.is_some() && (n == 0 || (n <= 5 && ptr == buckets.as_ptr()));
        if valid {
            assert_eq!(st, ORDO_SUCCESS, "cache create");
            self.add(out as usize, Kind::Cache);
        } else {
            assert_eq!(st, ia, "cache create refused");
            assert!(out.is_null());
        }
    }

    /// `ordo_graph_cache_capture_all` (`capture_all`) or `ordo_graph_cache_run` on a random handle.
    pub(crate) fn graph_cache_run(&mut self, capture_all: bool, stream: sys::cudaStream_t, capturing: bool) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Cache);
        let c = h as *mut OrdoGraphCache;
        let st = if capture_all {
            self.record(unsafe { ordo_graph_cache_capture_all(c, stream) }, "cache_capture_all")
        } else {
            let n = self.rng.size(300);
            let mut bucket = usize::MAX;
            let st = self.record(unsafe { ordo_graph_cache_run(c, stream, n, &mut bucket) }, "cache_run");
            if st == ORDO_SUCCESS {
                assert!(bucket >= n.max(1) || bucket == n, "bucket {bucket} for {n}");
            }
            st
        };
        if !live {
            assert_eq!(st, ih, "cache: not a live cache");
        } else if stream.is_null() {
            assert!(st == ia || st == ih, "{st}");
        } else if capture_all && capturing {
            assert!(st == ORDO_ERROR_STREAM_CAPTURING || st == ih, "capture_all while capturing: {st}");
        }
    }

    /// `ordo_graph_cache_destroy` of a random handle.
    pub(crate) fn graph_cache_destroy(&mut self) {
        let (h, _) = self.handle(Kind::Cache);
        ordo_graph_cache_destroy(h as *mut OrdoGraphCache);
        self.forget(h, Kind::Cache);
    }
}

pub(crate) static FREED: AtomicUsize = AtomicUsize::new(0);
pub(crate) unsafe extern "C" fn count_free(user: *mut c_void) {
    assert_eq!(user as usize, 0x5eed, "the finalizer gets the user pointer");
    FREED.fetch_add(1, Ordering::SeqCst);
}

/// The graph cache's options are checked before anything is made: a struct of an older, smaller
/// size, an unknown capture mode, instantiate flags ordo does not take (Upload needs a stream,
/// which instantiation has none of; unknown bits); NULL options are the defaults. The `user`
/// finalizer runs exactly once: at destroy, or on a failed create whose options could be read.
#[test]
fn graph_cache_options_are_checked_before_anything_is_made() {
    let _gpu = gpu_lock();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let good = OrdoGraphCacheOptions {
        size: core::mem::size_of::<OrdoGraphCacheOptions>(),
        capture_mode: ORDO_CAPTURE_THREAD_LOCAL,
        warmup: 1,
        overflow_eager: 1,
        instantiate_flags: sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagAutoFreeOnLaunch.0 as u64,
        user_free: Some(count_free),
        upload: 0,
    };
    let user = 0x5eed as *mut c_void;
    let mut cache: *mut OrdoGraphCache = null_mut();
    let before = FREED.load(Ordering::SeqCst);
    assert_eq!(
        unsafe { ordo_graph_cache_create_with_options(null(), 0, &good, Some(nop_body), user, &mut cache) },
        ORDO_SUCCESS
    );
    assert_eq!(FREED.load(Ordering::SeqCst), before, "not while the cache lives");
    ordo_graph_cache_destroy(cache);
    ordo_graph_cache_destroy(cache);
    assert_eq!(FREED.load(Ordering::SeqCst), before + 1, "once, at destroy");
    let bad_mode = OrdoGraphCacheOptions { capture_mode: 9, ..good };
    let st = unsafe { ordo_graph_cache_create_with_options(null(), 0, &bad_mode, Some(nop_body), user, &mut cache) };
    assert_eq!(st, ia);
    assert_eq!(FREED.load(Ordering::SeqCst), before + 2, "once, on a failed create");
    let st = unsafe {
        ordo_graph_cache_create_with_options([4usize, 2].as_ptr(), 2, &good, Some(nop_body), user, &mut cache)
    };
    assert_eq!(st, ia);
    assert_eq!(FREED.load(Ordering::SeqCst), before + 3, "once, on bad buckets");
    let good = OrdoGraphCacheOptions { user_free: None, ..good };
    let upload = sys::cudaGraphInstantiateFlags::cudaGraphInstantiateFlagUpload.0 as u64;
    let create = |o: *const OrdoGraphCacheOptions| {
        let mut cache: *mut OrdoGraphCache = null_mut();
        let st = unsafe { ordo_graph_cache_create_with_options(null(), 0, o, Some(nop_body), null_mut(), &mut cache) };
        assert_eq!(st == ORDO_SUCCESS, !cache.is_null(), "a handle exactly on success");
        ordo_graph_cache_destroy(cache);
        st
    };
    assert_eq!(create(&good), ORDO_SUCCESS);
    assert_eq!(create(core::ptr::null()), ORDO_SUCCESS, "NULL: the defaults");
    for (what, bad) in [
        ("older size", OrdoGraphCacheOptions { size: good.size - 1, ..good }),
        ("capture mode", OrdoGraphCacheOptions { capture_mode: 3, ..good }),
        ("negative capture mode", OrdoGraphCacheOptions { capture_mode: -1, ..good }),
        ("upload flag", OrdoGraphCacheOptions { instantiate_flags: upload, ..good }),
        ("unknown flag", OrdoGraphCacheOptions { instantiate_flags: 1 << 40, ..good }),
    ] {
        assert_eq!(create(&bad), ia, "{what}");
    }
    let mut raw = [0u64; 8];
    let misaligned = unsafe { raw.as_mut_ptr().cast::<u8>().add(4).cast::<OrdoGraphCacheOptions>() };
    assert_eq!(create(misaligned), ia, "misaligned");
}

/// `ordo_graph_cache_create` checks its bucket array (NULL with a count, misaligned, overflowing,
/// decreasing, zero) and its body and out before reading them; a zero count ignores the pointer.
#[test]
fn graph_cache_create_checks_buckets_before_reading_them() {
    let _gpu = gpu_lock();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let mut cache: *mut OrdoGraphCache = null_mut();
    let buckets = [1usize, 4, 16, 64];
    let raw = [0u64; 8];
    let misaligned = unsafe { raw.as_ptr().cast::<u8>().add(4).cast::<usize>() };
    unsafe {
        assert_eq!(
            ordo_graph_cache_create(null(), 3, 0, Some(nop_body), null_mut(), &mut cache),
            ia,
            "NULL with a count"
        );
        assert_eq!(ordo_graph_cache_create(misaligned, 2, 0, Some(nop_body), null_mut(), &mut cache), ia, "misaligned");
        assert_eq!(
            ordo_graph_cache_create(buckets.as_ptr(), usize::MAX / 4, 0, Some(nop_body), null_mut(), &mut cache),
            ia,
            "count overflows"
        );
        assert_eq!(
            ordo_graph_cache_create(buckets.as_ptr(), usize::MAX, 0, Some(nop_body), null_mut(), &mut cache),
            ia
        );
        assert_eq!(
            ordo_graph_cache_create([4usize, 2].as_ptr(), 2, 0, Some(nop_body), null_mut(), &mut cache),
            ia,
            "decreasing"
        );
        assert_eq!(
            ordo_graph_cache_create([0usize, 2].as_ptr(), 2, 0, Some(nop_body), null_mut(), &mut cache),
            ia,
            "zero bucket"
        );
        assert_eq!(ordo_graph_cache_create(buckets.as_ptr(), 4, 0, None, null_mut(), &mut cache), ia, "NULL body");
        assert_eq!(
            ordo_graph_cache_create(buckets.as_ptr(), 4, 0, Some(nop_body), null_mut(), null_mut()),
            ia,
            "NULL out"
        );
        assert_eq!(
            ordo_graph_cache_create(buckets.as_ptr(), 4, 0, Some(nop_body), null_mut(), misaligned.cast_mut().cast()),
            ia,
            "misaligned out"
        );
        assert!(cache.is_null(), "nothing written on a refusal");
        // n_buckets 0 ignores the pointer (the default buckets), even a misaligned one.
        assert_eq!(ordo_graph_cache_create(misaligned, 0, 0, Some(nop_body), null_mut(), &mut cache), ORDO_SUCCESS);
        ordo_graph_cache_destroy(cache);
        assert_eq!(
            ordo_graph_cache_create(buckets.as_ptr(), 4, 1, Some(nop_body), null_mut(), &mut cache),
            ORDO_SUCCESS
        );
        ordo_graph_cache_destroy(cache);
    }
}

/// What [`blocking_body`] shares between the two threads of the test below.
struct Rendezvous {
    /// Set by the first call of the body: it then waits for `other_done`.
    entered: std::sync::atomic::AtomicBool,
    other_done: std::sync::atomic::AtomicBool,
    waited_out: std::sync::atomic::AtomicBool,
}

/// The first call waits (up to 20 s) until the other thread's run of the same cache has returned;
/// later calls (the other thread's) enqueue nothing and return at once.
unsafe extern "C" fn blocking_body(_: sys::cudaStream_t, _: usize, user: *mut c_void) -> OrdoStatus {
    let r = unsafe { &*user.cast::<Rendezvous>() };
    if !r.entered.swap(true, Ordering::AcqRel) {
        let start = std::time::Instant::now();
        while !r.other_done.load(Ordering::Acquire) {
            if start.elapsed() > std::time::Duration::from_secs(20) {
                r.waited_out.store(true, Ordering::Release);
                return CUDA_INVALID_VALUE;
            }
            std::thread::yield_now();
        }
    }
    ORDO_SUCCESS
}

/// A body that waits for another thread's run of the same bucket does not deadlock: no lock is
/// held across the body, the other thread captures the bucket itself, and both runs succeed.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_cache_body_waiting_for_another_threads_run_of_the_same_bucket_does_not_deadlock() {
    // The body ran under the cache's lock: a body that waited for another thread's run of the same
    // cache deadlocked (that run waited for the lock). Now no lock is held across the body: the
    // other thread captures the bucket itself, the first keeps whichever graph was installed.
    let _gpu = gpu_lock();
    let r: &'static Rendezvous =
        Box::leak(Box::new(Rendezvous { entered: false.into(), other_done: false.into(), waited_out: false.into() }));
    let mut cache: *mut OrdoGraphCache = null_mut();
    let user = (r as *const Rendezvous).cast_mut().cast();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 0, Some(blocking_body), user, &mut cache) }, ORDO_SUCCESS);
    let cache_raw = cache as usize;
    let first = std::thread::spawn(move || {
        let s = own_stream();
        let mut bucket = 0usize;
        let st = unsafe { ordo_graph_cache_run(cache_raw as *mut OrdoGraphCache, s, 3, &mut bucket) };
        cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
        raw(|| unsafe { sys::cudaStreamDestroy(s) });
        (st, bucket)
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !r.entered.load(Ordering::Acquire) {
        assert!(std::time::Instant::now() < deadline, "the first run never called the body");
        std::thread::yield_now();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let s = own_stream();
        let mut bucket = 0usize;
        let st = unsafe { ordo_graph_cache_run(cache_raw as *mut OrdoGraphCache, s, 4, &mut bucket) };
        cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
        raw(|| unsafe { sys::cudaStreamDestroy(s) });
        r.other_done.store(true, Ordering::Release);
        tx.send((st, bucket)).unwrap();
    });
    let second =
        rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the second run waited for the first one's body");
    assert_eq!(second, (ORDO_SUCCESS, 4));
    assert_eq!(first.join().unwrap(), (ORDO_SUCCESS, 4));
    assert!(!r.waited_out.load(Ordering::Acquire), "the first body waited in vain");
    // Size 0 rounds up to the first bucket, as in the Rust API (and both threads' graphs gave one).
    let s = own_stream();
    let mut bucket = usize::MAX;
    assert_eq!(unsafe { ordo_graph_cache_run(cache, s, 0, &mut bucket) }, ORDO_SUCCESS);
    assert_eq!(bucket, 1);
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    raw(|| unsafe { sys::cudaStreamDestroy(s) });
    ordo_graph_cache_destroy(cache);
}
