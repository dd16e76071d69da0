//! The clock both processes read: `CLOCK_MONOTONIC`, one clock for the whole machine, so that a
//! time taken by the producer and carried in a message can be compared with the consumer's.

/// Nanoseconds of `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is writable; CLOCK_MONOTONIC exists on every Linux (the call cannot fail then).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    (t.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(t.tv_nsec as u64)
}
