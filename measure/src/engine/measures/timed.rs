//! `cold` and `hot`: GPU time of one launch with L2 flushed, and of a batch of launches.

use super::PathLaunches;
use crate::engine::launch::Path;
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{Measure, Sample};
use crate::stamps::{self};
use ordo_cuda_core::Result;
use std::time::Instant;

/// Cold (one launch a sample, L2 flushed) or hot (a batch a sample).
struct Timed<'a> {
    l: PathLaunches<'a>,
    /// Launches a sample: 1 for cold.
    batch: usize,
}

impl Timed<'_> {
    /// GPU seconds of one sample of `batch` launches by `path` (the L2 flushed first if `cold`),
    /// host seconds of the whole sample, and the clock reading.
    fn run(&mut self, path: Path, cold: bool) -> Result<(f64, f64, Option<crate::throttle::ClockReading>)> {
        let b = self.l.b;
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
            self.l.launch(path, i)?;
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
        self.l.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let cold = self.batch == 1;
        let (gpu, cpu, clock) = self.run(self.l.paths[v], cold)?;
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
        let target_time = self.options.hot_batch_time;
        let (measure, metrics): (&str, &[&str]) = if cold { ("cold", &["gpu", "cpu"]) } else { ("hot", &["gpu"]) };
        self.measure_paths(subject, measure, &[Path::Ordo, Path::LaunchKernelEx], metrics, |l| {
            let mut m = Timed { l, batch: 1 };
            if cold {
                let lead = "GPU time (events) and CPU time of one launch, L2 flushed before each".to_owned();
                return Ok((Box::new(m), lead));
            }
            // One launch's time, the median of a few, sets the batch (4 to 512 launches).
            let mut t: Vec<f64> = Vec::new();
            for _ in 0..5 {
                t.push(m.run(m.l.paths[0], false)?.0);
            }
            let one = stamps::median(&t).max(1e-7);
            m.batch = ((target_time / one).round() as usize).clamp(4, 512);
            let lead = format!("GPU time a launch over batches of {} queued back to back", m.batch);
            Ok((Box::new(m), lead))
        })
    }
}
