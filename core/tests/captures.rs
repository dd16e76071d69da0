//! Captures that end early: a panic inside a capture ends it (in global mode too), leaving the
//! stream usable; `capture_into` works on an empty graph and, when the body fails or the capture is
//! invalidated, leaves the graph as it was (CUDA destroys a graph whose capture into it fails to
//! end: `docs/cuda-behaviours.md`, CB-06). The global-mode test holds `gpu_lock::exclusive`, the
//! others `gpu_lock::shared`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, capture_into, CaptureMode, CaptureStatus, Graph, InstantiateFlags};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;

#[path = "support/gpu_lock.rs"]
mod gpu_lock;

#[path = "support/host.rs"]
mod host;
use host::read;

/// A panic inside `capture` (global mode) or `capture_into` ends the capture: the stream is no
/// longer capturing, a new capture works, and `capture_into`'s graph is as it was.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_panic_inside_a_capture_ends_the_capture() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
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

/// `capture_into` an empty graph captures the work; a second capture depends on the first.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn capture_into_an_empty_graph_works() {
    let _gpu = gpu_lock::shared();
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

/// A `capture_into` whose body fails, or whose capture is invalidated, leaves the graph's nodes
/// as they were, and the graph replays them (CB-06).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failed_capture_into_leaves_the_graph_as_it_was() {
    let _gpu = gpu_lock::shared();
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
