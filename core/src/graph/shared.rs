//! [`SharedGraphCache`]: the graph bucket cache of [`cache`](super::cache) that several threads
//! run at once, through `&self`. The C ABI's graph caches (`ordo_graph_cache_*`) are this type
//! behind a handle.
//!
//! # No lock across the body
//! The cache's table of graphs is locked to look a bucket up, to install a graph and to launch one
//! (a graph is launched by one thread at a time: CUDA does not make graph objects thread-safe),
//! never while the body runs. A bucket not yet captured is captured by the calling thread with the
//! lock released; two threads that find the same bucket empty at once each capture it, the first
//! graph installed is kept, and the other is destroyed without ever being launched. So no thread
//! ever waits for another thread's body, and nothing can deadlock, whatever the bodies do (block
//! on other threads, run other caches). The price: the body may run on several threads at once.
//!
//! A body that runs its own cache on its own thread would recurse (each run calling the body
//! again): where the cache would call the body inside the body, the call fails instead.
//!
//! # Closed during a call
//! [`close`](SharedGraphCache::close) may run while other calls of the cache run, on other threads
//! or from the cache's own body. It marks the cache closed under the table's lock, and every call
//! looks at the mark before each body call and each launch: a call that finds it ends with the
//! error [`is_closed_error`] tells apart, and calls the body no more. No launch begins after
//! `close` has returned (launches and the mark share the lock). A body call is not under the lock,
//! so one that looked at the mark just before the close, or was already under way, runs to its
//! end after the close has returned, and what it enqueues eagerly (a warm-up, an overflow run)
//! runs.
//!
//! # Contexts
//! Each graph remembers the context it was made in ([`InContext`]). Once a `cudaDeviceReset` has
//! destroyed the context of any of them, [`run`](SharedGraphCache::run) and
//! [`capture_all`](SharedGraphCache::capture_all) fail with `cudaErrorContextIsDestroyed`
//! ([`ContextGone`]) without touching CUDA's dangling handles, and dropping the cache forgets them.
//!
//! # Uploads and fences
//! As [`GraphCache`](super::GraphCache) does, the cache instantiates, uploads and destroys its
//! graphs under a [`capture_fence`], and a graph not uploaded at its capture
//! ([`CacheOptions::upload`]) is uploaded by its first replay, under a fence too. That fence is
//! taken before the table's lock: taken under it, it could wait for another thread's global-mode
//! capture whose body waits for the lock. Later replays take no fence.

use super::cache::{capture_bucket, Buckets, CacheOptions, Overflow};
use super::{capture_fence, CaptureStatus, GraphExec};
use crate::context::ContextTag;
use crate::error::{Error, Result, UsageKind};
use crate::in_context::{ContextGone, InContext};
use crate::stream::StreamRef;
use crate::sync::{get_mut, lock};
use core::cell::RefCell;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::vec::Vec;

/// A graph per bucket of `body`, as [`GraphCache`](super::GraphCache) keeps them, for several
/// threads at once: every method takes `&self`, and the cache is `Send` and `Sync` where `body`
/// is. What it adds to the single-threaded cache is the policy above (module docs): no lock across
/// the body, the first graph installed wins, [`close`](Self::close), contexts checked before CUDA
/// is touched, and a run on a capturing stream enqueues the body's work into that capture.
///
/// ```no_run
/// use ordo_cuda_core::graph::{Overflow, SharedGraphCache};
/// use ordo_cuda_core::memory::copy;
/// use ordo_cuda_core::{DeviceSliceMut, Result, SharedStreamBuffer, Stream, StreamRef};
/// use std::sync::Arc;
///
/// fn main() -> Result<()> {
///     let owner = Arc::new(Stream::new()?);
///     let x = SharedStreamBuffer::<f32>::zeroed_async(256, &owner)?;
///     owner.synchronize()?;
///     // The work for a bucket of `n` elements (your kernels, in practice).
///     let body = |s: StreamRef<'_>, n: usize| -> Result<()> {
///         // SAFETY: the first `n` of the 256 elements of `x` (`n` is a bucket), which outlives the
///         // cache (the body borrows it).
///         unsafe { copy::memset_async(DeviceSliceMut::from_raw_parts(x.as_ptr().cast_mut(), n), 0, s) }
///     };
///     // SAFETY: `x` outlives every replay (the cache borrows it through `body`, and each thread
///     // synchronises its stream); each stream is used by one thread, and only by the cache while
///     // it captures.
///     let cache = unsafe { SharedGraphCache::new(vec![1, 8, 64, 256], Overflow::Error, body)? };
///     std::thread::scope(|scope| {
///         for n in [3, 100, 256] {
///             let cache = &cache;
///             scope.spawn(move || -> Result<()> {
///                 let stream = Stream::new()?;
///                 cache.run(stream.as_stream(), n)?; // captured at first use, then replayed
///                 stream.synchronize()
///             });
///         }
///     });
///     Ok(())
/// }
/// ```
pub struct SharedGraphCache<F> {
    buckets: Buckets,
    /// Locked to look a bucket up, install or launch its graph, and to close the cache; never
    /// across the body.
    table: Mutex<Table>,
    /// `replayed[i]`: bucket `i`'s graph has been launched (so uploaded). Set under the table's
    /// lock after a launch; read without it, to take the fence of a first replay before the lock.
    replayed: Vec<AtomicBool>,
    /// Set under the table's lock by [`close`](Self::close).
    closed: AtomicBool,
    body: F,
    overflow: Overflow,
    options: CacheOptions,
}

/// The cache's graphs, and the contexts they were made in.
struct Table {
    graphs: Vec<Option<InContext<FencedExec>>>,
    /// The distinct contexts of `graphs` (usually one).
    contexts: Vec<ContextTag>,
}

/// An executable graph destroyed under a [`capture_fence`] (capture-unsafe work, kept out of
/// every global-mode capture ordo began).
struct FencedExec(ManuallyDrop<GraphExec>);

impl Drop for FencedExec {
    fn drop(&mut self) {
        let _fence = capture_fence();
        // SAFETY: dropped once, here.
        unsafe { ManuallyDrop::drop(&mut self.0) };
    }
}

/// The words of [`closed`].
const CLOSED: &str = "the cache was closed during this call: its body is not called again, nothing more is launched";

/// The error of a call that found its cache closed.
fn closed() -> Error {
    Error::usage_static(UsageKind::InvalidArgument, "SharedGraphCache", CLOSED)
}

/// Whether `e` is the error of a call that found its [`SharedGraphCache`] closed
/// ([`SharedGraphCache::close`]) rather than a failure of CUDA or of the body.
pub fn is_closed_error(e: &Error) -> bool {
    *e == closed()
}

std::thread_local! {
    /// The caches whose body runs on this thread (by address), to refuse a body call inside
    /// the same cache's body.
    static IN_BODY: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// A body call of one cache, marked as running on the calling thread until dropped.
struct InBody(Option<usize>);

impl InBody {
    /// Marks the cache at `key` as running its body here, or refuses a call inside that body. In
    /// the thread's exit cleanup, where the mark is gone, nothing is marked.
    fn enter(key: usize) -> Result<InBody> {
        let entered = IN_BODY.try_with(|held| {
            let mut held = held.borrow_mut();
            if held.contains(&key) {
                return false;
            }
            held.push(key);
            true
        });
        match entered {
            Ok(false) => Err(Error::invalid(
                "SharedGraphCache::run",
                "the cache's body ran the same cache on its own thread, which would call the body again without end",
            )),
            Ok(true) => Ok(InBody(Some(key))),
            Err(_) => Ok(InBody(None)),
        }
    }
}

impl Drop for InBody {
    fn drop(&mut self) {
        if let Some(key) = self.0 {
            let _ = IN_BODY.try_with(|held| {
                let mut held = held.borrow_mut();
                if let Some(i) = held.iter().rposition(|&k| k == key) {
                    held.swap_remove(i);
                }
            });
        }
    }
}

/// Whether `s` is capturing (or holds an invalidated capture not yet ended), asked the one way
/// that is legal during a capture.
fn capturing(s: StreamRef<'_>) -> Result<bool> {
    Ok(!matches!(s.capture_status()?, CaptureStatus::None))
}

impl<F> SharedGraphCache<F>
where
    F: Fn(StreamRef<'_>, usize) -> Result<()>,
{
    /// A cache over `buckets` (strictly increasing, non-zero; a clear error otherwise) with the
    /// default [`CacheOptions`]: thread-local captures, no warm-up, no instantiate flags, no upload
    /// at capture.
    ///
    /// # Safety
    /// As [`with_options`](Self::with_options).
    pub unsafe fn new(buckets: Vec<usize>, overflow: Overflow, body: F) -> Result<Self> {
        // SAFETY: the caller's contract, the same.
        unsafe { SharedGraphCache::with_options(buckets, overflow, CacheOptions::default(), body) }
    }

    /// A cache over `buckets` (strictly increasing, non-zero; a clear error otherwise) that
    /// captures as `options` say.
    ///
    /// # Safety
    /// The contract of [`GraphCache::with_options`](super::GraphCache::with_options), for every
    /// capture, on whichever thread makes it, and every later replay until the cache is dropped:
    /// - the memory, events and raw handles the captured work uses stay valid at every
    ///   [`run`](Self::run) and until the replay it enqueues has completed;
    /// - while a call captures on a stream, nothing else uses that stream and nothing but the
    ///   cache ends the capture;
    /// - with [`CaptureMode::Relaxed`](super::CaptureMode::Relaxed), no capture-unsafe call is
    ///   made meanwhile; with [`CaptureMode::Global`](super::CaptureMode::Global), no other thread
    ///   makes a capture-unsafe call except under a [`capture_fence`], and none begins a
    ///   global-mode capture other than through ordo.
    ///
    /// The body may run on several threads at once, each on the stream of its own call (two
    /// threads that find a bucket empty both capture it): what it enqueues eagerly (a warm-up, an
    /// overflow run) on two streams at once must be right for the device too.
    pub unsafe fn with_options(
        buckets: Vec<usize>,
        overflow: Overflow,
        options: CacheOptions,
        body: F,
    ) -> Result<Self> {
        let buckets = Buckets::new("SharedGraphCache::new", buckets)?;
        let n = buckets.sizes().len();
        Ok(SharedGraphCache {
            table: Mutex::new(Table { graphs: (0..n).map(|_| None).collect(), contexts: Vec::new() }),
            replayed: (0..n).map(|_| AtomicBool::new(false)).collect(),
            buckets,
            closed: AtomicBool::new(false),
            body,
            overflow,
            options,
        })
    }

    /// Captures every bucket's graph now, on `stream`, from the largest bucket to the smallest
    /// (buckets already captured are kept). A usage error while `stream` captures (a capture
    /// cannot begin on a capturing stream).
    pub fn capture_all(&self, stream: StreamRef<'_>) -> Result<()> {
        if capturing(stream)? {
            return Err(Error::invalid(
                "SharedGraphCache::capture_all",
                "the stream is capturing: a capture cannot begin on it",
            ));
        }
        self.check()?;
        for i in (0..self.buckets.sizes().len()).rev() {
            self.ensure(i, stream)?;
        }
        Ok(())
    }

    /// Runs the work for size `n` on `stream`: rounds `n` up to its bucket (0 to the first) and
    /// replays that bucket's graph, capturing it first if no thread has. Returns the bucket size
    /// used; over the largest bucket, the [`Overflow`] policy decides (an eager run returns `n`).
    /// While `stream` captures, the body's work for the bucket is enqueued straight into that
    /// capture instead (a graph launch would invalidate it).
    pub fn run(&self, stream: StreamRef<'_>, n: usize) -> Result<usize> {
        const CALL: &str = "SharedGraphCache::run";
        self.check()?;
        self.open()?;
        let index = self.buckets.index(n);
        let size = match index {
            Some(i) => self.buckets.sizes()[i],
            None if self.overflow == Overflow::Eager => n,
            None => {
                return Err(Error::invalid(CALL, "size over the largest bucket (Overflow::Error)"));
            }
        };
        match index {
            // Into the caller's capture, or an eager run of an overflow size: the body on `stream`,
            // no lock held.
            _ if capturing(stream)? => self.after_body(self.call_body(stream, size))?,
            None => self.after_body(self.call_body(stream, size))?,
            Some(i) => {
                self.ensure(i, stream)?;
                self.launch(i, stream)?;
            }
        }
        Ok(size)
    }

    /// The outcome of a step that called the body: [`closed`] when the cache was closed meanwhile
    /// (the body's own failure, if any, is the lesser news then).
    fn after_body<T>(&self, r: Result<T>) -> Result<T> {
        self.open()?;
        r
    }

    /// Calls the body for `size` on `s`, unless the cache is closed or this thread is inside its
    /// body already.
    fn call_body(&self, s: StreamRef<'_>, size: usize) -> Result<()> {
        self.open()?;
        let _in_body = InBody::enter(self as *const Self as usize)?;
        (self.body)(s, size)
    }

    /// Makes sure bucket `i` has a graph: captures it on `s` (the lock released while the body
    /// runs) unless one is installed; installs it unless another thread installed one meanwhile
    /// (ours is then destroyed, never launched).
    fn ensure(&self, i: usize, s: StreamRef<'_>) -> Result<()> {
        self.open()?;
        if self.table().graphs[i].is_some() {
            return Ok(());
        }
        let device = s.device_or_current()?;
        // SAFETY: the contract of `with_options`, this capture's for every later replay.
        let captured = unsafe {
            capture_bucket(s, self.buckets.sizes()[i], self.options, &mut |s: StreamRef<'_>, n: usize| {
                self.call_body(s, n)
            })
        }
        .map(|exec| FencedExec(ManuallyDrop::new(exec)));
        let graph = self.after_body(captured)?;
        let graph = InContext::made_in(ContextTag::of(device)?, graph);
        let spare = {
            let mut table = self.table();
            if table.graphs[i].is_some() {
                Some(graph)
            } else {
                if !table.contexts.contains(&graph.context()) {
                    table.contexts.push(graph.context());
                }
                table.graphs[i] = Some(graph);
                None
            }
        };
        drop(spare); // outside the lock
        Ok(())
    }

    /// Launches bucket `i`'s graph (installed) on `s`, under the lock, unless the cache is closed;
    /// a first replay under a fence taken before the lock (module docs).
    fn launch(&self, i: usize, s: StreamRef<'_>) -> Result<()> {
        let first = !self.options.upload && !self.replayed[i].load(Ordering::Acquire);
        let _fence = first.then(capture_fence);
        let table = self.table();
        self.open()?;
        let graph =
            table.graphs[i].as_ref().ok_or_else(|| Error::invalid("SharedGraphCache::run", "bucket not captured"))?;
        graph.get()?.0.launch(s)?;
        if first {
            self.replayed[i].store(true, Ordering::Release);
        }
        Ok(())
    }
}

impl<F> SharedGraphCache<F> {
    /// The buckets.
    pub fn buckets(&self) -> &[usize] {
        self.buckets.sizes()
    }

    /// The bucket `n` rounds up to, or `None` over the largest.
    pub fn bucket_for(&self, n: usize) -> Option<usize> {
        self.buckets.bucket_for(n)
    }

    /// The options the cache captures with.
    pub fn options(&self) -> CacheOptions {
        self.options
    }

    /// What [`run`](Self::run) does with a size over the largest bucket.
    pub fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// How many buckets have a graph.
    pub fn captured(&self) -> usize {
        self.table().graphs.iter().filter(|g| g.is_some()).count()
    }

    /// Closes the cache: calls running now call the body no more and launch nothing more (a body
    /// call under way runs to its end), and later calls fail ([`is_closed_error`]). Under the
    /// table's lock, so that no launch is under way when this returns.
    pub fn close(&self) {
        let table = self.table();
        self.closed.store(true, Ordering::Release);
        drop(table);
    }

    /// Whether [`close`](Self::close) has closed the cache.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `cudaErrorContextIsDestroyed` ([`ContextGone`]) once the context of any of the cache's
    /// graphs is gone (a `cudaDeviceReset`): the cache is then never used again.
    pub fn check(&self) -> Result<()> {
        if self.table().contexts.iter().all(ContextTag::alive) {
            Ok(())
        } else {
            Err(ContextGone.into())
        }
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.table)
    }

    /// Refuses to go on once the cache is closed.
    fn open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(closed());
        }
        Ok(())
    }
}

impl<F> Drop for SharedGraphCache<F> {
    /// Destroys the executable graphs under one fence (each would take its own); the body is
    /// dropped after.
    fn drop(&mut self) {
        let table = get_mut(&mut self.table);
        if table.graphs.iter().any(Option::is_some) {
            let _fence = capture_fence();
            table.graphs.clear();
        }
    }
}

impl<F> core::fmt::Debug for SharedGraphCache<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedGraphCache")
            .field("buckets", &self.buckets.sizes())
            .field("overflow", &self.overflow)
            .field("options", &self.options)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    type Body = fn(StreamRef<'_>, usize) -> Result<()>;

    fn nop(_: StreamRef<'_>, _: usize) -> Result<()> {
        Ok(())
    }

    fn cache(buckets: Vec<usize>, overflow: Overflow) -> Result<SharedGraphCache<Body>> {
        // SAFETY: nothing is captured by these tests (no CUDA call before the refusals).
        unsafe { SharedGraphCache::new(buckets, overflow, nop as Body) }
    }

    #[test]
    fn a_shared_cache_is_send_and_sync_where_its_body_is() {
        fn shared<T: Send + Sync>(_: &T) {}
        let counter = std::sync::atomic::AtomicUsize::new(0);
        let body = |_: StreamRef<'_>, n: usize| -> Result<()> {
            counter.fetch_add(n, Ordering::Relaxed);
            Ok(())
        };
        // SAFETY: never run.
        let c = unsafe { SharedGraphCache::new(vec![1, 2], Overflow::Eager, body) }.unwrap();
        shared(&c);
    }

    /// The buckets are checked as `GraphCache`'s, and looked up the same way.
    #[test]
    fn buckets_are_checked_and_looked_up_as_the_single_threaded_caches() {
        for bad in [vec![], vec![0, 1], vec![2, 2], vec![4, 2]] {
            let e = cache(bad.clone(), Overflow::Error).unwrap_err();
            assert_eq!(e.call(), "SharedGraphCache::new", "{bad:?}");
        }
        for buckets in [vec![1, 2, 4, 8], vec![3, 100, 70_000]] {
            let c = cache(buckets.clone(), Overflow::Error).unwrap();
            assert_eq!(c.buckets(), &buckets[..]);
            for n in 0..=buckets[buckets.len() - 1] + 1 {
                let expect = super::super::cache::bucket_index(&buckets, n).map(|i| buckets[i]);
                assert_eq!(c.bucket_for(n), expect, "{n}");
            }
            assert_eq!((c.captured(), c.overflow(), c.options()), (0, Overflow::Error, CacheOptions::default()));
        }
    }

    /// Without CUDA: a size over the largest bucket is refused before the stream is touched; a
    /// closed cache refuses every run, with the error `is_closed_error` tells apart.
    #[test]
    fn refusals_before_cuda_is_reached() {
        // Never dereferenced: both refusals come first.
        // SAFETY: a non-null pseudo-handle, never used.
        let s = unsafe { StreamRef::from_raw(crate::sys::cudaStreamPerThread()) }.unwrap();
        let c = cache(vec![1, 2], Overflow::Error).unwrap();
        let e = c.run(s, 3).unwrap_err();
        assert_eq!(e.call(), "SharedGraphCache::run");
        assert!(!is_closed_error(&e));
        assert!(!c.is_closed());
        c.close();
        assert!(c.is_closed());
        let e = c.run(s, 1).unwrap_err();
        assert!(is_closed_error(&e), "{e}");
        assert!(!is_closed_error(&Error::invalid("SharedGraphCache", "another error")));
        assert_eq!(c.check(), Ok(()), "no graph: no context to look at");
    }

    /// A body call inside the same cache's body on the same thread is refused; another cache's is not.
    #[test]
    fn a_body_call_inside_the_same_cache_body_is_refused() {
        let outer = InBody::enter(1).unwrap();
        assert!(InBody::enter(1).is_err());
        let other = InBody::enter(2).unwrap();
        drop(other);
        drop(outer);
        let again = InBody::enter(1).unwrap();
        drop(again);
        assert!(IN_BODY.with(|h| h.borrow().is_empty()));
    }
}
