//! Stream-ordered pinned host memory: buffers of a host pool round-trip through the device like
//! `cudaHostAlloc` memory, the CPU waits for copies still reading memory the pool hands out again,
//! a capturing stream is refused for host access, the device's access is granted, many threads
//! share one pool; without a driver, a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::memory::{copy, HostLocation, HostPool, HostPoolBuffer, HostPoolOptions};
use ordo_cuda_core::*;
use std::time::Instant;

#[path = "support/random.rs"]
mod random;
use random::random_u32;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

/// A pool of any host memory on the current device; `None`, with a note, when ordo was built
/// against headers older than CUDA 13.0 (which cannot make one).
fn pool() -> Option<(Device, HostPool)> {
    let device = Device::current().unwrap();
    match HostPool::new(device) {
        Err(Error::Usage(u)) if u.kind == UsageKind::NotSupported && sys::CUDA_VERSION < 13000 => {
            println!("note: built against CUDA {}: {}", sys::CUDA_VERSION, u.what);
            None
        }
        pool => Some((device, pool.unwrap())),
    }
}

#[test]
fn without_a_driver_a_pool_says_so() {
    if driver_present() {
        return; // the GPU tests below cover a machine with a driver
    }
    let err = HostPool::new(Device::from_ordinal(0)).unwrap_err();
    assert!(err.to_string().contains("driver"), "{err}");
    let numa = HostPoolOptions { location: HostLocation::Numa(0), ..Default::default() };
    assert!(HostPool::with_options(Device::from_ordinal(0), numa).unwrap_err().to_string().contains("driver"));
}

/// Host-pool memory from the CPU to the device and back: data written by the CPU after the
/// buffer's stream reached its allocation, copied in, copied out into a second buffer, read by the
/// CPU; `zeroed_async` zeroes; the pool grants the device read and write access and counts what
/// it hands out. Prints the copy rates beside `cudaHostAlloc` memory (one pass, not a benchmark).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn buffers_of_a_host_pool_round_trip_through_the_device() {
    let Some((device, pool)) = pool() else { return };
    assert_eq!(pool.as_pool().access(device).unwrap(), PoolAccess::ReadWrite);
    assert_eq!(pool.as_pool().release_threshold().unwrap(), u64::MAX);
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 16 << 20; // 64 MiB of u32
    let data = random_u32(N, 91);
    let mut a = HostPoolBuffer::<u32>::alloc_async(N, &pool, s).unwrap();
    a.host_mut_blocking().unwrap().copy_from_slice(&data);
    assert!(pool.as_pool().used_bytes().unwrap() >= (N * 4) as u64);
    let mut dev = DeviceBuffer::<u32>::alloc_async(N, s).unwrap();
    let mut b = HostPoolBuffer::<u32>::alloc_async(N, &pool, s).unwrap();
    let (start, end) = (TimingEvent::new().unwrap(), TimingEvent::new().unwrap());
    start.record(s).unwrap();
    // SAFETY: `a`, `b` and `dev` are freed on `s` after the copies (stream-ordered frees); the
    // CPU reads `b` only after host_blocking has synchronised `s`.
    unsafe { copy::h2d_async(dev.as_mut_slice(), a.pinned(), s) }.unwrap();
    end.record(s).unwrap();
    // SAFETY: as above.
    unsafe { copy::d2h_async(b.pinned_mut(), dev.as_slice(), s) }.unwrap();
    assert!(b.host_blocking().unwrap() == &data[..], "host pool -> device -> host pool");
    let pool_gbps = (N * 4) as f64 / end.elapsed_ms_since(&start).unwrap() as f64 / 1e6;

    let pinned = PinnedBuffer::from_slice(&data).unwrap();
    start.record(s).unwrap();
    // SAFETY: `pinned` outlives the copy (synchronised below).
    unsafe { copy::h2d_async(dev.as_mut_slice(), pinned.pinned(), s) }.unwrap();
    end.record(s).unwrap();
    end.synchronize().unwrap();
    let pinned_gbps = (N * 4) as f64 / end.elapsed_ms_since(&start).unwrap() as f64 / 1e6;
    println!("H2D 64 MiB: host pool {pool_gbps:.1} GB/s, cudaHostAlloc {pinned_gbps:.1} GB/s (one pass)");

    let z = HostPoolBuffer::<u64>::zeroed_async(1000, &pool, s).unwrap();
    let mut dirty = HostPoolBuffer::<u64>::alloc_async(1000, &pool, s).unwrap();
    dirty.host_mut_blocking().unwrap().fill(u64::MAX);
    assert!(z.host_blocking().unwrap().iter().all(|&v| v == 0));
    assert_eq!(z.len(), 1000);
    assert_eq!(z.byte_len(), 8000);
    drop((a, b, z, dirty, dev));
    stream.synchronize().unwrap();
}

/// A buffer is dropped (freed on its stream) right after a copy from it is enqueued, and a buffer
/// of the same size is allocated on the same stream: the pool may hand out the same memory at
/// once, in stream order. The CPU writes the new buffer only after `host_mut_blocking` has
/// waited for the stream, so the copy still reads the first buffer's data. Without the wait, the
/// CPU would overwrite memory the copy (64 MiB, about a millisecond) is still reading.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_cpu_waits_for_copies_still_reading_memory_the_pool_hands_out_again() {
    let Some((_, pool)) = pool() else { return };
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 16 << 20;
    let first = random_u32(N, 5);
    let mut dev = DeviceBuffer::<u32>::alloc_async(N, s).unwrap();
    let mut reused = 0;
    for round in 0..4 {
        let mut a = HostPoolBuffer::<u32>::alloc_async(N, &pool, s).unwrap();
        a.host_mut_blocking().unwrap().copy_from_slice(&first);
        let a_ptr = a.as_ptr();
        // SAFETY: `a` is freed on `s` after the copy; `dev` outlives it.
        unsafe { copy::h2d_async(dev.as_mut_slice(), a.pinned(), s) }.unwrap();
        drop(a);
        let mut b = HostPoolBuffer::<u32>::alloc_async(N, &pool, s).unwrap();
        reused += usize::from(b.as_ptr() == a_ptr);
        b.host_mut_blocking().unwrap().fill(0xdead_0000 + round);
        let mut back = vec![0u32; N];
        copy::d2h_blocking(&mut back, dev.as_slice(), s).unwrap();
        assert!(back == first, "round {round}: the device got the CPU's later writes");
    }
    println!("the pool handed the freed memory out again in {reused} of 4 rounds");
    drop(dev);
    stream.synchronize().unwrap();
}

/// Host access on a capturing stream is refused before anything waits: the capture stays valid.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn host_access_refuses_a_capturing_stream() {
    let Some((_, pool)) = pool() else { return };
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut buf = HostPoolBuffer::<u32>::zeroed_async(64, &pool, s).unwrap();
    stream.synchronize().unwrap();
    // SAFETY: nothing else uses `s` while it captures; the capture holds no work.
    unsafe { s.begin_capture(CaptureMode::ThreadLocal) }.unwrap();
    let err = buf.host_mut_blocking().unwrap_err();
    assert!(matches!(err, Error::Usage(_)) && err.to_string().contains("capturing"), "{err}");
    assert!(buf.host_blocking().is_err());
    // SAFETY: ends the capture begun above; the empty graph is dropped.
    let graph = unsafe { s.end_capture() };
    assert!(graph.is_ok(), "the capture stayed valid: {graph:?}");
    assert!(buf.host_blocking().unwrap().iter().all(|&v| v == 0));
}

/// A pool without the device's access (CUDA's default for host pools) still copies correctly;
/// the pool reports no access. A pool on the device's host NUMA node, where the device reports
/// one. Both print their copy rate (one pass).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pool_variants_copy_correctly() {
    let device = Device::current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 8 << 20;
    let data = random_u32(N, 17);
    let variants = [
        ("no device access", HostPoolOptions { device_access: PoolAccess::None, ..Default::default() }),
        ("NUMA node of the device", HostPoolOptions { location: HostLocation::NearDevice, ..Default::default() }),
    ];
    for (name, options) in variants {
        let pool = match HostPool::with_options(device, options) {
            Ok(pool) => pool,
            Err(Error::Usage(u)) if u.kind == UsageKind::NotSupported => {
                println!("note: {name}: not available here: {}", u.what);
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        assert_eq!(pool.as_pool().access(device).unwrap(), options.device_access, "{name}");
        if options.device_access == PoolAccess::None {
            let err = HostPoolBuffer::<u32>::zeroed_async(16, &pool, s).unwrap_err();
            assert!(err.to_string().contains("read-write access"), "the device cannot write it: {err}");
        }
        let mut src = HostPoolBuffer::<u32>::alloc_async(N, &pool, s).unwrap();
        src.host_mut_blocking().unwrap().copy_from_slice(&data);
        let mut dev = DeviceBuffer::<u32>::alloc_async(N, s).unwrap();
        let t0 = Instant::now();
        // SAFETY: `src` and `dev` are freed on `s` after the copy.
        unsafe { copy::h2d_async(dev.as_mut_slice(), src.pinned(), s) }.unwrap();
        stream.synchronize().unwrap();
        println!("{name}: H2D 32 MiB {:.1} GB/s (one pass)", (N * 4) as f64 / t0.elapsed().as_secs_f64() / 1e9);
        let mut back = vec![0u32; N];
        copy::d2h_blocking(&mut back, dev.as_slice(), s).unwrap();
        assert!(back == data, "{name}");
    }
}

/// One pool, eight threads, each on its own stream: allocate, fill, copy in and out, compare,
/// free, fifty times each.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn threads_share_one_pool() {
    let Some((device, pool)) = pool() else { return };
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            let pool = &pool;
            scope.spawn(move || {
                device.set_current().unwrap();
                let stream = Stream::new().unwrap();
                let s = stream.as_stream();
                for i in 0..50u64 {
                    let n = 4096 + (t * 50 + i) as usize * 37;
                    let data = random_u32(n, t * 1000 + i + 1);
                    let mut src = HostPoolBuffer::<u32>::alloc_async(n, pool, s).unwrap();
                    src.host_mut_blocking().unwrap().copy_from_slice(&data);
                    let mut dev = DeviceBuffer::<u32>::alloc_async(n, s).unwrap();
                    let mut dst = HostPoolBuffer::<u32>::alloc_async(n, pool, s).unwrap();
                    // SAFETY: all three are freed on `s`, after the copies.
                    unsafe {
                        copy::h2d_async(dev.as_mut_slice(), src.pinned(), s).unwrap();
                        copy::d2h_async(dst.pinned_mut(), dev.as_slice(), s).unwrap();
                    }
                    assert!(dst.host_blocking().unwrap() == &data[..], "thread {t} round {i}");
                    src.free_async().unwrap();
                }
                stream.synchronize().unwrap();
            });
        }
    });
}
