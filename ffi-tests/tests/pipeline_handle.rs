//! `ordo_pipeline` handles on a GPU: 12-byte elements (three `u32` fields) through temporaries
//! from the caller's own pool, eagerly and inside the caller's global-mode capture, checked
//! against a CPU reference. The compute rotates each element's fields with three strided
//! device-to-device copies (`cudaMemcpy2DAsync`), so that each element's result depends on the
//! element having been cut whole and on every field having moved. Options and run arguments are
//! refused before CUDA, and a stencil run whose input and output overlap is refused. Every test
//! that makes CUDA calls holds `gpu_lock` (one captures in global mode).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;

const FIELDS: usize = 3;
const ELEMENT: usize = FIELDS * 4;

fn cuda(code: sys::cudaError_t, what: &str) {
    assert_eq!(code, sys::cudaError::cudaSuccess, "{what}");
}

/// out.field[(f + 1) % 3] = in.field[f] for every element: three strided copies on `s`.
unsafe extern "C" fn rotate_fields(
    s: sys::cudaStream_t,
    input: *const c_void,
    output: *mut c_void,
    n: usize,
    user: *mut c_void,
) -> OrdoStatus {
    let calls = unsafe { &*user.cast::<std::sync::atomic::AtomicUsize>() };
    calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    for f in 0..FIELDS {
        let to = (f + 1) % FIELDS;
        let code = unsafe {
            sys::cudaMemcpy2DAsync(
                output.cast::<u8>().add(to * 4).cast(),
                ELEMENT,
                input.cast::<u8>().add(f * 4).cast(),
                ELEMENT,
                4,
                n,
                sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
                s,
            )
        };
        if code != sys::cudaError::cudaSuccess {
            return code.0 as OrdoStatus;
        }
    }
    ORDO_SUCCESS
}

/// Elements whose fields are all non-zero and differ from each other and from other elements.
fn input(n: usize, seed: u32) -> Vec<u32> {
    (0..n as u32)
        .flat_map(|i| [i * 3 + 1 + seed, (i * 7 + 2) ^ 0x5a5a_0000, i.wrapping_mul(2_654_435_761) | 1])
        .collect()
}

fn reference(data: &[u32]) -> Vec<u32> {
    data.chunks(FIELDS).flat_map(|e| [e[2], e[0], e[1]]).collect()
}

fn pinned_u32(n: usize) -> *mut u32 {
    let mut h = null_mut();
    cuda(unsafe { sys::cudaHostAlloc(&mut h, n * 4, 0) }, "cudaHostAlloc");
    h.cast()
}

fn capture_status(s: sys::cudaStream_t) -> sys::cudaStreamCaptureStatus {
    let mut st = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    cuda(unsafe { sys::cudaStreamIsCapturing(s, &mut st) }, "cudaStreamIsCapturing");
    st
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_pipeline_of_12_byte_elements_from_the_callers_pool_eagerly_and_in_a_global_capture() {
    let _gpu = gpu_lock();
    let n = 100_003; // elements: no chunk count divides it
    let values = n * FIELDS;
    let device = ordo_cuda_core::Device::from_ordinal(0);
    cuda(unsafe { sys::cudaSetDevice(0) }, "cudaSetDevice");
    let pool = ordo_cuda_core::memory::MemPool::new(device).unwrap();
    // Kept reserved across synchronisations, so that the pool's use is visible afterwards.
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    assert_eq!(pool.as_pool().reserved_bytes().unwrap(), 0, "a fresh pool");
    let (_, greatest) = device.stream_priority_range().unwrap();
    let mut s = null_mut();
    cuda(unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }, "cudaStreamCreate");
    let (host_in, host_out) = (pinned_u32(values), pinned_u32(values));
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let user = (&calls as *const std::sync::atomic::AtomicUsize).cast_mut().cast::<c_void>();

    for (chunks, streams, priority, timing) in [(0, 0, 0, 0), (7, 4, greatest, 1), (0, 8, greatest, 0)] {
        let options = OrdoPipelineOptions {
            size: core::mem::size_of::<OrdoPipelineOptions>(),
            device: 0,
            element_size: ELEMENT,
            streams,
            priority,
            chunks,
            stage_timing: timing,
            pool: pool.as_pool().as_raw(),
        };
        let mut p: *mut OrdoPipeline = null_mut();
        assert_eq!(unsafe { ordo_pipeline_create(&options, &mut p) }, ORDO_SUCCESS);
        let what = format!("chunks {chunks}, {streams} streams, priority {priority}, timing {timing}");

        // Eagerly, both device buffers temporaries from the pool.
        let data = input(n, chunks as u32);
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), host_in, values) };
        unsafe { core::ptr::write_bytes(host_out, 0, values) };
        calls.store(0, std::sync::atomic::Ordering::Relaxed);
        let st = unsafe {
            ordo_pipeline_run_on(
                p,
                s,
                host_in.cast(),
                null_mut(),
                null_mut(),
                host_out.cast(),
                n,
                Some(rotate_fields),
                user,
            )
        };
        assert_eq!(st, ORDO_SUCCESS, "{what}: eager run");
        cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize");
        let got = unsafe { core::slice::from_raw_parts(host_out, values) };
        assert_eq!(got, reference(&data).as_slice(), "{what}: eager result");
        let chunk_calls = calls.load(std::sync::atomic::Ordering::Relaxed);
        assert!(chunk_calls >= 1 && (chunks == 0 || chunk_calls == chunks), "{what}: {chunk_calls} chunks");
        assert!(pool.as_pool().reserved_bytes().unwrap() >= (values * 4) as u64, "{what}: temporaries from the pool");

        // Inside the caller's global-mode capture, replayed twice with new input each time.
        cuda(
            unsafe { sys::cudaStreamBeginCapture(s, sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal) },
            "begin capture",
        );
        let st = unsafe {
            ordo_pipeline_run_on(
                p,
                s,
                host_in.cast(),
                null_mut(),
                null_mut(),
                host_out.cast(),
                n,
                Some(rotate_fields),
                user,
            )
        };
        assert_eq!(st, ORDO_SUCCESS, "{what}: captured run");
        assert_eq!(
            capture_status(s),
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive,
            "{what}: the capture is still valid"
        );
        let mut graph = null_mut();
        cuda(unsafe { sys::cudaStreamEndCapture(s, &mut graph) }, "end capture");
        let mut exec = null_mut();
        cuda(unsafe { sys::cudaGraphInstantiate(&mut exec, graph, 0) }, "instantiate");
        for replay in 1..=2u32 {
            let data = input(n, 1000 * replay + chunks as u32);
            unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), host_in, values) };
            unsafe { core::ptr::write_bytes(host_out, 0, values) };
            cuda(unsafe { sys::cudaGraphLaunch(exec, s) }, "launch");
            cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize the replay");
            let got = unsafe { core::slice::from_raw_parts(host_out, values) };
            assert_eq!(got, reference(&data).as_slice(), "{what}: replay {replay}");
        }
        cuda(unsafe { sys::cudaGraphExecDestroy(exec) }, "exec destroy");
        cuda(unsafe { sys::cudaGraphDestroy(graph) }, "graph destroy");
        ordo_pipeline_destroy(p);
        assert_eq!(
            unsafe {
                ordo_pipeline_run_on(
                    p,
                    s,
                    host_in.cast(),
                    null_mut(),
                    null_mut(),
                    host_out.cast(),
                    n,
                    Some(rotate_fields),
                    user,
                )
            },
            ORDO_ERROR_INVALID_HANDLE,
            "{what}: destroyed"
        );
    }
    cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize");
    unsafe {
        sys::cudaFreeHost(host_in.cast());
        sys::cudaFreeHost(host_out.cast());
        sys::cudaStreamDestroy(s);
    }
    drop(pool);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_pool_the_device_cannot_use_and_a_stream_of_another_device_are_refused() {
    let _gpu = gpu_lock();
    cuda(unsafe { sys::cudaSetDevice(0) }, "cudaSetDevice");
    let count = ordo_cuda_core::device::count().unwrap();
    let mut options = OrdoPipelineOptions {
        size: core::mem::size_of::<OrdoPipelineOptions>(),
        device: 0,
        element_size: 4,
        streams: 0,
        priority: 0,
        chunks: 0,
        stage_timing: 0,
        pool: null_mut(),
    };
    let mut p: *mut OrdoPipeline = null_mut();
    let (least, greatest) = ordo_cuda_core::Device::from_ordinal(0).stream_priority_range().unwrap();
    for priority in [least + 1, greatest - 1] {
        options.priority = priority;
        assert_eq!(
            unsafe { ordo_pipeline_create(&options, &mut p) },
            ORDO_ERROR_INVALID_ARGUMENT,
            "priority {priority}"
        );
    }
    options.priority = 0;
    options.device = count as i32;
    assert_eq!(unsafe { ordo_pipeline_create(&options, &mut p) }, ORDO_ERROR_INVALID_ARGUMENT, "no such device");
    if count < 2 {
        return;
    }
    // A pool of device 1 without access for device 0.
    let pool = ordo_cuda_core::memory::MemPool::new(ordo_cuda_core::Device::from_ordinal(1)).unwrap();
    options.device = 0;
    options.pool = pool.as_pool().as_raw();
    assert_eq!(unsafe { ordo_pipeline_create(&options, &mut p) }, ORDO_ERROR_INVALID_ARGUMENT, "another device's pool");
    // A pipeline of device 1, run on a stream of device 0.
    options.device = 1;
    assert_eq!(unsafe { ordo_pipeline_create(&options, &mut p) }, ORDO_SUCCESS);
    let host = pinned_u32(16);
    let mut s = null_mut();
    cuda(unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }, "cudaStreamCreate");
    let st =
        unsafe { ordo_pipeline_run_on(p, s, host.cast(), null_mut(), null_mut(), host.cast(), 16, None, null_mut()) };
    assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "a stream of another device");
    ordo_pipeline_destroy(p);
    unsafe {
        sys::cudaStreamDestroy(s);
        sys::cudaFreeHost(host.cast());
    }
}

/// Options and run arguments are refused before any CUDA call: short or zero sizes, out-of-range
/// fields, misaligned options and out, stale, forged and NULL handles, overflowing or zero sizes,
/// chunk counts past the elements or 65536, a misaligned host pointer.
#[test]
fn options_and_arguments_are_refused_before_cuda() {
    let _gpu = gpu_lock();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let size = core::mem::size_of::<OrdoPipelineOptions>();
    let ok = OrdoPipelineOptions {
        size,
        device: -1,
        element_size: 4,
        streams: 0,
        priority: 0,
        chunks: 0,
        stage_timing: 0,
        pool: null_mut(),
    };
    let mut out: *mut OrdoPipeline = null_mut();
    for (what, o) in [
        ("short size", OrdoPipelineOptions { size: size - 1, ..ok }),
        ("size 0", OrdoPipelineOptions { size: 0, ..ok }),
        ("element_size 0", OrdoPipelineOptions { element_size: 0, ..ok }),
        ("streams 65", OrdoPipelineOptions { streams: 65, ..ok }),
        ("chunks 65537", OrdoPipelineOptions { chunks: (1 << 16) + 1, ..ok }),
        ("stage_timing 2", OrdoPipelineOptions { stage_timing: 2, ..ok }),
        ("stage_timing -1", OrdoPipelineOptions { stage_timing: -1, ..ok }),
        ("device -2", OrdoPipelineOptions { device: -2, ..ok }),
        ("device i32::MIN", OrdoPipelineOptions { device: i32::MIN, ..ok }),
    ] {
        assert_eq!(unsafe { ordo_pipeline_create(&o, &mut out) }, ia, "{what}");
        assert!(out.is_null(), "{what}: out untouched");
    }
    // A struct longer than this version's: only this version's fields are read (bad ones refused).
    #[repr(C)]
    struct Longer {
        o: OrdoPipelineOptions,
        extra: [u64; 4],
    }
    let longer = Longer { o: OrdoPipelineOptions { size: size + 32, element_size: 0, ..ok }, extra: [!0; 4] };
    assert_eq!(unsafe { ordo_pipeline_create(&longer.o, &mut out) }, ia);
    // Misaligned options and out.
    let mut raw = [0u64; 16];
    let mis = unsafe { raw.as_mut_ptr().cast::<u8>().add(4) }.cast::<OrdoPipelineOptions>();
    unsafe { mis.write_unaligned(ok) };
    assert_eq!(unsafe { ordo_pipeline_create(mis, &mut out) }, ia, "misaligned options");
    let mis_out = unsafe { raw.as_mut_ptr().cast::<u8>().add(1) }.cast::<*mut OrdoPipeline>();
    assert_eq!(unsafe { ordo_pipeline_create(&ok, mis_out) }, ia, "misaligned out");
    assert_eq!(unsafe { ordo_pipeline_create(&ok, null_mut()) }, ia, "null out");
    // Runs on stale / forged / NULL handles.
    let mut b = [0u32; 8];
    let legacy = sys::cudaStreamLegacy();
    for h in [null_mut(), 0x1234usize as *mut OrdoPipeline, usize::MAX as *mut OrdoPipeline] {
        let st = unsafe {
            ordo_pipeline_run_on(
                h,
                legacy,
                b.as_ptr().cast(),
                null_mut(),
                null_mut(),
                b.as_mut_ptr().cast(),
                2,
                None,
                null_mut(),
            )
        };
        assert_eq!(st, ORDO_ERROR_INVALID_HANDLE);
        ordo_pipeline_destroy(h);
    }
    // ordo_pipeline_run: overflowing n, zero n, chunks 0 / over n / over 65536, misaligned host.
    let (hi, ho) = (b.as_ptr(), b.as_mut_ptr());
    let (di, dout) = (b.as_mut_ptr().cast::<f32>(), b.as_mut_ptr().cast::<f32>());
    for (what, n, chunks, hin) in [
        ("n * 4 overflows", usize::MAX / 2, 1, hi.cast::<f32>()),
        ("n * 4 over isize::MAX", isize::MAX as usize / 4 + 1, 1, hi.cast::<f32>()),
        ("n 0", 0, 1, hi.cast::<f32>()),
        ("chunks 0", 8, 0, hi.cast::<f32>()),
        ("chunks over n", 8, 9, hi.cast::<f32>()),
        ("chunks over 65536", 1 << 20, (1 << 16) + 1, hi.cast::<f32>()),
        ("misaligned host_in", 4, 1, unsafe { hi.cast::<u8>().add(2) }.cast::<f32>()),
    ] {
        let st = unsafe { ordo_pipeline_run(legacy, hin, di, dout, ho.cast(), n, chunks, None, null_mut()) };
        assert_eq!(st, ia, "{what}");
    }
}

/// A stencil run whose input overlaps its output, on the host or on the device, is refused before
/// any CUDA call (its computes would read rows neighbouring chunks write); adjacent buffers run.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_stencil_buffers_that_overlap_are_refused() {
    let _gpu = gpu_lock();
    unsafe extern "C" fn count(
        _: sys::cudaStream_t,
        _: *const c_void,
        _: *mut c_void,
        _: usize,
        _: usize,
        _: usize,
        _: usize,
        user: *mut c_void,
    ) -> OrdoStatus {
        // SAFETY: `user` is the test's counter, alive for the call.
        unsafe { &*user.cast::<AtomicUsize>() }.fetch_add(1, Ordering::Relaxed);
        ORDO_SUCCESS
    }
    let (rows, row) = (64usize, 256usize);
    let bytes = rows * row;
    let options = OrdoPipelineOptions {
        size: core::mem::size_of::<OrdoPipelineOptions>(),
        device: -1,
        element_size: 4,
        streams: 4,
        priority: 0,
        chunks: 4,
        stage_timing: 0,
        pool: null_mut(),
    };
    let mut pipeline: *mut OrdoPipeline = null_mut();
    let mut stream: sys::cudaStream_t = null_mut();
    let (mut host, mut dev) = (null_mut(), null_mut());
    unsafe {
        assert_eq!(ordo_pipeline_create(&options, &mut pipeline), ORDO_SUCCESS);
        assert_eq!(sys::cudaStreamCreate(&mut stream), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMallocHost(&mut host, 2 * bytes), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMalloc(&mut dev, 2 * bytes), sys::cudaError::cudaSuccess);
        // The runs that are accepted copy the input: give it values (initcheck found it unwritten).
        let input = core::slice::from_raw_parts_mut(host.cast::<u8>(), 2 * bytes);
        input.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 7 % 251) as u8);
    }
    let at = |base: *mut c_void, offset: usize| base.cast::<u8>().wrapping_add(offset).cast::<c_void>();
    let calls = AtomicUsize::new(0);
    let user = (&calls as *const AtomicUsize).cast_mut().cast::<c_void>();
    let run = |hin: *mut c_void, din: *mut c_void, dout: *mut c_void, hout: *mut c_void, out_row: usize| {
        // SAFETY: buffers of `2 * bytes` at `host` and `dev` hold every range passed (the output
        // rows are at most `row` bytes); the counter outlives the call.
        unsafe {
            ordo_pipeline_run_stencil(pipeline, stream, hin, din, dout, hout, rows, row, out_row, 2, Some(count), user)
        }
    };
    let (h0, h1, d0, d1) = (host, at(host, bytes), dev, at(dev, bytes));
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    assert_eq!(run(h0, d0, d0, h1, row), ia, "the same device buffer in and out");
    assert_eq!(run(h0, d0, at(d0, row), h1, row), ia, "device output one row into the input");
    assert_eq!(run(h0, d0, d1, h0, row), ia, "the same host buffer in and out");
    assert_eq!(run(h0, d0, d1, at(h0, bytes - 16), row), ia, "host output over the input's last bytes");
    assert_eq!(run(h0, null_mut(), null_mut(), at(h0, 16), row), ia, "host overlap with temporaries");
    assert_eq!(calls.load(Ordering::Relaxed), 0, "nothing ran");
    // Adjacent buffers do not overlap, nor does a narrower output right after the input.
    assert_eq!(run(h0, d0, d1, h1, row), ORDO_SUCCESS);
    assert_eq!(run(h0, d0, d1, h1, row / 2), ORDO_SUCCESS);
    unsafe {
        assert_eq!(sys::cudaStreamSynchronize(stream), sys::cudaError::cudaSuccess);
        sys::cudaFreeHost(host);
        sys::cudaFree(dev);
        sys::cudaStreamDestroy(stream);
        ordo_pipeline_destroy(pipeline);
    }
    assert_eq!(calls.load(Ordering::Relaxed), 8, "four chunks a run");
}
