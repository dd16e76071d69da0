//! Locks of ordo's crates whose poisoning is recovered (`PoisonError::into_inner`), written once:
//! taking a lock, and waiting on a condition variable with it.
//!
//! Every lock of ordo's guards state that nothing leaves half-changed when it panics: lists that are
//! pushed to or taken whole, flags, handles. So a lock that a panicking thread held is taken as it
//! is, rather than the panic spreading to every later caller.

use core::time::Duration;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, WaitTimeoutResult};

/// Locks `m`, recovering it when a thread panicked while holding it.
#[inline]
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value of `m`, which the caller holds exclusively, recovered when a thread panicked while
/// holding it.
#[inline]
pub fn get_mut<T: ?Sized>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` ([`Condvar::wait`]), the lock recovered when a thread panicked while holding it.
#[inline]
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` for at most `timeout` ([`Condvar::wait_timeout`]), the lock recovered when a
/// thread panicked while holding it.
#[inline]
pub fn wait_timeout<'a, T>(
    cv: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
    cv.wait_timeout(guard, timeout).unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

    #[test]
    fn a_poisoned_lock_is_taken_as_it_is() {
        let mut m = Mutex::new(vec![1]);
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let mut v = m.lock().unwrap();
                v.push(2);
                panic!("deliberate panic while holding the lock");
            })
            .join()
        });
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), [1, 2]);
        get_mut(&mut m).push(3);
        assert_eq!(*lock(&m), [1, 2, 3]);
        let (held, waited) = wait_timeout(&Condvar::new(), lock(&m), Duration::from_millis(1));
        assert!(waited.timed_out());
        assert_eq!(*held, [1, 2, 3]);
    }
}
