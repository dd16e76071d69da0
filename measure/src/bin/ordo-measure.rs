//! `ordo-measure`: launch latency, GPU gaps, PDL and kernel time of a CUDA kernel from a module
//! file, with nvbench's statistics; and the comparison of two of its JSON reports.
//! `ordo-measure help` prints the usage; the guide is docs/measure.md.
//!
//! Exit status: 0 done; 1 a measurement or file failed (or, for `compare`, a row differs beyond
//! its noise, as nvbench_compare counts failures; for `check`, a race was found); 2 the command
//! line is wrong; 3 (`check`) an access before a wait is safe only under a condition to confirm.

use ordo_cuda_measure::cli::{self, Command, CompareSpec};
use ordo_cuda_measure::compare;
use ordo_cuda_measure::report::Report;
use std::process::ExitCode;

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ordo-measure: {e}");
            return ExitCode::from(2);
        }
    };
    match command {
        Command::Help => {
            print!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Command::Compare(c) => compare_reports(&c),
        Command::Run(r) => run::run(&r),
        Command::Check(c) => check::check(&c),
    }
}

fn compare_reports(c: &CompareSpec) -> ExitCode {
    let read = |path: &str| -> Result<Report, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
        Report::from_json(&text).map_err(|e| format!("{path}: {e}"))
    };
    let (reference, candidate) = match (read(&c.reference), read(&c.candidate)) {
        (Ok(r), Ok(c)) => (r, c),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("ordo-measure compare: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows = compare::compare(&reference, &candidate);
    print!("{}", compare::to_markdown(&reference, &candidate, &rows, c.threshold));
    let failures =
        rows.iter().filter(|r| matches!(r.status, compare::Status::Faster | compare::Status::Slower)).count();
    if failures > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(measure_engine)]
mod run {
    use ordo_cuda_core::{device, Device, Error, Result};
    use ordo_cuda_measure::cli::{self, RunSpec};
    use ordo_cuda_measure::engine::module::{self, Module};
    use ordo_cuda_measure::engine::{Engine, Options, Subject};
    use ordo_cuda_measure::report::{Header, Report, Row};
    use ordo_cuda_measure::spec::axes;
    use std::process::ExitCode;
    use std::time::Instant;

    /// A measure of one subject: `Engine::submit`, `sync`, `cold` or `hot`.
    type SubjectMeasure = fn(&mut Engine, &mut Subject) -> Result<Vec<Row>>;

    pub(super) fn run(spec: &RunSpec) -> ExitCode {
        match device::count() {
            Ok(n) if n > spec.device => {}
            Ok(n) => {
                eprintln!("ordo-measure: no CUDA device {} ({n} here)", spec.device);
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("ordo-measure: no usable CUDA driver or device: {e}");
                return ExitCode::FAILURE;
            }
        }
        let mut rows = Vec::new();
        let mut header = None;
        let outcome = measure(spec, &mut rows, &mut header);
        let mut code = ExitCode::SUCCESS;
        if let Err(e) = &outcome {
            eprintln!("ordo-measure: {}", cli::error_text(e));
            code = ExitCode::FAILURE;
        }
        // What was measured is written even after an error, so that a long sweep is not lost.
        if let Some(header) = header {
            let report = Report { header, rows };
            let files = [
                (spec.md.as_deref(), Report::to_markdown as fn(&Report) -> String),
                (spec.csv.as_deref(), Report::to_csv),
                (spec.json.as_deref(), Report::to_json),
            ];
            for (path, render) in files {
                if let Some(path) = path {
                    if let Err(e) = std::fs::write(path, render(&report)) {
                        eprintln!("ordo-measure: writing {path}: {e}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            if !spec.quiet {
                print!("{}", report.to_markdown());
            }
        }
        code
    }

    fn measure(spec: &RunSpec, rows: &mut Vec<Row>, header: &mut Option<Header>) -> Result<()> {
        let started = Instant::now();
        let device = Device::new(spec.device)?;
        device.set_current()?;
        // Every point's buffers against the device's memory, before anything is set up: a sweep
        // that cannot fit fails in a second, not after its first points (or a 160 GiB fill).
        module::check_memory(spec, device)?;
        let options = Options {
            settings: spec.settings,
            blocking_timeout: spec.blocking_timeout,
            launches: spec.launches,
            submit_launches: spec.submit_launches,
            ..Options::default()
        };
        let mut engine = Engine::new(device, options)?;
        *header = Some(engine.header().clone());
        let module = Module::load(&spec.module, &module::to_instrument(spec), &spec.nvrtc_options, device)?;
        let points = axes::points(&spec.axes).map_err(|e| Error::invalid(cli::PROGRAM, e.to_string()))?;
        let count = points.len();
        for (i, point) in points.iter().enumerate() {
            let shown: Vec<(String, String)> =
                point.iter().zip(&spec.axes).map(|((name, v), axis)| (name.clone(), axis.show(*v))).collect();
            let label: Vec<String> = shown.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let progress = |what: &str| {
                eprintln!(
                    "[{:7.1} s] point {}/{count} {}: {what}",
                    started.elapsed().as_secs_f64(),
                    i + 1,
                    label.join(" ")
                );
            };
            let first = rows.len();
            let (mut subjects, buffers) = module::subjects(&engine, &module, spec, point)?;
            let m = spec.measures;
            // The measures of one subject, in the order they run.
            let per_subject: [(bool, &str, SubjectMeasure); 4] = [
                (m.submit, "submit", Engine::submit),
                (m.sync, "sync", Engine::sync),
                (m.cold, "cold", Engine::cold),
                (m.hot, "hot", Engine::hot),
            ];
            for s in subjects.iter_mut() {
                for &(on, name, measure) in &per_subject {
                    if on {
                        progress(&format!("{name} {}", s.name()));
                        rows.extend(measure(&mut engine, s)?);
                    }
                }
            }
            if m.gaps {
                progress("gaps");
                let (a, rest) = subjects.split_at_mut(1);
                if let Some(a) = a.first_mut() {
                    rows.extend(engine.gaps(a, rest.first_mut())?);
                }
            }
            for r in &mut rows[first..] {
                r.axes = shown.clone();
            }
            drop(subjects);
            drop(buffers);
            engine.stream().synchronize()?;
        }
        eprintln!("[{:7.1} s] done", started.elapsed().as_secs_f64());
        Ok(())
    }
}

#[cfg(measure_engine)]
mod check {
    use ordo_cuda_core::{device, Device, Result};
    use ordo_cuda_measure::check::{self, CheckReport, Verdict};
    use ordo_cuda_measure::cli::{self, CheckSpec};
    use ordo_cuda_measure::engine::module::{self, Module, ModuleSource};
    use ordo_cuda_measure::engine::{Edge, Engine, Options, RaceOptions};
    use ordo_cuda_measure::spec::axes;
    use std::process::ExitCode;

    pub(super) fn check(spec: &CheckSpec) -> ExitCode {
        let mut report = CheckReport { module: spec.run.module.clone(), ..CheckReport::default() };
        let outcome = run(spec, &mut report);
        let mut code = match &outcome {
            Ok(()) => ExitCode::from(report.exit_code()),
            Err(e) => {
                eprintln!("ordo-measure: {e}");
                ExitCode::FAILURE
            }
        };
        if outcome.is_ok() || !report.edges.is_empty() {
            let files = [
                (spec.run.md.as_deref(), CheckReport::to_markdown as fn(&CheckReport) -> String),
                (spec.run.json.as_deref(), CheckReport::to_json),
            ];
            for (path, render) in files {
                if let Some(path) = path {
                    if let Err(e) = std::fs::write(path, render(&report)) {
                        eprintln!("ordo-measure: writing {path}: {e}");
                        code = ExitCode::FAILURE;
                    }
                }
            }
            if !spec.run.quiet {
                print!("{}", report.to_markdown());
            }
        }
        code
    }

    /// The device to run on, if there is one.
    fn device(spec: &CheckSpec) -> Option<Device> {
        match device::count() {
            Ok(n) if n > spec.run.device => Device::new(spec.run.device).ok(),
            _ => None,
        }
    }

    fn run(spec: &CheckSpec, report: &mut CheckReport) -> std::result::Result<(), String> {
        let gpu = if spec.static_only { None } else { device(spec) };
        let arch = gpu.and_then(|d| d.compute_capability().ok());
        let source =
            ModuleSource::read(&spec.run.module, &spec.run.nvrtc_options, arch).map_err(|e| cli::error_text(&e))?;
        let ptx = source.ptx.clone().map_err(|why| format!("no PTX to check: {why}"))?;
        report.edges = check::check_static(&ptx, spec).map_err(|e| e.to_string())?;
        if spec.static_only {
            return Ok(());
        }
        let Some(gpu) = gpu else {
            report
                .notes
                .push(format!("no CUDA device {}: the dynamic check and the advice did not run", spec.run.device));
            return Ok(());
        };
        if spec.run.kernels.iter().any(|k| k.args.is_empty()) {
            report.notes.push("no --arg lists: the dynamic check and the advice need the kernels' arguments".into());
            return Ok(());
        }
        dynamic(spec, &source, gpu, report).map_err(|e| cli::error_text(&e))
    }

    fn dynamic(spec: &CheckSpec, source: &ModuleSource, device: Device, report: &mut CheckReport) -> Result<()> {
        device.set_current()?;
        module::check_memory(&spec.run, device)?;
        let options = Options {
            settings: spec.run.settings,
            blocking_timeout: spec.run.blocking_timeout,
            launches: spec.run.launches,
            submit_launches: spec.run.submit_launches,
            ..Options::default()
        };
        let mut engine = Engine::new(device, options)?;
        report.header = Some(engine.header().clone());
        let edges: Vec<Edge> =
            check::edges(spec).into_iter().map(|(a, a_index, b, b_index)| Edge { a, a_index, b, b_index }).collect();
        let delay: Vec<&str> = edges.iter().map(|e| e.a.as_str()).collect();
        let module = Module::from_source(source, &module::to_instrument(&spec.run), &delay)?;
        let race = RaceOptions { trials: spec.trials, seed: spec.seed, max_delay_ns: spec.max_delay_ns };
        for edge in &edges {
            eprintln!("dynamic check of {} -> {}: {} trials a point", edge.a, edge.b, spec.trials);
            report.dynamic.push(engine.race_check(&module, &spec.run, edge, &race)?);
        }
        if !spec.advise {
            return Ok(());
        }
        if report.verdict() != Verdict::Safe {
            report.notes.push(format!(
                "no advice: the edge is not proven safe ({}); the gaps are measured only for a dependent launch proven safe",
                report.verdict().label()
            ));
            return Ok(());
        }
        let points =
            axes::points(&spec.run.axes).map_err(|e| ordo_cuda_core::Error::invalid(cli::PROGRAM, e.to_string()))?;
        for point in &points {
            eprintln!("advice: gaps at {:?}", point);
            report.advice.extend(engine.advise(&module, &spec.run, &edges, point)?);
        }
        Ok(())
    }
}

#[cfg(not(measure_engine))]
mod check {
    use ordo_cuda_measure::cli::CheckSpec;
    use std::process::ExitCode;

    pub(super) fn check(_: &CheckSpec) -> ExitCode {
        eprintln!(
            "ordo-measure: built against CUDA headers older than 12.5: the check reads modules through the engine"
        );
        ExitCode::FAILURE
    }
}

#[cfg(not(measure_engine))]
mod run {
    use ordo_cuda_measure::cli::RunSpec;
    use std::process::ExitCode;

    pub(super) fn run(_: &RunSpec) -> ExitCode {
        eprintln!("ordo-measure: built against CUDA headers older than 12.5: the engine needs cudaLibraryLoadData and cudaGetDriverEntryPointByVersion");
        ExitCode::FAILURE
    }
}
