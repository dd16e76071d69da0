//! The planning model: how long a chunked pipeline takes for given stage times, chunk count,
//! schedule and machine, and the plan it picks.
//!
//! With stage times `a` (copy in), `b` (compute), `c` (copy out) for the whole transfer and `k`
//! chunks, a pipeline takes about `max(a, b, c) + (a + b + c - max(a, b, c)) / k`: the slowest stage
//! runs back to back while the others add only one chunk's worth. Refinements:
//! - **Copy engines** ([`Device::async_engine_count`](crate::device::Device::async_engine_count)):
//!   with one engine, copies in and out share it, so they count as one stage of `a + c`.
//! - **Both directions at once**: host-to-device and device-to-host copies running together reach
//!   less than twice one direction's bandwidth (on an H200 over PCIe Gen5: 101.6 GB/s together,
//!   55 GB/s each alone), so the copies are bounded by `(a + c) / duplex`, `duplex` being the ratio
//!   of the two-direction bandwidth to the one-direction bandwidth (1.83 there).
//! - **Streams**: `s` streams keep at most `s` chunks in flight; one stream is serial.
//! - **Per-chunk cost**: each chunk adds a few microseconds of DMA set-up and event waits
//!   (`chunk_overhead_ms`), and stage timing events add more (`stage_timing_overhead_ms`). Against
//!   it stands the fill (first copy-in and last copy-out, each alone): fewer chunks cut the first,
//!   more chunks the second. On an H200 (5-6 us a chunk untimed) the best is about 32 chunks, and
//!   equal chunks cannot get closer than about 5.5% to the both-directions bound: the fill costs
//!   about `(a + b + c - bound) / k`, the chunks `k x 5.5 us`, and their sum is least at
//!   `2 sqrt((a + b + c - bound) x 5.5 us)`, about 0.3 ms of 5.3.

use crate::error::{Error, Result};

/// Whole-transfer stage times in milliseconds: measured once (a timed pass of each stage) or given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageTimes {
    /// Copy in (host to device) of the whole transfer.
    pub copy_in_ms: f64,
    /// Compute over the whole transfer.
    pub compute_ms: f64,
    /// Copy out (device to host) of the whole transfer.
    pub copy_out_ms: f64,
}

/// What the model knows of the machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// `asyncEngineCount`.
    pub copy_engines: u32,
    /// Two-direction copy bandwidth over one direction's (1.0 to 2.0).
    pub duplex: f64,
    /// Cost each chunk adds without stage timing, in milliseconds: the DMA set-up of its two
    /// copies and its event waits (H200: 5-6 us, measured by `ordo-bench` as chunked copies
    /// against one copy a direction).
    pub chunk_overhead_ms: f64,
    /// What stage timing adds a chunk, in milliseconds (H200: about 10 us for its four timing
    /// events, most of it on the copy engines).
    pub stage_timing_overhead_ms: f64,
    /// Whether runs record stage timing events
    /// ([`Pipeline::set_stage_timing`](super::Pipeline::set_stage_timing)).
    pub stage_timing: bool,
}

impl Machine {
    /// What `asyncEngineCount` implies, in words.
    pub fn engines_note(&self) -> &'static str {
        match self.copy_engines {
            0 => "no copy engine: copies do not overlap compute; a pipeline cannot help",
            1 => "one copy engine: copies overlap compute, but copies in and out take turns",
            _ => "two or more copy engines: copies in and out overlap each other and the compute",
        }
    }
}

/// How chunks are spread over streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// One stream a stage (copy in, compute, copy out), joined by events.
    Staged,
    /// Chunk `i` on stream `i % streams`, all three stages.
    RoundRobin {
        /// Number of streams.
        streams: usize,
    },
}

/// A chunk count and a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Chunks the transfer is split into.
    pub chunks: usize,
    /// How the chunks are spread over streams.
    pub schedule: Schedule,
}

impl Plan {
    /// Streams the plan uses.
    pub fn streams(&self) -> usize {
        match self.schedule {
            Schedule::Staged => 3,
            Schedule::RoundRobin { streams } => streams,
        }
    }
}

/// Predicted milliseconds for `times` split into `plan` on `machine` (the model in the module docs).
///
/// Inputs outside the model give a clear answer rather than a number that looks real: a stage time
/// or per-chunk cost that is NaN or negative, or a NaN `duplex`, gives NaN; an infinite stage time
/// or per-chunk cost gives infinity. `duplex` is clamped to 1.0-2.0.
pub fn predict_ms(times: StageTimes, plan: Plan, machine: &Machine) -> f64 {
    let (a, b, c) = (times.copy_in_ms, times.compute_ms, times.copy_out_ms);
    let timing = if machine.stage_timing { machine.stage_timing_overhead_ms } else { 0.0 };
    let inputs = [a, b, c, machine.chunk_overhead_ms, timing];
    if inputs.iter().any(|&x| x.is_nan() || x < 0.0) || machine.duplex.is_nan() {
        return f64::NAN;
    }
    if inputs.iter().any(|x| x.is_infinite()) {
        return f64::INFINITY;
    }
    let sum = a + b + c;
    let k = plan.chunks.max(1) as f64;
    let overhead = (machine.chunk_overhead_ms + timing) * k;
    let serial = plan.chunks <= 1 || matches!(plan.schedule, Schedule::RoundRobin { streams } if streams <= 1);
    if serial || machine.copy_engines == 0 {
        return sum + overhead;
    }
    let fill = (sum - a.max(b).max(c)) / k;
    let copies = if machine.copy_engines <= 1 { a + c } else { a.max(c).max((a + c) / machine.duplex.clamp(1.0, 2.0)) };
    let steady = match plan.schedule {
        Schedule::Staged => copies.max(b),
        Schedule::RoundRobin { streams } => copies.max(b).max(sum / streams.min(3) as f64),
    };
    steady + fill + overhead
}

/// The plan with the least predicted time among chunk counts 1, 2, 4, ... up to `max_chunks` and
/// [`MAX_CHUNKS`]: staged with two or more copy engines, else round robin over 2, 4 or 8 streams.
/// Pass the element count as `max_chunks` (or less): a run refuses more chunks than elements (see
/// [`check_run`]). Any `max_chunks` is accepted.
/// When no prediction is a finite number (NaN or infinite inputs, see [`predict_ms`]), the plan is
/// one chunk on one stream.
pub fn choose_plan(times: StageTimes, machine: &Machine, max_chunks: usize) -> Plan {
    let mut best = (f64::INFINITY, Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } });
    let candidates: &[Schedule] = if machine.copy_engines >= 2 {
        &[Schedule::RoundRobin { streams: 1 }, Schedule::Staged]
    } else {
        &[
            Schedule::RoundRobin { streams: 1 },
            Schedule::RoundRobin { streams: 2 },
            Schedule::RoundRobin { streams: 4 },
            Schedule::RoundRobin { streams: 8 },
        ]
    };
    let limit = max_chunks.clamp(1, MAX_CHUNKS);
    let mut k = 1usize;
    while k <= limit {
        for &schedule in candidates {
            let plan = Plan { chunks: k, schedule };
            if plan.streams() > k && !matches!(schedule, Schedule::Staged) {
                continue;
            }
            let t = predict_ms(times, plan, machine);
            if t < best.0 - 1e-9 {
                best = (t, plan);
            }
        }
        match k.checked_mul(2) {
            Some(next) => k = next,
            None => break,
        }
    }
    best.1
}

/// The most chunks a run takes: each chunk needs its own events (four with stage timing), made
/// once and kept by the pipeline.
pub const MAX_CHUNKS: usize = 1 << 16;

/// The element range of chunk `i` of `k` over `n` elements: sizes differ by at most one.
///
/// There is no chunk `i` when `k` is zero or `i >= k`: the range is then the empty `n..n` (past the
/// last element), never a division by zero or a range beyond `n`.
pub fn chunk_range(n: usize, k: usize, i: usize) -> core::ops::Range<usize> {
    if i >= k {
        return n..n;
    }
    // In u128 the products cannot overflow, and with i < k both quotients are at most n.
    let start = (n as u128 * i as u128 / k as u128) as usize;
    let end = (n as u128 * (i as u128 + 1) / k as u128) as usize;
    start..end
}

/// Checks a run's buffer lengths (`[input, dev_in, dev_out, output]`) and chunk count: a clear
/// error for zero chunks, more than [`MAX_CHUNKS`], buffers of different lengths, and more chunks
/// than elements.
pub fn check_run(lens: [usize; 4], chunks: usize) -> Result<()> {
    check_run_records(lens, 1, chunks)
}

/// As [`check_run`] for elements of `record_len` values each
/// ([`RunOptions::record_len`](super::RunOptions::record_len)): also a clear error for a zero
/// `record_len` and a length that is not a multiple of it; chunks are counted against elements.
pub fn check_run_records(lens: [usize; 4], record_len: usize, chunks: usize) -> Result<()> {
    const CALL: &str = "Pipeline::run";
    if record_len == 0 {
        return Err(Error::invalid(CALL, "zero values an element"));
    }
    if chunks == 0 {
        return Err(Error::invalid(CALL, "zero chunks"));
    }
    if chunks > MAX_CHUNKS {
        return Err(Error::invalid(CALL, "more chunks than pipeline::MAX_CHUNKS"));
    }
    if lens.iter().any(|&l| l != lens[0]) {
        return Err(Error::invalid(CALL, "input, device buffers and output must have the same length"));
    }
    if lens[0] % record_len != 0 {
        return Err(Error::invalid(CALL, "a length that is not a whole number of elements"));
    }
    if chunks > lens[0] / record_len {
        return Err(Error::invalid(CALL, "more chunks than elements"));
    }
    Ok(())
}
