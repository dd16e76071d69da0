//! The graph bucket cache: the Rust [`GraphCache`] behind a handle, its body the caller's capture
//! callback. Calls on one cache are serialised by the cache's own lock (the body is never called
//! twice at once for one cache); different caches run in parallel.

use super::check::{capturing, in_caller_mode, non_null, stream_device, stream_ref};
use super::context::Context;
use super::handles::{self, lock_for_call};
use super::status::{callback_error, guard, guard_void, invalid, Failure, OrdoStatus, Outcome, ORDO_ERROR_STREAM_CAPTURING, ORDO_SUCCESS};
use core::ffi::{c_int, c_void};
use ordo_core::graph_cache::{default_buckets, GraphCache, Overflow};
use ordo_core::{sys, StreamRef};
use core::mem::ManuallyDrop;
use std::sync::Mutex;

/// The C capture callback, not NULL.
type CaptureFnPtr = unsafe extern "C" fn(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus;

/// A capture callback: enqueue the work for `bucket` elements on `stream` (which is capturing).
pub type OrdoCaptureFn = Option<CaptureFnPtr>;

type CacheBody = Box<dyn FnMut(StreamRef<'_>, usize) -> ordo_core::Result<()> + Send>;

/// The C handle type of a graph cache: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoGraphCache {
    _opaque: [u8; 0],
}

/// The cache and the context of its graphs (see [`super::context`]), set at its first capture.
struct CacheState {
    cache: ManuallyDrop<GraphCache<CacheBody>>,
    context: Option<Context>,
}

impl CacheState {
    /// `cudaErrorContextIsDestroyed` once the context of the cache's graphs is gone.
    fn check(&self) -> Outcome {
        self.context.map_or(Ok(()), |c| c.check())
    }

    /// Remembers the context of the graphs just made on `device`'s stream.
    fn note_context(&mut self, device: ordo_core::Device) -> Outcome {
        if self.context.is_none() && self.cache.captured() > 0 {
            self.context = Some(Context::of(device)?);
        }
        Ok(())
    }
}

impl Drop for CacheState {
    fn drop(&mut self) {
        // Graphs of a destroyed context are forgotten: CUDA freed them with it.
        if self.context.as_ref().map(Context::alive).unwrap_or(true) {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.cache) };
        }
    }
}

struct CacheObject {
    state: Mutex<CacheState>,
    body: CaptureFnPtr,
    /// The caller's `user` pointer, as an address: the C contract makes it usable from every
    /// thread that calls the cache, until the cache is destroyed.
    user: usize,
    overflow_eager: bool,
}

/// Calls the caller's body for `size` on `s`, in the caller's capture mode.
fn call_body(body: CaptureFnPtr, s: StreamRef<'_>, size: usize, user: usize) -> ordo_core::Result<()> {
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
/// largest bucket eagerly instead of failing.
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
    guard(|| {
        non_null(out.cast_const(), "null out")?;
        let body = body.ok_or_else(|| invalid("null capture callback"))?;
        let list = if n_buckets == 0 {
            default_buckets()
        } else {
            non_null(buckets, "null buckets with a non-zero count")?;
            super::check::byte_len::<usize>(n_buckets)?;
            // SAFETY: checked non-null, aligned, and a byte length that fits; the C contract
            // promises `n_buckets` readable values.
            unsafe { core::slice::from_raw_parts(buckets, n_buckets) }.to_vec()
        };
        let user = user as usize;
        let f: CacheBody = Box::new(move |s: StreamRef<'_>, bucket: usize| call_body(body, s, bucket, user));
        let overflow_eager = overflow_eager != 0;
        let overflow = if overflow_eager { Overflow::Eager } else { Overflow::Error };
        // SAFETY: the C contract passed on: the memory the body's captured work uses stays valid
        // for every replay of the cache's graphs, until the cache is destroyed.
        let cache = unsafe { GraphCache::new(list, overflow, f) }?;
        let state = CacheState { cache: ManuallyDrop::new(cache), context: None };
        let handle = handles::register(CacheObject { state: Mutex::new(state), body, user, overflow_eager })?;
        // SAFETY: checked non-null and aligned; writable by the C contract.
        unsafe { out.write(handle) };
        Ok(())
    })
}

/// Captures every bucket's graph now, on `stream`. Refused with `ORDO_ERROR_STREAM_CAPTURING`
/// while `stream` captures (a capture cannot begin on a capturing stream).
///
/// # Safety
/// The C contract: `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_capture_all(cache: *mut OrdoGraphCache, stream: sys::cudaStream_t) -> OrdoStatus {
    guard(|| {
        let c = handles::get::<CacheObject, _>(cache)?;
        let s = stream_ref(stream)?;
        if capturing(s)? {
            return Err(Failure(ORDO_ERROR_STREAM_CAPTURING));
        }
        let device = stream_device(s)?;
        let mut state = lock_for_call(cache, &c.state)?;
        state.check()?;
        let result = state.cache.capture_all(s);
        state.note_context(device)?;
        result?;
        Ok(())
    })
}

/// Runs size `n` on `stream`: replays the graph of the bucket `n` rounds up to (capturing it
/// first if needed); the bucket used goes to `bucket_out` (may be NULL). While `stream` captures,
/// the body's work for the bucket is enqueued straight into that capture instead (a graph launch
/// would invalidate it).
///
/// # Safety
/// The C contract: `stream` is a live stream; `bucket_out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_graph_cache_run(cache: *mut OrdoGraphCache, stream: sys::cudaStream_t, n: usize, bucket_out: *mut usize) -> OrdoStatus {
    guard(|| {
        let c = handles::get::<CacheObject, _>(cache)?;
        let s = stream_ref(stream)?;
        if !bucket_out.is_null() {
            non_null(bucket_out.cast_const(), "bucket_out")?;
        }
        let size = if capturing(s)? {
            let state = lock_for_call(cache, &c.state)?;
            state.check()?;
            let size = match state.cache.bucket_for(n) {
                Some(bucket) => bucket,
                None if c.overflow_eager => n,
                None => return Err(invalid("size over the largest bucket")),
            };
            call_body(c.body, s, size, c.user)?;
            size
        } else {
            let device = stream_device(s)?;
            let mut state = lock_for_call(cache, &c.state)?;
            state.check()?;
            let result = state.cache.run(s, n);
            state.note_context(device)?;
            result?
        };
        if !bucket_out.is_null() {
            // SAFETY: checked non-null and aligned; writable by the C contract.
            unsafe { bucket_out.write(size) };
        }
        Ok(())
    })
}

/// Destroys a cache. NULL, destroyed and unknown handles, and handles of another kind, are
/// ignored. A call still running on the cache (on another thread) finishes first: the cache is
/// freed when it returns. Safe for any value: the handle is only looked up, never dereferenced.
#[no_mangle]
pub extern "C" fn ordo_graph_cache_destroy(cache: *mut OrdoGraphCache) {
    guard_void(|| drop(handles::remove::<CacheObject, _>(cache)));
}
