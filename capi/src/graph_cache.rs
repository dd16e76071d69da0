//! The graph bucket cache through the C ABI: the Rust API's [`SharedGraphCache`] behind a handle,
//! over the caller's capture callback. Its policy (no lock across the body, the first graph
//! installed wins, a closed mark, contexts checked, a first replay fenced before the table's lock)
//! is the Rust type's (`ordo_cuda_core::graph::shared`); this file looks the handle up, checks and
//! converts the arguments and options, calls the callback (`c_body`) and turns errors into statuses.
//!
//! A body that calls back into its own cache, on its thread, would recurse (each call calling the
//! body again): such a call gets `ORDO_ERROR_HANDLE_BUSY` (`handles::enter_call`).
//!
//! # Destroyed during a call
//! `ordo_graph_cache_destroy` may run while a call of the cache is running: on another thread, or
//! from the cache's own body. It closes the cache ([`SharedGraphCache::close`]): a call that then
//! finds it closed ends with `ORDO_ERROR_INVALID_HANDLE` and calls the body no more, and no launch
//! begins after the destroy has returned. A body call under way runs to its end after the destroy
//! has returned, and what it enqueues eagerly (a warm-up, an overflow run) runs: the caller frees
//! the cache's buffers only once every call of the cache running on another thread meanwhile has
//! returned too (ordo.h says so). The object itself, and `user` through the caller's `user_free`,
//! go when the last call in flight has returned.
//!
//! # Capture modes
//! The cache's own captures are thread-local unless the options ask otherwise. A global-mode
//! capture holds ordo's process-wide global-capture lock (see `ordo_cuda_core::graph::capture_fence`)
//! while the body runs, and the instantiation of every cache's graphs waits outside it. The body
//! runs in the caller's own capture mode (`in_caller_mode`).
//!
//! # Uploads
//! As in the Rust API ([`CacheOptions::upload`], default false), a graph is uploaded at its
//! capture only when the options ask (`upload`); otherwise its first replay uploads it. Until this
//! default was shared, the C caches always uploaded at capture, which made capturing seven decode
//! buckets 1.7 times the hand-written loop where the Rust cache's default took 1.04 times
//! (`ordo-bench` group `decode`, the two capture rows).

use super::capture_mode::in_caller_mode;
use super::check::{capturing, non_null, stream_ref};
use super::handles::{self, enter_call};
use super::status::{
    callback_error, guard, guard_void, invalid, refused, Failure, OrdoStatus, Outcome, ORDO_ERROR_INVALID_HANDLE,
    ORDO_ERROR_STREAM_CAPTURING, ORDO_SUCCESS,
};
use core::ffi::{c_int, c_void};
use ordo_cuda_core::graph::cache::{default_buckets, CacheOptions, Overflow};
use ordo_cuda_core::graph::shared::{is_closed_error, SharedGraphCache};
use ordo_cuda_core::graph::{CaptureMode, InstantiateFlags};
use ordo_cuda_core::in_context::ContextGone;
use ordo_cuda_core::{sys, Error, StreamRef};

/// The C capture callback, not NULL.
type CaptureFnPtr = unsafe extern "C" fn(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus;

/// A capture callback: enqueue the work for `bucket` elements on `stream` (which is capturing).
pub type OrdoCaptureFn = Option<CaptureFnPtr>;

/// The body as the Rust cache calls it: the C callback ([`c_body`]).
type CacheBody = Box<dyn Fn(StreamRef<'_>, usize) -> ordo_cuda_core::Result<()> + Send + Sync>;

/// The C handle type of a graph cache: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoGraphCache {
    _opaque: [u8; 0],
}

struct CacheObject {
    /// Declared first, so dropped first: the graphs go before `user` is freed.
    cache: SharedGraphCache<CacheBody>,
    /// Calls the caller's finalizer once the cache is gone and no call uses it any more.
    _user_free: UserFree,
}

/// A finalizer for a callback's `user` pointer: called once, with `user`, when nothing of ordo's
/// will call the callback again.
pub type OrdoUserFreeFn = Option<unsafe extern "C" fn(user: *mut c_void)>;

/// The caller's finalizer and its `user` pointer (as an address: the C contract makes it usable
/// from every thread that calls the cache), called exactly once when dropped.
struct UserFree {
    free: OrdoUserFreeFn,
    user: usize,
}

impl Drop for UserFree {
    fn drop(&mut self) {
        if let Some(free) = self.free {
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

/// The status of the Rust cache's error: a closed cache is a destroyed handle ([`destroyed`]), a
/// destroyed context the refusal every handle gives; the rest as every export converts them.
fn failure(e: Error) -> Failure {
    if is_closed_error(&e) {
        destroyed()
    } else if e == Error::from(ContextGone) {
        ContextGone.into()
    } else {
        e.into()
    }
}

/// The caller's callback as the Rust cache's body: called with its own `user` pointer, in the
/// caller's capture mode; a status other than `ORDO_SUCCESS` is the body's error.
fn c_body(body: CaptureFnPtr, user: usize) -> CacheBody {
    Box::new(move |s: StreamRef<'_>, size: usize| {
        // SAFETY: the caller's callback with its own user pointer (the C contract).
        let status = in_caller_mode(|| unsafe { body(s.as_raw(), size, user as *mut c_void) });
        if status == ORDO_SUCCESS {
            Ok(())
        } else {
            Err(callback_error("ordo_capture_fn", status))
        }
    })
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
    // From here on the finalizer runs exactly once: when this drops, with the cache or on a failure.
    let user_free = UserFree { free: user_free, user: user as usize };
    non_null(out.cast_const(), "out")?;
    let body = body.ok_or_else(|| invalid("body", "null capture callback"))?;
    let list = if n_buckets == 0 {
        default_buckets()
    } else {
        non_null(buckets, "buckets")?;
        super::check::byte_len::<usize>(n_buckets, "n_buckets")?;
        // SAFETY: checked non-null, aligned, and a byte length that fits; the C contract promises
        // `n_buckets` readable values.
        unsafe { core::slice::from_raw_parts(buckets, n_buckets) }.to_vec()
    };
    let overflow = if overflow_eager { Overflow::Eager } else { Overflow::Error };
    // SAFETY: the C contract of `ordo_graph_cache_create`, passed on: the memory the body's
    // captured work uses stays valid for every replay, until the cache (which owns the graphs) is
    // destroyed; the cache ends its own captures; in global mode the caller keeps the other threads
    // out of the captures (ordo.h, CAPTURES). The buckets are checked here (non-empty, non-zero,
    // strictly increasing).
    let cache = unsafe { SharedGraphCache::with_options(list, overflow, options, c_body(body, user as usize)) }?;
    // A failed registration drops the object, which calls the finalizer.
    let handle = handles::register(CacheObject { cache, _user_free: user_free })?;
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
        c.cache.capture_all(s).map_err(failure)
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
        if c.cache.bucket_for(n).is_none() && c.cache.overflow() == Overflow::Error {
            return Err(invalid("n", "size over the largest bucket"));
        }
        let size = c.cache.run(s, n).map_err(failure)?;
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
            c.cache.close();
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
        let options = handles::get::<CacheObject, _>(cache).map(|c| c.cache.options()).expect("a live cache");
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
