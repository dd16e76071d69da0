//! Helpers of the GPU tests that watch what CUDA does on its own threads: waiting for it, reading a
//! buffer back, and telling whether a pinned allocation was freed.
#![allow(dead_code)]

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::staging::free_deferred;
use ordo_cuda_core::*;
use std::time::{Duration, Instant};

/// Polls `done` for up to five seconds (CUDA runs user-object destructors and host functions on
/// its own threads, after the call that released them has returned).
pub fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    done()
}

pub fn read<T: DeviceCopy + Default>(src: DeviceSlice<'_, T>, stream: StreamRef<'_>) -> Vec<T> {
    let mut out = vec![T::default(); src.len()];
    copy::d2h_blocking(&mut out, src, stream).unwrap();
    out
}

/// The pinned allocation at `ptr` was freed, once frees deferred off CUDA's callback threads ran.
pub fn freed<T>(ptr: *const T) -> bool {
    free_deferred();
    is_freed(ptr)
}

/// The pinned allocation at `ptr` is no longer registered with CUDA (it was freed).
pub fn is_freed<T>(ptr: *const T) -> bool {
    // SAFETY: a plain struct of integers and pointers.
    let mut attrs: sys::cudaPointerAttributes = unsafe { std::mem::zeroed() };
    // SAFETY: `attrs` is writable; any address may be asked about.
    let code = unsafe { sys::cudaPointerGetAttributes(&mut attrs, ptr.cast()) };
    code == sys::cudaError::cudaSuccess && attrs.type_ == sys::cudaMemoryType::cudaMemoryTypeUnregistered
}
