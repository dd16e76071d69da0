//! The `_with` forms of the exports that allocate a temporary (`ordo_gemv_normalize_with`,
//! `ordo_frame_filter_with`): their temporaries come from the caller's pool, eagerly and inside the
//! caller's global-mode capture, and the results equal the plain forms' (themselves checked
//! against the CPU in `random_calls`), on data that is never all zero.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;

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
fn bad_alloc_options_are_refused_before_cuda() {
    let _gpu = gpu_lock();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let short = OrdoAllocOptions { size: core::mem::size_of::<OrdoAllocOptions>() - 1, pool: null_mut() };
    let x = [1f32; 4];
    let mut y = [0f32; 4];
    let legacy = sys::cudaStreamLegacy();
    let st = unsafe { ordo_gemv_normalize_with(&short, legacy, x.as_ptr(), x.as_ptr(), y.as_mut_ptr(), 2, 2) };
    assert_eq!(st, ia, "gemv: options.size too small");
    let mut bytes = [0u8; 8];
    let st = unsafe { ordo_frame_filter_with(&short, legacy, bytes.as_ptr(), bytes.as_mut_ptr(), 1, 1) };
    assert_eq!(st, ia, "frame: options.size too small");
    let mut raw = [0u64; 4];
    let misaligned = unsafe { raw.as_mut_ptr().cast::<u8>().add(4) }.cast::<OrdoAllocOptions>();
    unsafe {
        misaligned
            .write_unaligned(OrdoAllocOptions { size: core::mem::size_of::<OrdoAllocOptions>(), pool: null_mut() })
    };
    let st = unsafe { ordo_gemv_normalize_with(misaligned, legacy, x.as_ptr(), x.as_ptr(), y.as_mut_ptr(), 2, 2) };
    assert_eq!(st, ia, "gemv: misaligned options");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_temporaries_from_the_callers_pool_eagerly_and_in_a_global_capture() {
    let _gpu = gpu_lock();
    cuda(unsafe { sys::cudaSetDevice(0) }, "cudaSetDevice");
    let pool = ordo_cuda_core::memory::MemPool::new(ordo_cuda_core::Device::from_ordinal(0)).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    let options = OrdoAllocOptions { size: core::mem::size_of::<OrdoAllocOptions>(), pool: pool.as_pool().as_raw() };
    let mut s = null_mut();
    cuda(unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }, "cudaStreamCreate");

    // Over 1024 rows: gemv_normalize's sum of squares takes a temporary (up to 1024 rows it
    // normalises in one block, with none), from the pool the options name.
    let (rows, cols) = (1100, 70);
    let a = upload(&(0..rows * cols).map(|i| 0.5 + (i % 13) as f32 * 0.25).collect::<Vec<_>>());
    let x = upload(&(0..cols).map(|i| 1.0 + (i % 5) as f32).collect::<Vec<_>>());
    let (y_plain, y_pool) = (upload(&vec![0f32; rows]), upload(&vec![0f32; rows]));
    let (w, h) = (97, 61);
    let rgb = upload(&(0..w * h * 3).map(|i| (i * 37 % 251) as u8 + 1).collect::<Vec<_>>());
    let (f_plain, f_pool) = (upload(&vec![0u8; w * h]), upload(&vec![0u8; w * h]));

    assert_eq!(unsafe { ordo_gemv_normalize(s, a, x, y_plain, rows, cols) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_frame_filter(s, rgb, f_plain, w, h) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_gemv_normalize_with(&options, s, a, x, y_pool, rows, cols) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_frame_filter_with(&options, s, rgb, f_pool, w, h) }, ORDO_SUCCESS);
    cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize");
    let want_y = download(y_plain, rows);
    let want_f = download(f_plain, w * h);
    assert!(want_y.iter().any(|&v| v != 0.0) && want_f.iter().any(|&v| v != 0), "never all zero");
    assert_eq!(download(y_pool, rows), want_y, "gemv with the caller's pool");
    assert_eq!(download(f_pool, w * h), want_f, "frame filter with the caller's pool");
    assert!(pool.as_pool().reserved_bytes().unwrap() >= (w * h * 4) as u64, "the intermediate came from the pool");

    // In a global-mode capture: the temporaries become the graph's allocation and free nodes.
    cuda(unsafe { sys::cudaMemset(y_pool.cast(), 0, rows * 4) }, "clear");
    cuda(unsafe { sys::cudaMemset(f_pool.cast(), 0, w * h) }, "clear");
    cuda(
        unsafe { sys::cudaStreamBeginCapture(s, sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal) },
        "begin capture",
    );
    assert_eq!(unsafe { ordo_gemv_normalize_with(&options, s, a, x, y_pool, rows, cols) }, ORDO_SUCCESS);
    assert_eq!(unsafe { ordo_frame_filter_with(&options, s, rgb, f_pool, w, h) }, ORDO_SUCCESS);
    let mut graph = null_mut();
    cuda(unsafe { sys::cudaStreamEndCapture(s, &mut graph) }, "end capture (the capture stayed valid)");
    let mut exec = null_mut();
    cuda(unsafe { sys::cudaGraphInstantiate(&mut exec, graph, 0) }, "instantiate");
    cuda(unsafe { sys::cudaGraphLaunch(exec, s) }, "launch");
    cuda(unsafe { sys::cudaStreamSynchronize(s) }, "synchronize the replay");
    assert_eq!(download(y_pool, rows), want_y, "gemv replayed");
    assert_eq!(download(f_pool, w * h), want_f, "frame filter replayed");
    unsafe {
        sys::cudaGraphExecDestroy(exec);
        sys::cudaGraphDestroy(graph);
        for p in [a, x, y_plain, y_pool] {
            sys::cudaFree(p.cast());
        }
        for p in [rgb, f_plain, f_pool] {
            sys::cudaFree(p.cast());
        }
        sys::cudaStreamDestroy(s);
    }
    drop(pool);
}
