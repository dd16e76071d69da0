//! GPU tests of graphs: the source's 200-kernel program eager against graph, exec update (success
//! and a reported failure), kernel-node argument updates, capture into an existing graph, node
//! kinds including allocation nodes, the bucket cache against eager on random sizes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, capture_into, CaptureMode, InstantiateFlags, NodeKind, UpdateOutcome};
use ordo_cuda_core::graph_cache::{GraphCache, Overflow};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_kernels::kernel;

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
        unsafe { ordo_cuda_kernels::add_one(s, eager.as_mut_slice()).unwrap() };
    }
    // SAFETY: `graphed` outlives the executable graph (declared before it) and is read back after
    // its launch; nothing else uses `s` during the capture (exclusive GPU lock).
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            (0..200).try_for_each(|_| ordo_cuda_kernels::add_one(cs, graphed.as_mut_slice()))
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
    let ga = unsafe { capture(s, CaptureMode::Global, |cs| ordo_cuda_kernels::add_one(cs, a.as_mut_slice())) }.unwrap();
    let mut exec = ga.instantiate(InstantiateFlags::empty()).unwrap();
    // Same topology, another buffer: updates in place.
    let gb = unsafe { capture(s, CaptureMode::Global, |cs| ordo_cuda_kernels::add_one(cs, b.as_mut_slice())) }.unwrap();
    assert_eq!(exec.update(&gb).unwrap(), UpdateOutcome::Updated);
    exec.launch(s).unwrap();
    assert!(download(&a, s) == a0, "the old buffer must be untouched");
    assert!(download(&b, s) == b0.iter().map(|v| v + 1.0).collect::<Vec<_>>());
    // Two kernels instead of one: the update is refused, with the reason.
    let gc = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_cuda_kernels::add_one(cs, b.as_mut_slice())?;
            ordo_cuda_kernels::add_one(cs, b.as_mut_slice())
        })
    }
    .unwrap();
    let outcome = exec.update(&gc).unwrap();
    println!("update refused: {outcome:?}: {}", outcome.reason());
    assert_eq!(outcome, UpdateOutcome::TopologyChanged);
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
    let g = unsafe { capture(s, CaptureMode::Global, |cs| ordo_cuda_kernels::heavy(cs, a.as_mut_slice())) }.unwrap();
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
    let mut g =
        unsafe { capture(s, CaptureMode::Global, |cs| ordo_cuda_kernels::add_one(cs, x.as_mut_slice())) }.unwrap();
    unsafe {
        capture_into(&mut g, s, CaptureMode::Global, |cs| {
            // A stream-ordered temporary inside the capture: an allocation node and a free node.
            let mut tmp = DeviceBuffer::<f32>::alloc_async(2048, cs)?;
            copy::d2d_async(tmp.as_mut_slice(), x.as_slice(), cs)?;
            ordo_cuda_kernels::square(cs, tmp.as_slice(), x.as_mut_slice())?;
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
        GraphCache::new(ordo_cuda_core::graph_cache::default_buckets(), Overflow::Error, |cs, n| {
            let i = DeviceSliceMut::from_raw_parts(inp, n);
            let o = DeviceSliceMut::from_raw_parts(out, n);
            ordo_cuda_kernels::square(cs, i.as_slice(), o)?;
            ordo_cuda_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(out, n))
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
    let options = ordo_cuda_core::graph_cache::CacheOptions {
        mode: CaptureMode::ThreadLocal,
        warmup: true,
        instantiate: InstantiateFlags::empty(),
        // Uploaded at capture (not the default): the replays below run the uploaded graphs.
        upload: true,
    };
    // SAFETY: `x` is declared before the cache, so it outlives it and every replay (synchronised
    // below); the captures run on `s`, which nothing else uses; views in bounds (n <= 64).
    let mut cache = unsafe {
        GraphCache::with_options(buckets.clone(), Overflow::Error, options, |cs, n| {
            calls.borrow_mut().push(n);
            ordo_cuda_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(xp, n))
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

/// `(v + 1)^2` for each element: what `add_one` then `square` leave (the same two f32 operations).
fn add_one_squared(x: &[f32]) -> Vec<f32> {
    x.iter().map(|v| (v + 1.0) * (v + 1.0)).collect()
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_captured_frame_is_replayed_for_other_host_and_device_buffers_by_retargeting_its_nodes() {
    use ordo_cuda_core::graph::NodeKind;
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 5000;
    let input = [random_f32(n, 21), random_f32(n, 22)];
    let host_in = [PinnedBuffer::from_slice(&input[0]).unwrap(), PinnedBuffer::from_slice(&input[1]).unwrap()];
    let poison = vec![common::POISON; n];
    let mut host_out = [PinnedBuffer::from_slice(&poison).unwrap(), PinnedBuffer::from_slice(&poison).unwrap()];
    let mut dev_in = [common::poisoned(n, s), common::poisoned(n, s)];
    let mut dev_out = [common::poisoned(n, s), common::poisoned(n, s)];
    // One frame: copy in, add_one, square, copy out, captured with the buffers of frame 0.
    // SAFETY: every buffer is declared before the graph and the executable graph, so it outlives
    // them and their launches (each synchronised before the buffers are read); nothing else uses
    // `s` during the capture (exclusive GPU lock).
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            copy::h2d_async(dev_in[0].as_mut_slice(), host_in[0].pinned(), cs)?;
            ordo_cuda_kernels::add_one(cs, dev_in[0].as_mut_slice())?;
            ordo_cuda_kernels::square(cs, dev_in[0].as_slice(), dev_out[0].as_mut_slice())?;
            copy::d2h_async(host_out[0].pinned_mut(), dev_out[0].as_slice(), cs)
        })
    }
    .unwrap();
    assert_eq!(g.node_count().unwrap(), 4);
    // The copy nodes as captured: the copy in is the graph's only root.
    let copies = g.memcpy_nodes().unwrap();
    assert_eq!(copies.len(), 2);
    let copy_in = *copies.iter().find(|c| c.copy().src == host_in[0].as_ptr().cast()).unwrap();
    let copy_out = *copies.iter().find(|c| c.copy().dst == host_out[0].as_mut_ptr().cast()).unwrap();
    assert_eq!(copy_in.copy().dst, dev_in[0].as_mut_ptr().cast());
    assert_eq!(copy_out.copy().src, dev_out[0].as_ptr().cast());
    assert_eq!((copy_in.copy().bytes, copy_out.copy().bytes), (n * 4, n * 4));
    let roots = g.root_nodes().unwrap();
    assert_eq!(roots, vec![copy_in.node()]);
    assert_eq!(roots[0].kind().unwrap(), NodeKind::Memcpy);
    let add = g.kernel_nodes(kernel::add_one()).unwrap()[0];
    let sq = g.kernel_nodes(kernel::square()).unwrap()[0];
    let config = LaunchConfig::for_elements(n, ordo_cuda_kernels::BLOCK).unwrap();
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    // Frame 1 first (every node retargeted), then frame 0 (back to the captured buffers).
    for k in [1, 0] {
        // SAFETY: as for the capture: the buffers outlive the executable graph and its launches.
        unsafe {
            exec.set_memcpy_node(copy_in, dev_in[k].as_mut_ptr(), host_in[k].as_ptr(), n).unwrap();
            exec.set_kernel_node_args(add, &config, (dev_in[k].as_mut_ptr(), n as i32)).unwrap();
            exec.set_kernel_node_args(sq, &config, (dev_in[k].as_ptr(), dev_out[k].as_mut_ptr(), n as i32)).unwrap();
            exec.set_memcpy_node(copy_out, host_out[k].as_mut_ptr(), dev_out[k].as_ptr(), n).unwrap();
        }
        exec.launch(s).unwrap();
        stream.synchronize().unwrap();
        assert!(host_out[k][..] == add_one_squared(&input[k])[..], "frame {k}");
        if k == 1 {
            // Frame 0's buffers were not touched by frame 1's replay.
            assert!(host_out[0].iter().all(|v| v.is_nan()), "frame 1 wrote frame 0's host output");
            assert!(download(&dev_out[0], s).iter().all(|v| v.is_nan()), "frame 1 wrote frame 0's device output");
        }
    }
    assert!(host_out[1][..] == add_one_squared(&input[1])[..], "frame 0 overwrote frame 1's output");
    // A zero-length copy is refused by ordo before CUDA.
    // SAFETY: refused before anything is set.
    let e = unsafe { exec.set_memcpy_node(copy_in, dev_in[0].as_mut_ptr(), host_in[0].as_ptr(), 0) }.unwrap_err();
    assert!(e.to_string().contains("empty copy"), "{e}");
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_captured_memset_is_pointed_at_another_buffer_with_another_value() {
    use ordo_cuda_core::graph::MemsetParams;
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 3000;
    let (mut a, mut b) = (common::poisoned(n, s), common::poisoned(n, s));
    // SAFETY: `a` and `b` are declared before the graph and the executable graph, so they outlive
    // them and their launches (read back after each); nothing else uses `s` during the capture.
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            copy::memset_async(a.as_mut_slice(), 0x3f, cs)?;
            ordo_cuda_kernels::add_one(cs, a.as_mut_slice())
        })
    }
    .unwrap();
    let memset = g.root_nodes().unwrap()[0];
    assert_eq!(g.root_nodes().unwrap().len(), 1);
    assert_eq!(memset.kind().unwrap(), NodeKind::Memset);
    let p = memset.memset_params().unwrap();
    assert_eq!(p.dst, a.as_mut_ptr().cast());
    assert_eq!(p.element_size as usize * p.width * p.height, n * 4);
    // CUDA may store the byte memset with wider elements: the value repeats the byte.
    let pattern = |byte: u32| match p.element_size {
        1 => byte,
        2 => byte * 0x0101,
        _ => byte * 0x0101_0101,
    };
    assert_eq!(p.value, pattern(0x3f));
    let add = g.kernel_nodes(kernel::add_one()).unwrap()[0];
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&a, s) == vec![f32::from_bits(0x3f3f_3f3f) + 1.0; n]);
    copy::h2d_blocking(a.as_mut_slice(), &vec![5.0; n], s).unwrap();
    let config = LaunchConfig::for_elements(n, ordo_cuda_kernels::BLOCK).unwrap();
    // SAFETY: as for the capture.
    unsafe {
        exec.set_memset_node(memset, &MemsetParams { dst: b.as_mut_ptr().cast(), value: pattern(0x40), ..p }).unwrap();
        exec.set_kernel_node_args(add, &config, (b.as_mut_ptr(), n as i32)).unwrap();
    }
    exec.launch(s).unwrap();
    assert!(download(&b, s) == vec![f32::from_bits(0x4040_4040) + 1.0; n]);
    assert!(download(&a, s) == vec![5.0; n], "the old destination must be untouched");
    // The graph's own node is unchanged.
    assert_eq!(memset.memset_params().unwrap(), p);
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_disabled_kernel_node_is_skipped_until_enabled_again() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 2048;
    let x0 = random_f32(n, 31);
    let (mut x, mut y) = (upload(&x0, s), common::poisoned(n, s));
    // SAFETY: `x` and `y` outlive the graph and the executable graph (declared before them) and
    // are read back after each launch; nothing else uses `s` during the capture.
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_cuda_kernels::add_one(cs, x.as_mut_slice())?;
            ordo_cuda_kernels::square(cs, x.as_slice(), y.as_mut_slice())
        })
    }
    .unwrap();
    let add = g.kernel_nodes(kernel::add_one()).unwrap()[0].node();
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    assert!(exec.node_enabled(add).unwrap());
    exec.set_node_enabled(add, false).unwrap();
    assert!(!exec.node_enabled(add).unwrap());
    exec.launch(s).unwrap();
    assert!(download(&x, s) == x0, "the disabled add_one ran");
    assert!(download(&y, s) == x0.iter().map(|v| v * v).collect::<Vec<_>>());
    exec.set_node_enabled(add, true).unwrap();
    assert!(exec.node_enabled(add).unwrap());
    exec.launch(s).unwrap();
    assert!(download(&x, s) == x0.iter().map(|v| v + 1.0).collect::<Vec<_>>());
    assert!(download(&y, s) == add_one_squared(&x0));
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_device_launchable_graph_reports_its_flag_and_replays_from_the_host() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 4096;
    let x0 = random_f32(n, 41);
    let (mut x, mut y) = (upload(&x0, s), common::poisoned(n, s));
    // SAFETY: as in the test above.
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_cuda_kernels::add_one(cs, x.as_mut_slice())?;
            ordo_cuda_kernels::square(cs, x.as_slice(), y.as_mut_slice())
        })
    }
    .unwrap();
    // A host-launch instantiation does not report DEVICE_LAUNCH. (What CUDA reports for one made
    // with USE_NODE_PRIORITY alone is printed, not asserted: CB-18.)
    let plain = g.instantiate(InstantiateFlags::USE_NODE_PRIORITY).unwrap();
    let reported = plain.flags().unwrap();
    println!("USE_NODE_PRIORITY instantiation reports {reported:?}");
    assert!(!reported.contains(InstantiateFlags::DEVICE_LAUNCH));
    drop(plain);
    let exec = g.instantiate(InstantiateFlags::DEVICE_LAUNCH).unwrap();
    assert!(exec.flags().unwrap().contains(InstantiateFlags::DEVICE_LAUNCH));
    exec.upload(s).unwrap(); // what a launch from the device needs first
    exec.launch(s).unwrap();
    exec.launch(s).unwrap();
    let x2: Vec<f32> = x0.iter().map(|v| v + 1.0 + 1.0).collect();
    assert!(download(&x, s) == x2);
    assert!(download(&y, s) == x2.iter().map(|v| v * v).collect::<Vec<_>>());
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_while_node_runs_its_body_until_the_countdown_kernel_sets_the_condition_to_zero() {
    let _gpu = gpu_lock::shared(); // no capture here; other tests capture in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 1000;
    let x0 = random_f32(n, 51);
    let mut x = upload(&x0, s);
    let mut counter = upload(&[7u32], s);
    let g = Graph::new().unwrap();
    // The condition starts at 1 at every launch; the body (add_one, then countdown) runs while it
    // is non-zero, and countdown sets it to 0 when the counter reaches 0.
    let condition = g.conditional_handle(Some(1)).unwrap();
    let (node, body) = g.add_while_node(&[], condition).unwrap();
    assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
    assert_eq!(g.root_nodes().unwrap(), vec![node]);
    let config = LaunchConfig::for_elements(n, ordo_cuda_kernels::BLOCK).unwrap();
    // SAFETY: `x` and `counter` are declared before the graph and the executable graph, so they
    // outlive them and their launches (each read back after it); countdown runs on one thread,
    // the only writer of the condition.
    unsafe {
        let add = body.add_kernel_node(&[], kernel::add_one(), &config, (x.as_mut_ptr(), n as i32)).unwrap();
        let step = (condition, counter.as_mut_ptr());
        body.add_kernel_node(&[add], kernel::countdown(), &LaunchConfig::new(1, 1), step).unwrap();
    }
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    let plus = |k: usize| -> Vec<f32> { x0.iter().map(|v| (0..k).fold(*v, |v, _| v + 1.0)).collect() };
    exec.launch(s).unwrap();
    assert_eq!(download(&counter, s), vec![0], "the loop stopped before the counter reached 0");
    assert!(download(&x, s) == plus(7), "the body did not run exactly 7 times");
    // Replayed with another count: the default value restarts the loop at each launch.
    copy::h2d_blocking(counter.as_mut_slice(), &[3], s).unwrap();
    exec.launch(s).unwrap();
    assert_eq!(download(&counter, s), vec![0]);
    assert!(download(&x, s) == plus(10), "the second launch did not run the body exactly 3 times");
    error::peek_last_error().unwrap();
}
