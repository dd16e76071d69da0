//! The thread's last error record (`ordo_last_error`, `ordo_last_error_message`): filled by every
//! failing export, on its own thread, left alone by successful ones. Needs no GPU.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::{c_char, CStr};
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

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
