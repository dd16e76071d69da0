//! Requests cancelled under real executors, on the GPU: aborted tokio tasks, tasks that panic with
//! a copy in flight, a tokio runtime shut down with requests in flight, and requests dropped
//! after one poll on smol's executor. Afterwards every lane is back in the pool, no drop met an
//! error, and new requests read back correct data on the same lanes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda::error;
use ordo_example_async::{cancel_after_one_poll, serve, LanePool};
use std::time::{Duration, Instant};

const LANES: usize = 8;

/// After the cancellations: every lane serves again (so all came back), and no drop failed.
fn all_lanes_serve_again(pool: &LanePool) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..4 * LANES as u64)
            .map(|id| {
                let pool = pool.clone();
                tokio::spawn(async move { serve(&pool, 1_000_000 + id).await })
            })
            .collect();
        for task in tasks {
            task.await.unwrap().unwrap();
        }
    });
    assert!(error::take_drop_errors().is_empty());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn aborted_and_panicking_tasks_leave_nothing_behind() {
    let pool = LanePool::new(LANES).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..500u64)
            .map(|id| {
                let pool = pool.clone();
                let task = tokio::spawn(async move {
                    if id % 7 == 0 {
                        let request = serve(&pool, id);
                        let mut request = std::pin::pin!(request);
                        std::future::poll_fn(|cx| {
                            let _ = std::future::Future::poll(request.as_mut(), cx);
                            std::task::Poll::Ready(())
                        })
                        .await;
                        panic!("a test panic with a request in flight");
                    }
                    serve(&pool, id).await
                });
                if id % 3 == 0 {
                    task.abort();
                }
                task
            })
            .collect();
        for task in tasks {
            match task.await {
                Ok(result) => result.unwrap(),
                Err(e) => assert!(e.is_cancelled() || e.is_panic()),
            }
        }
    });
    all_lanes_serve_again(&pool);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_runtime_shut_down_with_requests_in_flight_does_not_wait_for_the_gpu() {
    let pool = LanePool::new(LANES).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
    for id in 0..256u64 {
        let pool = pool.clone();
        runtime.spawn(async move { serve(&pool, id).await });
    }
    std::thread::sleep(Duration::from_millis(1));
    let t = Instant::now();
    runtime.shutdown_timeout(Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(5), "the shutdown waited {:?}", t.elapsed());
    all_lanes_serve_again(&pool);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn requests_dropped_after_one_poll_on_smols_executor() {
    let pool = LanePool::new(LANES).unwrap();
    let executor = async_executor::LocalExecutor::new();
    futures_lite::future::block_on(executor.run(async {
        let mut tasks = Vec::new();
        for id in 0..400u64 {
            if id % 2 == 0 {
                cancel_after_one_poll(serve(&pool, id));
            } else {
                let pool = pool.clone();
                tasks.push(executor.spawn(async move { serve(&pool, id).await }));
            }
        }
        for task in tasks {
            task.await.unwrap();
        }
    }));
    all_lanes_serve_again(&pool);
}
