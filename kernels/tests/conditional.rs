//! GPU tests of conditional nodes: IF (both outcomes), IF/ELSE (each branch), SWITCH (each case
//! and out of range), a WHILE body filled by capture and replayed, a WHILE body holding an IF
//! node, a WHILE node added inside a capture with its body captured on a second stream, and body
//! captures that fail (an error, an invalidated capture, a panic) leaving the body as it was.
//! Every result is checked against a CPU reference on random, non-zero data. The WHILE loop of the
//! source's first conditional test is in `graphs.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, CaptureStatus, ConditionalKind, InstantiateFlags, NodeKind};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_kernels::{kernel, BLOCK};

mod common;
use common::{download, gpu_lock, upload};

const N: usize = 1000;

fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    common::Rng(seed | 1).f32s(n, -4.0, 4.0)
}

fn plus(x: &[f32], k: usize) -> Vec<f32> {
    x.iter().map(|v| (0..k).fold(*v, |v, _| v + 1.0)).collect()
}

/// `ordok_scale_add` on the CPU: `x * a + b`, rounded once.
fn scale_add(x: &[f32], a: f32, b: f32) -> Vec<f32> {
    x.iter().map(|v| v.mul_add(a, b)).collect()
}

fn one_thread() -> LaunchConfig {
    LaunchConfig::new(1, 1)
}

fn elements() -> LaunchConfig {
    LaunchConfig::for_elements(N, BLOCK).unwrap()
}

/// Whether the headers of this build have IF/ELSE and SWITCH nodes (CUDA 12.8 and later); when
/// they do not, `kind` must be refused with a usage error, which this checks.
fn headers_have(g: &Graph, kind: ConditionalKind) -> bool {
    if sys::CUDA_VERSION >= 12080 {
        return true;
    }
    let c = g.conditional_handle(Some(0)).unwrap();
    let e = g.add_conditional_node(&[], c, kind).unwrap_err();
    assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::NotSupported, .. })), "{e:?}");
    println!("{kind:?} needs CUDA 12.8 or later headers; this build has {}", sys::CUDA_VERSION);
    false
}

/// A graph whose only work so far is `ordok_set_condition_from(condition, flag)`, a kernel node
/// added after `condition` was made (so that a conditional node added after the graph's leaves
/// reads the value the kernel set from `flag`). Built by hand: CUDA cannot clone a graph that
/// holds a conditional handle, so `capture_into` (which clones) refuses it with
/// `cudaErrorNotSupported` (`docs/cuda-behaviours.md`, CB-25).
///
/// # Safety
/// `flag` points to a `u32` that outlives every launch of the graph.
unsafe fn graph_setting_condition_from(flag: *const u32) -> (Graph, graph::ConditionalHandle) {
    let g = Graph::new().unwrap();
    let condition = g.conditional_handle(None).unwrap();
    // SAFETY: the caller's promise on `flag`; one thread sets the condition.
    unsafe { g.add_kernel_node(&[], kernel::set_condition_from(), &one_thread(), (condition, flag)) }.unwrap();
    (g, condition)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_if_node_runs_its_body_only_when_a_kernel_sets_the_condition() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 61);
    let mut x = upload(&x0, s);
    let mut flag = upload(&[1u32], s);
    // SAFETY: `flag` and `x` are declared before the graph and the executable graph, so they
    // outlive them and their launches (each read back after it).
    let (g, condition) = unsafe { graph_setting_condition_from(flag.as_ptr()) };
    let leaves = g.leaf_nodes().unwrap();
    assert_eq!(leaves.len(), 1);
    let (node, body) = g.add_if_node(&leaves, condition).unwrap();
    assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
    // SAFETY: as above.
    unsafe { body.add_kernel_node(&[], kernel::add_one(), &elements(), (x.as_mut_ptr(), N as i32)).unwrap() };
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&x, s) == plus(&x0, 1), "the body did not run once for a condition of 1");
    copy::h2d_blocking(flag.as_mut_slice(), &[0], s).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&x, s) == plus(&x0, 1), "the body ran for a condition of 0");
    copy::h2d_blocking(flag.as_mut_slice(), &[7], s).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&x, s) == plus(&x0, 2), "the body did not run for a condition of 7");
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_if_else_node_runs_its_first_body_on_non_zero_and_its_second_on_zero() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 62);
    let mut x = upload(&x0, s);
    let mut flag = upload(&[1u32], s);
    // SAFETY: as in the IF test.
    let (g, condition) = unsafe { graph_setting_condition_from(flag.as_ptr()) };
    if !headers_have(&g, ConditionalKind::IfElse) {
        return;
    }
    let leaves = g.leaf_nodes().unwrap();
    let (_, bodies) = g.add_conditional_node(&leaves, condition, ConditionalKind::IfElse).unwrap();
    assert_eq!(bodies.len(), 2);
    let branches = [(2.0f32, 1.0f32), (-0.5, 3.0)];
    for (body, (a, b)) in bodies.iter().zip(branches) {
        // SAFETY: as in the IF test.
        unsafe { body.add_kernel_node(&[], kernel::scale_add(), &elements(), (x.as_mut_ptr(), a, b, N as i32)) }
            .unwrap();
    }
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    for (value, branch) in [(1u32, 0usize), (0, 1), (9, 0), (0, 1)] {
        copy::h2d_blocking(x.as_mut_slice(), &x0, s).unwrap();
        copy::h2d_blocking(flag.as_mut_slice(), &[value], s).unwrap();
        exec.launch(s).unwrap();
        let (a, b) = branches[branch];
        assert!(download(&x, s) == scale_add(&x0, a, b), "condition {value} did not run body {branch} alone");
    }
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_switch_node_runs_the_body_its_index_names_and_none_out_of_range() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 63);
    let mut x = upload(&x0, s);
    let mut index = upload(&[0u32], s);
    // SAFETY: as in the IF test.
    let (g, condition) = unsafe { graph_setting_condition_from(index.as_ptr()) };
    if !headers_have(&g, ConditionalKind::Switch { cases: 3 }) {
        return;
    }
    let leaves = g.leaf_nodes().unwrap();
    let (_, cases) = g.add_conditional_node(&leaves, condition, ConditionalKind::Switch { cases: 3 }).unwrap();
    assert_eq!((cases.len(), cases.iter().len()), (3, 3));
    assert!(cases.get(3).is_none());
    let steps = [(2.0f32, 1.0f32), (-1.0, 0.5), (0.25, -3.0)];
    for (body, (a, b)) in cases.iter().zip(steps) {
        // SAFETY: as in the IF test.
        unsafe { body.add_kernel_node(&[], kernel::scale_add(), &elements(), (x.as_mut_ptr(), a, b, N as i32)) }
            .unwrap();
    }
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    for value in [0u32, 1, 2, 3, u32::MAX, 1] {
        copy::h2d_blocking(x.as_mut_slice(), &x0, s).unwrap();
        copy::h2d_blocking(index.as_mut_slice(), &[value], s).unwrap();
        exec.launch(s).unwrap();
        let expect = match steps.get(value as usize) {
            Some(&(a, b)) => scale_add(&x0, a, b),
            None => x0.clone(),
        };
        assert!(download(&x, s) == expect, "index {value}: wrong body, or a body out of range");
    }
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_while_body_filled_by_capture_counts_down_at_each_replay() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 64);
    let mut x = upload(&x0, s);
    let mut counter = upload(&[5u32], s);
    let g = Graph::new().unwrap();
    let condition = g.conditional_handle(Some(1)).unwrap();
    let (_, body) = g.add_while_node(&[], condition).unwrap();
    // A decode-style step: the work, then the counter decremented, the loop ended at 0.
    // SAFETY: `x` and `counter` are declared before the graph and the executable graph, so they
    // outlive them and their launches (each read back after it); countdown runs on one thread,
    // the only writer of the condition.
    let step = unsafe {
        body.capture(&[], s, CaptureMode::Global, |bs| {
            ordo_cuda_kernels::add_one(bs, x.as_mut_slice())?;
            kernel::countdown().launch(bs, &one_thread(), (condition, counter.as_mut_ptr()))
        })
    }
    .unwrap();
    assert_eq!(step.kind().unwrap(), NodeKind::ChildGraph);
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert_eq!(download(&counter, s), vec![0], "the loop stopped before the counter reached 0");
    assert!(download(&x, s) == plus(&x0, 5), "the body did not run exactly 5 times");
    let mut total = 5;
    for count in [3u32, 1, 4] {
        copy::h2d_blocking(counter.as_mut_slice(), &[count], s).unwrap();
        exec.launch(s).unwrap();
        total += count as usize;
        assert_eq!(download(&counter, s), vec![0]);
        assert!(download(&x, s) == plus(&x0, total), "a replay for {count} did not run the body {count} times");
    }
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_while_body_holds_an_if_node_that_skips_the_last_iteration() {
    let _gpu = gpu_lock::shared(); // no capture here; other tests capture in global mode
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 65);
    let mut x = upload(&x0, s);
    let mut counter = upload(&[4u32], s);
    let g = Graph::new().unwrap();
    let loop_condition = g.conditional_handle(Some(1)).unwrap();
    let if_condition = g.conditional_handle(None).unwrap();
    let (_, loop_body) = g.add_while_node(&[], loop_condition).unwrap();
    // Each iteration: the counter decremented (the loop ends at 0), the IF condition set to the
    // counter, and the IF body (add_one) run when the counter is not 0 yet: once for each count
    // but the last.
    // SAFETY: `x` and `counter` outlive the graph, the executable graph and their launches
    // (declared before them, read back after each launch); each condition has one writer, on one
    // thread, ordered before the node that reads it.
    unsafe {
        let step =
            loop_body.add_kernel_node(&[], kernel::countdown(), &one_thread(), (loop_condition, counter.as_mut_ptr()));
        let step = step.unwrap();
        let set = loop_body
            .add_kernel_node(&[step], kernel::set_condition_from(), &one_thread(), (if_condition, counter.as_ptr()))
            .unwrap();
        let (inner, if_bodies) = loop_body.add_conditional_node(&[set], if_condition, ConditionalKind::If).unwrap();
        assert_eq!(inner.kind().unwrap(), NodeKind::Conditional);
        let if_body = if_bodies.get(0).unwrap();
        if_body.add_kernel_node(&[], kernel::add_one(), &elements(), (x.as_mut_ptr(), N as i32)).unwrap();
    }
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert_eq!(download(&counter, s), vec![0]);
    assert!(download(&x, s) == plus(&x0, 3), "the IF body did not run for 3, 2 and 1 alone");
    let mut total = 3;
    for count in [1u32, 6] {
        copy::h2d_blocking(counter.as_mut_slice(), &[count], s).unwrap();
        exec.launch(s).unwrap();
        total += count as usize - 1;
        assert_eq!(download(&counter, s), vec![0]);
        assert!(download(&x, s) == plus(&x0, total), "a replay for {count} ran the IF body wrongly");
    }
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_while_node_added_inside_a_capture_loops_a_body_captured_on_a_second_stream() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let stream = Stream::new().unwrap();
    let body_stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 66);
    let y0 = random_f32(N, 67);
    let (mut x, mut y, mut z) = (upload(&x0, s), upload(&y0, s), common::poisoned(N, s));
    let mut counter = upload(&[4u32], s);
    // Before the loop: x + 1. The loop: y + 1 and the countdown, captured on the second stream
    // into the body of a WHILE node added at the current point of the capture. After it: z = y^2,
    // which must read y after the loop.
    // SAFETY: `x`, `y`, `z` and `counter` are declared before the graph and the executable graph,
    // so they outlive them and their launches (each read back after it); nothing else uses either
    // stream during the captures (exclusive GPU lock); countdown runs on one thread, the only
    // writer of the condition.
    let g = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            ordo_cuda_kernels::add_one(cs, x.as_mut_slice())?;
            cs.capture_conditional(ConditionalKind::While, Some(1), |condition, bodies| {
                assert_eq!(bodies.len(), 1);
                let body = bodies.get(0).unwrap();
                // The capturing stream itself is refused, before anything starts.
                let e = body.capture(&[], cs, CaptureMode::ThreadLocal, |_| Ok(())).unwrap_err();
                assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{e:?}");
                body.capture(&[], body_stream.as_stream(), CaptureMode::ThreadLocal, |bs| {
                    ordo_cuda_kernels::add_one(bs, y.as_mut_slice())?;
                    kernel::countdown().launch(bs, &one_thread(), (condition, counter.as_mut_ptr()))
                })?;
                Ok(())
            })?;
            ordo_cuda_kernels::square(cs, y.as_slice(), z.as_mut_slice())
        })
    }
    .unwrap();
    let kinds: Vec<NodeKind> = g.nodes().unwrap().iter().map(|n| n.kind().unwrap()).collect();
    assert_eq!(kinds.len(), 3, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == NodeKind::Conditional).count(), 1, "{kinds:?}");
    assert_eq!(g.edge_count().unwrap(), 2, "not a chain: add_one, the loop, square");
    assert_eq!(g.root_nodes().unwrap()[0].kind().unwrap(), NodeKind::Kernel);
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    let square = |v: Vec<f32>| -> Vec<f32> { v.iter().map(|v| v * v).collect() };
    exec.launch(s).unwrap();
    assert_eq!(download(&counter, s), vec![0]);
    assert!(download(&x, s) == plus(&x0, 1), "the work before the loop did not run once");
    assert!(download(&y, s) == plus(&y0, 4), "the loop did not run 4 times");
    assert!(download(&z, s) == square(plus(&y0, 4)), "the work after the loop did not see its result");
    copy::h2d_blocking(counter.as_mut_slice(), &[2], s).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&x, s) == plus(&x0, 2));
    assert!(download(&y, s) == plus(&y0, 6), "the replay did not run the loop 2 times");
    assert!(download(&z, s) == square(plus(&y0, 6)));
    error::peek_last_error().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failed_body_capture_leaves_the_body_as_it_was() {
    let _gpu = gpu_lock::exclusive(); // captures
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let x0 = random_f32(N, 68);
    let mut x = upload(&x0, s);
    let g = Graph::new().unwrap();
    let condition = g.conditional_handle(Some(1)).unwrap();
    let (_, body) = g.add_if_node(&[], condition).unwrap();
    let _ = error::take_drop_errors();
    // SAFETY (every capture below): `x` outlives the graph, the executable graph and its launch;
    // nothing else uses `s` meanwhile (exclusive GPU lock).
    // The function fails after enqueuing work.
    let e = unsafe {
        body.capture(&[], s, CaptureMode::ThreadLocal, |bs| {
            ordo_cuda_kernels::add_one(bs, x.as_mut_slice())?;
            Err(Error::invalid("test", "deliberate failure"))
        })
    }
    .unwrap_err();
    assert_eq!(e.call(), "test");
    // An illegal call invalidates the capture: CUDA then drops the graph captured into, which is
    // the capture's own, never the body (a capture into the body itself would leave the node
    // with a freed body, and the graph's destruction crashing).
    let e = unsafe {
        body.capture(&[], s, CaptureMode::ThreadLocal, |bs| {
            ordo_cuda_kernels::add_one(bs, x.as_mut_slice())?;
            let _ = bs.synchronize(); // refused inside a capture: the capture is invalidated
            Ok(())
        })
    }
    .unwrap_err();
    assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorStreamCaptureInvalidated), "{e}");
    // A panic ends the capture as it unwinds.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        body.capture(&[], s, CaptureMode::ThreadLocal, |bs| {
            ordo_cuda_kernels::add_one(bs, x.as_mut_slice())?;
            panic!("deliberate panic inside a body capture")
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(s.capture_status().unwrap(), CaptureStatus::None);
    let _ = error::take_last_error(); // the refused synchronise and capture end
                                      // The body is as it was (empty), so this capture's work is all it holds.
    unsafe { body.capture(&[], s, CaptureMode::ThreadLocal, |bs| ordo_cuda_kernels::add_one(bs, x.as_mut_slice())) }
        .unwrap();
    let exec = g.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    assert!(download(&x, s) == plus(&x0, 1), "a failed capture left work in the body");
    drop(exec);
    drop(g);
    let errors = error::take_drop_errors();
    assert!(errors.iter().all(|e| !e.call().starts_with("cudaGraph")), "{errors:?}");
    error::peek_last_error().unwrap();
}
