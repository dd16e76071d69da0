//! The tokio server's requests on smol's executor (`async-executor`, driven by
//! `futures-lite`'s `block_on`), all on one executor thread: thousands of requests in flight,
//! none blocking the thread. Every 16th request is dropped after its first poll (cancelled at its
//! first await). Without a GPU it fails at once, with CUDA's error.
use async_executor::LocalExecutor;
use ordo_cuda::error;
use ordo_example_async::{cancel_after_one_poll, percentiles, serve, LanePool};
use std::process::ExitCode;
use std::time::Instant;

const LANES: usize = 32;
const REQUESTS: u64 = 10_000;
const CANCEL_EVERY: u64 = 16;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve-smol: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let pool = LanePool::new(LANES)?;
    let executor = LocalExecutor::new();
    let start = Instant::now();
    let mut latencies = futures_lite::future::block_on(executor.run(async {
        let tasks: Vec<_> = (0..REQUESTS)
            .filter_map(|id| {
                if id % CANCEL_EVERY == 0 {
                    cancel_after_one_poll(serve(&pool, id));
                    return None;
                }
                let pool = pool.clone();
                Some(executor.spawn(async move {
                    let t = Instant::now();
                    serve(&pool, id).await.map(|()| t.elapsed().as_secs_f64() * 1e6)
                }))
            })
            .collect();
        let mut latencies = Vec::with_capacity(tasks.len());
        for task in tasks {
            latencies.push(task.await?);
        }
        Ok::<_, ordo_cuda::Error>(latencies)
    }))?;
    let elapsed = start.elapsed();
    let served = latencies.len();
    let (p50, p90, p99) = percentiles(&mut latencies);
    println!(
        "smol's executor, one thread, {LANES} lanes: {served} requests served in {elapsed:.2?} ({:.0}/s), {} cancelled",
        served as f64 / elapsed.as_secs_f64(),
        REQUESTS - served as u64
    );
    println!("request latency: p50 {p50:.0} us, p90 {p90:.0} us, p99 {p99:.0} us");
    let errors = error::take_drop_errors();
    if !errors.is_empty() {
        return Err(format!("errors met in drops: {errors:?}").into());
    }
    Ok(())
}
