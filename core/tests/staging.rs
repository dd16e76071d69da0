//! The staging ring: slots come back after their copies and the ring frees its pinned memory with
//! its last handle; an acquire that no slot can satisfy (the only one held by a graph) returns an
//! error instead of waiting for ever; a copy is ordered with its destination buffer's stream (a
//! read there sees it, the buffer's free waits for it); a submit that would pull its stream into
//! another stream's capture is refused; absurd sizes are refused before CUDA. The GPU tests run one
//! at a time (`gpu_lock::exclusive`): they watch freed pinned addresses that another test's
//! allocations could take over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, CaptureStatus};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::staging::StagingRing;
use ordo_cuda_core::*;
use std::time::Duration;

#[path = "support/gpu_lock.rs"]
mod gpu_lock;

#[path = "support/host.rs"]
mod host;
use host::{eventually, freed, is_freed, read};

#[path = "support/random.rs"]
mod random;
use random::random_bytes;

/// Every slot comes back once its copy has run, the copies are right, and the ring's pinned
/// memory is freed with its last handle.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn slots_come_back_and_the_ring_frees_its_memory() {
    let _gpu = gpu_lock::exclusive();
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

/// An acquire whose only slot is held by a graph returns an error instead of waiting for ever;
/// the slot comes back with the graph.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn acquire_returns_an_error_when_no_slot_can_come_free() {
    let _gpu = gpu_lock::exclusive();
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

/// A staging copy submitted on another stream is ordered with the destination buffer's stream:
/// a read there sees it, and the buffer's free waits for it.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_copy_is_ordered_with_the_destinations_stream() {
    let _gpu = gpu_lock::exclusive();
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

/// Zero slots, zero lengths and sizes that overflow are usage errors before CUDA is called.
#[test]
fn ring_sizes_are_refused_before_cuda() {
    for (count, len) in [(0, 4), (4, 0), (usize::MAX, 2)] {
        let e = StagingRing::<u8>::new(count, len).err().unwrap();
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
    }
}

/// A submit on a stream that is not capturing, to a buffer whose own stream is, is refused before
/// anything is enqueued: the slot comes back, the other stream stays out of the capture, and the
/// capture stays valid.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_submit_that_would_pull_its_stream_into_a_capture_is_refused() {
    let _gpu = gpu_lock::exclusive();
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
