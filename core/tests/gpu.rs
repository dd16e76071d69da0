//! GPU tests of the core: ordering through streams and events, timing, pinned and pageable copies,
//! pools, managed memory, devices (`with_current` on unwind too), host functions (a panic counted). Run on the GPU machine (the bundle passes --include-ignored).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::host_fn::{launch_host_fn, take_host_fn_panics};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[path = "support/gpu_lock.rs"]
mod gpu_lock;

#[path = "support/random.rs"]
mod random;
use random::random_u32;

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn device_attributes_are_sane() {
    let _gpu = gpu_lock::shared();
    assert!(device::count().unwrap() >= 1);
    let d = Device::current().unwrap();
    let (major, _) = d.compute_capability().unwrap();
    assert!(major >= 7);
    assert!(d.sm_count().unwrap() >= 1);
    assert!(d.async_engine_count().unwrap() >= 1);
    assert!(d.memory_pools_supported().unwrap());
    let (least, greatest) = d.stream_priority_range().unwrap();
    assert!(greatest <= least);
    assert!(!d.name().unwrap().as_str().is_empty());
    assert!(Device::new(device::count().unwrap()).is_err());
    assert!(matches!(d.enable_peer_access(d), Err(Error::Usage(_))));
    println!(
        "{} cc {}.{:?} sms {} engines {} priorities [{least}, {greatest}] runtime {} driver {}",
        d.name().unwrap(),
        major,
        d.compute_capability().unwrap().1,
        d.sm_count().unwrap(),
        d.async_engine_count().unwrap(),
        device::runtime_version().unwrap(),
        device::driver_version().unwrap()
    );
    assert_eq!(device::runtime_version().unwrap(), sys::CUDA_VERSION);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn streams_priorities_ids_and_flags() {
    let _gpu = gpu_lock::shared();
    let (least, greatest) = Device::current().unwrap().stream_priority_range().unwrap();
    let high = Stream::with_priority(StreamFlags::NON_BLOCKING, greatest).unwrap();
    assert_eq!(high.priority().unwrap(), greatest);
    let err = Stream::with_priority(StreamFlags::NON_BLOCKING, greatest - 1).unwrap_err();
    assert!(matches!(err, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })));
    assert!(Stream::with_priority(StreamFlags::NON_BLOCKING, least + 1).is_err());
    let s = Stream::new().unwrap();
    assert_eq!(s.flags().unwrap(), StreamFlags::NON_BLOCKING);
    assert_ne!(s.id().unwrap(), high.id().unwrap());
    assert_eq!(s.device().unwrap(), Device::current().unwrap());
    assert_eq!(s.query().unwrap(), StreamStatus::Ready);
    let b = Stream::with_flags(StreamFlags::BLOCKING).unwrap();
    assert_eq!(b.flags().unwrap(), StreamFlags::BLOCKING);
    // A borrowed view of a raw stream owned elsewhere.
    let raw = s.as_raw();
    let r = unsafe { StreamRef::from_raw(raw) }.unwrap();
    assert_eq!(r.id().unwrap(), s.id().unwrap());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn producer_and_consumer_on_two_streams_ordered_by_an_event() {
    let _gpu = gpu_lock::shared();
    const N: usize = 16 << 20; // 64 MiB: long enough that a missing wait would be seen
    let data = random_u32(N, 7);
    let producer = Stream::new().unwrap();
    let consumer = Stream::new().unwrap();
    let src = PinnedBuffer::from_slice(&data).unwrap();
    let mut out = PinnedBuffer::<u32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let mut a = DeviceBuffer::<u32>::alloc_async(N, producer.as_stream()).unwrap();
    let mut b = DeviceBuffer::<u32>::zeroed_async(N, consumer.as_stream()).unwrap();
    let ready = Event::new().unwrap();
    unsafe {
        copy::h2d_async(a.as_mut_slice(), src.pinned(), producer.as_stream()).unwrap();
    }
    ready.record(producer.as_stream()).unwrap();
    consumer.wait_event(&ready).unwrap();
    unsafe {
        copy::d2d_async(b.as_mut_slice(), a.as_slice(), consumer.as_stream()).unwrap();
        copy::d2h_async(out.pinned_mut(), b.as_slice(), consumer.as_stream()).unwrap();
    }
    // `a` is freed on the producer stream: make that free wait for the consumer's read.
    let done = Event::new().unwrap();
    done.record(consumer.as_stream()).unwrap();
    producer.wait_event(&done).unwrap();
    drop(a);
    consumer.synchronize().unwrap();
    producer.synchronize().unwrap();
    assert!(out[..] == data[..], "consumer saw data the producer had not finished writing");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn elapsed_time_agrees_with_the_host_clock() {
    let _gpu = gpu_lock::shared();
    const N: usize = 64 << 20; // 256 MiB of u32
    let s = Stream::new().unwrap();
    let src = PinnedBuffer::<u32>::from_slice(&random_u32(N, 3)).unwrap();
    let mut dev = DeviceBuffer::<u32>::alloc_async(N, s.as_stream()).unwrap();
    let (start, end) = (TimingEvent::new().unwrap(), TimingEvent::new().unwrap());
    s.synchronize().unwrap();
    let t0 = Instant::now();
    start.record(s.as_stream()).unwrap();
    unsafe { copy::h2d_async(dev.as_mut_slice(), src.pinned(), s.as_stream()).unwrap() };
    end.record(s.as_stream()).unwrap();
    end.synchronize().unwrap();
    let host_ms = t0.elapsed().as_secs_f64() * 1e3;
    let gpu_ms = end.elapsed_ms_since(&start).unwrap() as f64;
    println!(
        "256 MiB H2D: events {gpu_ms:.3} ms, host clock {host_ms:.3} ms, {:.1} GB/s",
        (N * 4) as f64 / gpu_ms / 1e6
    );
    // The events bracket part of the host interval, so they cannot measure more than it; how much
    // less depends on the machine's load, which is not this test's business.
    assert!(gpu_ms > 0.0 && gpu_ms <= host_ms + 0.1, "gpu {gpu_ms} host {host_ms}");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn elapsed_time_of_an_unrecorded_event_is_a_clear_error() {
    let _gpu = gpu_lock::shared();
    let s = Stream::new().unwrap();
    let (start, end) = (TimingEvent::new().unwrap(), TimingEvent::new().unwrap());
    start.record(s.as_stream()).unwrap();
    s.synchronize().unwrap();
    let err = end.elapsed_ms_since(&start).unwrap_err();
    assert!(err.to_string().contains("never recorded"), "{err}");
    // The failed call left nothing behind: the stream still works.
    end.record(s.as_stream()).unwrap();
    s.synchronize().unwrap();
    assert!(end.elapsed_ms_since(&start).unwrap() >= 0.0);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pinned_copy_returns_before_it_finishes_and_pageable_blocks() {
    let _gpu = gpu_lock::shared();
    const N: usize = 16 << 20; // 64 MiB
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let data = random_u32(N, 11);
    let src = PinnedBuffer::from_slice(&data).unwrap();
    let mut dev = DeviceBuffer::<u32>::zeroed_async(N, s).unwrap();
    // A gate in front of the copy: a host function that holds the stream until the test opens it
    // (or, should the copy call wrongly wait for the copy, until its deadline passes). The copy
    // then cannot have run when the call returns, whatever the load on the machine.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gate = open.clone();
    // SAFETY: the closure polls an atomic and sleeps: no CUDA call.
    unsafe {
        host_fn::launch_host_fn(s, move || {
            let deadline = Instant::now() + std::time::Duration::from_secs(30);
            while !gate.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    }
    .unwrap();
    unsafe { copy::h2d_async(dev.as_mut_slice(), src.pinned(), s).unwrap() };
    // The call has returned: the copy is still queued behind the gate.
    let status = s.query().unwrap();
    open.store(true, std::sync::atomic::Ordering::Release);
    assert_eq!(status, StreamStatus::NotReady, "the asynchronous copy waited for the stream");

    // Pageable memory goes through the blocking copy, which returns with the data in place, after
    // the work queued before it (the pinned copy above): the stream has nothing left to run.
    let mut back = vec![0u32; N];
    copy::d2h_blocking(&mut back, dev.as_slice(), s).unwrap();
    assert_eq!(s.query().unwrap(), StreamStatus::Ready, "the blocking copy returned before its work was done");
    assert!(back == data);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn registered_host_memory_round_trip() {
    let _gpu = gpu_lock::shared();
    const N: usize = 1 << 20;
    let s = Stream::new().unwrap();
    let mut data = random_u32(N, 5);
    let expect = data.clone();
    let mut back = vec![0u32; N];
    {
        let reg = RegisteredHost::new(&mut data, HostRegisterFlags::empty()).unwrap();
        let mut reg_back = RegisteredHost::new(&mut back, HostRegisterFlags::empty()).unwrap();
        let mut dev = DeviceBuffer::<u32>::alloc_async(N, s.as_stream()).unwrap();
        unsafe {
            copy::h2d_async(dev.as_mut_slice(), reg.pinned(), s.as_stream()).unwrap();
            copy::d2h_async(reg_back.pinned_mut(), dev.as_slice(), s.as_stream()).unwrap();
        }
        s.synchronize().unwrap();
    }
    assert!(back == expect);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pool_reuses_memory_without_the_driver_allocator() {
    let _gpu = gpu_lock::shared();
    const BYTES: usize = 64 << 20;
    let d = Device::current().unwrap();
    let pool = MemPool::new(d).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    assert_eq!(pool.as_pool().release_threshold().unwrap(), u64::MAX);
    let s = Stream::new().unwrap();

    let t0 = Instant::now();
    let first = DeviceBuffer::<u8>::alloc_from_pool_async(BYTES, pool.as_pool(), s.as_stream()).unwrap();
    let first_us = t0.elapsed().as_secs_f64() * 1e6;
    let reserved = pool.as_pool().reserved_bytes().unwrap();
    assert!(reserved >= BYTES as u64);
    assert_eq!(pool.as_pool().used_bytes().unwrap(), BYTES as u64);
    first.free_async().unwrap();
    s.synchronize().unwrap();

    let t0 = Instant::now();
    let second = DeviceBuffer::<u8>::alloc_from_pool_async(BYTES, pool.as_pool(), s.as_stream()).unwrap();
    let second_us = t0.elapsed().as_secs_f64() * 1e6;
    // The pool handed back what it held: it did not grow, so the driver allocator was not called.
    assert_eq!(pool.as_pool().reserved_bytes().unwrap(), reserved);
    println!("64 MiB from a fresh pool: {first_us:.1} us; again after free: {second_us:.1} us; reserved {reserved} B");
    drop(second);
    s.synchronize().unwrap();
    pool.as_pool().trim_to(0).unwrap();
    assert_eq!(pool.as_pool().reserved_bytes().unwrap(), 0);

    let default = MemPool::device_default(d).unwrap();
    let buf = DeviceBuffer::<f32>::alloc_from_pool_async(1024, default, s.as_stream()).unwrap();
    assert_eq!(buf.len(), 1024);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn managed_memory_prefetch_and_advise() {
    let _gpu = gpu_lock::shared();
    const N: usize = 4 << 20;
    let d = Device::current().unwrap();
    let s = Stream::new().unwrap();
    let data = random_u32(N, 13);
    let mut m = ManagedBuffer::<u32>::zeroed(N, ManagedFlags::ATTACH_GLOBAL).unwrap();
    unsafe { m.as_host_slice_mut().copy_from_slice(&data) };
    m.advise(.., sys::cudaMemoryAdvise::cudaMemAdviseSetPreferredLocation, Location::Device(d)).unwrap();
    m.advise(..N / 2, sys::cudaMemoryAdvise::cudaMemAdviseSetReadMostly, Location::Device(d)).unwrap();
    m.prefetch_async(.., Location::Device(d), s.as_stream()).unwrap();
    // Read it on the device (a copy into device memory), then bring it back to the host.
    let mut dev = DeviceBuffer::<u32>::alloc_async(N, s.as_stream()).unwrap();
    unsafe {
        let view = DeviceSlice::from_raw_parts(m.as_ptr(), N);
        copy::d2d_async(dev.as_mut_slice(), view, s.as_stream()).unwrap();
    }
    m.prefetch_async(.., Location::Host, s.as_stream()).unwrap();
    let mut back = vec![0u32; N];
    copy::d2h_blocking(&mut back, dev.as_slice(), s.as_stream()).unwrap();
    assert!(back == data);
    assert!(unsafe { m.as_host_slice() } == &data[..]);
    assert!(m.prefetch_async(N..N + 1, Location::Host, s.as_stream()).is_err());
    println!("managed prefetch/advise ok, CUDA {} bindings", sys::CUDA_VERSION);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn dropping_a_buffer_while_its_stream_still_uses_it_is_safe() {
    let _gpu = gpu_lock::shared();
    const N: usize = 32 << 20;
    let s = Stream::new().unwrap();
    let data = random_u32(N, 17);
    let src = PinnedBuffer::from_slice(&data).unwrap();
    let mut out = PinnedBuffer::<u32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    {
        let mut dev = DeviceBuffer::<u32>::alloc_async(N, s.as_stream()).unwrap();
        unsafe {
            copy::h2d_async(dev.as_mut_slice(), src.pinned(), s.as_stream()).unwrap();
            copy::d2h_async(out.pinned_mut(), dev.as_slice(), s.as_stream()).unwrap();
        }
        // Dropped here with both copies still queued: the free is ordered after them.
        assert_eq!(s.query().unwrap(), StreamStatus::NotReady);
    }
    s.synchronize().unwrap();
    assert!(out[..] == data[..]);
}

/// A context tag made on one thread reads as alive on a thread that has not used CUDA yet (whose
/// first CUDA call makes the primary context current): the staging ring's loader threads ask.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_context_tag_is_alive_on_a_thread_new_to_cuda() {
    let _gpu = gpu_lock::shared();
    let _stream = Stream::new().unwrap();
    let tag = ordo_cuda_core::context::ContextTag::current().unwrap();
    assert!(tag.alive());
    assert!(std::thread::spawn(move || tag.alive()).join().unwrap(), "a fresh thread saw the context as destroyed");
}

/// Pinned buffers made without zeroing first hold exactly what was asked for; a panic while
/// filling frees the memory and propagates; `join` orders one stream after another.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pinned_buffers_without_zeroing_and_a_join_between_streams() {
    let _gpu = gpu_lock::shared();
    let data = random_u32(1 << 20, 31);
    let a = PinnedBuffer::from_slice(&data).unwrap();
    assert_eq!(&a[..], &data[..]);
    let b = PinnedBuffer::from_fn(data.len(), HostAllocFlags::empty(), |i| data[i] ^ 0x5555_5555).unwrap();
    assert!(b.iter().zip(&data).all(|(x, y)| *x == y ^ 0x5555_5555));
    let panicked = std::panic::catch_unwind(|| {
        PinnedBuffer::<u32>::from_fn(1024, HostAllocFlags::empty(), |i| if i == 500 { panic!("filling") } else { 1 })
    });
    assert!(panicked.is_err(), "the panic propagates (the half-filled allocation is freed on the way)");
    // Stream 2 joins stream 1: its copy of the device buffer sees stream 1's upload.
    let (s1, s2) = (Stream::new().unwrap(), Stream::new().unwrap());
    let via = Event::new().unwrap();
    let mut dev = DeviceBuffer::<u32>::zeroed_async(data.len(), s1.as_stream()).unwrap();
    unsafe { copy::h2d_async(dev.as_mut_slice(), a.pinned(), s1.as_stream()).unwrap() };
    s2.as_stream().join(s1.as_stream(), &via).unwrap();
    let mut back = PinnedBuffer::<u32>::zeroed(data.len(), HostAllocFlags::empty()).unwrap();
    unsafe { copy::d2h_async(back.pinned_mut(), dev.as_slice(), s2.as_stream()).unwrap() };
    s2.synchronize().unwrap();
    assert_eq!(&back[..], &data[..]);
    s1.as_stream().join(s2.as_stream(), &via).unwrap();
    drop(dev);
    s1.synchronize().unwrap();
}

/// `ordo_add_const(float* x, float c, int n)`: `x[i] += c`, hand-written PTX (checked with ptxas
/// for sm_90).
#[cfg(cuda_library_api)]
const ADD_CONST_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry ordo_add_const(
    .param .u64 p_x,
    .param .f32 p_c,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [p_x];
    ld.param.f32 %f1, [p_c];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra $L_done;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    add.f32 %f3, %f2, %f1;
    st.global.f32 [%rd4], %f3;
$L_done:
    ret;
}
";

/// A kernel loaded at run time from PTX: launched with the typed launch, checked against the
/// CPU; still launchable after every `Library` handle is dropped (its kernel keeps it loaded); a
/// name the image lacks and PTX CUDA refuses are CUDA's errors, not sticky; the same image with
/// its NUL through `from_image`.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn kernels_load_at_run_time_from_ptx_and_keep_their_library() {
    use ordo_cuda_core::library::Library;
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 100_003usize;
    let host: Vec<f32> = random_u32(n, 77).iter().map(|&v| (v % 1000) as f32 * 0.5 - 250.0).collect();
    let mut d = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
    copy::h2d_blocking(d.as_mut_slice(), &host, s).unwrap();
    let library = Library::from_ptx(ADD_CONST_PTX).unwrap();
    // SAFETY: ordo_add_const takes (float*, float, int).
    let add = unsafe { library.kernel::<(*mut f32, f32, i32)>(c"ordo_add_const") }.unwrap();
    drop(library);
    let config = launch::LaunchConfig::for_elements(n, 256).unwrap();
    // SAFETY: `d` holds n floats on this stream's device, alive until the synchronise below; the
    // kernel keeps its library loaded.
    unsafe { add.launch(s, &config, (d.as_mut_ptr(), 1.5, n as i32)) }.unwrap();
    unsafe { add.launch(s, &config, (d.as_mut_ptr(), -0.25, n as i32)) }.unwrap();
    let mut got = vec![0f32; n];
    copy::d2h_blocking(&mut got, d.as_slice(), s).unwrap();
    let expect: Vec<f32> = host.iter().map(|&v| v + 1.5 - 0.25).collect();
    assert!(got == expect, "the loaded kernel's result");
    assert!(add.as_kernel().max_active_blocks_per_sm(256, 0).unwrap() >= 1, "occupancy of a loaded kernel");

    let other = add.library().clone();
    // SAFETY: the signature is never used: the lookup fails.
    let missing = unsafe { other.kernel::<()>(c"no_such_kernel") }.unwrap_err();
    println!("missing kernel: {missing}");
    assert!(matches!(missing, Error::Cuda(ref e) if !e.is_sticky()), "{missing}");
    // PTX with an error in a kernel's body: CUDA loads lazily by default (CUDA_MODULE_LOADING,
    // CB-11), so the error shows at the load or at the kernel's lookup; either way CUDA's, not sticky.
    let bad = ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry broken()\n{\n    this is not PTX;\n}\n";
    // SAFETY: `broken` takes no parameters (and is never launched).
    let bad = Library::from_ptx(bad).and_then(|l| unsafe { l.kernel::<()>(c"broken") }.map(|_| ()));
    let bad = bad.unwrap_err();
    println!("bad PTX: {bad}");
    assert!(matches!(bad, Error::Cuda(ref e) if !e.is_sticky()), "{bad}");
    let with_nul = format!("{ADD_CONST_PTX}\0");
    // SAFETY: NUL-terminated PTX.
    let again = unsafe { Library::from_image(with_nul.as_bytes()) }.unwrap();
    // SAFETY: as above.
    let add2 = unsafe { again.kernel::<(*mut f32, f32, i32)>(c"ordo_add_const") }.unwrap();
    // SAFETY: as above.
    unsafe { add2.launch(s, &config, (d.as_mut_ptr(), 0.25, n as i32)) }.unwrap();
    copy::d2h_blocking(&mut got, d.as_slice(), s).unwrap();
    let expect: Vec<f32> = expect.iter().map(|&v| v + 0.25).collect();
    assert!(got == expect, "the second load");
    drop(d);
    stream.synchronize().unwrap();
}

/// Streams and their buffers in one struct: `SharedStreamBuffer`s beside the `Arc<Stream>` they
/// keep, the struct moved to another thread and used there, the caller's own `Arc` dropped first
/// (the buffers keep the stream alive until their frees are enqueued); contents checked.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn shared_stream_buffers_live_beside_their_stream_in_a_struct() {
    use std::sync::Arc;
    struct Engine {
        stream: Arc<Stream>,
        input: SharedStreamBuffer<u32>,
        output: SharedStreamBuffer<u32>,
    }
    let _gpu = gpu_lock::shared();
    let device = Device::current().unwrap();
    let stream = Arc::new(Stream::new().unwrap());
    let n = 65_537;
    let data = random_u32(n, 91);
    let mut engine = Engine {
        stream: Arc::clone(&stream),
        input: SharedStreamBuffer::alloc_async(n, &stream).unwrap(),
        output: SharedStreamBuffer::zeroed_async(n, &stream).unwrap(),
    };
    drop(stream); // the engine's buffers and its own Arc keep the stream
    let back = std::thread::spawn(move || {
        device.set_current().unwrap();
        let s = engine.stream.as_stream();
        copy::h2d_blocking(engine.input.as_mut_slice(), &data, s).unwrap();
        // SAFETY: both buffers live on `s` until the blocking copy below returns.
        unsafe { copy::d2d_async(engine.output.as_mut_slice(), engine.input.as_slice(), s) }.unwrap();
        let mut back = vec![0u32; n];
        copy::d2h_blocking(&mut back, engine.output.as_slice(), engine.output.stream_ref()).unwrap();
        assert_eq!(engine.input.len(), n);
        assert!(Arc::strong_count(engine.input.stream()) >= 3, "each buffer and the engine hold the stream");
        (back, data)
    })
    .join()
    .unwrap();
    assert!(back.0 == back.1, "the round trip through two shared-stream buffers");
}

/// `Device::with_current` restores the previous device when its closure panics or fails (the
/// unwind path needs two GPUs; with one it checks the value path).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn with_current_restores_the_device_when_the_closure_panics() {
    let _gpu = gpu_lock::shared();
    let n = device::count().unwrap();
    let first = Device::from_ordinal(0);
    first.set_current().unwrap();
    // One device: nothing switches, the value comes back.
    assert_eq!(first.with_current(|| Ok(5)).unwrap(), 5);
    if n < 2 {
        println!("one device: the unwind path needs two (run on a two-GPU machine)");
        return;
    }
    let second = Device::from_ordinal(1);
    let caught = std::panic::catch_unwind(|| {
        second
            .with_current(|| -> Result<()> {
                assert_eq!(Device::current().unwrap(), second);
                panic!("boom");
            })
            .unwrap();
    });
    assert!(caught.is_err());
    assert_eq!(Device::current().unwrap(), first, "the panic left device 1 current");
    // New streams land on the restored device.
    let s = Stream::new().unwrap();
    assert_eq!(s.device().unwrap(), first);
    // An error from the closure restores too.
    assert!(second.with_current(|| -> Result<()> { Err(Error::invalid("test", "x")) }).is_err());
    assert_eq!(Device::current().unwrap(), first);
}

/// A panic in a host function is caught and counted, never unwinds into CUDA, and later host
/// functions on the stream still run.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_host_fn_panic_is_counted_and_later_launches_work() {
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    take_host_fn_panics();
    // SAFETY: the closure panics and makes no CUDA call.
    unsafe { launch_host_fn(s, || panic!("deliberate panic in a host function")) }.unwrap();
    s.synchronize().unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&ran);
    // SAFETY: an atomic add: no CUDA call.
    unsafe {
        launch_host_fn(s, move || {
            r.fetch_add(1, Ordering::Relaxed);
        })
    }
    .unwrap();
    s.synchronize().unwrap();
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    assert_eq!(take_host_fn_panics(), 1);
}
