//! Ordering work on one stream against a buffer's own stream (its *origin*: the stream its
//! [`DeviceBuffer`](super::DeviceBuffer) is freed on, see [`DeviceSlice::origin`](super::DeviceSlice::origin)).
//!
//! A device buffer is allocated and freed in the order of its own stream. Work enqueued on another
//! stream is ordered with neither by itself: it may run before a write still queued on the origin
//! (or before the stream-ordered allocation has completed), and the buffer's free on the origin may
//! run before it. The two functions here close both gaps with one event each:
//! - [`after_origin`] before enqueuing on `stream`: `stream` waits for what the origin has queued;
//! - [`origin_after`] after enqueuing on `stream`: the origin (so the buffer's later free) waits
//!   for what `stream` has queued.
//!
//! When the origin is unknown (`None`) or is `stream` itself, both cost one comparison and make no
//! driver call. Otherwise each makes a fresh event (timing disabled) on the recording stream's
//! device, records it and makes the other stream wait on it: a handful of driver calls, paid only
//! where streams actually cross.

use crate::capture_state::CaptureStatus;
use crate::error::{Error, Result, UsageKind};
use crate::event::Event;
use crate::stream::StreamRef;

/// Makes work enqueued on `stream` after this call wait for everything enqueued on `origin` so
/// far (an event recorded on `origin`, waited on by `stream`). Nothing when `origin` is `None` or
/// is `stream`.
///
/// Use it before enqueuing work on `stream` that touches memory whose buffer belongs to `origin`:
/// the work then sees the allocation completed and the origin's earlier writes done.
#[inline]
pub fn after_origin(origin: Option<StreamRef<'_>>, stream: StreamRef<'_>) -> Result<()> {
    match origin {
        Some(origin) if origin.as_raw() != stream.as_raw() => order(origin, stream),
        _ => Ok(()),
    }
}

/// Makes work enqueued on `origin` after this call wait for everything enqueued on `stream` so
/// far (an event recorded on `stream`, waited on by `origin`). Nothing when `origin` is `None` or
/// is `stream`.
///
/// Use it after enqueuing work on `stream` that touches memory whose buffer belongs to `origin`:
/// the buffer's free, later enqueued on `origin`, then waits for that work.
#[inline]
pub fn origin_after(origin: Option<StreamRef<'_>>, stream: StreamRef<'_>) -> Result<()> {
    match origin {
        Some(origin) if origin.as_raw() != stream.as_raw() => order(stream, origin),
        _ => Ok(()),
    }
}

/// `later` waits for what `earlier` has queued. The event is made on `earlier`'s device (CUDA
/// records an event only on a stream of its own device; waiting works across devices) and
/// destroyed at once: the wait uses the event's state at the `cudaStreamWaitEvent` call, and CUDA
/// releases a recorded event only once its work has completed.
///
/// Refused with a usage error, before anything is enqueued, when `earlier` is capturing and
/// `later` is not: the wait would make `later` join the capture, so work that ordo (or another
/// thread) then enqueues on `later` to run now would be captured instead, and replayed.
#[cold]
#[inline(never)]
pub(crate) fn order(earlier: StreamRef<'_>, later: StreamRef<'_>) -> Result<()> {
    if earlier.capture_status()? != CaptureStatus::None && later.capture_status()? == CaptureStatus::None {
        return Err(Error::usage(
            UsageKind::InvalidArgument,
            "memory::order",
            "a buffer's stream is capturing while the work runs on a stream that is not: ordering them would pull that stream into the capture",
        ));
    }
    let event = earlier.device_or_current()?.with_current(Event::new)?;
    event.record(earlier)?;
    later.wait_event(&event)
}
