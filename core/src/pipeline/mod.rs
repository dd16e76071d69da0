//! A chunked copy/compute pipeline: the transfer is split into chunks, and each chunk is copied
//! in, computed on and copied out, so that copies in both directions overlap each other and the
//! compute. Two schedules:
//! - **Staged** (ordo's choice with two or more copy engines): one stream a stage. The copy-in
//!   stream copies chunk after chunk; the compute stream waits for each chunk's copy-in event; the
//!   copy-out stream waits for each chunk's compute event. Both copy directions stay busy all the
//!   time, so the pipeline approaches the both-directions bound. Its chunks are equal: with
//!   smaller chunks at both ends the copy-out stream waits for each larger chunk while copy-ins
//!   grow, so it starts as late as with one middle-sized chunk and idles besides (measured slower:
//!   BENCHMARKS.md).
//! - **Round robin** (the source's): chunk `i` does all three stages on stream `i % streams`.
//!   Chunks on different streams start their copy-in together and share the bandwidth, and a
//!   stream's next copy-in waits for its previous copy-out, so copies in and out take turns more
//!   than they overlap.
//!
//! **Stencils** ([`Pipeline::run_stencil`]): the records are rows of a frame, and each chunk's
//! compute reads `halo` rows before and after the rows it writes (fewer at the frame's edges),
//! through a shared view of the device input; the output may hold a different number of values a
//! row than the input (a vertical blur with a horizontal 2x downsample, say). Each row is still
//! copied in once, by its own chunk: a compute waits for the copy-ins of the neighbouring chunks
//! whose rows it reads, which are enqueued before it (so every wait refers to an event already
//! recorded, and no wait can close a cycle). With a halo of 0 and equal row lengths a stencil run
//! is exactly [`Pipeline::run_with`]'s run.
//!
//! Nothing synchronises: the caller's stream forks to the worker streams and joins back through
//! events, so the whole pipeline can be captured into a graph too. By default a run records only
//! the events the cross-stream waits need; [`Pipeline::set_stage_timing`] adds timing events around
//! each stage, so that the caller can read each chunk's stage times afterwards.
//!
//! The model that plans the chunk count ([`predict_ms`], [`choose_plan`]) is in `pipeline/model.rs`;
//! its items are re-exported here. What a run is given ([`Buffers`], [`RunBuffers`],
//! [`RunOptions`], [`Stencil`], [`StencilChunk`]) is in `pipeline/buffers.rs`, the runs themselves
//! in `pipeline/run.rs`. [`PipelinePool`] (`pipeline/pool.rs`, with `std`) keeps pipelines for
//! callers that run from several threads and inside captures.

mod buffers;
mod model;
#[cfg(feature = "std")]
mod pool;
mod run;

pub use buffers::{Buffers, RunBuffers, RunOptions, Stencil, StencilChunk};
pub use model::*;
#[cfg(feature = "std")]
pub use pool::{orphaned_pipelines, PipelinePool, PoolLimits, PoolSettings, PooledPipeline};

use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::event::{Event, TimingEvent};
use crate::stream::{Stream, StreamFlags};
use alloc::vec::Vec;

/// The most worker streams a [`Pipeline`] makes (a plan never uses more than 8 streams; more
/// would only hold CUDA resources).
pub const MAX_STREAMS: usize = 64;

/// One chunk's stage events: copy in starts, compute starts, copy out starts, copy out ends.
struct ChunkEvents([TimingEvent; 4]);

/// Stage times of one chunk of the last run, in milliseconds from the run's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkTimes {
    /// The stream index the chunk ran on (0 for the staged schedule, whose stages each have one).
    pub stream: usize,
    /// Copy in: start and end.
    pub copy_in: (f32, f32),
    /// Compute: start and end.
    pub compute: (f32, f32),
    /// Copy out: start and end.
    pub copy_out: (f32, f32),
}

/// The host link bandwidth [`Pipeline::plan_for`] assumes for one copy direction, in GB/s:
/// [`MachineModel::H200_PCIE5`]'s. Only the ratio of copy time to per-chunk cost depends on it,
/// and the best chunk count moves with its square root.
pub const ASSUMED_COPY_GB_PER_S: f64 = MachineModel::H200_PCIE5.copy_gb_per_s;

/// A pipeline's streams and events, reused across runs.
pub struct Pipeline {
    device: Device,
    streams: Vec<Stream>,
    fork: Event,
    joins: Vec<Event>,
    start: TimingEvent,
    chunks: Vec<ChunkEvents>,
    /// Without stage timing: each chunk's copy-in-done and compute-done events (timing disabled).
    sync: Vec<[Event; 2]>,
    timing: bool,
    last_timed: bool,
    last: Plan,
    machine: Machine,
}

impl Pipeline {
    /// A pipeline of `streams` non-blocking streams (at least three are made, for the staged
    /// schedule) on the current device. Reads `asyncEngineCount` (see [`Machine::engines_note`]).
    pub fn new(streams: usize) -> Result<Pipeline> {
        Pipeline::make(streams, None, "Pipeline::new")
    }

    /// As [`new`](Self::new), the worker streams at `priority` (lower numbers are higher
    /// priorities; outside [`Device::stream_priority_range`] is an error, see
    /// [`Stream::with_priority`]).
    pub fn with_priority(streams: usize, priority: i32) -> Result<Pipeline> {
        Pipeline::make(streams, Some(priority), "Pipeline::with_priority")
    }

    fn make(streams: usize, priority: Option<i32>, call: &'static str) -> Result<Pipeline> {
        if streams == 0 {
            return Err(Error::invalid(call, "zero streams"));
        }
        if streams > MAX_STREAMS {
            return Err(Error::invalid(call, "more streams than MAX_STREAMS"));
        }
        let streams = streams.max(3);
        let device = Device::current()?;
        let machine = MachineModel::H200_PCIE5.machine(device.async_engine_count()?);
        let new_stream = || match priority {
            Some(p) => Stream::with_priority(StreamFlags::NON_BLOCKING, p),
            None => Stream::new(),
        };
        let streams = (0..streams).map(|_| new_stream()).collect::<Result<Vec<_>>>()?;
        let joins = (0..streams.len()).map(|_| Event::new()).collect::<Result<Vec<_>>>()?;
        Ok(Pipeline {
            device,
            streams,
            fork: Event::new()?,
            joins,
            start: TimingEvent::new()?,
            chunks: Vec::new(),
            sync: Vec::new(),
            timing: false,
            last_timed: false,
            last: Plan { chunks: 0, schedule: Schedule::Staged },
            machine,
        })
    }

    /// The model's view of this device: its copy engines, and the figures of
    /// [`MachineModel::H200_PCIE5`] until [`set_machine`](Self::set_machine) changes them.
    pub fn machine(&self) -> Machine {
        self.machine
    }

    /// Replaces the model's machine figures (its `stage_timing` stays the pipeline's setting).
    pub fn set_machine(&mut self, machine: Machine) {
        self.machine = Machine { stage_timing: self.timing, ..machine };
    }

    /// The device the pipeline's streams belong to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether runs bracket each chunk's stages with timing events, for
    /// [`chunk_times`](Self::chunk_times) (off by default: they cost about 3% of a planned run on
    /// [`MachineModel::H200_PCIE5`], its `stage_timing_overhead_ms` a chunk). Off, a run records only the events the cross-stream waits need (two a
    /// chunk in the staged schedule, fewer for a [stencil](Self::run_stencil) with a halo; in round
    /// robin none, or one a chunk for a stencil with a halo over two or more streams), with timing
    /// disabled.
    pub fn set_stage_timing(&mut self, on: bool) {
        self.timing = on;
        self.machine.stage_timing = on;
    }

    /// See [`set_stage_timing`](Self::set_stage_timing).
    pub fn stage_timing(&self) -> bool {
        self.timing
    }

    /// Number of worker streams.
    pub fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// The plan [`choose_plan`] picks for copying `bytes_in` in and `bytes_out` out, in at most
    /// `max_chunks` chunks (pass the element count), on this pipeline's machine and streams. The
    /// copy times assume [`ASSUMED_COPY_GB_PER_S`]; the compute is assumed not to be the slowest
    /// stage (its time is unknown before it runs), so the plan balances the fill of the copies
    /// against the per-chunk cost. Round-robin plans use at most the pipeline's streams.
    pub fn plan_for(&self, bytes_in: usize, bytes_out: usize, max_chunks: usize) -> Plan {
        let ms = |bytes: usize| bytes as f64 / (ASSUMED_COPY_GB_PER_S * 1e6);
        let times = StageTimes { copy_in_ms: ms(bytes_in), compute_ms: 0.0, copy_out_ms: ms(bytes_out) };
        let plan = choose_plan(times, &self.machine, max_chunks);
        match plan.schedule {
            Schedule::RoundRobin { streams } if streams > self.streams.len() => {
                Plan { chunks: plan.chunks, schedule: Schedule::RoundRobin { streams: self.streams.len() } }
            }
            _ => plan,
        }
    }

    /// Whether a worker stream is part of an open capture. After a run whose `main` stream was
    /// capturing, the workers stay in that capture until it ends (`cudaStreamEndCapture`): work
    /// enqueued on them meanwhile would join it, so a pipeline shared between callers must not run
    /// then for anyone else.
    pub fn in_capture(&self) -> Result<bool> {
        for s in &self.streams {
            if !matches!(s.as_stream().capture_status()?, crate::graph::CaptureStatus::None) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Each chunk's stage times in the last run, from its start (after it has completed).
    /// An error if the last run had [stage timing](Self::set_stage_timing) off.
    pub fn chunk_times(&self) -> Result<Vec<ChunkTimes>> {
        if !self.last_timed && self.last.chunks > 0 {
            return Err(Error::usage(
                UsageKind::InvalidArgument,
                "Pipeline::chunk_times",
                "the last run had stage timing off",
            ));
        }
        let mut out = Vec::with_capacity(self.last.chunks);
        for i in 0..self.last.chunks {
            let ev = &self.chunks[i].0;
            let t = |e: &TimingEvent| e.elapsed_ms_since(&self.start);
            out.push(ChunkTimes {
                stream: self.last.stage_streams(i)[0],
                copy_in: (t(&ev[0])?, t(&ev[1])?),
                compute: (t(&ev[1])?, t(&ev[2])?),
                copy_out: (t(&ev[2])?, t(&ev[3])?),
            });
        }
        Ok(out)
    }
}
