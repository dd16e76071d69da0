//! [`Completion`]: a future for GPU work, woken by a stream callback, a host function or the
//! poller thread; and the notifiers that wake it.

use super::poller;
use super::slot::{self, WakeSlot, MAX_WAITS_IN_FLIGHT};
use crate::callback::run_callback;
use crate::error::{CudaError, Error, Result, UsageKind};
use crate::event::{Event, EventStatus};
use crate::stream::StreamRef;
use alloc::sync::Arc;
use core::ffi::c_void;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use ordo_cuda_sys as sys;

/// What wakes a stream's [`Completion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notifier {
    /// A stream callback (`cudaStreamAddCallback`): a host function that CUDA also calls when
    /// the stream's work failed, with the error, which the future then returns. The default.
    #[default]
    StreamCallback,
    /// A host function (`cudaLaunchHostFunc`). CUDA does not call it once the context is lost
    /// (a sticky error), so a future woken by it then never completes: prefer
    /// [`StreamCallback`](Self::StreamCallback), unless measuring.
    HostFunc,
}

/// The completion of GPU work, as a future: everything enqueued on a stream before
/// [`StreamRef::completion`], or an event's record ([`Event::completion`]). Resolves to `Ok(())`
/// once the work has completed, or to the error CUDA reported for it (a sticky error: the
/// context is lost).
///
/// No thread waits for it: a stream callback wakes the task (or, for an event, ordo's one poller
/// thread). Making one is two CUDA calls (the capture query and the callback's enqueue); waiting
/// allocates nothing once ordo's wake slots have grown to the number of waits in flight at once.
///
/// **Cancellation.** Dropping it, at any point, neither blocks nor calls CUDA: the wake slot it
/// shares with the callback is let go by whichever of the two ends last. It holds no memory of
/// the work (see [`InFlight`](super::InFlight) for work whose buffers must outlive it).
///
/// Polled again after it resolved, it resolves again to the same result. It is `Send`, `Sync`,
/// `Unpin` and `'static`: it borrows nothing (an [`Event::completion`] holds a reference to its
/// event), so it can move into a spawned task, and forgetting it (`mem::forget`) only leaks its
/// slot.
#[must_use = "a Completion does nothing unless awaited or polled"]
#[derive(Debug)]
pub struct Completion {
    /// The slot while it may be waited on; `None` once the result is in `code`.
    slot: Option<&'static WakeSlot>,
    code: sys::cudaError_t,
    call: &'static str,
}

impl Completion {
    /// A completion already resolved to `code`.
    fn ready(code: sys::cudaError_t, call: &'static str) -> Self {
        Completion { slot: None, code, call }
    }

    /// A completion armed on `slot`.
    pub(super) fn armed(slot: &'static WakeSlot, call: &'static str) -> Self {
        Completion { slot: Some(slot), code: sys::cudaError::cudaSuccess, call }
    }

    /// The slot's result, once its notifier fired: the slot is freed (the future holds it no
    /// more). For [`InFlight`](super::InFlight), which wraps a completion.
    pub(super) fn poll_code(&mut self, cx: &mut Context<'_>) -> Poll<Result<()>> {
        if let Some(slot) = self.slot {
            match slot.poll_fired(cx.waker()) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(code) => {
                    self.slot = None;
                    self.code = code;
                }
            }
        }
        Poll::Ready(result(self.code, self.call))
    }

    /// Lets go of the slot, leaving `payload` to be released once the work has completed (at
    /// once, on the releaser thread, if it has).
    pub(super) fn abandon<P: Send + 'static>(&mut self, payload: Option<P>) {
        if let Some(slot) = self.slot.take() {
            slot.abandon(payload);
        } else {
            drop(payload);
        }
    }

    /// Whether the result is known without waiting: resolved, or fired and not yet polled.
    pub(super) fn is_settled(&self) -> bool {
        self.slot.map_or(true, WakeSlot::is_fired)
    }
}

/// The result a notifier reported, as ordo's error, named after the notifier's call.
fn result(code: sys::cudaError_t, call: &'static str) -> Result<()> {
    if code == sys::cudaError::cudaSuccess {
        Ok(())
    } else {
        Err(Error::Cuda(CudaError::new(code, call)))
    }
}

impl Future for Completion {
    type Output = Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<()>> {
        self.get_mut().poll_code(cx)
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        self.abandon::<()>(None);
    }
}

/// The error when every wake slot is in use.
fn too_many(call: &'static str) -> Error {
    const _: () = assert!(MAX_WAITS_IN_FLIGHT == 1 << 20, "the error text names the limit");
    Error::usage(
        UsageKind::InvalidArgument,
        call,
        "more than 2^20 completions in flight at once (future::MAX_WAITS_IN_FLIGHT)",
    )
}

/// Refuses a stream that is capturing, or whose capture was invalidated, before anything is
/// enqueued: a callback enqueued there would become a graph node, called at each launch of the
/// graph, and never now.
pub(super) fn refuse_capture(stream: StreamRef<'_>, call: &'static str) -> Result<()> {
    stream.refuse_while_capturing(
        call,
        "the stream is capturing: captured work runs at each launch of the graph, not now, so there is nothing to wait for; await a completion of the stream the graph is launched on",
    )
}

/// Called by CUDA once the work before it on the stream has completed, or failed (`status`).
unsafe extern "C" fn on_stream_callback(_stream: sys::cudaStream_t, status: sys::cudaError_t, data: *mut c_void) {
    run_callback(|| {
        // SAFETY: `data` is the slot `enqueue` gave CUDA, which calls this once; slots are never
        // freed, and this one is held for the callback until `fire` lets go of it.
        let slot = unsafe { &*data.cast::<WakeSlot>() };
        slot.fire(status);
    });
}

/// Called by CUDA once the work before it on the stream has completed.
unsafe extern "C" fn on_host_fn(data: *mut c_void) {
    run_callback(|| {
        // SAFETY: as for `on_stream_callback`.
        let slot = unsafe { &*data.cast::<WakeSlot>() };
        slot.fire(sys::cudaError::cudaSuccess);
    });
}

/// A completion of everything enqueued on `stream` so far, woken by `notifier`, for a stream
/// the caller checked is not capturing ([`refuse_capture`]). One wake slot and one enqueue.
pub(super) fn arm(stream: StreamRef<'_>, notifier: Notifier, call: &'static str) -> Result<Completion> {
    let slot = slot::acquire().ok_or_else(|| too_many(call))?;
    let data = (slot as *const WakeSlot).cast_mut().cast::<c_void>();
    let (code, name) = match notifier {
        // SAFETY: a live stream; the callback reads `data`, a slot that is never freed and is
        // held for it until it runs (or, if the enqueue fails, released below).
        Notifier::StreamCallback => (
            unsafe { sys::cudaStreamAddCallback(stream.as_raw(), Some(on_stream_callback), data, 0) },
            "cudaStreamAddCallback",
        ),
        // SAFETY: as above.
        Notifier::HostFunc => {
            (unsafe { sys::cudaLaunchHostFunc(stream.as_raw(), Some(on_host_fn), data) }, "cudaLaunchHostFunc")
        }
    };
    if let Err(e) = crate::error::check(code, name) {
        slot.unarm();
        return Err(e);
    }
    Ok(Completion::armed(slot, name))
}

impl StreamRef<'_> {
    /// The completion of everything enqueued on the stream so far, as a future
    /// ([`Completion`]), woken by a stream callback (`cudaStreamAddCallback`) on CUDA's thread:
    /// no thread waits. The stream's later work waits for the callback, which only wakes the
    /// task (microseconds).
    ///
    /// Refused with a usage error, before anything is enqueued, while the stream captures:
    /// captured work runs at each launch of the graph, not now.
    ///
    /// ```no_run
    /// # async fn f() -> ordo_cuda_core::Result<()> {
    /// let stream = ordo_cuda_core::Stream::new()?;
    /// // ... enqueue work on `stream` ...
    /// stream.as_stream().completion()?.await?; // the task sleeps; no thread blocks
    /// # Ok(()) }
    /// ```
    pub fn completion(self) -> Result<Completion> {
        const CALL: &str = "StreamRef::completion";
        refuse_capture(self, CALL)?;
        arm(self, Notifier::StreamCallback, CALL)
    }

    /// [`completion`](Self::completion), woken by the `notifier` chosen.
    pub fn completion_via(self, notifier: Notifier) -> Result<Completion> {
        const CALL: &str = "StreamRef::completion_via";
        refuse_capture(self, CALL)?;
        arm(self, notifier, CALL)
    }
}

impl Event {
    /// The completion of the event's last record as a future ([`Completion`]), for events
    /// recorded elsewhere (another library's, another stream's): ordo's one poller thread queries
    /// it (`cudaEventQuery`), yielding between rounds for [`SPIN_WINDOW`](super::SPIN_WINDOW)
    /// after the last completion, backing off to sleeps of up to
    /// [`MAX_POLL_SLEEP`](super::MAX_POLL_SLEEP) while none come. A stream's own
    /// [`completion`](StreamRef::completion) costs no polling but wakes later (CUDA runs its
    /// stream callback some microseconds after the work: BENCHMARKS.md, "Async waits"): for the
    /// lowest latency, record an event on the stream and await this.
    ///
    /// The event is shared (`Arc`): the future keeps a reference to it while the poller may query
    /// it, so that neither dropping nor forgetting the future can leave the poller a destroyed
    /// event. Already complete: resolves at once, without the poller. Recorded again while the
    /// future waits, the event is waited for in its new record (as `cudaEventQuery` does). The
    /// future's drop never blocks on the GPU, but waits for a query of the event under way on the
    /// poller thread, if there is one (a query does not block).
    ///
    /// ```no_run
    /// # async fn f(s: ordo_cuda_core::StreamRef<'_>) -> ordo_cuda_core::Result<()> {
    /// use std::sync::Arc;
    /// let event = Arc::new(ordo_cuda_core::Event::new()?);
    /// event.record(s)?;
    /// event.completion()?.await?;
    /// # Ok(()) }
    /// ```
    pub fn completion(self: &Arc<Self>) -> Result<Completion> {
        const CALL: &str = "Event::completion";
        if self.query()? == EventStatus::Complete {
            return Ok(Completion::ready(sys::cudaError::cudaSuccess, "cudaEventQuery"));
        }
        if !poller::ensure_started() {
            return Err(Error::usage(
                UsageKind::NotSupported,
                CALL,
                "the poller and releaser threads could not be started",
            ));
        }
        let slot = slot::acquire().ok_or_else(|| too_many(CALL))?;
        slot.set_event(Arc::clone(self));
        poller::register(slot);
        Ok(Completion::armed(slot, "cudaEventQuery"))
    }
}
