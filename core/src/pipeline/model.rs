//! The planning model: how long a chunked pipeline takes for given stage times, chunk count,
//! schedule and machine, and the plan it picks.
//!
//! With stage times `a` (copy in), `b` (compute), `c` (copy out) for the whole transfer and `k`
//! chunks, a pipeline takes about `max(a, b, c) + (a + b + c - max(a, b, c)) / k`: the slowest stage
//! runs back to back while the others add only one chunk's worth. Refinements:
//! - **Copy engines** ([`Device::async_engine_count`](crate::device::Device::async_engine_count)):
//!   with one engine, copies in and out share it, so they count as one stage of `a + c`.
//! - **Both directions at once**: host-to-device and device-to-host copies running together reach
//!   less than twice one direction's bandwidth, so the copies are bounded by `(a + c) / duplex`,
//!   `duplex` being the ratio of the two-direction bandwidth to the one-direction bandwidth (1.83
//!   on [`MachineModel::H200_PCIE5`]).
//! - **Streams**: `s` streams keep at most `s` chunks in flight; one stream is serial.
//! - **Per-chunk cost**: each chunk adds a few microseconds of DMA set-up and event waits
//!   (`chunk_overhead_ms`), and stage timing events add more (`stage_timing_overhead_ms`). Against
//!   it stands the fill (first copy-in and last copy-out, each alone): fewer chunks cut the first,
//!   more chunks the second. The fill costs about `(a + b + c - bound) / k`, the chunks `k` times
//!   the per-chunk cost `o`, and their sum is least at `2 sqrt((a + b + c - bound) o)`: with
//!   [`MachineModel::H200_PCIE5`]'s 5.5 us a chunk and 256 MiB each way, about 32 chunks and
//!   0.3 ms over a 5.3 ms bound, so equal chunks cannot get closer than about 5.5% to it.

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
    /// copies and its event waits.
    pub chunk_overhead_ms: f64,
    /// What stage timing adds a chunk, in milliseconds: its four timing events, most of it on the
    /// copy engines.
    pub stage_timing_overhead_ms: f64,
    /// Whether runs record stage timing events
    /// ([`Pipeline::set_stage_timing`](super::Pipeline::set_stage_timing)).
    pub stage_timing: bool,
}

/// The figures of one machine that the model needs and CUDA does not report: its host link and
/// what each chunk costs. [`machine`](Self::machine) joins them with a device's copy engines into
/// the model's [`Machine`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineModel {
    /// One copy direction's pinned host-link bandwidth, in GB/s (10^9 bytes a second).
    pub copy_gb_per_s: f64,
    /// Two-direction copy bandwidth over one direction's ([`Machine::duplex`]).
    pub duplex: f64,
    /// Cost each chunk adds without stage timing, in milliseconds ([`Machine::chunk_overhead_ms`]).
    pub chunk_overhead_ms: f64,
    /// What stage timing adds a chunk, in milliseconds ([`Machine::stage_timing_overhead_ms`]).
    pub stage_timing_overhead_ms: f64,
}

impl MachineModel {
    /// An NVIDIA H200 on PCIe Gen5 x16 (driver 580, CUDA 13.0), the machine ordo's defaults were
    /// measured on: pinned copies of 256 MiB at 55 GB/s each direction alone and 101.6 GB/s both
    /// at once (duplex 1.83), in plain CUDA C++; 5-6 us a chunk without stage timing (chunked
    /// copies against one copy a direction) and about 10 us more with it (the same copies with a
    /// timing event after each), in `ordo-bench` (group `pipeline`; BENCHMARKS.md, "Figures off
    /// target"). [`Pipeline`](super::Pipeline)s start from it; measure your own machine's and
    /// give them with [`Pipeline::set_machine`](super::Pipeline::set_machine).
    pub const H200_PCIE5: MachineModel =
        MachineModel { copy_gb_per_s: 55.0, duplex: 1.83, chunk_overhead_ms: 0.0055, stage_timing_overhead_ms: 0.010 };

    /// The model's machine: these figures, `copy_engines` (`asyncEngineCount`), stage timing off.
    pub const fn machine(&self, copy_engines: u32) -> Machine {
        Machine {
            copy_engines,
            duplex: self.duplex,
            chunk_overhead_ms: self.chunk_overhead_ms,
            stage_timing_overhead_ms: self.stage_timing_overhead_ms,
            stage_timing: false,
        }
    }
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

    /// Worker streams a run of the plan forks to: 3 for the staged schedule; for round robin its
    /// streams, but no more than chunks (and at least one).
    pub fn workers(&self) -> usize {
        match self.schedule {
            Schedule::Staged => 3,
            Schedule::RoundRobin { streams } => streams.min(self.chunks).max(1),
        }
    }

    /// The worker streams (indices below [`workers`](Self::workers)) of chunk `i`'s copy-in,
    /// compute and copy-out.
    pub fn stage_streams(&self, i: usize) -> [usize; 3] {
        match self.schedule {
            Schedule::Staged => [0, 1, 2],
            Schedule::RoundRobin { .. } => [i % self.workers(); 3],
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

/// The chunk of `k` (over `n` elements, cut by [`chunk_range`]) that holds element `r`; `k` when
/// there is none (`r >= n`, or no chunk).
pub fn chunk_of(n: usize, k: usize, r: usize) -> usize {
    if r >= n || k == 0 {
        return k;
    }
    // Chunk i starts at floor(n i / k) <= r exactly when i <= ((r + 1) k - 1) / n: the last such
    // chunk holds r. In u128 the product cannot overflow, and with r < n the quotient is below k.
    (((r as u128 + 1) * k as u128 - 1) / n as u128) as usize
}

/// One chunk of a stencil run ([`Pipeline::run_stencil`](super::Pipeline::run_stencil)), in
/// records (rows): what it copies and writes, what its compute reads, and whose copy-ins that
/// compute waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StencilWindow {
    /// The records the chunk copies in, computes and copies out ([`chunk_range`]).
    pub rows: core::ops::Range<usize>,
    /// The records its compute reads: `rows` widened by the halo on each side, clamped to the
    /// frame.
    pub reads: core::ops::Range<usize>,
    /// The chunks whose copied records intersect `reads`: its compute waits for their copy-ins.
    pub needs: core::ops::Range<usize>,
}

/// Chunk `i`'s window when `records` records are cut into `chunks` chunks and each compute reads
/// `halo` records before and after the ones it writes, clamped at the frame's edges. Any `halo`
/// is accepted: the sums saturate, and a halo as large as the frame reads all of it.
///
/// There is no chunk `i` when `chunks` is zero or `i >= chunks`: every range is then empty (the
/// records at `records..records`, the chunks at `chunks..chunks`), never a division by zero.
pub fn stencil_window(records: usize, chunks: usize, halo: usize, i: usize) -> StencilWindow {
    let rows = chunk_range(records, chunks, i);
    if rows.is_empty() {
        let at = rows.start;
        return StencilWindow { rows, reads: at..at, needs: chunks.min(i)..chunks.min(i) };
    }
    let reads = rows.start.saturating_sub(halo)..rows.end.saturating_add(halo).min(records);
    let needs = if halo == 0 {
        i..i + 1
    } else {
        chunk_of(records, chunks, reads.start)..chunk_of(records, chunks, reads.end - 1) + 1
    };
    StencilWindow { rows, reads, needs }
}

/// Checks a stencil run's buffer lengths (`[input, dev_in, dev_out, output]`), record lengths and
/// chunk count, and returns its record count: a clear error for a zero record length on either
/// side, zero chunks or more than [`MAX_CHUNKS`], an input and its device buffer (or an output
/// and its device buffer) of different lengths, an input that is not a whole number of records,
/// an output that does not hold `out_record_len` values for each input record (or whose length
/// would overflow), and more chunks than records.
pub fn check_stencil(lens: [usize; 4], in_record_len: usize, out_record_len: usize, chunks: usize) -> Result<usize> {
    const CALL: &str = "Pipeline::run_stencil";
    let [input, dev_in, dev_out, output] = lens;
    if in_record_len == 0 || out_record_len == 0 {
        return Err(Error::invalid(CALL, "zero values a record"));
    }
    if chunks == 0 {
        return Err(Error::invalid(CALL, "zero chunks"));
    }
    if chunks > MAX_CHUNKS {
        return Err(Error::invalid(CALL, "more chunks than pipeline::MAX_CHUNKS"));
    }
    if input != dev_in {
        return Err(Error::invalid(CALL, "the input and its device buffer must have the same length"));
    }
    if output != dev_out {
        return Err(Error::invalid(CALL, "the output and its device buffer must have the same length"));
    }
    if input % in_record_len != 0 {
        return Err(Error::invalid(CALL, "an input length that is not a whole number of records"));
    }
    let records = input / in_record_len;
    let expected =
        records.checked_mul(out_record_len).ok_or(Error::invalid(CALL, "records * out_record_len overflows"))?;
    if output != expected {
        return Err(Error::invalid(CALL, "the output must hold out_record_len values for each input record"));
    }
    if chunks > records {
        return Err(Error::invalid(CALL, "more chunks than records"));
    }
    Ok(records)
}

/// One step of a run, in the order [`Pipeline::run_stencil`](super::Pipeline::run_stencil) (and
/// [`run`](super::Pipeline::run), the halo-0 case) enqueues them: see [`enqueue_steps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Chunk `chunk`'s copy-in on its copy-in stream; when `record`, its copy-in event is then
    /// recorded there: a later [`Wait`](Step::Wait) names it (stage timing records it always).
    CopyIn {
        /// The chunk.
        chunk: usize,
        /// Whether a wait needs its copy-in event.
        record: bool,
    },
    /// Chunk `chunk`'s compute stream waits for chunk `on`'s copy-in event, recorded by an
    /// earlier step.
    Wait {
        /// The chunk whose compute waits.
        chunk: usize,
        /// The chunk whose copy-in it waits for.
        on: usize,
    },
    /// Chunk `chunk`'s compute on its compute stream, then its copy-out (after a wait for the
    /// compute's event when the copy-out stream is another).
    Compute {
        /// The chunk.
        chunk: usize,
    },
}

/// The steps of a run of `plan` over `records` records with `halo`: before chunk `i`'s compute,
/// the copy-in of every chunk up to the last one it reads ([`StencilWindow::needs`]) that is not
/// out yet, then waits for those of them on another stream than the compute's (in the staged
/// schedule, whose copy-ins share one stream in order, one wait: for the last). Every wait refers
/// to a copy-in event recorded by an earlier step, so no stream can wait on another in a cycle.
///
/// With a halo of 0 a chunk reads only its own records: its copy-in, a wait only where the
/// copy-in and compute streams differ (the staged schedule), its compute, chunk after chunk.
/// The plan is not checked: call it with `1 <= plan.chunks <= records`.
pub fn enqueue_steps(plan: Plan, records: usize, halo: usize) -> EnqueueSteps {
    EnqueueSteps { plan, records, halo, next: 0, copied: 0, waits: 0..0, started: false }
}

/// The iterator [`enqueue_steps`] returns.
#[derive(Debug, Clone)]
pub struct EnqueueSteps {
    plan: Plan,
    records: usize,
    halo: usize,
    /// The chunk whose compute comes next.
    next: usize,
    /// Chunks whose copy-in is out.
    copied: usize,
    /// Chunks whose copy-in events the next compute may still wait for.
    waits: core::ops::Range<usize>,
    /// Whether `waits` is `next`'s.
    started: bool,
}

impl Iterator for EnqueueSteps {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        let plan = self.plan;
        // Round robin with a halo over two or more streams: each chunk's neighbours compute on
        // other streams and read its records.
        let shared_rows = self.halo > 0 && plan.workers() > 1;
        while self.next < plan.chunks {
            let i = self.next;
            if !self.started {
                let needs = match self.halo {
                    0 => i..i + 1,
                    halo => stencil_window(self.records, plan.chunks, halo, i).needs,
                };
                self.waits = match plan.schedule {
                    Schedule::Staged => needs.start.max(needs.end.saturating_sub(1))..needs.end,
                    Schedule::RoundRobin { .. } => needs,
                };
                self.started = true;
            }
            if self.copied < self.waits.end {
                let j = self.copied;
                self.copied += 1;
                // Recorded where a later step waits for it: staged, the last copy-in a compute
                // needs (later computes need later ones); round robin, with rows shared across
                // streams, every one (a neighbour on another stream reads some of its records).
                let record = match plan.schedule {
                    Schedule::Staged => self.copied == self.waits.end,
                    Schedule::RoundRobin { .. } => shared_rows,
                };
                return Some(Step::CopyIn { chunk: j, record });
            }
            if let Some(on) = self.waits.next() {
                if plan.stage_streams(on)[0] != plan.stage_streams(i)[1] {
                    return Some(Step::Wait { chunk: i, on });
                }
                continue;
            }
            self.next += 1;
            self.started = false;
            return Some(Step::Compute { chunk: i });
        }
        None
    }
}
