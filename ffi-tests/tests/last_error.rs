//! The thread's last error record (`ordo_last_error`, `ordo_last_error_message`): filled by every
//! failing export, on its own thread, left alone by successful ones, written within the caller's
//! sizes. On a GPU: a callback's `ORDO_NOT_READY` makes its export fail, and a callback's sticky
//! CUDA code is recorded as sticky.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::{c_char, c_void, CStr};
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::launch::{config, empty_kernel};

fn info() -> OrdoErrorInfo {
    let mut info = OrdoErrorInfo {
        size: core::mem::size_of::<OrdoErrorInfo>(),
        status: -1,
        cuda_error: -1,
        library_status: -1,
        sticky: -1,
        call: [1; ORDO_LAST_ERROR_CALL_LEN],
        message: [1; ORDO_LAST_ERROR_MESSAGE_LEN],
    };
    assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
    info
}

fn text(chars: &[c_char]) -> String {
    unsafe { CStr::from_ptr(chars.as_ptr()) }.to_str().unwrap().to_string()
}

fn message() -> String {
    let len = unsafe { ordo_last_error_message(null_mut(), 0) };
    let mut buf = vec![0 as c_char; len + 1];
    assert_eq!(unsafe { ordo_last_error_message(buf.as_mut_ptr(), buf.len()) }, len);
    text(&buf)
}

#[test]
fn a_failing_export_records_its_detail_on_its_thread_only() {
    std::thread::spawn(|| {
        let none = info();
        assert_eq!((none.status, none.cuda_error, none.library_status, none.sticky), (ORDO_SUCCESS, 0, 0, 0));
        assert_eq!((text(&none.call), text(&none.message)), (String::new(), String::new()));
        assert_eq!(unsafe { ordo_last_error_message(null_mut(), 0) }, 0);

        // An argument refused: the record names the export and the argument, in ordo's words.
        let legacy = sys::cudaStreamLegacy();
        let st = unsafe { ordo_pdl_chain(legacy, null_mut(), null_mut(), null_mut(), 4, 1, 1) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        let e = info();
        assert_eq!((e.status, e.cuda_error, e.library_status, e.sticky), (st, 0, 0, 0));
        assert_eq!(text(&e.call), "ordo_pdl_chain(a)");
        assert_eq!(text(&e.message), "ORDO_ERROR_INVALID_ARGUMENT: ordo_pdl_chain(a): null pointer");
        assert_eq!(message(), text(&e.message));
        // Another export, another argument: each names its own.
        let mut ring: *mut OrdoStagingRing = null_mut();
        assert_eq!(unsafe { ordo_staging_ring_create(0, 64, &mut ring) }, ORDO_ERROR_INVALID_ARGUMENT);
        assert_eq!(text(&info().call), "ordo_staging_ring_create(slots)");
        assert_eq!(unsafe { ordo_staging_ring_create(2, 64, null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
        assert_eq!(text(&info().call), "ordo_staging_ring_create(out)");
        let mut cache: *mut OrdoGraphCache = null_mut();
        let st = unsafe { ordo_graph_cache_create(null(), 0, 0, None, null_mut(), &mut cache) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        assert_eq!(text(&info().call), "ordo_graph_cache_create(body)");
        let bad = OrdoGraphCacheOptions {
            size: core::mem::size_of::<OrdoGraphCacheOptions>(),
            capture_mode: 7,
            warmup: 0,
            overflow_eager: 0,
            instantiate_flags: 0,
            user_free: None,
            upload: 0,
        };
        let st = unsafe { ordo_graph_cache_create_with_options(null(), 0, &bad, None, null_mut(), &mut cache) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        assert_eq!(text(&info().call), "ordo_graph_cache_create_with_options(options.capture_mode)");
        assert_eq!(unsafe { ordo_pdl_chain(null_mut(), null_mut(), null_mut(), null_mut(), 4, 1, 1) }, st);
        assert_eq!(text(&info().call), "ordo_pdl_chain(stream)");
        assert!(message().contains("null stream"), "{}", message());

        // Another thread has its own record.
        let other = std::thread::spawn(|| info().status).join().unwrap();
        assert_eq!(other, ORDO_SUCCESS);

        // A success leaves the record alone (as errno).
        let mut v = 0;
        let _ = unsafe { ordo_runtime_version(&mut v) };
        assert!(unsafe { ordo_pdl_chain(legacy, null_mut(), null_mut(), null_mut(), 0, 1, 7) } != ORDO_SUCCESS);
        let before = message();
        assert!(!ordo_status_name(ORDO_SUCCESS).is_null());
        assert_eq!(message(), before);

        // A stale handle: no ordo error detail, so the export and the status's description.
        let st = unsafe { ordo_timer_start(0x51b as *mut OrdoTimer, legacy) };
        assert_eq!(st, ORDO_ERROR_INVALID_HANDLE);
        let e = info();
        assert_eq!((e.status, text(&e.call)), (ORDO_ERROR_INVALID_HANDLE, "ordo_timer_start".to_string()));
        assert!(text(&e.message).contains("not a live handle"), "{}", text(&e.message));

        // A CUDA failure (on a machine without a GPU the timer's event cannot be made) keeps
        // CUDA's code and call.
        let mut timer: *mut OrdoTimer = null_mut();
        let st = unsafe { ordo_timer_create(&mut timer) };
        if st == ORDO_SUCCESS {
            ordo_timer_destroy(timer);
        } else {
            let e = info();
            assert_eq!(e.cuda_error, st, "{}", text(&e.message));
            assert!(text(&e.call).starts_with("cuda"), "{}", text(&e.call));
        }

        ordo_clear_last_error();
        assert_eq!(info().status, ORDO_SUCCESS);
        assert_eq!(message(), "");
    })
    .join()
    .unwrap();
}

#[test]
fn the_record_is_read_safely() {
    let legacy = sys::cudaStreamLegacy();
    assert_eq!(unsafe { ordo_frame_filter(legacy, null_mut(), null_mut(), 1, 1) }, ORDO_ERROR_INVALID_ARGUMENT);
    // Truncated to the buffer, NUL-terminated; the full length returned.
    let full = unsafe { ordo_last_error_message(null_mut(), 0) };
    assert!(full > 8);
    let mut small = [0x55 as c_char; 8];
    assert_eq!(unsafe { ordo_last_error_message(small.as_mut_ptr(), small.len()) }, full);
    assert_eq!(text(&small).len(), 7);
    assert_eq!(unsafe { ordo_last_error_message(small.as_mut_ptr(), 0) }, full, "len 0 writes nothing");
    // SIZE_MAX as "big enough": the message and its NUL are written (once nothing was, and a C
    // caller printed a buffer with no terminator); nothing past them.
    let mut roomy = vec![0x55 as c_char; full + 16];
    assert_eq!(unsafe { ordo_last_error_message(roomy.as_mut_ptr(), usize::MAX) }, full);
    assert_eq!(roomy[full], 0, "NUL-terminated");
    assert_eq!(text(&roomy).len(), full, "the whole message");
    assert!(roomy[full + 1..].iter().all(|&c| c == 0x55), "nothing written past the NUL");
    // A struct of an older, smaller size, NULL and misaligned are refused, nothing written.
    let mut e = info();
    e.size = core::mem::size_of::<OrdoErrorInfo>() - 1;
    e.status = 77;
    assert_eq!(unsafe { ordo_last_error(&mut e) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(e.status, 77);
    assert_eq!(unsafe { ordo_last_error(null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
    let mut raw = vec![0u64; core::mem::size_of::<OrdoErrorInfo>() / 8 + 2];
    let misaligned = unsafe { raw.as_mut_ptr().cast::<u8>().add(4).cast::<OrdoErrorInfo>() };
    assert_eq!(unsafe { ordo_last_error(misaligned) }, ORDO_ERROR_INVALID_ARGUMENT);
    // A larger size (a later header's struct) is accepted; this version's fields are filled.
    let mut big = vec![0u64; core::mem::size_of::<OrdoErrorInfo>() / 8 + 4];
    let p = big.as_mut_ptr().cast::<OrdoErrorInfo>();
    unsafe { p.cast::<usize>().write(core::mem::size_of::<OrdoErrorInfo>() + 16) };
    assert_eq!(unsafe { ordo_last_error(p) }, ORDO_SUCCESS);
    assert_eq!(unsafe { (*p).status }, ORDO_ERROR_INVALID_ARGUMENT);
}

/// `ordo_last_error` and `ordo_last_error_message` respect the caller's sizes: truncation, NUL
/// termination, nothing written past the caller's struct or buffer, misaligned and NULL refused.
#[test]
fn the_record_and_the_message_respect_the_callers_sizes() {
    ordo_clear_last_error();
    // A failure to record: a null stream.
    let st = unsafe { ordo_launch_kernel(null_mut(), empty_kernel(), null_mut(), &config(88)) };
    assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
    let full = unsafe { ordo_last_error_message(null_mut(), 0) };
    assert!(full > 8);
    for len in [1usize, 2, 7, full, full + 1, full + 5] {
        let mut buf = vec![0x55u8 as core::ffi::c_char; len + 8];
        let got = unsafe { ordo_last_error_message(buf.as_mut_ptr(), len) };
        assert_eq!(got, full);
        let written = buf[..len].iter().position(|&c| c == 0).expect("NUL-terminated");
        assert_eq!(written, full.min(len - 1));
        assert!(buf[len..].iter().all(|&c| c == 0x55u8 as core::ffi::c_char), "nothing past len {len}");
    }
    // The record: refused below sizeof (nothing written), filled at sizeof, tail left alone above.
    #[repr(C)]
    struct Bigger {
        info: OrdoErrorInfo,
        tail: [u64; 4],
    }
    let mut b: Bigger = unsafe { core::mem::zeroed() };
    b.tail = [0x1234; 4];
    b.info.size = core::mem::size_of::<OrdoErrorInfo>() - 1;
    b.info.status = 77;
    assert_eq!(unsafe { ordo_last_error(&mut b.info) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(b.info.status, 77, "nothing written");
    b.info.size = core::mem::size_of::<Bigger>();
    assert_eq!(unsafe { ordo_last_error(&mut b.info) }, ORDO_SUCCESS);
    assert_eq!(b.info.status, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(b.info.size, core::mem::size_of::<Bigger>(), "the caller's size kept");
    assert_eq!(b.tail, [0x1234; 4], "fields past this version's struct untouched");
    assert_eq!(b.info.message[ORDO_LAST_ERROR_MESSAGE_LEN - 1], 0);
    let misaligned = unsafe { (&mut b as *mut Bigger).cast::<u8>().add(4).cast::<OrdoErrorInfo>() };
    assert_eq!(unsafe { ordo_last_error(misaligned) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { ordo_last_error(null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
    ordo_clear_last_error();
    assert_eq!(unsafe { ordo_last_error_message(null_mut(), 0) }, 0);
}

// ---- Statuses of the caller's callbacks (GPU) --------------------------------------------------------

/// A graph-cache body or a pipeline compute that returns `ORDO_NOT_READY` stops the call, which
/// returns a failure (not `ORDO_NOT_READY`, which `ORDO_FAILED` counts as none) and records it.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_callback_returning_not_ready_is_a_failure() {
    unsafe extern "C" fn not_ready_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
        ORDO_NOT_READY
    }
    unsafe extern "C" fn not_ready_compute(
        _: sys::cudaStream_t,
        _: *const f32,
        _: *mut f32,
        _: usize,
        _: *mut c_void,
    ) -> OrdoStatus {
        ORDO_NOT_READY
    }
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    // Graph cache.
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 0, Some(not_ready_body), null_mut(), &mut cache) }, 0);
    ordo_clear_last_error();
    let mut bucket = 12345usize;
    let st = unsafe { ordo_graph_cache_run(cache, stream, 3, &mut bucket) };
    let recorded = unsafe { ordo_last_error_message(null_mut(), 0) };
    ordo_graph_cache_destroy(cache);
    assert_eq!(bucket, 12345, "nothing ran: bucket_out not written");
    assert!(
        st != ORDO_NOT_READY && st != ORDO_SUCCESS,
        "ordo_graph_cache_run returned {st}: ORDO_FAILED says no failure, though nothing ran"
    );
    assert!(recorded > 0, "the failure is in the last-error record");
    // Pipeline.
    let n = 1024;
    let (mut hi, mut ho, mut di, mut dout) = (null_mut(), null_mut(), null_mut(), null_mut());
    unsafe {
        assert_eq!(sys::cudaMallocHost(&mut hi, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMallocHost(&mut ho, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMalloc(&mut di, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMalloc(&mut dout, n * 4), sys::cudaError::cudaSuccess);
    }
    ordo_clear_last_error();
    let st = unsafe {
        ordo_pipeline_run(
            stream,
            hi.cast(),
            di.cast(),
            dout.cast(),
            ho.cast(),
            n,
            4,
            Some(not_ready_compute),
            null_mut(),
        )
    };
    let recorded = unsafe { ordo_last_error_message(null_mut(), 0) };
    unsafe {
        sys::cudaStreamSynchronize(stream);
        sys::cudaFreeHost(hi);
        sys::cudaFreeHost(ho);
        sys::cudaFree(di);
        sys::cudaFree(dout);
        sys::cudaStreamDestroy(stream);
    }
    assert!(st != ORDO_NOT_READY && st != ORDO_SUCCESS, "ordo_pipeline_run returned {st} after one chunk of four");
    assert!(recorded > 0, "the failure is in the last-error record");
}

/// A callback that passes on a sticky CUDA code (700): the export returns it, and the record says
/// sticky as `ordo_status_is_sticky` does.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_callbacks_sticky_cuda_status_is_recorded_as_sticky() {
    unsafe extern "C" fn sticky_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
        700
    }
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 1, Some(sticky_body), null_mut(), &mut cache) }, 0);
    let st = unsafe { ordo_graph_cache_run(cache, stream, 1000, null_mut()) }; // overflow: eager
    ordo_graph_cache_destroy(cache);
    unsafe { sys::cudaStreamDestroy(stream) };
    assert_eq!(st, 700);
    let mut info: OrdoErrorInfo = unsafe { core::mem::zeroed() };
    info.size = core::mem::size_of::<OrdoErrorInfo>();
    assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
    assert_eq!(ordo_status_is_sticky(st), 1);
    assert_eq!(info.sticky, ordo_status_is_sticky(info.status), "record {:?}", (info.status, info.cuda_error));
}
