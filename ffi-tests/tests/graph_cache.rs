//! A C graph cache destroyed while its own calls run: from its body, and from another thread. Once
//! `ordo_graph_cache_destroy` has returned, no call of the cache launches a graph, and a call that
//! sees the cache closed calls the body no more (the call ends with `ORDO_ERROR_INVALID_HANDLE`);
//! `user_free` runs once the last call in flight has returned, never while a body still uses
//! `user`, and exactly once on every failing create whose options could be read. A call from a
//! thread's exit cleanup is refused, never a panic at the boundary. The tests that make CUDA calls
//! hold `gpu_lock`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use ordo_cuda_capi::*;
use ordo_cuda_core::*;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

/// What a body sees and does: its calls, the cache to destroy, whether `user` was freed.
struct User {
    calls: AtomicUsize,
    freed: AtomicBool,
    /// Set by `user_free`; read by the body to see that `user` is still alive when it runs.
    freed_while_running: AtomicBool,
    cache: AtomicPtr<OrdoGraphCache>,
    /// For the two-thread case: the body tells the other thread it runs, and waits for its destroy.
    running: Mutex<Option<Sender<()>>>,
    destroyed: Mutex<Option<Receiver<()>>>,
}

impl User {
    fn new() -> User {
        User {
            calls: AtomicUsize::new(0),
            freed: AtomicBool::new(false),
            freed_while_running: AtomicBool::new(false),
            cache: AtomicPtr::new(null_mut()),
            running: Mutex::new(None),
            destroyed: Mutex::new(None),
        }
    }
}

unsafe extern "C" fn free_user(user: *mut c_void) {
    let u = unsafe { &*user.cast::<User>() };
    assert!(!u.freed.swap(true, Ordering::SeqCst), "user_free called twice");
}

/// Destroys its own cache on its first call, then enqueues nothing (an empty capture is a graph).
unsafe extern "C" fn destroying_body(_: sys::cudaStream_t, _: usize, user: *mut c_void) -> OrdoStatus {
    let u = unsafe { &*user.cast::<User>() };
    u.calls.fetch_add(1, Ordering::SeqCst);
    ordo_graph_cache_destroy(u.cache.load(Ordering::SeqCst));
    if u.freed.load(Ordering::SeqCst) {
        u.freed_while_running.store(true, Ordering::SeqCst);
    }
    ORDO_SUCCESS
}

/// Tells the other thread it runs, and returns only once that thread has destroyed the cache.
unsafe extern "C" fn waiting_body(_: sys::cudaStream_t, _: usize, user: *mut c_void) -> OrdoStatus {
    let u = unsafe { &*user.cast::<User>() };
    u.calls.fetch_add(1, Ordering::SeqCst);
    if let Some(tx) = u.running.lock().unwrap().take() {
        tx.send(()).unwrap();
        u.destroyed.lock().unwrap().take().unwrap().recv().unwrap();
    }
    if u.freed.load(Ordering::SeqCst) {
        u.freed_while_running.store(true, Ordering::SeqCst);
    }
    ORDO_SUCCESS
}

fn create(body: OrdoCaptureFn, user: &User) -> *mut OrdoGraphCache {
    let options = OrdoGraphCacheOptions {
        size: core::mem::size_of::<OrdoGraphCacheOptions>(),
        capture_mode: ORDO_CAPTURE_THREAD_LOCAL,
        warmup: 0,
        overflow_eager: 0,
        instantiate_flags: 0,
        user_free: Some(free_user),
    };
    let buckets = [1usize, 2, 4];
    let mut cache = null_mut();
    let user = (user as *const User).cast_mut().cast();
    let st = unsafe { ordo_graph_cache_create_with_options(buckets.as_ptr(), 3, &options, body, user, &mut cache) };
    assert_eq!(st, ORDO_SUCCESS);
    cache
}

/// Buckets {1, 2, 4}; the body destroys its own cache on its first call. Before the fix,
/// `ordo_graph_cache_capture_all` went on calling the body for the other buckets after the destroy
/// had returned (with `ordo.hpp`'s `graph_cache`, whose body the destroy deleted, a use after free).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_body_that_destroys_its_own_cache_is_not_called_again() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let stream = Stream::new().unwrap();
    for run in [false, true] {
        let user = User::new();
        let cache = create(Some(destroying_body), &user);
        user.cache.store(cache, Ordering::SeqCst);
        let st = if run {
            unsafe { ordo_graph_cache_run(cache, stream.as_raw(), 3, null_mut()) }
        } else {
            unsafe { ordo_graph_cache_capture_all(cache, stream.as_raw()) }
        };
        assert_eq!(st, ORDO_ERROR_INVALID_HANDLE, "the call that ran the body (run: {run})");
        assert_eq!(user.calls.load(Ordering::SeqCst), 1, "the body was called after its cache was destroyed");
        assert!(!user.freed_while_running.load(Ordering::SeqCst), "user_free ran while the body used `user`");
        assert!(user.freed.load(Ordering::SeqCst), "user_free once the call returned");
        assert_eq!(unsafe { ordo_graph_cache_run(cache, stream.as_raw(), 1, null_mut()) }, ORDO_ERROR_INVALID_HANDLE);
    }
    stream.synchronize().unwrap();
}

/// Thread A runs the cache, whose body waits until thread B has destroyed it. Before the fix, A's
/// call went on to launch the graph after the destroy had returned (the caller may free the
/// cache's buffers then) and returned success.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_cache_destroyed_by_another_thread_launches_nothing_more() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let stream = Stream::new().unwrap();
    let user = User::new();
    let (running_tx, running_rx) = channel();
    let (destroyed_tx, destroyed_rx) = channel();
    *user.running.lock().unwrap() = Some(running_tx);
    *user.destroyed.lock().unwrap() = Some(destroyed_rx);
    let cache = create(Some(waiting_body), &user) as usize;
    std::thread::scope(|scope| {
        let a = scope
            .spawn(|| unsafe { ordo_graph_cache_run(cache as *mut OrdoGraphCache, stream.as_raw(), 2, null_mut()) });
        running_rx.recv().unwrap();
        ordo_graph_cache_destroy(cache as *mut OrdoGraphCache);
        assert!(!user.freed.load(Ordering::SeqCst), "user_free ran while A's call was in flight");
        destroyed_tx.send(()).unwrap();
        assert_eq!(a.join().unwrap(), ORDO_ERROR_INVALID_HANDLE, "A's run after the destroy");
    });
    assert_eq!(user.calls.load(Ordering::SeqCst), 1);
    assert!(!user.freed_while_running.load(Ordering::SeqCst));
    assert!(user.freed.load(Ordering::SeqCst), "user_free once A's call returned");
    stream.synchronize().unwrap();
}

/// Without a GPU: a cache destroyed before any call frees `user` at the destroy (no call in
/// flight), once.
#[test]
fn user_free_runs_at_the_destroy_when_no_call_is_in_flight() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let user = User::new();
    let cache = create(Some(destroying_body), &user);
    assert!(!user.freed.load(Ordering::SeqCst));
    ordo_graph_cache_destroy(cache);
    assert!(user.freed.load(Ordering::SeqCst));
    ordo_graph_cache_destroy(cache);
    assert_eq!(user.calls.load(Ordering::SeqCst), 0);
}

// ---- Calls from thread-exit cleanup ----------------------------------------------------------------

unsafe extern "C" fn nop_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    ORDO_SUCCESS
}

static EXIT_STATUS: std::sync::Mutex<Vec<(&'static str, OrdoStatus)>> = std::sync::Mutex::new(Vec::new());

fn run_cache(cache: usize) -> OrdoStatus {
    unsafe { ordo_graph_cache_run(cache as *mut OrdoGraphCache, sys::cudaStreamLegacy(), 1, null_mut()) }
}

struct RunAtExit(usize);

impl Drop for RunAtExit {
    fn drop(&mut self) {
        EXIT_STATUS.lock().unwrap().push(("thread_local destructor", run_cache(self.0)));
    }
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<RunAtExit>> = const { std::cell::RefCell::new(None) };
}

type PthreadKey = u32;
unsafe extern "C" {
    fn pthread_key_create(key: *mut PthreadKey, dtor: Option<unsafe extern "C" fn(*mut c_void)>) -> i32;
    fn pthread_setspecific(key: PthreadKey, value: *const c_void) -> i32;
}

/// A C library's per-thread cleanup: a pthread key destructor (they run after every thread_local
/// destructor, glibc's `__call_tls_dtors` then `__nptl_deallocate_tsd`).
unsafe extern "C" fn key_dtor(cache: *mut c_void) {
    EXIT_STATUS.lock().unwrap().push(("pthread key destructor", run_cache(cache as usize)));
}

/// `ordo_graph_cache_run` called from thread-exit cleanup (a C++ `thread_local` destructor
/// registered before ordo's, a pthread key destructor) returns `ORDO_ERROR_NOT_SUPPORTED`, never
/// `ORDO_ERROR_PANIC`; the same call earlier in the thread's life does its work.
#[test]
fn a_run_from_thread_exit_cleanup_is_refused_not_a_panic() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let mut cache: *mut OrdoGraphCache = null_mut();
    let st = unsafe { ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut cache) };
    assert_eq!(st, ORDO_SUCCESS);
    let token = cache as usize;
    let during = std::thread::spawn(move || {
        // The key's destructor and a thread_local registered before ordo's own thread-locals.
        let mut key: PthreadKey = 0;
        assert_eq!(unsafe { pthread_key_create(&mut key, Some(key_dtor)) }, 0);
        assert_eq!(unsafe { pthread_setspecific(key, token as *const c_void) }, 0);
        AT_EXIT.with(|a| *a.borrow_mut() = Some(RunAtExit(token)));
        run_cache(token) // the thread's ordinary call: registers ordo's IN_CALL destructor
    })
    .join()
    .unwrap();
    ordo_graph_cache_destroy(cache);
    let at_exit = EXIT_STATUS.lock().unwrap().clone();
    println!("during the thread: {during}; at exit: {at_exit:?}");
    assert_ne!(during, ORDO_ERROR_PANIC);
    assert_eq!(at_exit.len(), 2, "both cleanups ran");
    for (what, st) in at_exit {
        assert_ne!(st, ORDO_ERROR_PANIC, "{what}: ordo_graph_cache_run panicked inside ordo");
        // ordo.h (THREADS): refused there, where its callback's re-entry cannot be guarded.
        assert_eq!(st, ORDO_ERROR_NOT_SUPPORTED, "{what}");
    }
}

// ---- The finalizer of `user` ----------------------------------------------------------------------

static FREED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_free(user: *mut c_void) {
    assert_eq!(user as usize, 0xf00d);
    FREED.fetch_add(1, Ordering::SeqCst);
}

/// The finalizer runs exactly once on every failing create after the options were read, never
/// when they could not be (NULL, misaligned, too small a size), and once at the last destroy of a
/// live cache (not at a wrong-kind destroy).
#[test]
fn user_free_runs_once_on_every_failure_after_the_options_were_read() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let good = OrdoGraphCacheOptions {
        size: core::mem::size_of::<OrdoGraphCacheOptions>(),
        capture_mode: ORDO_CAPTURE_GLOBAL,
        warmup: 0,
        overflow_eager: 0,
        instantiate_flags: 0,
        user_free: Some(count_free),
    };
    let user = 0xf00d as *mut c_void;
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let raw = [0u64; 8];
    let misaligned_usize = unsafe { raw.as_ptr().cast::<u8>().add(4).cast::<usize>() };
    let cases: Vec<(&str, *const usize, usize, OrdoGraphCacheOptions, OrdoCaptureFn, bool, usize)> = vec![
        ("null out", null(), 0, good, Some(nop_body), false, 1),
        ("null body", null(), 0, good, None, true, 1),
        ("null buckets", null(), 3, good, Some(nop_body), true, 1),
        ("misaligned buckets", misaligned_usize, 2, good, Some(nop_body), true, 1),
        ("count overflows", [1usize].as_ptr(), usize::MAX / 4, good, Some(nop_body), true, 1),
        ("decreasing buckets", [4usize, 2].as_ptr(), 2, good, Some(nop_body), true, 1),
        ("bad mode", null(), 0, OrdoGraphCacheOptions { capture_mode: 7, ..good }, Some(nop_body), true, 1),
        ("bad flags", null(), 0, OrdoGraphCacheOptions { instantiate_flags: 4, ..good }, Some(nop_body), true, 1),
        ("size too small", null(), 0, OrdoGraphCacheOptions { size: 8, ..good }, Some(nop_body), true, 0),
    ];
    for (what, buckets, n, options, body, out_ok, frees) in cases {
        let before = FREED.load(Ordering::SeqCst);
        let mut cache: *mut OrdoGraphCache = null_mut();
        let out = if out_ok { &mut cache as *mut _ } else { null_mut() };
        let st = unsafe { ordo_graph_cache_create_with_options(buckets, n, &options, body, user, out) };
        assert_eq!(st, ia, "{what}");
        assert!(cache.is_null(), "{what}");
        assert_eq!(FREED.load(Ordering::SeqCst) - before, frees, "{what}: finalizer calls");
    }
    // A live cache: once, at the last destroy, not at a wrong-kind destroy.
    let before = FREED.load(Ordering::SeqCst);
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(
        unsafe { ordo_graph_cache_create_with_options(null(), 0, &good, Some(nop_body), user, &mut cache) },
        ORDO_SUCCESS
    );
    ordo_timer_destroy(cache.cast());
    ordo_staging_ring_destroy(cache.cast());
    ordo_nccl_comm_destroy(cache.cast());
    assert_eq!(FREED.load(Ordering::SeqCst), before);
    ordo_graph_cache_destroy(cache);
    ordo_graph_cache_destroy(cache);
    assert_eq!(FREED.load(Ordering::SeqCst), before + 1);
}
