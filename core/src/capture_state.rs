//! A stream's capture state, which every layer that enqueues asks (streams, memory, the futures,
//! the graphs above them): whether a stream captures ([`CaptureStatus`], the status
//! [`StreamRef::capture_status`](crate::StreamRef::capture_status) returns), the capture-info query,
//! and the count of the captures ordo has open. It imports nothing of ordo but its errors.

use crate::error::Result;
use core::ffi::c_ulonglong;
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_sys as sys;

/// Captures ordo has begun and not yet ended, in every mode, on every thread.
pub(crate) static OPEN_CAPTURES: AtomicUsize = AtomicUsize::new(0);

/// Whether a capture ordo began is open now, on any thread (a snapshot: another may begin or end
/// right after).
pub(crate) fn captures_open() -> bool {
    OPEN_CAPTURES.load(Ordering::Acquire) > 0
}

/// Whether a stream is capturing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Not capturing.
    None,
    /// Capturing.
    Active,
    /// The capture was invalidated by an illegal call; ending it returns an error.
    Invalidated,
}

/// The capture state of `stream` (`cudaStreamGetCaptureInfo`): its status, and its capture's id
/// and graph (meaningful only when the status is Active). The dependency outputs are not asked.
///
/// # Safety
/// `stream` is a live stream.
pub(crate) unsafe fn capture_info(
    stream: sys::cudaStream_t,
) -> Result<(sys::cudaStreamCaptureStatus, c_ulonglong, sys::cudaGraph_t)> {
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    let mut id: c_ulonglong = 0;
    let mut graph: sys::cudaGraph_t = core::ptr::null_mut();
    // SAFETY: `stream` is live (the caller's contract); the outputs asked for are writable, the
    // others not asked.
    cuda_call!(unsafe {
        sys::compat::cudaStreamGetCaptureInfo(
            stream,
            &mut status,
            &mut id,
            &mut graph,
            core::ptr::null_mut(),
            core::ptr::null_mut(),
            core::ptr::null_mut(),
        )
    })?;
    Ok((status, id, graph))
}
