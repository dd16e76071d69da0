//! `cold` and `hot`: GPU time of one launch with L2 flushed, and of a batch of launches.

use super::{path_infos, to_rows, working_paths, Bench, Scratch};
use crate::engine::launch::{Path, Target};
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Sample};
use crate::stamps::{self};
use ordo_cuda_core::Result;
use std::time::Instant;

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

impl Engine {
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
}
