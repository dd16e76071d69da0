//! The dynamic PDL check on the GPU ([`Engine::race_check`]): A then B with PDL, many times under
//! perturbation, every buffer compared with the runs without PDL. The plan of each trial and the
//! comparison are in [`crate::check::dynamic`]; this file launches.

use super::launch::{LaunchSlot, Path, RawArg, Target};
use super::module::{self, Module};
use super::{invalid, Engine};
use crate::check::dynamic::{self, DynamicReport, ObservedRace, MAX_RACES_SHOWN};
use crate::cli::RunSpec;
use crate::spec::axes::{self, Axis};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{cuda_call, sys, Result, SharedStreamBuffer, Stream, StreamRef};

/// How many trials, from which seed, with delays up to how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaceOptions {
    /// Trials at each point of the sweep.
    pub trials: u64,
    /// The seed of the trials' perturbations ([`dynamic::plan`]).
    pub seed: u64,
    /// The longest delay of A's accesses, in nanoseconds.
    pub max_delay_ns: u64,
}

impl Default for RaceOptions {
    fn default() -> RaceOptions {
        RaceOptions { trials: 200, seed: 1, max_delay_ns: 100_000 }
    }
}

/// One edge of a spec: the forms launched (A's, then B's with PDL) and the kernels of the spec
/// whose arguments and launch shapes they take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The name of the form of A launched.
    pub a: String,
    /// A's kernel in the spec.
    pub a_index: usize,
    /// The name of the form of B launched with PDL.
    pub b: String,
    /// B's kernel in the spec.
    pub b_index: usize,
}

/// What every point of one dynamic check uses.
#[derive(Clone, Copy)]
struct RaceRun<'a> {
    module: &'a Module,
    spec: &'a RunSpec,
    edge: &'a Edge,
    options: &'a RaceOptions,
    /// The stream the load kernel runs on.
    load: &'a Stream,
}

/// The runs without PDL that make the reference: a byte that differs between them is not compared.
const REFERENCE_RUNS: usize = 3;

/// A's forms: as it is (the reference) and delayed, if the module has the delayed copy.
struct Pair {
    a: Target,
    delayed: Option<(Target, bool)>,
    b: Target,
    /// Where the delayed copy's three extra arguments start.
    extra: usize,
}

impl Engine {
    /// Runs `edge` of `spec` (kernels of `module`, loaded with the delayed copy of `edge.a`:
    /// [`Module::from_source`]) `options.trials` times at each point of the sweep, and reports the
    /// trials whose buffers differ from the runs without PDL.
    pub fn race_check(
        &mut self,
        module: &Module,
        spec: &RunSpec,
        edge: &Edge,
        options: &RaceOptions,
    ) -> Result<DynamicReport> {
        self.device.with_current(|| {
            let points = axes::points(&spec.axes).map_err(|e| invalid(e.to_string()))?;
            let mut report = DynamicReport {
                edge: (edge.a.clone(), edge.b.clone()),
                trials: options.trials,
                seed: options.seed,
                points: points.len(),
                ..DynamicReport::default()
            };
            let load = Stream::new()?;
            for point in &points {
                let run = RaceRun { module, spec, edge, options, load: &load };
                self.race_point(&run, point, &mut report)?;
            }
            match module.delayed(&edge.a) {
                None => report.notes.push(format!(
                    "A ({}) is launched as it is (no PTX to make a delayed copy of): its accesses are not delayed, the trials vary the load only",
                    edge.a
                )),
                Some((_, false)) => report.notes.push(
                    "the module targets below sm_90 or PTX ISA 7.8: A's trigger is left where it is (no early trigger)".into(),
                ),
                Some((_, true)) => {}
            }
            if report.trials_with_race == 0 {
                report.notes.push(
                    "no trial differed: this shows no race under these perturbations and proves nothing; the static check is the proof"
                        .into(),
                );
            }
            Ok(report)
        })
    }

    fn race_point(&mut self, run: &RaceRun<'_>, point: &[(String, i64)], report: &mut DynamicReport) -> Result<()> {
        let RaceRun { module, spec, edge, options, load } = *run;
        let var = |name: &str| point.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let shown = shown_point(&spec.axes, point);
        let (ka, kb) = match (spec.kernels.get(edge.a_index), spec.kernels.get(edge.b_index)) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(invalid("an edge names a kernel the spec does not have")),
        };
        let (ca, cb) = (module::launch_config(ka, &var)?, module::launch_config(kb, &var)?);
        let (args, mut buffers) = module::arguments(self, spec, point)?;
        let (a_args, b_args) = match (args.get(edge.a_index), args.get(edge.b_index)) {
            (Some(a), Some(b)) => (a.clone(), b.clone()),
            _ => return Err(invalid("no arguments for an edge's kernel")),
        };
        let stream = self.stream.clone();
        let s = stream.as_stream();
        // Untouched copies of every buffer, restored before each run.
        let mut pristine = Vec::new();
        for b in buffers.all() {
            let mut copy = SharedStreamBuffer::<u8>::alloc_async(b.buffer.len(), &stream)?;
            // SAFETY: two allocations of the same length, alive until the stream is synchronised
            // at the end of this function.
            unsafe { d2d(copy.as_mut_ptr(), b.buffer.as_ptr(), b.buffer.len(), s)? };
            pristine.push(copy);
        }
        let blocks = |c: &LaunchConfig| u32::try_from(c.grid.volume()).unwrap_or(u32::MAX);
        let (a_blocks, b_blocks) = (blocks(&ca), blocks(&cb));
        let mut stamps =
            SharedStreamBuffer::<u64>::zeroed_async(3 * (a_blocks.max(b_blocks) as usize).max(1), &stream)?;
        let mut pair = {
            let make = |name: &str, config: LaunchConfig, args: Vec<RawArg>| -> Result<Target> {
                let func = module.func(name)?;
                // SAFETY: the arguments are this point's buffers (alive until the targets are
                // dropped at the end of this function, before the buffers), scalars, and the
                // scratch stamps; their count and sizes are checked against the kernel's
                // parameters. What the kernel does with them is the user's kernel.
                unsafe { Target::raw(name, func, config, args) }
            };
            let delayed = match module.delayed(&edge.a) {
                Some((name, can_trigger)) => {
                    let mut args = a_args.clone();
                    args.extend([
                        RawArg::Bytes { word: 0, size: 8 },
                        RawArg::Bytes { word: 0, size: 4 },
                        RawArg::Bytes { word: 0, size: 4 },
                    ]);
                    Some((make(name, ca, args)?, can_trigger))
                }
                None => None,
            };
            Pair { a: make(&edge.a, ca, a_args.clone())?, delayed, b: make(&edge.b, cb, b_args)?, extra: a_args.len() }
        };
        let slots = |stamps: &mut SharedStreamBuffer<u64>| {
            let p = stamps.as_mut_ptr();
            (LaunchSlot { index: 0, stamps: p }, LaunchSlot { index: 1, stamps: p })
        };
        let mut host: Vec<Vec<u8>> = buffers.all().iter().map(|b| vec![0u8; b.buffer.len()]).collect();
        let restore = |buffers: &mut module::Buffers| -> Result<()> {
            for (b, p) in buffers.all_mut().iter_mut().zip(&pristine) {
                // SAFETY: as above.
                unsafe { d2d(b.buffer.as_mut_ptr(), p.as_ptr(), p.len(), s)? };
            }
            Ok(())
        };
        let read = |buffers: &module::Buffers, host: &mut Vec<Vec<u8>>| -> Result<()> {
            for (b, h) in buffers.all().iter().zip(host.iter_mut()) {
                copy::d2h_blocking(h.as_mut_slice(), b.buffer.as_slice(), s)?;
            }
            Ok(())
        };
        let driver = self.driver;
        // The reference: A as it is, then B, both without PDL.
        let mut references: Vec<Vec<Vec<u8>>> = Vec::new();
        for _ in 0..REFERENCE_RUNS {
            restore(&mut buffers)?;
            let (sa, sb) = slots(&mut stamps);
            // SAFETY: the slots hold 3 u64 a block of the larger grid, alive until synchronised.
            unsafe {
                pair.a.launch(driver, Path::LaunchKernelEx, s, false, sa)?;
                pair.b.launch(driver, Path::LaunchKernelEx, s, false, sb)?;
            }
            s.synchronize()?;
            read(&buffers, &mut host)?;
            references.push(host.clone());
        }
        let skip: Vec<Vec<bool>> = (0..host.len())
            .map(|i| dynamic::unstable(&references.iter().map(|r| r[i].clone()).collect::<Vec<_>>()))
            .collect();
        report.unstable_bytes += skip.iter().flatten().filter(|&&x| x).count() as u64;
        let reference = references.swap_remove(0);
        // The delayed copy once, outside the trials: its first launch loads it.
        if let Some((t, _)) = pair.delayed.as_mut() {
            restore(&mut buffers)?;
            let (sa, _) = slots(&mut stamps);
            // SAFETY: as above.
            unsafe { t.launch(driver, Path::LaunchKernelEx, s, false, sa)? };
            s.synchronize()?;
        }
        let sms = self.header.device.sms;
        for trial in 0..options.trials {
            let mut p = dynamic::plan(options.seed, trial, a_blocks, sms, options.max_delay_ns);
            restore(&mut buffers)?;
            if p.load_blocks > 0 {
                self.inst.helpers.spin_grid(load.as_stream(), p.load_ns, LaunchConfig::new(p.load_blocks, 256))?;
            }
            let (sa, sb) = slots(&mut stamps);
            match pair.delayed.as_mut() {
                Some((t, can_trigger)) => {
                    p.early_trigger &= *can_trigger;
                    t.set_word(pair.extra, p.delay_ns)?;
                    t.set_word(pair.extra + 1, u64::from(p.delay_from_block))?;
                    t.set_word(pair.extra + 2, u64::from(p.early_trigger))?;
                    // SAFETY: as above.
                    unsafe { t.launch(driver, Path::LaunchKernelEx, s, false, sa)? };
                }
                None => {
                    (p.delay_ns, p.delay_from_block, p.early_trigger) = (0, 0, false);
                    // SAFETY: as above.
                    unsafe { pair.a.launch(driver, Path::LaunchKernelEx, s, false, sa)? };
                }
            }
            // SAFETY: as above; B launched with PDL after A.
            unsafe { pair.b.launch(driver, Path::LaunchKernelEx, s, true, sb)? };
            s.synchronize()?;
            load.synchronize()?;
            read(&buffers, &mut host)?;
            let seen =
                buffers.all().iter().enumerate().find_map(|(i, b)| {
                    dynamic::difference(&reference[i], &host[i], &skip[i], b.ty.size()).map(|d| (b, d))
                });
            if let Some((b, d)) = seen {
                report.trials_with_race += 1;
                if report.races.len() < MAX_RACES_SHOWN {
                    let g = |c: &LaunchConfig| (c.grid.x, c.grid.y, c.grid.z);
                    report.races.push(ObservedRace {
                        trial,
                        point: shown.clone(),
                        perturbation: p,
                        grids: [g(&ca), g(&cb)],
                        buffer: b.label.clone(),
                        elements: d.elements,
                        index: d.index,
                        expected: dynamic::show(b.ty, &d.expected),
                        seen: dynamic::show(b.ty, &d.seen),
                    });
                }
            }
        }
        drop(pair);
        drop(pristine);
        drop(buffers);
        s.synchronize()
    }
}

/// A point's axis values as reports show them.
pub(crate) fn shown_point(axes: &[Axis], point: &[(String, i64)]) -> Vec<(String, String)> {
    point.iter().zip(axes).map(|((name, v), axis)| (name.clone(), axis.show(*v))).collect()
}

/// Copies `bytes` from `src` to `dst` on the device, queued on `stream`.
///
/// # Safety
/// - `dst` and `src` are device allocations of at least `bytes` each that do not overlap;
/// - both stay allocated until the copy has run on `stream`.
unsafe fn d2d(dst: *mut u8, src: *const u8, bytes: usize, stream: StreamRef<'_>) -> Result<()> {
    // SAFETY: the caller's contract.
    cuda_call!(unsafe {
        sys::cudaMemcpyAsync(
            dst.cast(),
            src.cast(),
            bytes,
            sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice,
            stream.as_raw(),
        )
    })
}
