//! Copies and memsets as futures: safe, because the returned [`InFlight`] owns the host memory
//! and borrows the device memory until the work has completed, dropped or not.
//!
//! Each takes its host memory by value (a [`PinnedBuffer`]: pageable memory cannot reach an
//! asynchronous copy) and hands it back when awaited; the device memory is a view, borrowed by
//! the future, so that its buffer can be neither freed nor moved while the future lives. A view
//! whose buffer belongs to another stream ([`origin`](crate::memory::DeviceSlice::origin)) is
//! ordered both ways, as ordo's blocking copies do: the work waits for what the origin has
//! queued, and the origin (so the buffer's free) waits for the work (one event each way, made
//! only where the streams differ).
//!
//! Refused with a usage error, before anything is enqueued, on a capturing stream. If an enqueue
//! fails after the copy was enqueued, the call waits until the stream is idle before it returns
//! the error (an error path: the host memory must not be released while the copy may use it).
//!
//! ```no_run
//! use ordo_cuda_core::{future, DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};
//! # async fn f() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let s = stream.as_stream();
//! let mut dev = DeviceBuffer::<u32>::alloc_async(256, s)?;
//! let input = PinnedBuffer::from_slice(&[7u32; 256])?;
//! let input = future::copy::h2d(dev.as_mut_slice(), input, s)?.await?; // `input` is back
//! let out = PinnedBuffer::<u32>::zeroed(256, HostAllocFlags::empty())?;
//! let out = future::copy::d2h(out, dev.as_slice(), s)?.await?;
//! assert_eq!(out[0], 7);
//! # drop(input); Ok(()) }
//! ```
//!
//! A buffer borrowed by a copy in flight cannot be dropped:
//! ```compile_fail,E0505
//! # use ordo_cuda_core::{future, DeviceBuffer, PinnedBuffer, StreamRef};
//! # fn f(s: StreamRef<'_>, host: PinnedBuffer<u32>) -> ordo_cuda_core::Result<()> {
//! let mut dev = DeviceBuffer::<u32>::alloc_async(256, s)?;
//! let copy = future::copy::h2d(dev.as_mut_slice(), host, s)?;
//! drop(dev);
//! drop(copy);
//! # Ok(()) }
//! ```

use super::completion::{arm, refuse_capture, Notifier};
use super::InFlight;
use crate::error::{Error, Result};
use crate::memory::{copy, order, DeviceCopy, DeviceSlice, DeviceSliceMut, PinnedBuffer};
use crate::stream::StreamRef;

fn same_len(a: usize, b: usize, call: &'static str) -> Result<()> {
    if a != b {
        return Err(Error::invalid(call, "source and destination lengths differ"));
    }
    Ok(())
}

/// After the work was enqueued on `stream`: the origins wait for it, then the callback that wakes
/// the future. If either fails, waits until `stream` is idle (the work may still use `payload`),
/// then returns the error, `payload` released.
fn finish<'d, P: Send + 'static>(
    stream: StreamRef<'_>,
    origins: [Option<StreamRef<'_>>; 2],
    payload: P,
    call: &'static str,
) -> Result<InFlight<'d, P>> {
    let armed = origins
        .into_iter()
        .try_for_each(|origin| order::origin_after(origin, stream))
        .and_then(|()| arm(stream, Notifier::StreamCallback, call));
    match armed {
        Ok(completion) => Ok(InFlight::new(completion, payload)),
        Err(e) => {
            // The wait's own error adds nothing to the first one.
            let _ = stream.synchronize_or_wait_idle();
            drop(payload);
            Err(e)
        }
    }
}

/// A refused copy's pinned buffer: dropped here, unless `stream` captures (or cannot say), where
/// its `cudaFreeHost` would invalidate the capture (thread-local and global modes): then it is
/// released on ordo's releaser thread, as a cancelled copy's is.
fn refused<T: DeviceCopy>(e: Error, buffer: PinnedBuffer<T>, stream: StreamRef<'_>) -> Error {
    if matches!(stream.capture_status(), Ok(crate::graph::CaptureStatus::None)) {
        drop(buffer);
    } else {
        super::in_flight::release(buffer);
    }
    e
}

/// Copies `src` to `dst` on `stream` (`cudaMemcpyAsync`); the future gives `src` back once the
/// copy has completed.
pub fn h2d<'d, T: DeviceCopy>(
    mut dst: DeviceSliceMut<'d, T>,
    src: PinnedBuffer<T>,
    stream: StreamRef<'_>,
) -> Result<InFlight<'d, PinnedBuffer<T>>> {
    const CALL: &str = "future::copy::h2d";
    if let Err(e) = same_len(dst.len(), src.len(), CALL).and_then(|()| refuse_capture(stream, CALL)) {
        return Err(refused(e, src, stream));
    }
    let origin = dst.origin();
    order::after_origin(origin, stream)?;
    // SAFETY: `src` is owned by the InFlight (or, on failure, kept until the stream is idle)
    // until the copy completes; `dst` is borrowed by it, and freed only on its origin, which is
    // ordered after the copy.
    unsafe { copy::h2d_async(dst.reborrow(), src.pinned(), stream)? };
    finish(stream, [origin, None], src, CALL)
}

/// Copies `src` into `dst` on `stream` (`cudaMemcpyAsync`); the future gives `dst` back, filled,
/// once the copy has completed.
pub fn d2h<'d, T: DeviceCopy>(
    mut dst: PinnedBuffer<T>,
    src: DeviceSlice<'d, T>,
    stream: StreamRef<'_>,
) -> Result<InFlight<'d, PinnedBuffer<T>>> {
    const CALL: &str = "future::copy::d2h";
    if let Err(e) = same_len(dst.len(), src.len(), CALL).and_then(|()| refuse_capture(stream, CALL)) {
        return Err(refused(e, dst, stream));
    }
    let origin = src.origin();
    order::after_origin(origin, stream)?;
    // SAFETY: as for `h2d`.
    unsafe { copy::d2h_async(dst.pinned_mut(), src, stream)? };
    finish(stream, [origin, None], dst, CALL)
}

/// Copies `src` to `dst` on `stream` (`cudaMemcpyAsync`, on one device or between devices with
/// unified addressing); the future resolves once the copy has completed.
pub fn d2d<'d, T: DeviceCopy>(
    mut dst: DeviceSliceMut<'d, T>,
    src: DeviceSlice<'d, T>,
    stream: StreamRef<'_>,
) -> Result<InFlight<'d, ()>> {
    const CALL: &str = "future::copy::d2d";
    same_len(dst.len(), src.len(), CALL)?;
    refuse_capture(stream, CALL)?;
    let origins = [dst.origin(), src.origin()];
    origins.into_iter().try_for_each(|origin| order::after_origin(origin, stream))?;
    // SAFETY: both views are borrowed by the InFlight, and freed only on their origins, which
    // are ordered after the copy.
    unsafe { copy::d2d_async(dst.reborrow(), src, stream)? };
    finish(stream, origins, (), CALL)
}

/// Sets every byte of `dst` to `value` on `stream` (`cudaMemsetAsync`); the future resolves once
/// it has completed.
pub fn memset<'d, T: DeviceCopy>(
    mut dst: DeviceSliceMut<'d, T>,
    value: u8,
    stream: StreamRef<'_>,
) -> Result<InFlight<'d, ()>> {
    const CALL: &str = "future::copy::memset";
    refuse_capture(stream, CALL)?;
    let origin = dst.origin();
    order::after_origin(origin, stream)?;
    // SAFETY: `dst` is borrowed by the InFlight, and freed only on its origin, which is ordered
    // after the memset.
    unsafe { copy::memset_async(dst.reborrow(), value, stream)? };
    finish(stream, [origin, None], (), CALL)
}
