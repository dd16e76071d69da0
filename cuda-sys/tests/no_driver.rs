#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every call returns a CUDA error, never crashes, on a machine with no driver; on a machine with
//! one, the same calls give real answers. Also shows that each version-gated wrapper links.

use core::ptr::{null, null_mut};
use ordo_cuda_sys::*;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn device_count_reports_no_driver_or_counts_devices() {
    let mut n = -1;
    let status = unsafe { cudaGetDeviceCount(&mut n) };
    if driver_present() {
        assert_eq!(status, cudaError::cudaSuccess);
        assert!(n >= 1);
    } else {
        assert!(
            status == cudaError::cudaErrorInsufficientDriver || status == cudaError::cudaErrorNoDevice,
            "got {status:?}"
        );
    }
    let mut v = 0;
    assert_eq!(unsafe { cudaRuntimeGetVersion(&mut v) }, cudaError::cudaSuccess);
    assert_eq!(v as u32, CUDA_VERSION);
}

#[test]
fn gated_wrappers_link_and_return_errors_on_bad_input() {
    let host = mem_location(cudaMemLocationType::cudaMemLocationTypeHost, 0);
    // Null/zero arguments: an error either way (no driver, or invalid value), never a crash.
    let e1 = unsafe { compat::cudaMemPrefetchAsync(null(), 0, host, 0, null_mut()) };
    let e2 = unsafe { compat::cudaMemAdvise(null(), 0, cudaMemoryAdvise::cudaMemAdviseSetReadMostly, host) };
    let mut status = cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    let e3 = unsafe {
        compat::cudaStreamGetCaptureInfo(
            cudaStreamLegacy(),
            &mut status,
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
            null_mut(),
        )
    };
    let mut n = 0usize;
    let e4 = unsafe { compat::cudaGraphGetEdges(null_mut(), null_mut(), null_mut(), null_mut(), &mut n) };
    let e5 = unsafe { compat::cudaGraphAddDependencies(null_mut(), null(), null(), null(), 0) };
    let e6 = unsafe { compat::cudaGraphNodeGetDependencies(null_mut(), null_mut(), null_mut(), &mut n) };
    let e7 = unsafe { compat::cudaStreamUpdateCaptureDependencies(cudaStreamLegacy(), null_mut(), null(), 0, 0) };
    let (mut f, mut found) = (null_mut(), cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess);
    let e8 = unsafe {
        compat::cudaGetDriverEntryPointByVersion(c"cuGraphNodeGetType".as_ptr(), &mut f, 12000, 0, &mut found)
    };
    let mut device = -1;
    let e9 = unsafe { compat::cudaStreamGetDevice(cudaStreamLegacy(), &mut device) };
    for (name, e) in
        [("prefetch", e1), ("advise", e2), ("edges", e4), ("add deps", e5), ("node deps", e6), ("update deps", e7)]
    {
        assert_ne!(e, cudaError::cudaSuccess, "{name}");
    }
    if driver_present() {
        // A legacy stream that is not capturing: a clean answer.
        assert_eq!(e3, cudaError::cudaSuccess);
        assert_eq!(status, cudaStreamCaptureStatus::cudaStreamCaptureStatusNone);
        // Every driver of CUDA 12 or later has cuGraphNodeGetType.
        assert_eq!(e8, cudaError::cudaSuccess);
        assert_eq!(found, cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess);
        assert!(!f.is_null());
        if cfg!(cuda_12_8) {
            assert_eq!(e9, cudaError::cudaSuccess);
            assert!(device >= 0);
        }
    } else {
        for e in [e1, e2, e3, e4, e5, e6, e7, e8] {
            assert_eq!(e, cudaError::cudaErrorInsufficientDriver);
        }
        let want9 =
            if cfg!(cuda_12_8) { cudaError::cudaErrorInsufficientDriver } else { cudaError::cudaErrorNotSupported };
        assert_eq!(e9, want9);
    }
    if !cfg!(cuda_12_8) {
        // Headers without the call: the wrapper answers without calling CUDA.
        assert_eq!(e9, cudaError::cudaErrorNotSupported);
    }
}

#[test]
fn error_names_need_no_driver() {
    let name = unsafe { core::ffi::CStr::from_ptr(cudaGetErrorName(cudaError::cudaErrorIllegalAddress)) };
    assert_eq!(name.to_str(), Ok("cudaErrorIllegalAddress"));
}
