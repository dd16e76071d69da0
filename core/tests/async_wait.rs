//! Futures for GPU work (`ordo_cuda_core::future`, feature `async`), on the GPU: completions
//! resolve only after the work before them; a capturing stream is refused and its capture goes
//! on; futures dropped at every point (before the first poll, while pending, after the work,
//! in a panicking task) neither block nor release memory the GPU still uses; waiting allocates
//! nothing; a thousand waits in flight on one thread. The executor is the smallest there is
//! (`support/block_on.rs`): what is tested is ordo's side, not an executor's.
#![cfg(feature = "async")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::future::{self, InFlight, Notifier};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::time::{Duration, Instant};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::allocations;

#[path = "support/block_on.rs"]
mod block_on;
use block_on::{block_on, block_on_with, poll_once, thread_waker};

#[cfg(cuda_library_api)]
#[path = "support/spin.rs"]
mod spin;
#[cfg(cuda_library_api)]
use spin::spin;

/// The wake slots are process-wide, and the slab grows when a wait finds no free slot: a test
/// that puts many waits in flight at once (a thousand) makes whichever thread finds the free list
/// empty pay for the growth, the allocation-counting test's included. That test runs alone
/// (`exclusive`); the others share (`shared`).
static SLOTS: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    SLOTS.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn exclusive() -> std::sync::RwLockWriteGuard<'static, ()> {
    SLOTS.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A drop that takes this long has blocked (the spin ahead of the work takes 0.1 s).
const BLOCKED: Duration = Duration::from_millis(30);
/// About how long `spin` keeps the GPU busy (`spin::SPIN_CYCLES` at H200 clocks).
#[cfg(cuda_library_api)]
const SPIN: Duration = Duration::from_millis(100);

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn completions_resolve_only_after_the_work_before_them() {
    let _slots = shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let after = std::sync::Arc::new(Event::new().unwrap());
    for notifier in [Notifier::StreamCallback, Notifier::HostFunc] {
        spin(s);
        after.record(s).unwrap();
        block_on(s.completion_via(notifier).unwrap()).unwrap();
        assert_eq!(after.query().unwrap(), EventStatus::Complete, "{notifier:?} woke before the work was done");
    }
    // An event's completion, through the poller thread.
    spin(s);
    after.record(s).unwrap();
    block_on(after.completion().unwrap()).unwrap();
    assert_eq!(after.query().unwrap(), EventStatus::Complete);
    // Already complete: ready at the first poll, without the poller.
    let mut done = after.completion().unwrap();
    assert!(poll_once(&mut done, &thread_waker()).is_ready());
    // The stream may be destroyed while a completion of it waits: the future never touches it.
    spin(s);
    let pending = s.completion().unwrap();
    drop(stream);
    block_on(pending).unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_capturing_stream_is_refused_before_anything_is_enqueued_and_its_capture_goes_on() {
    let _slots = shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut dev = DeviceBuffer::<u32>::alloc_async(256, s).unwrap();
    let host = PinnedBuffer::<u32>::zeroed(256, HostAllocFlags::empty()).unwrap();
    let out = PinnedBuffer::<u32>::zeroed(256, HostAllocFlags::empty()).unwrap();
    s.synchronize().unwrap();
    let usage = |e: Error| assert!(matches!(e, Error::Usage(_)), "expected a usage error, got {e}");
    let mut host = Some(host);
    let mut out = Some(out);
    // SAFETY: nothing is captured that outlives the closure: every call below is refused.
    let graph = unsafe {
        capture(s, CaptureMode::ThreadLocal, |cs| {
            usage(cs.completion().unwrap_err());
            usage(cs.completion_via(Notifier::HostFunc).unwrap_err());
            let (e, payload) = InFlight::after(cs, 7u32).unwrap_err();
            usage(e);
            assert_eq!(payload, 7, "the payload comes back with the refusal");
            usage(future::copy::h2d(dev.as_mut_slice(), host.take().unwrap(), cs).unwrap_err());
            usage(future::copy::d2h(out.take().unwrap(), dev.as_slice(), cs).unwrap_err());
            usage(future::copy::memset(dev.as_mut_slice(), 0, cs).unwrap_err());
            assert_eq!(cs.capture_status()?, CaptureStatus::Active, "the refusal invalidated the capture");
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(graph.node_count().unwrap(), 0, "something was captured");
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn completions_dropped_at_every_point_neither_block_nor_break_the_stream() {
    let _slots = shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let event = std::sync::Arc::new(Event::new().unwrap());
    let waker = thread_waker();
    let mut tries = 0;
    let mut points = ["before the first poll", "while pending", "after the work"].into_iter().peekable();
    while let Some(&point) = points.peek() {
        let launched = Instant::now();
        spin(s);
        event.record(s).unwrap();
        let mut of_stream = s.completion().unwrap();
        let mut of_event = event.completion().unwrap();
        match point {
            "while pending" => {
                let pending =
                    poll_once(&mut of_stream, &waker).is_pending() && poll_once(&mut of_event, &waker).is_pending();
                if !pending {
                    // Ready while the spin (0.1 s) should still run: wrong, unless this thread
                    // was held up for longer than half the spin (a loaded host), in which case
                    // the point was not reached and is tried again.
                    let late = launched.elapsed();
                    assert!(late >= SPIN / 2, "a completion resolved {late:?} into a 0.1 s spin");
                    tries += 1;
                    assert!(tries < 5, "the host was held up past the spin {tries} times");
                    drop((of_stream, of_event));
                    s.synchronize().unwrap();
                    continue;
                }
            }
            "after the work" => s.synchronize().unwrap(),
            _ => {}
        }
        points.next();
        let t = Instant::now();
        drop(of_stream);
        drop(of_event);
        assert!(t.elapsed() < BLOCKED, "dropping {point} blocked for {:?}", t.elapsed());
    }
    block_on(s.completion().unwrap()).unwrap();
    block_on(event.completion().unwrap()).unwrap();
    assert!(error::take_drop_errors().iter().all(|e| !e.call().starts_with("cudaStream")));
}

/// Data whose every word differs, so that a copy of anything else is seen.
fn pattern(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761).wrapping_add(seed)).collect()
}

/// Records whether the work had completed when it was dropped.
struct Probe {
    done: std::sync::Arc<Event>,
    verdict: std::sync::mpsc::Sender<Option<EventStatus>>,
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.verdict.send(self.done.query().ok());
    }
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_in_flight_dropped_or_unwound_mid_copy_releases_its_buffers_only_after_the_copy() {
    let _slots = shared();
    const N: usize = 4 << 20;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let done = std::sync::Arc::new(Event::new().unwrap());
    for (round, how) in ["dropped", "unwound by a panic"].into_iter().enumerate() {
        let data = pattern(N, round as u32);
        let mut dev = DeviceBuffer::<u32>::alloc_async(N, s).unwrap();
        let host = PinnedBuffer::from_slice(&data).unwrap();
        let (verdict, verdicts) = std::sync::mpsc::channel();
        spin(s);
        let copy = future::copy::h2d(dev.as_mut_slice(), host, s).unwrap();
        done.record(s).unwrap();
        let probe = InFlight::after(s, Probe { done: done.clone(), verdict }).map_err(|(e, _)| e).unwrap();
        let t = Instant::now();
        if how == "dropped" {
            drop(copy);
            drop(probe);
        } else {
            let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let _held = (copy, probe);
                panic!("a test panic in a task with a copy in flight");
            }));
            assert!(unwound.is_err());
        }
        assert!(t.elapsed() < BLOCKED, "{how}: the drop blocked for {:?}", t.elapsed());
        // The copy still read the host memory it was given: the data arrive whole.
        let mut back = vec![0u32; N];
        copy::d2h_blocking(&mut back, dev.as_slice(), s).unwrap();
        assert!(back == data, "{how}: the copy read memory released under it");
        let status = verdicts.recv_timeout(Duration::from_secs(10)).expect("the payload was never released");
        assert_eq!(status, Some(EventStatus::Complete), "{how}: released before the work completed");
    }
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_buffer_of_another_stream_dropped_with_its_copy_in_flight_is_freed_after_the_copy() {
    let _slots = shared();
    // The copy runs on `b`, late (after a spin); the buffer belongs to `a`. Dropping the future
    // and the buffer at once frees the memory on `a`, which must wait for `b`'s copy: a buffer
    // allocated next on `a` (likely the same memory) and set to 0xFF must not be overwritten by
    // the late copy.
    const N: usize = 1 << 20;
    let (a, b) = (Stream::new().unwrap(), Stream::new().unwrap());
    let (sa, sb) = (a.as_stream(), b.as_stream());
    let data = pattern(N, 9);
    for _ in 0..3 {
        let mut dev = DeviceBuffer::<u32>::alloc_async(N, sa).unwrap();
        let host = PinnedBuffer::from_slice(&data).unwrap();
        spin(sb);
        let copy = future::copy::h2d(dev.as_mut_slice(), host, sb).unwrap();
        drop(copy);
        drop(dev);
        let mut next = DeviceBuffer::<u32>::alloc_async(N, sa).unwrap();
        // SAFETY: `next` is freed on `sa`, after the memset; the stream is synchronised below.
        unsafe { copy::memset_async(next.as_mut_slice(), 0xFF, sa).unwrap() };
        let mut back = vec![0u32; N];
        copy::d2h_blocking(&mut back, next.as_slice(), sa).unwrap();
        assert!(back.iter().all(|&w| w == u32::MAX), "the late copy wrote into memory freed under it");
    }
    sb.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn waiting_allocates_nothing() {
    let _slots = exclusive();
    const N: usize = 4096;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let event = std::sync::Arc::new(Event::new().unwrap());
    let waker = thread_waker();
    let mut dev = DeviceBuffer::<u32>::alloc_async(N, s).unwrap();
    let mut host = PinnedBuffer::from_slice(&pattern(N, 1)).unwrap();
    let mut back = PinnedBuffer::<u32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let mut round = |host: PinnedBuffer<u32>, back: PinnedBuffer<u32>| {
        block_on_with(&waker, s.completion().unwrap()).unwrap();
        block_on_with(&waker, s.completion_via(Notifier::HostFunc).unwrap()).unwrap();
        event.record(s).unwrap();
        block_on_with(&waker, event.completion().unwrap()).unwrap();
        let host = block_on_with(&waker, future::copy::h2d(dev.as_mut_slice(), host, s).unwrap()).unwrap();
        block_on_with(&waker, future::copy::memset(dev.slice_mut(..1).unwrap(), 0, s).unwrap()).unwrap();
        let back = block_on_with(&waker, future::copy::d2h(back, dev.as_slice(), s).unwrap()).unwrap();
        (host, back)
    };
    // Warm up: the wake slots, the poller's queue and the runtime's own lazy set-up.
    for _ in 0..50 {
        (host, back) = round(host, back);
    }
    let before = allocations();
    for _ in 0..1000 {
        (host, back) = round(host, back);
    }
    let after = allocations();
    assert_eq!(after - before, 0, "heap allocations waiting (6000 waits)");
    assert_eq!(back[1..], pattern(N, 1)[1..]);
    assert_eq!(back[0], 0);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_thousand_waits_in_flight_on_one_thread() {
    let _slots = shared();
    const WAITS: usize = 1000;
    let streams: Vec<Stream> = (0..8).map(|_| Stream::new().unwrap()).collect();
    let mut bufs: Vec<DeviceBuffer<'_, u8>> =
        streams.iter().map(|st| DeviceBuffer::alloc_async(1 << 16, st.as_stream()).unwrap()).collect();
    let waker = thread_waker();
    let t = Instant::now();
    let mut pending: Vec<_> = (0..WAITS)
        .map(|i| {
            let s = streams[i % streams.len()].as_stream();
            // SAFETY: each buffer is freed on its stream, after the memset.
            unsafe { copy::memset_async(bufs[i % streams.len()].as_mut_slice(), i as u8, s).unwrap() };
            s.completion().unwrap()
        })
        .collect();
    let mut done = 0;
    while !pending.is_empty() {
        pending.retain_mut(|c| match poll_once(c, &waker) {
            std::task::Poll::Ready(r) => {
                r.unwrap();
                done += 1;
                false
            }
            std::task::Poll::Pending => true,
        });
        if !pending.is_empty() {
            std::thread::park_timeout(Duration::from_millis(1));
        }
    }
    assert_eq!(done, WAITS);
    eprintln!("{WAITS} completions in flight at once on one thread: all done in {:?}", t.elapsed());
    bufs.clear();
}
