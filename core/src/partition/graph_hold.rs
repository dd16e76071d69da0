//! Graphs hold the partitions they were captured on: a capture ordo began gives its graph a
//! reference to the green context of every partition stream in it (a CUDA user object,
//! [`give_to_graph`]), so that no replay runs on a destroyed green context, whichever of the
//! partition's handles, streams and graphs goes last.
//!
//! Which streams are a partition's: every live [`PartitionStream`](super::PartitionStream) is
//! listed here, by raw handle and green context, from its creation to its drop (removed before its
//! `cudaStreamDestroy`, so that a handle listed with a live context is a live stream). At the end
//! of a capture, the capture's origin stream and every listed stream capturing into the same
//! capture (one that joined it by waiting on an event recorded in it: `cudaStreamGetCaptureInfo`,
//! which CUDA allows during captures, names the capture) are the capture's partition streams. A
//! partition stream dropped while it takes part in a capture (joined, then joined back, inside the
//! capture's function) gives the capture's graph its hold at its drop ([`hold_while_capturing`]),
//! since the capture's end no longer finds it.
//!
//! An entry is removed by handle and green context both: after `cudaDeviceReset` the C ABI forgets
//! its partition streams (their entries, of the dead context, stay), and a new stream may get the
//! same handle. Entries of dead contexts leave the list whenever a stream is listed or a capture
//! ends, their green contexts forgotten.
//!
//! The cost, off the hot paths: a capture ends with one atomic load when no partition stream
//! exists; otherwise with a check that the device's context is still the one the partitions were
//! made in, one `cudaStreamGetCaptureInfo` a partition stream, and a user object a partition in
//! the capture. A partition stream's drop asks `cudaStreamGetCaptureInfo` once. Launches and
//! replays pay nothing.

use super::raw::GreenCtx;
use crate::callback::drop_outside_callbacks;
use crate::context::ContextTag;
use crate::error::Result;
use crate::graph::capture_info;
use crate::graph::user_object::give_to_graph;
use crate::stream::StreamRef;
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::c_ulonglong;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_sys as sys;
use std::sync::{Mutex, MutexGuard};

/// The list of partition streams: raw handles (as addresses) and contexts. Its operations are over
/// plain values (`C`: a green context here, anything in the tests); the CUDA calls they need come
/// in as functions.
struct Listed<C>(Vec<(usize, C)>);

impl<C> Listed<C> {
    /// Lists `stream` of `ctx`, after taking out the entries whose context `alive` says is gone
    /// (forgotten, never dropped: see [`prune`](Self::prune)).
    fn add(&mut self, stream: usize, ctx: C, alive: impl FnMut(&C) -> bool) {
        self.prune(alive);
        self.0.push((stream, ctx));
    }

    /// Takes out the entries whose context `alive` says is gone (`cudaDeviceReset`), forgetting
    /// their contexts: a green context of a destroyed context is never destroyed again, and its
    /// streams are never asked (CUDA may crash on their handles: CB-17).
    fn prune(&mut self, mut alive: impl FnMut(&C) -> bool) {
        let mut i = 0;
        while let Some((_, ctx)) = self.0.get(i) {
            if alive(ctx) {
                i += 1;
            } else {
                let (_, gone) = self.0.swap_remove(i);
                core::mem::forget(gone);
            }
        }
    }

    /// Takes out the entry of `stream` whose context is `is_ctx`'s: a handle alone may also name a
    /// stream of a dead context, which the C ABI forgot. Whether there was one.
    fn remove(&mut self, stream: usize, is_ctx: impl Fn(&C) -> bool) -> bool {
        match self.0.iter().position(|(s, c)| *s == stream && is_ctx(c)) {
            Some(i) => {
                self.0.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// The contexts of the streams in the capture `id` begun on `origin`: `origin`'s own (never
    /// asked), and those of the streams `capture_id` says capture into `id`, each context once
    /// (`same`). A stream `capture_id` fails for (a stream of another device with a sticky error)
    /// counts as not joined: it fails the capture of no other stream.
    fn joined<E>(
        &self,
        origin: usize,
        id: c_ulonglong,
        same: impl Fn(&C, &C) -> bool,
        mut capture_id: impl FnMut(usize) -> core::result::Result<Option<c_ulonglong>, E>,
    ) -> Vec<C>
    where
        C: Clone,
    {
        let mut held: Vec<C> = Vec::new();
        for (raw, ctx) in &self.0 {
            let joined = !held.iter().any(|h| same(h, ctx))
                && (*raw == origin || capture_id(*raw).is_ok_and(|other| other == Some(id)));
            if joined {
                held.push(ctx.clone());
            }
        }
        held
    }
}

/// Every live partition stream: its raw handle (as an address) and its green context.
static STREAMS: Mutex<Listed<Arc<GreenCtx>>> = Mutex::new(Listed(Vec::new()));
/// How many entries [`STREAMS`] holds: read without the lock by [`hold_for_capture`].
static LISTED: AtomicUsize = AtomicUsize::new(0);

fn streams() -> MutexGuard<'static, Listed<Arc<GreenCtx>>> {
    // Nothing panics while the list is changed: a poisoned lock is recovered as it is.
    crate::sync::lock(&STREAMS)
}

/// Whether a green context's device context still exists, asked once a context in `seen`.
fn alive_in(seen: &mut Vec<(ContextTag, bool)>) -> impl FnMut(&Arc<GreenCtx>) -> bool + '_ {
    move |ctx| match seen.iter().find(|(tag, _)| *tag == ctx.tag) {
        Some(&(_, alive)) => alive,
        None => {
            let alive = ctx.tag.alive();
            seen.push((ctx.tag, alive));
            alive
        }
    }
}

/// Lists a new partition stream (`stream`, of `ctx`); entries of dead contexts leave the list.
pub(super) fn list(stream: sys::cudaStream_t, ctx: &Arc<GreenCtx>) {
    let mut seen = Vec::new();
    let mut list = streams();
    list.add(stream as usize, Arc::clone(ctx), alive_in(&mut seen));
    LISTED.store(list.0.len(), Ordering::Release);
}

/// Removes a partition stream (`stream`, of `ctx`) from the list, before it is destroyed.
pub(super) fn unlist(stream: sys::cudaStream_t, ctx: &Arc<GreenCtx>) {
    let mut list = streams();
    list.remove(stream as usize, |c| Arc::ptr_eq(c, ctx));
    LISTED.store(list.0.len(), Ordering::Release);
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
    // SAFETY: a live stream (the capturing caller's, a partition stream being dropped by its
    // owner, or one listed with a live context, whose drop waits for the list's lock held by the
    // caller). The capture's own query, which CUDA allows during captures (CB-05).
    let (status, id, graph) = unsafe { capture_info(stream) }?;
    Ok(match status {
        sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive => NonNull::new(graph).map(|g| (id, g)),
        _ => None,
    })
}

/// Gives the graph of the capture open on `stream` (a capture ordo began, about to end) a
/// reference to the green context of every partition stream in the capture: `stream` itself and
/// the listed streams that joined it. Nothing when none is a partition's, or when `stream` is not
/// capturing. A listed stream other than `stream` whose query fails counts as not joined.
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
    let held = {
        let mut seen = Vec::new();
        let mut list = streams();
        list.prune(alive_in(&mut seen));
        LISTED.store(list.0.len(), Ordering::Release);
        list.joined(stream.as_raw() as usize, id, Arc::ptr_eq, |raw| {
            capture_of(raw as sys::cudaStream_t).map(|c| c.map(|(other, _)| other))
        })
    };
    for ctx in held {
        // SAFETY: the capture's graph, alive while the capture is open (see above).
        unsafe { give_to_graph(graph, Box::new(PartitionHold(Some(ctx)))) }?;
    }
    Ok(())
}

/// Gives the graph of the capture `stream` (a partition stream of `ctx`, about to be dropped)
/// takes part in, if any, a reference to `ctx`: the capture's end will not find the stream, which
/// leaves the list at its drop. Nothing when `stream` is not capturing.
///
/// The capture contract (item 2 of [`capture`](crate::graph::capture)'s) keeps the capture, and so
/// its graph, alive for the call: a stream that joined a capture is used only by the capture's
/// function, on the capturing thread, until the capture ends; its drop is such a use.
pub(super) fn hold_while_capturing(stream: sys::cudaStream_t, ctx: &Arc<GreenCtx>) -> Result<()> {
    let Some((_, graph)) = capture_of(stream)? else {
        return Ok(());
    };
    // SAFETY: the capture's graph, alive while the capture is open (see above).
    unsafe { give_to_graph(graph, Box::new(PartitionHold(Some(Arc::clone(ctx))))) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
    use crate::memory::{copy, DeviceBuffer};
    use crate::partition::{PartitionStream, SmPartition, SmSplit};
    use crate::{Device, Event, Stream};
    use alloc::sync::Weak;
    use core::cell::RefCell;

    /// Frees what graphs let go of (`free_deferred`) until the green context behind `weak` is
    /// gone, for 20 s at most, and asserts that it went (`message` otherwise).
    fn assert_freed(weak: &Weak<GreenCtx>, message: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while weak.strong_count() > 0 && std::time::Instant::now() < deadline {
            crate::callback::free_deferred();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(weak.strong_count(), 0, "{message}");
    }

    /// What the GPU tests start from: a partition `a` of 16 SMs or more beside the rest of the
    /// device, `a`'s green context watched by `weak`, 4096 zeroed bytes `x` (zeroed on the plain
    /// stream given, synchronised), and a `stream` of `a`.
    struct OnPartition<'s> {
        device: Device,
        a: SmPartition,
        rest: SmPartition,
        weak: Weak<GreenCtx>,
        x: DeviceBuffer<'s, u8>,
        stream: PartitionStream,
    }

    impl<'s> OnPartition<'s> {
        fn new(plain: &'s Stream) -> OnPartition<'s> {
            let device = Device::current().unwrap();
            let (a, rest) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
            let weak = Arc::downgrade(&a.ctx);
            let x = DeviceBuffer::<u8>::zeroed_async(4096, plain.as_stream()).unwrap();
            plain.synchronize().unwrap();
            let stream = a.stream().unwrap();
            OnPartition { device, a, rest, weak, x, stream }
        }
    }

    /// Launches `exec` `replays` times on `plain`, asserts that every byte of `x` reads 0x5a
    /// (`what` otherwise), drops `exec`, asserts that the green context behind `weak` goes, and
    /// frees `x`.
    fn replay_and_check(
        exec: GraphExec,
        replays: usize,
        plain: &Stream,
        x: DeviceBuffer<u8>,
        weak: &Weak<GreenCtx>,
        what: &str,
    ) {
        let p = plain.as_stream();
        for _ in 0..replays {
            exec.launch(p).unwrap();
        }
        plain.synchronize().unwrap();
        let mut back = alloc::vec![0u8; 4096];
        copy::d2h_blocking(&mut back, x.as_slice(), p).unwrap();
        assert!(back.iter().all(|&v| v == 0x5a), "{what}");
        drop(exec);
        assert_freed(weak, "the green context outlived its last graph");
        drop(x);
        plain.synchronize().unwrap();
    }

    /// After `cudaDeviceReset` the C ABI forgets a partition stream: its entry `(h, old)` stays,
    /// and a new stream may get the handle `h`. The drop of the new one takes out its own entry, not
    /// the dead one's. Matched by handle alone, the dead entry went and `(h, new)` stayed listed
    /// after `cudaStreamDestroy(h)`: the next capture's end asked CUDA about a destroyed stream.
    #[test]
    fn a_stream_leaves_the_list_by_handle_and_context() {
        let (old, new, other) = (Arc::new(1u32), Arc::new(2u32), Arc::new(3u32));
        let h = 0x7000_1000usize;
        let mut list = Listed(Vec::new());
        list.0.push((h, Arc::clone(&old)));
        list.0.push((h, Arc::clone(&new)));
        assert!(list.remove(h, |c| Arc::ptr_eq(c, &new)));
        assert_eq!(list.0.len(), 1);
        assert!(Arc::ptr_eq(&list.0[0].1, &old), "the live stream's entry went, not the dead one's");
        assert!(!list.remove(h, |c| Arc::ptr_eq(c, &new)), "gone already");
        assert!(!list.remove(h, |c| Arc::ptr_eq(c, &other)), "the handle of another context");
        assert!(!list.remove(h + 8, |c| Arc::ptr_eq(c, &old)), "another handle of the context");
        assert_eq!(list.0.len(), 1);
    }

    /// Listing a stream takes out the entries of dead contexts first, forgetting their contexts
    /// (never dropped: a green context of a destroyed context must not be destroyed again), and
    /// asks whether a context lives once for all its entries.
    #[test]
    fn listing_a_stream_drops_the_entries_of_dead_contexts() {
        let (dead, live) = (Arc::new(1u32), Arc::new(2u32));
        let h = 0x7000_2000usize;
        let mut list = Listed(Vec::new());
        list.add(h, Arc::clone(&dead), |_| true);
        list.add(h + 8, Arc::clone(&live), |_| true);
        list.add(h + 16, Arc::clone(&dead), |_| true);
        // cudaDeviceReset: the context of `dead` is gone; a new stream gets the handle `h`.
        let asked = RefCell::new(0);
        list.add(h, Arc::clone(&live), |c| {
            *asked.borrow_mut() += 1;
            **c != 1
        });
        let mut left: Vec<(usize, u32)> = list.0.iter().map(|(s, c)| (*s, **c)).collect();
        left.sort_unstable();
        assert_eq!(left, [(h, 2), (h + 8, 2)]);
        assert_eq!(Arc::strong_count(&dead), 3, "the dead entries' contexts were dropped, not forgotten");
        assert_eq!(*asked.borrow(), 3, "one question an entry here (the caller caches by context)");
        // And with the entry of the new stream alone left at `h`, its drop unlists it.
        assert!(list.remove(h, |c| Arc::ptr_eq(c, &live)));
        assert_eq!(list.0.len(), 1);
    }

    /// At a capture's end: the origin's partition (never asked) and those of the streams that
    /// joined its capture, each once. A stream whose query fails (a stream of another device with a
    /// sticky error) counts as not joined instead of failing the capture; streams of another capture
    /// or of none are not joined.
    #[test]
    fn a_listed_stream_whose_query_fails_counts_as_not_joined() {
        let list = Listed(alloc::vec![(1, 'o'), (2, 'a'), (3, 'b'), (4, 'c'), (5, 'd'), (6, 'a'), (7, 'e')]);
        let asked = RefCell::new(Vec::new());
        let held = list.joined(
            1,
            42,
            |x, y| x == y,
            |raw| {
                asked.borrow_mut().push(raw);
                match raw {
                    2 | 7 => Ok(Some(42)),
                    3 => Err("cudaErrorIllegalAddress"),
                    4 => Ok(Some(41)),
                    _ => Ok(None),
                }
            },
        );
        assert_eq!(held, ['o', 'a', 'e']);
        assert_eq!(*asked.borrow(), [2, 3, 4, 5, 7], "the origin, and a partition already held, are not asked");
        // Every query failing: the origin's partition alone.
        assert_eq!(list.joined(1, 42, |x, y| x == y, |_| Err(())), ['o']);
    }

    /// A graph captured on a partition's stream holds its green context: alive after the partition
    /// and its stream are dropped, and after the graph itself (its executable graph holds it too);
    /// the replay writes what was captured; once the executable graph is gone too, the green context
    /// goes (CUDA lets go of the hold on its own thread; `free_deferred` destroys it). Before the
    /// hold, the drop of the stream destroyed the green context under the graph.
    #[test]
    #[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
    fn a_graph_holds_its_partition_until_the_last_graph_goes() {
        let plain = Stream::new().unwrap();
        let OnPartition { a, rest: _rest, weak, mut x, stream, .. } = OnPartition::new(&plain);
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
        replay_and_check(exec, 1, &plain, x, &weak, "the replay after the partition's drop");
    }

    /// A partition stream that joined a capture (fork, memset, join back) and is dropped inside the
    /// capture's function, with the partition's last handle, gives the graph its hold at its drop:
    /// the green context outlives the capture, the graph replays the memset, and the context goes
    /// once the graphs are gone. Before, the stream left the list at its drop, the capture's end
    /// found no partition stream, and (in relaxed mode, where the event synchronise of the green
    /// context's drop is allowed) the green context was destroyed under the captured node.
    #[test]
    #[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
    fn a_partition_stream_dropped_inside_a_capture_gives_the_graph_its_hold() {
        let plain = Stream::new().unwrap();
        let OnPartition { a, rest: _rest, weak, mut x, stream: joined, .. } = OnPartition::new(&plain);
        let origin = Stream::new().unwrap();
        let (fork, join) = (Event::new().unwrap(), Event::new().unwrap());
        let (fork, join) = (&fork, &join);
        let target = x.as_mut_slice();
        // SAFETY: `x` outlives every launch (synchronised below before it drops); the joined
        // stream is used by this function alone.
        let graph = unsafe {
            capture(origin.as_stream(), CaptureMode::Relaxed, move |cs| {
                fork.record(cs)?;
                joined.as_stream().wait_event(fork)?;
                copy::memset_async(target, 0x5a, joined.as_stream())?;
                join.record(joined.as_stream())?;
                cs.wait_event(join)?;
                drop(joined);
                drop(a);
                Ok(())
            })
        };
        let graph = match graph {
            Ok(graph) => graph,
            Err(e) => panic!("the capture failed: {e} (CUDA refused the joined stream's destroy inside it?)"),
        };
        assert!(weak.upgrade().is_some(), "the partition went while the graph captured on it lived");
        let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
        drop(graph);
        replay_and_check(exec, 3, &plain, x, &weak, "the replays after the partition's drop");
    }

    /// `SmSplit::new` inside a capture leaves what graphs let go of (here a green context, whose
    /// destruction synchronises an event) for later: the green context a released graph held last
    /// is still there after a split made inside a relaxed capture, and goes at the next
    /// `free_deferred` after the capture. Before, the split destroyed it inside the capture.
    #[test]
    #[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
    fn a_split_inside_a_capture_leaves_deferred_partitions_for_later() {
        let plain = Stream::new().unwrap();
        let OnPartition { device, a, rest: _rest, weak, mut x, stream } = OnPartition::new(&plain);
        let target = x.as_mut_slice();
        // SAFETY: the graph is never launched; nothing else uses the stream while it captures.
        let graph =
            unsafe { capture(stream.as_stream(), CaptureMode::ThreadLocal, |cs| copy::memset_async(target, 1, cs)) }
                .unwrap();
        drop((stream, a, graph));
        // CUDA lets go of the graph's hold on its own thread, which defers the green context.
        std::thread::sleep(std::time::Duration::from_millis(500));
        let origin = Stream::new().unwrap();
        let target = x.as_mut_slice();
        let alive = core::cell::Cell::new((false, false));
        // SAFETY: the graph is never launched; nothing else uses `origin` while it captures.
        let graph = unsafe {
            capture(origin.as_stream(), CaptureMode::Relaxed, |cs| {
                copy::memset_async(target, 2, cs)?;
                // Asked inside the capture, where the splits of other tests leave it too.
                let before = weak.strong_count() > 0;
                drop(SmSplit::new(device, 16)?);
                alive.set((before, weak.strong_count() > 0));
                Ok(())
            })
        }
        .unwrap();
        drop(graph);
        match alive.get() {
            (false, _) => std::println!("another test's free_deferred took the green context first: nothing to check"),
            (true, after) => assert!(after, "SmSplit::new freed the deferred green context inside the capture"),
        }
        assert_freed(&weak, "the green context was never freed after the capture");
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
