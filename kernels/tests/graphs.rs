//! GPU tests of graphs: the source's 200-kernel program eager against graph, exec update (success
//! and a reported failure), kernel-node argument updates, capture into an existing graph, node
//! kinds including allocation nodes, the bucket cache against eager on random sizes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_core::graph::{capture, capture_into, CaptureMode, InstantiateFlags, NodeKind};
use ordo_core::graph_cache::{GraphCache, Overflow};
use ordo_core::launch::LaunchConfig;
use ordo_core::memory::copy;
use ordo_core::*;
use ordo_kernels::kernel;

mod common;
use common::{download, gpu_lock, upload};

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    common::Rng(seed | 1).f32s(n, -4.0, 4.0)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_sources_200_kernel_program_gives_the_same_result_eager_and_as_a_graph() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let data = random_f32(4096, 1);
    let mut eager = upload(&data, s);
    let mut graphed = upload(&data, s);
    for _ in 0..200 {
        unsafe { ordo_kernels::add_one(s, eager.as_mut_slice()).unwrap() };
    }
    // SAFETY: `graphed` outlives the executable graph (declared before it) and is read back after
    // its launch; nothing else uses `s` during the capture (exclusive GPU lock).
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            (0..200).try_for_each(|_| ordo_kernels::add_one(cs, graphed.as_mut_slice()))
        })
    }
    .unwrap();
    assert_eq!(g.node_count().unwrap(), 200);
    assert!(g.nodes().unwrap().iter().all(|n| n.kind().unwrap() == NodeKind::Kernel));
    let exec = g.instantiate_and_upload(InstantiateFlags::empty(), s).unwrap();
    exec.launch(s).unwrap();
    let (e, gr) = (download(&eager, s), download(&graphed, s));
    let expect: Vec<f32> = data.iter().map(|v| (0..200).fold(*v, |v, _| v + 1.0)).collect();
    assert!(e == expect && gr == expect);
    let dot = std::env::temp_dir().join(format!("ordo-graph-{}.dot", std::process::id()));
    g.debug_dot(&std::ffi::CString::new(dot.to_str().unwrap()).unwrap()).unwrap();
    assert!(std::fs::read_to_string(&dot).unwrap().contains("digraph"));
    let _ = std::fs::remove_file(dot);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn exec_update_succeeds_for_new_pointers_and_reports_a_changed_topology() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let (mut a, mut b) = (upload(&random_f32(1000, 2), s), upload(&random_f32(1000, 3), s));
    let (a0, b0) = (download(&a, s), download(&b, s));
    // SAFETY (the three captures): `a` and `b` are declared before every graph and executable
    // graph, so they outlive them and their launches (each read back after it); nothing else uses
    // `s` during the captures (exclusive GPU lock).
    let ga = unsafe { capture(s, CaptureMode::Global, |cs| ordo_kernels::add_one(cs, a.as_mut_slice())) }.unwrap();
    let mut exec = ga.instantiate(InstantiateFlags::empty()).unwrap();
    // Same topology, another buffer: updates in place.
    let gb = unsafe { capture(s, CaptureMode::Global, |cs| ordo_kernels::add_one(cs, b.as_mut_slice())) }.unwrap();
    exec.update(&gb).unwrap().unwrap();
    exec.launch(s).unwrap();
    assert!(download(&a, s) == a0, "the old buffer must be untouched");
    assert!(download(&b, s) == b0.iter().map(|v| v + 1.0).collect::<Vec<_>>());
    // Two kernels instead of one: the update is refused, with the reason.
    let gc = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_kernels::add_one(cs, b.as_mut_slice())?;
            ordo_kernels::add_one(cs, b.as_mut_slice())
        })
    }
    .unwrap();
    let failure = exec.update(&gc).unwrap().unwrap_err();
    println!("update refused: {:?}: {}", failure.result, failure.reason());
    assert_eq!(failure.result, sys::cudaGraphExecUpdateResult::cudaGraphExecUpdateErrorTopologyChanged);
    // Still launchable as before.
    exec.launch(s).unwrap();
    assert!(download(&b, s) == b0.iter().map(|v| v + 2.0).collect::<Vec<_>>());
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn kernel_node_arguments_can_be_replaced_in_an_instantiated_graph() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let (mut a, mut b) = (upload(&random_f32(3000, 4), s), upload(&random_f32(5000, 5), s));
    let (a0, b0) = (download(&a, s), download(&b, s));
    // SAFETY: `a` (and `b`, which the node is pointed at below) outlive the executable graph and its
    // launch (read back after it); nothing else uses `s` during the capture (exclusive GPU lock).
    let g = unsafe { capture(s, CaptureMode::Global, |cs| ordo_kernels::heavy(cs, a.as_mut_slice())) }.unwrap();
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    let nodes = g.kernel_nodes(kernel::heavy()).unwrap();
    assert_eq!(nodes.len(), 1);
    assert!(g.kernel_nodes(kernel::add_one()).unwrap().is_empty());
    // Point the captured kernel at `b`, with its length and a grid to match.
    let config = LaunchConfig::for_elements(b.len(), 256).unwrap();
    unsafe { exec.set_kernel_node_args(nodes[0], &config, (b.as_mut_ptr(), b.len() as i32)).unwrap() };
    exec.launch(s).unwrap();
    assert!(download(&a, s) == a0);
    assert!(download(&b, s) == b0.iter().map(|&v| common::heavy_cpu(v)).collect::<Vec<_>>());
    let e = unsafe { exec.set_kernel_node_args(nodes[0], &config.with_pdl(true), (b.as_mut_ptr(), 1)) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)));
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn capture_into_an_existing_graph_and_allocation_nodes() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut x = upload(&random_f32(2048, 6), s);
    let x0 = download(&x, s);
    // SAFETY (both captures): `x` outlives the graph and the executable graph (declared before
    // them) and is read back after their launches; the temporary is the graph's own allocation
    // node; nothing else uses `s` during the captures (exclusive GPU lock).
    let mut g = unsafe { capture(s, CaptureMode::Global, |cs| ordo_kernels::add_one(cs, x.as_mut_slice())) }.unwrap();
    unsafe {
        capture_into(&mut g, s, CaptureMode::Global, |cs| {
            // A stream-ordered temporary inside the capture: an allocation node and a free node.
            let mut tmp = DeviceBuffer::<f32>::alloc_async(2048, cs)?;
            copy::d2d_async(tmp.as_mut_slice(), x.as_slice(), cs)?;
            ordo_kernels::square(cs, tmp.as_slice(), x.as_mut_slice())?;
            tmp.free_async()
        })
    }
    .unwrap();
    let kinds: Vec<NodeKind> = g.nodes().unwrap().iter().map(|n| n.kind().unwrap()).collect();
    println!("node kinds: {kinds:?}");
    for k in [NodeKind::Kernel, NodeKind::MemAlloc, NodeKind::MemFree, NodeKind::Memcpy] {
        assert!(kinds.contains(&k), "{k:?} missing from {kinds:?}");
    }
    let exec = g.instantiate(InstantiateFlags::AUTO_FREE_ON_LAUNCH).unwrap();
    exec.launch(s).unwrap();
    exec.launch(s).unwrap();
    let once = |v: f32| (v + 1.0) * (v + 1.0);
    assert!(download(&x, s) == x0.iter().map(|&v| once(once(v))).collect::<Vec<_>>());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_bucket_cache_gives_eager_results_for_random_sizes() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    const MAX: usize = 256;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    // Fixed buffers the graphs are captured over.
    let mut input = DeviceBuffer::<f32>::zeroed_async(MAX, s).unwrap();
    let mut output = DeviceBuffer::<f32>::zeroed_async(MAX, s).unwrap();
    let (inp, out) = (input.as_mut_ptr(), output.as_mut_ptr());
    // SAFETY: `input` and `output` are declared before the cache, so they outlive it and every
    // replay `run` enqueues (the stream is synchronised after each); the captures run on `s`,
    // which nothing else uses meanwhile (exclusive GPU lock). The body's views are in bounds
    // (n is at most MAX, the buffers' length).
    let mut cache = unsafe {
        GraphCache::new(ordo_core::graph_cache::default_buckets(), Overflow::Error, |cs, n| {
            let i = DeviceSliceMut::from_raw_parts(inp, n);
            let o = DeviceSliceMut::from_raw_parts(out, n);
            ordo_kernels::square(cs, i.as_slice(), o)?;
            ordo_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(out, n))
        })
    }
    .unwrap();
    let mut host_in = PinnedBuffer::<f32>::zeroed(MAX, HostAllocFlags::empty()).unwrap();
    let mut host_out = PinnedBuffer::<f32>::zeroed(MAX, HostAllocFlags::empty()).unwrap();
    let mut seed = 77u64;
    for round in 0..200 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let n = 1 + (seed >> 33) as usize % MAX;
        let data = random_f32(n, seed);
        host_in[..n].copy_from_slice(&data);
        unsafe { copy::h2d_async(input.slice_mut(..n).unwrap(), host_in.pinned_range(..n).unwrap(), s).unwrap() };
        let bucket = cache.run(s, n).unwrap();
        assert!(bucket >= n && bucket.is_power_of_two() && (bucket == 1 || bucket / 2 < n), "n {n} bucket {bucket}");
        unsafe { copy::d2h_async(host_out.pinned_range_mut(..n).unwrap(), output.slice(..n).unwrap(), s).unwrap() };
        s.synchronize().unwrap();
        let expect: Vec<f32> = data.iter().map(|v| v * v + 1.0).collect();
        assert!(host_out[..n] == expect[..], "round {round}, n {n}");
    }
    println!("bucket cache: {} of {} buckets captured lazily", cache.captured(), cache.buckets().len());
    assert!(cache.run(s, MAX + 1).is_err());
    cache.capture_all(s).unwrap();
    assert_eq!(cache.captured(), cache.buckets().len());
}

/// A cache with options: thread-local captures, a warm-up run before each capture, and
/// `capture_all` from the largest bucket to the smallest. The body counts its calls on the host
/// and adds one to the first `bucket` elements: after `capture_all` each element was added to once
/// per warm-up of a bucket that covers it (the captures themselves run nothing), and one replay
/// adds one more.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_cache_with_options_warms_up_and_captures_largest_first() {
    let _gpu = gpu_lock::shared(); // thread-local captures: other tests' calls do not disturb them
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let buckets = vec![4usize, 16, 64];
    let mut x = DeviceBuffer::<f32>::zeroed_async(64, s).unwrap();
    let xp = x.as_mut_ptr();
    let calls = std::cell::RefCell::new(Vec::new());
    let options = ordo_core::graph_cache::CacheOptions {
        mode: CaptureMode::ThreadLocal,
        warmup: true,
        instantiate: InstantiateFlags::empty(),
    };
    // SAFETY: `x` is declared before the cache, so it outlives it and every replay (synchronised
    // below); the captures run on `s`, which nothing else uses; views in bounds (n <= 64).
    let mut cache = unsafe {
        GraphCache::with_options(buckets.clone(), Overflow::Error, options, |cs, n| {
            calls.borrow_mut().push(n);
            ordo_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(xp, n))
        })
    }
    .unwrap();
    cache.capture_all(s).unwrap();
    assert_eq!(*calls.borrow(), vec![64, 64, 16, 16, 4, 4], "largest first, each warmed up then captured");
    let expect: Vec<f32> = (0..64)
        .map(|i| {
            if i < 4 {
                3.0
            } else if i < 16 {
                2.0
            } else {
                1.0
            }
        })
        .collect();
    assert_eq!(download(&x, s), expect, "one eager warm-up a bucket");
    assert_eq!(cache.run(s, 10).unwrap(), 16);
    let expect: Vec<f32> = expect.iter().enumerate().map(|(i, v)| if i < 16 { v + 1.0 } else { *v }).collect();
    assert_eq!(download(&x, s), expect, "a replay of bucket 16");
    assert_eq!(calls.borrow().len(), 6, "replays call no body");
}
