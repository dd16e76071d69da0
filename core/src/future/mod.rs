//! Waiting for the GPU from async Rust (feature `async`): futures for GPU work that no thread
//! blocks on, sound under cancellation, with no executor dependency (`core::task` only).
//!
//! | what | future | woken by |
//! | --- | --- | --- |
//! | everything enqueued on a stream so far | [`StreamRef::completion`](crate::StreamRef::completion) → [`Completion`] | a stream callback on CUDA's thread |
//! | an event's record (another library's, another stream's) | [`Event::completion`](crate::Event::completion) (of an `Arc<Event>`) → [`Completion`] | ordo's one poller thread |
//! | work and the buffers it uses | [`InFlight`], from [`copy`] or [`InFlight::after`] | a stream callback |
//!
//! ```no_run
//! use ordo_cuda_core::{future, DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};
//! # async fn serve() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let s = stream.as_stream();
//! let mut dev = DeviceBuffer::<f32>::alloc_async(1 << 20, s)?;
//! let input = PinnedBuffer::<f32>::zeroed(1 << 20, HostAllocFlags::empty())?;
//! // The copy owns `input` until it completes: dropping this future early (a timeout, a
//! // cancelled request) releases `input` only after the copy, and never blocks.
//! let input = future::copy::h2d(dev.as_mut_slice(), input, s)?.await?;
//! // ... launch kernels on `s` ...
//! s.completion()?.await?; // the task sleeps until the stream's work so far is done
//! # drop(input); Ok(()) }
//! ```
//!
//! # How a future is woken
//! Making a [`Completion`] of a stream enqueues a stream callback (`cudaStreamAddCallback`, the
//! host function that CUDA calls with the stream's status, even after an error) that holds one
//! *wake slot*: a small record of the future's state and waker, shared by the future and the
//! callback. The callback runs on CUDA's thread once the work before it has completed; it makes
//! no CUDA call: it marks the slot fired and wakes the task. Slots are never freed, only
//! recycled through a free list (taken and returned without allocating once the slab has grown
//! to the number of waits in flight at once); whichever of the future and the callback lets go
//! last returns the slot, so neither can outlive it. A [`Notifier`] chooses
//! `cudaLaunchHostFunc` instead; CUDA does not call a host function after a sticky error, so
//! such a future then never completes.
//!
//! The waker is called on CUDA's callback thread, where CUDA calls are forbidden: executors
//! that schedule the task elsewhere (tokio, smol, async-std, the `futures` executors) are fine; a
//! waker that runs the task in place would run it there.
//!
//! # Cancellation
//! - A [`Completion`] dropped at any point (before it was polled, while pending, after its work
//!   completed) lets go of its slot without blocking or calling CUDA.
//! - An [`InFlight`] dropped before its work completed hands its payload to the slot; the
//!   callback hands it to ordo's releaser thread, which drops it (a payload's drop may call CUDA:
//!   `cudaFreeHost`). Never earlier than the work's completion, never on the dropping thread.
//!   Its device memory is borrowed: the borrow ends with the drop, and a buffer dropped then is
//!   freed by its stream after the work (stream order).
//! - A task that panics, or a runtime shut down with tasks in flight, drops its futures: as
//!   above.
//! - Forgetting one (`mem::forget`) is sound too, and only leaks: its slot and payload are never
//!   released; the device memory it borrowed is freed, if its owner drops it, by a free its
//!   stream orders after the work; an event's completion keeps its event (`Arc`) alive.
//!
//! # Captures
//! A stream that is capturing is refused, with a usage error, before anything is enqueued:
//! captured work runs at each launch of the graph, not now, so there is nothing to wait for.
//! Await a completion of the stream the graph is launched on.
//!
//! # What it costs
//! Waiting allocates nothing once the slots have grown to the most waits the process has had in
//! flight at once (counted by a GPU test); the wait that finds no free slot pays for the growth,
//! one chunk of slots, whichever thread it is on. Making a stream's completion is two CUDA
//! calls (the capture query and the callback's enqueue), an event's completion one query (and a
//! registration with the poller). The figures, against `cudaStreamSynchronize` and a
//! `cudaEventQuery` loop, are measured by `core/tests/async_figures.rs` and the example
//! `examples/async-serve` (`docs/async.md`).

mod completion;
pub mod copy;
mod in_flight;
mod poller;
mod slot;

pub use completion::{Completion, Notifier};
pub use in_flight::InFlight;
pub use poller::{MAX_POLL_SLEEP, SPIN_WINDOW};
pub use slot::MAX_WAITS_IN_FLIGHT;

#[cfg(test)]
mod tests;
