//! Launching from 8 threads at once, each onto its own stream and all onto one shared stream
//! (streams are Send + Sync: CUDA allows concurrent use of one stream), results checked; an event
//! recorded by one thread while others query it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn eight_threads_on_their_own_streams_and_on_one_shared_stream() {
    const THREADS: usize = 8;
    const N: usize = 1 << 16;
    const LAUNCHES: usize = 50;
    let shared = Stream::new().unwrap();
    let mut shared_bufs: Vec<DeviceBuffer<'_, f32>> =
        (0..THREADS).map(|_| DeviceBuffer::zeroed_async(N, shared.as_stream()).unwrap()).collect();
    let event = Event::new().unwrap();
    std::thread::scope(|scope| {
        for (t, buf) in shared_bufs.iter_mut().enumerate() {
            let shared = &shared;
            let event = &event;
            scope.spawn(move || {
                // Its own stream and buffer.
                let own = Stream::new().unwrap();
                let mut mine = DeviceBuffer::<f32>::zeroed_async(N, own.as_stream()).unwrap();
                for _ in 0..LAUNCHES + t {
                    unsafe { ordo_cuda_kernels::add_one(own.as_stream(), mine.as_mut_slice()).unwrap() };
                    // The shared stream, from every thread at once.
                    unsafe { ordo_cuda_kernels::add_one(shared.as_stream(), buf.as_mut_slice()).unwrap() };
                    event.record(shared.as_stream()).unwrap();
                    let _ = event.query().unwrap();
                }
                let mut back = vec![0f32; N];
                copy::d2h_blocking(&mut back, mine.as_slice(), own.as_stream()).unwrap();
                assert!(back.iter().all(|&v| v == (LAUNCHES + t) as f32), "thread {t}: own stream");
            });
        }
    });
    shared.synchronize().unwrap();
    for (t, buf) in shared_bufs.iter().enumerate() {
        let mut back = vec![0f32; N];
        copy::d2h_blocking(&mut back, buf.as_slice(), shared.as_stream()).unwrap();
        assert!(back.iter().all(|&v| v == (LAUNCHES + t) as f32), "thread {t}: shared stream");
    }
}
