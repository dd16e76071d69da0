//! `sync`: host time of one launch and `cudaStreamSynchronize`.

use super::{path_infos, to_rows, working_paths, Bench, Scratch};
use crate::engine::launch::{Path, Target};
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Sample};
use ordo_cuda_core::Result;
use std::time::Instant;

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

impl Engine {
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
}
