//! Tickets: a slot held under a number rather than a [`Slot`](super::Slot) value, for callers
//! that cannot hold one (the C ABI). Numbers come from one process-wide counter and are never
//! reused, so a ticket already used up, or of another ring, never names a slot handed out since.
//! The registry of a ring's held tickets sits behind a lock: tickets are not a hot path.

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A slot held under a number rather than a [`Slot`](super::Slot) value: see
/// [`StagingRing::acquire_ticket`](super::StagingRing::acquire_ticket). Tickets are never reused,
/// by any ring of the process (one 64-bit counter), so a ticket of another ring, or one used up,
/// is refused. Not `Clone`: redeeming or releasing it consumes the only copy, so safe code cannot
/// take a slot away from the ticket's holder.
#[derive(Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(u64);

/// The next ticket number, for every ring of the process (0 is never issued).
static NEXT_TICKET: AtomicU64 = AtomicU64::new(1);

impl Ticket {
    /// The ticket with this number (as [`into_raw`](Self::into_raw) gave it). A number the ring
    /// did not issue, or whose ticket was used up, is refused by the ring.
    ///
    /// # Safety
    /// - If `raw` names a ticket the ring holds now, the caller is that ticket's holder (the code
    ///   that got it from [`StagingRing::acquire_ticket`](super::StagingRing::acquire_ticket), or
    ///   was handed it): redeeming or releasing it ends the holder's right to write the slot
    ///   through the pointer `acquire_ticket` returned, so a ticket made from a number may be
    ///   used only by the code that no longer writes the slot.
    pub const unsafe fn from_raw(raw: u64) -> Ticket {
        Ticket(raw)
    }

    /// The ticket's number (never 0), for a caller that must pass it as a number (the C ABI).
    pub const fn into_raw(self) -> u64 {
        self.0
    }

    /// The ticket's number, keeping the ticket.
    pub const fn number(&self) -> u64 {
        self.0
    }
}

/// A ring's held tickets: ticket number -> slot index.
pub(super) struct Tickets(Mutex<BTreeMap<u64, usize>>);

/// The registry, locked.
pub(super) struct Held<'a>(MutexGuard<'a, BTreeMap<u64, usize>>);

impl Tickets {
    pub(super) fn new() -> Tickets {
        Tickets(Mutex::new(BTreeMap::new()))
    }

    /// The registry, locked (a panic while it was held leaves it usable: each change is one map
    /// operation).
    pub(super) fn lock(&self) -> Held<'_> {
        Held(crate::sync::lock(&self.0))
    }
}

impl Held<'_> {
    /// A new ticket for slot `index`.
    pub(super) fn issue(&mut self, index: usize) -> Ticket {
        let ticket = NEXT_TICKET.fetch_add(1, Ordering::Relaxed);
        self.0.insert(ticket, index);
        Ticket(ticket)
    }

    /// The slot of `ticket`, which is used up; `None` for a ticket not held here.
    pub(super) fn take(&mut self, ticket: Ticket) -> Option<usize> {
        self.0.remove(&ticket.0)
    }

    pub(super) fn holds(&self, ticket: &Ticket) -> bool {
        self.0.contains_key(&ticket.0)
    }

    /// Every held ticket used up; their slots.
    pub(super) fn release_all(&mut self) -> impl Iterator<Item = usize> {
        core::mem::take(&mut *self.0).into_values()
    }
}
