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
//!
//! One file a measure (`submit.rs`, `sync.rs`, `timed.rs` for `cold` and `hot`, `gaps.rs`); this
//! one holds what they share: the engine's parts a measure uses ([`Bench`]), the scratch stamp
//! slots, the paths that work, the run of a measure over them ([`Engine::measure_paths`]), and the
//! conversion of samples into report rows.

mod gaps;
mod submit;
mod sync;
mod timed;

use super::harness::Instruments;
use super::launch::{CuLaunchKernelExFn, LaunchSlot, Path, Target};
use super::{invalid, Engine, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Series};
use ordo_cuda_core::{cuda_call, sys, Result, SharedStreamBuffer, StreamRef, TimingEvent};

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
            cuda_call!(unsafe { sys::cudaMemsetAsync(p.cast(), 0, bytes, self.stream.as_raw()) })?;
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

/// A subject's plain form and the paths that launch it: what `submit`, `sync`, `cold` and `hot`
/// sample, one variant a path.
struct PathLaunches<'a> {
    b: Bench<'a>,
    target: &'a mut Target,
    scratch: Scratch,
    paths: Vec<Path>,
}

impl PathLaunches<'_> {
    /// Queues one launch of the target by `path`, its stamps in scratch slot `slot`.
    fn launch(&mut self, path: Path, slot: usize) -> Result<()> {
        // SAFETY: as in `working_paths`.
        unsafe { self.target.launch(self.b.driver, path, self.b.stream, false, self.scratch.slot(slot)) }
    }
}

impl Engine {
    /// Runs the measure that `make` builds on the paths among `candidates` that launch `subject`'s
    /// plain form, one variant a path, into rows of `measure` with `metrics` a path. `make` also
    /// gives the note that leads the rows' notes.
    fn measure_paths(
        &mut self,
        subject: &mut Subject,
        measure: &str,
        candidates: &[Path],
        metrics: &[&str],
        make: impl FnOnce(PathLaunches<'_>) -> Result<(Box<dyn Measure + '_>, String)>,
    ) -> Result<Vec<Row>> {
        self.device.with_current(|| {
            let mut scratch = Scratch::for_blocks(self, subject.forms[subject.plain].blocks())?;
            let (settings, hz) = (self.options.settings, self.default_hz);
            let mut env = std::mem::take(&mut self.env);
            let b = self.bench();
            let mut notes = Vec::new();
            let target = &mut subject.forms[subject.plain];
            let paths = working_paths(b, target, &mut scratch, candidates, &mut notes)?;
            let series = {
                let (mut m, lead) = make(PathLaunches { b, target, scratch, paths: paths.clone() })?;
                notes.insert(0, lead);
                runner::run(&mut *m, &settings, hz, &mut env)
            };
            self.env = env;
            let infos = path_infos(&paths, metrics);
            Ok(to_rows(subject.name(), measure, &infos, &series?, &notes.join("; ")))
        })
    }

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
