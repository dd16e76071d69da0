//! Overlap: the chunked pipeline over a sweep of plans against the model and the both-directions
//! bound, the planned pipeline against the plain C++ pipeline, and a run's device temporaries
//! against the caller's device buffers (the C handle and the Rust API).

use crate::{interleave, median, ms_between, Report};
use ordo_benches::cpp;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::pipeline::{
    choose_plan, predict_ms, Buffers, Machine, Pipeline, Plan, RunBuffers, Schedule, StageTimes, Stencil, StencilChunk,
};
use ordo_cuda_core::*;

pub(crate) fn pipeline_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("pipeline sweep");
    const N: usize = 64 << 20; // 256 MiB of f32 in, 256 MiB out
    let main = Stream::new()?;
    let s = main.as_stream();
    let data: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.001).collect();
    let input = PinnedBuffer::from_slice(&data)?;
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev_in = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut dev_out = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    // One timed pass of each stage.
    let (ip, op, dip, dop) = (input.as_ptr(), output.as_mut_ptr(), dev_in.as_mut_ptr(), dev_out.as_mut_ptr());
    let a = ms_between(s, &start, &end, || unsafe {
        copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, N), PinnedSlice::from_raw_parts(ip, N), s)
    })?;
    let b = ms_between(s, &start, &end, || unsafe {
        ordo_cuda_kernels::heavy_into(s, DeviceSlice::from_raw_parts(dip, N), DeviceSliceMut::from_raw_parts(dop, N))
    })?;
    let c = ms_between(s, &start, &end, || unsafe {
        copy::d2h_async(PinnedSliceMut::from_raw_parts(op, N), DeviceSlice::from_raw_parts(dip, N), s)
    })?;
    let times = StageTimes { copy_in_ms: a, compute_ms: b, copy_out_ms: c };
    r.add(
        "pipeline",
        "stages: copy in / compute / copy out",
        "ms",
        a + b + c,
        None,
        format!("{a:.2} / {b:.2} / {c:.2} (reference 4.89 / 0.32 / 4.86)"),
    );
    // The bound: both full copies at once, on two streams (what the copy directions reach together).
    let second = Stream::new()?;
    let joined = Event::new()?;
    let both_once = || {
        ms_between(s, &start, &end, || unsafe {
            second.wait_event(&start)?;
            copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, N), PinnedSlice::from_raw_parts(ip, N), s)?;
            copy::d2h_async(
                PinnedSliceMut::from_raw_parts(op, N),
                DeviceSlice::from_raw_parts(dop, N),
                second.as_stream(),
            )?;
            joined.record(second.as_stream())?;
            s.wait_event(&joined)
        })
    };
    let mut both = Vec::new();
    for _ in 0..3 {
        both.push(both_once()?);
    }
    let bound = median(&both);
    let mut pipe = Pipeline::new(8)?;
    let mut machine = pipe.machine();
    machine.duplex = ((a + c) / bound).clamp(1.0, 2.0);
    pipe.set_machine(machine);
    r.add(
        "pipeline",
        "both copies at once (the bound)",
        "ms",
        bound,
        None,
        format!("{:.1} GB/s total; duplex {:.2}", 2.0 * (N * 4) as f64 / bound / 1e6, machine.duplex),
    );
    // Stage timing is off by default (a pipeline's own setting); the sweep below times stages.
    let machine = Machine { stage_timing: true, ..machine };
    let planned_timed = choose_plan(times, &machine, 128);
    let planned = choose_plan(times, &Machine { stage_timing: false, ..machine }, 128);
    let pipe = std::cell::RefCell::new(pipe);
    // One run of `plan`, GPU ms; `timing`: stage timing events on.
    let run_with = |plan: Plan, timing: bool| -> Result<f64> {
        let mut p = pipe.borrow_mut();
        p.set_stage_timing(timing);
        ms_between(s, &start, &end, || unsafe {
            let buffers = Buffers {
                input: PinnedSlice::from_raw_parts(ip, N),
                dev_in: DeviceSliceMut::from_raw_parts(dip, N),
                dev_out: DeviceSliceMut::from_raw_parts(dop, N),
                output: PinnedSliceMut::from_raw_parts(op, N),
            };
            p.run(s, buffers, plan, |cs, i, o| ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o))
        })
    };
    let run = |plan: Plan| run_with(plan, true);
    let mut sweep = Vec::new();
    let rr = |chunks, streams| Plan { chunks, schedule: Schedule::RoundRobin { streams } };
    let staged = |chunks| Plan { chunks, schedule: Schedule::Staged };
    for plan in [
        rr(1, 1),
        rr(8, 4),
        rr(32, 8),
        staged(4),
        staged(8),
        staged(12),
        staged(16),
        staged(24),
        staged(32),
        staged(48),
        staged(64),
        staged(96),
    ] {
        let mut v = Vec::new();
        for _ in 0..rounds.min(7) {
            v.push(run(plan)?);
        }
        let measured = median(&v);
        let predicted = predict_ms(times, plan, &machine);
        sweep.push((plan, measured, predicted));
    }
    for (plan, measured, predicted) in &sweep {
        r.add(
            "pipeline",
            match plan.schedule {
                Schedule::Staged => format!("staged, {} chunks: measured (vs model)", plan.chunks),
                Schedule::RoundRobin { streams } => {
                    format!("round robin, {} chunks x {streams} streams: measured (vs model)", plan.chunks)
                }
            },
            "ms",
            *measured,
            Some(*predicted),
            format!("model error {:+.1}%", (predicted - measured) / measured * 100.0),
        );
    }
    // Staged without stage timing events, over chunk counts, against the model.
    let untimed_machine = Machine { stage_timing: false, ..machine };
    for chunks in [16usize, 24, 32, 48, 64, 96] {
        let mut v = Vec::new();
        for _ in 0..rounds.min(7) {
            v.push(run_with(staged(chunks), false)?);
        }
        let measured = median(&v);
        let predicted = predict_ms(times, staged(chunks), &untimed_machine);
        r.add(
            "pipeline",
            format!("staged, {chunks} chunks, stage timing off: measured (vs model)"),
            "ms",
            measured,
            Some(predicted),
            format!("model error {:+.1}%", (predicted - measured) / measured * 100.0),
        );
    }
    // The planned pipeline against the plain C++ pipeline of the source's best plan, and the bound;
    // ordo with and without stage timing events.
    // The bound is measured again in the same rounds: the host link's speed drifts between runs
    // and within one (measured: 5.30 and 5.59 ms for the same copies in two runs of a day), so a
    // ratio to a bound taken at another time would carry that drift.
    let mut both_again = both_once;
    let m = interleave(
        rounds.min(9),
        &mut [
            &mut || run_with(planned, false),
            &mut || run_with(planned_timed, true),
            &mut || Ok(unsafe { cpp::bl_pipeline_ms(ip, dip, op, N, 32, 8) }),
            &mut || Ok(unsafe { cpp::bl_pipeline_ms(ip, dip, op, N, 8, 4) }),
            &mut both_again,
        ],
    )?;
    r.add(
        "pipeline",
        format!(
            "planned ({:?}, {} chunks, default: no stage timing) vs C++ 32 chunks x 8 streams",
            planned.schedule, planned.chunks
        ),
        "ms",
        m[0],
        Some(m[2]),
        format!("C++ 8 x 4: {:.3} ms", m[3]),
    );
    r.add(
        "pipeline",
        "planned (default: no stage timing) vs both-directions bound, interleaved",
        "ms",
        m[0],
        Some(m[4]),
        format!("only the events the waits need; target at most 1.04x; bound alone, earlier: {bound:.3} ms"),
    );
    r.add(
        "pipeline",
        format!("planned with stage timing on ({} chunks) vs both-directions bound, interleaved", planned_timed.chunks),
        "ms",
        m[1],
        Some(m[4]),
        "timing events around each stage (opt-in)",
    );
    temporaries(r, rounds)?;
    where_the_time_goes(r, rounds, bound, [ip.cast_mut(), op, dip, dop])?;
    stencil(r, rounds, &mut pipe.borrow_mut(), [ip.cast_mut(), op, dip, dop])?;
    // A timeline of the planned run for the SVG (stage timing on).
    run(planned_timed)?;
    r.timeline = pipe.borrow().chunk_times()?;
    Ok(())
}

/// A stencil through the pipeline: a 5-row vertical blur and a 2x horizontal downsample of an
/// 8192 x 8192 f32 frame (256 MiB in, 128 MiB out), halo 2, planned, against what one writes
/// without a pipeline: the whole frame copied in, the same kernel over it, copied out, on one
/// stream. The floor is the copy in alone.
fn stencil(r: &mut Report, rounds: usize, pipe: &mut Pipeline, [ip, op, dip, dop]: [*mut f32; 4]) -> Result<()> {
    const W: usize = 8192;
    const H: usize = 8192;
    const RADIUS: usize = 2;
    r.progress("pipeline: stencil");
    let main = Stream::new()?;
    let s = main.as_stream();
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    pipe.set_stage_timing(false);
    let plan = pipe.plan_for(W * H * 4, W / 2 * H * 4, H);
    // SAFETY (all three): the benchmark's buffers hold W * H floats each (64 Mi), at least what
    // each view covers, and outlive these synchronised calls.
    let piped = || -> Result<f64> {
        ms_between(s, &start, &end, || unsafe {
            let buffers = RunBuffers {
                input: PinnedSlice::from_raw_parts(ip.cast_const(), W * H),
                dev_in: Some(DeviceSliceMut::from_raw_parts(dip, W * H)),
                dev_out: Some(DeviceSliceMut::from_raw_parts(dop, W / 2 * H)),
                output: PinnedSliceMut::from_raw_parts(op, W / 2 * H),
            };
            let stencil = Stencil { in_record_len: W, out_record_len: W / 2, halo: RADIUS, pool: None };
            pipe.run_stencil(s, buffers, plan, stencil, |cs, chunk| {
                ordo_cuda_kernels::blur_rows_downsample(cs, chunk, W, RADIUS)
            })
        })
    };
    let serial = || -> Result<f64> {
        ms_between(s, &start, &end, || unsafe {
            copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, W * H), PinnedSlice::from_raw_parts(ip, W * H), s)?;
            let chunk = StencilChunk {
                input: DeviceSlice::from_raw_parts(dip, W * H),
                before: 0,
                after: 0,
                first_row: 0,
                rows: H,
                output: DeviceSliceMut::from_raw_parts(dop, W / 2 * H),
            };
            ordo_cuda_kernels::blur_rows_downsample(s, chunk, W, RADIUS)?;
            copy::d2h_async(
                PinnedSliceMut::from_raw_parts(op, W / 2 * H),
                DeviceSlice::from_raw_parts(dop, W / 2 * H),
                s,
            )
        })
    };
    let copy_in = || -> Result<f64> {
        ms_between(s, &start, &end, || unsafe {
            copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, W * H), PinnedSlice::from_raw_parts(ip, W * H), s)
        })
    };
    let (mut piped, mut serial, mut copy_in) = (piped, serial, copy_in);
    let m = interleave(rounds.min(7), &mut [&mut piped, &mut serial, &mut copy_in])?;
    r.add(
        "pipeline",
        format!(
            "stencil (5-row blur, 2x downsample, 8192 x 8192 f32, halo 2): planned ({:?}, {} chunks) vs copy in, kernel, copy out on one stream",
            plan.schedule, plan.chunks
        ),
        "ms",
        m[0],
        Some(m[1]),
        format!("floor (the copy in alone, 256 MiB): {:.3} ms; {:.3}x it", m[2], m[0] / m[2]),
    );
    Ok(())
}

/// Where the pipeline's time goes beyond the bound: the same bytes in chunks, copies only (both
/// directions at once on two streams, no compute), bare; with a timing event after every copy; and
/// with each copy-out waiting on its chunk's copy-in through an event (the dependency without
/// the compute). Per-chunk costs are (measured - bound) / chunks.
fn where_the_time_goes(r: &mut Report, rounds: usize, bound: f64, [ip, op, dip, dop]: [*mut f32; 4]) -> Result<()> {
    const N: usize = 64 << 20;
    r.progress("pipeline: where the time goes");
    let (a, b) = (Stream::new()?, Stream::new()?);
    let (sa, sb) = (a.as_stream(), b.as_stream());
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let (fork, join) = (Event::new()?, Event::new()?);
    let timed: Vec<TimingEvent> = (0..2 * 96).map(|_| TimingEvent::new()).collect::<Result<_>>()?;
    let plain: Vec<Event> = (0..96).map(|_| Event::new()).collect::<Result<_>>()?;
    // mode 0: bare; 1: a timing event after every copy; 2: copy-out i waits for copy-in i. (Two
    // streams a direction, chunks alternating, measured no better bare, +4.7-5.2 us a chunk, and a
    // staged pipeline built so took 7.6-8.2 ms: it is not offered.)
    let copies = |chunks: usize, mode: u32| -> Result<f64> {
        ms_between(sa, &start, &end, || {
            fork.record(sa)?;
            sb.wait_event(&fork)?;
            for i in 0..chunks {
                let (lo, hi) = (N * i / chunks, N * (i + 1) / chunks);
                // SAFETY: chunks of the pipeline's buffers, which outlive this (synchronised) call.
                unsafe {
                    copy::h2d_async(
                        DeviceSliceMut::from_raw_parts(dip.add(lo), hi - lo),
                        PinnedSlice::from_raw_parts(ip.add(lo), hi - lo),
                        sa,
                    )?;
                    match mode {
                        1 => timed[2 * i].record(sa)?,
                        2 => {
                            plain[i].record(sa)?;
                            sb.wait_event(&plain[i])?;
                        }
                        _ => {}
                    }
                    copy::d2h_async(
                        PinnedSliceMut::from_raw_parts(op.add(lo), hi - lo),
                        DeviceSlice::from_raw_parts(dop.add(lo), hi - lo),
                        sb,
                    )?;
                    if mode == 1 {
                        timed[2 * i + 1].record(sb)?;
                    }
                }
            }
            join.record(sb)?;
            sa.wait_event(&join)
        })
    };
    batched_copies(r, rounds, bound, [ip, op, dip, dop], (sa, sb), (&start, &end), (&fork, &join))?;
    for chunks in [16usize, 32, 64, 96] {
        let m = interleave(
            rounds.min(7),
            &mut [&mut || copies(chunks, 0), &mut || copies(chunks, 1), &mut || copies(chunks, 2)],
        )?;
        let per = |ms: f64| (ms - bound) * 1e3 / chunks as f64;
        r.add(
            "pipeline",
            format!("copies only, {chunks} chunks, both directions: vs the bound"),
            "ms",
            m[0],
            Some(bound),
            format!(
                "{:+.1} us a chunk; + timing events {:+.1}; + out waits on in (adds the fill) {:+.1}",
                per(m[0]),
                per(m[1]),
                per(m[2])
            ),
        );
    }
    Ok(())
}

/// The same chunked copies as [`where_the_time_goes`] mode 0, each direction's chunks enqueued
/// as one `cudaMemcpyBatchAsync` (CUDA 13.0) instead of a `cudaMemcpyAsync` a chunk: whether the
/// batch lowers the per-chunk cost there.
#[cfg(cuda_13)]
#[allow(clippy::too_many_arguments)]
fn batched_copies(
    r: &mut Report,
    rounds: usize,
    bound: f64,
    [ip, op, dip, dop]: [*mut f32; 4],
    (sa, sb): (StreamRef<'_>, StreamRef<'_>),
    (start, end): (&TimingEvent, &TimingEvent),
    (fork, join): (&Event, &Event),
) -> Result<()> {
    use core::ffi::c_void;
    const N: usize = 64 << 20;
    let batch = |dsts: &[*mut c_void], srcs: &[*const c_void], sizes: &[usize], s: StreamRef<'_>| -> Result<()> {
        let mut attrs = sys::cudaMemcpyAttributes {
            srcAccessOrder: sys::cudaMemcpySrcAccessOrder::cudaMemcpySrcAccessOrderStream,
            ..Default::default()
        };
        let mut first = 0usize;
        // SAFETY: `dsts`, `srcs`, `sizes` have one entry a copy, within the pipeline's buffers;
        // one attribute set for all copies (index 0).
        let code = unsafe {
            sys::cudaMemcpyBatchAsync(
                dsts.as_ptr(),
                srcs.as_ptr(),
                sizes.as_ptr(),
                dsts.len(),
                &mut attrs,
                &mut first,
                1,
                s.as_raw(),
            )
        };
        error::check(code, "cudaMemcpyBatchAsync")
    };
    let copies = |chunks: usize, batched: bool| -> Result<f64> {
        let span = |i: usize| (N * i / chunks, N * (i + 1) / chunks);
        let (mut d_in, mut s_in, mut d_out, mut s_out, mut sizes) = (vec![], vec![], vec![], vec![], vec![]);
        for i in 0..chunks {
            let (lo, hi) = span(i);
            // SAFETY: offsets inside the pipeline's buffers.
            unsafe {
                d_in.push(dip.add(lo).cast::<c_void>());
                s_in.push(ip.add(lo).cast_const().cast::<c_void>());
                d_out.push(op.add(lo).cast::<c_void>());
                s_out.push(dop.add(lo).cast_const().cast::<c_void>());
            }
            sizes.push((hi - lo) * core::mem::size_of::<f32>());
        }
        ms_between(sa, start, end, || {
            fork.record(sa)?;
            sb.wait_event(fork)?;
            if batched {
                batch(&d_in, &s_in, &sizes, sa)?;
                batch(&d_out, &s_out, &sizes, sb)?;
            } else {
                for i in 0..chunks {
                    let (lo, hi) = span(i);
                    // SAFETY: chunks of the pipeline's buffers, which outlive this (synchronised) call.
                    unsafe {
                        copy::h2d_async(
                            DeviceSliceMut::from_raw_parts(dip.add(lo), hi - lo),
                            PinnedSlice::from_raw_parts(ip.add(lo), hi - lo),
                            sa,
                        )?;
                        copy::d2h_async(
                            PinnedSliceMut::from_raw_parts(op.add(lo), hi - lo),
                            DeviceSlice::from_raw_parts(dop.add(lo), hi - lo),
                            sb,
                        )?;
                    }
                }
            }
            join.record(sb)?;
            sa.wait_event(join)
        })
    };
    // Per chunk: one batch of one copy each way instead of a cudaMemcpyAsync, with (`wait`) or
    // without each copy-out waiting on its copy-in through an event, as the pipeline's copies are.
    let waits: Vec<Event> = (0..32).map(|_| Event::new()).collect::<Result<_>>()?;
    let single = |batched: bool, wait: bool| -> Result<f64> {
        const CHUNKS: usize = 32;
        ms_between(sa, start, end, || {
            fork.record(sa)?;
            sb.wait_event(fork)?;
            for (i, ev) in waits.iter().enumerate().take(CHUNKS) {
                let (lo, hi) = (N * i / CHUNKS, N * (i + 1) / CHUNKS);
                let bytes = [(hi - lo) * core::mem::size_of::<f32>()];
                // SAFETY: chunks of the pipeline's buffers, which outlive this (synchronised) call.
                unsafe {
                    if batched {
                        batch(&[dip.add(lo).cast()], &[ip.add(lo).cast_const().cast()], &bytes, sa)?;
                    } else {
                        copy::h2d_async(
                            DeviceSliceMut::from_raw_parts(dip.add(lo), hi - lo),
                            PinnedSlice::from_raw_parts(ip.add(lo), hi - lo),
                            sa,
                        )?;
                    }
                    if wait {
                        ev.record(sa)?;
                        sb.wait_event(ev)?;
                    }
                    if batched {
                        batch(&[op.add(lo).cast()], &[dop.add(lo).cast_const().cast()], &bytes, sb)?;
                    } else {
                        copy::d2h_async(
                            PinnedSliceMut::from_raw_parts(op.add(lo), hi - lo),
                            DeviceSlice::from_raw_parts(dop.add(lo), hi - lo),
                            sb,
                        )?;
                    }
                }
            }
            join.record(sb)?;
            sa.wait_event(join)
        })
    };
    if single(true, true).is_ok() {
        let m = interleave(
            rounds.min(7),
            &mut [&mut || single(true, false), &mut || single(false, false), &mut || single(true, true), &mut || {
                single(false, true)
            }],
        )?;
        let per = |ms: f64| (ms - bound) * 1e3 / 32.0;
        r.add(
            "pipeline",
            "copies only, 32 chunks: a batch of one copy a chunk vs a cudaMemcpyAsync a chunk",
            "ms",
            m[0],
            Some(m[1]),
            format!(
                "{:+.1} vs {:+.1} us a chunk over the bound; with copy-out waiting on copy-in: {:.3} vs {:.3} ms",
                per(m[0]),
                per(m[1]),
                m[2],
                m[3]
            ),
        );
    }
    for chunks in [32usize, 96] {
        if let Err(e) = copies(chunks, true) {
            r.add("pipeline", format!("copies only, {chunks} chunks, batched"), "ms", f64::NAN, None, format!("{e}"));
            return Ok(());
        }
        let m = interleave(rounds.min(7), &mut [&mut || copies(chunks, true), &mut || copies(chunks, false)])?;
        let per = |ms: f64| (ms - bound) * 1e3 / chunks as f64;
        r.add(
            "pipeline",
            format!("copies only, {chunks} chunks: one cudaMemcpyBatchAsync a direction vs a cudaMemcpyAsync a chunk"),
            "ms",
            m[0],
            Some(m[1]),
            format!("{:+.1} vs {:+.1} us a chunk over the bound", per(m[0]), per(m[1])),
        );
    }
    Ok(())
}

#[cfg(not(cuda_13))]
#[allow(clippy::too_many_arguments)]
fn batched_copies(
    _: &mut Report,
    _: usize,
    _: f64,
    _: [*mut f32; 4],
    _: (StreamRef<'_>, StreamRef<'_>),
    _: (&TimingEvent, &TimingEvent),
    _: (&Event, &Event),
) -> Result<()> {
    Ok(())
}

/// A run whose device buffers are temporaries (the C handle's NULL device pointers, the Rust API's
/// `None`) against the same run with the caller's device buffers, 512 MiB of floats each way,
/// interleaved, after a first run of each (the temporaries' pool then holds their memory): host
/// milliseconds from the call to the return of the stream's synchronise. The C handle has its
/// default options (planned chunks, ordo's kernel, ordo's pool for temporaries).
fn temporaries(r: &mut Report, rounds: usize) -> Result<()> {
    use core::ffi::c_void;
    use core::ptr::null_mut;
    use ordo_cuda_capi::{ordo_pipeline_create, ordo_pipeline_destroy, ordo_pipeline_run_on, ORDO_SUCCESS};
    use ordo_cuda_core::pipeline::{RunBuffers, RunOptions};
    use std::time::Instant;
    const N: usize = 128 << 20; // 512 MiB of f32 each way
    r.progress("pipeline: temporaries against the caller's buffers, 512 MiB");
    let main = Stream::new()?;
    let s = main.as_stream();
    let input = PinnedBuffer::from_fn(N, HostAllocFlags::empty(), |i| (i % 1000) as f32 * 0.001)?;
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev_in = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut dev_out = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (ip, op, dip, dop) = (input.as_ptr(), output.as_mut_ptr(), dev_in.as_mut_ptr(), dev_out.as_mut_ptr());
    s.synchronize()?;
    let mut handle = null_mut();
    // SAFETY: default options (NULL); `handle` is writable.
    if unsafe { ordo_pipeline_create(core::ptr::null(), &mut handle) } != ORDO_SUCCESS {
        return Err(Error::invalid("ordo_pipeline_create", "the C pipeline handle could not be made"));
    }
    let mut pipe = Pipeline::new(3)?;
    let plan = pipe.plan_for(N * 4, N * 4, N);
    let wall_ms = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let t0 = Instant::now();
        f()?;
        s.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    let c_run = |given: bool| -> Result<f64> {
        let (d_in, d_out) = if given { (dip.cast::<c_void>(), dop.cast::<c_void>()) } else { (null_mut(), null_mut()) };
        wall_ms(&mut || {
            // SAFETY: the buffers hold N floats each and outlive the synchronised run; NULL compute:
            // ordo's kernel over floats.
            let st = unsafe {
                ordo_pipeline_run_on(handle, s.as_raw(), ip.cast(), d_in, d_out, op.cast(), N, None, null_mut())
            };
            if st == ORDO_SUCCESS {
                Ok(())
            } else {
                Err(Error::invalid("ordo_pipeline_run_on", "the run failed"))
            }
        })
    };
    let pipe = std::cell::RefCell::new(&mut pipe);
    let rust_run = |given: bool| -> Result<f64> {
        wall_ms(&mut || {
            // SAFETY: as above.
            unsafe {
                let buffers = RunBuffers {
                    input: PinnedSlice::from_raw_parts(ip, N),
                    dev_in: given.then(|| DeviceSliceMut::from_raw_parts(dip, N)),
                    dev_out: given.then(|| DeviceSliceMut::from_raw_parts(dop, N)),
                    output: PinnedSliceMut::from_raw_parts(op, N),
                };
                pipe.borrow_mut().run_with(s, buffers, plan, RunOptions::default(), |cs, i, o| {
                    ordo_cuda_kernels::heavy_into(cs, i.as_slice(), o)
                })
            }
        })
    };
    let m = interleave(
        rounds.min(9),
        &mut [&mut || c_run(false), &mut || c_run(true), &mut || rust_run(false), &mut || rust_run(true)],
    );
    ordo_pipeline_destroy(handle);
    let m = m?;
    r.add(
        "pipeline",
        "C handle, 512 MiB of floats: temporaries (device pointers NULL) vs the caller's device buffers",
        "ms",
        m[0],
        Some(m[1]),
        "target at most 1.02x; after a first run; host time to the synchronise; before ordo's pool: 16.23 vs 11.07 ms",
    );
    r.add(
        "pipeline",
        format!(
            "Rust run_with, 512 MiB of floats ({} chunks): temporaries vs the caller's device buffers",
            plan.chunks
        ),
        "ms",
        m[2],
        Some(m[3]),
        "target at most 1.02x; after a first run; host time to the synchronise",
    );
    Ok(())
}
