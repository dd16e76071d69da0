//! Criterion benches of ordo's hot paths against plain CUDA C++ (`cargo bench` on a GPU host).
//! GPU time is measured with events through `iter_custom`; host submit time with the host clock.

use criterion::{criterion_group, criterion_main, Criterion};
use ordo_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_core::launch::LaunchConfig;
use ordo_core::*;
use std::time::{Duration, Instant};

fn benches(c: &mut Criterion) {
    if ordo_core::device::count().map_or(true, |n| n == 0) {
        eprintln!("ordo benches: no CUDA device; nothing to measure");
        return;
    }
    let Ok(stream) = Stream::new() else { return };
    let s = stream.as_stream();
    let Ok(mut x) = DeviceBuffer::<f32>::zeroed_async(4096, s) else { return };
    let xp = x.as_mut_ptr();
    let empty = ordo_kernels::kernel::empty();
    let one = LaunchConfig::new(1, 1);

    c.bench_function("launch/ordo typed launch (host)", |b| {
        b.iter_custom(|iters| {
            let t0 = Instant::now();
            for _ in 0..iters {
                let _ = unsafe { empty.launch(s, &one, ()) };
            }
            let d = t0.elapsed();
            let _ = s.synchronize();
            d
        })
    });
    c.bench_function("launch/C++ cudaLaunchKernelEx (host)", |b| {
        b.iter_custom(|iters| Duration::from_secs_f64(unsafe { ordo_benches::cpp::bl_submit_us(s.as_raw(), 1, 0, xp, iters as i32) } * iters as f64 * 1e-6))
    });
    c.bench_function("events/record + wait", |b| {
        let (Ok(e), Ok(other)) = (Event::new(), Stream::new()) else { return };
        b.iter(|| {
            let _ = e.record(s);
            let _ = other.wait_event(&e);
        })
    });
    c.bench_function("alloc/cudaMallocAsync + cudaFreeAsync 1 MiB", |b| {
        b.iter(|| {
            if let Ok(buf) = DeviceBuffer::<u8>::alloc_async(1 << 20, s) {
                let _ = buf.free_async();
            }
        })
    });
    let graph = capture(s, CaptureMode::Global, |cs| {
        (0..200).try_for_each(|_| unsafe { ordo_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(xp, 4096)) })
    });
    if let Ok(exec) = graph.and_then(|g| g.instantiate(InstantiateFlags::empty())) {
        let (Ok(start), Ok(end)) = (TimingEvent::new(), TimingEvent::new()) else { return };
        c.bench_function("graph/200 add_one replay (GPU time)", |b| {
            b.iter_custom(|iters| {
                let mut total = 0.0;
                for _ in 0..iters {
                    let _ = start.record(s);
                    let _ = exec.launch(s);
                    let _ = end.record(s);
                    let _ = end.synchronize();
                    total += end.elapsed_ms_since(&start).unwrap_or(0.0) as f64;
                }
                Duration::from_secs_f64(total * 1e-3)
            })
        });
    }
    let _ = s.synchronize();
}

criterion_group!(ordo, benches);
criterion_main!(ordo);
