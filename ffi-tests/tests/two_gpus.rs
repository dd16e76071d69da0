//! The C API given streams and memory of two devices, on two GPUs, device 0 current: work passed a
//! stream of device 1 runs on device 1 (the stream's device) with device 1's memory, results
//! checked; memory of device 0 passed with a stream of device 1 is ORDO_ERROR_INVALID_ARGUMENT
//! before anything runs; a timer of device 0 started on a stream of device 1 returns CUDA's
//! cudaErrorInvalidResourceHandle, not sticky; afterwards both devices work. Needs two CUDA devices: with
//! fewer it says so and passes, unless `ORDO_REQUIRE_GPUS` says the machine has two.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::sys;
use ordo_cuda_core::*;
use std::ffi::CStr;

const N: usize = 4096;

fn name(st: OrdoStatus) -> &'static CStr {
    unsafe { CStr::from_ptr(ordo_status_name(st)) }
}

/// a, b and scale on the device of `s`, `a` and `scale` set to `host`.
fn chain_buffers(s: &Stream, host: &[f32]) -> [DeviceBuffer<'static, f32>; 3] {
    let s: StreamRef<'static> = unsafe { StreamRef::from_raw(s.as_raw()).unwrap() };
    let mut a = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    let b = DeviceBuffer::<f32>::zeroed_async(N, s).unwrap();
    let mut scale = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    copy::h2d_blocking(a.as_mut_slice(), host, s).unwrap();
    copy::h2d_blocking(scale.as_mut_slice(), host, s).unwrap();
    [a, b, scale]
}

/// Three chain steps a -> b -> a -> b of out = prev * scale + 1, with scale = a = x.
fn chain3(x: f32) -> f32 {
    (0..3).fold(x, |v, _| v.mul_add(x, 1.0))
}

/// ordo's 64-step kernel.
fn heavy(mut v: f32) -> f32 {
    for _ in 0..64 {
        v = v.mul_add(0.999, 0.001);
    }
    v
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_c_api_with_streams_and_memory_of_two_devices() {
    let count = device::count().unwrap();
    if count < 2 {
        // With fewer than two devices: nothing to check, unless the machine should have two.
        let required: usize = std::env::var("ORDO_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < 2, "ORDO_REQUIRE_GPUS={required} but CUDA sees {count} device(s)");
        println!("skipped, needs two CUDA devices, found {count}");
        return;
    }
    let (d0, d1) = (Device::from_ordinal(0), Device::from_ordinal(1));
    let host: Vec<f32> = (0..N).map(|i| 0.25 + (i % 97) as f32 * 0.01).collect();
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    let [mut a1, mut b1, scale1] = chain_buffers(&s1, &host);
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    let [mut a0, mut b0, scale0] = chain_buffers(&s0, &host);
    let expect: Vec<f32> = host.iter().map(|&x| chain3(x)).collect();
    let mut got = vec![0f32; N];

    unsafe {
        // Memory of device 0 with a stream of device 1: refused before anything runs.
        let st = ordo_pdl_chain(s1.as_raw(), a0.as_mut_ptr(), b0.as_mut_ptr(), scale0.as_ptr(), N, 3, 1);
        println!("ordo_pdl_chain, stream of device 1, memory of device 0: {st} {:?}", name(st));
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        // A stream of device 1 with device 1's memory, device 0 current: runs on device 1.
        let st = ordo_pdl_chain(s1.as_raw(), a1.as_mut_ptr(), b1.as_mut_ptr(), scale1.as_ptr(), N, 3, 1);
        println!("ordo_pdl_chain, stream and memory of device 1, device 0 current: {st} {:?}", name(st));
        assert_eq!(st, ORDO_SUCCESS);
        copy::d2h_blocking(&mut got, b1.as_slice(), s1.as_stream()).unwrap();
        assert!(got == expect, "the chain on device 1");

        // A timer (events) of device 0 on a stream of device 1: CUDA refuses it, not sticky.
        let mut timer = null_mut();
        assert_eq!(ordo_timer_create(&mut timer), ORDO_SUCCESS);
        let st = ordo_timer_start(timer, s1.as_raw());
        println!("ordo_timer_start, timer of device 0, stream of device 1: {st} {:?}", name(st));
        assert_eq!(st, sys::cudaError::cudaErrorInvalidResourceHandle.0 as OrdoStatus);
        assert!(documented(st) && ordo_status_is_sticky(st) == 0, "{st}");

        // The pipeline: memory of device 0 with a stream of device 1 is refused; device 1's runs.
        let input = PinnedBuffer::from_slice(&host).unwrap();
        let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty()).unwrap();
        let st = ordo_pipeline_run(
            s1.as_raw(),
            input.as_ptr(),
            a0.as_mut_ptr(),
            b0.as_mut_ptr(),
            output.as_mut_ptr(),
            N,
            4,
            None,
            null_mut(),
        );
        println!("ordo_pipeline_run, stream of device 1, memory of device 0: {st} {:?}", name(st));
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        let st = ordo_pipeline_run(
            s1.as_raw(),
            input.as_ptr(),
            a1.as_mut_ptr(),
            b1.as_mut_ptr(),
            output.as_mut_ptr(),
            N,
            4,
            None,
            null_mut(),
        );
        println!("ordo_pipeline_run, stream and memory of device 1, device 0 current: {st} {:?}", name(st));
        assert_eq!(st, ORDO_SUCCESS);
        s1.synchronize().unwrap();
        let expect_heavy: Vec<f32> = host.iter().map(|&x| heavy(x)).collect();
        assert!(output[..] == expect_heavy[..], "the pipeline on device 1");
        assert_eq!(Device::current().unwrap(), d0, "the current device is left as it was");

        // Device 0 works: the chain and the timer on its own stream.
        assert_eq!(ordo_timer_start(timer, s0.as_raw()), ORDO_SUCCESS);
        assert_eq!(
            ordo_pdl_chain(s0.as_raw(), a0.as_mut_ptr(), b0.as_mut_ptr(), scale0.as_ptr(), N, 3, 1),
            ORDO_SUCCESS
        );
        assert_eq!(ordo_timer_stop(timer, s0.as_raw()), ORDO_SUCCESS);
        copy::d2h_blocking(&mut got, b0.as_slice(), s0.as_stream()).unwrap();
        assert!(got == expect, "the chain on device 0");
        let mut ms = 0f32;
        assert_eq!(ordo_timer_elapsed_ms(timer, &mut ms), ORDO_SUCCESS);
        ordo_timer_destroy(timer);
    }
    drop((a0, b0, scale0));
    s0.synchronize().unwrap();
    d1.set_current().unwrap();
    drop((a1, b1, scale1));
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
}

fn documented(s: OrdoStatus) -> bool {
    s == ORDO_SUCCESS || (1..=999).contains(&s) || (ORDO_LAST_CODE..=ORDO_FIRST_CODE).contains(&s)
}

/// The last error's call, after a failure.
fn last_call() -> String {
    let mut info = OrdoErrorInfo {
        size: core::mem::size_of::<OrdoErrorInfo>(),
        status: 0,
        cuda_error: 0,
        library_status: 0,
        sticky: 0,
        call: [0; ORDO_LAST_ERROR_CALL_LEN],
        message: [0; ORDO_LAST_ERROR_MESSAGE_LEN],
    };
    assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
    unsafe { CStr::from_ptr(info.call.as_ptr()) }.to_string_lossy().into_owned()
}

/// A staging ring made on device 0: its submit refuses a destination on device 1 and a stream of
/// device 1 (the DEVICE POINTERS rule, as every other export), before anything is enqueued, and the
/// ticket stays held; then the same ticket copies to device 0's memory. Before the fix the ring
/// took any device memory (`require_device`).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_staging_ring_submit_wants_memory_and_a_stream_of_its_device() {
    let count = device::count().unwrap();
    if count < 2 {
        let required: usize = std::env::var("ORDO_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < 2, "ORDO_REQUIRE_GPUS={required} but CUDA sees {count} device(s)");
        println!("skipped, needs two CUDA devices, found {count}");
        return;
    }
    let (d0, d1) = (Device::from_ordinal(0), Device::from_ordinal(1));
    d1.set_current().unwrap();
    let s1 = Stream::new().unwrap();
    let mut far = DeviceBuffer::<u8>::zeroed_async(256, s1.as_stream()).unwrap();
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
    let s0 = Stream::new().unwrap();
    let mut near = DeviceBuffer::<u8>::zeroed_async(256, s0.as_stream()).unwrap();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let mut slot: *mut core::ffi::c_void = null_mut();
    let mut ticket = 0usize;
    unsafe {
        assert_eq!(ordo_staging_ring_create(2, 256, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        core::ptr::write_bytes(slot.cast::<u8>(), 0x5a, 256);
        let st = ordo_staging_ring_submit(ring, ticket, 256, far.as_mut_ptr().cast(), s0.as_raw());
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "{:?}", name(st));
        assert_eq!(last_call(), "ordo_staging_ring_submit(device_dst)");
        let st = ordo_staging_ring_submit(ring, ticket, 256, far.as_mut_ptr().cast(), s1.as_raw());
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "{:?}", name(st));
        assert_eq!(last_call(), "ordo_staging_ring_submit(stream)");
        // The ticket is still held: refused arguments do not use it up.
        let st = ordo_staging_ring_submit(ring, ticket, 256, near.as_mut_ptr().cast(), s0.as_raw());
        assert_eq!(st, ORDO_SUCCESS, "{:?}", name(st));
    }
    let mut got = vec![0u8; 256];
    copy::d2h_blocking(&mut got, near.as_slice(), s0.as_stream()).unwrap();
    assert!(got.iter().all(|&b| b == 0x5a), "the copy to device 0");
    d1.set_current().unwrap();
    let mut untouched = vec![1u8; 256];
    copy::d2h_blocking(&mut untouched, far.as_slice(), s1.as_stream()).unwrap();
    assert!(untouched.iter().all(|&b| b == 0), "nothing reached device 1");
    d0.set_current().unwrap();
    ordo_staging_ring_destroy(ring);
    drop(near);
    s0.synchronize().unwrap();
    d1.set_current().unwrap();
    drop(far);
    s1.synchronize().unwrap();
    d0.set_current().unwrap();
}
