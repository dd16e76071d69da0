//! The temporaries of the C exports: without a pool of the caller's they come from ordo's pool of
//! the device (`ordo_temporary_pool`, the Rust API's `temporaries::pool`), which keeps them mapped
//! across synchronisations; with one (`ordo_alloc_options.pool`, `ordo_pipeline_options.pool`)
//! from the caller's pool and from nowhere else. Results against the CPU, on data that is never
//! all zero. `ordo_temporary_pool`'s refusals need no driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::memory::{temporaries, MemPool, MemPoolRef};
use ordo_cuda_core::{sys, Device};
use ordo_ffi_tests::{gpu_lock, reference};

fn cuda(code: sys::cudaError_t, what: &str) {
    assert_eq!(code, sys::cudaError::cudaSuccess, "{what}");
}

fn upload<T: Copy>(data: &[T]) -> *mut T {
    let mut d = null_mut();
    let bytes = core::mem::size_of_val(data);
    cuda(unsafe { sys::cudaMalloc(&mut d, bytes) }, "cudaMalloc");
    cuda(
        unsafe { sys::cudaMemcpy(d, data.as_ptr().cast(), bytes, sys::cudaMemcpyKind::cudaMemcpyHostToDevice) },
        "upload",
    );
    d.cast()
}

fn download<T: Copy + Default>(d: *const T, n: usize) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let bytes = n * core::mem::size_of::<T>();
    cuda(
        unsafe {
            sys::cudaMemcpy(out.as_mut_ptr().cast(), d.cast(), bytes, sys::cudaMemcpyKind::cudaMemcpyDeviceToHost)
        },
        "download",
    );
    out
}

#[test]
fn ordo_temporary_pool_refuses_bad_arguments_before_cuda() {
    let mut pool: sys::cudaMemPool_t = null_mut();
    assert_eq!(unsafe { ordo_temporary_pool(-2, &mut pool) }, ORDO_ERROR_INVALID_ARGUMENT, "device below -1");
    assert_eq!(unsafe { ordo_temporary_pool(0, null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT, "NULL out");
    assert!(pool.is_null(), "nothing written on a refusal");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_c_temporaries_come_from_ordos_pool_unless_the_caller_names_one() {
    let _gpu = gpu_lock();
    cuda(unsafe { sys::cudaSetDevice(0) }, "cudaSetDevice");
    let device = Device::from_ordinal(0);
    let mut raw: sys::cudaMemPool_t = null_mut();
    assert_eq!(unsafe { ordo_temporary_pool(-1, &mut raw) }, ORDO_SUCCESS);
    let mut by_ordinal: sys::cudaMemPool_t = null_mut();
    assert_eq!(unsafe { ordo_temporary_pool(0, &mut by_ordinal) }, ORDO_SUCCESS);
    assert_eq!(raw, by_ordinal, "-1 is the current device");
    let count = ordo_cuda_core::device::count().unwrap() as i32;
    assert_eq!(unsafe { ordo_temporary_pool(count, &mut by_ordinal) }, ORDO_ERROR_INVALID_ARGUMENT, "past the count");
    let ours = unsafe { MemPoolRef::from_raw(raw) }.unwrap();
    assert_eq!(ours, temporaries::pool(device).unwrap(), "the Rust API's pool");
    let mine = MemPool::builder(device).release_threshold(u64::MAX).build().unwrap();
    let options = OrdoAllocOptions { size: core::mem::size_of::<OrdoAllocOptions>(), pool: mine.as_pool().as_raw() };
    let mut s = null_mut();
    cuda(unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }, "cudaStreamCreate");

    let (rows, cols) = (200usize, 333usize);
    let a_host: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 1001) as f32 / 500.0 - 1.0).collect();
    let x_host: Vec<f32> = (0..cols).map(|i| 0.25 + (i % 9) as f32 * 0.1).collect();
    let want_y = reference::gemv_normalize(&a_host, &x_host, rows, cols);
    let (a, x, y) = (upload(&a_host), upload(&x_host), upload(&vec![f32::NAN; rows]));
    let (w, h) = (800usize, 600usize);
    let gray_bytes = (w * h * 4) as u64;
    let rgb = upload(&(0..w * h * 3).map(|i| (i * 37 % 251) as u8 + 1).collect::<Vec<_>>());
    let (f_ours, f_mine) = (upload(&vec![0u8; w * h]), upload(&vec![0u8; w * h]));
    let close = |got: &[f32], what: &str| {
        for (i, (g, e)) in got.iter().zip(&want_y).enumerate() {
            assert!((g - e).abs() <= 2e-3 * e.abs().max(1e-3), "{what}[{i}]: {g} vs {e}");
        }
    };

    // No pool named: ordo's, kept mapped after the synchronise.
    ours.reset_high_watermarks().unwrap();
    mine.as_pool().reset_high_watermarks().unwrap();
    assert_eq!(unsafe { ordo_gemv_normalize(s, a, x, y, rows, cols) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_frame_filter(s, rgb, f_ours, w, h) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_gemv_normalize_with(null(), s, a, x, y, rows, cols) }, ORDO_SUCCESS, "NULL options");
    cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize");
    close(&download(y, rows), "gemv, ordo's pool");
    let frame = download(f_ours, w * h);
    assert!(frame.iter().any(|&v| v != 0), "never all zero");
    assert!(ours.used_high_bytes().unwrap() >= gray_bytes, "from ordo's pool");
    assert!(ours.reserved_bytes().unwrap() >= gray_bytes, "kept mapped across the synchronise");
    assert_eq!(mine.as_pool().used_high_bytes().unwrap(), 0);

    // The caller's pool named: from it alone.
    ours.reset_high_watermarks().unwrap();
    cuda(unsafe { sys::cudaMemset(y.cast(), 0, rows * 4) }, "clear");
    assert_eq!(unsafe { ordo_gemv_normalize_with(&options, s, a, x, y, rows, cols) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_frame_filter_with(&options, s, rgb, f_mine, w, h) }, ORDO_SUCCESS);
    cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize");
    close(&download(y, rows), "gemv, the caller's pool");
    assert_eq!(download(f_mine, w * h), frame, "frame filter, the caller's pool");
    assert!(mine.as_pool().used_high_bytes().unwrap() >= gray_bytes, "from the caller's pool");
    assert_eq!(ours.used_high_bytes().unwrap(), ours.used_bytes().unwrap(), "nothing from ordo's");

    // A pipeline handle's NULL device buffers: from ordo's pool, or from its options' pool.
    let n = 1usize << 20;
    let h_in_data: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001 + 0.1).collect();
    let (mut h_in, mut h_out) = (null_mut(), null_mut());
    cuda(unsafe { sys::cudaHostAlloc(&mut h_in, n * 4, 0) }, "pinned in");
    cuda(unsafe { sys::cudaHostAlloc(&mut h_out, n * 4, 0) }, "pinned out");
    unsafe { core::ptr::copy_nonoverlapping(h_in_data.as_ptr(), h_in.cast::<f32>(), n) };
    let want: Vec<f32> = h_in_data.iter().map(|&v| reference::heavy(v)).collect();
    for named in [false, true] {
        let mut o = OrdoPipelineOptions {
            size: core::mem::size_of::<OrdoPipelineOptions>(),
            device: -1,
            element_size: 4,
            streams: 0,
            priority: 0,
            chunks: 8,
            stage_timing: 0,
            pool: null_mut(),
        };
        if named {
            o.pool = mine.as_pool().as_raw();
        }
        let mut p = null_mut();
        assert_eq!(unsafe { ordo_pipeline_create(&o, &mut p) }, ORDO_SUCCESS);
        ours.reset_high_watermarks().unwrap();
        mine.as_pool().reset_high_watermarks().unwrap();
        unsafe { core::ptr::write_bytes(h_out.cast::<f32>(), 0xFF, n) };
        let st = unsafe { ordo_pipeline_run_on(p, s, h_in, null_mut(), null_mut(), h_out, n, None, null_mut()) };
        assert_eq!(st, ORDO_SUCCESS);
        cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize the run");
        let out = unsafe { core::slice::from_raw_parts(h_out.cast::<f32>(), n) };
        assert!(out == want.as_slice(), "pipeline with temporaries (the caller's pool: {named})");
        let (from_ours, from_mine) = (ours.used_high_bytes().unwrap(), mine.as_pool().used_high_bytes().unwrap());
        let both = 2 * (n * 4) as u64;
        if named {
            assert!(from_mine >= both, "from the caller's pool: {from_mine}");
            assert_eq!(from_ours, ours.used_bytes().unwrap(), "nothing from ordo's");
        } else {
            assert!(from_ours >= both, "from ordo's pool: {from_ours}");
            assert!(ours.reserved_bytes().unwrap() >= both, "kept mapped for the next run");
            assert_eq!(from_mine, 0, "nothing from the caller's pool");
        }
        ordo_pipeline_destroy(p);
    }

    unsafe {
        for p in [a, x, y] {
            sys::cudaFree(p.cast());
        }
        for p in [rgb, f_ours, f_mine] {
            sys::cudaFree(p.cast());
        }
        sys::cudaFreeHost(h_in);
        sys::cudaFreeHost(h_out);
        sys::cudaStreamDestroy(s);
    }
    drop(mine);
}
