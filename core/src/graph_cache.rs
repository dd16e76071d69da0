//! A cache of graphs per shape bucket, as inference engines keep for decode: one graph for each
//! batch-size bucket, captured over fixed input and output buffers; at run time the real size is
//! rounded up to its bucket and that bucket's graph is replayed.

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

/// Graphs per bucket of `body`, which enqueues the work for a bucket size on the stream it is
/// given, over buffers it holds (sized for the largest bucket). Captures happen lazily on first use
/// of a bucket, or up front with [`capture_all`](Self::capture_all); [`run`](Self::run) replays
/// them. Making a cache is `unsafe` for that reason: see [`GraphCache::new`].
pub struct GraphCache<F> {
    buckets: Vec<usize>,
    execs: Vec<Option<GraphExec>>,
    body: F,
    overflow: Overflow,
    mode: CaptureMode,
}

impl<F> GraphCache<F>
where
    F: FnMut(StreamRef<'_>, usize) -> Result<()>,
{
    /// A cache over `buckets` (strictly increasing, non-zero; a clear error otherwise). Captures use
    /// global mode, in which a hidden synchronise in `body` makes the capture fail (cleanly: the
    /// capture is ended and the error returned).
    ///
    /// # Safety
    /// Every call of `body` made by [`run`](Self::run) or [`capture_all`](Self::capture_all) to
    /// capture a bucket is a [`capture`] whose contract the caller owes, for every later `run` of
    /// this cache (each replays the bucket's graph) until the cache is dropped: the memory, events
    /// and raw handles the captured work uses (the buffers `body` holds or points to) stay valid at
    /// every `run` and until the replay it enqueues has completed; and while `run` or
    /// `capture_all` captures on a stream, nothing else uses that stream and nothing but the
    /// cache ends the capture. Host functions and staging slots `body` enqueues are owned by the
    /// graphs (see [`capture`]).
    pub unsafe fn new(buckets: Vec<usize>, overflow: Overflow, body: F) -> Result<Self> {
        const CALL: &str = "GraphCache::new";
        if buckets.is_empty() {
            return Err(Error::invalid(CALL, "no buckets"));
        }
        if buckets[0] == 0 || buckets.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(CALL, "buckets must be non-zero and strictly increasing"));
        }
        let execs = buckets.iter().map(|_| None).collect();
        Ok(GraphCache { buckets, execs, body, overflow, mode: CaptureMode::Global })
    }

    /// The buckets.
    pub fn buckets(&self) -> &[usize] {
        &self.buckets
    }

    /// The bucket `n` rounds up to, or `None` over the largest.
    pub fn bucket_for(&self, n: usize) -> Option<usize> {
        bucket_index(&self.buckets, n).map(|i| self.buckets[i])
    }

    /// How many buckets have a graph.
    pub fn captured(&self) -> usize {
        self.execs.iter().filter(|e| e.is_some()).count()
    }

    fn ensure(&mut self, i: usize, stream: StreamRef<'_>) -> Result<&GraphExec> {
        if self.execs[i].is_none() {
            let bucket = self.buckets[i];
            let body = &mut self.body;
            // SAFETY: the contract of `GraphCache::new` is this capture's, for every later `run`.
            let graph = unsafe { capture(stream, self.mode, |s| body(s, bucket))? };
            let exec = graph.instantiate(InstantiateFlags::empty())?;
            exec.upload(stream)?;
            self.execs[i] = Some(exec);
        }
        self.execs[i].as_ref().ok_or_else(|| crate::error::null_handle("cudaGraphInstantiateWithFlags"))
    }

    /// Captures and instantiates every bucket's graph now, on `stream`.
    pub fn capture_all(&mut self, stream: StreamRef<'_>) -> Result<()> {
        for i in 0..self.buckets.len() {
            self.ensure(i, stream)?;
        }
        Ok(())
    }

    /// Runs the work for size `n` on `stream`: rounds `n` up to its bucket and replays that
    /// bucket's graph (capturing it first if needed). The caller copies the real inputs into the
    /// fixed buffers on `stream` before this call. Returns the bucket size used; over the largest
    /// bucket, the [`Overflow`] policy decides (an eager run returns `n`).
    pub fn run(&mut self, stream: StreamRef<'_>, n: usize) -> Result<usize> {
        match bucket_index(&self.buckets, n) {
            Some(i) => {
                let bucket = self.buckets[i];
                self.ensure(i, stream)?.launch(stream)?;
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
