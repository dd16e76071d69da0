//! `sync`: host time of one launch and `cudaStreamSynchronize`.

use super::PathLaunches;
use crate::engine::launch::Path;
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{Measure, Sample};
use ordo_cuda_core::Result;
use std::time::Instant;

struct Sync<'a>(PathLaunches<'a>);

impl Measure for Sync<'_> {
    fn variants(&self) -> usize {
        self.0.paths.len()
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let (b, path) = (self.0.b, self.0.paths[v]);
        b.stream.synchronize()?;
        let t0 = Instant::now();
        self.0.launch(path, 0)?;
        b.stream.synchronize()?;
        Ok(Sample::duration(t0.elapsed().as_secs_f64()))
    }
}

impl Engine {
    /// Host time of one launch of `subject`'s plain form and `cudaStreamSynchronize`, through each
    /// path.
    pub fn sync(&mut self, subject: &mut Subject) -> Result<Vec<Row>> {
        self.measure_paths(subject, "sync", &Path::ALL, &["launch + sync"], |l| {
            Ok((Box::new(Sync(l)), "host time of a launch and cudaStreamSynchronize".to_owned()))
        })
    }
}
