//! A cache of graphs per shape bucket, as inference engines keep for decode: one graph for each
//! batch-size bucket, captured over fixed input and output buffers; at run time the real size is
//! rounded up to its bucket and that bucket's graph is replayed.
//!
//! As vLLM, SGLang and PyTorch do: [`capture_all`](GraphCache::capture_all) captures from the
//! largest bucket to the smallest (allocations the body makes reach their largest size first); an
//! optional warm-up run of the body before each capture ([`CacheOptions::warmup`]: lazy
//! initialisation, such as a library's workspace, happens outside the capture); the capture mode
//! is the caller's ([`CacheOptions::mode`]: thread-local by default, as PyTorch's graph capture
//! defaults to; global mode only with the other threads kept out, see
//! [`CaptureMode::Global`]); the size-to-bucket lookup is a table, one load, for buckets up to
//! [`TABLE_MAX`].
//!
//! Each graph is instantiated right after its capture and uploaded to the device only where
//! [`CacheOptions::upload`] asks; otherwise its first replay uploads it (as CUDA does for a graph
//! launched without `cudaGraphUpload`), and that first replay is made under the fence below, as
//! the upload would have been.
//!
//! Threads: a cache is one value, used by one thread at a time (`&mut self`); several caches run
//! on several threads at once, and with `std` one `SharedGraphCache` (`graph::shared`) is run by
//! several threads at once. Each cache instantiates, uploads (or replays a graph for the first
//! time) and destroys its graphs under a
//! [`capture_fence`](crate::graph::capture_fence) (with the `std` feature), so that this
//! capture-unsafe work never overlaps a global-mode capture ordo began on another thread: caches in
//! global mode on several threads are kept apart by the global-capture lock and those fences.
//!
//! Memory: what a body allocates on the capturing stream (`cudaMallocAsync`, a
//! [`DeviceBuffer`](crate::DeviceBuffer)) becomes allocation and free nodes of its bucket's graph,
//! served by CUDA's per-device graph memory pool. Graphs replayed in order on one stream share
//! its physical memory, so the buckets share one pool as vLLM's share PyTorch's graph pool: the
//! pool holds what the largest bucket needs, not the sum ([`Device::graph_mem_usage`](crate::Device::graph_mem_usage);
//! `ordo-bench`, group `graph`: BENCHMARKS.md, "Graph memory of a bucket cache").

use crate::error::{Error, Result, UsageKind};
use crate::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
use crate::stream::StreamRef;
use alloc::vec::Vec;

/// What [`GraphCache::run`] does with a size over the largest bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Return a usage error.
    Error,
    /// Run the body eagerly (not captured) for the real size.
    Eager,
}

/// How a [`GraphCache`] captures its buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheOptions {
    /// The capture mode (default [`CaptureMode::ThreadLocal`]: a hidden synchronise in the body
    /// makes the capture fail, cleanly, and other threads' calls are not the capture's business).
    /// [`CaptureMode::Global`] also refuses other threads' capture-unsafe calls, and asks the
    /// caller to keep them out (see [`GraphCache::with_options`]).
    pub mode: CaptureMode,
    /// Run the body once, eagerly (not captured), on the capture's stream before each capture:
    /// its work runs as an ordinary run of that bucket would (default false).
    pub warmup: bool,
    /// Flags for instantiating each bucket's graph (default none).
    pub instantiate: InstantiateFlags,
    /// Upload each graph to the device right after its instantiation (`cudaGraphUpload` on the
    /// capture's stream), so that its first replay does not pay for the upload (default false:
    /// as CUDA does when a graph is launched without one, the first replay uploads). Uploading
    /// added about half to a 7-bucket `capture_all` (`ordo-bench` group `decode`: BENCHMARKS.md,
    /// "The decode step after the one-block normalisation"). The C ABI's caches take the same
    /// default (`ordo_graph_cache_options.upload`, 0 unless set).
    pub upload: bool,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            mode: CaptureMode::ThreadLocal,
            warmup: false,
            instantiate: InstantiateFlags::empty(),
            upload: false,
        }
    }
}

/// A [`capture_fence`](crate::graph::capture_fence) where the lock exists (the `std` feature).
#[cfg(feature = "std")]
fn fence() -> crate::graph::CaptureFence {
    crate::graph::capture_fence()
}

#[cfg(not(feature = "std"))]
fn fence() {}

/// The largest bucket for which the size-to-bucket lookup is a table (one `u32` a size); larger
/// bucket lists are searched (a binary search over the buckets).
pub const TABLE_MAX: usize = 1 << 16;

/// The default buckets: 1, 2, 4, 8, ... 256.
pub fn default_buckets() -> Vec<usize> {
    (0..=8).map(|p| 1usize << p).collect()
}

/// The index of the smallest bucket that holds `n` in sorted `buckets`, or `None` when `n` is
/// larger than the largest. Zero rounds up to the first bucket.
#[inline]
pub fn bucket_index(buckets: &[usize], n: usize) -> Option<usize> {
    let i = buckets.partition_point(|&b| b < n);
    (i < buckets.len()).then_some(i)
}

/// A cache's buckets (strictly increasing, non-zero) and the size-to-bucket lookup.
pub(super) struct Buckets {
    sizes: Vec<usize>,
    /// `table[n]`: the index of `n`'s bucket, for `n` up to the largest bucket (when that is at
    /// most [`TABLE_MAX`]; empty otherwise).
    table: Vec<u32>,
}

impl Buckets {
    /// `sizes`, checked (non-empty, non-zero, strictly increasing; `call` names the refusal), with
    /// their table.
    pub(super) fn new(call: &'static str, sizes: Vec<usize>) -> Result<Buckets> {
        if sizes.is_empty() {
            return Err(Error::invalid(call, "no buckets"));
        }
        if sizes[0] == 0 || sizes.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(call, "buckets must be non-zero and strictly increasing"));
        }
        let largest = sizes[sizes.len() - 1];
        let mut table = Vec::new();
        if largest <= TABLE_MAX && u32::try_from(sizes.len()).is_ok() {
            table.try_reserve_exact(largest + 1).map_err(|_| Error::invalid(call, "no memory for the bucket table"))?;
            let mut i = 0;
            for n in 0..=largest {
                while sizes[i] < n {
                    i += 1;
                }
                table.push(i as u32);
            }
        }
        Ok(Buckets { sizes, table })
    }

    /// The buckets.
    #[inline]
    pub(super) fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The index of `n`'s bucket: a table load, or a binary search over large bucket lists.
    #[inline]
    pub(super) fn index(&self, n: usize) -> Option<usize> {
        if self.table.is_empty() {
            bucket_index(&self.sizes, n)
        } else {
            self.table.get(n).map(|&i| i as usize)
        }
    }

    /// The bucket `n` rounds up to, or `None` over the largest.
    pub(super) fn bucket_for(&self, n: usize) -> Option<usize> {
        self.index(n).map(|i| self.sizes[i])
    }
}

/// Bucket `bucket`'s executable graph: `body` run once eagerly on `stream` first where
/// [`CacheOptions::warmup`] asks, captured on `stream` in [`CacheOptions::mode`], then, under a
/// fence (capture-unsafe work, outside every global-mode capture ordo began), instantiated, the
/// graph destroyed, and the executable graph uploaded where [`CacheOptions::upload`] asks.
///
/// # Safety
/// The capture's contract, as [`GraphCache::with_options`] states it, for every replay of the
/// executable graph returned.
pub(super) unsafe fn capture_bucket(
    stream: StreamRef<'_>,
    bucket: usize,
    options: CacheOptions,
    body: &mut impl FnMut(StreamRef<'_>, usize) -> Result<()>,
) -> Result<GraphExec> {
    if options.warmup {
        body(stream, bucket)?;
    }
    // SAFETY: the caller's contract is this capture's.
    let graph = unsafe { capture(stream, options.mode, |s| body(s, bucket))? };
    let _fence = fence();
    let exec = graph.instantiate(options.instantiate)?;
    drop(graph);
    if options.upload {
        exec.upload(stream)?;
    }
    Ok(exec)
}

/// Graphs per bucket of `body`, which enqueues the work for a bucket size on the stream it is
/// given, over buffers it holds (sized for the largest bucket). Captures happen lazily on first use
/// of a bucket, or up front with [`capture_all`](Self::capture_all); [`run`](Self::run) replays
/// them. Making a cache is `unsafe` for that reason: see [`GraphCache::new`].
pub struct GraphCache<F> {
    buckets: Buckets,
    execs: Vec<Option<GraphExec>>,
    /// `fresh[i]`: bucket `i`'s graph is instantiated but neither uploaded nor replayed yet (its
    /// first replay uploads it, under a fence).
    fresh: Vec<bool>,
    body: F,
    overflow: Overflow,
    options: CacheOptions,
}

impl<F> GraphCache<F>
where
    F: FnMut(StreamRef<'_>, usize) -> Result<()>,
{
    /// A cache over `buckets` (strictly increasing, non-zero; a clear error otherwise) with the
    /// default [`CacheOptions`]: thread-local captures, no warm-up, no instantiate flags.
    ///
    /// # Safety
    /// As [`with_options`](Self::with_options).
    pub unsafe fn new(buckets: Vec<usize>, overflow: Overflow, body: F) -> Result<Self> {
        // SAFETY: the caller's contract, the same.
        unsafe { GraphCache::with_options(buckets, overflow, CacheOptions::default(), body) }
    }

    /// A cache over `buckets` (strictly increasing, non-zero; a clear error otherwise) that
    /// captures as `options` say.
    ///
    /// # Safety
    /// Every call of `body` made by [`run`](Self::run) or [`capture_all`](Self::capture_all) to
    /// capture a bucket is a [`capture`] whose contract the caller owes, for every later `run` of
    /// this cache (each replays the bucket's graph) until the cache is dropped: the memory, events
    /// and raw handles the captured work uses (the buffers `body` holds or points to) stay valid at
    /// every `run` and until the replay it enqueues has completed; and while `run` or
    /// `capture_all` captures on a stream, nothing else uses that stream and nothing but the
    /// cache ends the capture. Host functions and staging slots `body` enqueues are owned by the
    /// graphs (see [`capture`]). With [`CaptureMode::Relaxed`] the caller also vouches that no
    /// capture-unsafe call is made meanwhile (see [`CaptureMode`]). With [`CaptureMode::Global`],
    /// while `run` or `capture_all` captures (the first run of each bucket), no other thread of the
    /// process makes a capture-unsafe call except under a
    /// [`capture_fence`](crate::graph::capture_fence) (other graph caches' own work is fenced) and
    /// none begins a global-mode capture other than through ordo: the driver crashes the process
    /// otherwise (see [`CaptureMode::Global`]).
    pub unsafe fn with_options(
        buckets: Vec<usize>,
        overflow: Overflow,
        options: CacheOptions,
        body: F,
    ) -> Result<Self> {
        let buckets = Buckets::new("GraphCache::new", buckets)?;
        let execs = buckets.sizes().iter().map(|_| None).collect();
        let fresh = buckets.sizes().iter().map(|_| false).collect();
        Ok(GraphCache { buckets, execs, fresh, body, overflow, options })
    }

    /// The options the cache captures with.
    pub fn options(&self) -> CacheOptions {
        self.options
    }

    /// The buckets.
    pub fn buckets(&self) -> &[usize] {
        self.buckets.sizes()
    }

    /// The bucket `n` rounds up to, or `None` over the largest.
    pub fn bucket_for(&self, n: usize) -> Option<usize> {
        self.buckets.bucket_for(n)
    }

    /// How many buckets have a graph.
    pub fn captured(&self) -> usize {
        self.execs.iter().filter(|e| e.is_some()).count()
    }

    /// Captures and instantiates bucket `i`'s graph unless it has one.
    fn ensure(&mut self, i: usize, stream: StreamRef<'_>) -> Result<()> {
        if self.execs[i].is_none() {
            let bucket = self.buckets.sizes()[i];
            // SAFETY: the contract of `GraphCache::new` is this capture's, for every later `run`.
            let exec = unsafe { capture_bucket(stream, bucket, self.options, &mut self.body) }?;
            self.fresh[i] = !self.options.upload;
            self.execs[i] = Some(exec);
        }
        Ok(())
    }

    /// Captures and instantiates every bucket's graph now, on `stream`, from the largest bucket
    /// to the smallest.
    pub fn capture_all(&mut self, stream: StreamRef<'_>) -> Result<()> {
        for i in (0..self.buckets.sizes().len()).rev() {
            self.ensure(i, stream)?;
        }
        Ok(())
    }

    /// Runs the work for size `n` on `stream`: rounds `n` up to its bucket and replays that
    /// bucket's graph (capturing it first if needed). The caller copies the real inputs into the
    /// fixed buffers on `stream` before this call. Returns the bucket size used; over the largest
    /// bucket, the [`Overflow`] policy decides (an eager run returns `n`).
    pub fn run(&mut self, stream: StreamRef<'_>, n: usize) -> Result<usize> {
        match self.buckets.index(n) {
            Some(i) => {
                let bucket = self.buckets.sizes()[i];
                self.ensure(i, stream)?;
                let exec =
                    self.execs[i].as_ref().ok_or_else(|| crate::error::null_handle("cudaGraphInstantiateWithFlags"))?;
                // The first replay uploads the graph: capture-unsafe work, fenced as an upload at
                // instantiation is.
                let _fence = self.fresh[i].then(fence);
                exec.launch(stream)?;
                self.fresh[i] = false;
                Ok(bucket)
            }
            None => match self.overflow {
                Overflow::Error => Err(Error::usage(
                    UsageKind::InvalidArgument,
                    "GraphCache::run",
                    "size over the largest bucket (Overflow::Error)",
                )),
                Overflow::Eager => {
                    (self.body)(stream, n)?;
                    Ok(n)
                }
            },
        }
    }
}

impl<F> Drop for GraphCache<F> {
    /// Destroys the executable graphs under a fence (capture-unsafe work, kept out of every
    /// global-mode capture ordo began); the body is dropped after.
    fn drop(&mut self) {
        if self.execs.iter().any(Option::is_some) {
            let _fence = fence();
            self.execs.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache captures thread-local unless asked: two threads' global-mode captures at once crash
    /// the driver (CB-01), and a server runs a cache a thread.
    #[test]
    fn a_cache_captures_thread_local_unless_asked() {
        assert_eq!(CacheOptions::default().mode, CaptureMode::ThreadLocal);
    }

    /// A cache uploads no graph at capture unless asked: the first replay uploads it. Capturing
    /// seven decode buckets with uploads took 1.7 times the hand-written loop, without them 1.04
    /// times (`ordo-bench` group `decode`); the C ABI's default is this one (`ordo-cuda-capi`'s
    /// `c_options_convert_to_the_rust_defaults`).
    #[test]
    fn a_cache_uploads_at_first_replay_unless_asked() {
        assert!(!CacheOptions::default().upload);
    }
}
