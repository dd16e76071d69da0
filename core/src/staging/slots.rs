//! The ring's bookkeeping, apart from its CUDA resources (and testable without them): where each
//! slot is in its life ([`SlotState`], an atomic each), the tickets held ([`Tickets`]), whether
//! the ring is closed, and the wait for a free slot.
//!
//! Memory ordering: a slot is marked free by a `Release` store made after CUDA has completed its
//! copy (in the host function, or after a synchronise on an error path), and taken by an
//! `Acquire` compare-exchange, so a slot is never written while its copy still reads it.

use super::tickets::{Ticket, Tickets};
use crate::error::{CudaError, Error, Result};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use ordo_cuda_sys as sys;

/// Where a staging slot is in its life. Stored in an [`AtomicSlotState`]; transitions are CASes
/// (taking a free slot) or `Release` stores (by the slot's one holder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum SlotState {
    /// Free to take.
    Free,
    /// Taken by a [`Slot`](super::Slot), whose holder fills it.
    Filling,
    /// Its copy is enqueued; the host function after it frees it.
    InFlight,
    /// Reserved by a graph that captured its copy, until the graph and its executable graphs
    /// are destroyed.
    Graph,
    /// Held by a [`Ticket`] not yet redeemed or released.
    Ticket,
}

impl SlotState {
    const ALL: [SlotState; 5] =
        [SlotState::Free, SlotState::Filling, SlotState::InFlight, SlotState::Graph, SlotState::Ticket];
}

/// A [`SlotState`] in an `AtomicU8`.
pub(super) struct AtomicSlotState(AtomicU8);

impl AtomicSlotState {
    fn new(state: SlotState) -> AtomicSlotState {
        AtomicSlotState(AtomicU8::new(state as u8))
    }

    /// `from` → `to`, or `false` if the slot was not in `from`. Acquire: the writer that
    /// released the slot (a finished copy) happens-before the new holder's writes.
    fn advance(&self, from: SlotState, to: SlotState) -> bool {
        self.0.compare_exchange(from as u8, to as u8, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    /// Moves the slot to `to`, by its holder. Release: the holder's writes (or the copy that
    /// finished before the host function runs this) happen-before the next holder's.
    pub(super) fn release(&self, to: SlotState) {
        self.0.store(to as u8, Ordering::Release);
    }

    pub(super) fn load(&self) -> SlotState {
        let raw = self.0.load(Ordering::Acquire);
        // Only `SlotState` values are ever stored, so one of them matches.
        SlotState::ALL.into_iter().find(|&s| s as u8 == raw).unwrap_or(SlotState::Filling)
    }
}

/// How many failed attempts [`Slots::wait_free`] makes between checks of the context and of the
/// slots' states.
const CHECK_EVERY: u32 = 256;

/// The slots' states and the tickets.
pub(super) struct Slots {
    state: Box<[AtomicSlotState]>,
    tickets: Tickets,
    /// Set by [`close`](Self::close) (under the tickets' lock).
    closed: AtomicBool,
}

/// Why no slot came.
pub(super) enum NoSlot {
    /// None is free now.
    Busy,
    /// The ring is closed.
    Closed,
}

impl Slots {
    /// `count` free slots; `None` when the states' allocation fails.
    pub(super) fn new(count: usize) -> Option<Slots> {
        let mut state = Vec::new();
        state.try_reserve_exact(count).ok()?;
        state.extend((0..count).map(|_| AtomicSlotState::new(SlotState::Free)));
        Some(Slots { state: state.into_boxed_slice(), tickets: Tickets::new(), closed: AtomicBool::new(false) })
    }

    /// Number of slots.
    pub(super) fn len(&self) -> usize {
        self.state.len()
    }

    /// Moves slot `index` to `state` (by its holder, see [`AtomicSlotState::release`]).
    pub(super) fn set(&self, index: usize, state: SlotState) {
        if let Some(s) = self.state.get(index) {
            s.release(state);
        }
    }

    #[cfg(test)]
    pub(super) fn state(&self, index: usize) -> Option<SlotState> {
        self.state.get(index).map(AtomicSlotState::load)
    }

    /// Slots in `state` now.
    pub(super) fn count(&self, state: SlotState) -> usize {
        self.state.iter().filter(|s| s.load() == state).count()
    }

    pub(super) fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes a free slot into state `to` (never blocks).
    pub(super) fn take_free(&self, to: SlotState) -> core::result::Result<usize, NoSlot> {
        if self.closed() {
            return Err(NoSlot::Closed);
        }
        for (index, state) in self.state.iter().enumerate() {
            if state.advance(SlotState::Free, to) {
                // A slot that `close` released from a ticket: close marks the ring closed before
                // it frees the slot (Release), so the Acquire above sees the mark. The slot goes
                // back, and the closed ring hands nothing out.
                if self.closed() {
                    state.release(SlotState::Free);
                    return Err(NoSlot::Closed);
                }
                return Ok(index);
            }
        }
        Err(NoSlot::Busy)
    }

    /// Takes a free slot into state `to`, waiting (yielding the thread) while one may come free.
    /// `lost` is asked first and then every [`CHECK_EVERY`] attempts: an error there (the context
    /// is lost or gone) ends the wait. So do [`close`](Self::close) (checked at every attempt)
    /// and a ring whose every slot is held by a ticket or a graph (see
    /// [`stuck`](Self::stuck)).
    pub(super) fn wait_free(
        &self,
        to: SlotState,
        call: &'static str,
        lost: impl Fn() -> Option<Error>,
    ) -> Result<usize> {
        let mut attempts = 0u32;
        loop {
            match self.take_free(to) {
                Ok(index) => return Ok(index),
                Err(NoSlot::Closed) => return Err(closed(call)),
                Err(NoSlot::Busy) => {}
            }
            if attempts % CHECK_EVERY == 0 {
                if let Some(e) = lost() {
                    return Err(e);
                }
                self.stuck(call)?;
            }
            attempts = attempts.wrapping_add(1);
            std::thread::yield_now();
        }
    }

    /// An error when no slot can come free without the caller's own doing: every slot is held
    /// by a graph or by a ticket (which comes free only when its holder submits or releases it).
    /// With a ticket among them: `cudaErrorNotReady`, as for a ring with no free slot; with
    /// graphs only: a usage error.
    fn stuck(&self, call: &'static str) -> Result<()> {
        let mut tickets = false;
        for s in self.state.iter() {
            match s.load() {
                SlotState::Graph => {}
                SlotState::Ticket => tickets = true,
                _ => return Ok(()),
            }
        }
        if tickets {
            Err(Error::Cuda(
                CudaError::new(sys::cudaError::cudaErrorNotReady, call).with_hint(
                    "no slot can come free by waiting: every slot is held by a ticket not yet submitted or released, or by a graph",
                ),
            ))
        } else {
            Err(Error::invalid(
                call,
                "no slot can come free: every slot is held by a graph (drop the graphs that captured them)",
            ))
        }
    }

    /// Records a ticket for slot `index` (in state [`SlotState::Ticket`]); frees the slot and
    /// refuses when the ring was closed meanwhile.
    pub(super) fn issue(&self, index: usize, call: &'static str) -> Result<Ticket> {
        let mut held = self.tickets.lock();
        if self.closed() {
            self.set(index, SlotState::Free);
            return Err(closed(call));
        }
        Ok(held.issue(index))
    }

    /// The slot of a held ticket, taken out of the table (the ticket is used up); the slot moves
    /// to state `to`.
    pub(super) fn take_ticket(&self, ticket: Ticket, to: SlotState) -> Option<usize> {
        let index = self.tickets.lock().take(ticket)?;
        self.set(index, to);
        Some(index)
    }

    pub(super) fn holds(&self, ticket: &Ticket) -> bool {
        self.tickets.lock().holds(ticket)
    }

    /// Closes: later acquires are refused, waiting ones return, every ticket is released.
    pub(super) fn close(&self) {
        let mut held = self.tickets.lock();
        self.closed.store(true, Ordering::Release);
        for index in held.release_all() {
            self.set(index, SlotState::Free);
        }
    }
}

pub(super) fn closed(call: &'static str) -> Error {
    Error::invalid(call, "the ring is closed (StagingRing::close)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::staging::probe::context_destroyed;
    use alloc::string::ToString;
    use alloc::sync::Arc;
    use std::sync::mpsc::channel;
    use std::time::Duration;

    fn never_lost() -> Option<Error> {
        None
    }

    fn take_ticket(slots: &Slots) -> (Ticket, usize) {
        let index = slots.take_free(SlotState::Ticket).ok().unwrap();
        (slots.issue(index, "test").unwrap(), index)
    }

    #[test]
    fn each_state_reads_back_as_stored() {
        for state in SlotState::ALL {
            let a = AtomicSlotState::new(SlotState::Free);
            a.release(state);
            assert_eq!(a.load(), state);
            assert_eq!(a.advance(SlotState::Free, SlotState::Filling), state == SlotState::Free);
        }
    }

    #[test]
    fn a_stale_ticket_never_reaches_a_slot_handed_out_again() {
        // Stale numbers made into tickets again, as a C caller might pass them.
        // SAFETY: no test code writes the slots through a pointer.
        let again = |n: u64| unsafe { Ticket::from_raw(n) };
        let slots = Slots::new(1).unwrap();
        let (first, index) = take_ticket(&slots);
        let first_n = first.number();
        assert_eq!(slots.take_ticket(first, SlotState::Free), Some(index), "released");
        // The same slot, handed out again under a new ticket.
        let (second, index_again) = take_ticket(&slots);
        let second_n = second.number();
        assert_eq!(index_again, index);
        assert_ne!(first_n, second_n, "tickets are never reused");
        assert!(!slots.holds(&again(first_n)));
        assert_eq!(slots.take_ticket(again(first_n), SlotState::Filling), None, "the stale ticket is refused");
        assert_eq!(slots.state(index), Some(SlotState::Ticket));
        assert!(slots.holds(&second), "and the new holder keeps its slot");
        assert_eq!(slots.take_ticket(second, SlotState::Filling), Some(index));
        assert_eq!(slots.take_ticket(again(second_n), SlotState::Filling), None, "used up");
        assert_eq!(slots.take_ticket(again(0), SlotState::Free), None);
        assert_eq!(slots.take_ticket(again(u64::MAX), SlotState::Free), None, "never issued");
    }

    #[test]
    fn a_ticket_of_another_ring_is_refused() {
        let a = Slots::new(1).unwrap();
        let b = Slots::new(1).unwrap();
        let (ta, _) = take_ticket(&a);
        let (tb, ib) = take_ticket(&b);
        assert_ne!(ta.number(), tb.number(), "one counter for every ring");
        assert!(!b.holds(&ta));
        assert_eq!(b.take_ticket(ta, SlotState::Free), None, "ring a's ticket takes nothing from ring b");
        assert!(b.holds(&tb), "ring b's holder keeps its slot");
        assert_eq!(b.take_ticket(tb, SlotState::Free), Some(ib));
    }

    #[test]
    fn a_wait_with_every_slot_held_by_tickets_returns_not_ready() {
        let slots = Slots::new(2).unwrap();
        let _a = take_ticket(&slots);
        let _b = take_ticket(&slots);
        let e = slots.wait_free(SlotState::Filling, "test", never_lost).unwrap_err();
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorNotReady));
        // Graphs alone: the usage error the Rust API always gave.
        let slots = Slots::new(2).unwrap();
        slots.set(0, SlotState::Graph);
        slots.set(1, SlotState::Graph);
        let e = slots.wait_free(SlotState::Filling, "test", never_lost).unwrap_err();
        assert!(e.to_string().contains("held by a graph"), "{e}");
    }

    #[test]
    fn a_waiter_stops_when_the_last_slot_in_flight_goes_to_a_ticket() {
        // One slot in flight (it will come free), one held by a ticket: the waiter waits. The
        // in-flight slot is then taken by another thread's ticket before the waiter sees it free:
        // nothing can come free any more, and the waiter must notice in its loop, not only on
        // entry.
        let slots = Arc::new(Slots::new(2).unwrap());
        let _held = take_ticket(&slots);
        slots.set(1, SlotState::InFlight);
        let (tx, rx) = channel();
        let waiter = Arc::clone(&slots);
        let thread = std::thread::spawn(move || {
            tx.send(waiter.wait_free(SlotState::Filling, "test", never_lost).map(|_| ())).unwrap()
        });
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err(), "waits while a copy is in flight");
        // The copy completes and the slot goes straight to a ticket (the host function frees it,
        // another thread's acquire_ticket takes it: one step here).
        slots.set(1, SlotState::Ticket);
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("the waiter spun on slots held by tickets");
        assert_eq!(answer.unwrap_err().cuda_code(), Some(sys::cudaError::cudaErrorNotReady));
        thread.join().unwrap();
    }

    #[test]
    fn close_releases_tickets_and_returns_waiters() {
        let slots = Arc::new(Slots::new(2).unwrap());
        let (ticket, index) = take_ticket(&slots);
        slots.set(1, SlotState::InFlight); // a copy that never completes here: the waiter would wait for ever
        let (tx, rx) = channel();
        let waiter = Arc::clone(&slots);
        let thread = std::thread::spawn(move || {
            tx.send(waiter.wait_free(SlotState::Ticket, "test", never_lost).map(|_| ())).unwrap()
        });
        assert!(rx.recv_timeout(Duration::from_millis(50)).is_err());
        slots.close();
        let answer = rx.recv_timeout(Duration::from_secs(20)).expect("close did not end the wait");
        assert!(answer.unwrap_err().to_string().contains("closed"));
        thread.join().unwrap();
        assert!(!slots.holds(&ticket), "tickets are released");
        assert_eq!(slots.state(index), Some(SlotState::Free));
        assert!(matches!(slots.take_free(SlotState::Ticket), Err(NoSlot::Closed)));
        assert!(slots.wait_free(SlotState::Filling, "test", never_lost).is_err());
        // A slot taken just before the close gets no ticket, and is free again.
        let slots = Slots::new(1).unwrap();
        let index = slots.take_free(SlotState::Ticket).ok().unwrap();
        slots.close();
        assert!(slots.issue(index, "test").is_err());
        assert_eq!(slots.state(index), Some(SlotState::Free));
        slots.close(); // twice: harmless
    }

    #[test]
    fn a_lost_context_ends_the_wait() {
        let slots = Slots::new(1).unwrap();
        slots.set(0, SlotState::InFlight);
        let gone = || Some(context_destroyed());
        let e = slots.wait_free(SlotState::Filling, "test", gone).unwrap_err();
        assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorContextIsDestroyed));
    }
}
