//! The measures, each a [`Measure`] whose variants are launch paths or modes, sampled by the
//! runner in interleaved rounds, and turned into report rows:
//!
//! - `submit`: host time of one launch: `submit_launches` launches queued behind the blocking kernel
//!   (so that the GPU's pace cannot slow the host), timed on the host, divided;
//! - `sync`: host time of one launch and `cudaStreamSynchronize`;
//! - `cold`: nvbench's cold measurement: the L2 flushed (a `cudaMemsetAsync` of a buffer the size of
//!   L2) and the stream synchronised, the blocking kernel, the start stamp, event, the launch,
//!   event, the stop stamp, the release; GPU time from the events, CPU time of the whole sample;
//! - `hot`: a batch of launches queued behind the blocking kernel, back to back, GPU time from
//!   events over the batch (nvbench's batch measurement, with the whole batch queued: the engine's
//!   launches never synchronise, so the deadlock nvbench guards against by queueing two cannot
//!   happen here);
//! - `gaps`: sequences of `launches` launches (of one kernel, or A B A B ...), eager (as fast as the
//!   host submits), queued behind the blocking kernel, and replayed from a graph; without PDL, and
//!   with PDL from the second launch on where the kernel can; the gap, release and span of each
//!   sequence from stamps (each sample's figure is the median over its boundaries), and the
//!   period from events (the sequence's GPU time over its launches).
//!
//! Every GPU-timed sample carries the SM-clock reading of two timestamps kernels around it.

use super::harness::Instruments;
use super::launch::{CuLaunchKernelExFn, LaunchSlot, Path, Target};
use super::{invalid, no_pdl_note, Engine, PdlSupport, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Sample, Series};
use crate::stamps::{self, KernelTimes, Sequence};
use ordo_cuda_core::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{sys, Result, SharedStreamBuffer, StreamRef, TimingEvent};
use std::time::Instant;

/// What every measure uses of the engine.
#[derive(Clone, Copy)]
struct Bench<'a> {
    stream: StreamRef<'a>,
    inst: &'a Instruments,
    start: &'a TimingEvent,
    stop: &'a TimingEvent,
    driver: Option<CuLaunchKernelExFn>,
    /// The L2-sized buffer: pointer and bytes.
    l2: Option<(*mut u8, usize)>,
}

impl Bench<'_> {
    /// Writes the whole L2-sized buffer (nvbench's `l2flush`).
    fn flush_l2(&self) -> Result<()> {
        if let Some((p, bytes)) = self.l2 {
            // SAFETY: the engine's buffer of `bytes`, alive while the engine is.
            let code = unsafe { sys::cudaMemsetAsync(p.cast(), 0, bytes, self.stream.as_raw()) };
            ordo_cuda_core::error::check(code, "cudaMemsetAsync")?;
        }
        Ok(())
    }

    /// GPU seconds between the start and stop events (after they completed).
    fn event_seconds(&self) -> Result<f64> {
        Ok(f64::from(self.stop.elapsed_ms_since(self.start)?) / 1e3)
    }
}

/// Stamp slots for launches outside gap sequences (self-stamping kernels write there).
struct Scratch(SharedStreamBuffer<u64>);

impl Scratch {
    fn for_blocks(engine: &Engine, blocks: u64) -> Result<Scratch> {
        let n =
            usize::try_from(blocks).ok().and_then(|b| b.checked_mul(3)).ok_or_else(|| invalid("a grid too large"))?;
        Ok(Scratch(SharedStreamBuffer::zeroed_async(n.max(3), &engine.stream)?))
    }

    fn slot(&mut self, index: usize) -> LaunchSlot {
        LaunchSlot { index: index as u32, stamps: self.0.as_mut_ptr() }
    }
}

/// A variant's name, what it is compared with, and its metrics' names.
struct VariantInfo {
    name: String,
    baseline: Option<String>,
    metrics: Vec<String>,
}

/// Report rows of `series` (one a variant of `infos`): the median's ratio to the baseline
/// variant's median of the same metric.
fn to_rows(kernel: &str, measure: &str, infos: &[VariantInfo], series: &[Series], note: &str) -> Vec<Row> {
    let median_of = |variant: &str, metric: &str| -> Option<f64> {
        let i = infos.iter().position(|v| v.name == variant)?;
        let m = infos[i].metrics.iter().position(|x| x == metric)?;
        Some(series.get(i)?.summary(m).median)
    };
    let mut rows = Vec::new();
    for (info, s) in infos.iter().zip(series) {
        for (m, metric) in info.metrics.iter().enumerate() {
            let summary = s.summary(m);
            let ratio = info
                .baseline
                .as_deref()
                .and_then(|b| median_of(b, metric))
                .map(|b| summary.median / b)
                .filter(|r| r.is_finite());
            rows.push(Row {
                kernel: kernel.to_owned(),
                axes: Vec::new(),
                measure: measure.to_owned(),
                metric: metric.clone(),
                variant: info.name.clone(),
                unit: "s".to_owned(),
                summary,
                dropped: s.dropped,
                clock_hz: s.mean_clock_hz(),
                baseline: info.baseline.clone(),
                ratio,
                converged: s.converged,
                warnings: s.warnings.clone(),
                note: note.to_owned(),
            });
        }
    }
    rows
}

/// The paths among `candidates` that launch `target` at all (one launch each, synchronised); a
/// sticky error ends the measurement, another drops the path with a note.
fn working_paths(
    b: Bench<'_>,
    target: &mut Target,
    scratch: &mut Scratch,
    candidates: &[Path],
    notes: &mut Vec<String>,
) -> Result<Vec<Path>> {
    let mut ok = Vec::new();
    for &path in candidates {
        if path == Path::Driver && b.driver.is_none() {
            notes.push("cuLaunchKernelEx: the driver has none".to_owned());
            continue;
        }
        // SAFETY: the scratch slots hold 3 u64 a block of the target, alive until synchronised.
        let r = unsafe { target.launch(b.driver, path, b.stream, false, scratch.slot(0)) }
            .and_then(|()| b.stream.synchronize());
        match r {
            Ok(()) => ok.push(path),
            Err(e) if !e.is_sticky() => notes.push(format!("{}: {e}", path.label())),
            Err(e) => return Err(e),
        }
    }
    if ok.is_empty() {
        return Err(invalid(format!("kernel {}: no launch path works ({})", target.name(), notes.join("; "))));
    }
    Ok(ok)
}

struct Submit<'a> {
    b: Bench<'a>,
    target: &'a mut Target,
    scratch: Scratch,
    paths: Vec<Path>,
    launches: usize,
}

impl Measure for Submit<'_> {
    fn variants(&self) -> usize {
        self.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let (b, path) = (self.b, self.paths[v]);
        b.stream.synchronize()?;
        let blocked = b.inst.block(b.stream)?;
        let t0 = Instant::now();
        for i in 0..self.launches {
            // SAFETY: as in `working_paths`.
            unsafe { self.target.launch(b.driver, path, b.stream, false, self.scratch.slot(i))? };
        }
        let dt = t0.elapsed().as_secs_f64();
        blocked.release();
        b.stream.synchronize()?;
        b.inst.check_block()?;
        Ok(Sample { values: vec![dt / self.launches as f64], elapsed: dt, clock: None })
    }
}

struct Sync<'a> {
    b: Bench<'a>,
    target: &'a mut Target,
    scratch: Scratch,
    paths: Vec<Path>,
}

impl Measure for Sync<'_> {
    fn variants(&self) -> usize {
        self.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let (b, path) = (self.b, self.paths[v]);
        b.stream.synchronize()?;
        let t0 = Instant::now();
        // SAFETY: as in `working_paths`.
        unsafe { self.target.launch(b.driver, path, b.stream, false, self.scratch.slot(0))? };
        b.stream.synchronize()?;
        Ok(Sample::duration(t0.elapsed().as_secs_f64()))
    }
}

/// Cold (one launch a sample, L2 flushed) or hot (a batch a sample).
struct Timed<'a> {
    b: Bench<'a>,
    target: &'a mut Target,
    scratch: Scratch,
    paths: Vec<Path>,
    /// Launches a sample: 1 for cold.
    batch: usize,
}

impl Timed<'_> {
    /// GPU seconds of one sample of `batch` launches by `path` (the L2 flushed first if `cold`),
    /// host seconds of the whole sample, and the clock reading.
    fn run(&mut self, path: Path, cold: bool) -> Result<(f64, f64, Option<crate::throttle::ClockReading>)> {
        let b = self.b;
        if cold {
            b.flush_l2()?;
        }
        b.stream.synchronize()?;
        let t0 = Instant::now();
        b.inst.reset_clock();
        let blocked = b.inst.block(b.stream)?;
        b.inst.clock_start(b.stream)?;
        b.start.record(b.stream)?;
        for i in 0..self.batch {
            // SAFETY: as in `working_paths`.
            unsafe { self.target.launch(b.driver, path, b.stream, false, self.scratch.slot(i))? };
        }
        b.stop.record(b.stream)?;
        b.inst.clock_stop(b.stream)?;
        blocked.release();
        b.stream.synchronize()?;
        b.inst.check_block()?;
        let cpu = t0.elapsed().as_secs_f64();
        Ok((b.event_seconds()?, cpu, b.inst.clock_reading()))
    }
}

impl Measure for Timed<'_> {
    fn variants(&self) -> usize {
        self.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let cold = self.batch == 1;
        let (gpu, cpu, clock) = self.run(self.paths[v], cold)?;
        let per = gpu / self.batch as f64;
        let values = if cold { vec![gpu, cpu] } else { vec![per] };
        Ok(Sample { values, elapsed: gpu, clock })
    }
}

/// How a gap sequence is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Eager,
    Queued,
    Graph,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Queued => "queued",
            Mode::Graph => "graph",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct GapVariant {
    mode: Mode,
    pdl: bool,
    path: Path,
}

impl GapVariant {
    fn name(self) -> String {
        format!("{}, {}, {}", self.mode.label(), if self.pdl { "PDL" } else { "no PDL" }, self.path.label())
    }
}

/// A sequence's layout: which subject and form each launch uses, and where its stamps go.
struct Layout {
    /// (subject: 0 = A, 1 = B; form index) a launch.
    forms: Vec<(usize, usize)>,
    /// Blocks a launch.
    blocks: Vec<usize>,
    /// First block slot a launch.
    offsets: Vec<usize>,
    /// Whether every form writes stamps.
    stamped: bool,
}

struct Gaps<'a> {
    b: Bench<'a>,
    subjects: Vec<&'a mut Subject>,
    variants: Vec<GapVariant>,
    layouts: [Option<Layout>; 2],
    stamps: SharedStreamBuffer<u64>,
    host: Vec<u64>,
    graphs: [Option<GraphExec>; 2],
    /// Whether the PDL forms record releases (A, B).
    releases: Vec<bool>,
}

impl Gaps<'_> {
    fn slot(&mut self, layout: usize, k: usize) -> LaunchSlot {
        let offset = self.layouts[layout].as_ref().map_or(0, |l| l.offsets[k]);
        LaunchSlot { index: k as u32, stamps: self.stamps.as_mut_ptr().wrapping_add(3 * offset) }
    }

    /// Enqueues the sequence's launches by `path` on `stream`.
    fn launch_all(&mut self, path: Path, stream: StreamRef<'_>, pdl: bool) -> Result<()> {
        let l = usize::from(pdl);
        let n = self.layouts[l].as_ref().map_or(0, |x| x.forms.len());
        for k in 0..n {
            let (s, f) = self.layouts[l].as_ref().map_or((0, 0), |x| x.forms[k]);
            let slot = self.slot(l, k);
            let driver = self.b.driver;
            // SAFETY: the slot is this launch's 3 u64 a block in `stamps`, alive as long as the
            // measure (graphs included: they are dropped with it, and replayed only by it).
            unsafe { self.subjects[s].forms[f].launch(driver, path, stream, pdl && k > 0, slot)? };
        }
        Ok(())
    }

    /// The stamps back to their initial values (entry and end 0, release `u64::MAX`).
    fn reset(&mut self, pdl: bool) -> Result<()> {
        let Some(l) = self.layouts[usize::from(pdl)].as_ref() else { return Ok(()) };
        if !l.stamped {
            return Ok(());
        }
        let blocks: usize = l.blocks.iter().sum();
        let s = self.b.stream;
        let slice = self.stamps.slice_mut(..3 * blocks)?;
        // SAFETY: the stamp buffer, alive until the engine synchronises after the sample.
        unsafe { copy::memset_async(slice, 0, s)? };
        let release = self.stamps.as_mut_ptr().wrapping_add(1);
        // SAFETY: every third word from the second: `blocks` rows of 8 bytes at a 24-byte pitch,
        // within the buffer.
        let code = unsafe { sys::cudaMemset2DAsync(release.cast(), 24, 0xff, 8, blocks, s.as_raw()) };
        ordo_cuda_core::error::check(code, "cudaMemset2DAsync")
    }

    /// The metrics a variant gives, in order.
    fn metrics(&self, v: GapVariant) -> Vec<String> {
        let stamped = self.layouts[usize::from(v.pdl)].as_ref().is_some_and(|l| l.stamped);
        let mut m = Vec::new();
        if stamped {
            let two = self.subjects.len() == 2;
            if two {
                m.extend(["gap A->B", "gap B->A"].map(String::from));
                if v.pdl && self.releases[1] {
                    m.push("release A->B".into());
                }
                if v.pdl && self.releases[0] {
                    m.push("release B->A".into());
                }
                m.extend(["span A", "span B"].map(String::from));
            } else {
                m.push("gap".into());
                if v.pdl && self.releases[0] {
                    m.push("release".into());
                }
                m.push("span".into());
            }
        }
        m.push("period".into());
        m
    }

    fn figures(&self, v: GapVariant, kernels: &[KernelTimes]) -> Result<Vec<f64>> {
        let ns = |x: f64| x / 1e9;
        let median = |v: &[f64]| ns(stamps::median(v));
        let mut out = Vec::new();
        let needs = |what: &str| invalid(format!("a PDL sequence recorded no {what}: the kernel's wait did not run"));
        if self.subjects.len() == 2 {
            let (ab, ba) = (Sequence::every(kernels, 2, 0), Sequence::every(kernels, 2, 1));
            out.push(median(&ab.gaps));
            out.push(median(&ba.gaps));
            if v.pdl && self.releases[1] {
                if ab.releases.is_empty() {
                    return Err(needs("release of B"));
                }
                out.push(median(&ab.releases));
            }
            if v.pdl && self.releases[0] {
                if ba.releases.is_empty() {
                    return Err(needs("release of A"));
                }
                out.push(median(&ba.releases));
            }
            out.push(median(&ab.spans));
            out.push(median(&ba.spans));
        } else {
            let s = Sequence::of(kernels);
            out.push(median(&s.gaps));
            if v.pdl && self.releases[0] {
                if s.releases.is_empty() {
                    return Err(needs("release"));
                }
                out.push(median(&s.releases));
            }
            out.push(median(&s.spans));
        }
        Ok(out)
    }
}

impl Measure for Gaps<'_> {
    fn variants(&self) -> usize {
        self.variants.len()
    }

    fn sample(&mut self, i: usize) -> Result<Sample> {
        let (b, v) = (self.b, self.variants[i]);
        let l = usize::from(v.pdl);
        let (n, stamped, total) = match &self.layouts[l] {
            Some(x) => (x.forms.len(), x.stamped, x.blocks.iter().sum::<usize>()),
            None => return Err(invalid("a gap variant without a sequence")),
        };
        b.stream.synchronize()?;
        self.reset(v.pdl)?;
        b.inst.reset_clock();
        let blocked = if v.mode == Mode::Queued { Some(b.inst.block(b.stream)?) } else { None };
        b.inst.clock_start(b.stream)?;
        b.start.record(b.stream)?;
        match v.mode {
            Mode::Graph => match &self.graphs[l] {
                Some(g) => g.launch(b.stream)?,
                None => return Err(invalid("a graph variant without its graph")),
            },
            Mode::Eager | Mode::Queued => self.launch_all(v.path, b.stream, v.pdl)?,
        }
        b.stop.record(b.stream)?;
        b.inst.clock_stop(b.stream)?;
        drop(blocked);
        b.stream.synchronize()?;
        b.inst.check_block()?;
        let gpu = b.event_seconds()?;
        let mut values = Vec::new();
        if stamped {
            let host = &mut self.host[..3 * total];
            copy::d2h_blocking(host, self.stamps.slice(..3 * total)?, b.stream)?;
            let blocks = self.layouts[l].as_ref().map(|x| x.blocks.clone()).unwrap_or_default();
            let kernels = stamps::reduce(host, &blocks).map_err(invalid)?;
            values = self.figures(v, &kernels)?;
        }
        values.push(gpu / n as f64);
        Ok(Sample { values, elapsed: gpu, clock: b.inst.clock_reading() })
    }
}

impl Engine {
    fn bench(&mut self) -> Bench<'_> {
        Bench {
            stream: self.stream.as_stream(),
            inst: &self.inst,
            start: &self.start,
            stop: &self.stop,
            driver: self.driver,
            l2: self.l2.as_mut().map(|b| (b.as_mut_ptr(), b.len())),
        }
    }

    /// Host submit latency of one launch of `subject`'s plain form through each path, against
    /// `cudaLaunchKernelEx`.
    pub fn submit(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        self.device.with_current(|| {
            let mut scratch = Scratch::for_blocks(self, subject.forms[subject.plain].blocks())?;
            let (settings, hz, launches) =
                (self.options.settings, self.default_hz, self.options.submit_launches.max(1));
            let mut env = std::mem::take(&mut self.env);
            let b = self.bench();
            let mut notes = Vec::new();
            let target = &mut subject.forms[subject.plain];
            let paths = working_paths(
                b,
                target,
                &mut scratch,
                &[Path::Ordo, Path::LaunchKernelEx, Path::Chevron, Path::Driver],
                &mut notes,
            )?;
            let mut m = Submit { b, target, scratch, paths: paths.clone(), launches };
            let series = runner::run(&mut m, &settings, hz, &mut env);
            self.env = env;
            let infos = path_infos(&paths, &["launch"]);
            notes.insert(
                0,
                format!("host time of one launch; {launches} launches a sample, queued behind the blocking kernel"),
            );
            Ok(to_rows(subject.name(), "submit", &infos, &series?, &notes.join("; ")))
        })
    }

    /// Host time of one launch of `subject`'s plain form and `cudaStreamSynchronize`, through each
    /// path.
    pub fn sync(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        self.device.with_current(|| {
            let mut scratch = Scratch::for_blocks(self, subject.forms[subject.plain].blocks())?;
            let (settings, hz) = (self.options.settings, self.default_hz);
            let mut env = std::mem::take(&mut self.env);
            let b = self.bench();
            let mut notes = Vec::new();
            let target = &mut subject.forms[subject.plain];
            let paths = working_paths(
                b,
                target,
                &mut scratch,
                &[Path::Ordo, Path::LaunchKernelEx, Path::Chevron, Path::Driver],
                &mut notes,
            )?;
            let mut m = Sync { b, target, scratch, paths: paths.clone() };
            let series = runner::run(&mut m, &settings, hz, &mut env);
            self.env = env;
            let infos = path_infos(&paths, &["launch + sync"]);
            notes.insert(0, "host time of a launch and cudaStreamSynchronize".to_owned());
            Ok(to_rows(subject.name(), "sync", &infos, &series?, &notes.join("; ")))
        })
    }

    /// Kernel time with L2 flushed before each sample (nvbench's cold measurement): GPU time from
    /// events and CPU time of the whole sample, ordo's launch against `cudaLaunchKernelEx`.
    pub fn cold(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        self.timed(subject, true)
    }

    /// Kernel time back to back: batches queued behind the blocking kernel, GPU time over the
    /// batch (nvbench's batch measurement).
    pub fn hot(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        self.timed(subject, false)
    }

    fn timed(&mut self, subject: &mut Subject, cold: bool) -> Result<Vec<Row>> {
        self.device.with_current(|| {
            let (settings, hz, target_time) = (self.options.settings, self.default_hz, self.options.hot_batch_time);
            let mut scratch = Scratch::for_blocks(self, subject.forms[subject.plain].blocks())?;
            let mut env = std::mem::take(&mut self.env);
            let b = self.bench();
            let mut notes = Vec::new();
            let target = &mut subject.forms[subject.plain];
            let paths = working_paths(b, target, &mut scratch, &[Path::Ordo, Path::LaunchKernelEx], &mut notes)?;
            let mut m = Timed { b, target, scratch, paths: paths.clone(), batch: 1 };
            if !cold {
                // One launch's time, the median of a few, sets the batch (4 to 512 launches).
                let mut t: Vec<f64> = Vec::new();
                for _ in 0..5 {
                    t.push(m.run(paths[0], false)?.0);
                }
                let one = stamps::median(&t).max(1e-7);
                m.batch = ((target_time / one).round() as usize).clamp(4, 512);
                notes.insert(0, format!("GPU time a launch over batches of {} queued back to back", m.batch));
            } else {
                notes.insert(0, "GPU time (events) and CPU time of one launch, L2 flushed before each".to_owned());
            }
            let series = runner::run(&mut m, &settings, hz, &mut env);
            self.env = env;
            let metrics: &[&str] = if cold { &["gpu", "cpu"] } else { &["gpu"] };
            let infos = path_infos(&paths, metrics);
            Ok(to_rows(subject.name(), if cold { "cold" } else { "hot" }, &infos, &series?, &notes.join("; ")))
        })
    }

    /// GPU gaps of sequences of `a` after itself, or of `a` then `b` (A B A B ...): eager, queued
    /// and in a graph, without and with PDL where both kernels can; ordo's launch against
    /// `cudaLaunchKernelEx` (graphs: ordo's capture only, the nodes are the same).
    pub fn gaps(&mut self, a: &mut Subject, b: Option<&mut Subject>) -> Result<Vec<Row>> {
        let device = self.device;
        device.with_current(|| self.gaps_here(a, b))
    }

    fn gaps_here(&mut self, a: &mut Subject, b: Option<&mut Subject>) -> Result<Vec<Row>> {
        let (settings, hz, k) = (self.options.settings, self.default_hz, self.options.launches.max(2));
        let two = b.is_some();
        let kernel = match &b {
            Some(b) => format!("{} -> {}", a.name(), b.name()),
            None => a.name().to_owned(),
        };
        let mut subjects: Vec<&mut Subject> = vec![a];
        subjects.extend(b);
        // A PDL sequence launches every kernel after the first with PDL: all must wait or have a
        // PDL form (`no_pdl_note` says which does not).
        let pdl_possible = subjects.iter().all(|s| s.has_pdl());
        let mut layouts: [Option<Layout>; 2] = [None, None];
        let mut notes = Vec::new();
        // Stamps for at most 2^20 blocks a sequence (24 MiB read back a sample): fewer launches
        // for large grids.
        const MAX_SLOTS: usize = 1 << 20;
        for pdl in [false, true] {
            if pdl && !pdl_possible {
                continue;
            }
            let mut forms = Vec::new();
            let mut stamped = true;
            for i in 0..k {
                let s = if two { i % 2 } else { 0 };
                let (f, st) = subjects[s].form(pdl).ok_or_else(|| invalid("no form to launch"))?;
                stamped &= st;
                forms.push((s, f));
            }
            let blocks: Vec<usize> = forms
                .iter()
                .map(|&(s, f)| usize::try_from(subjects[s].forms[f].blocks()).unwrap_or(usize::MAX))
                .collect();
            let mut n = forms.len();
            if stamped {
                let mut total = 0usize;
                for (i, &bl) in blocks.iter().enumerate() {
                    total = total.saturating_add(bl);
                    if total > MAX_SLOTS {
                        n = i.max(2);
                        break;
                    }
                }
                if n < forms.len() {
                    notes.push(format!(
                        "{n} launches a sequence: the stamps of {k} would not fit in {MAX_SLOTS} blocks"
                    ));
                }
            }
            forms.truncate(n);
            let blocks = blocks[..n].to_vec();
            let mut offsets = Vec::with_capacity(n);
            let mut at = 0usize;
            for &bl in &blocks {
                offsets.push(at);
                at = at.saturating_add(bl);
            }
            layouts[usize::from(pdl)] = Some(Layout { forms, blocks, offsets, stamped });
        }
        let slots = layouts.iter().flatten().map(|l| l.blocks.iter().sum::<usize>()).max().unwrap_or(1);
        let words = slots.checked_mul(3).ok_or_else(|| invalid("a sequence too large"))?.max(3);
        let stamps = SharedStreamBuffer::<u64>::zeroed_async(words, &self.stream)?;
        let releases: Vec<bool> = subjects.iter().map(|s| s.releases).collect();
        if !layouts[0].as_ref().is_some_and(|l| l.stamped) {
            notes.push(
                "no stamps (give the kernel a `stamps` argument, or PTX or CUDA C to instrument): period only".into(),
            );
        }
        let support: Vec<(&str, PdlSupport)> = subjects.iter().map(|s| (s.name(), s.pdl_support())).collect();
        let support: Vec<(&str, &PdlSupport)> = support.iter().map(|(n, s)| (*n, s)).collect();
        notes.extend(no_pdl_note(&support));
        let mut env = std::mem::take(&mut self.env);
        let bench = self.bench();
        let mut variants = Vec::new();
        for mode in [Mode::Eager, Mode::Queued, Mode::Graph] {
            for pdl in [false, true] {
                if layouts[usize::from(pdl)].is_none() {
                    continue;
                }
                let paths: &[Path] =
                    if mode == Mode::Graph { &[Path::Ordo] } else { &[Path::Ordo, Path::LaunchKernelEx] };
                variants.extend(paths.iter().map(|&path| GapVariant { mode, pdl, path }));
            }
        }
        let mut m = Gaps {
            b: bench,
            subjects,
            variants,
            layouts,
            host: vec![0; words],
            stamps,
            graphs: [None, None],
            releases,
        };
        let result = (|| -> Result<Vec<Series>> {
            // Every form once outside the measurement (loads lazily loaded modules, checks the
            // launches), then the graphs.
            for pdl in [false, true] {
                if m.layouts[usize::from(pdl)].is_some() {
                    m.launch_all(Path::Ordo, bench.stream, pdl)?;
                    bench.stream.synchronize()?;
                }
            }
            for pdl in [false, true] {
                if m.layouts[usize::from(pdl)].is_none() {
                    continue;
                }
                let stream = bench.stream;
                // SAFETY: the captured launches use the stamp buffer and the subjects' arguments,
                // which outlive the graph (dropped with `m`, replayed only by `m.sample`); nothing
                // else uses the engine's stream meanwhile (the engine is borrowed mutably).
                let graph =
                    unsafe { capture(stream, CaptureMode::ThreadLocal, |cs| m.launch_all(Path::Ordo, cs, pdl)) }?;
                let exec = graph.instantiate(InstantiateFlags::empty())?;
                exec.upload(stream)?;
                m.graphs[usize::from(pdl)] = Some(exec);
            }
            bench.stream.synchronize()?;
            runner::run(&mut m, &settings, hz, &mut env)
        })();
        let infos: Vec<VariantInfo> = m
            .variants
            .iter()
            .map(|&v| VariantInfo {
                name: v.name(),
                baseline: (v.path == Path::Ordo && v.mode != Mode::Graph)
                    .then(|| GapVariant { path: Path::LaunchKernelEx, ..v }.name()),
                metrics: m.metrics(v),
            })
            .collect();
        let n = m.layouts[0].as_ref().map_or(k, |l| l.forms.len());
        drop(m);
        self.env = env;
        let series = result?;
        notes.insert(0, format!("sequences of {n} launches; gap, release and span: the median over a sequence's boundaries, from %globaltimer stamps; period: the sequence's GPU time (events) over its launches"));
        Ok(to_rows(&kernel, "gaps", &infos, &series, &notes.join("; ")))
    }
}

/// One variant a path, each against `cudaLaunchKernelEx`.
fn path_infos(paths: &[Path], metrics: &[&str]) -> Vec<VariantInfo> {
    let has_base = paths.contains(&Path::LaunchKernelEx);
    paths
        .iter()
        .map(|&p| VariantInfo {
            name: p.label().to_owned(),
            baseline: (has_base && p != Path::LaunchKernelEx).then(|| Path::LaunchKernelEx.label().to_owned()),
            metrics: metrics.iter().map(|m| (*m).to_owned()).collect(),
        })
        .collect()
}
