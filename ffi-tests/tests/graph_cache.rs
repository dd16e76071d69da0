//! A C graph cache destroyed while its own calls run: from its body, and from another thread. Once
//! `ordo_graph_cache_destroy` has returned, no call of the cache launches a graph, and a call that
//! sees the cache closed calls the body no more (the call ends with `ORDO_ERROR_INVALID_HANDLE`);
//! `user_free` runs once the last call in flight has returned, never while a body still uses
//! `user`, and exactly once on every failing create whose options could be read. A call from a
//! thread's exit cleanup is refused, never a panic at the boundary. Caches made with `upload` on
//! and off both replay right, and the C default is the Rust API's (no upload at capture). The
//! tests that make CUDA calls hold `gpu_lock`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use ordo_cuda_capi::*;
use ordo_cuda_core::graph::cache::{CacheOptions, GraphCache, Overflow};
use ordo_cuda_core::memory::copy;
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
        upload: 0,
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
        upload: 0,
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

// ---- Uploads at capture ---------------------------------------------------------------------------

/// Bytes of the temporary each captured step allocates (an allocation node and a free node): CUDA
/// backs a graph's allocations with physical memory when the graph is uploaded (at its capture,
/// when asked) or else at its first launch, which the device's graph memory shows.
const TEMPORARY: usize = 64 << 20;
/// The caches' buckets; the buffer holds the largest.
const UPLOAD_BUCKETS: [usize; 3] = [1024, 4096, 16_384];
/// The sizes each cache runs.
const UPLOAD_SIZES: [usize; 4] = [16_384, 1, 3000, 4096];

/// The step of bucket `n`: a temporary allocated, set and freed on `s` (nodes of the graph), and
/// `x[i] += 1` over the first `n` elements.
///
/// # Safety
/// `x` holds `n` floats, valid at every replay of what is captured.
unsafe fn step(s: StreamRef<'_>, x: *mut f32, n: usize) -> Result<()> {
    let mut temporary = DeviceBuffer::<u8>::alloc_async(TEMPORARY, s)?;
    // SAFETY: the temporary's own stream.
    unsafe { copy::memset_async(temporary.as_mut_slice(), 1, s) }?;
    drop(temporary);
    // SAFETY: the caller's contract.
    unsafe { ordo_cuda_kernels::add_one(s, DeviceSliceMut::from_raw_parts(x, n)) }
}

/// `step` as a C body; `user` points to the buffer's address.
unsafe extern "C" fn step_body(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus {
    let x = unsafe { *user.cast::<*mut f32>() };
    let Some(s) = (unsafe { StreamRef::from_raw(stream) }) else { return ORDO_ERROR_INVALID_ARGUMENT };
    match unsafe { step(s, x, bucket) } {
        Ok(()) => ORDO_SUCCESS,
        Err(e) => e.cuda_code().map_or(ORDO_ERROR_LIBRARY, |c| c.0 as OrdoStatus),
    }
}

/// How a cache is made, for [`upload_case`].
#[derive(Debug, Clone, Copy)]
enum Made {
    /// `ordo_graph_cache_create` (no options).
    C,
    /// `ordo_graph_cache_create_with_options` with these options' `upload` (`None`: NULL options;
    /// `Some(None)`: options of the first layout's size, whose `upload` field, past it, says 1).
    COptions(Option<Option<i32>>),
    /// The Rust API's `GraphCache` with `CacheOptions::default()`.
    Rust,
}

/// Captures every bucket of a cache made as `made` on `s`, runs [`UPLOAD_SIZES`], checks the buffer
/// against the CPU, destroys the cache; returns the graph memory in use that the capture added
/// (bytes).
fn upload_case(made: Made, s: StreamRef<'_>) -> u64 {
    let device = Device::current().unwrap();
    s.synchronize().unwrap();
    device.trim_graph_mem().unwrap();
    let data: Vec<f32> = (0..UPLOAD_BUCKETS[2]).map(|i| (i % 251) as f32 * 0.5 - 62.25).collect();
    let mut x = DeviceBuffer::<f32>::alloc_async(UPLOAD_BUCKETS[2], s).unwrap();
    copy::h2d_blocking(x.as_mut_slice(), &data, s).unwrap();
    let mut xp = x.as_mut_ptr();
    let user = (&mut xp as *mut *mut f32).cast::<c_void>();
    let before = device.graph_mem_usage().unwrap().used;
    let added = match made {
        Made::Rust => {
            // SAFETY: `x` outlives the cache (dropped below after a synchronise); nothing else uses
            // `s` while it captures.
            let mut cache =
                unsafe { GraphCache::new(UPLOAD_BUCKETS.to_vec(), Overflow::Error, |cs, n| step(cs, xp, n)) }.unwrap();
            cache.capture_all(s).unwrap();
            s.synchronize().unwrap();
            let added = device.graph_mem_usage().unwrap().used.saturating_sub(before);
            for n in UPLOAD_SIZES {
                cache.run(s, n).unwrap();
            }
            s.synchronize().unwrap();
            drop(cache);
            added
        }
        Made::C | Made::COptions(_) => {
            let mut cache = null_mut();
            let st = match made {
                Made::COptions(upload) => {
                    let options = upload.map(|upload| OrdoGraphCacheOptions {
                        size: if upload.is_some() {
                            core::mem::size_of::<OrdoGraphCacheOptions>()
                        } else {
                            ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE
                        },
                        capture_mode: ORDO_CAPTURE_THREAD_LOCAL,
                        warmup: 0,
                        overflow_eager: 0,
                        instantiate_flags: 0,
                        user_free: None,
                        // Past the first layout's size: never read.
                        upload: upload.unwrap_or(1),
                    });
                    let p = options.as_ref().map_or(null(), |o| o as *const OrdoGraphCacheOptions);
                    unsafe {
                        ordo_graph_cache_create_with_options(
                            UPLOAD_BUCKETS.as_ptr(),
                            3,
                            p,
                            Some(step_body),
                            user,
                            &mut cache,
                        )
                    }
                }
                _ => unsafe {
                    ordo_graph_cache_create(UPLOAD_BUCKETS.as_ptr(), 3, 0, Some(step_body), user, &mut cache)
                },
            };
            assert_eq!(st, ORDO_SUCCESS, "{made:?}");
            assert_eq!(unsafe { ordo_graph_cache_capture_all(cache, s.as_raw()) }, ORDO_SUCCESS, "{made:?}");
            s.synchronize().unwrap();
            let added = device.graph_mem_usage().unwrap().used.saturating_sub(before);
            for n in UPLOAD_SIZES {
                let mut bucket = 0;
                assert_eq!(
                    unsafe { ordo_graph_cache_run(cache, s.as_raw(), n, &mut bucket) },
                    ORDO_SUCCESS,
                    "{made:?}"
                );
                assert!(bucket >= n, "{made:?}");
            }
            s.synchronize().unwrap();
            ordo_graph_cache_destroy(cache);
            added
        }
    };
    let mut got = vec![0f32; UPLOAD_BUCKETS[2]];
    copy::d2h_blocking(&mut got, x.as_slice(), s).unwrap();
    let want: Vec<f32> = data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let bucket_of = |n: usize| UPLOAD_BUCKETS[UPLOAD_BUCKETS.partition_point(|&b| b < n)];
            UPLOAD_SIZES.iter().filter(|&&n| i < bucket_of(n)).fold(v, |v, _| v + 1.0)
        })
        .collect();
    assert!(got == want, "{made:?}: the replays against the CPU");
    drop(x);
    s.synchronize().unwrap();
    device.trim_graph_mem().unwrap();
    added
}

/// C caches made with `upload` 1 and 0 (and with the first layout's size, NULL options, and no
/// options) replay right; with `upload` 1 their capture backs the graphs' temporaries (graph
/// memory in use grows by at least one temporary); without it, the capture does what the Rust
/// API's default cache's does. Before the shared default, the C caches always uploaded at capture,
/// so their capture added the temporary where the Rust cache's did not.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_c_caches_upload_as_asked_and_default_as_the_rust_api() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    assert!(!CacheOptions::default().upload);
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let rust = upload_case(Made::Rust, s);
    let uploaded = upload_case(Made::COptions(Some(Some(1))), s);
    let cases = [
        ("ordo_graph_cache_create", upload_case(Made::C, s)),
        ("NULL options", upload_case(Made::COptions(None), s)),
        ("upload 0", upload_case(Made::COptions(Some(Some(0))), s)),
        ("the first layout", upload_case(Made::COptions(Some(None)), s)),
    ];
    println!(
        "graph memory a capture of every bucket added: Rust default {rust} B, C upload 1 {uploaded} B, C {cases:?}"
    );
    assert!(uploaded >= TEMPORARY as u64, "upload 1: the capture uploaded no graph ({uploaded} B)");
    let rust_uploads = rust >= TEMPORARY as u64;
    for (what, added) in cases {
        assert_eq!(added >= TEMPORARY as u64, rust_uploads, "{what}: {added} B against the Rust default's {rust} B");
    }
}
