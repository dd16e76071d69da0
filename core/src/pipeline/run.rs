//! A pipeline's runs ([`Pipeline::run`], [`Pipeline::run_with`], [`Pipeline::run_stencil`]): the
//! cut of the buffers into chunks, the fork from the caller's stream, the chunks enqueued on the
//! worker streams, and the join back on every path out ([`RunJoin`]).

use super::{check_run_records, chunk_range, enqueue_steps, stencil_window, StencilChunk, StencilWindow, Step};
use super::{check_stencil, Buffers, ChunkEvents, Pipeline, Plan, RunBuffers, RunOptions, Stencil};
use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::event::{Event, TimingEvent};
use crate::memory::{copy, order, DeviceBuffer, DeviceCopy, DeviceSliceMut, MemPoolRef};
use crate::stream::StreamRef;

/// `given`, or else a temporary of `len` elements allocated on `main` into `tmp`, which the caller
/// declares before the run and so drops after it: freed on `main` after the run's join. The
/// temporary comes from `pool`, or else from ordo's pool of `device` (the pipeline's), which
/// keeps its memory mapped between runs ([`temporaries`](crate::memory::temporaries)); without
/// the `std` feature, from the device's current pool.
fn given_or_temporary<'t, 's, T: DeviceCopy>(
    given: Option<DeviceSliceMut<'t, T>>,
    tmp: &'t mut Option<DeviceBuffer<'s, T>>,
    len: usize,
    pool: Option<MemPoolRef<'_>>,
    device: Device,
    main: StreamRef<'s>,
) -> Result<DeviceSliceMut<'t, T>> {
    match given {
        Some(d) => Ok(d),
        None => Ok(tmp.insert(temporary(len, pool, device, main)?).as_mut_slice()),
    }
}

#[cfg(feature = "std")]
fn temporary<'s, T: DeviceCopy>(
    len: usize,
    pool: Option<MemPoolRef<'_>>,
    device: Device,
    main: StreamRef<'s>,
) -> Result<DeviceBuffer<'s, T>> {
    let pool = match pool {
        Some(pool) => pool,
        None => crate::memory::temporaries::pool(device)?,
    };
    DeviceBuffer::alloc_from_pool_async(len, pool, main)
}

#[cfg(not(feature = "std"))]
fn temporary<'s, T: DeviceCopy>(
    len: usize,
    pool: Option<MemPoolRef<'_>>,
    _device: Device,
    main: StreamRef<'s>,
) -> Result<DeviceBuffer<'s, T>> {
    DeviceBuffer::alloc_in_async(len, pool, main)
}

/// How a run cuts its buffers: values a record on each side, and the halo in records.
#[derive(Clone, Copy)]
struct Cut {
    in_len: usize,
    out_len: usize,
    halo: usize,
}

impl Pipeline {
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
    /// `compute` enqueues the work that touches its chunk on the stream it is given: the run's
    /// waits and joins order that stream alone, so work it put on another stream would race the
    /// copies.
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
    /// (from [`RunOptions::pool`], or ordo's pool of the device) before the run and freed on
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
        let (mut tmp_in, mut tmp_out) = (None, None);
        let dev_in = given_or_temporary(dev_in, &mut tmp_in, len, options.pool, self.device, main)?;
        let dev_out = given_or_temporary(dev_out, &mut tmp_out, len, options.pool, self.device, main)?;
        // SAFETY: the caller's contract, passed on; the temporaries outlive the run's work on `main`.
        unsafe { self.run_records(main, Buffers { input, dev_in, dev_out, output }, options.record_len, plan, compute) }
    }

    /// Runs `plan` over records of a stencil: chunk `i` copies in the input records (rows) it
    /// writes, and its compute reads them together with `stencil.halo` records before and after
    /// (fewer at the frame's edges), through a shared view: the [`StencilChunk`] it gets. The
    /// input holds `records * in_record_len` values and the output `records * out_record_len`,
    /// so a compute may write fewer (or more) values a record than it reads; `None` device
    /// buffers are temporaries of those lengths, allocated and freed as in
    /// [`run_with`](Self::run_with) (from [`Stencil::pool`]).
    ///
    /// Each input record is copied in once, by its own chunk. Chunk `i`'s compute waits for the
    /// copy-in of every chunk whose records it reads: in the staged schedule (copy-ins in order
    /// on one stream) one wait, for the last of them; in round robin one wait for each of them on
    /// another stream. So a copy-in may be enqueued ahead of earlier chunks' computes, and in
    /// round robin each chunk records its copy-in event (with a halo and two or more streams).
    /// With a halo of 0 and equal record lengths a run enqueues exactly what
    /// [`run_with`](Self::run_with) does.
    ///
    /// Refused before anything is enqueued (see [`check_stencil`]): a zero record length, an
    /// input and its device buffer (or an output and its device buffer) of different lengths, an
    /// input that is not a whole number of records, an output that does not hold
    /// `out_record_len` values for each of them, zero chunks or more chunks than records.
    ///
    /// # Errors
    /// As [`run`](Self::run): the worker streams are joined back to `main` on every path out.
    ///
    /// # Safety
    /// As [`run`](Self::run); and `compute` reads the input only through its chunk's `input`
    /// and writes only its chunk's `output` (other chunks' computes read the same input records,
    /// possibly at the same time).
    pub unsafe fn run_stencil<T, U, F>(
        &mut self,
        main: StreamRef<'_>,
        buffers: RunBuffers<'_, T, U>,
        plan: Plan,
        stencil: Stencil<'_>,
        mut compute: F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, StencilChunk<'_, T, U>) -> Result<()>,
    {
        let RunBuffers { input, dev_in, dev_out, output } = buffers;
        let (in_len, out_len) = (input.len(), output.len());
        let lens = [
            in_len,
            dev_in.as_ref().map_or(in_len, |d| d.len()),
            dev_out.as_ref().map_or(out_len, |d| d.len()),
            out_len,
        ];
        check_stencil(lens, stencil.in_record_len, stencil.out_record_len, plan.chunks)?;
        // Dropped after the run (declared first), each freed on `main` after the join.
        let (mut tmp_in, mut tmp_out) = (None, None);
        let dev_in = given_or_temporary(dev_in, &mut tmp_in, in_len, stencil.pool, self.device, main)?;
        let dev_out = given_or_temporary(dev_out, &mut tmp_out, out_len, stencil.pool, self.device, main)?;
        let cut = Cut { in_len: stencil.in_record_len, out_len: stencil.out_record_len, halo: stencil.halo };
        let chunk = |s: StreamRef<'_>, din: DeviceSliceMut<'_, T>, dout: DeviceSliceMut<'_, U>, w: &StencilWindow| {
            // Within the checked lengths: reads.end * in_len <= records * in_len (the input's
            // length), rows.end * out_len <= records * out_len (the output's).
            let input = din.as_slice().slice(w.reads.start * cut.in_len..w.reads.end * cut.in_len)?;
            let output = dout.slice_mut(w.rows.start * cut.out_len..w.rows.end * cut.out_len)?;
            let (before, after) = (w.rows.start - w.reads.start, w.reads.end - w.rows.end);
            compute(s, StencilChunk { input, before, after, first_row: w.rows.start, rows: w.rows.len(), output })
        };
        let buffers = Buffers { input, dev_in, dev_out, output };
        // SAFETY: the caller's contract, passed on; the temporaries outlive the run's work on `main`.
        unsafe { self.run_cut(main, buffers, cut, plan, "Pipeline::run_stencil", chunk) }
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
        let lens = [buffers.input.len(), buffers.dev_in.len(), buffers.dev_out.len(), buffers.output.len()];
        check_run_records(lens, record_len, plan.chunks)?;
        // The halo-0 case of a stencil: each compute gets exclusive views of its own records.
        let chunk = |s: StreamRef<'_>, din: DeviceSliceMut<'_, T>, dout: DeviceSliceMut<'_, U>, w: &StencilWindow| {
            // Within the checked length: rows.end * record_len <= records * record_len = len.
            let r = w.rows.start * record_len..w.rows.end * record_len;
            compute(s, din.slice_mut(r.clone())?, dout.slice_mut(r)?)
        };
        let cut = Cut { in_len: record_len, out_len: record_len, halo: 0 };
        // SAFETY: the caller's contract, passed on.
        unsafe { self.run_cut(main, buffers, cut, plan, "Pipeline::run", chunk) }
    }

    /// The run both [`run_records`](Self::run_records) and [`run_stencil`](Self::run_stencil)
    /// make, on buffers whose lengths they have checked against `cut` and `plan.chunks`.
    ///
    /// # Safety
    /// As [`run`](Self::run).
    unsafe fn run_cut<T, U, F>(
        &mut self,
        main: StreamRef<'_>,
        buffers: Buffers<'_, T, U>,
        cut: Cut,
        plan: Plan,
        call: &'static str,
        mut chunk: F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>, &StencilWindow) -> Result<()>,
    {
        let Buffers { input, dev_in, dev_out, output } = buffers;
        let chunks = plan.chunks;
        if plan.streams() > self.streams.len() {
            return Err(Error::invalid(call, "the plan needs more streams than the pipeline has"));
        }
        // While `main` captures, any query of it (its device included) fails and invalidates the
        // capture, in every capture mode (CB-05): the device check is skipped then.
        let capturing = !matches!(main.capture_status()?, crate::graph::CaptureStatus::None);
        match if capturing { Ok(self.device) } else { main.device() } {
            Ok(d) if d != self.device => {
                return Err(Error::usage(
                    UsageKind::InvalidArgument,
                    call,
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
        let used = plan.workers();
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
            result = unsafe { self.enqueue_chunks(plan, cut, Buffers { input, dev_in, dev_out, output }, &mut chunk) };
        }
        let result = result.and(joiner.finish());
        if result.is_ok() {
            self.last = plan;
        }
        result
    }

    /// Chunk `i`'s copy-in-done and compute-done events.
    fn done_events(&self, i: usize) -> (&Event, &Event) {
        if self.timing {
            (&self.chunks[i].0[1], &self.chunks[i].0[2])
        } else {
            (&self.sync[i][0], &self.sync[i][1])
        }
    }

    /// Enqueues every chunk of `plan` on its worker streams (already forked from `main`), cut
    /// into records as `cut` says, in the order of [`enqueue_steps`]; stops at the first error.
    /// `chunk` enqueues a chunk's compute, given the whole device buffers and the chunk's
    /// [`StencilWindow`].
    ///
    /// Before chunk `i`'s compute, the copy-ins of every chunk up to the last one it reads are
    /// out, each with its copy-in event recorded where a compute on another stream waits for it;
    /// then the compute stream waits for those on other streams. `cudaStreamWaitEvent` waits for
    /// an event's most recent record at the time of the call, so each wait refers to a record
    /// this run has already enqueued: every dependency points from work enqueued earlier to work
    /// enqueued later, and the streams cannot wait on each other in a cycle (no deadlock). No input
    /// record is written after a compute that reads it: each is copied in once, and every compute
    /// that reads it waits for that copy.
    ///
    /// # Safety
    /// As [`run`](Self::run).
    unsafe fn enqueue_chunks<T, U, F>(
        &self,
        plan: Plan,
        cut: Cut,
        buffers: Buffers<'_, T, U>,
        chunk: &mut F,
    ) -> Result<()>
    where
        T: DeviceCopy,
        U: DeviceCopy,
        F: FnMut(StreamRef<'_>, DeviceSliceMut<'_, T>, DeviceSliceMut<'_, U>, &StencilWindow) -> Result<()>,
    {
        let Buffers { input, mut dev_in, mut dev_out, mut output } = buffers;
        let (records, timing) = (input.len() / cut.in_len, self.timing);
        let streams = |i: usize| plan.stage_streams(i).map(|k| self.streams[k].as_stream());
        for step in enqueue_steps(plan, records, cut.halo) {
            match step {
                Step::CopyIn { chunk: j, record } => {
                    let [s_in, _, _] = streams(j);
                    let r = chunk_range(records, plan.chunks, j);
                    // Within the checked length: end * in_len <= records * in_len = the input's length.
                    let r = r.start * cut.in_len..r.end * cut.in_len;
                    if timing {
                        self.chunks[j].0[0].record(s_in)?;
                    }
                    // SAFETY: ranges inside the checked lengths; lifetimes owed by the caller.
                    unsafe { copy::h2d_async(dev_in.reborrow().slice_mut(r.clone())?, input.slice(r)?, s_in)? };
                    if timing || record {
                        self.done_events(j).0.record(s_in)?;
                    }
                }
                Step::Wait { chunk: i, on } => streams(i)[1].wait_event(self.done_events(on).0)?,
                Step::Compute { chunk: i } => {
                    let [_, s_compute, s_out] = streams(i);
                    let w = stencil_window(records, plan.chunks, cut.halo, i);
                    chunk(s_compute, dev_in.reborrow(), dev_out.reborrow(), &w)?;
                    let compute_done = self.done_events(i).1;
                    if timing || s_out != s_compute {
                        compute_done.record(s_compute)?;
                    }
                    if s_out != s_compute {
                        s_out.wait_event(compute_done)?;
                    }
                    // Within the checked length: end * out_len <= records * out_len = the output's length.
                    let r = w.rows.start * cut.out_len..w.rows.end * cut.out_len;
                    // SAFETY: as above.
                    unsafe {
                        copy::d2h_async(output.reborrow().slice_mut(r.clone())?, dev_out.as_slice().slice(r)?, s_out)?
                    };
                    if timing {
                        self.chunks[i].0[3].record(s_out)?;
                    }
                }
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
