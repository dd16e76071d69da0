//! The staging pattern: a ring of pinned host slots. A loader thread takes a free slot, fills it,
//! and enqueues its copy to the device; a host function enqueued after the copy marks the slot free
//! again once the copy has finished. No blocking synchronise on the way (the loader waits only for
//! a slot to come free, a host-side wait), except on an error path, which says so.
//!
//! Memory ordering: a slot is marked free by a `Release` store made after CUDA has completed the
//! copy (in the host function, or after a synchronise on an error path), and taken by an `Acquire`
//! compare-exchange, so a slot is never written while its copy still reads it.
//!
//! - `slots`: where each slot is in its life (a state machine in an atomic), the tickets held, the
//!   wait for a free slot;
//! - [`Ticket`]: a slot held under a number;
//! - `probe`: whether the ring's context is gone or lost, so that a wait ends;
//! - [`StagingRing`], [`Slot`]: the pinned memory, filling and submitting;
//! - [`free_deferred`]: frees what a CUDA callback thread let go of (shared with host functions
//!   and graphs' host state).
//!
//! # Slots in graphs
//! [`StagingRing::submit`] on a capturing stream captures the copy into the capture's graph. The
//! slot then belongs to that graph: every launch of an executable graph made from it copies the
//! slot's contents (as filled before `submit`, never written again) to the destination, and the
//! slot stays reserved, never handed out by [`acquire`](StagingRing::acquire), until the last graph
//! or executable graph holding it is destroyed (a CUDA user object); then it is free again. The
//! ring's pinned memory lives as long as any graph holds one of its slots.
//!
//! # Freeing the pinned memory
//! The memory is freed (`cudaFreeHost`) when the last holder lets go: the ring's handles, the
//! slots taken from it, the copies in flight and the graphs holding slots. When that last holder
//! lets go on a CUDA callback thread (a host function or a graph's destructor, where CUDA calls
//! are forbidden), the free is deferred to the next [`StagingRing::new`] or drop of a ring handle,
//! or to [`free_deferred`]; the driver frees it at process exit otherwise. A submit whose copy
//! was enqueued but could not be followed (see [`StagingRing::submit`]'s errors) waits until the
//! stream can run nothing more before it frees the slot, so no slot is freed under a copy.
//!
//! # Tickets
//! [`StagingRing::acquire_ticket`] hands out a slot under a [`Ticket`], a plain number (for callers
//! that cannot hold a [`Slot`], such as the C ABI): the slot's memory is the caller's to fill
//! until the ticket is redeemed ([`StagingRing::redeem`], then [`StagingRing::submit`]) or
//! released ([`StagingRing::release_ticket`]). Tickets come from a counter that is never reused:
//! a ticket already submitted or released is refused for good, and never names a slot handed out
//! again since. A slot held by a ticket comes free only when its holder submits or releases it, so
//! a waiting acquire does not wait for it (see [`StagingRing::acquire`]).
//!
//! # Closing
//! [`StagingRing::close`] releases every ticket, refuses every later acquire, and makes acquires
//! waiting on other threads return: a ring whose owner has gone can no longer hold a thread.
//!
//! # After `cudaDeviceReset`
//! The ring remembers the CUDA context its pinned memory and probe event were made in. Once that
//! context is gone, the ring touches neither again: its memory and event are forgotten (CUDA freed
//! them with the context), never passed to `cudaFreeHost` or `cudaEventDestroy` (whose handles the
//! new context may have reused), and acquires return `cudaErrorContextIsDestroyed`.

mod probe;
mod ring;
mod slots;
mod tickets;

pub use crate::callback::free_deferred;
pub use ring::{Slot, StagingRing};
pub use tickets::Ticket;
