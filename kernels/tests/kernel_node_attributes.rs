//! Launch attributes on kernel nodes added by hand and on executable graphs' kernel nodes: each
//! attribute CUDA keeps on a node is on it (read back with `cudaGraphKernelNodeGetAttribute`), a
//! cooperative node's grid is checked as `Kernel::launch` checks it, the attributes CUDA keeps
//! only for launches are refused by name and leave no node behind, and new arguments for an
//! executable graph's node are checked against the node's own attributes. Results of the graphs
//! that run are checked against the CPU.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, ConditionalKind, InstantiateFlags, Node};
use ordo_cuda_core::launch::{LaunchConfig, MemSyncDomain};
use ordo_cuda_core::*;
use ordo_cuda_kernels::kernel;

mod common;
use common::{download, upload, Rng};

type Id = sys::cudaLaunchAttributeID;

/// The value of attribute `id` on kernel node `node`.
fn attribute(node: Node<'_>, id: Id) -> sys::cudaLaunchAttributeValue {
    let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
    // SAFETY: a live kernel node; `val` is writable.
    let code = unsafe { sys::cudaGraphKernelNodeGetAttribute(node.as_raw(), id, &mut val) };
    assert_eq!(code, sys::cudaError::cudaSuccess, "cudaGraphKernelNodeGetAttribute({id:?})");
    val
}

fn cooperative(node: Node<'_>) -> i32 {
    // SAFETY: the member the cooperative id fills.
    unsafe { attribute(node, Id::cudaLaunchAttributeCooperative).cooperative }
}

/// Blocks of 256 threads of `ordok_grid_sum` that the current device holds at once.
fn one_wave() -> u32 {
    let per_sm = kernel::grid_sum().max_active_blocks_per_sm(256, 0).unwrap();
    per_sm * Device::current().unwrap().sm_count().unwrap()
}

/// A cooperative node: the attribute is on it, and the graph's grid-wide sync gives the exact
/// sum (small integers: no rounding); a grid larger than the device holds at once is refused
/// before CUDA, as `Kernel::launch` refuses it, and leaves no node. Without the attribute carried
/// over, the node read back cooperative 0, and the oversized grid was added unchecked.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_cooperative_node_keeps_the_attribute_and_the_launchs_check() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 1 << 20;
    let x: Vec<f32> = (0..N).map(|i| (i % 5) as f32).collect();
    let expect = x.iter().map(|&v| v as u64).sum::<u64>() as f32;
    let dx = upload(&x, s);
    let wave = one_wave();
    let mut partial = DeviceBuffer::<f32>::zeroed_async(wave as usize + 1, s).unwrap();
    let mut out = upload(&[f32::NAN], s);
    let g = Graph::new().unwrap();
    let args = (dx.as_ptr(), partial.as_mut_ptr(), out.as_mut_ptr(), N as i32);
    let too_many = LaunchConfig::new(wave + 1, 256).with_cooperative(true);
    // SAFETY: refused before CUDA: nothing is added.
    let e = unsafe { g.add_kernel_node(&[], kernel::grid_sum(), &too_many, args) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)) && e.to_string().contains("cooperative grid larger"), "{e}");
    assert_eq!(g.node_count().unwrap(), 0, "no node left behind");
    // SAFETY: the buffers hold what the kernel touches and outlive the graph's launch below.
    let node = unsafe {
        g.add_kernel_node(&[], kernel::grid_sum(), &LaunchConfig::new(wave, 256).with_cooperative(true), args)
    }
    .unwrap();
    assert_eq!(cooperative(node), 1, "the node is cooperative");
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert_eq!(download(&out, s), vec![expect]);
    drop(partial);
    s.synchronize().unwrap();
}

/// Priority, memory-synchronisation domain and cluster dimensions are on the node as asked (a
/// cluster of 2 on sm_90 and later); the node's kernel computes the right values. Without the
/// attributes carried over, the domain read back Default and priority and cluster were refused.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn node_attributes_are_on_the_node() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 65_536;
    let x = Rng(0x0a77_0000_0000_0001).f32s(n, -5.0, 5.0);
    let mut d = upload(&x, s);
    // The greatest priority, so that the value read back is not the default (0).
    let (_least, greatest) = Device::current().unwrap().stream_priority_range().unwrap();
    let mut config = LaunchConfig::for_elements(n, 256).unwrap().with_priority(greatest);
    config = config.with_mem_sync_domain(MemSyncDomain::Remote);
    let clusters = Device::current().unwrap().compute_capability().unwrap().0 >= 9;
    if clusters {
        config = config.with_cluster(2);
    }
    let g = Graph::new().unwrap();
    // SAFETY: `d` holds n floats and outlives the graph's launch below.
    let node = unsafe { g.add_kernel_node(&[], kernel::add_one(), &config, (d.as_mut_ptr(), n as i32)) }.unwrap();
    // SAFETY: the members the ids fill.
    unsafe {
        assert_eq!(attribute(node, Id::cudaLaunchAttributePriority).priority, greatest);
        assert_eq!(
            attribute(node, Id::cudaLaunchAttributeMemSyncDomain).memSyncDomain,
            sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote
        );
        if clusters {
            let c = attribute(node, Id::cudaLaunchAttributeClusterDimension).clusterDim;
            assert_eq!((c.x, c.y, c.z), (2, 1, 1));
        }
    }
    assert_eq!(cooperative(node), 0);
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert!(download(&d, s) == x.iter().map(|v| v + 1.0).collect::<Vec<_>>());
}

/// Nodes in `graph` (a graph or a conditional node's body).
fn node_count(graph: sys::cudaGraph_t) -> usize {
    let mut n = 0usize;
    // SAFETY: a live graph; a null array asks for the count.
    let code = unsafe { sys::cudaGraphGetNodes(graph, core::ptr::null_mut(), &mut n) };
    assert_eq!(code, sys::cudaError::cudaSuccess);
    n
}

/// PDL and the two events are for launches only: refused with an error naming them, by
/// `Graph::add_kernel_node` and by `BodyGraph::add_kernel_node`, leaving no node. A body's node
/// gets its attributes too (or, where CUDA refuses one in a body, CUDA's error and no node).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn launch_only_attributes_are_refused_by_name() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut d = upload(&[1.0f32; 256], s);
    let event = Event::new().unwrap();
    let base = LaunchConfig::new(1, 256);
    let g = Graph::new().unwrap();
    let handle = g.conditional_handle(Some(1)).unwrap();
    let (_, bodies) = g.add_conditional_node(&[], handle, ConditionalKind::If).unwrap();
    let body = bodies.get(0).unwrap();
    let before = g.node_count().unwrap();
    for (config, name) in [
        (base.with_pdl(true), "cudaLaunchAttributeProgrammaticStreamSerialization"),
        (base.with_programmatic_event(&event, true), "cudaLaunchAttributeProgrammaticEvent"),
        (base.with_launch_completion_event(&event), "cudaLaunchAttributeLaunchCompletionEvent"),
    ] {
        // SAFETY: refused before CUDA: nothing is added.
        let e = unsafe { g.add_kernel_node(&[], kernel::add_one(), &config, (d.as_mut_ptr(), 256)) }.unwrap_err();
        assert!(matches!(e, Error::Usage(_)) && e.to_string().contains(name), "{e}");
        // SAFETY: as above.
        let e = unsafe { body.add_kernel_node(&[], kernel::add_one(), &config, (d.as_mut_ptr(), 256)) }.unwrap_err();
        assert!(matches!(e, Error::Usage(_)) && e.to_string().contains(name), "{e}");
    }
    assert_eq!(g.node_count().unwrap(), before);
    assert_eq!(node_count(body.as_raw()), 0, "no node left in the body");
    let remote = base.with_mem_sync_domain(MemSyncDomain::Remote);
    // SAFETY: `d` holds 256 floats and outlives the graph's launch below.
    match unsafe { body.add_kernel_node(&[], kernel::add_one(), &remote, (d.as_mut_ptr(), 256)) } {
        Ok(node) => {
            // SAFETY: the member the id fills.
            let domain = unsafe { attribute(node, Id::cudaLaunchAttributeMemSyncDomain).memSyncDomain };
            assert_eq!(domain, sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote);
        }
        Err(e) => {
            println!("CUDA refuses the domain on a body's node: {e}");
            assert!(matches!(e, Error::Cuda(_)), "{e}");
            assert_eq!(node_count(body.as_raw()), 0, "the node was taken out again");
            // SAFETY: as above.
            unsafe { body.add_kernel_node(&[], kernel::add_one(), &base, (d.as_mut_ptr(), 256)) }.unwrap();
        }
    }
    assert_eq!(node_count(body.as_raw()), 1);
    g.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    assert_eq!(download(&d, s), vec![2.0f32; 256], "the IF body ran once (condition 1)");
}

/// An executable graph's captured cooperative node: new arguments come with a configuration that
/// sets no attribute (a cooperative one is refused by name), and a new grid larger than the
/// device holds at once is refused, since the node stays cooperative. A grid that fits runs and
/// sums right. Before, the oversized grid was handed to CUDA unchecked.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn new_arguments_for_a_cooperative_node_are_checked_against_it() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 1 << 18;
    let x: Vec<f32> = (0..N).map(|i| (i % 3) as f32).collect();
    let expect = x.iter().map(|&v| v as u64).sum::<u64>() as f32;
    let dx = upload(&x, s);
    let wave = one_wave();
    let mut partial = DeviceBuffer::<f32>::zeroed_async(wave as usize + 1, s).unwrap();
    let mut out = upload(&[f32::NAN], s);
    let mut out2 = upload(&[f32::NAN], s);
    let coop = LaunchConfig::new(wave / 2, 256).with_cooperative(true);
    let args = (dx.as_ptr(), partial.as_mut_ptr(), out.as_mut_ptr(), N as i32);
    // SAFETY: the buffers outlive the executable graph's launches; nothing else uses `s` during
    // the capture.
    let g = unsafe { capture(s, CaptureMode::ThreadLocal, |cs| kernel::grid_sum().launch(cs, &coop, args)) }.unwrap();
    let nodes = g.kernel_nodes(kernel::grid_sum()).unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(cooperative(nodes[0].node()), 1, "captured cooperative");
    let mut exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    let args2 = (dx.as_ptr(), partial.as_mut_ptr(), out2.as_mut_ptr(), N as i32);
    // SAFETY (each call): refused before CUDA, or the buffers outlive the launches below.
    let e = unsafe { exec.set_kernel_node_args(nodes[0], &coop, args2) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)) && e.to_string().contains("cudaLaunchAttributeCooperative"), "{e}");
    let e = unsafe { exec.set_kernel_node_args(nodes[0], &LaunchConfig::new(wave + 1, 256), args2) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)) && e.to_string().contains("cooperative grid larger"), "{e}");
    unsafe { exec.set_kernel_node_args(nodes[0], &LaunchConfig::new(wave, 256), args2) }.unwrap();
    exec.launch(s).unwrap();
    assert_eq!(download(&out2, s), vec![expect], "the new grid and output");
    assert!(download(&out, s)[0].is_nan(), "the old output untouched");
    drop(exec);
    drop(partial);
    s.synchronize().unwrap();
}
