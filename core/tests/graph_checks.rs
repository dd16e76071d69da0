//! Graph caches' buckets, instantiation flags, copy and update parameters, and conditional nodes,
//! checked before CUDA (or returning `Err` without a driver).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::*;

#[test]
fn bucket_round_up_and_its_edges() {
    use ordo_cuda_core::graph_cache::{bucket_index, default_buckets, GraphCache, Overflow};
    // SAFETY: used on this thread only, with the current device unchanged.
    let per_thread = unsafe { StreamRef::per_thread_default() };
    let b = default_buckets();
    assert_eq!(b, vec![1, 2, 4, 8, 16, 32, 64, 128, 256]);
    assert_eq!(bucket_index(&b, 0), Some(0));
    assert_eq!(bucket_index(&b, 1), Some(0));
    assert_eq!(bucket_index(&b, 2), Some(1));
    assert_eq!(bucket_index(&b, 3), Some(2));
    assert_eq!(bucket_index(&b, 5), Some(3));
    assert_eq!(bucket_index(&b, 129), Some(8));
    assert_eq!(bucket_index(&b, 256), Some(8));
    assert_eq!(bucket_index(&b, 257), None);
    assert_eq!(bucket_index(&b, usize::MAX), None);
    let odd = [3, 10, 1000];
    assert_eq!(bucket_index(&odd, 4), Some(1));
    assert_eq!(bucket_index(&odd, 11), Some(2));
    let body = |_: StreamRef<'_>, _: usize| -> Result<()> { Ok(()) };
    // SAFETY (every cache below): the bodies enqueue nothing, so a capture of them would use no
    // memory or handle; and no capture happens (bad buckets, a size over the largest bucket, the
    // eager overflow path).
    let new = |buckets, overflow| unsafe { GraphCache::new(buckets, overflow, body) };
    assert!(new(vec![], Overflow::Error).is_err());
    assert!(new(vec![0, 4], Overflow::Error).is_err());
    assert!(new(vec![4, 4], Overflow::Error).is_err());
    assert!(new(vec![8, 4], Overflow::Error).is_err());
    let mut cache = new(vec![4, 8], Overflow::Error).unwrap();
    assert_eq!(cache.bucket_for(5), Some(8));
    assert_eq!(cache.bucket_for(9), None);
    let e = cache.run(per_thread, 9).unwrap_err();
    assert!(e.to_string().contains("largest bucket"), "{e}");
    let mut calls = Vec::new();
    // SAFETY: as above.
    let mut eager = unsafe {
        GraphCache::new(vec![4], Overflow::Eager, |_: StreamRef<'_>, n: usize| {
            calls.push(n);
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(eager.run(per_thread, 100).unwrap(), 100);
    assert_eq!(eager.captured(), 0);
    drop(eager);
    assert_eq!(calls, vec![100]);
    // The table lookup agrees with the binary search, for tabled and searched bucket lists, at
    // every size up to past the largest bucket.
    for buckets in [default_buckets(), vec![1], vec![3, 10, 1000], vec![7, 1 << 16], vec![5, (1 << 16) + 1]] {
        let largest = *buckets.last().unwrap();
        let cache = new(buckets.clone(), Overflow::Error).unwrap();
        let sizes = (0..=largest.min(5000) + 2).chain([largest - 1, largest, largest + 1, usize::MAX]);
        for n in sizes {
            assert_eq!(cache.bucket_for(n), bucket_index(&buckets, n).map(|i| buckets[i]), "{buckets:?} n {n}");
        }
    }
    // SAFETY: as above.
    let options =
        graph_cache::CacheOptions { mode: graph::CaptureMode::ThreadLocal, warmup: true, ..Default::default() };
    let cache = unsafe { GraphCache::with_options(vec![2, 4], Overflow::Error, options, body) }.unwrap();
    assert_eq!(cache.options(), options);
}

#[test]
fn upload_at_instantiation_needs_a_stream() {
    use ordo_cuda_core::graph::InstantiateFlags;
    // Refused before CUDA is reached: the flag needs the stream that instantiate_and_upload takes.
    if let Ok(g) = Graph::new() {
        let e = g.instantiate(InstantiateFlags::UPLOAD).unwrap_err();
        assert!(e.to_string().contains("instantiate_and_upload"), "{e}");
    } else {
        // Without a driver even an empty graph cannot be made; the check is the same code path.
        assert!(Graph::new().unwrap_err().cuda().unwrap().is_no_driver());
    }
}

#[test]
fn instantiate_flags_are_the_headers_values() {
    use ordo_cuda_core::graph::InstantiateFlags;
    let text = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
    let value = |name: &str| -> u64 {
        let at = text.find(&format!("{name} ")).unwrap() + name.len();
        let rest = text[at..].trim_start().strip_prefix('=').unwrap().trim_start();
        rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
    };
    assert_eq!(InstantiateFlags::AUTO_FREE_ON_LAUNCH.bits(), value("cudaGraphInstantiateFlagAutoFreeOnLaunch"));
    assert_eq!(InstantiateFlags::UPLOAD.bits(), value("cudaGraphInstantiateFlagUpload"));
    assert_eq!(InstantiateFlags::DEVICE_LAUNCH.bits(), value("cudaGraphInstantiateFlagDeviceLaunch"));
    assert_eq!(InstantiateFlags::USE_NODE_PRIORITY.bits(), value("cudaGraphInstantiateFlagUseNodePriority"));
}

#[test]
fn device_launch_with_auto_free_is_refused_before_cuda() {
    use ordo_cuda_core::graph::InstantiateFlags;
    let both = InstantiateFlags::DEVICE_LAUNCH | InstantiateFlags::AUTO_FREE_ON_LAUNCH;
    if let Ok(g) = Graph::new() {
        let e = g.instantiate(both).unwrap_err();
        assert!(e.to_string().contains("AUTO_FREE_ON_LAUNCH"), "{e}");
    } else {
        // Without a driver even an empty graph cannot be made; the check is in-crate tested too.
        assert!(Graph::new().unwrap_err().cuda().unwrap().is_no_driver());
    }
}

#[test]
fn a_captured_one_dimensional_copy_reads_as_a_linear_copy() {
    use ordo_cuda_core::graph::LinearCopy;
    use ordo_cuda_sys as sys;
    let (mut src, mut dst) = ([1u8; 64], [2u8; 64]);
    // The form CUDA stores for a captured `cudaMemcpyAsync` of 48 bytes at offsets 8 and 16.
    let p = sys::cudaMemcpy3DParms {
        srcPtr: sys::cudaPitchedPtr { ptr: src.as_mut_ptr().cast(), pitch: 64, xsize: 64, ysize: 1 },
        dstPtr: sys::cudaPitchedPtr { ptr: dst.as_mut_ptr().cast(), pitch: 64, xsize: 64, ysize: 1 },
        srcPos: sys::cudaPos { x: 8, y: 0, z: 0 },
        dstPos: sys::cudaPos { x: 16, y: 0, z: 0 },
        extent: sys::cudaExtent { width: 48, height: 1, depth: 1 },
        kind: sys::cudaMemcpyKind::cudaMemcpyHostToDevice,
        ..Default::default()
    };
    let c = LinearCopy::from_params(&p).unwrap();
    assert_eq!(c.src, src[8..].as_ptr().cast());
    assert_eq!(c.dst, dst[16..].as_mut_ptr().cast());
    assert_eq!((c.bytes, c.kind), (48, sys::cudaMemcpyKind::cudaMemcpyHostToDevice));
    // Two rows, a row offset, an array, or nothing at all: not linear.
    let mut rows = p;
    rows.extent.height = 2;
    let mut offset = p;
    offset.dstPos.y = 1;
    let mut array = p;
    array.srcArray = 8 as sys::cudaArray_t;
    let mut empty = p;
    empty.extent.width = 0;
    for q in [rows, offset, array, empty] {
        assert_eq!(LinearCopy::from_params(&q), None);
    }
}

#[test]
fn update_outcomes_name_each_refused_change() {
    use ordo_cuda_core::graph::{UpdateNodes, UpdateOutcome};
    use ordo_cuda_sys as sys;
    use sys::cudaGraphExecUpdateResult as R;
    let (node, from) = (16 as sys::cudaGraphNode_t, 32 as sys::cudaGraphNode_t);
    let nodes = UpdateNodes { node, from_node: from };
    let outcome = |result| {
        UpdateOutcome::from_info(&sys::cudaGraphExecUpdateResultInfo { result, errorNode: node, errorFromNode: from })
    };
    assert_eq!(outcome(R::cudaGraphExecUpdateSuccess), UpdateOutcome::Updated);
    assert!(outcome(R::cudaGraphExecUpdateSuccess).is_updated());
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorTopologyChanged), UpdateOutcome::TopologyChanged);
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorNodeTypeChanged), UpdateOutcome::NodeTypeChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorFunctionChanged), UpdateOutcome::FunctionChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorParametersChanged), UpdateOutcome::ParametersChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorNotSupported), UpdateOutcome::NotSupported(nodes));
    assert_eq!(
        outcome(R::cudaGraphExecUpdateErrorUnsupportedFunctionChange),
        UpdateOutcome::UnsupportedFunctionChange(nodes)
    );
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorAttributesChanged), UpdateOutcome::AttributesChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateError), UpdateOutcome::Other(R::cudaGraphExecUpdateError, nodes));
    assert_eq!(outcome(R(999)), UpdateOutcome::Other(R(999), nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorParametersChanged).nodes(), Some(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorTopologyChanged).nodes(), None);
    assert!(!outcome(R::cudaGraphExecUpdateErrorTopologyChanged).reason().is_empty());
}

#[test]
fn a_conditional_handle_is_passed_to_kernels_as_cudas_64_bit_handle() {
    use ordo_cuda_core::graph::ConditionalHandle;
    use ordo_cuda_sys as sys;
    // `ordo_conditional_handle` in include/ordo/graph.cuh: the kernel parameter is 8 bytes.
    assert_eq!(std::mem::size_of::<ConditionalHandle>(), std::mem::size_of::<sys::cudaGraphConditionalHandle>());
    assert_eq!(std::mem::size_of::<ConditionalHandle>(), 8);
    assert_eq!(std::mem::align_of::<ConditionalHandle>(), 8);
}

#[test]
fn while_nodes_return_err_without_a_driver() {
    // With a driver and no device, or no driver at all, making a graph fails; with a device the
    // WHILE node is made (its GPU test runs it).
    match Graph::new() {
        Ok(g) => {
            let c = g.conditional_handle(Some(1)).unwrap();
            let (node, _body) = g.add_while_node(&[], c).unwrap();
            assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
            assert_eq!(g.root_nodes().unwrap(), vec![node]);
        }
        Err(e) => assert!(e.cuda().is_some(), "{e}"),
    }
}

#[test]
fn conditional_nodes_refuse_bad_kinds_before_cuda() {
    use ordo_cuda_core::graph::ConditionalKind;
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    let usage = |e: Error, kind: UsageKind, what: &str| {
        assert!(matches!(e, Error::Usage(UsageError { kind: k, .. }) if k == kind), "{e:?}");
        assert!(e.to_string().contains(what), "{e} lacks {what}");
    };
    let e = s.capture_conditional(ConditionalKind::Switch { cases: 0 }, None, |_, _| Ok(())).unwrap_err();
    usage(e, UsageKind::InvalidArgument, "at least one case");
    if !cfg!(cuda_12_8) {
        for kind in [ConditionalKind::IfElse, ConditionalKind::Switch { cases: 3 }] {
            let e = s.capture_conditional(kind, None, |_, _| Ok(())).unwrap_err();
            usage(e, UsageKind::NotSupported, "12.8");
        }
    }
    // A good kind on a stream that is not capturing: refused (CUDA's error without a driver or a
    // device), and the function is not called.
    let e = s
        .capture_conditional(ConditionalKind::While, Some(1), |_, _| -> Result<()> {
            panic!("called outside a capture")
        })
        .unwrap_err();
    match e {
        Error::Usage(_) => usage(e, UsageKind::InvalidArgument, "not capturing"),
        Error::Cuda(_) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn conditional_nodes_have_their_bodies_or_return_err_without_a_driver() {
    use ordo_cuda_core::graph::ConditionalKind;
    let Ok(g) = Graph::new() else {
        // Without a driver, or a device, even an empty graph cannot be made.
        assert!(Graph::new().unwrap_err().cuda().is_some());
        return;
    };
    let mut kinds = vec![ConditionalKind::If, ConditionalKind::While];
    if cfg!(cuda_12_8) {
        kinds.extend([ConditionalKind::IfElse, ConditionalKind::Switch { cases: 5 }]);
    }
    for kind in kinds {
        let c = g.conditional_handle(Some(0)).unwrap();
        let (node, bodies) = g.add_conditional_node(&[], c, kind).unwrap();
        assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
        assert_eq!(bodies.len(), kind.body_count() as usize, "{kind:?}");
        let raw: Vec<_> = bodies.iter().map(|b| b.as_raw()).collect();
        assert!(raw.iter().all(|b| !b.is_null()), "{kind:?}");
        assert!(raw.iter().enumerate().all(|(i, b)| !raw[..i].contains(b)), "{kind:?}: a body twice");
        assert!(bodies.get(bodies.len()).is_none());
        // A conditional node in a body.
        let c = g.conditional_handle(None).unwrap();
        let (inner, inner_bodies) = bodies.get(0).unwrap().add_conditional_node(&[], c, ConditionalKind::If).unwrap();
        assert_eq!((inner.kind().unwrap(), inner_bodies.len()), (NodeKind::Conditional, 1));
    }
    let c = g.conditional_handle(Some(0)).unwrap();
    let e = g.add_conditional_node(&[], c, ConditionalKind::Switch { cases: 0 }).unwrap_err();
    assert!(e.to_string().contains("at least one case"), "{e}");
}
