//! Regression tests of issue 13 for graphs, host functions and the staging ring: host functions
//! replayed by graphs and freed with them (defect 1), the staging copy ordered with its
//! destination's stream (2), the staging ring's slots, memory and waits (6), captures ended on a
//! panic (7), `capture_into` on empty graphs and on failure (11). GPU tests, serialised against
//! each other by one lock (a capture in this binary must not see another test's synchronise).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, capture_into, CaptureMode, CaptureStatus, Graph, InstantiateFlags};
use ordo_cuda_core::host_fn::{launch_host_fn, take_host_fn_panics};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::staging::{free_deferred, StagingRing};
use ordo_cuda_core::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

static GPU: Mutex<()> = Mutex::new(());

/// Every test of this binary holds the lock for its whole body. A test that fails poisons it; the
/// others go on, since it guards no data.
fn gpu() -> MutexGuard<'static, ()> {
    GPU.lock().unwrap_or_else(|e| e.into_inner())
}

/// Polls `done` for up to five seconds (CUDA runs user-object destructors and host functions on
/// its own threads, after the call that released them has returned).
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

#[path = "support/random.rs"]
mod random;
use random::random_bytes;

fn read<T: DeviceCopy + Default>(src: DeviceSlice<'_, T>, stream: StreamRef<'_>) -> Vec<T> {
    let mut out = vec![T::default(); src.len()];
    copy::d2h_blocking(&mut out, src, stream).unwrap();
    out
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_01_captured_host_fn_runs_at_every_replay_and_is_freed_with_the_graph() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    // SAFETY: the captured work uses only the closure, which the graph owns; the closure makes
    // no CUDA call (an atomic add), as `launch_host_fn` requires.
    let graph = unsafe {
        capture(s, CaptureMode::ThreadLocal, |cs| {
            launch_host_fn(cs, move || {
                c.fetch_add(1, Ordering::Relaxed);
            })
        })
    }
    .unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 0, "captured, not run");
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    drop(graph); // the executable graph holds the closure on its own
    for _ in 0..3 {
        exec.launch(s).unwrap();
    }
    s.synchronize().unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 3);
    assert_eq!(Arc::strong_count(&calls), 2, "the closure lives while the executable graph does");
    drop(exec);
    s.synchronize().unwrap();
    assert!(eventually(|| Arc::strong_count(&calls) == 1), "the closure was not freed with the graph");
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_01_update_hands_the_new_graphs_host_fn_to_the_exec() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let (a, b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counting = |counter: &Arc<AtomicUsize>| {
        let c = Arc::clone(counter);
        // SAFETY: the captured work uses only the closure, which the graph owns; the closure makes
        // no CUDA call (an atomic add), as `launch_host_fn` requires.
        unsafe {
            capture(s, CaptureMode::ThreadLocal, |cs| {
                launch_host_fn(cs, move || {
                    c.fetch_add(1, Ordering::Relaxed);
                })
            })
        }
        .unwrap()
    };
    let (ga, gb) = (counting(&a), counting(&b));
    let mut exec = ga.instantiate(InstantiateFlags::empty()).unwrap();
    assert!(exec.update(&gb).unwrap().is_updated());
    drop(ga);
    drop(gb);
    exec.launch(s).unwrap();
    s.synchronize().unwrap();
    assert_eq!((a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)), (0, 1));
    assert!(eventually(|| Arc::strong_count(&a) == 1), "the replaced closure is released");
    assert_eq!(Arc::strong_count(&b), 2, "the exec holds the new graph's closure");
    drop(exec);
    assert!(eventually(|| Arc::strong_count(&b) == 1));
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_06_a_host_fn_panic_is_counted_and_later_launches_work() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    take_host_fn_panics();
    // SAFETY: the closure panics and makes no CUDA call.
    unsafe { launch_host_fn(s, || panic!("deliberate panic in a host function")) }.unwrap();
    s.synchronize().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    // SAFETY: an atomic add: no CUDA call.
    unsafe {
        launch_host_fn(s, move || {
            r.fetch_add(1, Ordering::Relaxed);
        })
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    assert_eq!(take_host_fn_panics(), 1);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_07_a_panic_inside_capture_ends_the_capture() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<u32>::zeroed_async(1024, s).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the graph is never launched.
        let _ = unsafe {
            capture(s, CaptureMode::Global, |cs| {
                copy::memset_async(x.as_mut_slice(), 1, cs)?;
                panic!("deliberate panic inside a capture");
            })
        };
    }));
    assert!(caught.is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    // The stream works, and so does a new capture.
    // SAFETY: `x` outlives the executable graph and its launch (synchronised below).
    let graph =
        unsafe { capture(s, CaptureMode::ThreadLocal, |cs| copy::memset_async(x.as_mut_slice(), 7, cs)) }.unwrap();
    graph.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert!(read(x.as_slice(), s).iter().all(|&v| v == 0x0707_0707));
    // capture_into too: the panic leaves the graph as it was.
    let mut g = Graph::new().unwrap();
    // SAFETY: `x` outlives every launch below.
    unsafe { capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| copy::memset_async(x.as_mut_slice(), 3, cs)) }
        .unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: as above.
        let _ = unsafe {
            capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| {
                copy::memset_async(x.as_mut_slice(), 4, cs)?;
                panic!("deliberate panic inside capture_into");
            })
        };
    }));
    assert!(caught.is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    assert_eq!(g.node_count().unwrap(), 1);
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert!(read(x.as_slice(), s).iter().all(|&v| v == 0x0303_0303));
    assert!(error::take_drop_errors().iter().all(|e| e.call() != "cudaStreamEndCapture"));
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_11_capture_into_an_empty_graph_works() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut g = Graph::new().unwrap();
    assert!(g.nodes().unwrap().is_empty());
    assert!(g.edges().unwrap().is_empty());
    assert!(g.leaf_nodes().unwrap().is_empty());
    let mut x = DeviceBuffer::<u32>::zeroed_async(4096, s).unwrap();
    // SAFETY: `x` outlives every launch below.
    unsafe { capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| copy::memset_async(x.as_mut_slice(), 0x11, cs)) }
        .unwrap();
    assert_eq!(g.node_count().unwrap(), 1);
    // A second capture depends on the first.
    // SAFETY: as above.
    unsafe {
        capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| {
            copy::memset_async(x.slice_mut(..2048).unwrap(), 0x22, cs)
        })
    }
    .unwrap();
    assert_eq!(g.node_count().unwrap(), 2);
    assert_eq!(g.edges().unwrap().len(), 1);
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    let host = read(x.as_slice(), s);
    assert!(host[..2048].iter().all(|&v| v == 0x2222_2222));
    assert!(host[2048..].iter().all(|&v| v == 0x1111_1111));
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_11_a_failed_capture_into_leaves_the_graph_as_it_was() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<u32>::zeroed_async(4096, s).unwrap();
    let mut g = Graph::new().unwrap();
    // SAFETY: `x` outlives every launch below.
    unsafe { capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| copy::memset_async(x.as_mut_slice(), 0x11, cs)) }
        .unwrap();
    // The body fails after capturing two nodes.
    // SAFETY: as above.
    let e = unsafe {
        capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| {
            copy::memset_async(x.as_mut_slice(), 0x22, cs)?;
            copy::memset_async(x.as_mut_slice(), 0x33, cs)?;
            Err(Error::invalid("test", "deliberate failure"))
        })
    }
    .unwrap_err();
    assert_eq!(e.call(), "test");
    assert_eq!(g.node_count().unwrap(), 1);
    // An illegal call invalidates the capture; CUDA then destroys the graph it captured into, and
    // capture_into puts the graph as it was back in its place.
    // SAFETY: as above.
    let e = unsafe {
        capture_into(&mut g, s, CaptureMode::ThreadLocal, |cs| {
            copy::memset_async(x.as_mut_slice(), 0x44, cs)?;
            let _ = cs.synchronize(); // refused inside a capture: the capture is invalidated
            Ok(())
        })
    }
    .unwrap_err();
    assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorStreamCaptureInvalidated), "{e}");
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    assert_eq!(g.node_count().unwrap(), 1);
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert!(read(x.as_slice(), s).iter().all(|&v| v == 0x1111_1111));
    drop(g);
    let errors = error::take_drop_errors();
    assert!(errors.iter().all(|e| !e.call().starts_with("cudaGraph")), "{errors:?}");
}

/// The pinned allocation at `ptr` was freed, once frees deferred off CUDA's callback threads ran.
fn freed<T>(ptr: *const T) -> bool {
    free_deferred();
    is_freed(ptr)
}

/// The pinned allocation at `ptr` is no longer registered with CUDA (it was freed).
fn is_freed<T>(ptr: *const T) -> bool {
    // SAFETY: a plain struct of integers and pointers.
    let mut attrs: sys::cudaPointerAttributes = unsafe { std::mem::zeroed() };
    // SAFETY: `attrs` is writable; any address may be asked about.
    let code = unsafe { sys::cudaPointerGetAttributes(&mut attrs, ptr.cast()) };
    code == sys::cudaError::cudaSuccess && attrs.type_ == sys::cudaMemoryType::cudaMemoryTypeUnregistered
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_06_staging_slots_come_back_and_the_ring_frees_its_memory() {
    let _gpu = gpu();
    const SLOTS: usize = 4;
    const LEN: usize = 1 << 16;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let ring = StagingRing::<u8>::new(SLOTS, LEN).unwrap();
    let loader = ring.clone();
    let mut dsts: Vec<_> = (0..SLOTS).map(|_| DeviceBuffer::<u8>::zeroed_async(LEN, s).unwrap()).collect();
    let data: Vec<_> = (0..SLOTS).map(|i| random_bytes(LEN, i as u64 + 1)).collect();
    let mut base: *const u8 = std::ptr::null();
    for (dst, bytes) in dsts.iter_mut().zip(&data) {
        let mut slot = loader.acquire().unwrap();
        slot.copy_from_slice(bytes);
        if base.is_null() {
            base = slot.as_ptr(); // inside the ring's one pinned allocation
        }
        ring.submit(slot, LEN, dst.as_mut_slice(), s).unwrap();
    }
    s.synchronize().unwrap();
    assert!(eventually(|| ring.free_slots() == SLOTS), "slots did not come back");
    for (dst, bytes) in dsts.iter().zip(&data) {
        assert_eq!(&read(dst.as_slice(), s), bytes);
    }
    // Every slot can be taken again, and acquire returns at once.
    let again: Vec<_> = (0..SLOTS).map(|_| ring.acquire().unwrap()).collect();
    assert!(ring.try_acquire().is_none());
    drop(again);
    assert_eq!(ring.free_slots(), SLOTS);
    assert!(!is_freed(base));
    drop(loader);
    drop(ring);
    assert!(eventually(|| freed(base)), "the pinned memory leaked");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_06_acquire_returns_an_error_when_no_slot_can_come_free() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let ring = StagingRing::<u32>::new(1, 256).unwrap();
    let mut x = DeviceBuffer::<u32>::zeroed_async(256, s).unwrap();
    let mut slot = ring.acquire().unwrap();
    slot.fill(5);
    // SAFETY: `x` outlives the graph (no launch at all).
    let graph =
        unsafe { capture(s, CaptureMode::ThreadLocal, |cs| ring.submit(slot, 256, x.as_mut_slice(), cs)) }.unwrap();
    assert_eq!(ring.graph_slots(), 1);
    // The only slot belongs to the graph: acquire must return, not spin for ever.
    let waiter = ring.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(waiter.acquire().map(drop)).unwrap());
    let answer = rx.recv_timeout(Duration::from_secs(10)).expect("acquire hung");
    assert!(answer.unwrap_err().to_string().contains("held by a graph"));
    drop(graph);
    assert!(eventually(|| ring.free_slots() == 1), "the graph did not give its slot back");
    drop(ring.acquire().unwrap());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_02_staging_copy_is_ordered_with_the_destinations_stream() {
    let _gpu = gpu();
    const N: usize = 16 << 20;
    let (own, copier) = (Stream::new().unwrap(), Stream::new().unwrap());
    let (a, b) = (own.as_stream(), copier.as_stream());
    let ring = StagingRing::<u8>::new(1, N).unwrap();
    let data = random_bytes(N, 42);
    // Keeps the copy stream busy, so an unordered copy would land late.
    let mut busy = DeviceBuffer::<u8>::zeroed_async(256 << 20, b).unwrap();
    let mut stall = |stream: StreamRef<'_>| {
        for i in 0..32 {
            // SAFETY: `busy` is used on its own stream only and outlives the work (synchronised below).
            unsafe { copy::memset_async(busy.as_mut_slice(), i, stream).unwrap() };
        }
    };

    // Read before dropping: a read on the destination's own stream sees the copy.
    let mut dst = DeviceBuffer::<u8>::alloc_async(N, a).unwrap();
    stall(b);
    let mut slot = ring.acquire().unwrap();
    slot.copy_from_slice(&data);
    ring.submit(slot, N, dst.as_mut_slice(), b).unwrap();
    assert!(read(dst.as_slice(), a) == data, "the copy was not ordered before the destination's stream");
    drop(dst);

    // Drop right after submit: the buffer's free waits for the copy, so its next owner keeps its data.
    let mut dst = DeviceBuffer::<u8>::alloc_async(N, a).unwrap();
    a.synchronize().unwrap();
    stall(b);
    let mut slot = ring.acquire().unwrap();
    slot.copy_from_slice(&data);
    ring.submit(slot, N, dst.as_mut_slice(), b).unwrap();
    drop(dst);
    let mut next = DeviceBuffer::<u8>::alloc_async(N, a).unwrap();
    // SAFETY: `next` is used on its own stream and read back (blocking) below.
    unsafe { copy::memset_async(next.as_mut_slice(), 0xAB, a).unwrap() };
    b.synchronize().unwrap();
    a.synchronize().unwrap();
    let kept = read(next.as_slice(), a).iter().filter(|&&v| v == 0xAB).count();
    assert_eq!(kept, N, "the staging copy landed in the buffer's next owner");
    drop(busy);
    b.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_01_staging_submit_captured_replays_and_gives_the_slot_back() {
    let _gpu = gpu();
    const LEN: usize = 1 << 20;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let ring = StagingRing::<u32>::new(2, LEN).unwrap();
    let data: Vec<u32> =
        random_bytes(4 * LEN, 9).chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let mut dst = DeviceBuffer::<u32>::zeroed_async(LEN, s).unwrap();
    let mut slot = ring.acquire().unwrap();
    slot.copy_from_slice(&data);
    let base = slot.as_ptr();
    // SAFETY: `dst` outlives the executable graph and its launches (synchronised before drops).
    let graph =
        unsafe { capture(s, CaptureMode::ThreadLocal, |cs| ring.submit(slot, LEN, dst.as_mut_slice(), cs)) }.unwrap();
    assert_eq!(ring.graph_slots(), 1);
    assert_eq!(ring.free_slots(), 1);
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    drop(graph);
    for _ in 0..3 {
        // SAFETY: `dst` is used on its own stream, read back (blocking) below.
        unsafe { copy::memset_async(dst.as_mut_slice(), 0, s).unwrap() };
        exec.launch(s).unwrap();
        assert_eq!(read(dst.as_slice(), s), data);
    }
    // The other slot works as usual meanwhile.
    let mut other = DeviceBuffer::<u32>::zeroed_async(LEN, s).unwrap();
    let mut slot = ring.acquire().unwrap();
    slot.fill(77);
    ring.submit(slot, LEN, other.as_mut_slice(), s).unwrap();
    assert!(read(other.as_slice(), s).iter().all(|&v| v == 77));
    drop(ring); // the executable graph still holds the ring's memory
                // SAFETY: as above.
    unsafe { copy::memset_async(dst.as_mut_slice(), 0, s).unwrap() };
    exec.launch(s).unwrap();
    assert_eq!(read(dst.as_slice(), s), data);
    assert!(!is_freed(base));
    drop(exec);
    s.synchronize().unwrap();
    // The last holder was the graph's destructor, on CUDA's thread: the free is deferred to here.
    assert!(eventually(|| freed(base)), "the ring's memory was not freed with the last graph");
}

#[test]
fn defect_06_ring_sizes_are_refused_before_cuda() {
    for (count, len) in [(0, 4), (4, 0), (usize::MAX, 2)] {
        let e = StagingRing::<u8>::new(count, len).err().unwrap();
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
    }
}

/// Review finding after defect 1: a staging submit on a stream that is not capturing, to a buffer
/// whose own stream is capturing, made the copy stream join the capture (the wait that orders it
/// after the buffer's stream), so the one-shot host function was captured and freed again at
/// every replay. The ordering is refused now, before anything is enqueued: the slot comes back,
/// the other stream stays out of the capture and the capture stays valid.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_01_a_submit_that_would_pull_its_stream_into_a_capture_is_refused() {
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let other = Stream::new().unwrap();
    let ring = StagingRing::<f32>::new(2, 1024).unwrap();
    let s = stream.as_stream();
    // SAFETY: nothing is captured but the buffer's allocation and free (the submit is refused).
    let graph = unsafe {
        capture(s, CaptureMode::Relaxed, |cs| {
            let mut b = DeviceBuffer::<f32>::alloc_async(1024, cs)?;
            let slot = ring.acquire()?;
            let e = ring.submit(slot, 1024, b.as_mut_slice(), other.as_stream()).unwrap_err();
            assert!(e.cuda_code().is_none(), "a usage error, before CUDA: {e}");
            assert!(e.to_string().contains("capturing"), "refused for the capture, not another reason: {e}");
            Ok(())
        })
    }
    .expect("the capture stays valid");
    assert_eq!(other.as_stream().capture_status().unwrap(), CaptureStatus::None);
    assert_eq!(ring.free_slots(), 2, "the refused slot is free again");
    drop(graph);
    other.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_staging_copy_captured_into_a_conditional_body_keeps_its_slot_while_the_graph_lives() {
    // `BodyGraph::capture` captures into a graph of its own and copies it into the body
    // (`cudaGraphAddChildGraphNode`), then destroys its own: the slot's reference must travel
    // with the copy, or the ring would hand the slot out again while the body still reads it.
    let _gpu = gpu();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let body_stream = Stream::new().unwrap();
    let ring = StagingRing::<u32>::new(1, 256).unwrap();
    let mut x = DeviceBuffer::<u32>::zeroed_async(256, s).unwrap();
    s.synchronize().unwrap();
    let graph = Graph::new().unwrap();
    let Ok(handle) = graph.conditional_handle(Some(1)) else {
        println!("conditional nodes not supported here: nothing to check");
        return;
    };
    let (_node, body) = graph.add_if_node(&[], handle).unwrap();
    let mut slot = ring.acquire().unwrap();
    for (i, v) in slot.iter_mut().enumerate() {
        *v = 7 + 3 * i as u32;
    }
    // SAFETY: `x` outlives every launch of the graph (synchronised below, before it drops).
    unsafe {
        body.capture(&[], body_stream.as_stream(), CaptureMode::ThreadLocal, |cs| {
            ring.submit(slot, 256, x.as_mut_slice(), cs)
        })
    }
    .unwrap();
    // The temporary graph is gone; give CUDA's destructor thread time to act if it would.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(ring.graph_slots(), 1, "the body's copy holds the slot");
    assert_eq!(ring.free_slots(), 0);
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    for _ in 0..2 {
        exec.launch(s).unwrap();
    }
    s.synchronize().unwrap();
    let mut out = vec![0u32; 256];
    copy::d2h_blocking(&mut out, x.as_slice(), s).unwrap();
    assert_eq!(out, (0..256).map(|i| 7 + 3 * i as u32).collect::<Vec<_>>());
    drop(exec);
    drop(graph);
    assert!(eventually(|| ring.free_slots() == 1), "the graph did not give its slot back");
}
