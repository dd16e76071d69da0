//! Many concurrent requests on tokio's multi-threaded runtime, each a small GPU step (copy in, a
//! memset, copy out) on a lane (a stream and its buffers) taken from a pool, every step awaited:
//! no thread blocks on the GPU. Some requests are cancelled wherever they are (`abort`), some
//! panic with a copy in flight, and at the end a runtime is shut down with requests in flight:
//! ordo releases what they left once the GPU is done with it. Without a GPU it fails at once,
//! with CUDA's error.
use ordo_cuda::{error, sys};
use ordo_example_async::{percentiles, serve, LanePool};
use std::future::Future;
use std::process::ExitCode;
use std::task::Poll;
use std::time::Instant;

const LANES: usize = 32;
const REQUESTS: u64 = 20_000;
/// Every this many requests is cancelled (aborted) right after it is spawned.
const CANCEL_EVERY: u64 = 16;
/// Every this many requests panics with its first copy in flight.
const PANIC_EVERY: u64 = 997;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve-tokio: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A request that starts its GPU step, then panics while the step is in flight.
async fn serve_then_panic(pool: LanePool, id: u64) {
    let request = serve(&pool, id);
    let mut request = std::pin::pin!(request);
    std::future::poll_fn(|cx| {
        let _ = request.as_mut().poll(cx);
        Poll::Ready(())
    })
    .await;
    // The point of this request: a task that panics with its GPU step in flight.
    #[allow(clippy::panic)]
    {
        panic!("an example panic with request {id} in flight");
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let pool = LanePool::new(LANES)?;
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("an example panic") {
            quiet(info);
        }
    }));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(4).build()?;
    let start = Instant::now();
    let (mut latencies, cancelled, panicked) = runtime.block_on(async {
        let tasks: Vec<_> = (0..REQUESTS)
            .map(|id| {
                let pool = pool.clone();
                if id % PANIC_EVERY == PANIC_EVERY - 1 {
                    return tokio::spawn(async move {
                        serve_then_panic(pool, id).await;
                        Ok(0.0)
                    });
                }
                let task = tokio::spawn(async move {
                    let t = Instant::now();
                    serve(&pool, id).await.map(|()| t.elapsed().as_secs_f64() * 1e6)
                });
                if id % CANCEL_EVERY == 0 {
                    task.abort();
                }
                task
            })
            .collect();
        let (mut latencies, mut cancelled, mut panicked) = (Vec::new(), 0, 0);
        for task in tasks {
            match task.await {
                Ok(Ok(us)) => latencies.push(us),
                Ok(Err(e)) => return Err(e),
                Err(e) if e.is_cancelled() => cancelled += 1,
                Err(_) => panicked += 1,
            }
        }
        Ok((latencies, cancelled, panicked))
    })?;
    let elapsed = start.elapsed();
    let served = latencies.len();
    let (p50, p90, p99) = percentiles(&mut latencies);
    println!(
        "tokio, 4 worker threads, {LANES} lanes: {served} requests served in {elapsed:.2?} ({:.0}/s), \
         {cancelled} cancelled, {panicked} panicked with work in flight",
        served as f64 / elapsed.as_secs_f64()
    );
    println!("request latency: p50 {p50:.0} us, p90 {p90:.0} us, p99 {p99:.0} us");

    // Shut a runtime down with requests in flight: their futures are dropped mid-step.
    let runtime2 = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build()?;
    for id in 0..256 {
        let pool = pool.clone();
        runtime2.spawn(async move { serve(&pool, REQUESTS + id).await });
    }
    std::thread::sleep(std::time::Duration::from_millis(2));
    let t = Instant::now();
    runtime2.shutdown_timeout(std::time::Duration::from_secs(10));
    println!("runtime shut down with requests in flight in {:.2?} (no drop waits for the GPU)", t.elapsed());
    drop(runtime);
    // SAFETY: no arguments. Then ordo's poller thread releases what the dropped requests left.
    error::check(unsafe { sys::cudaDeviceSynchronize() }, "cudaDeviceSynchronize")?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let errors = error::take_drop_errors();
    if !errors.is_empty() {
        return Err(format!("errors met in drops: {errors:?}").into());
    }
    println!(
        "no errors in drops; {} pinned buffers made again after cancelled requests (the old ones released by ordo after their copies)",
        pool.remade()
    );
    Ok(())
}
