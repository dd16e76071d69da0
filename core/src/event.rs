//! Events: [`Event`] for ordering (timing off: the cheap default) and [`TimingEvent`] for measuring
//! elapsed time. Elapsed time exists only between two `TimingEvent`s, so asking it of an event made
//! without timing is a compile error rather than a runtime one.

use crate::error::{Error, Result};
use crate::stream::StreamRef;
use core::ffi::c_uint;
use core::ops::Deref;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

bitflags::bitflags! {
    /// Event creation flags (`cudaEventCreateWithFlags`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct EventFlags: c_uint {
        /// `cudaEventBlockingSync`: `synchronize` sleeps rather than spins.
        const BLOCKING_SYNC = sys::cudaEventBlockingSync;
        /// `cudaEventDisableTiming`: no timestamp; cheapest to record and wait on.
        const DISABLE_TIMING = sys::cudaEventDisableTiming;
        /// `cudaEventInterprocess`: shareable across processes (needs `DISABLE_TIMING`).
        const INTERPROCESS = sys::cudaEventInterprocess;
    }
}

/// Whether an event's recorded work has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventStatus {
    /// The work before the last record has completed (or the event was never recorded).
    Complete,
    /// Still pending.
    Pending,
}

owned_handle! {
    /// An owned CUDA event, destroyed on drop (a failure is kept for
    /// [`take_drop_errors`](crate::error::take_drop_errors)). Recording and waiting are safe from any
    /// thread.
    ///
    /// Dropping an event with pending records is allowed: CUDA releases it once the work completes.
    #[derive(Debug)]
    pub struct Event(sys::CUevent_st) = sys::cudaEvent_t, destroyed by cudaEventDestroy;
}

// SAFETY: CUDA events may be recorded, queried and waited on from any thread, concurrently.
unsafe impl Send for Event {}
// SAFETY: as above; every method takes `&self`.
unsafe impl Sync for Event {}

impl Event {
    /// An ordering event: timing disabled (`cudaEventDisableTiming`), the cheapest kind.
    pub fn new() -> Result<Event> {
        Event::with_flags(EventFlags::DISABLE_TIMING)
    }

    /// An event with `flags` (`cudaEventCreateWithFlags`).
    pub fn with_flags(flags: EventFlags) -> Result<Event> {
        let mut raw: sys::cudaEvent_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaEventCreateWithFlags(&mut raw, flags.bits()) })?;
        NonNull::new(raw).map(|raw| Event { raw }).ok_or_else(|| crate::error::null_handle("cudaEventCreateWithFlags"))
    }

    /// Records the event at this point of `stream`: the driver's `cuEventRecord` where it is
    /// there (faster: BENCHMARKS.md, "Driver paths"), else or where the driver refuses it `cudaEventRecord`, whose
    /// error is the one reported. No allocation, no lock.
    #[inline(always)]
    pub fn record(&self, stream: StreamRef<'_>) -> Result<()> {
        #[cfg(cuda_12_8)]
        if let Some(record) = crate::driver_calls::event_record() {
            // SAFETY: a live event and a live stream (CUevent and CUstream are these handles).
            if unsafe { record(self.as_raw(), stream.as_raw()) } == 0 {
                return Ok(());
            }
        }
        // SAFETY: a live event and a live stream.
        cuda_call!(unsafe { sys::cudaEventRecord(self.as_raw(), stream.as_raw()) })
    }

    /// Records the event as an external event node when `stream` is capturing
    /// (`cudaEventRecordWithFlags` with `cudaEventRecordExternal`), so that the graph's replay
    /// records it too; outside capture it is a plain record.
    ///
    /// The graph keeps the raw handle, not the `Event`: every replay of every executable graph
    /// made from that capture records this event, so it must outlive them all. That is part of
    /// the contract of the (`unsafe`) capture that made the graph ([`capture`](crate::graph::capture)).
    #[inline]
    pub fn record_external(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: a live event and a live stream.
        cuda_call!(unsafe {
            sys::cudaEventRecordWithFlags(self.as_raw(), stream.as_raw(), sys::cudaEventRecordExternal)
        })
    }

    /// Whether the recorded work has completed (`cudaEventQuery`). Never blocks.
    #[inline]
    pub fn query(&self) -> Result<EventStatus> {
        // SAFETY: a live event.
        let status = cuda_call!(unsafe { sys::cudaEventQuery(self.as_raw()) }, answers: cudaErrorNotReady)?;
        Ok(if status == sys::cudaError::cudaErrorNotReady { EventStatus::Pending } else { EventStatus::Complete })
    }

    /// Blocks until the recorded work has completed (`cudaEventSynchronize`): the caller's explicit choice.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live event. Synchronising is what the caller asked for by name.
        cuda_call!(unsafe { sys::cudaEventSynchronize(self.as_raw()) })
    }
}

/// An event with timing enabled. Derefs to [`Event`] for record, query, synchronize and waits.
#[derive(Debug)]
#[repr(transparent)]
pub struct TimingEvent(Event);

static_assertions::assert_eq_size!(TimingEvent, sys::cudaEvent_t);

impl TimingEvent {
    /// A timing event (`cudaEventDefault`).
    pub fn new() -> Result<TimingEvent> {
        Event::with_flags(EventFlags::empty()).map(TimingEvent)
    }

    /// A timing event whose `synchronize` sleeps rather than spins.
    pub fn blocking_sync() -> Result<TimingEvent> {
        Event::with_flags(EventFlags::BLOCKING_SYNC).map(TimingEvent)
    }

    /// Milliseconds of GPU time from `start` to `self` (`cudaEventElapsedTime`), resolution about
    /// half a microsecond. Both must have been recorded and completed: an event never recorded
    /// gives a usage error saying so, one still pending gives `cudaErrorNotReady`.
    pub fn elapsed_ms_since(&self, start: &TimingEvent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: live events; `ms` is writable.
        let status = cuda_call!(
            unsafe { sys::cudaEventElapsedTime(&mut ms, start.as_raw(), self.as_raw()) },
            answers: cudaErrorInvalidResourceHandle
        )?;
        if status == sys::cudaError::cudaErrorInvalidResourceHandle {
            // Both events have timing by type, so CUDA's other reasons are a missing record and
            // events of two devices.
            return Err(Error::invalid(
                "TimingEvent::elapsed_ms_since",
                "an event was never recorded, or the two belong to different devices (cudaEventElapsedTime: cudaErrorInvalidResourceHandle)",
            ));
        }
        Ok(ms)
    }
}

impl Deref for TimingEvent {
    type Target = Event;
    #[inline(always)]
    fn deref(&self) -> &Event {
        &self.0
    }
}
