//! GPU tests of the chunked pipeline, host functions and the staging ring.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_core::host_fn::{launch_host_fn, take_host_fn_panics};
use ordo_core::memory::copy;
use ordo_core::pipeline::{chunk_range, Buffers, Pipeline, Plan, RunBuffers, RunOptions, Schedule};
use ordo_core::staging::StagingRing;
use ordo_core::*;
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::{gpu_lock, heavy_cpu, random_f32};

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
            unsafe { p.run(s, buffers, plan, |cs, i, o| ordo_kernels::heavy_into(cs, i.as_slice(), o)).unwrap() };
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
                let code = ordo_core::sys::cudaMemcpy2DAsync(
                    o.as_mut_ptr().add((f + 1) % 3).cast(),
                    12,
                    i.as_mut_ptr().add(f).cast_const().cast(),
                    12,
                    4,
                    i.len() / 3,
                    ordo_core::sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
                    cs.as_raw(),
                );
                assert_eq!(code, ordo_core::sys::cudaError::cudaSuccess);
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

/// Defect 5: a run whose compute callback fails on chunk 1, after a chunk 0 that is still queued
/// (behind a sleeping host function) when `run` returns, must still join its worker streams to
/// `main`: once `main` has synchronised, chunk 0 has been computed and copied out, and nothing of
/// the run writes the output any more.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_05_a_failing_run_joins_its_worker_streams_to_main() {
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
            unsafe { ordo_kernels::heavy_into(cs, i.as_slice(), o) }
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
            ordo_kernels::heavy_into(cs, i.as_slice(), o)
        })
    }
    .unwrap();
    s.synchronize().unwrap();
    assert!(output[..] == expect[..]);
}

/// A `compute` callback that panics (caught by the caller) is the same as one that fails: the
/// run's worker streams are joined to `main` while the panic unwinds, so once `main` has been
/// synchronised no copy of the run writes the output any more (review finding after defect 5).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_05_a_panicking_compute_callback_still_joins_the_workers() {
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
        unsafe { ordo_kernels::heavy_into(cs, i.as_slice(), o) }
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
