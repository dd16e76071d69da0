//! `submit`: host time of one launch, queued behind the blocking kernel.

use super::PathLaunches;
use crate::engine::launch::Path;
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{Measure, Sample};
use ordo_cuda_core::Result;
use std::time::Instant;

struct Submit<'a> {
    l: PathLaunches<'a>,
    launches: usize,
}

impl Measure for Submit<'_> {
    fn variants(&self) -> usize {
        self.l.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let (b, path) = (self.l.b, self.l.paths[v]);
        b.stream.synchronize()?;
        let blocked = b.inst.block(b.stream)?;
        let t0 = Instant::now();
        for i in 0..self.launches {
            self.l.launch(path, i)?;
        }
        let dt = t0.elapsed().as_secs_f64();
        blocked.release();
        b.stream.synchronize()?;
        b.inst.check_block()?;
        Ok(Sample { values: vec![dt / self.launches as f64], elapsed: dt, clock: None })
    }
}

impl Engine {
    /// Host submit latency of one launch of `subject`'s plain form through each path, against
    /// `cudaLaunchKernelEx`.
    pub fn submit(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        let launches = self.options.submit_launches.max(1);
        self.measure_paths(subject, "submit", &Path::ALL, &["launch"], |l| {
            let lead =
                format!("host time of one launch; {launches} launches a sample, queued behind the blocking kernel");
            Ok((Box::new(Submit { l, launches }), lead))
        })
    }
}
