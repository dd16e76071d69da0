//! The host time of each call of a frame's hand-off in IPC mode (the enqueue, not the GPU's work),
//! summed by kind in each process and printed to standard error after each size: where a frame's
//! time goes on the host.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// One kind of call: its total host time and count.
pub struct Tally {
    name: &'static str,
    ns: AtomicU64,
    calls: AtomicU64,
}

impl Tally {
    const fn new(name: &'static str) -> Tally {
        Tally { name, ns: AtomicU64::new(0), calls: AtomicU64::new(0) }
    }

    /// Runs `f`, adding its host time to the tally.
    pub fn time<T>(&self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.ns.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        out
    }
}

pub static WAIT_IMPORTED: Tally = Tally::new("cudaStreamWaitEvent on an imported IPC event");
pub static RECORD_IPC: Tally = Tally::new("cudaEventRecord of an IPC event");
pub static FILL: Tally = Tally::new("the fill kernel's launch");
pub static COPY_OUT: Tally = Tally::new("the consumer's copy out of the slot");

/// Prints the tallies that were used (mean us a call) with `who` and resets them.
pub fn print_and_reset(who: &str) {
    for t in [&WAIT_IMPORTED, &RECORD_IPC, &FILL, &COPY_OUT] {
        let (ns, calls) = (t.ns.swap(0, Ordering::Relaxed), t.calls.swap(0, Ordering::Relaxed));
        if calls > 0 {
            eprintln!(
                "ipc-frames: {who}: {}: {:.1} us a call on the host ({calls} calls)",
                t.name,
                ns as f64 / 1e3 / calls as f64
            );
        }
    }
}
