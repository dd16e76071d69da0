//! The driver's log lines in errors: a failure the driver explains carries its words (in
//! `CudaError::driver_log` and `Display`), only the failing thread's, only the new ones; an error
//! made without a failure carries none; the error stays plain data of the same size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(cuda_12_8)]
use core::ffi::{c_char, c_int, c_uint, c_void};
#[cfg(cuda_12_8)]
use ordo_cuda_core::error;
use ordo_cuda_core::error::CudaError;
use ordo_cuda_core::*;

#[test]
fn errors_stay_plain_data_of_the_same_size() {
    static_assertions::assert_impl_all!(CudaError: Copy, Send, Sync);
    assert_eq!(core::mem::size_of::<CudaError>(), 40);
    assert!(core::mem::size_of::<Error>() <= 64);
    let made = CudaError::new(sys::cudaError::cudaErrorInvalidValue, "test");
    assert!(made.driver_log().is_none(), "an error made, not met, has no driver log");
    assert!(!made.to_string().contains("(driver:"));
}

/// `cuLogsDumpToMemory(CUlogIterator*, char*, size_t*, unsigned)` from the driver, when it has it
/// (CUDA 12.9 and later drivers; reached like ordo reaches it, with 12.8 or later headers).
#[cfg(cuda_12_8)]
type DumpFn = unsafe extern "C" fn(*mut c_uint, *mut c_char, *mut usize, c_uint) -> c_int;

#[cfg(cuda_12_8)]
fn dump_fn() -> Option<DumpFn> {
    let mut p: *mut c_void = std::ptr::null_mut();
    let mut status = sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess;
    // SAFETY: a NUL-terminated name; `p` and `status` are writable.
    let code =
        unsafe { sys::cudaGetDriverEntryPointByVersion(c"cuLogsDumpToMemory".as_ptr(), &mut p, 12090, 0, &mut status) };
    let found = code == sys::cudaError::cudaSuccess
        && status == sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess
        && !p.is_null();
    // SAFETY: the driver's cuLogsDumpToMemory as of CUDA 12.9, whose prototype `DumpFn` spells.
    found.then(|| unsafe { std::mem::transmute::<*mut c_void, DumpFn>(p) })
}

/// A driver call that fails with a line in the driver's log, documented by NVIDIA as the example
/// of the log ("[cuLogsDumpToMemory] buffer cannot be NULL"), reported through `error::check`.
#[cfg(cuda_12_8)]
fn failure_the_driver_explains(dump: DumpFn) -> Error {
    let code = failure_left_unread(dump);
    error::check(sys::cudaError(code as u32), "cuLogsDumpToMemory").unwrap_err()
}

/// The same failure, not reported: its lines stay in the driver's log, where the next read of the
/// thread (or of a thread that later has its handle) finds them. Its code.
#[cfg(cuda_12_8)]
fn failure_left_unread(dump: DumpFn) -> c_int {
    let mut size = 64usize;
    // SAFETY: a null buffer, which the driver refuses (the point of the call); `size` writable.
    let code = unsafe { dump(std::ptr::null_mut(), std::ptr::null_mut(), &mut size, 0) };
    assert_ne!(code, 0, "the driver accepted a null buffer");
    code
}

#[cfg(cuda_12_8)]
fn assert_no_driver_text(e: &Error) {
    assert!(e.cuda().and_then(|c| c.driver_log()).is_none(), "another failure's lines: {e}");
    assert!(!e.to_string().contains("(driver:"), "{e}");
}

#[cfg(cuda_12_8)]
fn driver_logs() -> Option<DumpFn> {
    let version = device::driver_version().unwrap_or(0);
    if version < 12090 {
        println!("note: driver {version} keeps no error log (CUDA 12.9 added it): nothing to attach");
        return None;
    }
    dump_fn()
}

#[cfg(cuda_12_8)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failure_the_driver_explains_carries_its_words() {
    device::count().unwrap();
    let Some(dump) = driver_logs() else { return };
    let e = failure_the_driver_explains(dump);
    println!("{e}");
    let log = e.cuda().and_then(|c| c.driver_log()).expect("the driver's line");
    assert!(log.contains("cuLogsDumpToMemory") && log.contains("NULL"), "{log}");
    assert!(e.to_string().contains("(driver: "), "{e}");
    assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorInvalidValue), "CUDA's code is kept");
    assert_eq!(e.call(), "cuLogsDumpToMemory");
}

/// Eight threads fail the same way twenty times each, at once: an error that carries lines
/// carries exactly its own failure's (the reason and the driver's `Returning` line), not the other
/// threads' lines, not its own earlier ones; and every thread gets its lines for some failures.
/// Not every failure: the driver's log is small (a dump of it held 8473 bytes after 400 failures,
/// `benches/experiments/log_dump_bounds.cu`, CB-27) and shared, so eight threads failing without
/// pause can overwrite a failure's lines before its thread reads them.
#[cfg(cuda_12_8)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn each_failure_carries_only_its_threads_new_lines() {
    device::count().unwrap();
    let Some(dump) = driver_logs() else { return };
    let carried: Vec<usize> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|t| {
                scope.spawn(move || {
                    let mut carried = 0;
                    for i in 0..20 {
                        let e = failure_the_driver_explains(dump);
                        let Some(log) = e.cuda().and_then(|c| c.driver_log()) else { continue };
                        carried += 1;
                        assert_eq!(log.matches("from cuLogsDumpToMemory").count(), 1, "thread {t} failure {i}: {log}");
                        // The reason line may be gone: the other threads' lines can overwrite it
                        // in the shared log before this thread reads (seen once in three runs).
                        assert!(log.matches("NULL").count() <= 1, "thread {t} failure {i}: {log}");
                        assert!(
                            log.matches("; ").count() <= 1,
                            "thread {t} failure {i}: another failure's lines: {log}"
                        );
                    }
                    carried
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    println!("failures that carried their lines, by thread (of 20): {carried:?}");
    assert!(carried.iter().all(|&c| c > 0), "a thread never got its lines: {carried:?}");
}

/// A thread fails, other threads then fill the driver's log with far more than a few kilobytes of
/// their own failures, and the first thread fails again: its error carries its new failure's lines,
/// and reading them corrupts nothing. (ordo once read into a 4096-byte buffer: the driver's path for
/// a buffer smaller than what it holds wrote past it, and the C ABI's fuzz crashed in the caller's
/// frame; CB-27.)
#[cfg(cuda_12_8)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failure_after_other_threads_filled_the_log_carries_its_own_lines() {
    device::count().unwrap();
    let Some(dump) = driver_logs() else { return };
    for round in 0..20 {
        let first = failure_the_driver_explains(dump);
        assert!(first.cuda().and_then(|c| c.driver_log()).is_some(), "round {round}: the first failure's line");
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(move || {
                    for _ in 0..60 {
                        let _ = failure_the_driver_explains(dump);
                    }
                });
            }
        });
        let e = failure_the_driver_explains(dump);
        let log = e.cuda().and_then(|c| c.driver_log()).expect("the driver's line after 240 other failures");
        assert_eq!(log.matches("from cuLogsDumpToMemory").count(), 1, "round {round}: {log}");
        assert_eq!(e.call(), "cuLogsDumpToMemory");
    }
}

/// H200, driver 580: `cudaSetDevice(9999)`, which the runtime refuses without calling the driver,
/// carried the lines of the thread's earlier `cuLogsDumpToMemory(NULL)` as its driver reason. An
/// earlier failure reported (its lines read) or not (its lines left in the log): a call the
/// runtime refuses alone carries no driver text.
#[cfg(cuda_12_8)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_call_the_runtime_refuses_alone_carries_no_other_failures_lines() {
    device::count().unwrap();
    let Some(dump) = driver_logs() else { return };
    for reported in [true, false] {
        if reported {
            failure_the_driver_explains(dump);
        } else {
            failure_left_unread(dump);
        }
        let e = Device::from_ordinal(9999).set_current().unwrap_err();
        println!("{e}");
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorInvalidDevice), "{e}");
        assert_no_driver_text(&e);
        failure_left_unread(dump);
        assert_no_driver_text(&Device::new(9999).unwrap_err());
    }
}

/// The calling thread's POSIX handle, which the driver's lines carry.
#[cfg(cuda_12_8)]
fn thread_handle() -> std::ffi::c_ulong {
    extern "C" {
        fn pthread_self() -> std::ffi::c_ulong;
    }
    // SAFETY: no arguments; cannot fail.
    unsafe { pthread_self() }
}

/// H200, driver 580: a new thread's first failure carried the lines of a thread that had exited
/// (glibc gave the new thread the same `pthread_self()`). A thread fails (reported, so it reads
/// the log) and fails again unreported, leaving its lines, and exits; the next thread fails with
/// the same code and call where the driver logs nothing (an error made as at a failure), and in a
/// way the runtime refuses alone: neither carries the exited thread's lines.
#[cfg(cuda_12_8)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_new_thread_carries_none_of_an_exited_threads_lines() {
    device::count().unwrap();
    let Some(dump) = driver_logs() else { return };
    let mut same_handle = 0;
    for round in 0..20 {
        let exited = std::thread::spawn(move || {
            // Reported: the thread reads the log, and records where the log ends as it exits.
            failure_the_driver_explains(dump);
            failure_left_unread(dump);
            thread_handle()
        })
        .join()
        .unwrap();
        let (handle, errors) = std::thread::spawn(move || {
            let same = CudaError::from_failed_call(sys::cudaError::cudaErrorInvalidValue, "cuLogsDumpToMemory");
            let refused = Device::from_ordinal(9999).set_current().unwrap_err();
            (thread_handle(), [Error::from(same), refused])
        })
        .join()
        .unwrap();
        same_handle += usize::from(handle == exited);
        for e in &errors {
            assert!(e.cuda().and_then(|c| c.driver_log()).is_none(), "round {round}: {e}");
        }
    }
    println!("rounds in which the new thread had the exited thread's handle: {same_handle} of 20");
    assert!(same_handle > 0, "glibc never reused the handle: the case was not made");
}

/// An invalid argument through ordo's API (read-only access to a device pool, which CUDA
/// refuses): the error keeps CUDA's code and call, and shows the driver's words when the driver
/// logged any for it (printed; which calls the driver explains is the driver's choice).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_invalid_argument_through_the_api_shows_the_drivers_words_when_it_has_them() {
    let device = Device::current().unwrap();
    let pool = MemPool::new(device).unwrap();
    let e = pool.as_pool().set_access(device, PoolAccess::Read).unwrap_err();
    println!("{e}");
    assert_eq!(e.call(), "cudaMemPoolSetAccess");
    let log = e.cuda().and_then(|c| c.driver_log());
    match &log {
        Some(log) => assert!(e.to_string().ends_with(&format!("(driver: {log})")), "{e}"),
        None => println!("note: driver {} logged nothing for this failure", device::driver_version().unwrap()),
    }
}
