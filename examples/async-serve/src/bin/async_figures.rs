//! The figures of ordo's futures under tokio, printed:
//! 1. wake latency (the GPU's completion, seen by a watcher thread spinning on pinned memory, to
//!    the waiting code running again) of `completion().await` in tokio's current-thread and
//!    multi-threaded runtimes, against `cudaStreamSynchronize` and a `cudaEventQuery` loop;
//! 2. throughput with 1,000 futures in flight on one executor thread, against 64 threads that
//!    each block in `cudaStreamSynchronize`;
//! 3. the CPU time of the waiting side (the process but the watcher thread) for each;
//! 4. the floor of every future that leaves its executor free: another thread's `wake()` of a task
//!    parked in the runtime, to the task running again, with no GPU in the way.
//!
//! `cargo run --release -p ordo-example-async --bin async-figures`. Without a GPU it fails at
//! once, with CUDA's error.
use ordo_cuda::{future::Notifier, Event, EventStatus, Stream};
use ordo_example_async::{cpu_ns_except, percentiles, Watcher};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

const ROUNDS: usize = 2000;
/// Rounds of the long waits, and their memsets of 128 MiB a round (about 2 ms of GPU work).
const LONG_ROUNDS: usize = 300;
const LONG_MEMSETS: usize = 64;
const WARM_UP: usize = 100;
const IN_FLIGHT: usize = 1000;
const STREAMS: usize = 64;
const ROUNDS_EACH: usize = 50;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("async-figures: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A stream and a small buffer on it.
type Lane = (Arc<Stream>, std::sync::Mutex<ordo_cuda::SharedStreamBuffer<u8>>);

/// Enqueues a 4 KiB memset on lane `i % STREAMS`; its stream.
fn memset(lanes: &[Lane], i: usize) -> ordo_cuda::Result<&Stream> {
    let (stream, buffer) = &lanes[i % STREAMS];
    let mut buffer = buffer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // SAFETY: the buffer is freed on its stream, after the memset.
    unsafe { ordo_cuda::memory::copy::memset_async(buffer.as_mut_slice(), i as u8, stream.as_stream())? };
    Ok(stream)
}

type Fallible<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Wake latencies (us) and CPU time a wait (us) of `wait`, run `ROUNDS` times after a warm-up.
async fn measure<W, F>(watcher: &mut Watcher, wait: W) -> Fallible<(Vec<f64>, Option<f64>)>
where
    W: FnMut() -> F,
    F: std::future::Future<Output = ordo_cuda::Result<()>>,
{
    measure_n(watcher, ROUNDS, wait).await
}

/// [`measure`] for `rounds` rounds.
async fn measure_n<W, F>(watcher: &mut Watcher, rounds: usize, mut wait: W) -> Fallible<(Vec<f64>, Option<f64>)>
where
    W: FnMut() -> F,
    F: std::future::Future<Output = ordo_cuda::Result<()>>,
{
    let mut latencies = Vec::with_capacity(rounds);
    let mut cpu_before = None;
    for round in 0..WARM_UP + rounds {
        if round == WARM_UP {
            cpu_before = cpu_ns_except(watcher.tid);
        }
        watcher.enqueue_round()?;
        wait().await?;
        let latency = watcher.latency_us(watcher.now());
        if round >= WARM_UP {
            latencies.push(latency);
        }
    }
    let cpu = cpu_before.zip(cpu_ns_except(watcher.tid)).map(|(b, a)| (a - b) as f64 / 1e3 / rounds as f64);
    Ok((latencies, cpu))
}

fn row(name: &str, mut latencies: Vec<f64>, cpu: Option<f64>) -> f64 {
    let (p50, p90, p99) = percentiles(&mut latencies);
    let cpu = cpu.map_or("n/a".to_string(), |c| format!("{c:.1}"));
    println!("{name:<58} {p50:>9.1}us {p90:>8.1}us {p99:>8.1}us {cpu:>12}");
    p50
}

/// A task parked in a runtime and woken by another thread, as a GPU notifier wakes it: the wake
/// stamps the time just before `wake()`; the task reads the clock when it runs again.
struct Ping {
    fired: std::sync::atomic::AtomicBool,
    waker: std::sync::Mutex<Option<std::task::Waker>>,
    stamp: std::sync::Mutex<Option<Instant>>,
}

impl Ping {
    fn new() -> Ping {
        Ping { fired: false.into(), waker: std::sync::Mutex::new(None), stamp: std::sync::Mutex::new(None) }
    }

    /// The other thread's side: stamps and wakes.
    fn fire(&self) {
        let waker = self.waker.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        *self.stamp.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        self.fired.store(true, std::sync::atomic::Ordering::Release);
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// The task's side: resolves once fired.
    fn wait(&self) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.fired.load(std::sync::atomic::Ordering::Acquire) {
                return std::task::Poll::Ready(());
            }
            *self.waker.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cx.waker().clone());
            if self.fired.load(std::sync::atomic::Ordering::Acquire) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
    }
}

/// Wake latencies (us) of a task in `runtime` woken by another thread 100 us after it parked.
fn wake_floor(runtime: &tokio::runtime::Runtime) -> Vec<f64> {
    let ping = Arc::new(Ping::new());
    let (go, rounds) = std::sync::mpsc::channel::<()>();
    let waking = {
        let ping = ping.clone();
        std::thread::spawn(move || {
            while rounds.recv().is_ok() {
                std::thread::sleep(std::time::Duration::from_micros(100));
                ping.fire();
            }
        })
    };
    let mut latencies = Vec::with_capacity(ROUNDS);
    for round in 0..WARM_UP + ROUNDS {
        ping.fired.store(false, std::sync::atomic::Ordering::Release);
        if go.send(()).is_err() {
            break;
        }
        let latency = runtime.block_on(async {
            ping.wait().await;
            let stamp = *ping.stamp.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            stamp.map_or(f64::NAN, |t| t.elapsed().as_secs_f64() * 1e6)
        });
        if round >= WARM_UP {
            latencies.push(latency);
        }
    }
    drop(go);
    let _ = waking.join();
    latencies
}

fn run() -> Fallible<()> {
    let stream = Arc::new(Stream::new()?);
    let mut watcher = Watcher::new(&stream)?;
    let event = Arc::new(Event::new()?);
    let s = stream.as_stream();
    println!("1. wake latency, {ROUNDS} rounds each (128 MiB memset, then a 1-byte copy the watcher sees)");
    println!("{:<58} {:>11} {:>10} {:>10} {:>12}", "way to wait", "p50", "p90", "p99", "CPU us/wait");
    let current = tokio::runtime::Builder::new_current_thread().build()?;
    let (l, c) = current.block_on(measure(&mut watcher, || async { s.synchronize() }))?;
    let sync = row("cudaStreamSynchronize (blocks the thread)", l, c);
    let (l, c) = current.block_on(measure(&mut watcher, || async {
        event.record(s)?;
        while event.query()? == EventStatus::Pending {}
        Ok(())
    }))?;
    row("cudaEventQuery loop (spins the thread)", l, c);
    let (l, c) = current.block_on(measure(&mut watcher, || async { s.completion()?.await }))?;
    let ours = row("completion().await, tokio current-thread runtime", l, c);
    let (l, c) = current.block_on(measure(&mut watcher, || async { s.completion_via(Notifier::HostFunc)?.await }))?;
    row("completion_via(HostFunc).await, current-thread", l, c);
    let (l, c) = current.block_on(measure(&mut watcher, || async {
        event.record(s)?;
        event.completion()?.await
    }))?;
    row("Event::completion().await (poller), current-thread", l, c);
    let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build()?;
    let (l, c, w) = multi.block_on(async {
        let stream = stream.clone();
        tokio::spawn(async move {
            let s = stream.as_stream();
            let r = measure(&mut watcher, || async { s.completion()?.await }).await;
            r.map(|(l, c)| (l, c, watcher))
        })
        .await?
    })?;
    watcher = w;
    row("completion().await, a task on a multi-threaded runtime", l, c);
    println!(
        "target: median wake latency at most 1.5x a blocking synchronize's: {:.2}x ({})",
        ours / sync,
        if ours / sync <= 1.5 { "met" } else { "MISSED" }
    );
    // Long waits: the poller has backed off to sleeps by the time the work completes.
    watcher.set_memsets(LONG_MEMSETS);
    println!("\n1b. long waits, {LONG_ROUNDS} rounds each ({LONG_MEMSETS} memsets of 128 MiB, then the 1-byte copy)");
    let (l, c) = current.block_on(measure_n(&mut watcher, LONG_ROUNDS, || async { s.synchronize() }))?;
    row("cudaStreamSynchronize (blocks the thread)", l, c);
    let (l, c) = current.block_on(measure_n(&mut watcher, LONG_ROUNDS, || async { s.completion()?.await }))?;
    row("completion().await (stream callback), current-thread", l, c);
    let (l, c) = current.block_on(measure_n(&mut watcher, LONG_ROUNDS, || async {
        event.record(s)?;
        event.completion()?.await
    }))?;
    row("Event::completion().await (poller), current-thread", l, c);
    watcher.set_memsets(1);
    drop(watcher);
    let floor = wake_floor(&current);
    let floor_p50 = row("floor: another thread's wake() of the parked task (no GPU)", floor, None);
    println!(
        "the floor against a blocking synchronize: {:.2}x (a future that leaves its executor free cannot wake sooner than the floor plus the notifier's own detection)",
        floor_p50 / sync
    );

    println!("\n2. {IN_FLIGHT} waits in flight on one executor thread ({STREAMS} streams, {ROUNDS_EACH} rounds a task: a 4 KiB memset, then completion().await)");
    let lanes: Arc<Vec<Lane>> = Arc::new(
        (0..STREAMS)
            .map(|_| {
                let stream = Arc::new(Stream::new()?);
                let buffer = ordo_cuda::SharedStreamBuffer::<u8>::alloc_async(4096, &stream)?;
                Ok((stream, std::sync::Mutex::new(buffer)))
            })
            .collect::<ordo_cuda::Result<_>>()?,
    );
    let cpu_before = cpu_ns_except(0);
    let t = Instant::now();
    current.block_on(async {
        // Spawned on the current-thread runtime: every task runs on this one thread.
        let tasks: Vec<_> = (0..IN_FLIGHT)
            .map(|i| {
                let lanes = lanes.clone();
                tokio::spawn(async move {
                    for _ in 0..ROUNDS_EACH {
                        memset(&lanes, i)?.as_stream().completion()?.await?;
                    }
                    Ok::<_, ordo_cuda::Error>(())
                })
            })
            .collect();
        for task in tasks {
            task.await??;
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    let elapsed = t.elapsed();
    let cpu = cpu_ns_except(0).zip(cpu_before).map(|(a, b)| (a - b) as f64 / 1e3);
    let waits = (IN_FLIGHT * ROUNDS_EACH) as f64;
    println!(
        "futures, one executor thread: {:.0} waits/s, CPU {} us a wait",
        waits / elapsed.as_secs_f64(),
        cpu.map_or("n/a".into(), |c| format!("{:.1}", c / waits))
    );
    let cpu_before = cpu_ns_except(0);
    let t = Instant::now();
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..STREAMS)
            .map(|lane| {
                let lanes = &lanes;
                scope.spawn(move || -> ordo_cuda::Result<()> {
                    for round in 0..IN_FLIGHT * ROUNDS_EACH / STREAMS {
                        memset(lanes, lane + round * STREAMS)?.synchronize()?;
                    }
                    Ok(())
                })
            })
            .collect();
        threads
            .into_iter()
            .try_for_each(|t| t.join().unwrap_or_else(|_| Err(ordo_cuda::Error::invalid("thread", "panicked"))))
    })?;
    let elapsed = t.elapsed();
    let cpu = cpu_ns_except(0).zip(cpu_before).map(|(a, b)| (a - b) as f64 / 1e3);
    println!(
        "{STREAMS} threads blocking in cudaStreamSynchronize: {:.0} waits/s, CPU {} us a wait",
        waits / elapsed.as_secs_f64(),
        cpu.map_or("n/a".into(), |c| format!("{:.1}", c / waits))
    );
    Ok(())
}
