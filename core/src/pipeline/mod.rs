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
//! Nothing synchronises: the caller's stream forks to the worker streams and joins back through
//! events, so the whole pipeline can be captured into a graph too. By default a run records only
//! the events the cross-stream waits need; [`Pipeline::set_stage_timing`] adds timing events around
//! each stage, so that the caller can read each chunk's stage times afterwards.
//!
//! The model that plans the chunk count ([`predict_ms`], [`choose_plan`]) is in `pipeline/model.rs`;
//! its items are re-exported here.

mod model;

pub use model::*;

use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::event::{Event, TimingEvent};
use crate::memory::{copy, order, DeviceBuffer, DeviceCopy, DeviceSliceMut, MemPoolRef, PinnedSlice, PinnedSliceMut};
use crate::stream::{Stream, StreamFlags, StreamRef};
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

/// The four buffers of a pipeline run, all of one length: host input, its device copy, the device
/// output, and the host output.
pub struct Buffers<'a, T, U> {
    /// Pinned host input.
    pub input: PinnedSlice<'a, T>,
    /// Device memory the input is copied into.
    pub dev_in: DeviceSliceMut<'a, T>,
    /// Device memory the compute writes.
    pub dev_out: DeviceSliceMut<'a, U>,
    /// Pinned host output.
    pub output: PinnedSliceMut<'a, U>,
}

/// The buffers of [`Pipeline::run_with`]: the host ones, and the device ones where the caller has
/// them (`None`: the run allocates a temporary of the input's length, see [`RunOptions::pool`]).
pub struct RunBuffers<'a, T, U> {
    /// Pinned host input.
    pub input: PinnedSlice<'a, T>,
    /// Device memory the input is copied into, or `None` for a temporary.
    pub dev_in: Option<DeviceSliceMut<'a, T>>,
    /// Device memory the compute writes, or `None` for a temporary.
    pub dev_out: Option<DeviceSliceMut<'a, U>>,
    /// Pinned host output.
    pub output: PinnedSliceMut<'a, U>,
}

/// How [`Pipeline::run_with`] cuts and allocates.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'p> {
    /// Values of `T` (and of `U`) that make one element: chunks are cut at element boundaries only,
    /// so the compute callback always sees whole elements (1: every value is an element). A run
    /// of bytes with `record_len` 12 moves 12-byte elements.
    pub record_len: usize,
    /// The pool device temporaries come from (`cudaMallocFromPoolAsync` on the caller's stream);
    /// `None`: the device's current pool (`cudaMallocAsync`). Temporaries are freed on the caller's
    /// stream after the run's join, so their memory returns to the pool stream-ordered.
    pub pool: Option<MemPoolRef<'p>>,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions { record_len: 1, pool: None }
    }
}

/// The host link bandwidth [`Pipeline::plan_for`] assumes for one copy direction, in GB/s (an
/// H200 over PCIe Gen5, measured: 55 GB/s). Only the ratio of copy time to per-chunk cost depends
/// on it, and the best chunk count moves with its square root.
pub const ASSUMED_COPY_GB_PER_S: f64 = 55.0;

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
        let machine = Machine {
            copy_engines: device.async_engine_count()?,
            duplex: 1.83,
            chunk_overhead_ms: 0.0055,
            stage_timing_overhead_ms: 0.010,
            stage_timing: false,
        };
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

    /// The model's view of this device (copy engines; duplex and per-chunk cost defaults measured
    /// on an H200: change them with [`set_machine`](Self::set_machine)).
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
    /// [`chunk_times`](Self::chunk_times) (off by default: they cost about 3% of a planned run,
    /// measured on an H200). Off, a run records only the events the cross-stream waits need (two a
    /// chunk in the staged schedule, none in round robin), with timing disabled.
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

    /// Runs `plan` enqueued from `main`: worker streams wait on `main`; each chunk is copied from
    /// `buffers.input` into `dev_in`, `compute(stream, in, out)` runs on the chunk's views of
    /// `dev_in` and `dev_out`, and `dev_out` is copied out to `output`, on the streams the plan's
    /// schedule says; then `main` waits for every worker. Returns at once; synchronise `main` (or
    /// wait on it) before reading `output` or [`chunk_times`](Self::chunk_times).
    ///
    /// # Errors
    /// On every path out, errors included (a failing `compute` callback, copy or event call; a
    /// panic in `compute`, joined while it unwinds), the
    /// worker streams that took part are joined back to `main` before the first error is returned:
    /// once `main` has passed the point of the call, nothing the run enqueued is still running, so
    /// the caller may reuse the buffers after synchronising `main`, as after a success. Only when a
    /// join itself fails (its event record or `main`'s wait) is that worker stream synchronised
    /// instead, on the calling thread: the last resort, taken on that error path alone. Chunks
    /// after the failing one are not enqueued; `output` then holds the chunks copied out before
    /// it, and [`chunk_times`](Self::chunk_times) has none.
    ///
    /// # Device buffers of other streams
    /// When `dev_in` or `dev_out` belongs to a buffer of another stream than `main` (its view's
    /// [`origin`](DeviceSliceMut::origin)), the run is ordered after that stream's queued work
    /// (the allocation, earlier writes) and that stream after the run (so the buffer's free
    /// follows it): one event each way, only where the streams differ, and not while `main`
    /// captures (the capture's contract then covers the buffers at every replay).
    ///
    /// # Safety
    /// As the asynchronous copies: the four buffers stay allocated, and the host ones untouched,
    /// until `main` has passed the pipeline's work; device views without an origin (made by
    /// `from_raw_parts`) are also ordered by the caller against whatever else uses their memory.
    pub unsafe fn run<T, U, F>(
        &mut self,
        main: StreamRef<'_>,
        buffers: Buffers<'_, T, U>,
        plan: Plan,
        compute: F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>) -> Result<()>,
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.run_records(main, buffers, 1, plan, compute) }
    }

    /// As [`run`](Self::run), with device temporaries where `buffers` has no device buffer and
    /// elements of [`RunOptions::record_len`] values: the temporaries are allocated on `main`
    /// (from [`RunOptions::pool`], or the device's current pool) before the run and freed on
    /// `main` after its join, on every path out; while `main` captures, both become nodes of the
    /// caller's graph (allocated and freed at every replay). The buffers' length must be a multiple
    /// of `record_len`, and `plan.chunks` at most the element count.
    ///
    /// # Safety
    /// As [`run`](Self::run).
    pub unsafe fn run_with<T, U, F>(
        &mut self,
        main: StreamRef<'_>,
        buffers: RunBuffers<'_, T, U>,
        plan: Plan,
        options: RunOptions<'_>,
        compute: F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>) -> Result<()>,
    {
        let RunBuffers { input, dev_in, dev_out, output } = buffers;
        let len = input.len();
        let lens =
            [len, dev_in.as_ref().map_or(len, |d| d.len()), dev_out.as_ref().map_or(len, |d| d.len()), output.len()];
        check_run_records(lens, options.record_len, plan.chunks)?;
        // Dropped after the run (declared first), each freed on `main` after the join.
        let mut tmp_in: Option<DeviceBuffer<'_, T>> = None;
        let mut tmp_out: Option<DeviceBuffer<'_, U>> = None;
        let dev_in = match dev_in {
            Some(d) => d,
            None => tmp_in.insert(DeviceBuffer::alloc_in_async(len, options.pool, main)?).as_mut_slice(),
        };
        let dev_out = match dev_out {
            Some(d) => d,
            None => tmp_out.insert(DeviceBuffer::alloc_in_async(len, options.pool, main)?).as_mut_slice(),
        };
        // SAFETY: the caller's contract, passed on; the temporaries outlive the run's work on `main`.
        unsafe { self.run_records(main, Buffers { input, dev_in, dev_out, output }, options.record_len, plan, compute) }
    }

    unsafe fn run_records<T, U, F>(
        &mut self,
        main: StreamRef<'_>,
        buffers: Buffers<'_, T, U>,
        record_len: usize,
        plan: Plan,
        mut compute: F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>) -> Result<()>,
    {
        const CALL: &str = "Pipeline::run";
        let Buffers { input, dev_in, dev_out, output } = buffers;
        let chunks = plan.chunks;
        check_run_records([input.len(), dev_in.len(), dev_out.len(), output.len()], record_len, chunks)?;
        if plan.streams() > self.streams.len() {
            return Err(Error::invalid(CALL, "the plan needs more streams than the pipeline has"));
        }
        // While `main` captures, any query of it (its device included) fails and invalidates the
        // capture, in every capture mode (measured, CUDA 13.0): the device check is skipped then.
        let capturing = !matches!(main.capture_status()?, crate::graph::CaptureStatus::None);
        match if capturing { Ok(self.device) } else { main.device() } {
            Ok(d) if d != self.device => {
                return Err(Error::usage(
                    UsageKind::InvalidArgument,
                    CALL,
                    "the stream belongs to another device than the pipeline",
                ))
            }
            Ok(_) => {}
            Err(e) if e.cuda_code() == Some(crate::sys::cudaError::cudaErrorNotSupported) => {}
            Err(e) => return Err(e),
        }
        let timing = self.timing;
        while timing && self.chunks.len() < chunks {
            self.chunks.push(ChunkEvents([
                TimingEvent::new()?,
                TimingEvent::new()?,
                TimingEvent::new()?,
                TimingEvent::new()?,
            ]));
        }
        while !timing && self.sync.len() < chunks {
            self.sync.push([Event::new()?, Event::new()?]);
        }
        let used = match plan.schedule {
            Schedule::Staged => 3,
            Schedule::RoundRobin { streams } => streams.min(chunks).max(1),
        };
        // Nothing is enqueued on a worker before the fork is recorded: an error up to here needs no join.
        self.last = Plan { chunks: 0, schedule: plan.schedule };
        self.last_timed = timing;
        // Inside a capture the run becomes graph nodes, replayed later: the capture's contract
        // keeps the buffers valid at every replay, and an event of the origin stream cannot be
        // waited on inside the capture anyway. No ordering with the origins is added there.
        let origins = if capturing { [None, None] } else { [dev_in.origin(), dev_out.origin()] };
        for origin in origins {
            order::after_origin(origin, main)?;
        }
        self.start.record(main)?;
        self.fork.record(main)?;
        // From here the workers may hold work of the run: the guard joins them back to `main`
        // (and the device buffers' streams after `main`, for their frees) on every path out,
        // an error or a panic in `compute` included.
        let joiner = RunJoin { pipeline: &*self, main, used, origins, armed: true };
        let mut result = self.streams[..used].iter().try_for_each(|s| s.wait_event(&self.fork));
        if result.is_ok() {
            // SAFETY: the caller's contract, passed on.
            result = unsafe {
                self.enqueue_chunks(plan, used, record_len, Buffers { input, dev_in, dev_out, output }, &mut compute)
            };
        }
        let result = result.and(joiner.finish());
        if result.is_ok() {
            self.last = plan;
        }
        result
    }

    /// Enqueues every chunk of `plan` on the first `used` worker streams (already forked from
    /// `main`), cut at multiples of `record_len` values; stops at the first error.
    ///
    /// # Safety
    /// As [`run`](Self::run).
    unsafe fn enqueue_chunks<T, U, F>(
        &self,
        plan: Plan,
        used: usize,
        record_len: usize,
        buffers: Buffers<'_, T, U>,
        compute: &mut F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>) -> Result<()>,
    {
        let Buffers { input, mut dev_in, mut dev_out, mut output } = buffers;
        let (records, chunks, timing) = (input.len() / record_len, plan.chunks, self.timing);
        for i in 0..chunks {
            let r = chunk_range(records, chunks, i);
            // Within the checked length: end * record_len <= records * record_len = len.
            let r = r.start * record_len..r.end * record_len;
            let (s_in, s_compute, s_out) = match plan.schedule {
                Schedule::Staged => {
                    (self.streams[0].as_stream(), self.streams[1].as_stream(), self.streams[2].as_stream())
                }
                Schedule::RoundRobin { .. } => {
                    let s = self.streams[i % used].as_stream();
                    (s, s, s)
                }
            };
            let (in_done, compute_done): (&Event, &Event) = if timing {
                (&self.chunks[i].0[1], &self.chunks[i].0[2])
            } else {
                (&self.sync[i][0], &self.sync[i][1])
            };
            if timing {
                self.chunks[i].0[0].record(s_in)?;
            }
            // SAFETY: ranges inside the checked lengths; lifetimes owed by the caller.
            unsafe { copy::h2d_async(dev_in.reborrow().slice_mut(r.clone())?, input.slice(r.clone())?, s_in)? };
            if timing || s_compute != s_in {
                in_done.record(s_in)?;
            }
            if s_compute != s_in {
                s_compute.wait_event(in_done)?;
            }
            compute(s_compute, dev_in.reborrow().slice_mut(r.clone())?, dev_out.reborrow().slice_mut(r.clone())?)?;
            if timing || s_out != s_compute {
                compute_done.record(s_compute)?;
            }
            if s_out != s_compute {
                s_out.wait_event(compute_done)?;
            }
            // SAFETY: as above.
            unsafe { copy::d2h_async(output.reborrow().slice_mut(r.clone())?, dev_out.as_slice().slice(r)?, s_out)? };
            if timing {
                self.chunks[i].0[3].record(s_out)?;
            }
        }
        Ok(())
    }

    /// Makes `main` wait for each of the first `used` worker streams; a worker whose join fails is
    /// synchronised instead (error path only). Returns the first error.
    fn join(&self, main: StreamRef<'_>, used: usize) -> Result<()> {
        let mut first = Ok(());
        for (s, join) in self.streams[..used].iter().zip(&self.joins) {
            if let Err(e) = join.record(s.as_stream()).and_then(|()| main.wait_event(join)) {
                // `main` cannot be ordered after this worker: wait for the worker here, so that
                // nothing of the run is still running once `main` has passed it. Should this fail
                // too, the join's error is the one returned.
                let _ = s.synchronize();
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
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
                stream: match self.last.schedule {
                    Schedule::Staged => 0,
                    Schedule::RoundRobin { streams } => i % streams.min(self.last.chunks).max(1),
                },
                copy_in: (t(&ev[0])?, t(&ev[1])?),
                compute: (t(&ev[1])?, t(&ev[2])?),
                copy_out: (t(&ev[2])?, t(&ev[3])?),
            });
        }
        Ok(out)
    }
}

/// Joins a run's worker streams back to `main`, then orders the device buffers' own streams after
/// `main`: by [`finish`](Self::finish) on the normal and error paths, by `Drop` while a panic in
/// the compute callback unwinds (errors met then go to
/// [`take_drop_errors`](crate::error::take_drop_errors)).
struct RunJoin<'p, 'm, 'b> {
    pipeline: &'p Pipeline,
    main: StreamRef<'m>,
    used: usize,
    origins: [Option<StreamRef<'b>>; 2],
    armed: bool,
}

impl RunJoin<'_, '_, '_> {
    fn join(&mut self) -> Result<()> {
        self.armed = false;
        let mut result = self.pipeline.join(self.main, self.used);
        for origin in self.origins {
            result = result.and(order::origin_after(origin, self.main));
        }
        result
    }

    fn finish(mut self) -> Result<()> {
        self.join()
    }
}

impl Drop for RunJoin<'_, '_, '_> {
    fn drop(&mut self) {
        if self.armed {
            if let Err(e) = self.join() {
                crate::error::record_drop_error_value(e);
            }
        }
    }
}
