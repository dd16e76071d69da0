//! The graph bucket cache: the caller's capture callback captured per bucket with the Rust
//! [`GraphCache`], behind a handle that several threads may use at once.
//!
//! # No lock across the body
//! Each bucket's graph is a one-bucket [`GraphCache`] of its own, installed in the cache's table
//! once captured. The table's lock is held to look a bucket up, to install a graph, and to launch
//! one (a graph is launched by one thread at a time: CUDA does not make graph objects thread-safe),
//! never while the body runs. A bucket not yet captured is captured by the calling thread with
//! the lock released; two threads that find the same bucket empty at once each capture it, the
//! first graph installed is kept, and the other is destroyed without ever being launched. So no
//! thread ever waits for another thread's body, and nothing can deadlock, whatever the bodies do
//! (block on other threads, call other caches). The price: the body may run on several threads at
//! once, which the header says.
//!
//! A body that calls back into its own cache, on its thread, would recurse (each call calling the
//! body again): such a call gets `ORDO_ERROR_HANDLE_BUSY` (`handles::enter_call`).
//!
//! # Destroyed during a call
//! `ordo_graph_cache_destroy` may run while a call of the cache is running: on another thread, or
//! from the cache's own body. The destroy marks the cache closed (under the table's lock), and
//! every call looks at the mark before each body call and each launch: a call that finds it ends
//! with `ORDO_ERROR_INVALID_HANDLE` and calls the body no more. No launch begins after the destroy
//! has returned (launches and the mark share the lock). A body call is not under the lock (no
//! thread waits for another's body), so one that looked at the mark just before the destroy, or
//! was already under way, runs to its end after the destroy has returned, and what it enqueues
//! eagerly (a warm-up, an overflow run) runs: the caller frees the cache's buffers only once every
//! call of the cache running on another thread meanwhile has returned too (ordo.h says so). The
//! object itself, and `user` through the caller's `user_free`, go when the last call in flight has
//! returned.
//!
//! # Capture modes
//! The cache's own captures are thread-local unless the options ask otherwise. A global-mode
//! capture holds ordo's process-wide global-capture lock (see `ordo_cuda_core::graph::capture_fence`)
//! while the body runs, and the instantiation of every cache's graphs waits outside it.
//!
//! # Uploads
//! As in the Rust API ([`CacheOptions::upload`], default false), a graph is uploaded at its
//! capture only when the options ask (`upload`); otherwise its first replay uploads it. That first
//! replay is capture-unsafe work under a capture fence, taken before the table's lock (see
//! `CacheObject::launch`). Until this default was shared, the C caches always uploaded at capture,
//! which made capturing seven decode buckets 1.7 times the hand-written loop where the Rust cache's
//! default took 1.04 times (`ordo-bench` group `decode`, the two capture rows).

use super::check::{capturing, in_caller_mode, non_null, stream_device, stream_ref};
use super::context::{CheckContext as _, Context, InContext};
use super::handles::{self, enter_call, locked};
use super::status::{
    callback_error, guard, guard_void, invalid, refused, Failure, OrdoStatus, Outcome, ORDO_ERROR_INVALID_HANDLE,
    ORDO_ERROR_STREAM_CAPTURING, ORDO_SUCCESS,
};
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, Ordering};
use ordo_cuda_core::graph::cache::{bucket_index, default_buckets, CacheOptions, GraphCache, Overflow};
use ordo_cuda_core::graph::{capture_fence, CaptureMode, InstantiateFlags};
use ordo_cuda_core::{sys, StreamRef};
use std::sync::{Arc, Mutex, MutexGuard};

/// The C capture callback, not NULL.
type CaptureFnPtr = unsafe extern "C" fn(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus;

/// A capture callback: enqueue the work for `bucket` elements on `stream` (which is capturing).
pub type OrdoCaptureFn = Option<CaptureFnPtr>;

type CacheBody = Box<dyn FnMut(StreamRef<'_>, usize) -> ordo_cuda_core::Result<()> + Send>;

/// One bucket's captured graph, and the context it was made in (see [`super::context`]).
type BucketGraph = InContext<GraphCache<CacheBody>>;

/// The C handle type of a graph cache: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoGraphCache {
    _opaque: [u8; 0],
}

struct CacheObject {
    /// Strictly increasing, non-zero (checked by [`GraphCache::new`] at creation).
    buckets: Vec<usize>,
    /// Each bucket's graph once captured. Locked to look up, install or launch, and to close the
    /// cache; never across the body.
    graphs: Mutex<Vec<Option<BucketGraph>>>,
    /// `replayed[i]`: bucket `i`'s graph has been launched (so uploaded). Set under the `graphs`
    /// lock after a launch; read without it, to take the fence of a first replay before the lock.
    replayed: Vec<AtomicBool>,
    /// Set (under the `graphs` lock) by `ordo_graph_cache_destroy`: no body call and no launch
    /// begins once a call has seen it. Shared with the bodies the bucket graphs hold (which must not
    /// hold the object itself: a cycle).
    closed: Arc<AtomicBool>,
    body: CaptureFnPtr,
    /// The caller's `user` pointer, as an address: the C contract makes it usable from every
    /// thread that calls the cache, until the cache is destroyed.
    user: usize,
    overflow_eager: bool,
    /// How each bucket is captured (mode, warm-up, instantiate flags, upload).
    options: CacheOptions,
    /// Called with `user` once the cache is destroyed and no call uses it any more.
    user_free: OrdoUserFreeFn,
}

/// A finalizer for a callback's `user` pointer: called once, with `user`, when nothing of ordo's
/// will call the callback again.
pub type OrdoUserFreeFn = Option<unsafe extern "C" fn(user: *mut c_void)>;

impl Drop for CacheObject {
    fn drop(&mut self) {
        // The last handle of the cache is gone: no call runs the body any more (replays of
        // captured graphs never call it). Graphs go first, then the finalizer.
        drop(core::mem::take(&mut *self.graphs.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)));
        if let Some(free) = self.user_free {
            // SAFETY: the caller's finalizer with its own pointer, once (the C contract: it does
            // not unwind).
            unsafe { free(self.user as *mut c_void) };
        }
    }
}

/// Options of a graph cache (`ordo_graph_cache_options` in ordo.h). The caller sets `size` to
/// `sizeof(ordo_graph_cache_options)` of its header, so that later versions can add fields. All
/// zero but `size` is the defaults.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OrdoGraphCacheOptions {
    /// `sizeof(ordo_graph_cache_options)`, set by the caller.
    pub size: usize,
    /// The capture mode of the cache's own captures: `ORDO_CAPTURE_THREAD_LOCAL` (0, the default),
    /// `ORDO_CAPTURE_GLOBAL` or `ORDO_CAPTURE_RELAXED`.
    pub capture_mode: c_int,
    /// Non-zero: run the body once, eagerly, before each capture.
    pub warmup: c_int,
    /// Non-zero: sizes over the largest bucket run the body eagerly instead of failing.
    pub overflow_eager: c_int,
    /// `cudaGraphInstantiateFlags` for each bucket's graph: `cudaGraphInstantiateFlagAutoFreeOnLaunch`
    /// and `cudaGraphInstantiateFlagUseNodePriority`, or 0.
    pub instantiate_flags: u64,
    /// Called exactly once with `user`: after the cache is destroyed and no call of it runs any
    /// more, or when the create fails (once `options` itself could be read); NULL for none.
    pub user_free: OrdoUserFreeFn,
    /// Non-zero: upload each graph to the device right after its instantiation
    /// (`cudaGraphUpload`, [`CacheOptions::upload`]); 0, the default as in the Rust API: its first
    /// replay uploads it. Not read when `size` ends before it (the first layout): 0 then.
    pub upload: c_int,
}

/// The size of the first layout of `ordo_graph_cache_options` (up to and including `user_free`),
/// which callers built against it still pass.
pub const ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE: usize = core::mem::offset_of!(OrdoGraphCacheOptions, upload);

impl OrdoGraphCacheOptions {
    /// All zero but `size`: the defaults, those of the Rust API's [`CacheOptions::default`].
    fn defaults(size: usize) -> OrdoGraphCacheOptions {
        OrdoGraphCacheOptions {
            size,
            capture_mode: ORDO_CAPTURE_THREAD_LOCAL,
            warmup: 0,
            overflow_eager: 0,
            instantiate_flags: 0,
            user_free: None,
            upload: 0,
        }
    }
}

/// The caller's options: `None` for NULL; a layout's size or more (a later header's), else
/// `ORDO_ERROR_INVALID_ARGUMENT`; the fields past a first-layout size read as 0, their defaults.
///
/// # Safety
/// `options` is NULL or points to `options->size` readable bytes.
unsafe fn read_cache_options(options: *const OrdoGraphCacheOptions) -> Outcome<Option<OrdoGraphCacheOptions>> {
    if options.is_null() {
        return Ok(None);
    }
    non_null(options, "options")?;
    // SAFETY: checked non-null and aligned; the caller owes `size` readable bytes, the size field
    // first.
    let size = unsafe { options.cast::<usize>().read() };
    let full = core::mem::size_of::<OrdoGraphCacheOptions>();
    // A size that ends inside a field would hand over half a pointer or flag.
    if size != ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE && size < full {
        return Err(invalid("options", "options->size is not sizeof(ordo_graph_cache_options) of a known layout"));
    }
    let mut copy = OrdoGraphCacheOptions::defaults(size);
    // SAFETY: `size` readable bytes (the C contract), of which this version's struct takes at
    // most its own; the bytes of a layout's fields, as the caller's header wrote them.
    unsafe {
        core::ptr::copy_nonoverlapping(
            options.cast::<u8>(),
            core::ptr::addr_of_mut!(copy).cast::<u8>(),
            size.min(full),
        );
    }
    Ok(Some(copy))
}

/// `capture_mode` of [`OrdoGraphCacheOptions`]: `cudaStreamCaptureModeThreadLocal`, the default
/// (0, so that zeroed options are the safe ones; not CUDA's numbering).
pub const ORDO_CAPTURE_THREAD_LOCAL: c_int = 0;
/// `cudaStreamCaptureModeGlobal`: the caller keeps the other threads out of the cache's captures
/// (ordo.h, CAPTURES).
pub const ORDO_CAPTURE_GLOBAL: c_int = 1;
/// `cudaStreamCaptureModeRelaxed`.
pub const ORDO_CAPTURE_RELAXED: c_int = 2;

/// The Rust options for C's (checked).
fn cache_options(o: &OrdoGraphCacheOptions) -> Outcome<(CacheOptions, bool, OrdoUserFreeFn)> {
    let mode = match o.capture_mode {
        ORDO_CAPTURE_THREAD_LOCAL => CaptureMode::ThreadLocal,
        ORDO_CAPTURE_GLOBAL => CaptureMode::Global,
        ORDO_CAPTURE_RELAXED => CaptureMode::Relaxed,
        _ => return Err(invalid("options.capture_mode", "unknown capture mode")),
    };
    let allowed = InstantiateFlags::AUTO_FREE_ON_LAUNCH | InstantiateFlags::USE_NODE_PRIORITY;
    let instantiate = InstantiateFlags::from_bits(o.instantiate_flags)
        .filter(|f| allowed.contains(*f))
        .ok_or_else(|| invalid("options.instantiate_flags", "flags other than AutoFreeOnLaunch and UseNodePriority"))?;
    let options = CacheOptions { mode, warmup: o.warmup != 0, instantiate, upload: o.upload != 0 };
    Ok((options, o.overflow_eager != 0, o.user_free))
}

/// The refusal of a call on a cache destroyed while the call ran.
fn destroyed() -> Failure {
    refused(
        ORDO_ERROR_INVALID_HANDLE,
        Some("cache"),
        "the cache was destroyed during this call: its body is not called again, nothing more is launched",
    )
}

impl CacheObject {
    fn graphs(&self) -> MutexGuard<'_, Vec<Option<BucketGraph>>> {
        locked(&self.graphs)
    }

    /// Whether `ordo_graph_cache_destroy` has closed the cache.
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Refuses to go on once the cache is closed.
    fn open(&self) -> Outcome {
        if self.closed() {
            return Err(destroyed());
        }
        Ok(())
    }

    /// Closes the cache: calls running now call the body no more and launch nothing more; under
    /// the table's lock, so that no launch is under way when this returns.
    fn close(&self) {
        let graphs = self.graphs();
        self.closed.store(true, Ordering::Release);
        drop(graphs);
    }

    /// `cudaErrorContextIsDestroyed` once the context of any of the cache's graphs is gone (a
    /// `cudaDeviceReset`): the cache is then never used again.
    fn check(&self) -> Outcome {
        let contexts: Vec<Context> = self.graphs().iter().flatten().map(InContext::context).collect();
        let mut checked: Vec<Context> = Vec::new();
        for c in contexts {
            if !checked.contains(&c) {
                c.check()?;
                checked.push(c);
            }
        }
        Ok(())
    }

    /// The body for `bucket`, as the Rust API calls it (a warm-up and a capture, or a capture):
    /// not called once the cache is closed.
    fn body(&self) -> CacheBody {
        let (body, user, closed) = (self.body, self.user, Arc::clone(&self.closed));
        Box::new(move |s: StreamRef<'_>, size: usize| call_body(&closed, body, s, size, user))
    }

    /// Calls the caller's body for `size` on `s`, unless the cache is closed.
    fn call_body(&self, s: StreamRef<'_>, size: usize) -> ordo_cuda_core::Result<()> {
        call_body(&self.closed, self.body, s, size, self.user)
    }

    /// The outcome of a body call: [`destroyed`] when the cache was closed meanwhile (the body's
    /// own failure, if any, is the lesser news then).
    fn after_body(&self, r: ordo_cuda_core::Result<()>) -> Outcome {
        self.open()?;
        Ok(r?)
    }

    /// Makes sure bucket `i` has a graph: captures it on `s` (the lock released while the body
    /// runs) unless one is installed; installs it unless another thread installed one meanwhile
    /// (ours is then destroyed, never launched).
    fn ensure(&self, i: usize, s: StreamRef<'_>) -> Outcome {
        self.open()?;
        if self.graphs()[i].is_some() {
            return Ok(());
        }
        let device = stream_device(s)?;
        let bucket = self.buckets[i];
        // SAFETY: the C contract of `ordo_graph_cache_create`, passed on: the memory the body's
        // captured work uses stays valid for every replay of this graph, until the cache (which
        // owns it) is destroyed; the cache ends its own capture; in global mode the caller keeps
        // the other threads out of the capture (ordo.h, CAPTURES).
        let mut graph = unsafe { GraphCache::with_options(vec![bucket], Overflow::Error, self.options, self.body()) }?;
        let captured = graph.capture_all(s);
        self.after_body(captured)?;
        let graph = InContext::made_in(Context::of(device)?, graph);
        let spare = {
            let mut graphs = self.graphs();
            match &graphs[i] {
                None => {
                    graphs[i] = Some(graph);
                    None
                }
                Some(_) => Some(graph),
            }
        };
        drop(spare); // outside the lock
        Ok(())
    }

    /// Launches bucket `i`'s graph (installed) on `s`, under the lock, unless the cache is closed.
    ///
    /// The first launch of a graph not uploaded at capture uploads it: capture-unsafe work, which
    /// `GraphCache::run` fences. That fence is taken here first, before the lock (the one inside
    /// `run` is then re-entrant): taken under the lock, it could wait for another thread's
    /// global-mode capture whose body waits for the lock. Later launches take no fence.
    fn launch(&self, i: usize, s: StreamRef<'_>) -> Outcome {
        let first = !self.options.upload && !self.replayed[i].load(Ordering::Acquire);
        let _fence = first.then(capture_fence);
        let mut graphs = self.graphs();
        self.open()?;
        let graph = graphs[i].as_mut().ok_or_else(|| invalid("n", "bucket not captured"))?;
        graph.context().check()?;
        // Captured: this replays, it never calls the body.
        graph.checked_mut().run(s, self.buckets[i])?;
        if first {
            self.replayed[i].store(true, Ordering::Release);
        }
        Ok(())
    }
}

/// Calls the caller's body for `size` on `s`, in the caller's capture mode, unless `closed` (then an
/// error the call turns into [`destroyed`]).
fn call_body(
    closed: &AtomicBool,
    body: CaptureFnPtr,
    s: StreamRef<'_>,
    size: usize,
    user: usize,
) -> ordo_cuda_core::Result<()> {
    if closed.load(Ordering::Acquire) {
        return Err(callback_error("ordo_graph_cache_destroy", ORDO_ERROR_INVALID_HANDLE));
    }
    // SAFETY: the caller's callback with its own user pointer (the C contract).
    let status = in_caller_mode(|| unsafe { body(s.as_raw(), size, user as *mut c_void) });
    if status == ORDO_SUCCESS {
        Ok(())
    } else {
        Err(callback_error("ordo_capture_fn", status))
    }
}

/// Creates a graph bucket cache over `buckets` (strictly increasing, non-zero; `n_buckets` 0 for
/// 1, 2, 4, ... 256). `body` captures the work for a bucket; `overflow_eager` runs sizes over the
/// largest bucket eagerly instead of failing. Captures are thread-local, without warm-up, and no
/// graph is uploaded at its capture (the Rust API's [`CacheOptions::default`]).
///
/// # Safety
/// The C contract: `buckets` points to `n_buckets` values when `n_buckets` is not 0; `out` is
/// writable; `body` does not unwind, and the memory its captured work uses stays valid for every
/// replay until the cache is destroyed; `user` stays valid as long.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_create(
    buckets: *const usize,
    n_buckets: usize,
    overflow_eager: c_int,
    body: OrdoCaptureFn,
    user: *mut c_void,
    out: *mut *mut OrdoGraphCache,
) -> OrdoStatus {
    guard("ordo_graph_cache_create", || {
        // SAFETY: the caller's contract, passed on.
        unsafe { create(buckets, n_buckets, (CacheOptions::default(), overflow_eager != 0, None), body, user, out) }
    })
}

/// As [`ordo_graph_cache_create`], with `options` (NULL for the defaults: thread-local captures,
/// no warm-up, no overflow, no instantiate flags, no upload at capture). A bad option, or a size
/// that is neither the first layout's nor at least this version's, is
/// `ORDO_ERROR_INVALID_ARGUMENT`.
///
/// # Safety
/// As [`ordo_graph_cache_create`]; a non-null `options` points to `options->size` readable bytes.
/// With `ORDO_CAPTURE_RELAXED`, the caller vouches that nothing capture-unsafe runs meanwhile; with
/// `ORDO_CAPTURE_GLOBAL`, that while the cache captures no other thread makes a capture-unsafe call
/// or begins a global-mode capture outside ordo (ordo.h, CAPTURES).
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_create_with_options(
    buckets: *const usize,
    n_buckets: usize,
    options: *const OrdoGraphCacheOptions,
    body: OrdoCaptureFn,
    user: *mut c_void,
    out: *mut *mut OrdoGraphCache,
) -> OrdoStatus {
    guard("ordo_graph_cache_create_with_options", || {
        // SAFETY: the caller's contract: NULL or `size` readable bytes.
        let options = match unsafe { read_cache_options(options) }? {
            None => (CacheOptions::default(), false, None),
            Some(o) => cache_options(&o).inspect_err(|_| {
                if let Some(free) = o.user_free {
                    // SAFETY: the caller's finalizer with its own pointer, once.
                    unsafe { free(user) };
                }
            })?,
        };
        // SAFETY: the caller's contract, passed on.
        unsafe { create(buckets, n_buckets, options, body, user, out) }
    })
}

/// The body of both creates.
///
/// # Safety
/// As [`ordo_graph_cache_create`].
unsafe fn create(
    buckets: *const usize,
    n_buckets: usize,
    (options, overflow_eager, user_free): (CacheOptions, bool, OrdoUserFreeFn),
    body: OrdoCaptureFn,
    user: *mut c_void,
    out: *mut *mut OrdoGraphCache,
) -> Outcome {
    // From here on the finalizer runs exactly once: by the cache's drop, or here on a failure.
    let fail = |f: super::status::Failure| {
        if let Some(free) = user_free {
            // SAFETY: the caller's finalizer with its own pointer, once.
            unsafe { free(user) };
        }
        f
    };
    non_null(out.cast_const(), "out").map_err(fail)?;
    let body = body.ok_or_else(|| invalid("body", "null capture callback")).map_err(fail)?;
    let list = if n_buckets == 0 {
        default_buckets()
    } else {
        non_null(buckets, "buckets").map_err(fail)?;
        super::check::byte_len::<usize>(n_buckets, "n_buckets").map_err(fail)?;
        // SAFETY: checked non-null, aligned, and a byte length that fits; the C contract promises
        // `n_buckets` readable values.
        unsafe { core::slice::from_raw_parts(buckets, n_buckets) }.to_vec()
    };
    // The Rust API's checks of the buckets (non-empty, non-zero, strictly increasing).
    let no_body = |_: StreamRef<'_>, _: usize| -> ordo_cuda_core::Result<()> { Ok(()) };
    // SAFETY: nothing is captured: this cache is dropped unused.
    let list =
        unsafe { GraphCache::new(list, Overflow::Error, no_body) }.map_err(|e| fail(e.into()))?.buckets().to_vec();
    let graphs = Mutex::new(list.iter().map(|_| None).collect());
    let closed = Arc::new(AtomicBool::new(false));
    let replayed = list.iter().map(|_| AtomicBool::new(false)).collect();
    let object = CacheObject {
        buckets: list,
        graphs,
        replayed,
        closed,
        body,
        user: user as usize,
        overflow_eager,
        options,
        user_free,
    };
    // A failed registration drops the object, which calls the finalizer.
    let handle = handles::register(object)?;
    // SAFETY: checked non-null and aligned; writable by the C contract.
    unsafe { out.write(handle) };
    Ok(())
}

/// Captures every bucket's graph now, on `stream` (buckets already captured are kept). Refused
/// with `ORDO_ERROR_STREAM_CAPTURING` while `stream` captures (a capture cannot begin on a
/// capturing stream).
///
/// # Safety
/// The C contract: `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_capture_all(
    cache: *mut OrdoGraphCache,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    guard("ordo_graph_cache_capture_all", || {
        let c = handles::get::<CacheObject, _>(cache)?;
        let s = stream_ref(stream)?;
        if capturing(s)? {
            return Err(Failure(ORDO_ERROR_STREAM_CAPTURING));
        }
        let _call = enter_call(cache)?;
        c.check()?;
        // Largest first, as the Rust API does; `ensure` stops once the cache is closed.
        for i in (0..c.buckets.len()).rev() {
            c.ensure(i, s)?;
        }
        Ok(())
    })
}

/// Runs size `n` on `stream`: replays the graph of the bucket `n` rounds up to (capturing it
/// first if needed); `n` 0 rounds up to the first bucket, as in the Rust API; the bucket used goes
/// to `bucket_out` (may be NULL). While `stream` captures, the body's work for the bucket is
/// enqueued straight into that capture instead (a graph launch would invalidate it).
///
/// # Safety
/// The C contract: `stream` is a live stream; `bucket_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_run(
    cache: *mut OrdoGraphCache,
    stream: sys::cudaStream_t,
    n: usize,
    bucket_out: *mut usize,
) -> OrdoStatus {
    guard("ordo_graph_cache_run", || {
        let c = handles::get::<CacheObject, _>(cache)?;
        let s = stream_ref(stream)?;
        if !bucket_out.is_null() {
            non_null(bucket_out.cast_const(), "bucket_out")?;
        }
        let _call = enter_call(cache)?;
        c.check()?;
        c.open()?;
        let index = bucket_index(&c.buckets, n);
        let size = match index {
            Some(i) => c.buckets[i],
            None if c.overflow_eager => n,
            None => return Err(invalid("n", "size over the largest bucket")),
        };
        match index {
            // Into the caller's capture (a graph launch would invalidate it), or an eager run of
            // an overflow size: the body on `stream`, no lock held.
            _ if capturing(s)? => c.after_body(c.call_body(s, size))?,
            None => c.after_body(c.call_body(s, size))?,
            Some(i) => {
                c.ensure(i, s)?;
                c.launch(i, s)?;
            }
        }
        if !bucket_out.is_null() {
            // SAFETY: checked non-null and aligned; writable by the C contract.
            unsafe { bucket_out.write(size) };
        }
        Ok(())
    })
}

/// Destroys a cache. NULL, destroyed and unknown handles, and handles of another kind, are
/// ignored. Calls of the cache still running (on another thread, or the one whose body destroys
/// its own cache) launch nothing more once this has returned, and call the body no more once they
/// see the cache closed (a body call under way, or begun by a call that looked just before the
/// destroy, runs to its end); they end with `ORDO_ERROR_INVALID_HANDLE`. The cache, and `user`
/// through `user_free`, are freed when the last of them has returned. Safe for any value: the
/// handle is only looked up, never dereferenced.
#[no_mangle]
pub extern "C" fn ordo_graph_cache_destroy(cache: *mut OrdoGraphCache) {
    guard_void("ordo_graph_cache_destroy", || {
        if let Some(c) = handles::remove::<CacheObject, _>(cache) {
            c.close();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::ORDO_ERROR_INVALID_ARGUMENT;

    unsafe extern "C" fn nop_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
        ORDO_SUCCESS
    }

    /// The options a cache made by `make` captures with (no CUDA call: nothing is captured).
    fn made_with(make: impl FnOnce(*mut *mut OrdoGraphCache) -> OrdoStatus) -> CacheOptions {
        let mut cache = core::ptr::null_mut();
        assert_eq!(make(&mut cache), ORDO_SUCCESS);
        let options = handles::get::<CacheObject, _>(cache).map(|c| c.options).expect("a live cache");
        ordo_graph_cache_destroy(cache);
        options
    }

    /// Both creates, with NULL options, zeroed options of this layout and of the first layout,
    /// capture as the Rust API's `CacheOptions::default()` does: no upload at capture among the
    /// rest. Before the fix the C caches always uploaded at capture.
    #[test]
    fn c_options_convert_to_the_rust_defaults() {
        let full = core::mem::size_of::<OrdoGraphCacheOptions>();
        assert_eq!(ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE, 40, "the first layout, as callers built against it pass");
        assert!(full > ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE);
        let rust = CacheOptions::default();
        assert!(!rust.upload, "the measured default: the first replay uploads");
        let zeroed = OrdoGraphCacheOptions::defaults(full);
        assert_eq!(cache_options(&zeroed).map(|o| o.0), Ok(rust), "zeroed options");
        // SAFETY: valid arguments; `out` is writable.
        let plain = made_with(|out| unsafe {
            ordo_graph_cache_create(core::ptr::null(), 0, 0, Some(nop_body), core::ptr::null_mut(), out)
        });
        assert_eq!(plain, rust, "ordo_graph_cache_create");
        let first_layout = OrdoGraphCacheOptions { upload: 1, ..OrdoGraphCacheOptions::defaults(40) };
        for (what, options) in [("NULL", None), ("zeroed", Some(zeroed)), ("first layout", Some(first_layout))] {
            let p = options.as_ref().map_or(core::ptr::null(), |o| o as *const OrdoGraphCacheOptions);
            // SAFETY: NULL or a whole struct; `out` is writable.
            let made = made_with(|out| unsafe {
                ordo_graph_cache_create_with_options(
                    core::ptr::null(),
                    0,
                    p,
                    Some(nop_body),
                    core::ptr::null_mut(),
                    out,
                )
            });
            assert_eq!(made, rust, "{what}");
        }
        let upload = OrdoGraphCacheOptions { upload: 1, ..zeroed };
        // SAFETY: a whole struct; `out` is writable.
        let made = made_with(|out| unsafe {
            ordo_graph_cache_create_with_options(
                core::ptr::null(),
                0,
                &upload,
                Some(nop_body),
                core::ptr::null_mut(),
                out,
            )
        });
        assert_eq!(made, CacheOptions { upload: true, ..rust }, "upload asked for");
    }

    /// A size of neither layout (one that ends inside a field) is refused, before anything is made.
    #[test]
    fn sizes_of_no_layout_are_refused() {
        let full = core::mem::size_of::<OrdoGraphCacheOptions>();
        for size in [0, 8, ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE - 1, ORDO_GRAPH_CACHE_OPTIONS_FIRST_SIZE + 4, full - 1] {
            let o = OrdoGraphCacheOptions::defaults(size);
            let mut cache = core::ptr::null_mut();
            // SAFETY: a whole struct; `cache` is writable.
            let st = unsafe {
                ordo_graph_cache_create_with_options(
                    core::ptr::null(),
                    0,
                    &o,
                    Some(nop_body),
                    core::ptr::null_mut(),
                    &mut cache,
                )
            };
            assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "size {size}");
            assert!(cache.is_null());
        }
        let larger = OrdoGraphCacheOptions::defaults(full + 64);
        // SAFETY: the bytes past this version's struct are never read.
        assert_eq!(
            unsafe { read_cache_options(&larger) }.map(|o| o.map(|o| o.upload)),
            Ok(Some(0)),
            "a later header's size"
        );
    }
}
