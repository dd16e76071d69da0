//! ordo-bench: measures ordo's calls against plain CUDA C++ in one process, interleaving the
//! variants (A B A B ...) and reporting medians and ratios. Every group samples through
//! ordo-cuda-measure's runner (the same interleaved rounds, warm-up and statistics as the
//! `ordo-measure` command), a fixed number of rounds here; the GPU gaps are reduced from their
//! stamps by its `stamps` module.
//!
//!     cargo bench -p ordo-benches --bench ordo-bench -- [--quick] [--only GROUP,...] [--json FILE] [--csv FILE] [--svg FILE]
//!
//! (a bench target, so that it may use the dev-dependency cudarc for the launch comparison).
//! Without a GPU it says so in one line and exits non-zero.

mod batch_copy;
mod copies;
mod cudarc_side;
mod decode;
mod gaps;
mod graph;
mod green;
mod host_pool;
mod launch;
mod llama;
mod multi;
mod output;
mod pdl;
mod pipeline;
mod small_ops;
mod streams;
mod svg;

use ordo_cuda_core::*;
use ordo_cuda_measure::{runner, stats, Sample};
use output::Row;
use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;
use std::time::Instant;

pub(crate) struct Report {
    rows: Vec<Row>,
    /// The planned pipeline's chunks, for the SVG.
    timeline: Vec<ordo_cuda_core::pipeline::ChunkTimes>,
    /// PDL chains' kernels, for the SVG.
    kernel_lanes: Vec<gaps::KernelLane>,
    started: Instant,
    /// Whether stderr is a terminal: the progress line is drawn only there.
    progress: bool,
}

impl Report {
    pub(crate) fn add(
        &mut self,
        group: &'static str,
        name: impl Into<String>,
        unit: &'static str,
        ordo: f64,
        baseline: Option<f64>,
        note: impl Into<String>,
    ) {
        let row = Row { group, name: name.into(), unit, ordo, baseline, note: note.into() };
        let ratio = row.ratio().map(|r| format!("{r:>6.3}x")).unwrap_or_default();
        let base = row.baseline.map(|c| format!("{c:>10.3}")).unwrap_or_else(|| format!("{:>10}", "-"));
        // Clear the progress line (stderr) before the row (stdout), so a terminal shows rows only.
        if self.progress {
            eprint!("\r{:80}\r", "");
        }
        println!(
            "{:<9} {:<60} {:>10.3} {} {:<5} {} {}",
            row.group, row.name, row.ordo, base, row.unit, ratio, row.note
        );
        self.rows.push(row);
    }

    pub(crate) fn progress(&self, what: &str) {
        if !self.progress {
            return;
        }
        eprint!("\r[{:5.1} s] {what:<60}", self.started.elapsed().as_secs_f64());
        let _ = std::io::stderr().flush();
    }
}

/// Runs each variant once a round, for `rounds` rounds after one warm-up round, alternating the
/// order (A B C, then C B A, ...) so that drift and the position in a round favour no variant, on
/// ordo-cuda-measure's runner, and returns each variant's samples.
pub(crate) fn sample_rounds(
    rounds: usize,
    variants: &mut [&mut dyn FnMut() -> Result<Sample>],
) -> Result<Vec<runner::Series>> {
    measure_rounds(rounds, &mut runner::Closures(variants))
}

/// [`sample_rounds`] of a [`Measure`](ordo_cuda_measure::Measure)'s variants.
pub(crate) fn measure_rounds(rounds: usize, m: &mut dyn ordo_cuda_measure::Measure) -> Result<Vec<runner::Series>> {
    runner::run(m, &runner::Settings::rounds(rounds), 0.0, &mut runner::RealTime::default())
}

/// [`sample_rounds`] of variants that give one figure each; each variant's median.
pub(crate) fn interleave(rounds: usize, variants: &mut [&mut dyn FnMut() -> Result<f64>]) -> Result<Vec<f64>> {
    let mut wrapped: Vec<Box<dyn FnMut() -> Result<Sample> + '_>> = variants
        .iter_mut()
        .map(|f| Box::new(move || f().map(Sample::duration)) as Box<dyn FnMut() -> Result<Sample> + '_>)
        .collect();
    let mut refs: Vec<&mut dyn FnMut() -> Result<Sample>> =
        wrapped.iter_mut().map(|b| &mut **b as &mut dyn FnMut() -> Result<Sample>).collect();
    Ok(sample_rounds(rounds, &mut refs)?.iter().map(|s| s.summary(0).median).collect())
}

/// The median of `v` (nvbench's rank: the upper of two middle values).
pub(crate) fn median(v: &[f64]) -> f64 {
    stats::percentile(v, 50)
}

/// GPU milliseconds of what `f` enqueues on `s`, between two timing events (synchronises on the end).
pub(crate) fn ms_between(
    s: StreamRef<'_>,
    start: &TimingEvent,
    end: &TimingEvent,
    f: impl FnOnce() -> Result<()>,
) -> Result<f64> {
    start.record(s)?;
    f()?;
    end.record(s)?;
    end.synchronize()?;
    Ok(end.elapsed_ms_since(start)? as f64)
}

fn main() -> ExitCode {
    let options = match output::parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("ordo-bench: {e}");
            return ExitCode::from(2);
        }
    };
    let rounds = if options.quick { 5 } else { 15 };
    match ordo_cuda_core::device::count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            eprintln!("ordo-bench: no CUDA device");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("ordo-bench: no usable CUDA driver or device: {e}");
            return ExitCode::FAILURE;
        }
    }
    let mut r = Report {
        rows: Vec::new(),
        timeline: Vec::new(),
        kernel_lanes: Vec::new(),
        started: Instant::now(),
        progress: std::io::stderr().is_terminal(),
    };
    let header = || -> Result<String> {
        let d = Device::current()?;
        Ok(format!(
            "{} | runtime {} | driver {} | bindings {}",
            d.name()?,
            device::runtime_version()?,
            device::driver_version()?,
            sys::CUDA_VERSION
        ))
    };
    match header() {
        Ok(h) => println!("{h}"),
        Err(e) => {
            eprintln!("ordo-bench: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("{:<9} {:<60} {:>10} {:>10} {:<5} {:>7}", "group", "figure", "ordo", "baseline", "unit", "ratio");
    type Group = fn(&mut Report, usize) -> Result<()>;
    // Every group, in the order they run (benches/tests/bench_groups.rs checks that each module's
    // group is here). `decode` runs before `small`, which raises the default pool's release
    // threshold for the rest of the process: the decode group's figures are those of a process
    // that left it alone.
    let groups: &[(&str, Group)] = &[
        ("launch", launch::launch_group),
        ("gaps", gaps::gaps_group),
        ("graph", graph::graph_group),
        ("decode", decode::decode_group),
        ("pdl", pdl::pdl_group),
        ("small", small_ops::small_ops_group),
        ("copy", copies::copy_group),
        ("pipeline", pipeline::pipeline_group),
        ("multi", multi::multi_group),
        ("green", green::green_group),
        ("hostpool", host_pool::host_pool_group),
        ("batch", batch_copy::batch_copy_group),
        ("streams", streams::streams_group),
        ("llama", llama::llama_group),
    ];
    if let Some(unknown) = options
        .only
        .as_deref()
        .and_then(|only| only.split(',').map(str::trim).find(|g| !groups.iter().any(|(name, _)| name == g)))
    {
        eprintln!("ordo-bench: --only names no group {unknown:?}");
        return ExitCode::from(2);
    }
    // A group that fails is reported and the others still run: the figures already measured, and
    // the files, are not lost; the exit status says that one failed.
    let mut failed = Vec::new();
    for &(name, g) in groups.iter().filter(|(name, _)| options.runs(name)) {
        if let Err(e) = g(&mut r, rounds) {
            eprintln!("\nordo-bench: {name}: {e}");
            failed.push(name);
        }
    }
    if r.progress {
        eprintln!("\r[{:5.1} s] done{:<60}", r.started.elapsed().as_secs_f64(), "");
    }
    let files =
        [(options.json.as_deref(), output::to_json as fn(&[Row]) -> String), (options.csv.as_deref(), output::to_csv)];
    for (path, render) in files {
        if let Some(path) = path {
            if let Err(e) = std::fs::write(path, render(&r.rows)) {
                eprintln!("ordo-bench: writing {path}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(path) = options.svg.as_deref() {
        if let Err(e) = svg::write_svg(path, &r.timeline, &r.kernel_lanes) {
            eprintln!("ordo-bench: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("ordo-bench: failed groups: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}
