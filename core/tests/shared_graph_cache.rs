//! `SharedGraphCache` on the GPU: several threads running its buckets at once (captured lazily
//! and by `capture_all`, with and without warm-up and uploads), the results checked against the
//! CPU; the first graph installed wins when two threads capture one bucket; a run on a capturing
//! stream enqueues the body's work into that capture; a close during a body call launches nothing
//! more. The bodies copy and set memory (every CUDA release has them), each bucket in its own
//! region, so that replays of one bucket on several streams at once write the same values.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::shared::is_closed_error;
use ordo_cuda_core::graph::{capture, CacheOptions, CaptureMode, InstantiateFlags, Overflow, SharedGraphCache};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Barrier, Mutex};
use std::time::Duration;

const BUCKETS: [usize; 5] = [1, 4, 32, 256, 1024];
/// Elements after each bucket's region that no replay may touch.
const GUARD: usize = 16;
/// What `dst` holds before any run.
const UNTOUCHED: u32 = u32::MAX;
/// How long a thread waits for another's step before the test fails (rather than hangs).
const WAIT: Duration = Duration::from_secs(60);

/// The start of bucket `i`'s region of `dst` and `src`.
fn offset(i: usize) -> usize {
    BUCKETS[..i].iter().map(|b| b + GUARD).sum()
}

fn total() -> usize {
    offset(BUCKETS.len())
}

/// The byte each bucket's mark is set to.
fn mark(i: usize) -> u8 {
    0x11 * (i as u8 + 1)
}

/// Device buffers the bodies use: `src` (a pattern), `dst` (copies of `src`'s regions), `marks`
/// (one word a bucket).
struct Buffers {
    src: usize,
    dst: usize,
    marks: usize,
}

/// The work of bucket `n` on `s`: `dst[region] = src[region]` for its first `n` elements, and its
/// mark set.
///
/// # Safety
/// The buffers are alive for the work (and for every replay of what is captured).
unsafe fn step(b: &Buffers, s: StreamRef<'_>, n: usize) -> Result<()> {
    let i = BUCKETS.iter().position(|&x| x == n).expect("a bucket");
    let (src, dst, marks) = (b.src as *const u32, b.dst as *mut u32, b.marks as *mut u32);
    // SAFETY: the region of bucket `i` (`n` elements of `n + GUARD`) and its mark, alive (the
    // caller's contract).
    unsafe {
        copy::d2d_async(
            DeviceSliceMut::from_raw_parts(dst.add(offset(i)), n),
            DeviceSlice::from_raw_parts(src.add(offset(i)), n),
            s,
        )?;
        copy::memset_async(DeviceSliceMut::from_raw_parts(marks.add(i), 1), mark(i), s)
    }
}

/// Several threads, each on its own stream, run every size (in their own orders, rounds apart
/// by nothing but their own synchronises), one of them after a `capture_all`: every bucket gets
/// one graph, each run returns its bucket, and `dst` and the marks are what the CPU says; a size
/// over the largest bucket is refused.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_threads_run_buckets_at_once_against_the_cpu() {
    const THREADS: usize = 6;
    let sizes: Vec<usize> = vec![0, 1, 2, 3, 4, 5, 31, 32, 33, 200, 256, 257, 1000, 1024];
    let owner = Stream::new().unwrap();
    let o = owner.as_stream();
    let host_src: Vec<u32> = (0..total()).map(|i| (i as u32).wrapping_mul(2_654_435_761)).collect();
    let mut src = DeviceBuffer::<u32>::alloc_async(total(), o).unwrap();
    let mut dst = DeviceBuffer::<u32>::alloc_async(total(), o).unwrap();
    let mut marks = DeviceBuffer::<u32>::alloc_async(BUCKETS.len(), o).unwrap();
    copy::h2d_blocking(src.as_mut_slice(), &host_src, o).unwrap();
    let warm_and_upload = CacheOptions { warmup: true, upload: true, ..CacheOptions::default() };
    for options in [CacheOptions::default(), warm_and_upload] {
        // SAFETY: the views are of live buffers; nothing else uses them while they are written.
        unsafe {
            copy::memset_async(dst.as_mut_slice(), 0xff, o).unwrap();
            copy::memset_async(marks.as_mut_slice(), 0, o).unwrap();
        }
        o.synchronize().unwrap();
        let buffers =
            Buffers { src: src.as_ptr() as usize, dst: dst.as_mut_ptr() as usize, marks: marks.as_mut_ptr() as usize };
        let calls: Vec<AtomicUsize> = BUCKETS.iter().map(|_| AtomicUsize::new(0)).collect();
        let body = |s: StreamRef<'_>, n: usize| -> Result<()> {
            calls[BUCKETS.iter().position(|&b| b == n).unwrap()].fetch_add(1, Ordering::SeqCst);
            // SAFETY: the buffers outlive the cache (dropped below, after every stream's synchronise).
            unsafe { step(&buffers, s, n) }
        };
        // SAFETY: the buffers outlive every replay (the cache is dropped before them, after the
        // synchronises); each stream is used by one thread, and only by the cache while it captures.
        let cache =
            unsafe { SharedGraphCache::with_options(BUCKETS.to_vec(), Overflow::Error, options, body) }.unwrap();
        let start = Barrier::new(THREADS);
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let (cache, start, sizes) = (&cache, &start, &sizes);
                scope.spawn(move || {
                    let stream = Stream::new().unwrap();
                    let s = stream.as_stream();
                    start.wait();
                    if t == 0 {
                        cache.capture_all(s).unwrap();
                    }
                    for round in 0..4 {
                        for k in 0..sizes.len() {
                            let n = sizes[(k * (t + 1) + round) % sizes.len()];
                            let bucket = cache.run(s, n).unwrap();
                            assert_eq!(Some(bucket), cache.bucket_for(n), "thread {t}, size {n}");
                        }
                    }
                    let over = cache.run(s, 1025).unwrap_err();
                    assert_eq!(over.call(), "SharedGraphCache::run");
                    stream.synchronize().unwrap();
                });
            }
        });
        assert_eq!(cache.captured(), BUCKETS.len());
        let counted: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        println!("body calls a bucket ({options:?}): {counted:?}");
        let per_capture = if options.warmup { 2 } else { 1 };
        for (i, &c) in counted.iter().enumerate() {
            assert!(c >= per_capture && c <= per_capture * THREADS, "bucket {}: {c} body calls", BUCKETS[i]);
        }
        drop(cache);
        let mut got = vec![0u32; total()];
        copy::d2h_blocking(&mut got, dst.as_slice(), o).unwrap();
        let mut got_marks = vec![0u32; BUCKETS.len()];
        copy::d2h_blocking(&mut got_marks, marks.as_slice(), o).unwrap();
        for (i, &b) in BUCKETS.iter().enumerate() {
            let region = offset(i)..offset(i) + b;
            assert!(got[region.clone()] == host_src[region], "bucket {b}: its region is not a copy of src");
            assert!(got[offset(i) + b..offset(i + 1)].iter().all(|&v| v == UNTOUCHED), "bucket {b}: past its size");
            assert_eq!(got_marks[i], u32::from_ne_bytes([mark(i); 4]), "bucket {b}'s mark");
        }
    }
}

/// Two threads capture one bucket at once: thread 1's capture ends and installs first, thread
/// 2's ends after thread 1's run has returned; thread 2's graph is destroyed unlaunched, and its
/// run replays thread 1's. Each capture sets the mark to its own value (1, then 2): the mark after
/// both runs is 1.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_the_first_graph_installed_wins() {
    let owner = Stream::new().unwrap();
    let o = owner.as_stream();
    let mut marks = DeviceBuffer::<u32>::zeroed_async(1, o).unwrap();
    o.synchronize().unwrap();
    let at = marks.as_mut_ptr() as usize;
    let calls = AtomicUsize::new(0);
    let (first_in, first_in_rx) = channel::<()>();
    let (second_in, second_in_rx) = channel::<()>();
    let (release, release_rx) = channel::<()>();
    let (first_in, second_in_rx) = (Mutex::new(first_in), Mutex::new(second_in_rx));
    let (second_in, release_rx) = (Mutex::new(second_in), Mutex::new(release_rx));
    let body = |s: StreamRef<'_>, _: usize| -> Result<()> {
        let k = calls.fetch_add(1, Ordering::SeqCst);
        if k == 0 {
            first_in.lock().unwrap().send(()).unwrap();
            second_in_rx.lock().unwrap().recv_timeout(WAIT).unwrap();
        } else if k == 1 {
            second_in.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv_timeout(WAIT).unwrap();
        }
        // SAFETY: `marks` outlives the cache (dropped at the end of the test, after it).
        unsafe { copy::memset_async(DeviceSliceMut::from_raw_parts(at as *mut u32, 1), k as u8 + 1, s) }
    };
    // SAFETY: `marks` outlives every replay; each stream is used by one thread.
    let cache = unsafe { SharedGraphCache::new(vec![8], Overflow::Error, body) }.unwrap();
    let read = |s: StreamRef<'_>| {
        let mut v = [0u32];
        copy::d2h_blocking(&mut v, marks.as_slice(), s).unwrap();
        v[0]
    };
    std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            let stream = Stream::new().unwrap();
            cache.run(stream.as_stream(), 8).unwrap();
            stream.synchronize().unwrap();
        });
        first_in_rx.recv_timeout(WAIT).unwrap();
        let second = scope.spawn(|| {
            let stream = Stream::new().unwrap();
            cache.run(stream.as_stream(), 5).unwrap();
            stream.synchronize().unwrap();
        });
        first.join().unwrap();
        assert_eq!(read(o), 0x0101_0101, "thread 1's graph, replayed");
        release.send(()).unwrap();
        second.join().unwrap();
    });
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each thread captured the bucket");
    assert_eq!(cache.captured(), 1);
    assert_eq!(read(o), 0x0101_0101, "thread 2 replayed the graph installed first, not its own");
}

/// A run on a capturing stream puts the body's work into that capture (the cache captures no graph
/// of its own); replaying the caller's graph does the work.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_run_on_a_capturing_stream_goes_into_that_capture() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut marks = DeviceBuffer::<u32>::zeroed_async(1, s).unwrap();
    let at = marks.as_mut_ptr() as usize;
    let body = |cs: StreamRef<'_>, n: usize| -> Result<()> {
        // SAFETY: `marks` outlives the graph's replay (synchronised below).
        unsafe { copy::memset_async(DeviceSliceMut::from_raw_parts(at as *mut u32, 1), n as u8, cs) }
    };
    // SAFETY: as above.
    let cache = unsafe { SharedGraphCache::new(vec![2, 4], Overflow::Error, body) }.unwrap();
    // SAFETY: `marks` outlives the replay below.
    let graph = unsafe { capture(s, CaptureMode::ThreadLocal, |cs| cache.run(cs, 3).map(|_| ())) }.unwrap();
    assert_eq!(cache.captured(), 0, "the cache captured no graph of its own");
    graph.instantiate(InstantiateFlags::empty()).unwrap().launch(s).unwrap();
    let mut v = [0u32];
    copy::d2h_blocking(&mut v, marks.as_slice(), s).unwrap();
    assert_eq!(v[0], 0x0404_0404, "the body's work for bucket 4, replayed");
}

/// A close while a body call runs on another thread: that call ends with the closed error once
/// its body returns, and installs and launches nothing; later runs are refused.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_close_during_a_body_call_launches_nothing_more() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut marks = DeviceBuffer::<u32>::zeroed_async(1, s).unwrap();
    s.synchronize().unwrap();
    let at = marks.as_mut_ptr() as usize;
    let (running, running_rx) = channel::<()>();
    let (closed, closed_rx) = channel::<()>();
    let (running, closed_rx) = (Mutex::new(running), Mutex::new(closed_rx));
    let body = |cs: StreamRef<'_>, _: usize| -> Result<()> {
        running.lock().unwrap().send(()).unwrap();
        closed_rx.lock().unwrap().recv_timeout(WAIT).unwrap();
        // SAFETY: `marks` outlives the cache.
        unsafe { copy::memset_async(DeviceSliceMut::from_raw_parts(at as *mut u32, 1), 7, cs) }
    };
    // SAFETY: as above; one stream, used by one thread.
    let cache = unsafe { SharedGraphCache::new(vec![1], Overflow::Error, body) }.unwrap();
    std::thread::scope(|scope| {
        let run = scope.spawn(|| {
            let other = Stream::new().unwrap();
            let r = cache.run(other.as_stream(), 1);
            other.synchronize().unwrap();
            r
        });
        running_rx.recv_timeout(WAIT).unwrap();
        cache.close();
        closed.send(()).unwrap();
        let e = run.join().unwrap().unwrap_err();
        assert!(is_closed_error(&e), "{e}");
    });
    assert_eq!(cache.captured(), 0, "nothing installed after the close");
    assert!(is_closed_error(&cache.run(s, 1).unwrap_err()));
    let mut v = [0u32];
    copy::d2h_blocking(&mut v, marks.as_slice(), s).unwrap();
    assert_eq!(v[0], 0, "nothing launched after the close");
}
