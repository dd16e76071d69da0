//! Copies and memsets on a stream, and the blocking copies for pageable memory.
//!
//! # Safety model of asynchronous copies
//! An asynchronous copy reads or writes its memory after the call has returned, until the stream
//! reaches it. Rust's borrows end at the return, so they cannot prove that the memory outlives the
//! copy: these functions are `unsafe`, and the caller owes, until the copy has completed on `stream`
//! (an event, a stream synchronise, or later work on the same stream that depends on it):
//! - the host memory stays allocated and is not written (for a copy from it) or not accessed (for a
//!   copy into it);
//! - the device memory stays allocated: true without further thought for a [`DeviceBuffer`] used
//!   on the stream it is freed on, since its free is ordered after the copy. On another stream,
//!   order the copy after the buffer's stream and the buffer's free after the copy:
//!   [`order::after_origin`] and [`order::origin_after`] with the view's
//!   [`origin`](DeviceSlice::origin) do both.
//!
//! A copy captured into a graph runs at every launch of every executable graph made from it, not
//! at the call: the capture's contract ([`capture`](crate::graph::capture)) extends the above to
//! every such launch.
//!
//! Pinned memory is required by type (`PinnedSlice`): an async copy from pageable memory is not
//! asynchronous. The `*_blocking` functions take ordinary slices and return after the copy.
//!
//! ```no_run
//! use ordo_cuda_core::{memory::copy, DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let host = PinnedBuffer::<f32>::from_slice(&[1.0, 2.0, 3.0])?;
//! let mut dev = DeviceBuffer::<f32>::alloc_async(3, stream.as_stream())?;
//! // SAFETY: `host` and `dev` outlive the copy: the stream is synchronised before they drop.
//! unsafe { copy::h2d_async(dev.as_mut_slice(), host.pinned(), stream.as_stream())? };
//! stream.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! Pageable memory does not compile where pinned memory is required:
//! ```compile_fail
//! # use ordo_cuda_core::{memory::copy, DeviceBuffer, StreamRef};
//! # fn f(dev: &mut DeviceBuffer<'_, u32>, pageable: &[u32]) {
//! unsafe { copy::h2d_async(dev.as_mut_slice(), pageable, StreamRef::per_thread_default()) };
//! # }
//! ```
//!
//! [`DeviceBuffer`]: super::DeviceBuffer

use super::{order, DeviceCopy, DeviceSlice, DeviceSliceMut, PinnedSlice, PinnedSliceMut};
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use ordo_cuda_sys as sys;
use sys::cudaMemcpyKind as Kind;

#[inline(always)]
fn same_len(a: usize, b: usize, call: &'static str) -> Result<()> {
    if a != b {
        return Err(Error::invalid(call, "source and destination lengths differ"));
    }
    if a == 0 {
        return Err(Error::invalid(call, "zero-length copy"));
    }
    Ok(())
}

/// `cudaMemcpyAsync` of `bytes` from `src` to `dst` on `stream`, as a `Result`: the one call every
/// copy here makes.
///
/// # Safety
/// As the CUDA call: both ranges are valid for the copy's kind and stay so until it completes.
#[inline(always)]
unsafe fn memcpy(
    dst: *mut core::ffi::c_void,
    src: *const core::ffi::c_void,
    bytes: usize,
    kind: Kind,
    stream: StreamRef<'_>,
) -> Result<()> {
    // SAFETY: forwarded to the caller.
    cuda_call!(unsafe { sys::cudaMemcpyAsync(dst, src, bytes, kind, stream.as_raw()) })
}

/// Host to device on `stream` (`cudaMemcpyAsync`).
///
/// # Safety
/// See the [module documentation](self): `src` and `dst` stay valid until the copy completes.
#[inline]
pub unsafe fn h2d_async<T: DeviceCopy>(
    dst: DeviceSliceMut<'_, T>,
    src: PinnedSlice<'_, T>,
    stream: StreamRef<'_>,
) -> Result<()> {
    same_len(dst.len(), src.len(), "copy::h2d_async")?;
    // SAFETY: lengths checked; lifetimes owed by the caller.
    unsafe {
        memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), Kind::cudaMemcpyHostToDevice, stream)
    }
}

/// Device to host on `stream` (`cudaMemcpyAsync`).
///
/// # Safety
/// See the [module documentation](self): `src` and `dst` stay valid until the copy completes.
#[inline]
pub unsafe fn d2h_async<T: DeviceCopy>(
    dst: PinnedSliceMut<'_, T>,
    src: DeviceSlice<'_, T>,
    stream: StreamRef<'_>,
) -> Result<()> {
    same_len(dst.len(), src.len(), "copy::d2h_async")?;
    // SAFETY: lengths checked; lifetimes owed by the caller.
    unsafe {
        memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), Kind::cudaMemcpyDeviceToHost, stream)
    }
}

/// Device to device on `stream` (`cudaMemcpyAsync`), on one device or between devices with
/// unified addressing.
///
/// # Safety
/// See the [module documentation](self): both buffers stay allocated until the copy completes.
#[inline]
pub unsafe fn d2d_async<T: DeviceCopy>(
    dst: DeviceSliceMut<'_, T>,
    src: DeviceSlice<'_, T>,
    stream: StreamRef<'_>,
) -> Result<()> {
    same_len(dst.len(), src.len(), "copy::d2d_async")?;
    // SAFETY: lengths checked; lifetimes owed by the caller.
    unsafe {
        memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), Kind::cudaMemcpyDeviceToDevice, stream)
    }
}

/// Device to device across devices on `stream` (`cudaMemcpyPeerAsync`). With peer access enabled
/// it goes over the direct link; without, CUDA stages it through the host.
///
/// # Safety
/// See the [module documentation](self).
#[inline]
pub unsafe fn peer_async<T: DeviceCopy>(
    dst: DeviceSliceMut<'_, T>,
    dst_device: crate::Device,
    src: DeviceSlice<'_, T>,
    src_device: crate::Device,
    stream: StreamRef<'_>,
) -> Result<()> {
    same_len(dst.len(), src.len(), "copy::peer_async")?;
    // SAFETY: lengths checked; lifetimes owed by the caller.
    cuda_call!(unsafe {
        sys::cudaMemcpyPeerAsync(
            dst.as_mut_ptr().cast(),
            dst_device.ordinal(),
            src.as_ptr().cast(),
            src_device.ordinal(),
            src.byte_len(),
            stream.as_raw(),
        )
    })
}

/// Sets every byte of `dst` to `value` on `stream` (`cudaMemsetAsync`).
///
/// # Safety
/// `dst` stays allocated until the memset completes.
#[inline]
pub unsafe fn memset_async<T: DeviceCopy>(dst: DeviceSliceMut<'_, T>, value: u8, stream: StreamRef<'_>) -> Result<()> {
    if dst.is_empty() {
        return Err(Error::invalid("copy::memset_async", "zero-length memset"));
    }
    // SAFETY: our view; lifetime owed by the caller.
    cuda_call!(unsafe {
        sys::cudaMemsetAsync(dst.as_mut_ptr().cast(), i32::from(value), dst.byte_len(), stream.as_raw())
    })
}

/// Runs a blocking copy with `stream`'s device current. CUDA refuses a copy of pageable memory
/// on a stream of another device than the current one (`cudaErrorInvalidValue`), while it runs a
/// kernel launch on the stream's device (`docs/cuda-behaviours.md`, CB-16); these copies
/// follow the stream too. (`cudaStreamGetDevice` needs 12.8; before, the copy runs as called.)
fn on_stream_device(stream: StreamRef<'_>, copy: impl FnOnce() -> Result<()>) -> Result<()> {
    stream.device_or_current()?.with_current(copy)
}

/// The shared body of the blocking copies: refuse a capturing stream before anything is enqueued,
/// order the copy after the device view's own stream, enqueue it, and return only once it can no
/// longer touch the host memory.
fn blocking(
    stream: StreamRef<'_>,
    origin: Option<StreamRef<'_>>,
    call: &'static str,
    enqueue: impl FnOnce() -> Result<()>,
) -> Result<()> {
    // Inside a capture the copy would become a graph node and the synchronise would fail (or the
    // copy would run at every replay, long after the host borrow ended). The capture contract
    // promises that nobody else uses the stream while it captures, so this answer holds until the
    // synchronise below.
    if stream.is_capturing()? {
        return Err(Error::invalid(
            call,
            "the stream is capturing: a blocking copy cannot run inside a capture (its host memory is borrowed only for the call)",
        ));
    }
    on_stream_device(stream, || {
        // The device memory belongs to `origin`: the copy must follow what is queued there (the
        // stream-ordered allocation, earlier writes); the later free on `origin` follows the copy,
        // since the copy has completed when this returns.
        order::after_origin(origin, stream)?;
        finish(stream, enqueue())
    })
}

/// Synchronises `stream` after a blocking copy was enqueued on it (blocking by name: the caller
/// asked for a synchronous copy). If the enqueue or the synchronise fails, the copy may still be
/// queued or running, reading or writing host memory whose borrow ends when this returns: poll
/// the stream until it is no longer busy, then return the first error.
fn finish(stream: StreamRef<'_>, enqueued: Result<()>) -> Result<()> {
    // Whether or not the enqueue reported an error, return only once nothing queued on the
    // stream (the copy included) can still run.
    let waited = stream.synchronize_or_wait_idle();
    enqueued.and(waited)
}

/// Copies pageable host memory to the device and returns once `src` may be reused
/// (`cudaMemcpyAsync` on `stream`, then `cudaStreamSynchronize`): blocking, by name. Runs with the
/// stream's device current, whatever the calling thread's is.
///
/// - When `dst` belongs to a buffer of another stream ([`DeviceSliceMut::origin`]), `stream` first
///   waits for that stream's queued work (an event; see [`order`]).
/// - A stream that is capturing is refused with a usage error, before anything is enqueued.
/// - It never returns while the copy may still read `src`: if the copy's enqueue or the
///   synchronise fails, it waits until the stream is no longer busy (`cudaStreamQuery` stops
///   answering `cudaErrorNotReady`), then returns that first error.
pub fn h2d_blocking<T: DeviceCopy>(dst: DeviceSliceMut<'_, T>, src: &[T], stream: StreamRef<'_>) -> Result<()> {
    const CALL: &str = "copy::h2d_blocking";
    same_len(dst.len(), src.len(), CALL)?;
    blocking(stream, dst.origin(), CALL, || {
        // SAFETY: lengths checked; `src` stays borrowed until `finish` sees the copy done.
        unsafe {
            memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), dst.byte_len(), Kind::cudaMemcpyHostToDevice, stream)
        }
    })
}

/// Copies device memory into pageable host memory and returns once it is there
/// (`cudaMemcpyAsync` on `stream`, then `cudaStreamSynchronize`): blocking, by name. Runs with the
/// stream's device current, whatever the calling thread's is.
///
/// Ordering, capture and errors as for [`h2d_blocking`]: it follows `src`'s own stream, refuses a
/// capturing stream, and never returns while the copy may still write `dst`.
pub fn d2h_blocking<T: DeviceCopy>(dst: &mut [T], src: DeviceSlice<'_, T>, stream: StreamRef<'_>) -> Result<()> {
    const CALL: &str = "copy::d2h_blocking";
    same_len(dst.len(), src.len(), CALL)?;
    blocking(stream, src.origin(), CALL, || {
        // SAFETY: lengths checked; `dst` stays borrowed until `finish` sees the copy done.
        unsafe {
            memcpy(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), Kind::cudaMemcpyDeviceToHost, stream)
        }
    })
}
