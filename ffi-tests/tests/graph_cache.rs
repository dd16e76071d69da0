//! A C graph cache destroyed while its own calls run: from its body, and from another thread. Once
//! `ordo_graph_cache_destroy` has returned, no call of the cache launches a graph, and a call that
//! sees the cache closed calls the body no more (the call ends with `ORDO_ERROR_INVALID_HANDLE`);
//! `user_free` runs once the last call in flight has returned, never while a body still uses
//! `user`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::null_mut;
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
    let user = User::new();
    let cache = create(Some(destroying_body), &user);
    assert!(!user.freed.load(Ordering::SeqCst));
    ordo_graph_cache_destroy(cache);
    assert!(user.freed.load(Ordering::SeqCst));
    ordo_graph_cache_destroy(cache);
    assert_eq!(user.calls.load(Ordering::SeqCst), 0);
}
