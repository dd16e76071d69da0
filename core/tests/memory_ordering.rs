//! Memory ordering across streams: work ordo enqueues on a stream other than a buffer's own is
//! ordered after that buffer's stream, and the buffer's later free after the work (`free_on`, the
//! blocking copies, `memory::order`, across two devices too); on the same stream, or for memory
//! without an origin, no driver call is made. Blocking copies refuse a capturing stream before
//! anything is enqueued. The GPU tests queue a spinning kernel (loaded at run time from PTX, so this
//! binary needs no nvcc) ahead of a write, so that an unordered read or free would be seen; they
//! check every byte against random data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error;
use ordo_cuda_core::memory::{copy, order};
use ordo_cuda_core::*;

/// 16M bytes: long enough that an unordered copy is seen.
const N: usize = 16 << 20;

#[path = "support/random.rs"]
mod random;
use random::random_bytes;

#[cfg(cuda_library_api)]
#[path = "support/spin.rs"]
mod spin;
#[cfg(cuda_library_api)]
use spin::spin;

/// Ordering work on a buffer's own stream, or on memory with no origin, makes no driver call
/// (without a driver any call would fail).
#[test]
fn ordering_on_the_same_stream_or_without_an_origin_makes_no_driver_call() {
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    // Without a driver any CUDA call fails; these succeed because they make none.
    order::after_origin(None, s).unwrap();
    order::after_origin(Some(s), s).unwrap();
    order::origin_after(None, s).unwrap();
    order::origin_after(Some(s), s).unwrap();
}

/// A buffer freed on another stream (`free_on`) is not handed out again before the work still
/// queued on its own stream has run.
#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn free_on_another_stream_waits_for_the_buffers_own_stream() {
    let a = Stream::new().unwrap();
    let b = Stream::new().unwrap();
    let pool = MemPool::new(Device::current().unwrap()).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    let mut old = DeviceBuffer::<u8>::alloc_from_pool_async(N, pool.as_pool(), a.as_stream()).unwrap();
    let old_ptr = old.as_ptr();
    // A slow write still queued on the buffer's own stream when it is freed on `b`.
    spin(a.as_stream());
    // SAFETY: the memset is on the buffer's own stream, ordered before its free (the fix).
    unsafe { copy::memset_async(old.as_mut_slice(), 0x5A, a.as_stream()).unwrap() };
    old.free_on(b.as_stream()).unwrap();
    // The pool hands the same memory to a new buffer on `b`, which writes a pattern.
    let mut new = DeviceBuffer::<u8>::alloc_from_pool_async(N, pool.as_pool(), b.as_stream()).unwrap();
    assert_eq!(new.as_ptr(), old_ptr, "the pool did not reuse the block: the test proves nothing");
    let pattern = random_bytes(N, 3);
    copy::h2d_blocking(new.as_mut_slice(), &pattern, b.as_stream()).unwrap();
    a.synchronize().unwrap(); // a late memset would have landed by now
    let mut back = vec![0u8; N];
    copy::d2h_blocking(&mut back, new.as_slice(), b.as_stream()).unwrap();
    let kept = back.iter().zip(&pattern).filter(|(x, y)| x == y).count();
    assert_eq!(kept, N, "only {kept} of {N} bytes kept their value: the free ran before the old write");
}

/// Blocking copies on another stream see the writes queued on the buffer's own stream before
/// them, and land after them.
#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn blocking_copies_on_another_stream_wait_for_the_buffers_own_stream() {
    let a = Stream::new().unwrap();
    let b = Stream::new().unwrap();
    let mut buf = DeviceBuffer::<u8>::alloc_async(N, a.as_stream()).unwrap();
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0x11, a.as_stream()).unwrap() };
    a.synchronize().unwrap();

    // Device to host on `b` while a write is still queued on `a`: the copy must see the write.
    spin(a.as_stream());
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0xA5, a.as_stream()).unwrap() };
    let mut back = vec![0u8; N];
    copy::d2h_blocking(&mut back, buf.as_slice(), b.as_stream()).unwrap();
    let seen = back.iter().filter(|&&x| x == 0xA5).count();
    assert_eq!(seen, N, "only {seen} of {N} bytes had the write queued before the copy");

    // Host to device on `b` while a write is still queued on `a`: the copy must land after it.
    spin(a.as_stream());
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0x3C, a.as_stream()).unwrap() };
    let pattern = random_bytes(N, 5);
    copy::h2d_blocking(buf.as_mut_slice(), &pattern, b.as_stream()).unwrap();
    copy::d2h_blocking(&mut back, buf.as_slice(), a.as_stream()).unwrap();
    let kept = back.iter().zip(&pattern).filter(|(x, y)| x == y).count();
    assert_eq!(kept, N, "only {kept} of {N} bytes kept the copy: the queued write landed after it");
}

/// Blocking copies refuse a capturing stream with a usage error before enqueuing anything: the
/// capture stays valid and empty, and the same copy runs once the capture has ended.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn blocking_copies_refuse_a_capturing_stream_before_enqueuing() {
    let s = Stream::new().unwrap();
    let other = Stream::new().unwrap();
    let data = random_bytes(N, 9);
    let mut buf = DeviceBuffer::<u8>::alloc_async(N, other.as_stream()).unwrap();
    copy::h2d_blocking(buf.as_mut_slice(), &data, other.as_stream()).unwrap();

    // SAFETY: thread-local mode, on a stream only this test uses; the capture is ended below
    // and its (empty) graph destroyed, never launched.
    let code = unsafe {
        sys::cudaStreamBeginCapture(s.as_raw(), sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal)
    };
    error::check(code, "cudaStreamBeginCapture").unwrap();
    let mut host = vec![7u8; N];
    let e = copy::d2h_blocking(&mut host, buf.as_slice(), s.as_stream()).unwrap_err();
    let e2 = copy::h2d_blocking(buf.as_mut_slice(), &data, s.as_stream()).unwrap_err();
    let mut graph: sys::cudaGraph_t = std::ptr::null_mut();
    // SAFETY: the stream captures; `graph` is writable.
    let end = unsafe { sys::cudaStreamEndCapture(s.as_raw(), &mut graph) };
    let mut nodes = usize::MAX;
    if !graph.is_null() {
        // SAFETY: a graph from the capture; only the count is asked for.
        error::check(unsafe { sys::cudaGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) }, "cudaGraphGetNodes")
            .unwrap();
        // SAFETY: ours, never instantiated.
        unsafe { sys::cudaGraphDestroy(graph) };
    }

    for e in [e, e2] {
        assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{e:?}");
        assert!(e.to_string().contains("capturing"), "{e}");
    }
    // Nothing was enqueued: the capture was not invalidated and holds no node.
    error::check(end, "cudaStreamEndCapture").unwrap();
    assert_eq!(nodes, 0);
    assert!(host.iter().all(|&x| x == 7));
    // Outside the capture the same copy runs.
    copy::d2h_blocking(&mut host, buf.as_slice(), s.as_stream()).unwrap();
    assert!(host == data);
}

/// `order` between streams of two devices makes the later stream wait for the earlier one, whichever
/// device is current (needs two GPUs; with one it says so and passes).
#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn order_between_streams_of_two_devices_waits_for_the_earlier_stream() {
    if device::count().unwrap() < 2 {
        println!("one device: the cross-device path needs two (run on a two-GPU machine)");
        return;
    }
    let (d0, d1) = (Device::from_ordinal(0), Device::from_ordinal(1));
    let a = d0.with_current(Stream::new).unwrap();
    let b = d1.with_current(Stream::new).unwrap();
    let probe = d1.with_current(Event::new).unwrap();
    // `later` must not pass a probe before `earlier`'s spin ends. Conclusive only when `earlier` is
    // still busy after the probe was asked (the first cross-device wait can take ~0.1 s to set
    // up); a few tries make that near certain.
    let waits = |ordered: &dyn Fn() -> Result<()>| {
        for _ in 0..5 {
            d0.with_current(|| {
                spin(a.as_stream());
                Ok(())
            })
            .unwrap();
            ordered().unwrap();
            probe.record(b.as_stream()).unwrap();
            let status = probe.query().unwrap();
            let still_busy = a.query().unwrap() == StreamStatus::NotReady;
            probe.synchronize().unwrap();
            if still_busy {
                assert_eq!(status, EventStatus::Pending, "b passed the probe while a still ran");
                return;
            }
        }
        panic!("a always finished before the probe was asked: inconclusive");
    };
    // Whichever device is current, the event is made on the recording stream's device (CUDA
    // records an event only on a stream of its own device).
    for current in [d0, d1] {
        current.set_current().unwrap();
        waits(&|| order::after_origin(Some(a.as_stream()), b.as_stream()));
        // `b` as the buffer's stream: it waits for the work just queued on `a`.
        waits(&|| order::origin_after(Some(b.as_stream()), a.as_stream()));
    }
    d0.set_current().unwrap();
}
