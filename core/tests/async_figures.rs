//! The figures of `ordo_cuda_core::future` (feature `async`), printed: the wake latency of each
//! way to wait for the GPU, and the CPU time of the waiting side. One test in its own binary, so
//! that no other test runs beside it. Run it with
//! `cargo test -p ordo-cuda-core --features async --release --test async_figures -- --nocapture`.
//!
//! **Wake latency** is the time from the GPU's completion to the waiting code running again.
//! The GPU's completion is seen on the host by a watcher thread that spins on a byte of pinned
//! memory, which the last copy of each round writes (a copy of one byte, enqueued after 128 MiB
//! of memset, so that the waiting side is already waiting). The watcher's own CPU time is not
//! counted; the rest of the process's is (the waiting thread, CUDA's callback thread, ordo's
//! poller thread).
#![cfg(feature = "async")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::future::Notifier;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/block_on.rs"]
mod block_on;
use block_on::{block_on_with, thread_waker};

const ROUNDS: usize = 2000;
const WARM_UP: usize = 100;

/// How the waiting side waits for a stream's work.
#[derive(Debug, Clone, Copy)]
enum Way {
    Synchronize,
    BlockingSyncEvent,
    EventQueryLoop,
    Completion(Notifier),
    EventCompletion,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::Synchronize => "cudaStreamSynchronize (blocks the thread)",
            Way::BlockingSyncEvent => "cudaEventSynchronize, blocking-sync event (sleeps)",
            Way::EventQueryLoop => "cudaEventQuery loop (spins the thread)",
            Way::Completion(Notifier::StreamCallback) => "StreamRef::completion (stream callback)",
            Way::Completion(Notifier::HostFunc) => "completion_via(HostFunc) (cudaLaunchHostFunc)",
            Way::EventCompletion => "Event::completion (poller thread)",
        }
    }
}

/// Nanoseconds on CPU of every thread of the process but `except` (`/proc/self/task/*/schedstat`);
/// `None` where the kernel does not keep it.
fn cpu_ns_except(except: u64) -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let task = task.ok()?;
        if task.file_name().to_str()?.parse::<u64>().ok()? == except {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else { continue };
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

fn this_tid() -> u64 {
    std::fs::read_link("/proc/thread-self").ok().and_then(|p| p.file_name()?.to_str()?.parse().ok()).unwrap_or(0)
}

struct Figures {
    latency_us: Vec<f64>,
    round_trip_us: Vec<f64>,
    cpu_us_per_wait: Option<f64>,
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn wake_latency_and_cpu_time_of_each_way_to_wait() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let event = Arc::new(Event::new().unwrap());
    let sleeper = Event::with_flags(EventFlags::BLOCKING_SYNC | EventFlags::DISABLE_TIMING).unwrap();
    let waker = thread_waker();
    let mut scratch = DeviceBuffer::<u8>::alloc_async(128 << 20, s).unwrap();
    let values = PinnedBuffer::<u8>::from_fn(256, HostAllocFlags::empty(), |i| i as u8).unwrap();
    let mut dev_values = DeviceBuffer::<u8>::alloc_async(256, s).unwrap();
    copy::h2d_blocking(dev_values.as_mut_slice(), &values, s).unwrap();
    let mut flag = PinnedBuffer::<u8>::zeroed(1, HostAllocFlags::empty()).unwrap();

    // The watcher: spins on the flag until it holds the value armed, and stamps the time.
    let base = Instant::now();
    let armed = Arc::new(AtomicU8::new(0));
    let seen_at = Arc::new(AtomicU64::new(0));
    let watcher_tid = Arc::new(AtomicU64::new(0));
    let flag_addr = flag.as_ptr() as usize;
    let watcher = {
        let (armed, seen_at, watcher_tid) = (armed.clone(), seen_at.clone(), watcher_tid.clone());
        std::thread::spawn(move || {
            watcher_tid.store(this_tid(), Ordering::SeqCst);
            loop {
                let want = armed.load(Ordering::Acquire);
                if want == 0 {
                    std::hint::spin_loop();
                    continue;
                }
                if want == u8::MAX {
                    return;
                }
                // SAFETY: one byte of pinned memory that lives until this thread is joined; the
                // GPU writes it (a volatile read sees each write).
                while unsafe { std::ptr::read_volatile(flag_addr as *const u8) } != want {
                    std::hint::spin_loop();
                }
                seen_at.store(base.elapsed().as_nanos() as u64, Ordering::Release);
                armed.store(0, Ordering::Release);
            }
        })
    };
    while watcher_tid.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    let watcher_tid = watcher_tid.load(Ordering::SeqCst);

    let ways = [
        Way::Synchronize,
        Way::BlockingSyncEvent,
        Way::EventQueryLoop,
        Way::Completion(Notifier::StreamCallback),
        Way::Completion(Notifier::HostFunc),
        Way::EventCompletion,
    ];
    let mut results = Vec::new();
    for way in ways {
        let mut figures = Figures { latency_us: Vec::new(), round_trip_us: Vec::new(), cpu_us_per_wait: None };
        let mut cpu_before = None;
        for round in 0..WARM_UP + ROUNDS {
            if round == WARM_UP {
                cpu_before = cpu_ns_except(watcher_tid);
            }
            // Values 1..=254: each round's differs from the last, and none is 0 (idle) or 255 (stop).
            let value = (round % 254 + 1) as u8;
            armed.store(value, Ordering::Release);
            let start = base.elapsed();
            // SAFETY: `scratch`, `dev_values` and `flag` live until the end of the test, after
            // the last round's wait.
            unsafe {
                copy::memset_async(scratch.as_mut_slice(), value, s).unwrap();
                copy::d2h_async(flag.pinned_mut(), dev_values.slice(value as usize..value as usize + 1).unwrap(), s)
                    .unwrap();
            }
            match way {
                Way::Synchronize => s.synchronize().unwrap(),
                Way::BlockingSyncEvent => {
                    sleeper.record(s).unwrap();
                    sleeper.synchronize().unwrap();
                }
                Way::EventQueryLoop => {
                    event.record(s).unwrap();
                    while event.query().unwrap() == EventStatus::Pending {}
                }
                Way::Completion(notifier) => block_on_with(&waker, s.completion_via(notifier).unwrap()).unwrap(),
                Way::EventCompletion => {
                    event.record(s).unwrap();
                    block_on_with(&waker, event.completion().unwrap()).unwrap();
                }
            }
            let resumed = base.elapsed();
            while armed.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
            if round >= WARM_UP {
                let seen = Duration::from_nanos(seen_at.load(Ordering::Acquire));
                figures.latency_us.push((resumed.as_secs_f64() - seen.as_secs_f64()) * 1e6);
                figures.round_trip_us.push((resumed - start).as_secs_f64() * 1e6);
            }
        }
        figures.cpu_us_per_wait = cpu_before
            .zip(cpu_ns_except(watcher_tid))
            .map(|(before, after)| (after - before) as f64 / 1e3 / ROUNDS as f64);
        results.push((way, figures));
    }
    armed.store(u8::MAX, Ordering::Release);
    watcher.join().unwrap();

    println!("\nordo_cuda_core::future, {ROUNDS} rounds each (one stream; 128 MiB memset then a 1-byte copy a round)");
    println!(
        "{:<48} {:>12} {:>10} {:>10} {:>16} {:>14}",
        "way to wait", "latency p50", "p90", "p99", "round trip p50", "CPU us/wait"
    );
    let mut sync_p50 = f64::NAN;
    for (way, mut f) in results {
        let (p50, p90, p99) = (
            percentile(&mut f.latency_us, 0.5),
            percentile(&mut f.latency_us, 0.9),
            percentile(&mut f.latency_us, 0.99),
        );
        let rt = percentile(&mut f.round_trip_us, 0.5);
        if matches!(way, Way::Synchronize) {
            sync_p50 = p50;
        }
        let cpu = f.cpu_us_per_wait.map_or("n/a".to_string(), |c| format!("{c:.1}"));
        println!("{:<48} {:>10.1}us {:>8.1}us {:>8.1}us {:>14.1}us {:>14}", way.name(), p50, p90, p99, rt, cpu);
        if matches!(way, Way::Completion(Notifier::StreamCallback)) {
            let ratio = p50 / sync_p50;
            println!(
                "  target: median wake latency at most 1.5x a blocking synchronize's: {ratio:.2}x ({})",
                if ratio <= 1.5 { "met" } else { "MISSED" }
            );
        }
    }
    drop((scratch, dev_values));
}
