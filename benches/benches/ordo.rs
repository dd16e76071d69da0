//! Criterion benches of ordo's calls against plain CUDA C++ and cudarc (`cargo bench -p
//! ordo-benches --bench ordo` on a GPU host): the report's measurements in criterion's form. GPU
//! time is measured with events through `iter_custom`; host submit time with the host clock.
//! Without a GPU it says so and measures nothing.

use criterion::{criterion_group, criterion_main, Criterion};
use ordo_benches::cpp;
use ordo_benches::kernels::{bl_empty, bl_ptr_int};
use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::pipeline::{Buffers, Pipeline, Plan, Schedule};
use ordo_cuda_core::*;
use ordo_cuda_kernels::{ChainPlan, PdlMode};
use std::time::{Duration, Instant};

#[path = "ordo-bench/cudarc_side.rs"]
#[allow(dead_code)]
mod cudarc_side;

/// GPU time of `f`'s work on `s` over `iters` repetitions, from events.
fn gpu_time(s: StreamRef<'_>, iters: u64, mut f: impl FnMut() -> Result<()>) -> Duration {
    let (Ok(start), Ok(end)) = (TimingEvent::new(), TimingEvent::new()) else { return Duration::ZERO };
    let mut total = 0.0f64;
    for _ in 0..iters {
        let ran = start.record(s).and_then(|_| f()).and_then(|_| end.record(s)).and_then(|_| end.synchronize());
        if let (Ok(()), Ok(ms)) = (ran, end.elapsed_ms_since(&start)) {
            total += ms as f64;
        }
    }
    Duration::from_secs_f64(total * 1e-3)
}

fn launch(c: &mut Criterion, s: StreamRef<'_>, p: *mut f32) {
    let empty = Kernel::new(bl_empty as unsafe extern "C" fn());
    let ptr_int = Kernel::new(bl_ptr_int as unsafe extern "C" fn(*mut f32, i32));
    let (one, warp) = (LaunchConfig::new(1, 1), LaunchConfig::new(1, 32));
    let mut g = c.benchmark_group("launch host submit");
    g.bench_function("ordo, empty", |b| {
        b.iter_custom(|iters| {
            let t0 = Instant::now();
            for _ in 0..iters {
                // SAFETY: touches nothing.
                let _ = unsafe { empty.launch(s, &one, ()) };
            }
            let d = t0.elapsed();
            let _ = s.synchronize();
            d
        })
    });
    g.bench_function("ordo, (ptr, int)", |b| {
        b.iter_custom(|iters| {
            let t0 = Instant::now();
            for i in 0..iters as i32 {
                // SAFETY: writes nothing for i >= 0.
                let _ = unsafe { ptr_int.launch(s, &warp, (p, i)) };
            }
            let d = t0.elapsed();
            let _ = s.synchronize();
            d
        })
    });
    for (kernel, name) in [(0, "empty"), (1, "(ptr, int)")] {
        g.bench_function(format!("C++ cudaLaunchKernelEx, {name}"), |b| {
            b.iter_custom(|iters| {
                Duration::from_secs_f64(
                    unsafe { cpp::bl_submit_us(s.as_raw(), 1, kernel, p, iters as i32) } * iters as f64 * 1e-6,
                )
            })
        });
        g.bench_function(format!("C++ <<<>>>, {name}"), |b| {
            b.iter_custom(|iters| {
                Duration::from_secs_f64(
                    unsafe { cpp::bl_submit_us(s.as_raw(), 0, kernel, p, iters as i32) } * iters as f64 * 1e-6,
                )
            })
        });
    }
    if let Ok(device) = Device::current() {
        if let Ok(mut rc) = cudarc_side::Cudarc::new(device) {
            for (ptr_kernel, name) in [(false, "empty"), (true, "(CudaSlice, int)")] {
                g.bench_function(format!("cudarc launch_builder, {name}"), |b| {
                    b.iter_custom(|iters| {
                        Duration::from_secs_f64(
                            rc.submit_us(ptr_kernel, iters as usize).unwrap_or(f64::NAN) * iters as f64 * 1e-6,
                        )
                    })
                });
            }
        }
    }
    g.finish();
}

fn graphs_and_pdl(c: &mut Criterion, s: StreamRef<'_>) -> Result<()> {
    const N: usize = 4096;
    let mut x = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let xp = x.as_mut_ptr();
    let mut g = c.benchmark_group("graph replay, 200 x add_one(4096), GPU time");
    // SAFETY: `x` (N elements) is declared before `exec`, so it outlives it, and is freed on `s`
    // after every replay enqueued there; nothing else uses `s` during the capture (one thread).
    let exec = unsafe {
        capture(s, CaptureMode::Global, |cs| {
            (0..200).try_for_each(|_| ordo_cuda_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(xp, N)))
        })
    }?
    .instantiate(InstantiateFlags::empty())?;
    exec.upload(s)?;
    g.bench_function("ordo", |b| b.iter_custom(|iters| gpu_time(s, iters, || exec.launch(s))));
    let mut inst = 0.0;
    let cpp_exec = unsafe { cpp::bl_graph_add_one(s.as_raw(), xp, N as i32, 200, &mut inst) };
    g.bench_function("C++", |b| {
        b.iter_custom(|iters| {
            let mut us = 0.0;
            Duration::from_secs_f64(
                (0..iters).map(|_| unsafe { cpp::bl_graph_replay_ms(cpp_exec, s.as_raw(), &mut us) }).sum::<f64>()
                    * 1e-3,
            )
        })
    });
    g.finish();
    unsafe { cpp::bl_graph_destroy(cpp_exec) };

    let device = Device::current()?;
    let mut a = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut bb = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let scale_host: Vec<f32> = (0..N).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
    let mut scale = DeviceBuffer::<f32>::alloc_async(N, s)?;
    copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
    let mut g = c.benchmark_group("PDL chain, 100 kernels of 4096, graph, GPU time");
    for (pdl, name) in [(PdlMode::Plain, "plain form (no griddepcontrol)"), (PdlMode::Auto, "PDL (ordo's rule)")] {
        let plan = ChainPlan::new(device, N, pdl)?;
        // SAFETY: `a`, `bb` and `scale` are declared before `exec`, so they outlive it, and are
        // freed on `s` after every replay enqueued there; nothing else uses `s` during the capture.
        let exec = unsafe {
            capture(s, CaptureMode::Global, |cs| {
                ordo_cuda_kernels::chain(cs, a.as_mut_slice(), bb.as_mut_slice(), scale.as_slice(), 100, &plan)
            })
        }?
        .instantiate(InstantiateFlags::empty())?;
        exec.upload(s)?;
        g.bench_function(name, |b| b.iter_custom(|iters| gpu_time(s, iters, || exec.launch(s))));
    }
    g.finish();
    s.synchronize()
}

fn small_ops(c: &mut Criterion, s: StreamRef<'_>) -> Result<()> {
    let (e, other) = (Event::new()?, Stream::new()?);
    let mut g = c.benchmark_group("events and allocation, host");
    g.bench_function("ordo record + wait", |b| {
        b.iter(|| {
            let _ = e.record(s);
            let _ = other.wait_event(&e);
        })
    });
    g.bench_function("C++ record + wait", |b| {
        b.iter_custom(|iters| {
            Duration::from_secs_f64(
                unsafe { cpp::bl_event_ops_us(s.as_raw(), other.as_raw(), e.as_raw(), 1, iters as i32) }
                    * iters as f64
                    * 1e-6,
            )
        })
    });
    g.bench_function("ordo cudaMallocAsync + cudaFreeAsync 1 MiB", |b| {
        b.iter(|| {
            if let Ok(buf) = DeviceBuffer::<u8>::alloc_async(1 << 20, s) {
                let _ = buf.free_async();
            }
        })
    });
    g.finish();
    s.synchronize()
}

fn copies_and_pipeline(c: &mut Criterion, s: StreamRef<'_>) -> Result<()> {
    const N: usize = 64 << 20;
    let data: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.001).collect();
    let input = PinnedBuffer::from_slice(&data)?;
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev_in = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut dev_out = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (ip, op, dip, dop) = (input.as_ptr(), output.as_mut_ptr(), dev_in.as_mut_ptr(), dev_out.as_mut_ptr());
    let mut g = c.benchmark_group("256 MiB, GPU time");
    g.sample_size(10);
    g.bench_function("pinned H2D, ordo", |b| {
        b.iter_custom(|iters| {
            gpu_time(s, iters, || unsafe {
                copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, N), PinnedSlice::from_raw_parts(ip, N), s)
            })
        })
    });
    g.bench_function("pinned H2D, C++", |b| {
        b.iter_custom(|iters| {
            Duration::from_secs_f64(
                (0..iters)
                    .map(|_| unsafe { cpp::bl_copy_ms(dip.cast(), ip.cast(), N * 4, 1, s.as_raw()) })
                    .sum::<f64>()
                    * 1e-3,
            )
        })
    });
    let mut pipe = Pipeline::new(8)?;
    pipe.set_stage_timing(false);
    g.bench_function("pipeline in + 64-step kernel + out, ordo staged 32 chunks", |b| {
        b.iter_custom(|iters| {
            gpu_time(s, iters, || unsafe {
                let buffers = Buffers {
                    input: PinnedSlice::from_raw_parts(ip, N),
                    dev_in: DeviceSliceMut::from_raw_parts(dip, N),
                    dev_out: DeviceSliceMut::from_raw_parts(dop, N),
                    output: PinnedSliceMut::from_raw_parts(op, N),
                };
                pipe.run(s, buffers, Plan { chunks: 32, schedule: Schedule::Staged }, |cs, i, o| {
                    ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)
                })
            })
        })
    });
    g.bench_function("pipeline in + 64-step kernel + out, C++ 32 chunks x 8 streams", |b| {
        b.iter_custom(|iters| {
            Duration::from_secs_f64(
                (0..iters).map(|_| unsafe { cpp::bl_pipeline_ms(ip, dip, op, N, 32, 8) }).sum::<f64>() * 1e-3,
            )
        })
    });
    g.finish();
    s.synchronize()
}

fn benches(c: &mut Criterion) {
    if ordo_cuda_core::device::count().map_or(true, |n| n == 0) {
        eprintln!("ordo benches: no CUDA device; nothing to measure");
        return;
    }
    let run = |c: &mut Criterion| -> Result<()> {
        let stream = Stream::new()?;
        let s = stream.as_stream();
        let mut p = DeviceBuffer::<f32>::zeroed_async(32, s)?;
        launch(c, s, p.as_mut_ptr());
        graphs_and_pdl(c, s)?;
        small_ops(c, s)?;
        copies_and_pipeline(c, s)
    };
    if let Err(e) = run(c) {
        eprintln!("ordo benches: {e}");
    }
}

criterion_group! {
    name = ordo;
    config = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(ordo);
