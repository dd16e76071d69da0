//! The drop-error queue: failures met in `Drop`, which cannot return them, kept for the caller.
//!
//! With `std`, a process-wide queue that [`take_drop_errors`] empties (oldest first; at most
//! [`DROP_ERROR_CAPACITY`] are kept, the oldest, and the ones that did not fit are counted by
//! [`lost_drop_error_count`]). Every build counts them ([`drop_error_count`]).

use super::{CudaError, Error};
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_sys as sys;

/// How many errors met in `Drop` the `std` queue keeps at most; later ones are counted by
/// [`lost_drop_error_count`] until [`take_drop_errors`] empties it.
pub const DROP_ERROR_CAPACITY: usize = 1024;

/// Every error met in `Drop` since the process started, kept or not.
static DROP_ERRORS_SEEN: AtomicUsize = AtomicUsize::new(0);
/// Errors met in `Drop` that were not kept: the queue was full, or the build has no `std`.
static DROP_ERRORS_LOST: AtomicUsize = AtomicUsize::new(0);

#[cfg(feature = "std")]
static DROP_ERRORS: std::sync::Mutex<alloc::collections::VecDeque<Error>> =
    std::sync::Mutex::new(alloc::collections::VecDeque::new());

/// Records the status a CUDA call returned inside a `Drop` (`call` names it): nothing for
/// `cudaSuccess`, else the error goes where [`take_drop_errors`] finds it. For libraries built on
/// ordo whose handles free themselves on drop; one compare on the success path.
#[inline]
pub fn record_drop_error(code: sys::cudaError_t, call: &'static str) {
    if code != sys::cudaError::cudaSuccess {
        record_drop_error_value(Error::Cuda(CudaError::from_failed_call(code, call)));
    }
}

/// Records an error met inside a `Drop` (any kind: a cuBLAS or NCCL status as
/// [`Error::Library`], say). Never panics and never blocks on a poisoned lock; allocates only
/// while the queue grows (at most [`DROP_ERROR_CAPACITY`] entries).
#[cold]
#[inline(never)]
pub fn record_drop_error_value(error: Error) {
    DROP_ERRORS_SEEN.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "std")]
    {
        let mut queue = crate::sync::lock(&DROP_ERRORS);
        if queue.len() < DROP_ERROR_CAPACITY {
            queue.push_back(error);
            return;
        }
    }
    #[cfg(not(feature = "std"))]
    let _ = error;
    DROP_ERRORS_LOST.fetch_add(1, Ordering::Relaxed);
}

/// Takes the errors met in `Drop` since the last call, oldest first (at most
/// [`DROP_ERROR_CAPACITY`]; see [`lost_drop_error_count`] for the rest). Process-wide: errors
/// of every thread land in the same queue.
#[cfg(feature = "std")]
pub fn take_drop_errors() -> alloc::vec::Vec<Error> {
    let mut queue = crate::sync::lock(&DROP_ERRORS);
    queue.drain(..).collect()
}

/// How many errors were met in `Drop` since the process started, whether kept or not.
pub fn drop_error_count() -> usize {
    DROP_ERRORS_SEEN.load(Ordering::Relaxed)
}

/// How many errors met in `Drop` since the process started were not kept: the queue was full
/// (with `std`), or every one (without `std`, which keeps none). Never reset.
pub fn lost_drop_error_count() -> usize {
    DROP_ERRORS_LOST.load(Ordering::Relaxed)
}
