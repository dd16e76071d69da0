//! Tests on two GPUs: streams belong to their device, an event on device 0 orders work on device 1,
//! peer copies, streams and events of another device as bad input, ordo's pool for temporaries
//! following the peer grants, and an NCCL all-reduce joined to compute streams by events while
//! compute overlaps it. They need two CUDA devices: with fewer they say so and pass, unless `ORDO_REQUIRE_GPUS`
//! says the machine has two (see `two_devices_or_skip`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::pipeline::{Buffers, Pipeline, Plan, Schedule};
use ordo_cuda_core::*;
use std::time::Instant;

mod common;
use common::{heavy_cpu, random_f32};

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_streams_events_and_peer_copies() {
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_streams_events_and_peer_copies") else { return };
    const N: usize = 16 << 20;
    let data = random_f32(N, 1);
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    assert_eq!(s0.device().unwrap(), d0);
    let mut a0 = DeviceBuffer::<f32>::alloc_async(N, s0.as_stream()).unwrap();
    copy::h2d_blocking(a0.as_mut_slice(), &data, s0.as_stream()).unwrap();
    // A long kernel on device 0, then an event that device 1's stream waits on.
    for _ in 0..20 {
        unsafe { ordo_cuda_kernels::heavy(s0.as_stream(), a0.as_mut_slice()).unwrap() };
    }
    let ready = Event::new().unwrap();
    ready.record(s0.as_stream()).unwrap();

    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    assert_eq!(s1.device().unwrap(), d1);
    let peer = d1.can_access_peer(d0).unwrap();
    if peer {
        // Peer access both ways and each device's pool opened to the other: without the pool
        // grant this copy of `cudaMallocAsync` memory takes the staged path (~37 GB/s on H200s).
        d1.enable_peer_access_with_pools(d0).unwrap();
        assert_eq!(MemPool::device_default(d0).unwrap().access(d1).unwrap(), PoolAccess::ReadWrite);
        assert_eq!(MemPool::device_default(d1).unwrap().access(d0).unwrap(), PoolAccess::ReadWrite);
    }
    let mut b1 = DeviceBuffer::<f32>::zeroed_async(N, s1.as_stream()).unwrap();
    s1.wait_event(&ready).unwrap();
    let (start, end) = (TimingEvent::new().unwrap(), TimingEvent::new().unwrap());
    start.record(s1.as_stream()).unwrap();
    unsafe { copy::peer_async(b1.as_mut_slice(), d1, a0.as_slice(), d0, s1.as_stream()).unwrap() };
    end.record(s1.as_stream()).unwrap();
    let mut back = vec![0f32; N];
    copy::d2h_blocking(&mut back, b1.as_slice(), s1.as_stream()).unwrap();
    // The reference is 20 x 64 dependent FMAs on 16M elements: computed on every core.
    let mut expect = data.clone();
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    std::thread::scope(|scope| {
        for part in expect.chunks_mut(N.div_ceil(threads)) {
            scope.spawn(move || part.iter_mut().for_each(|v| *v = (0..20).fold(*v, |v, _| heavy_cpu(v))));
        }
    });
    assert!(back == expect, "device 1 saw device 0's data before its kernels finished");
    let ms = end.elapsed_ms_since(&start).unwrap();
    println!("peer access {peer}; peer copy 64 MiB device 0 -> 1: {ms:.3} ms = {:.1} GB/s", (N * 4) as f32 / ms / 1e6);
    drop(b1);
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
    drop(a0);
    s0.synchronize().unwrap();
}

/// Both devices, or `None` after saying why the test does nothing here: with fewer than two
/// devices the test passes without checking anything, unless `ORDO_REQUIRE_GPUS` says this
/// machine has two or more (`scripts/gpu-verify.sh` sets it from `nvidia-smi`), where it fails.
fn two_devices_or_skip(test: &str) -> Option<(Device, Device)> {
    let n = device::count().unwrap();
    if n < 2 {
        let required: usize = std::env::var("ORDO_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < 2, "{test}: ORDO_REQUIRE_GPUS={required} but CUDA sees {n} device(s)");
        println!("{test}: skipped, needs two CUDA devices, found {n}");
        return None;
    }
    Some((Device::from_ordinal(0), Device::from_ordinal(1)))
}

/// `MemPoolRef::set_access` and `access` round trip on a new pool and on the default pool, and a
/// kernel on device 1 reads and writes memory of device 0's default pool once the pool grants it
/// (checked against the CPU), which is what the grant is for.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_pool_access_round_trip_and_peer_kernel() {
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_pool_access_round_trip_and_peer_kernel") else { return };
    if !d1.can_access_peer(d0).unwrap() {
        println!("skipped: device 1 cannot access device 0's memory (cudaDeviceCanAccessPeer)");
        return;
    }
    d0.set_current().unwrap();
    let pool = MemPool::new(d0).unwrap();
    let p = pool.as_pool();
    assert_eq!(p.access(d0).unwrap(), PoolAccess::ReadWrite, "a pool's own device has read-write access");
    assert_eq!(p.access(d1).unwrap(), PoolAccess::None, "a new pool is closed to other devices");
    d1.enable_peer_access(d0).unwrap();
    p.set_access(d1, PoolAccess::ReadWrite).unwrap();
    assert_eq!(p.access(d1).unwrap(), PoolAccess::ReadWrite);
    p.set_access(d1, PoolAccess::None).unwrap();
    assert_eq!(p.access(d1).unwrap(), PoolAccess::None);
    let read_only = p.set_access(d1, PoolAccess::Read);
    println!("read-only access to a device pool: {read_only:?}");
    if let Err(e) = read_only {
        assert!(e.call() == "cudaMemPoolSetAccess" && !e.is_sticky(), "{e}");
    }
    drop(pool);

    d0.enable_peer_access_with_pools(d1).unwrap();
    d0.enable_peer_access_with_pools(d1).unwrap(); // again: harmless
    let default0 = MemPool::device_default(d0).unwrap();
    assert_eq!(default0.access(d1).unwrap(), PoolAccess::ReadWrite);
    assert_eq!(MemPool::device_default(d1).unwrap().access(d0).unwrap(), PoolAccess::ReadWrite);

    const N: usize = 1 << 20;
    let data = random_f32(N, 21);
    let s0 = Stream::new().unwrap();
    let mut x0 = DeviceBuffer::<f32>::alloc_async(N, s0.as_stream()).unwrap();
    copy::h2d_blocking(x0.as_mut_slice(), &data, s0.as_stream()).unwrap();
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    // A kernel on device 1 writes device 0's pool memory in place.
    unsafe { ordo_cuda_kernels::add_one(s1.as_stream(), x0.as_mut_slice()).unwrap() };
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
    let mut back = vec![0f32; N];
    copy::d2h_blocking(&mut back, x0.as_slice(), s0.as_stream()).unwrap();
    let expect: Vec<f32> = data.iter().map(|v| v + 1.0).collect();
    assert!(back == expect, "device 1's kernel on device 0's pool memory");
    drop(x0);
    s0.synchronize().unwrap();
}

/// Streams and events of another device, device 0 current. A launch onto a stream of device 1
/// runs on device 1 (CUDA 13 runs a launch on the stream's device; ordo passes the stream
/// through), checked with device 1's memory. An event of device 0 recorded on a stream of device
/// 1 is CUDA's cudaErrorInvalidResourceHandle, not sticky; the elapsed time between events of the
/// two devices is ordo's usage error saying so. A pipeline of device 0 run from a stream of device 1 is
/// ordo's usage error. Waiting on an event of the other device is legal, and orders the work.
/// Afterwards both devices work (results checked).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_streams_and_events_of_another_device() {
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_streams_and_events_of_another_device") else { return };
    const N: usize = 4099;
    let data = random_f32(N, 7);
    // k kernels of x += 1, in f32 as the device rounds.
    let plus = |k: u32| -> Vec<f32> { data.iter().map(|&v| (0..k).fold(v, |v, _| v + 1.0)).collect() };
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    let e1 = TimingEvent::new().unwrap();
    let mut x1 = DeviceBuffer::<f32>::alloc_async(N, s1.as_stream()).unwrap();
    copy::h2d_blocking(x1.as_mut_slice(), &data, s1.as_stream()).unwrap();
    e1.record(s1.as_stream()).unwrap();
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    let e0 = TimingEvent::new().unwrap();
    let mut x0 = DeviceBuffer::<f32>::alloc_async(N, s0.as_stream()).unwrap();
    copy::h2d_blocking(x0.as_mut_slice(), &data, s0.as_stream()).unwrap();
    let mut back = vec![0f32; N];

    // A launch onto device 1's stream, with device 0 current, runs on device 1.
    unsafe { ordo_cuda_kernels::add_one(s1.as_stream(), x1.as_mut_slice()).unwrap() };
    copy::d2h_blocking(&mut back, x1.as_slice(), s1.as_stream()).unwrap();
    assert!(back == plus(1), "the launch ran on device 1");
    assert_eq!(Device::current().unwrap(), d0);

    // CUDA 13.0 refuses it: cudaErrorInvalidResourceHandle, not sticky.
    let record = e0.record(s1.as_stream());
    println!("event of device 0 recorded on a stream of device 1: {record:?}");
    let e = record.unwrap_err();
    assert_eq!(e.cuda_code(), Some(ordo_cuda_core::sys::cudaError::cudaErrorInvalidResourceHandle), "{e}");
    assert!(!e.is_sticky() && e.call() == "cudaEventRecord", "{e}");
    e0.record(s0.as_stream()).unwrap();
    e0.synchronize().unwrap();
    e1.synchronize().unwrap();
    let elapsed = e0.elapsed_ms_since(&e1);
    println!("elapsed time between events of two devices: {elapsed:?}");
    let e = elapsed.unwrap_err();
    assert!(!e.is_sticky() && e.to_string().contains("different devices"), "{e}");

    let mut p = Pipeline::new(3).unwrap();
    let input = PinnedBuffer::from_slice(&data).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let mut dev_out = DeviceBuffer::<f32>::alloc_async(N, s0.as_stream()).unwrap();
    let buffers = Buffers {
        input: input.pinned(),
        dev_in: x0.as_mut_slice(),
        dev_out: dev_out.as_mut_slice(),
        output: output.pinned_mut(),
    };
    let plan = Plan { chunks: 4, schedule: Schedule::Staged };
    let run =
        unsafe { p.run(s1.as_stream(), buffers, plan, |cs, i, o| ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)) }
            .unwrap_err();
    println!("pipeline of device 0 run from a stream of device 1: {run}");
    assert!(run.to_string().contains("another device"), "{run}");

    // Legal: device 0's stream waits on device 1's work (a long kernel there), then reads it.
    for _ in 0..50 {
        unsafe { ordo_cuda_kernels::add_one(s1.as_stream(), x1.as_mut_slice()).unwrap() };
    }
    d1.set_current().unwrap();
    let ready = Event::new().unwrap();
    d0.set_current().unwrap();
    ready.record(s1.as_stream()).unwrap();
    s0.wait_event(&ready).unwrap();
    unsafe { copy::peer_async(x0.as_mut_slice(), d0, x1.as_slice(), d1, s0.as_stream()).unwrap() };
    copy::d2h_blocking(&mut back, x0.as_slice(), s0.as_stream()).unwrap();
    assert!(back == plus(51), "device 0 read device 1's buffer after its 51 kernels");
    // Both devices still work.
    unsafe { ordo_cuda_kernels::add_one(s0.as_stream(), x0.as_mut_slice()).unwrap() };
    copy::d2h_blocking(&mut back, x0.as_slice(), s0.as_stream()).unwrap();
    assert!(back == plus(52));
    drop((x0, dev_out));
    s0.synchronize().unwrap();
    d1.set_current().unwrap();
    unsafe { ordo_cuda_kernels::add_one(s1.as_stream(), x1.as_mut_slice()).unwrap() };
    copy::d2h_blocking(&mut back, x1.as_slice(), s1.as_stream()).unwrap();
    assert!(back == plus(52));
    drop(x1);
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_nccl_all_reduce_overlaps_compute() {
    use ordo_cuda_libs::nccl::Communicators;
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_nccl_all_reduce_overlaps_compute") else { return };
    const N: usize = 32 << 20; // 128 MiB a device
    const C: usize = 8 << 20;
    let mut comms = Communicators::new(&[d0, d1]).unwrap();
    println!("NCCL version {}", comms.version().unwrap());
    let inputs = [random_f32(N, 11), random_f32(N, 12)];
    let compute_in = random_f32(C, 13);
    let mut comm_streams = Vec::new();
    let mut compute_streams = Vec::new();
    for d in [d0, d1] {
        d.set_current().unwrap();
        comm_streams.push(Stream::new().unwrap());
        compute_streams.push(Stream::new().unwrap());
    }
    let mut send = Vec::new();
    let mut recv = Vec::new();
    let mut work = Vec::new();
    for (i, d) in [d0, d1].into_iter().enumerate() {
        d.set_current().unwrap();
        let s = comm_streams[i].as_stream();
        let mut b = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
        copy::h2d_blocking(b.as_mut_slice(), &inputs[i], s).unwrap();
        send.push(b);
        recv.push(DeviceBuffer::<f32>::zeroed_async(N, s).unwrap());
        let cs = compute_streams[i].as_stream();
        let mut w = DeviceBuffer::<f32>::alloc_async(C, cs).unwrap();
        copy::h2d_blocking(w.as_mut_slice(), &compute_in, cs).unwrap();
        work.push(w);
        s.synchronize().unwrap();
    }
    let t0 = Instant::now();
    // The collective on the comm streams; compute on the compute streams at the same time.
    {
        let send_views: Vec<_> = send.iter().map(|b| b.as_slice()).collect();
        let mut recv_views: Vec<_> = recv.iter_mut().map(|b| b.as_mut_slice()).collect();
        let streams: Vec<_> = comm_streams.iter().map(|s| s.as_stream()).collect();
        unsafe { comms.all_reduce_sum_f32(&send_views, &mut recv_views, &streams).unwrap() };
    }
    let mut joins = Vec::new();
    for (i, d) in [d0, d1].into_iter().enumerate() {
        d.set_current().unwrap();
        for _ in 0..10 {
            unsafe { ordo_cuda_kernels::heavy(compute_streams[i].as_stream(), work[i].as_mut_slice()).unwrap() };
        }
        // Join: the compute stream waits for the collective before anything that reads `recv`.
        let done = Event::new().unwrap();
        done.record(comm_streams[i].as_stream()).unwrap();
        compute_streams[i].wait_event(&done).unwrap();
        joins.push(done);
    }
    for (i, d) in [d0, d1].into_iter().enumerate() {
        d.set_current().unwrap();
        compute_streams[i].synchronize().unwrap();
    }
    let both_ms = t0.elapsed().as_secs_f64() * 1e3;
    let expect: Vec<f32> = inputs[0].iter().zip(&inputs[1]).map(|(a, b)| a + b).collect();
    let expect_work: Vec<f32> = compute_in.iter().map(|&v| (0..10).fold(v, |v, _| heavy_cpu(v))).collect();
    for (i, d) in [d0, d1].into_iter().enumerate() {
        d.set_current().unwrap();
        let s = compute_streams[i].as_stream();
        let mut got = vec![0f32; N];
        copy::d2h_blocking(&mut got, recv[i].as_slice(), s).unwrap();
        assert!(got == expect, "all-reduce result on device {i}");
        let mut w = vec![0f32; C];
        copy::d2h_blocking(&mut w, work[i].as_slice(), s).unwrap();
        assert!(w == expect_work, "compute result on device {i}");
    }
    println!("NCCL all-reduce of 128 MiB on 2 GPUs with 10 heavy kernels overlapping: {both_ms:.2} ms wall");
    for (i, d) in [d0, d1].into_iter().enumerate().rev() {
        d.set_current().unwrap();
        drop(work.pop());
        drop(recv.pop());
        drop(send.pop());
        compute_streams[i].synchronize().unwrap();
        comm_streams[i].synchronize().unwrap();
    }
    d0.set_current().unwrap();
}

/// One kernel, launched through the default path (one driver handle for every device) on a
/// stream of each device, with device 0 current throughout: each launch runs on its stream's
/// device (the handle is launched in the stream's context); the runtime path agrees. Results
/// checked on both devices.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_one_kernel_handle_for_both_devices() {
    use ordo_cuda_core::launch::LaunchConfig;
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_one_kernel_handle_for_both_devices") else { return };
    const N: usize = 1 << 16;
    let data = random_f32(N, 7);
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    let mut b1 = DeviceBuffer::<f32>::alloc_async(N, s1.as_stream()).unwrap();
    copy::h2d_blocking(b1.as_mut_slice(), &data, s1.as_stream()).unwrap();
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    let mut b0 = DeviceBuffer::<f32>::alloc_async(N, s0.as_stream()).unwrap();
    copy::h2d_blocking(b0.as_mut_slice(), &data, s0.as_stream()).unwrap();
    let add = ordo_cuda_kernels::kernel::add_one();
    let config = LaunchConfig::for_elements(N, 256).unwrap();
    for _ in 0..3 {
        // SAFETY: each buffer holds N floats on its stream's device, read back below; device 0
        // stays current, device 1's launches go to device 1's stream.
        unsafe {
            add.launch(s0.as_stream(), &config, (b0.as_mut_ptr(), N as i32)).unwrap();
            add.launch(s1.as_stream(), &config, (b1.as_mut_ptr(), N as i32)).unwrap();
            add.launch_runtime(s1.as_stream(), &config, (b1.as_mut_ptr(), N as i32)).unwrap();
        }
    }
    assert_eq!(Device::current().unwrap(), d0);
    let mut back = vec![0f32; N];
    copy::d2h_blocking(&mut back, b0.as_slice(), s0.as_stream()).unwrap();
    assert!(back == data.iter().map(|v| v + 3.0).collect::<Vec<_>>(), "device 0");
    copy::d2h_blocking(&mut back, b1.as_slice(), s1.as_stream()).unwrap();
    assert!(back == data.iter().map(|v| v + 6.0).collect::<Vec<_>>(), "device 1");
    drop(b1);
    drop(b0);
    s1.synchronize().unwrap();
    s0.synchronize().unwrap();
}

/// ordo's pool for temporaries follows the peer grants: device 0's pool, made before
/// `enable_peer_access_with_pools`, is granted by it; device 1's, made after, copies the grant of
/// device 1's current pool when it is made. A kernel on device 1 then writes memory of device 0's
/// pool for temporaries (checked against the CPU), and each device's temporaries come from its
/// own pool.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_ordos_pool_for_temporaries_follows_the_peer_grants() {
    use ordo_cuda_core::memory::temporaries;
    let Some((d0, d1)) = two_devices_or_skip("two_gpus_ordos_pool_for_temporaries_follows_the_peer_grants") else {
        return;
    };
    if !d1.can_access_peer(d0).unwrap() || !d0.can_access_peer(d1).unwrap() {
        println!("skipped: the devices cannot access each other's memory (cudaDeviceCanAccessPeer)");
        return;
    }
    d0.set_current().unwrap();
    let pool0 = temporaries::pool(d0).unwrap();
    d0.enable_peer_access_with_pools(d1).unwrap();
    assert_eq!(pool0.access(d1).unwrap(), PoolAccess::ReadWrite, "granted by enable_peer_access_with_pools");
    d1.set_current().unwrap();
    let pool1 = temporaries::pool(d1).unwrap();
    assert_ne!(pool0, pool1, "one pool a device");
    assert_eq!(pool1.access(d0).unwrap(), PoolAccess::ReadWrite, "copied from device 1's current pool");

    const N: usize = 1 << 16;
    let data = random_f32(N, 33);
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    assert_eq!(temporaries::pool_for(None, s0.as_stream()).unwrap(), Some(pool0));
    let mut x0 = DeviceBuffer::<f32>::alloc_from_pool_async(N, pool0, s0.as_stream()).unwrap();
    copy::h2d_blocking(x0.as_mut_slice(), &data, s0.as_stream()).unwrap();
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    assert_eq!(temporaries::pool_for(None, s1.as_stream()).unwrap(), Some(pool1));
    // With device 1 current, a stream of device 0 still names device 0's pool.
    assert_eq!(temporaries::pool_for(None, s0.as_stream()).unwrap(), Some(pool0));
    // SAFETY: `x0` holds N floats and outlives the kernel (synchronised below).
    unsafe { ordo_cuda_kernels::add_one(s1.as_stream(), x0.as_mut_slice()).unwrap() };
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
    let mut back = vec![0f32; N];
    copy::d2h_blocking(&mut back, x0.as_slice(), s0.as_stream()).unwrap();
    let expect: Vec<f32> = data.iter().map(|v| v + 1.0).collect();
    assert!(back == expect, "device 1's kernel on device 0's pool for temporaries");
    drop(x0);
    s0.synchronize().unwrap();
}
