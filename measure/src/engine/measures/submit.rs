//! `submit`: host time of one launch, queued behind the blocking kernel.

use super::{path_infos, to_rows, working_paths, Bench, Scratch};
use crate::engine::launch::{Path, Target};
use crate::engine::{Engine, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Sample};
use ordo_cuda_core::Result;
use std::time::Instant;

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

impl Engine {
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
}
