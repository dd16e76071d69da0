//! What a graph holds lives as long as the graph and its executable graphs: host functions captured
//! into it run at every replay and are freed with the last of them (an update hands the new
//! graph's to the executable graph), and a staging slot captured into a graph (or a conditional
//! node's body) stays the graph's until the last one is destroyed, the ring's pinned memory with
//! it. The tests run one at a time (`gpu_lock::exclusive`): they watch process-wide state (frees
//! CUDA runs on its own threads, freed pinned addresses) that another test's allocations would
//! disturb.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, Graph, InstantiateFlags};
use ordo_cuda_core::host_fn::launch_host_fn;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::staging::StagingRing;
use ordo_cuda_core::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "support/gpu_lock.rs"]
mod gpu_lock;

#[path = "support/host.rs"]
mod host;
use host::{eventually, freed, is_freed, read};

#[path = "support/random.rs"]
mod random;
use random::random_bytes;

/// A host function captured into a graph runs at every replay of its executable graph, which
/// holds the closure alone once the graph is dropped, and frees it when destroyed.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_captured_host_fn_runs_at_every_replay_and_is_freed_with_the_graph() {
    let _gpu = gpu_lock::exclusive();
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

/// An executable graph updated from another graph runs, and holds, that graph's host function;
/// the replaced closure is released.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_update_hands_the_new_graphs_host_fn_to_the_exec() {
    let _gpu = gpu_lock::exclusive();
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

/// A staging submit captured into a graph copies the slot at every replay; the slot stays the
/// graph's, the ring's other slot works meanwhile, and the ring's pinned memory is freed only with
/// the last executable graph.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_captured_staging_submit_replays_and_holds_the_rings_memory_until_the_last_graph_goes() {
    let _gpu = gpu_lock::exclusive();
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

/// A staging copy captured into a conditional node's body (captured into a graph of its own and
/// copied in) keeps its slot while the graph lives, and gives it back with the graph.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_staging_copy_captured_into_a_conditional_body_keeps_its_slot_while_the_graph_lives() {
    // `BodyGraph::capture` captures into a graph of its own and copies it into the body
    // (`cudaGraphAddChildGraphNode`), then destroys its own: the slot's reference must travel
    // with the copy, or the ring would hand the slot out again while the body still reads it.
    let _gpu = gpu_lock::exclusive();
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
