//! Whether the ring's CUDA context can still complete its copies: gone (`cudaDeviceReset`, told
//! by the context's [`ContextTag`]) or lost (a sticky error, told by querying an event that is
//! never recorded). A waiting acquire asks, so that it returns an error instead of waiting for a
//! host function that will never run.

use crate::context::ContextTag;
use crate::error::{CudaError, Error};
use crate::event::Event;
use ordo_cuda_sys as sys;

/// Whether `context` is gone or lost, asked through `probe`, an event of it that is never
/// recorded. The query runs with this thread's capture mode relaxed, so it neither fails nor
/// invalidates another thread's global-mode capture (CUDA 13.0 refuses an event query then, and
/// the capture is lost). A context that is gone is never touched (the probe then belongs to no
/// live context).
pub(super) fn context_lost(context: ContextTag, probe: &Event) -> Option<Error> {
    if !context.alive() {
        return Some(context_destroyed());
    }
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable; the previous mode comes back in it.
    if unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } != sys::cudaError::cudaSuccess {
        return None;
    }
    let status = probe.query();
    // SAFETY: restores the thread's mode.
    unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    status.err().filter(Error::is_sticky)
}

/// The error of a ring whose context a `cudaDeviceReset` destroyed.
pub(super) fn context_destroyed() -> Error {
    Error::Cuda(
        CudaError::new(sys::cudaError::cudaErrorContextIsDestroyed, "StagingRing")
            .with_hint("a cudaDeviceReset destroyed the ring's context: make a new ring"),
    )
}
