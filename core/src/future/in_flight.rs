//! [`InFlight`]: what GPU work uses, owned by the future of that work until it has completed.

use super::completion::{arm, Completion, Notifier};
use super::poller;
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use core::future::Future;
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};

/// Work in flight on a stream and what it uses: a future that owns `payload` (pinned buffers,
/// shared device buffers, anything `Send + 'static`) until everything enqueued on the stream
/// before it was made has completed, then resolves to `Ok(payload)`: the buffers come back.
/// `'d` borrows the device memory the work uses ([`copy`](super::copy)'s views), so that it can
/// be neither freed nor moved while the future lives.
///
/// **Cancellation.** Dropping it before completion (a task cancelled, a `select!` that took
/// another branch, a panic, a runtime shut down) never frees the payload early and never
/// blocks: the payload is handed to the wake slot the stream callback holds, and released once
/// the work has completed, on ordo's releaser thread (a stream callback may not call CUDA, and
/// dropping a pinned buffer does). That costs one allocation (the payload, boxed), on the
/// cancelling path only. The borrow `'d` ends with the drop: the device memory is then freed, if
/// its owner drops it, by a free that its stream orders after the work (ordo's copies here order
/// a buffer's own stream after work on another, as [`order::origin_after`] does).
///
/// When the work fails (a sticky error: the context is lost and none of its work runs any
/// more), the future resolves to the error, and the payload is released on the releaser thread.
///
/// [`order::origin_after`]: crate::memory::order::origin_after
#[must_use = "dropping an InFlight keeps its payload until the work completes, then releases it"]
#[derive(Debug)]
pub struct InFlight<'d, P: Send + 'static> {
    completion: Completion,
    /// Until it is handed back, or to the slot.
    payload: Option<P>,
    _device: PhantomData<&'d mut ()>,
}

// The payload is never pinned: moving the future moves it, which is fine while the GPU uses
// memory it points to (a buffer's memory does not move with it).
impl<P: Send + 'static> Unpin for InFlight<'_, P> {}

impl<P: Send + 'static> InFlight<'static, P> {
    /// Keeps `payload` until everything enqueued on `stream` so far has completed (a stream
    /// callback, as [`StreamRef::completion`]), then gives it back: for work the caller enqueued
    /// itself, through `unsafe` calls whose contract asks that the memory outlive the work (an
    /// asynchronous copy, a kernel launch). Dropping the future then releases the payload after
    /// the work, which is what those contracts ask.
    ///
    /// Refused while the stream captures, and when the callback cannot be enqueued: the payload
    /// comes back with the error, still in use by the work (wait for it, or leak it).
    ///
    /// ```no_run
    /// # use ordo_cuda_core::{future::InFlight, memory::copy, DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};
    /// # async fn f() -> ordo_cuda_core::Result<()> {
    /// let stream = Stream::new()?;
    /// let s = stream.as_stream();
    /// let mut dev = DeviceBuffer::<f32>::alloc_async(1024, s)?;
    /// let host = PinnedBuffer::<f32>::zeroed(1024, HostAllocFlags::empty())?;
    /// // SAFETY: `host` is owned by the InFlight until the copy completes, even if it is
    /// // dropped first; `dev` is freed on `s`, after the copy.
    /// unsafe { copy::h2d_async(dev.as_mut_slice(), host.pinned(), s)? };
    /// let host = InFlight::after(s, host).map_err(|(e, _)| e)?.await?;
    /// # Ok(()) }
    /// ```
    pub fn after(stream: StreamRef<'_>, payload: P) -> core::result::Result<Self, (Error, P)> {
        const CALL: &str = "InFlight::after";
        match super::completion::refuse_capture(stream, CALL).and_then(|()| arm(stream, Notifier::StreamCallback, CALL))
        {
            Ok(completion) => Ok(InFlight::new(completion, payload)),
            Err(e) => Err((e, payload)),
        }
    }
}

impl<'d, P: Send + 'static> InFlight<'d, P> {
    /// An InFlight of `payload`, woken by `completion`.
    pub(super) fn new(completion: Completion, payload: P) -> Self {
        InFlight { completion, payload: Some(payload), _device: PhantomData }
    }

    /// Whether the work has completed (the future would resolve at once); does not wait.
    pub fn is_complete(&self) -> bool {
        self.completion.is_settled()
    }
}

impl<P: Send + 'static> Future for InFlight<'_, P> {
    type Output = Result<P>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<P>> {
        let this = self.get_mut();
        match this.completion.poll_code(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => match this.payload.take() {
                Some(payload) => Poll::Ready(Ok(payload)),
                None => {
                    Poll::Ready(Err(Error::invalid("InFlight::poll", "polled again after it gave its payload back")))
                }
            },
            Poll::Ready(Err(e)) => {
                if let Some(payload) = this.payload.take() {
                    release(payload);
                }
                Poll::Ready(Err(e))
            }
        }
    }
}

/// Releases `payload` (whose work is over) on the releaser thread.
pub(super) fn release<P: Send + 'static>(payload: P) {
    if poller::ensure_started() {
        poller::release_later(alloc::boxed::Box::new(payload));
    } else {
        core::mem::forget(payload);
    }
}

impl<P: Send + 'static> Drop for InFlight<'_, P> {
    fn drop(&mut self) {
        let Some(payload) = self.payload.take() else { return };
        if !poller::ensure_started() {
            // Nothing could release it later: leaked, never released early.
            core::mem::forget(payload);
            self.completion.abandon::<()>(None);
            return;
        }
        self.completion.abandon(Some(payload));
    }
}
