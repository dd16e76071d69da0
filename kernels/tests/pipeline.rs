//! GPU tests of the chunked pipeline (stencil runs with halos among them), host functions and the
//! staging ring.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::host_fn::{launch_host_fn, take_host_fn_panics};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::pipeline::{
    chunk_range, stencil_window, Buffers, Pipeline, Plan, RunBuffers, RunOptions, Schedule, Stencil, StencilChunk,
};
use ordo_cuda_core::staging::StagingRing;
use ordo_cuda_core::*;
use ordo_cuda_kernels::BlurInput;
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::{blur_rows_downsample_cpu, gpu_lock, hash2, heavy_cpu, random_f32};

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pipeline_results_equal_the_serial_version_for_several_plans() {
    let _gpu = gpu_lock::shared();
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let cases = [
        (1_000_003usize, Plan { chunks: 7, schedule: Schedule::RoundRobin { streams: 3 } }),
        (1_000_003, Plan { chunks: 7, schedule: Schedule::Staged }),
        (1 << 20, Plan { chunks: 8, schedule: Schedule::RoundRobin { streams: 4 } }),
        (1 << 20, Plan { chunks: 32, schedule: Schedule::RoundRobin { streams: 8 } }),
        (1 << 20, Plan { chunks: 32, schedule: Schedule::Staged }),
        (999, Plan { chunks: 999, schedule: Schedule::Staged }),
        (999, Plan { chunks: 999, schedule: Schedule::RoundRobin { streams: 2 } }),
        (10, Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } }),
    ];
    for (n, plan) in cases {
        let (chunks, streams) = (plan.chunks, plan.streams());
        let data = random_f32(n, n as u64 + chunks as u64 + streams as u64);
        let input = PinnedBuffer::from_slice(&data).unwrap();
        let mut output = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty()).unwrap();
        output.fill(f32::NAN);
        let mut dev_in = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
        let mut dev_out = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
        let mut p = Pipeline::new(streams).unwrap();
        let expect: Vec<f32> = data.iter().map(|&v| heavy_cpu(v)).collect();
        // First without stage timing (only the events the cross-stream waits need), then with.
        for timing in [false, true] {
            output.fill(f32::NAN);
            p.set_stage_timing(timing);
            let buffers = Buffers {
                input: input.pinned(),
                dev_in: dev_in.as_mut_slice(),
                dev_out: dev_out.as_mut_slice(),
                output: output.pinned_mut(),
            };
            unsafe { p.run(s, buffers, plan, |cs, i, o| ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)).unwrap() };
            s.synchronize().unwrap();
            assert!(output[..] == expect[..], "n {n} {plan:?} timing {timing}");
            if !timing {
                let e = p.chunk_times().unwrap_err();
                assert!(e.to_string().contains("stage timing off"), "{e}");
            }
        }
        // Stage events are ordered within each chunk and along each stream.
        let times = p.chunk_times().unwrap();
        assert_eq!(times.len(), chunks);
        for t in &times {
            assert!(t.copy_in.0 <= t.copy_in.1 && t.copy_in.1 <= t.compute.1 && t.compute.1 <= t.copy_out.1, "{t:?}");
        }
        match plan.schedule {
            Schedule::RoundRobin { .. } => {
                for st in 0..streams.min(chunks) {
                    let on: Vec<_> = times.iter().filter(|t| t.stream == st).collect();
                    assert!(on.windows(2).all(|w| w[0].copy_out.1 <= w[1].copy_in.0 + 1e-3), "stream {st} order");
                }
            }
            // Each stage's stream takes the chunks in order.
            Schedule::Staged => assert!(times.windows(2).all(|w| w[0].copy_in.1 <= w[1].copy_in.0 + 1e-3
                && w[0].compute.1 <= w[1].compute.1 + 1e-3
                && w[0].copy_out.1 <= w[1].copy_out.1 + 1e-3)),
        }
    }
}

/// `run_with`: records of three `u32` values cut whole, device temporaries from a pool of the
/// caller's, workers at the highest priority, the plan from `plan_for`.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pipeline_records_through_temporaries_of_the_callers_pool() {
    let _gpu = gpu_lock::shared();
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let device = Device::current().unwrap();
    let pool = MemPool::new(device).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    let (_, greatest) = device.stream_priority_range().unwrap();
    let mut p = Pipeline::with_priority(3, greatest).unwrap();
    assert_eq!(p.stream_count(), 3);
    let records = 100_003usize;
    let data: Vec<u32> =
        (0..records as u32).flat_map(|i| [i * 3 + 1, i ^ 0x00ab_cdef, i.wrapping_mul(40_503) | 1]).collect();
    let input = PinnedBuffer::from_slice(&data).unwrap();
    let mut output = PinnedBuffer::<u32>::zeroed(data.len(), HostAllocFlags::empty()).unwrap();
    let plan = p.plan_for(data.len() * 4, data.len() * 4, records);
    assert!(plan.chunks >= 1 && plan.chunks <= records && plan.streams() <= p.stream_count(), "{plan:?}");
    let mut seen = Vec::new();
    let buffers = RunBuffers { input: input.pinned(), dev_in: None, dev_out: None, output: output.pinned_mut() };
    let options = RunOptions { record_len: 3, pool: Some(pool.as_pool()) };
    // The compute rotates each record's three values (out[(f + 1) % 3] = in[f]): strided copies.
    unsafe {
        p.run_with(s, buffers, plan, options, |cs, i, o| {
            assert_eq!(i.len() % 3, 0, "whole records");
            seen.push(i.len() / 3);
            for f in 0..3 {
                let code = ordo_cuda_core::sys::cudaMemcpy2DAsync(
                    o.as_mut_ptr().add((f + 1) % 3).cast(),
                    12,
                    i.as_mut_ptr().add(f).cast_const().cast(),
                    12,
                    4,
                    i.len() / 3,
                    ordo_cuda_core::sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
                    cs.as_raw(),
                );
                assert_eq!(code, ordo_cuda_core::sys::cudaError::cudaSuccess);
            }
            Ok(())
        })
        .unwrap()
    };
    s.synchronize().unwrap();
    let expect: Vec<u32> = data.chunks(3).flat_map(|r| [r[2], r[0], r[1]]).collect();
    assert!(output[..] == expect[..], "rotated records");
    assert_eq!(seen.len(), plan.chunks);
    assert_eq!(seen.iter().sum::<usize>(), records);
    assert!(pool.as_pool().reserved_bytes().unwrap() >= (data.len() * 4) as u64, "temporaries from the pool");
    // A length that is not a whole number of records is refused before anything is enqueued.
    let short = PinnedBuffer::<u32>::zeroed(4, HostAllocFlags::empty()).unwrap();
    let mut short_out = PinnedBuffer::<u32>::zeroed(4, HostAllocFlags::empty()).unwrap();
    let buffers = RunBuffers { input: short.pinned(), dev_in: None, dev_out: None, output: short_out.pinned_mut() };
    let plan = Plan { chunks: 1, schedule: Schedule::Staged };
    let e = unsafe { p.run_with(s, buffers, plan, options, |_, _, _| Ok(())) }.unwrap_err();
    assert!(e.to_string().contains("whole number of elements"), "{e}");
}

/// A run whose compute callback fails on chunk 1, after a chunk 0 that is still queued
/// (behind a sleeping host function) when `run` returns, must still join its worker streams to
/// `main`: once `main` has synchronised, chunk 0 has been computed and copied out, and nothing of
/// the run writes the output any more.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failing_run_joins_its_worker_streams_to_main() {
    let _gpu = gpu_lock::shared();
    const N: usize = 4 << 20;
    const CHUNKS: usize = 4;
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let data = random_f32(N, 0x5eed);
    let expect: Vec<f32> = data.iter().map(|&v| heavy_cpu(v)).collect();
    let input = PinnedBuffer::from_slice(&data).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let mut dev_in = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    let mut dev_out = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    let mut p = Pipeline::new(3).unwrap();
    let r0 = chunk_range(N, CHUNKS, 0);
    let plans = [
        (Plan { chunks: CHUNKS, schedule: Schedule::Staged }, true),
        (Plan { chunks: CHUNKS, schedule: Schedule::Staged }, false),
        (Plan { chunks: CHUNKS, schedule: Schedule::RoundRobin { streams: 2 } }, true),
        (Plan { chunks: CHUNKS, schedule: Schedule::RoundRobin { streams: 3 } }, false),
    ];
    for (plan, timing) in plans {
        output.fill(f32::NAN);
        p.set_stage_timing(timing);
        let mut chunk = 0;
        let compute = |cs: StreamRef<'_>, i: DeviceSliceMut<'_, f32>, o: DeviceSliceMut<'_, f32>| -> Result<()> {
            chunk += 1;
            if chunk == 2 {
                return Err(Error::invalid("test compute", "deliberate failure on chunk 1"));
            }
            // Chunk 0's stream is held for a while (a host function that sleeps; no GPU threads,
            // so it costs the sanitizers nothing) before its compute: still queued when `run`
            // returns.
            // SAFETY: the closure only sleeps: no CUDA call.
            unsafe { launch_host_fn(cs, || std::thread::sleep(Duration::from_millis(50)))? };
            // SAFETY: the pipeline's own views, valid for the run.
            unsafe { ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o) }
        };
        let buffers = Buffers {
            input: input.pinned(),
            dev_in: dev_in.as_mut_slice(),
            dev_out: dev_out.as_mut_slice(),
            output: output.pinned_mut(),
        };
        // SAFETY: the buffers live until main is synchronised below.
        let e = unsafe { p.run(s, buffers, plan, compute) }.unwrap_err();
        assert!(e.to_string().contains("deliberate failure"), "{e}");
        s.synchronize().unwrap();
        // Main has passed the run: chunk 0 was computed and copied out; no later chunk was.
        let first: Vec<u32> = output.iter().map(|v| v.to_bits()).collect();
        assert!(output[r0.clone()] == expect[r0.clone()], "{plan:?} timing {timing}: chunk 0 not done when main was");
        assert!(
            output[r0.end..].iter().all(|v| v.is_nan()),
            "{plan:?} timing {timing}: a chunk after the failure was copied out"
        );
        assert!(p.chunk_times().unwrap().is_empty());
        // And nothing changes it afterwards.
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            output.iter().map(|v| v.to_bits()).eq(first.iter().copied()),
            "{plan:?} timing {timing}: output changed after main was synchronised"
        );
    }
    // The pipeline runs again after a failure, with the right result.
    output.fill(f32::NAN);
    let buffers = Buffers {
        input: input.pinned(),
        dev_in: dev_in.as_mut_slice(),
        dev_out: dev_out.as_mut_slice(),
        output: output.pinned_mut(),
    };
    // SAFETY: the buffers live until main is synchronised below.
    unsafe {
        p.run(s, buffers, Plan { chunks: CHUNKS, schedule: Schedule::Staged }, |cs, i, o| {
            ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)
        })
    }
    .unwrap();
    s.synchronize().unwrap();
    assert!(output[..] == expect[..]);
}

/// A `compute` callback that panics (caught by the caller) is the same as one that fails: the
/// run's worker streams are joined to `main` while the panic unwinds, so once `main` has been
/// synchronised no copy of the run writes the output any more.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_panicking_compute_callback_still_joins_the_workers() {
    let _gpu = gpu_lock::shared();
    const N: usize = 4 << 20;
    const CHUNKS: usize = 4;
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let data = random_f32(N, 0x9a41c);
    let expect: Vec<f32> = data.iter().map(|&v| heavy_cpu(v)).collect();
    let input = PinnedBuffer::from_slice(&data).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let mut dev_in = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    let mut dev_out = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    let mut p = Pipeline::new(3).unwrap();
    let r0 = chunk_range(N, CHUNKS, 0);
    output.fill(f32::NAN);
    let mut chunk = 0;
    let compute = |cs: StreamRef<'_>, i: DeviceSliceMut<'_, f32>, o: DeviceSliceMut<'_, f32>| -> Result<()> {
        chunk += 1;
        if chunk == 2 {
            panic!("deliberate panic on chunk 1");
        }
        // SAFETY: the closure only sleeps: no CUDA call.
        unsafe { launch_host_fn(cs, || std::thread::sleep(Duration::from_millis(50)))? };
        // SAFETY: the pipeline's own views, valid for the run.
        unsafe { ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o) }
    };
    let buffers = Buffers {
        input: input.pinned(),
        dev_in: dev_in.as_mut_slice(),
        dev_out: dev_out.as_mut_slice(),
        output: output.pinned_mut(),
    };
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the buffers live until main is synchronised below.
        unsafe { p.run(s, buffers, Plan { chunks: CHUNKS, schedule: Schedule::Staged }, compute) }
    }));
    assert!(unwound.is_err(), "the callback's panic reaches the caller");
    s.synchronize().unwrap();
    let first: Vec<u32> = output.iter().map(|v| v.to_bits()).collect();
    assert!(output[r0.clone()] == expect[r0.clone()], "chunk 0 not done when main was");
    assert!(output[r0.end..].iter().all(|v| v.is_nan()), "a chunk after the panic was copied out");
    std::thread::sleep(Duration::from_millis(100));
    assert!(output.iter().map(|v| v.to_bits()).eq(first.iter().copied()), "output changed after main was synchronised");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn pipeline_bad_inputs_are_clear_errors() {
    let _gpu = gpu_lock::shared();
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let input = PinnedBuffer::<f32>::zeroed(16, HostAllocFlags::empty()).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(16, HostAllocFlags::empty()).unwrap();
    let mut dev_in = DeviceBuffer::<f32>::alloc_async(16, s).unwrap();
    let mut dev_out = DeviceBuffer::<f32>::alloc_async(15, s).unwrap();
    let mut p = Pipeline::new(2).unwrap();
    println!("asyncEngineCount {}: {}", p.machine().copy_engines, p.machine().engines_note());
    let nop = |_: StreamRef<'_>, _: DeviceSliceMut<'_, f32>, _: DeviceSliceMut<'_, f32>| Ok(());
    let mut run = |chunks, out_len| {
        let plan = Plan { chunks, schedule: Schedule::Staged };
        let buffers = Buffers {
            input: input.pinned(),
            dev_in: dev_in.as_mut_slice(),
            dev_out: dev_out.slice_mut(..out_len).unwrap(),
            output: output.pinned_mut(),
        };
        unsafe { p.run(s, buffers, plan, nop) }.unwrap_err().to_string()
    };
    assert!(run(0, 15).contains("zero chunks"));
    assert!(run(4, 15).contains("same length"));
    assert!(Pipeline::new(0).is_err());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn host_functions_run_after_preceding_work_and_panics_are_caught() {
    let _gpu = gpu_lock::shared();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let data = random_f32(1 << 20, 8);
    let mut dev = DeviceBuffer::<f32>::alloc_async(data.len(), s).unwrap();
    copy::h2d_blocking(dev.as_mut_slice(), &data, s).unwrap();
    let mut host = PinnedBuffer::<f32>::zeroed(data.len(), HostAllocFlags::empty()).unwrap();
    unsafe { copy::d2h_async(host.pinned_mut(), dev.as_slice(), s).unwrap() };
    // The host function runs after the copy: it sees the copied data.
    let (tx, rx) = mpsc::channel();
    let ptr = host.as_ptr() as usize;
    let len = host.len();
    // SAFETY: the closure reads host memory and sends on a channel: no CUDA call.
    unsafe {
        launch_host_fn(s, move || {
            let seen = std::slice::from_raw_parts(ptr as *const f32, len);
            tx.send(seen.iter().map(|v| v.to_bits() as u64).sum::<u64>()).unwrap();
        })
    }
    .unwrap();
    let sum = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(sum, data.iter().map(|v| v.to_bits() as u64).sum::<u64>());
    // A panicking host function is caught and counted; later host functions and the stream go on.
    // SAFETY: the closure panics and makes no CUDA call.
    unsafe { launch_host_fn(s, || panic!("deliberate panic in a host function")) }.unwrap();
    s.synchronize().unwrap();
    assert!(take_host_fn_panics() >= 1);
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    // SAFETY: an atomic store: no CUDA call.
    unsafe { launch_host_fn(s, move || flag.store(true, std::sync::atomic::Ordering::Release)) }.unwrap();
    s.synchronize().unwrap();
    assert!(ran.load(std::sync::atomic::Ordering::Acquire), "the host function after the panic did not run");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn staging_ring_carries_many_slots_of_random_data_from_a_loader_thread() {
    let _gpu = gpu_lock::shared();
    const SLOT: usize = 1 << 16;
    const SLOTS: usize = 4;
    const CHUNKS: usize = 64; // 16 times around the ring
    let stream = Stream::new().unwrap();
    let mut dev = DeviceBuffer::<f32>::zeroed_async(SLOT * CHUNKS, stream.as_stream()).unwrap();
    stream.synchronize().unwrap();
    let ring = StagingRing::<f32>::new(SLOTS, SLOT).unwrap();
    let expect = random_f32(SLOT * CHUNKS, 1234);
    let dev_ptr = dev.as_mut_ptr() as usize;
    let loader = {
        let ring = ring.clone();
        let expect = expect.clone();
        let raw_stream = stream.as_raw() as usize;
        std::thread::spawn(move || {
            // SAFETY: the stream outlives the thread (joined below before it drops).
            let s = unsafe { StreamRef::from_raw(raw_stream as sys::cudaStream_t) }.unwrap();
            let mut waits = 0;
            for c in 0..CHUNKS {
                let mut slot = match ring.try_acquire() {
                    Some(slot) => slot,
                    None => {
                        waits += 1;
                        ring.acquire().unwrap()
                    }
                };
                slot.copy_from_slice(&expect[c * SLOT..(c + 1) * SLOT]);
                let dst = unsafe { DeviceSliceMut::from_raw_parts((dev_ptr as *mut f32).add(c * SLOT), SLOT) };
                ring.submit(slot, SLOT, dst, s).unwrap();
            }
            waits
        })
    };
    let waits = loader.join().unwrap();
    stream.synchronize().unwrap();
    assert_eq!(ring.free_slots(), SLOTS);
    let mut back = vec![0f32; SLOT * CHUNKS];
    copy::d2h_blocking(&mut back, dev.as_slice(), stream.as_stream()).unwrap();
    assert!(back == expect);
    println!("staging ring: {CHUNKS} chunks through {SLOTS} slots, loader waited for a free slot {waits} times");
}

/// A frame of `height` rows of `width` values from `value(row, col)`.
fn frame<T: DeviceCopy>(width: usize, height: usize, value: impl Fn(usize, usize) -> T) -> Vec<T> {
    (0..height).flat_map(|r| (0..width).map(move |c| (r, c))).map(|(r, c)| value(r, c)).collect()
}

/// One stencil run of the blur (radius `radius`, halo `halo`) over `data`, checked bit for bit
/// against the CPU over the whole frame, and each chunk's view against its window.
#[allow(clippy::too_many_arguments)]
fn check_blur_run<T: BlurInput + Into<f32>>(
    p: &mut Pipeline,
    s: StreamRef<'_>,
    data: &[T],
    (width, height): (usize, usize),
    plan: Plan,
    (halo, radius): (usize, usize),
    callers_buffers: bool,
    what: &str,
) {
    let half = width / 2;
    let input = PinnedBuffer::from_slice(data).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(height * half, HostAllocFlags::empty()).unwrap();
    output.fill(f32::NAN);
    let mut dev_in = DeviceBuffer::<T>::alloc_async(data.len(), s).unwrap();
    // The caller's output buffer starts poisoned: every value must be written.
    let mut dev_out = common::poisoned(height * half, s);
    let buffers = RunBuffers {
        input: input.pinned(),
        dev_in: callers_buffers.then(|| dev_in.as_mut_slice()),
        dev_out: callers_buffers.then(|| dev_out.as_mut_slice()),
        output: output.pinned_mut(),
    };
    let stencil = Stencil { in_record_len: width, out_record_len: half, halo, pool: None };
    let mut seen = Vec::new();
    let compute = |cs: StreamRef<'_>, chunk: StencilChunk<'_, T, f32>| {
        seen.push((chunk.first_row, chunk.rows, chunk.before, chunk.after, chunk.input.len(), chunk.output.len()));
        // SAFETY: the pipeline's views, valid for the run.
        unsafe { ordo_cuda_kernels::blur_rows_downsample(cs, chunk, width, radius) }
    };
    // SAFETY: the buffers outlive the run: `s` is synchronised below, before they drop.
    unsafe { p.run_stencil(s, buffers, plan, stencil, compute) }.unwrap();
    s.synchronize().unwrap();
    let expect = blur_rows_downsample_cpu(data, width, height, radius);
    let bad = output.iter().zip(&expect).position(|(a, b)| a.to_bits() != b.to_bits());
    assert!(bad.is_none(), "{what}: first difference at {bad:?} (row {:?})", bad.map(|b| b / half));
    assert_eq!(seen.len(), plan.chunks, "{what}");
    for (i, &(first_row, rows, before, after, in_len, out_len)) in seen.iter().enumerate() {
        let w = stencil_window(height, plan.chunks, halo, i);
        assert_eq!((first_row, rows), (w.rows.start, w.rows.len()), "{what}: chunk {i}");
        assert_eq!((before, after), (w.rows.start - w.reads.start, w.reads.end - w.rows.end), "{what}: chunk {i}");
        assert_eq!((in_len, out_len), (w.reads.len() * width, rows * half), "{what}: chunk {i}");
    }
}

/// Stencil runs of the vertical blur + horizontal 2x downsample over frames of `f32` and of `u8`
/// (hashed, non-uniform, non-zero values): halos 1 and 2, halos larger than a chunk (5 with
/// 2-row chunks) and than the frame; the staged schedule and round robin over 2 and 4 streams;
/// 1, 3 and 7 chunks over a row count none of them divides; device temporaries and the caller's
/// device buffers; stage timing on and off. Each result equals the CPU's over the whole frame,
/// bit for bit.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn stencil_runs_blur_and_downsample_like_the_cpu_for_every_schedule_halo_and_chunk_count() {
    let _gpu = gpu_lock::shared();
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let mut p = Pipeline::new(4).unwrap();
    let schedules = [Schedule::Staged, Schedule::RoundRobin { streams: 2 }, Schedule::RoundRobin { streams: 4 }];
    let floats = |w, h| frame(w, h, |r, c| 1.0 + (hash2(r, c) % 1000) as f32 / 7.0);
    let bytes = |w, h| frame(w, h, |r, c| 1 + (hash2(r, c) % 255) as u8);
    // 100 rows of 64 values: 3 and 7 chunks leave chunks of different sizes.
    let (width, height) = (64, 100);
    let (f, b) = (floats(width, height), bytes(width, height));
    for halo in [1, 2] {
        for schedule in schedules {
            for chunks in [1, 3, 7] {
                for callers_buffers in [false, true] {
                    let plan = Plan { chunks, schedule };
                    p.set_stage_timing(chunks == 3);
                    let what = format!("halo {halo} {plan:?} caller's buffers {callers_buffers}");
                    check_blur_run(&mut p, s, &f, (width, height), plan, (halo, halo), callers_buffers, &what);
                    check_blur_run(&mut p, s, &b, (width, height), plan, (halo, halo), callers_buffers, &what);
                }
            }
        }
    }
    p.set_stage_timing(false);
    // 14 rows in 7 chunks of 2: a halo of 5 reaches two chunks and more each way; a halo of 20
    // (and a radius of 20) reads the whole frame from every chunk. Odd width: the last column
    // has no pair and is dropped.
    let (width, height) = (33, 14);
    let (f, b) = (floats(width, height), bytes(width, height));
    for (halo, radius) in [(5, 5), (5, 3), (20, 20)] {
        for schedule in schedules {
            for callers_buffers in [false, true] {
                let plan = Plan { chunks: 7, schedule };
                let what = format!("halo {halo} radius {radius} {plan:?} caller's buffers {callers_buffers}");
                check_blur_run(&mut p, s, &f, (width, height), plan, (halo, radius), callers_buffers, &what);
                check_blur_run(&mut p, s, &b, (width, height), plan, (halo, radius), callers_buffers, &what);
            }
        }
    }
    // A halo of 0 is a plain run with rows of two lengths: the blur of radius 0 is the downsample.
    check_blur_run(&mut p, s, &f, (width, height), Plan { chunks: 7, schedule: Schedule::Staged }, (0, 0), true, "h0");
    // Lengths that do not fit the records are refused before anything is enqueued.
    let input = PinnedBuffer::from_slice(&f).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(height * (width / 2) + 1, HostAllocFlags::empty()).unwrap();
    let buffers = RunBuffers { input: input.pinned(), dev_in: None, dev_out: None, output: output.pinned_mut() };
    let stencil = Stencil { in_record_len: width, out_record_len: width / 2, halo: 1, pool: None };
    let plan = Plan { chunks: 2, schedule: Schedule::Staged };
    let e = unsafe { p.run_stencil(s, buffers, plan, stencil, |_, _: StencilChunk<'_, f32, f32>| Ok(())) }.unwrap_err();
    assert!(e.to_string().contains("out_record_len values for each input record"), "{e}");
}

/// A stencil run whose compute fails on chunk 2, after chunks whose copy-ins (ahead of their
/// computes) and computes are still queued behind a sleeping host function, joins its workers:
/// once `main` has synchronised, the chunks before the failure are copied out and nothing of the
/// run writes the output any more.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_failing_stencil_run_joins_its_worker_streams_to_main() {
    let _gpu = gpu_lock::shared();
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let (width, height, halo) = (64usize, 60usize, 4usize);
    let data = frame(width, height, |r, c| 1.0 + (hash2(r, c) % 1000) as f32 / 3.0);
    let expect = blur_rows_downsample_cpu(&data, width, height, halo);
    let input = PinnedBuffer::from_slice(&data).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(height * width / 2, HostAllocFlags::empty()).unwrap();
    let mut p = Pipeline::new(4).unwrap();
    for schedule in [Schedule::Staged, Schedule::RoundRobin { streams: 4 }] {
        output.fill(f32::NAN);
        let plan = Plan { chunks: 6, schedule };
        let mut chunk = 0;
        let compute = |cs: StreamRef<'_>, c: StencilChunk<'_, f32, f32>| -> Result<()> {
            chunk += 1;
            if chunk == 3 {
                return Err(Error::invalid("test compute", "deliberate failure on chunk 2"));
            }
            // SAFETY: the closure only sleeps: no CUDA call.
            unsafe { launch_host_fn(cs, || std::thread::sleep(Duration::from_millis(30)))? };
            // SAFETY: the pipeline's views, valid for the run.
            unsafe { ordo_cuda_kernels::blur_rows_downsample(cs, c, width, halo) }
        };
        let buffers = RunBuffers { input: input.pinned(), dev_in: None, dev_out: None, output: output.pinned_mut() };
        let stencil = Stencil { in_record_len: width, out_record_len: width / 2, halo, pool: None };
        // SAFETY: the buffers live until main is synchronised below.
        let e = unsafe { p.run_stencil(s, buffers, plan, stencil, compute) }.unwrap_err();
        assert!(e.to_string().contains("deliberate failure"), "{e}");
        s.synchronize().unwrap();
        let done = chunk_range(height, 6, 1).end * (width / 2);
        assert!(output[..done] == expect[..done], "{schedule:?}: chunks 0 and 1 not done when main was");
        assert!(output[done..].iter().all(|v| v.is_nan()), "{schedule:?}: a chunk after the failure was copied out");
        let first: Vec<u32> = output.iter().map(|v| v.to_bits()).collect();
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            output.iter().map(|v| v.to_bits()).eq(first),
            "{schedule:?}: output changed after main was synchronised"
        );
    }
}

/// A stencil run captured in global mode (device temporaries as the graph's allocation nodes,
/// the cross-stream waits as its edges), replayed twice on new host input: each replay equals the
/// CPU's blur of that input. (An eager run first, checked too, makes the pipeline's events.)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_stencil_run_captured_in_global_mode_replays_on_changed_input() {
    let _gpu = gpu_lock::exclusive(); // captures in global mode
    let main = Stream::new().unwrap();
    let s = main.as_stream();
    let (width, height, halo) = (96usize, 77usize, 2usize);
    let mut input = PinnedBuffer::<u8>::zeroed(width * height, HostAllocFlags::empty()).unwrap();
    let mut output = PinnedBuffer::<f32>::zeroed(height * width / 2, HostAllocFlags::empty()).unwrap();
    let mut p = Pipeline::new(4).unwrap();
    let data = |round: usize| frame(width, height, |r, c| 1 + (hash2(r + 1000 * round, c) % 255) as u8);
    for schedule in [Schedule::Staged, Schedule::RoundRobin { streams: 4 }] {
        let plan = Plan { chunks: 5, schedule };
        let stencil = Stencil { in_record_len: width, out_record_len: width / 2, halo, pool: None };
        let compute = |ws: StreamRef<'_>, c: StencilChunk<'_, u8, f32>| {
            // SAFETY: the pipeline's views, valid for the run (at every replay: the capture's
            // contract below).
            unsafe { ordo_cuda_kernels::blur_rows_downsample(ws, c, width, halo) }
        };
        input.copy_from_slice(&data(0));
        output.fill(f32::NAN);
        let buffers = RunBuffers { input: input.pinned(), dev_in: None, dev_out: None, output: output.pinned_mut() };
        // SAFETY: the buffers live until `s` is synchronised below.
        unsafe { p.run_stencil(s, buffers, plan, stencil, compute) }.unwrap();
        s.synchronize().unwrap();
        let expect = blur_rows_downsample_cpu(&data(0), width, height, halo);
        assert!(output.iter().zip(&expect).all(|(a, b)| a.to_bits() == b.to_bits()), "{schedule:?} eager");
        let (input_view, output_view) = (input.pinned(), output.pinned_mut());
        // SAFETY: the host buffers outlive the executable graph, launched and synchronised below
        // before they drop; the device temporaries are the graph's own; nothing else uses `s`
        // during the capture (exclusive GPU lock).
        let graph = unsafe {
            capture(s, CaptureMode::Global, |cs| {
                let buffers = RunBuffers { input: input_view, dev_in: None, dev_out: None, output: output_view };
                p.run_stencil(cs, buffers, plan, stencil, compute)
            })
        }
        .unwrap();
        assert!(!p.in_capture().unwrap(), "the workers left the capture with it");
        let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
        for round in 1..3usize {
            input.copy_from_slice(&data(round));
            output.fill(f32::NAN);
            exec.launch(s).unwrap();
            s.synchronize().unwrap();
            let expect = blur_rows_downsample_cpu(&data(round), width, height, halo);
            assert!(output.iter().zip(&expect).all(|(a, b)| a.to_bits() == b.to_bits()), "{schedule:?} replay {round}");
        }
    }
}
