//! The second fresh-eyes review of the C ABI (session 5: pipeline handles, allocation options):
//! the option and argument checks it found made before any CUDA call. (Its one confirmed finding,
//! a callback's positive status that is no known CUDA code coming back unchanged, was settled in
//! ordo.h: positive values are CUDA's code space, passed through; see `status.rs`'s tests.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

/// Checked sound: option and argument checks that run before any CUDA call (no driver needed).
#[test]
fn sound_pipeline_options_and_arguments_are_refused_before_cuda() {
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

/// Fresh-eyes review of `ordo_pipeline_run_stencil` (session 7): an input overlapping the output
/// (the same device buffer in and out, as `ordo_pipeline_run_on` allows) ran: with a halo the
/// computes read rows that neighbouring chunks write, at the same time on other streams, and the
/// two device views ordo made of the buffer aliased, against `DeviceSliceMut::from_raw_parts`'s
/// contract. Now refused before any CUDA call, on the host and on the device.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_stencil_buffers_that_overlap_are_refused() {
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
