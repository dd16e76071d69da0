//! Batched copies (`CopyBatch`, `cudaMemcpyBatchAsync`): host to device, device to device and
//! device to host in batches with runs of attributes give what the same copies one by one give;
//! a batch captured into a graph in global mode replays its copies (CUDA refuses the batch call
//! in a capture; the batch then enqueues its copies one by one).
#![cfg(cuda_12_8)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::memory::{copy, CopyAttributes, CopyBatch, SourceOrder};
use ordo_cuda_core::*;

#[path = "support/gpu_lock.rs"]
mod gpu_lock;
#[path = "support/random.rs"]
mod random;
use random::random_u32;

/// Elements a chunk; four chunks.
const Q: usize = 1 << 18;

/// Four chunks of pinned memory into four device buffers (the last two with sources read at any
/// time and the overlap hint: a second run of attributes), device to device, and out into four
/// pinned buffers, as three batches; the reference is the same copies one by one.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn batches_copy_what_the_same_copies_one_by_one_copy() {
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let data = random_u32(4 * Q, 44);
    let host = PinnedBuffer::from_slice(&data).unwrap();
    let mut ins: Vec<DeviceBuffer<'_, u32>> = (0..4).map(|_| DeviceBuffer::alloc_async(Q, s).unwrap()).collect();
    let mut mids: Vec<DeviceBuffer<'_, u32>> = (0..4).map(|_| DeviceBuffer::alloc_async(Q, s).unwrap()).collect();
    let mut outs: Vec<PinnedBuffer<u32>> =
        (0..4).map(|_| PinnedBuffer::zeroed(Q, HostAllocFlags::empty()).unwrap()).collect();

    let mut batch = CopyBatch::<8>::new(CopyAttributes::default());
    for (i, dst) in ins.iter_mut().enumerate() {
        if i == 2 {
            // The CPU wrote these sources before; no work on the stream writes them.
            batch.set_attributes(CopyAttributes { source_order: SourceOrder::Any, prefer_overlap_with_compute: true });
        }
        batch.h2d(dst.as_mut_slice(), host.pinned_range(i * Q..(i + 1) * Q).unwrap()).unwrap();
    }
    assert_eq!(batch.len(), 4);
    // SAFETY: `host` and the buffers outlive the copies (synchronised below before they drop).
    unsafe { batch.enqueue(s) }.unwrap();
    let mut through = CopyBatch::<4>::new(CopyAttributes::default());
    for (dst, src) in mids.iter_mut().zip(&ins) {
        through.d2d(dst.as_mut_slice(), src.as_slice()).unwrap();
    }
    // SAFETY: as above; after the first batch, in stream order.
    unsafe { through.enqueue(s) }.unwrap();
    let mut back = CopyBatch::<4>::new(CopyAttributes::default());
    for (dst, src) in outs.iter_mut().zip(&mids) {
        back.d2h(dst.pinned_mut(), src.as_slice()).unwrap();
    }
    // SAFETY: as above.
    unsafe { back.enqueue(s) }.unwrap();
    stream.synchronize().unwrap();
    let batched: Vec<u32> = outs.iter().flat_map(|o| o.iter().copied()).collect();
    assert!(batched == data, "in, through and out in batches");

    // The reference: the same copies one by one.
    let mut reference: Vec<PinnedBuffer<u32>> =
        (0..4).map(|_| PinnedBuffer::zeroed(Q, HostAllocFlags::empty()).unwrap()).collect();
    for (i, (dst, mid)) in reference.iter_mut().zip(mids.iter_mut()).enumerate() {
        // SAFETY: all outlive the copies (synchronised below).
        unsafe {
            copy::h2d_async(mid.as_mut_slice(), host.pinned_range(i * Q..(i + 1) * Q).unwrap(), s).unwrap();
            copy::d2h_async(dst.pinned_mut(), mid.as_slice(), s).unwrap();
        }
    }
    stream.synchronize().unwrap();
    let one_by_one: Vec<u32> = reference.iter().flat_map(|o| o.iter().copied()).collect();
    assert!(one_by_one == batched);
    drop((ins, mids));
    stream.synchronize().unwrap();
}

/// A batch captured into a graph in global mode: the capture stays valid (CUDA refuses the batch
/// call there; the batch enqueues its copies one by one), and every replay copies. Replayed twice,
/// with the sources changed between the replays.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_batch_captured_in_global_mode_replays_its_copies() {
    let _gpu = gpu_lock::exclusive();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut host = PinnedBuffer::from_slice(&random_u32(2 * Q, 7)).unwrap();
    let mut a = DeviceBuffer::<u32>::alloc_async(Q, s).unwrap();
    let mut b = DeviceBuffer::<u32>::alloc_async(Q, s).unwrap();
    let mut out = PinnedBuffer::<u32>::zeroed(2 * Q, HostAllocFlags::empty()).unwrap();
    stream.synchronize().unwrap();
    let (hp, op) = (host.as_ptr(), out.as_mut_ptr());
    // SAFETY: `host`, `out`, `a` and `b` outlive every replay (synchronised below before they
    // drop); the views are of disjoint halves; nothing else uses `s` while it captures.
    let graph = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            let mut batch = CopyBatch::<4>::new(CopyAttributes::default());
            batch.h2d(a.as_mut_slice(), PinnedSlice::from_raw_parts(hp, Q))?;
            batch.h2d(b.as_mut_slice(), PinnedSlice::from_raw_parts(hp.add(Q), Q))?;
            batch.enqueue(cs)?;
            let mut back = CopyBatch::<4>::new(CopyAttributes::default());
            back.d2h(PinnedSliceMut::from_raw_parts(op, Q), a.as_slice())?;
            back.d2h(PinnedSliceMut::from_raw_parts(op.add(Q), Q), b.as_slice())?;
            back.enqueue(cs)
        })
    }
    .unwrap();
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    for round in 0..2u64 {
        let expect = random_u32(2 * Q, 100 + round);
        host.copy_from_slice(&expect);
        exec.launch(s).unwrap();
        stream.synchronize().unwrap();
        assert!(out[..] == expect[..], "replay {round}");
    }
    drop(exec);
    drop((a, b));
    stream.synchronize().unwrap();
}
