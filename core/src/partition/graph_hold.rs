//! Graphs hold the partitions they were captured on: a capture ordo began gives its graph a
//! reference to the green context of every partition stream in it (a CUDA user object,
//! [`give_to_graph`]), so that no replay runs on a destroyed green context, whichever of the
//! partition's handles, streams and graphs goes last.
//!
//! Which streams are a partition's: every live [`PartitionStream`](super::PartitionStream) is
//! listed here, by raw handle, from its creation to its drop (removed before its
//! `cudaStreamDestroy`, so that a handle listed is a live stream). At the end of a capture, the
//! capture's origin stream and every listed stream capturing into the same capture (one that joined
//! it by waiting on an event recorded in it: `cudaStreamGetCaptureInfo`, which CUDA allows during
//! captures, names the capture) are the capture's partition streams.
//!
//! The cost, off the hot paths: a capture ends with one atomic load when no partition stream
//! exists; otherwise with a check that the device's context is still the one the partitions were
//! made in, one `cudaStreamGetCaptureInfo` a partition stream, and a user object a partition in
//! the capture. Launches and replays pay nothing.

use super::raw::GreenCtx;
use crate::callback::drop_outside_callbacks;
use crate::context::ContextTag;
use crate::error::Result;
use crate::graph::user_object::give_to_graph;
use crate::stream::StreamRef;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_ulonglong;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_sys as sys;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Every live partition stream: its raw handle (as an address) and its green context.
static STREAMS: Mutex<Vec<(usize, Arc<GreenCtx>)>> = Mutex::new(Vec::new());
/// How many entries [`STREAMS`] holds: read without the lock by [`hold_for_capture`].
static LISTED: AtomicUsize = AtomicUsize::new(0);

fn streams() -> MutexGuard<'static, Vec<(usize, Arc<GreenCtx>)>> {
    // Nothing panics while the list is changed: a poisoned lock is recovered as it is.
    STREAMS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Lists a new partition stream (`stream`, of `ctx`).
pub(super) fn list(stream: sys::cudaStream_t, ctx: &Arc<GreenCtx>) {
    let mut list = streams();
    list.push((stream as usize, Arc::clone(ctx)));
    LISTED.store(list.len(), Ordering::Release);
}

/// Removes a partition stream from the list, before it is destroyed.
pub(super) fn unlist(stream: sys::cudaStream_t) {
    let mut list = streams();
    if let Some(i) = list.iter().position(|&(s, _)| s == stream as usize) {
        list.swap_remove(i);
    }
    LISTED.store(list.len(), Ordering::Release);
}

/// A graph's reference to a green context: the value of the user object [`hold_for_capture`]
/// gives the graph. Its drop runs where CUDA releases the user object, usually on CUDA's own
/// thread, where no CUDA call may be made: the green context (if this was its last holder, whose
/// drop waits for its work and destroys it) is then handed to
/// [`drop_outside_callbacks`], which keeps it for the next
/// [`free_deferred`](crate::callback::free_deferred).
struct PartitionHold(Option<Arc<GreenCtx>>);

impl Drop for PartitionHold {
    fn drop(&mut self) {
        if let Some(ctx) = self.0.take() {
            let tag = ctx.tag;
            drop_outside_callbacks(tag, Box::new(ctx));
        }
    }
}

/// The capture `stream` is in: its id and graph, or `None` when it is not capturing (or its
/// capture was invalidated: its end fails, and nothing is kept).
fn capture_of(stream: sys::cudaStream_t) -> Result<Option<(c_ulonglong, NonNull<sys::CUgraph_st>)>> {
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    let mut id: c_ulonglong = 0;
    let mut graph: sys::cudaGraph_t = core::ptr::null_mut();
    // SAFETY: a live stream (the capturing caller's, or one listed, whose drop waits for the list's
    // lock held by the caller); the outputs asked for are writable, the others not asked. The
    // capture's own query, which CUDA allows during captures (CB-05).
    cuda_call!(unsafe {
        sys::compat::cudaStreamGetCaptureInfo(
            stream,
            &mut status,
            &mut id,
            &mut graph,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
        )
    })?;
    Ok(match status {
        sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => NonNull::new(graph).map(|g| (id, g)),
        _ => None,
    })
}

/// Gives the graph of the capture open on `stream` (a capture ordo began, about to end) a
/// reference to the green context of every partition stream in the capture: `stream` itself and
/// the listed streams that joined it. Nothing when none is a partition's, or when `stream` is not
/// capturing.
///
/// Streams of a context that `cudaDeviceReset` destroyed are never asked (CUDA may crash on their
/// handles: CB-17): they leave the list, their green context forgotten, as the C ABI forgets the
/// handles of such a context.
///
/// Called on the capturing thread while the capture is open; the capture contract keeps the
/// capture, and so its graph, alive for the call.
pub(crate) fn hold_for_capture(stream: StreamRef<'_>) -> Result<()> {
    if LISTED.load(Ordering::Acquire) == 0 {
        return Ok(());
    }
    let Some((id, graph)) = capture_of(stream.as_raw())? else {
        return Ok(());
    };
    let mut held: Vec<Arc<GreenCtx>> = Vec::new();
    {
        let mut list = streams();
        let mut contexts: Vec<(ContextTag, bool)> = Vec::new();
        let mut i = 0;
        while let Some((raw, ctx)) = list.get(i) {
            let alive = match contexts.iter().find(|(tag, _)| *tag == ctx.tag) {
                Some(&(_, alive)) => alive,
                None => {
                    let alive = ctx.tag.alive();
                    contexts.push((ctx.tag, alive));
                    alive
                }
            };
            if !alive {
                let (_, gone) = list.swap_remove(i);
                core::mem::forget(gone);
                continue;
            }
            let joined = !held.iter().any(|h| Arc::ptr_eq(h, ctx))
                && (*raw == stream.as_raw() as usize
                    || capture_of(*raw as sys::cudaStream_t)?.is_some_and(|(other, _)| other == id));
            if joined {
                held.push(Arc::clone(ctx));
            }
            i += 1;
        }
        LISTED.store(list.len(), Ordering::Release);
    }
    for ctx in held {
        // SAFETY: the capture's graph, alive while the capture is open (see above).
        unsafe { give_to_graph(graph, Box::new(PartitionHold(Some(ctx)))) }?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{capture, CaptureMode, InstantiateFlags};
    use crate::memory::{copy, DeviceBuffer};
    use crate::partition::SmSplit;
    use crate::{Device, Stream};

    /// A graph captured on a partition's stream holds its green context: alive after the partition
    /// and its stream are dropped, and after the graph itself (its executable graph holds it too);
    /// the replay writes what was captured; once the executable graph is gone too, the green context
    /// goes (CUDA lets go of the hold on its own thread; `free_deferred` destroys it). Before the
    /// hold, the drop of the stream destroyed the green context under the graph.
    #[test]
    #[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
    fn a_graph_holds_its_partition_until_the_last_graph_goes() {
        let device = Device::current().unwrap();
        let (a, _rest) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
        let weak = Arc::downgrade(&a.ctx);
        let plain = Stream::new().unwrap();
        let p = plain.as_stream();
        let mut x = DeviceBuffer::<u8>::zeroed_async(4096, p).unwrap();
        plain.synchronize().unwrap();
        let stream = a.stream().unwrap();
        let target = x.as_mut_slice();
        // SAFETY: `x` outlives every launch (synchronised below before it drops); nothing else
        // uses the partition's stream while it captures.
        let graph =
            unsafe { capture(stream.as_stream(), CaptureMode::ThreadLocal, |cs| copy::memset_async(target, 0x5a, cs)) }
                .unwrap();
        drop((stream, a));
        assert!(weak.upgrade().is_some(), "the partition went while a graph captured on it lived");
        let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
        drop(graph);
        assert!(weak.upgrade().is_some(), "the partition went while an executable graph of it lived");
        exec.launch(p).unwrap();
        plain.synchronize().unwrap();
        let mut back = alloc::vec![0u8; 4096];
        copy::d2h_blocking(&mut back, x.as_slice(), p).unwrap();
        assert!(back.iter().all(|&v| v == 0x5a), "the replay after the partition's drop");
        drop(exec);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while weak.strong_count() > 0 && std::time::Instant::now() < deadline {
            crate::callback::free_deferred();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(weak.strong_count(), 0, "the green context outlived its last graph");
        drop(x);
        plain.synchronize().unwrap();
    }

    /// With no partition stream the capture's end asks CUDA nothing (here: no driver is needed).
    #[test]
    fn with_no_partition_stream_a_capture_asks_nothing() {
        if LISTED.load(Ordering::Acquire) != 0 {
            return; // another test of this process holds a partition stream
        }
        // SAFETY: never used as a stream: the call returns before any CUDA call.
        let fake = unsafe { StreamRef::from_raw(NonNull::<sys::CUstream_st>::dangling().as_ptr()) };
        assert!(hold_for_capture(fake.unwrap()).is_ok());
    }
}
