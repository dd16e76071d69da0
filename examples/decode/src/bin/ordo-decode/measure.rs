//! Timing a step, and the per-operation profile.

use ordo_cuda::launch::LaunchConfig;
use ordo_cuda::{Result, StreamRef, TimingEvent};
use ordo_decode::kernels as decoder;
use ordo_decode::{Decoder, Op};
use std::time::Instant;

/// One step, timed on the host.
#[derive(Debug, Clone, Copy)]
pub struct StepSample {
    /// From the first call to the synchronise's return.
    pub wall_ms: f64,
    /// From the first call to the last enqueue's return.
    pub enqueue_ms: f64,
    /// The thread's CPU time over the enqueue.
    pub cpu_ms: f64,
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is writable; the clock id is a constant of the platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6
}

/// `steps` steps of `enqueue`, each synchronised on `s` before the next and timed alone.
pub fn time_steps(s: StreamRef<'_>, steps: usize, enqueue: &mut dyn FnMut() -> Result<()>) -> Result<Vec<StepSample>> {
    let mut samples = Vec::with_capacity(steps);
    for _ in 0..steps {
        let (t0, c0) = (Instant::now(), thread_cpu_ms());
        enqueue()?;
        let (t1, c1) = (Instant::now(), thread_cpu_ms());
        s.synchronize()?;
        let t2 = Instant::now();
        samples.push(StepSample {
            wall_ms: (t2 - t0).as_secs_f64() * 1e3,
            enqueue_ms: (t1 - t0).as_secs_f64() * 1e3,
            cpu_ms: c1 - c0,
        });
    }
    Ok(samples)
}

/// A series' median (the mean of the two middle values for an even count), 99th percentile
/// (nearest rank) and mean: the same definitions as torch_decode.py's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    pub median: f64,
    pub p99: f64,
    pub mean: f64,
}

pub fn stats(values: impl IntoIterator<Item = f64>) -> Stats {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return Stats::default();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let rank = ((0.99 * n as f64).ceil() as usize).clamp(1, n);
    Stats { median, p99: v[rank - 1], mean: v.iter().sum::<f64>() / n as f64 }
}

/// How long the spin kernel holds the stream before each layer of the profile: far longer than
/// the host takes to enqueue a layer, so that the GPU never waits for the host inside it.
const SPIN_NS: i64 = 1_000_000;

/// What [`profile`] measured of a step.
pub struct Profile {
    /// Each operation's GPU time, us a step (summed over the layers), in the step's order (a
    /// layer's operations, then the final norm).
    pub ops: Vec<(Op, f64)>,
    /// The step's GPU time with no event between operations (us): each layer, and the final norm,
    /// from an event before its first operation to one after its last.
    pub busy_us: f64,
}

/// The GPU time of a step of `batch` through `layers` layers, the median of `passes` passes.
///
/// Each layer (and the final norm) is enqueued behind the spin kernel, without PDL, so that the
/// GPU never waits for the host inside it. An operation's time is the time between an event after
/// it and the one after the previous operation (or before the layer): its kernels' time on a full
/// queue, launch latency on the device and the event included. The busy time is measured in
/// passes of their own, with events around each layer only: the step's GPU time when the host
/// keeps the queue full, which the step's overhead is measured from.
pub fn profile(dec: &mut Decoder<'_>, s: StreamRef<'_>, batch: usize, layers: usize, passes: usize) -> Result<Profile> {
    let ops = op_times(dec, s, batch, layers, passes)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let mut busy = Vec::with_capacity(passes);
    for _ in 0..passes {
        let mut total = 0.0;
        for l in 0..=layers {
            // SAFETY: the spin kernel takes no pointer.
            unsafe { decoder::spin().launch(s, &LaunchConfig::new(1, 1), (SPIN_NS,))? };
            start.record(s)?;
            if l < layers {
                dec.layer(s, batch, l, false, &mut |_| Ok(()))?;
            } else {
                dec.final_norm(s, batch, false, &mut |_| Ok(()))?;
            }
            end.record(s)?;
            s.synchronize()?;
            total += end.elapsed_ms_since(&start)? as f64 * 1e3;
        }
        busy.push(total);
    }
    Ok(Profile { ops, busy_us: stats(busy).median })
}

fn op_times(
    dec: &mut Decoder<'_>,
    s: StreamRef<'_>,
    batch: usize,
    layers: usize,
    passes: usize,
) -> Result<Vec<(Op, f64)>> {
    let events: Vec<TimingEvent> = (0..Op::LAYER.len() + 2).map(|_| TimingEvent::new()).collect::<Result<_>>()?;
    let order: Vec<Op> = Op::LAYER.iter().copied().chain([Op::FinalNorm]).collect();
    let mut per_pass: Vec<Vec<f64>> = vec![Vec::with_capacity(passes); order.len()];
    for _ in 0..passes {
        let mut totals = vec![0.0f64; order.len()];
        for l in 0..=layers {
            // SAFETY: the spin kernel takes no pointer.
            unsafe { decoder::spin().launch(s, &LaunchConfig::new(1, 1), (SPIN_NS,))? };
            events[0].record(s)?;
            let mut marked: Vec<Op> = Vec::with_capacity(Op::LAYER.len());
            let mut mark = |op: Op| -> Result<()> {
                let k = marked.len() + 1;
                if let Some(e) = events.get(k) {
                    e.record(s)?;
                }
                marked.push(op);
                Ok(())
            };
            if l < layers {
                dec.layer(s, batch, l, false, &mut mark)?;
            } else {
                dec.final_norm(s, batch, false, &mut mark)?;
            }
            s.synchronize()?;
            for (k, op) in marked.iter().enumerate() {
                let ms = events[k + 1].elapsed_ms_since(&events[k])? as f64;
                if let Some(i) = order.iter().position(|o| o == op) {
                    totals[i] += ms * 1e3;
                }
            }
        }
        for (series, t) in per_pass.iter_mut().zip(totals) {
            series.push(t);
        }
    }
    Ok(order.into_iter().zip(per_pass.into_iter().map(|v| stats(v).median)).collect())
}
