//! The one wait loop of ordo's NCCL code: [`Backoff`], the pauses between the polls of a wait
//! (doubling up to a most, until a deadline), and [`poll_with_backoff`], a poll on it that ends in
//! `ncclTimeout`. The communicator's waits, the C ABI's, the exchange of unique ids and its
//! tidying all wait through it.

use ordo_cuda_core::Error;
use std::time::{Duration, Instant};

/// The pauses between the polls of one wait: `first`, doubling up to `most`, until `timeout` has
/// passed since it was made (`Duration::MAX`: never).
#[derive(Debug)]
pub(crate) struct Backoff {
    deadline: Option<Instant>,
    pause: Duration,
    most: Duration,
}

impl Backoff {
    /// A wait of `timeout` from now, pausing `first`, then twice as long each time, at most `most`.
    pub(crate) fn new(timeout: Duration, first: Duration, most: Duration) -> Backoff {
        Backoff { deadline: Instant::now().checked_add(timeout), pause: first, most }
    }

    /// Sleeps before the next poll: `true`; or `false`, at once, once the deadline has passed.
    pub(crate) fn sleep(&mut self) -> bool {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        std::thread::sleep(self.pause);
        self.pause = (self.pause * 2).min(self.most);
        true
    }

    /// [`sleep`](Self::sleep), or the error `timed_out` makes once the deadline has passed.
    pub(crate) fn sleep_or<E>(&mut self, timed_out: impl FnOnce() -> E) -> Result<(), E> {
        if self.sleep() {
            Ok(())
        } else {
            Err(timed_out())
        }
    }
}

/// Polls `step` until it gives an answer (`Ok(Some(_))`) or fails, sleeping between polls (20 us,
/// doubling up to 2 ms): the communicator's waits and the C ABI's. Once `timeout` has passed since
/// the first poll (`Duration::MAX`: never), `ncclTimeout` naming `call` (see
/// [`is_timeout`](super::is_timeout)). A step takes whatever lock it needs for its own poll only,
/// so that other threads' calls (an abort) get in between two polls.
pub fn poll_with_backoff<T, E: From<Error>>(
    timeout: Duration,
    call: &'static str,
    mut step: impl FnMut() -> core::result::Result<Option<T>, E>,
) -> core::result::Result<T, E> {
    let mut backoff = Backoff::new(timeout, Duration::from_micros(20), Duration::from_millis(2));
    loop {
        if let Some(answer) = step()? {
            return Ok(answer);
        }
        backoff.sleep_or(|| super::error::timeout(call))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_most_until_the_deadline() {
        let mut b = Backoff::new(Duration::from_millis(30), Duration::from_millis(1), Duration::from_millis(4));
        let started = Instant::now();
        let mut sleeps = 0;
        while b.sleep() {
            sleeps += 1;
            assert!(b.pause <= Duration::from_millis(4));
        }
        assert!(started.elapsed() >= Duration::from_millis(30));
        assert!(sleeps >= 3, "{sleeps}");
        assert_eq!(b.sleep_or(|| "late"), Err("late"));
        let mut polls = 0;
        let r: Result<(), Error> = poll_with_backoff(Duration::ZERO, "x", || {
            polls += 1;
            Ok(None)
        });
        assert!(super::super::is_timeout(&r.unwrap_err()));
        assert_eq!(polls, 1, "a zero timeout polls once");
        let answer: Result<u32, Error> = poll_with_backoff(Duration::MAX, "x", || Ok(Some(3)));
        assert_eq!(answer, Ok(3));
    }
}
