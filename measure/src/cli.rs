//! The `ordo-measure` command line, parsed into what to do ([`Command`]). Any argument list gives a
//! command or a [`SpecError`] that names the argument and what is wrong; nothing here panics or
//! touches CUDA. [`USAGE`] is the command's help.

use crate::runner::Settings;
use crate::spec::args::ArgSpec;
use crate::spec::axes::Axis;
use crate::spec::expr::Expr;
use crate::spec::{Dims, KernelSpec, SpecError, MAX_SWEEP_TERMS};
use crate::stopping::{StdRelParams, Stopping};
use ordo_cuda_core::Error;
use std::collections::BTreeSet;

/// The command's help text.
pub const USAGE: &str = "\
ordo-measure: launch latency, GPU gaps, PDL and kernel time of a CUDA kernel, with nvbench's statistics

usage:
  ordo-measure run MODULE --kernel NAME [--grid D] [--block D] [--arg ARG]... [options]
  ordo-measure check MODULE --kernel A [...] [--then --kernel B ...] [check options]
  ordo-measure compare REFERENCE.json CANDIDATE.json [--threshold-diff PERCENT]
  ordo-measure help

MODULE is a cubin, fatbin, PTX (.ptx) or CUDA C (.cu, compiled with NVRTC) file.

kernel (options after --then describe a second kernel B, launched after each A):
  -k, --kernel NAME        the kernel (extern \"C\" name, or the mangled one)
  --pdl-form NAME          its PDL form (ordo's two forms: NAME waits, --kernel does not)
  --pdl                    the kernel itself contains griddepcontrol.wait (found by itself in PTX/CUDA C)
  --grid D, --block D      X[,Y[,Z]], integer expressions of the axes; '/' rounds up (default 1)
  --smem BYTES             dynamic shared memory a block (default 0)
  --arg ARG                one argument, in parameter order:
                             i32=n  u64=1M  f32=0.5          scalars (i8 u8 i16 u16 i32 u32 i64 u64 f16 bf16 f32 f64)
                             f32[n]  f32[n]=1.5  u8[4K]=rand   device buffers of n elements (zeroed, filled, random)
                             x:f32[n]  then  @x              a named buffer, passed again (also to kernel B)
                             stamps                          where the kernel writes its own %globaltimer stamps
                             launch                          i32: the launch's index in a sequence
  --then                   what follows describes kernel B (grid, block, shared memory default to A's)

sweep:
  -a, --axis AXIS          n=4096  n=[4096,1M,16M]  n=[1:10:3]  n=2^[12:24:4]  n[pow2]=[12:24:4]

what to measure:
  --measure LIST           submit,sync,gaps,hot,cold (default: all)
  --launches N             launches in a gap sequence (default 100)
  --submit-launches N      launches a host-submit sample, behind a blocking kernel (default 100)
  --device N               CUDA device (default 0)
  --nvrtc-opt OPT          an NVRTC option for a .cu module (repeatable)

statistics (nvbench's defaults):
  --min-samples N          10
  --min-time SECONDS       0.5 of measured time
  --max-noise PERCENT      0.5 (relative standard deviation)
  --timeout SECONDS        15 a measurement
  --rounds N               exactly N interleaved rounds instead of the noise criterion
  --throttle-threshold PERCENT      75 of the default SM clock
  --throttle-recovery-delay SECONDS 0.05
  --blocking-timeout SECONDS        30

output (markdown on standard output unless --quiet):
  --md FILE, --csv FILE, --json FILE, --quiet

check: is B, launched with PDL after A, safe, and does PDL pay? (docs/check.md; kernel, sweep,
statistics and output options as for run; exit 0 safe, 1 race or failure, 2 command line, 3 unproven)
  --a-writes LIST          B's parameters (indexes, or none) whose memory A writes: the others it does not
  --a-reads LIST           B's parameters whose memory A reads (both derived from the --arg lists if not given)
  --chain                  also check A launched with PDL after B (the sequence A B A B)
  --static                 the static check from PTX only: no GPU
  --trials N               dynamic trials a point of the sweep (default 200)
  --seed S                 the trials' seed (default 1)
  --max-delay-us US        the longest delay of A's accesses in a trial (default 100)
  --no-advice              no gap measure for an edge proven safe
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Measure.
    Run(Box<RunSpec>),
    /// Check a PDL edge.
    Check(Box<CheckSpec>),
    /// Compare two JSON reports.
    Compare(CompareSpec),
    /// Print [`USAGE`].
    Help,
}

/// Which measures to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measures {
    /// Host submit latency of a launch.
    pub submit: bool,
    /// Launch + synchronise.
    pub sync: bool,
    /// GPU gaps and periods of sequences.
    pub gaps: bool,
    /// Kernel time, back to back.
    pub hot: bool,
    /// Kernel time, L2 flushed.
    pub cold: bool,
}

impl Measures {
    /// Every measure.
    pub const ALL: Measures = Measures { submit: true, sync: true, gaps: true, hot: true, cold: true };

    /// Parses `submit,sync,gaps,hot,cold` (any subset, or `all`).
    pub fn parse(text: &str) -> Result<Measures, SpecError> {
        let mut m = Measures { submit: false, sync: false, gaps: false, hot: false, cold: false };
        for w in text.split(',').map(str::trim) {
            match w {
                "all" => m = Measures::ALL,
                "submit" => m.submit = true,
                "sync" => m.sync = true,
                "gaps" => m.gaps = true,
                "hot" => m.hot = true,
                "cold" => m.cold = true,
                other => {
                    return Err(SpecError::new(format!(
                        "--measure: {other:?} is not one of submit, sync, gaps, hot, cold, all"
                    )))
                }
            }
        }
        Ok(m)
    }
}

/// A measurement run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The module file.
    pub module: String,
    /// Kernel A, and B if given.
    pub kernels: Vec<KernelSpec>,
    /// The axes.
    pub axes: Vec<Axis>,
    /// What to measure.
    pub measures: Measures,
    /// Launches in a gap sequence.
    pub launches: usize,
    /// Launches a host-submit sample.
    pub submit_launches: usize,
    /// The device's ordinal.
    pub device: usize,
    /// How to sample.
    pub settings: Settings,
    /// Seconds after which the blocking kernel gives up.
    pub blocking_timeout: f64,
    /// NVRTC options.
    pub nvrtc_options: Vec<String>,
    /// Markdown file.
    pub md: Option<String>,
    /// CSV file.
    pub csv: Option<String>,
    /// JSON file.
    pub json: Option<String>,
    /// No markdown on standard output.
    pub quiet: bool,
}

/// A PDL check (`ordo-measure check`): the kernels, sweep, statistics and outputs as a run has
/// them (`measures` unused), and what the check adds.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckSpec {
    /// The module, kernels (A, and B after `--then`), axes, statistics and outputs.
    pub run: RunSpec,
    /// B's parameters whose memory A writes (`--a-writes`), if stated.
    pub a_writes: Option<BTreeSet<usize>>,
    /// B's parameters whose memory A reads (`--a-reads`), if stated.
    pub a_reads: Option<BTreeSet<usize>>,
    /// Also the edge B -> A.
    pub chain: bool,
    /// The static check only.
    pub static_only: bool,
    /// Dynamic trials a point.
    pub trials: u64,
    /// Their seed.
    pub seed: u64,
    /// The longest delay of A's accesses, nanoseconds.
    pub max_delay_ns: u64,
    /// Measure the gaps of an edge proven safe.
    pub advise: bool,
}

/// A comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareSpec {
    /// The reference report.
    pub reference: String,
    /// The candidate report.
    pub candidate: String,
    /// Rows whose relative difference is below this fraction are not listed.
    pub threshold: f64,
}

fn number<T: core::str::FromStr>(flag: &str, v: &str) -> Result<T, SpecError> {
    v.trim().parse::<T>().map_err(|_| SpecError::new(format!("{flag}: {v:?} is not a valid number")))
}

fn seconds(flag: &str, v: &str) -> Result<f64, SpecError> {
    let x: f64 = number(flag, v)?;
    if !x.is_finite() || x < 0.0 {
        return Err(SpecError::new(format!("{flag}: {v:?} is not a non-negative number")));
    }
    Ok(x)
}

fn count(flag: &str, v: &str, lo: usize, hi: usize) -> Result<usize, SpecError> {
    let x: usize = number(flag, v)?;
    if x < lo || x > hi {
        return Err(SpecError::new(format!("{flag}: {x} is not in {lo}..={hi}")));
    }
    Ok(x)
}

/// Parses the arguments after the program's name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, SpecError> {
    let mut args = args.into_iter();
    match args.next().as_deref() {
        None | Some("help" | "--help" | "-h") => Ok(Command::Help),
        Some("run") => parse_run(args).map(|r| Command::Run(Box::new(r))),
        Some("check") => parse_check(args).map(|c| Command::Check(Box::new(c))),
        Some("compare") => parse_compare(args).map(Command::Compare),
        Some(other) => Err(SpecError::new(format!("unknown command {other:?}: run, check, compare or help"))),
    }
}

fn parse_compare(args: impl Iterator<Item = String>) -> Result<CompareSpec, SpecError> {
    let mut files = Vec::new();
    let mut threshold = 0.0;
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        if a == "--threshold-diff" {
            let v = args.next().ok_or_else(|| SpecError::new("--threshold-diff needs a percentage"))?;
            threshold = seconds("--threshold-diff", &v)? / 100.0;
        } else if a.starts_with('-') {
            return Err(SpecError::new(format!("compare: unknown option {a:?}")));
        } else {
            files.push(a);
        }
    }
    let [reference, candidate]: [String; 2] =
        files.try_into().map_err(|_| SpecError::new("compare takes two JSON reports: REFERENCE CANDIDATE"))?;
    Ok(CompareSpec { reference, candidate, threshold })
}

/// `0,2`, or `none`: parameter indexes.
fn indexes(flag: &str, v: &str) -> Result<BTreeSet<usize>, SpecError> {
    if v.trim() == "none" {
        return Ok(BTreeSet::new());
    }
    v.split(',').map(|x| count(flag, x, 0, 4095)).collect()
}

fn parse_check(args: impl Iterator<Item = String>) -> Result<CheckSpec, SpecError> {
    let mut rest = Vec::new();
    let (mut a_writes, mut a_reads) = (None, None);
    let (mut chain, mut static_only, mut advise) = (false, false, true);
    let (mut trials, mut seed, mut max_delay_ns) = (200u64, 1u64, 100_000u64);
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let flag = a.as_str();
        let mut value = || args.next().ok_or_else(|| SpecError::new(format!("{flag} needs a value")));
        match flag {
            "--a-writes" => set_once(&mut a_writes, indexes(flag, &value()?)?, flag)?,
            "--a-reads" => set_once(&mut a_reads, indexes(flag, &value()?)?, flag)?,
            "--chain" => chain = true,
            "--static" => static_only = true,
            "--no-advice" => advise = false,
            "--trials" => trials = count(flag, &value()?, 1, 1 << 20)? as u64,
            "--seed" => seed = number(flag, &value()?)?,
            "--max-delay-us" => max_delay_ns = count(flag, &value()?, 0, 10_000_000)? as u64 * 1000,
            _ => rest.push(a),
        }
    }
    let run = parse_run(rest.into_iter())?;
    if chain && run.kernels.len() < 2 {
        return Err(SpecError::new("--chain needs two kernels: A, then B after --then"));
    }
    Ok(CheckSpec { run, a_writes, a_reads, chain, static_only, trials, seed, max_delay_ns, advise })
}

/// Kernel options as given, before defaults.
#[derive(Default)]
struct KernelOpts {
    name: Option<String>,
    pdl_form: Option<String>,
    pdl: bool,
    grid: Option<Dims>,
    block: Option<Dims>,
    smem: Option<Expr>,
    args: Vec<ArgSpec>,
}

fn parse_run(args: impl Iterator<Item = String>) -> Result<RunSpec, SpecError> {
    let mut module: Option<String> = None;
    let mut kernels: Vec<KernelOpts> = vec![KernelOpts::default()];
    let mut axes = Vec::new();
    let mut measures = Measures::ALL;
    let (mut launches, mut submit_launches, mut device) = (100usize, 100usize, 0usize);
    let mut std_rel = StdRelParams::default();
    let mut settings = Settings::default();
    let mut rounds = None;
    let mut blocking_timeout = 30.0;
    let mut nvrtc_options = Vec::new();
    let (mut md, mut csv, mut json, mut quiet) = (None, None, None, false);
    let mut args = args.peekable();
    while let Some(a) = args.next() {
        let flag = a.as_str();
        let mut value = || args.next().ok_or_else(|| SpecError::new(format!("{flag} needs a value")));
        let k = kernels.last_mut().ok_or_else(|| SpecError::new("internal: no kernel"))?;
        match flag {
            "-k" | "--kernel" => set_once(&mut k.name, value()?, flag)?,
            "--pdl-form" => set_once(&mut k.pdl_form, value()?, flag)?,
            "--pdl" => k.pdl = true,
            "--grid" => set_once(&mut k.grid, Dims::parse(&value()?).map_err(|e| prefixed(flag, e))?, flag)?,
            "--block" => set_once(&mut k.block, Dims::parse(&value()?).map_err(|e| prefixed(flag, e))?, flag)?,
            "--smem" => set_once(&mut k.smem, Expr::parse(&value()?).map_err(|e| prefixed(flag, e))?, flag)?,
            "--arg" => k.args.push(ArgSpec::parse(&value()?)?),
            "--then" => {
                if kernels.len() == 2 {
                    return Err(SpecError::new("--then given twice: at most two kernels, A then B"));
                }
                kernels.push(KernelOpts::default());
            }
            "--module" => set_once(&mut module, value()?, flag)?,
            "-a" | "--axis" => axes.push(Axis::parse(&value()?)?),
            "--measure" => measures = Measures::parse(&value()?)?,
            "--launches" => launches = count(flag, &value()?, 2, 512)?,
            "--submit-launches" => submit_launches = count(flag, &value()?, 1, 512)?,
            "--device" => device = count(flag, &value()?, 0, 1 << 16)?,
            "--min-samples" => settings.limits.min_samples = count(flag, &value()?, 1, 1 << 30)?,
            "--min-time" => std_rel.min_time = seconds(flag, &value()?)?,
            "--max-noise" => std_rel.max_noise = seconds(flag, &value()?)? / 100.0,
            "--timeout" => settings.limits.timeout = seconds(flag, &value()?)?,
            "--rounds" => rounds = Some(count(flag, &value()?, 1, 1 << 30)?),
            "--throttle-threshold" => settings.throttle.threshold = seconds(flag, &value()?)? / 100.0,
            "--throttle-recovery-delay" => settings.throttle.recovery_delay = seconds(flag, &value()?)?,
            "--blocking-timeout" => blocking_timeout = seconds(flag, &value()?)?,
            "--nvrtc-opt" => nvrtc_options.push(value()?),
            "--md" => set_once(&mut md, value()?, flag)?,
            "--csv" => set_once(&mut csv, value()?, flag)?,
            "--json" => set_once(&mut json, value()?, flag)?,
            "--quiet" => quiet = true,
            other if other.starts_with('-') && other.len() > 1 => {
                return Err(SpecError::new(format!("run: unknown option {other:?} (see ordo-measure help)")))
            }
            positional => set_once(&mut module, positional.to_owned(), "the module")?,
        }
    }
    settings.stopping = match rounds {
        Some(r) => Stopping::Rounds(r),
        None => Stopping::StdRel(std_rel),
    };
    let module = module.ok_or_else(|| SpecError::new("run: no module file (a cubin, fatbin, .ptx or .cu)"))?;
    let axis_names: Vec<String> = axes.iter().map(|a: &Axis| a.name.clone()).collect();
    let axis_names: Vec<&str> = axis_names.iter().map(String::as_str).collect();
    let mut out: Vec<KernelSpec> = Vec::new();
    for (i, k) in kernels.into_iter().enumerate() {
        let which = if i == 0 { "kernel A" } else { "kernel B (after --then)" };
        let name = k.name.ok_or_else(|| SpecError::new(format!("{which}: no --kernel NAME")))?;
        if k.pdl && k.pdl_form.is_some() {
            return Err(SpecError::new(format!(
                "{which}: --pdl (the kernel waits) and --pdl-form (another kernel waits): one or the other"
            )));
        }
        let first = out.first();
        let spec = KernelSpec {
            name,
            pdl_form: k.pdl_form,
            pdl: k.pdl,
            grid: k.grid.or_else(|| first.map(|f| f.grid.clone())).unwrap_or(Dims::x(1)),
            block: k.block.or_else(|| first.map(|f| f.block.clone())).unwrap_or(Dims::x(1)),
            smem: k.smem.or_else(|| first.map(|f| f.smem.clone())).unwrap_or(Expr::Num(0)),
            args: k.args,
        };
        let known: Vec<&str> = first.map(KernelSpec::buffer_names).unwrap_or_default();
        spec.check(&axis_names, &known)?;
        out.push(spec);
    }
    let points = crate::spec::axes::points(&axes)?;
    let terms: usize = out.iter().map(KernelSpec::terms).sum();
    if points.len().saturating_mul(terms) > MAX_SWEEP_TERMS {
        return Err(SpecError::new(format!(
            "a sweep too large to check: {} points of {terms} terms (the kernels' expressions and arguments) \
             are more than {MAX_SWEEP_TERMS} evaluations: fewer points, fewer arguments or shorter expressions",
            points.len()
        )));
    }
    // Every expression at every point, so that nothing runs before the whole sweep is known to be
    // right; the messages are written only for an error.
    for point in points {
        let var = |name: &str| point.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        for k in &out {
            k.evaluate_at(&var).map_err(|e| match point_label(&axes, &point) {
                Some(at) => SpecError::new(format!("at {at}: {e}")),
                None => e,
            })?;
        }
    }
    Ok(RunSpec {
        module,
        kernels: out,
        axes,
        measures,
        launches,
        submit_launches,
        device,
        settings,
        blocking_timeout,
        nvrtc_options,
        md,
        csv,
        json,
        quiet,
    })
}

/// A point's axis values as the report shows them (`n=2^20 m=3`); `None` without axes.
pub fn point_label(axes: &[Axis], point: &[(String, i64)]) -> Option<String> {
    let shown: Vec<String> =
        point.iter().zip(axes).map(|((name, v), axis)| format!("{name}={}", axis.show(*v))).collect();
    (!shown.is_empty()).then(|| shown.join(" "))
}

/// What the command prints after `ordo-measure: ` for an error of the engine. The engine's own
/// checks are usage errors whose call is `ordo-measure`: their words alone (the name is already
/// the line's prefix, and their kind says nothing to the user); any other error whole, with the
/// call that failed.
pub fn error_text(e: &Error) -> String {
    match e {
        Error::Usage(u) if u.call == PROGRAM => u.what.to_string(),
        other => other.to_string(),
    }
}

/// The command's name, which begins each of its error lines (`ordo-measure: ...`) and names the
/// engine's own usage errors.
pub const PROGRAM: &str = "ordo-measure";

fn set_once<T>(slot: &mut Option<T>, value: T, what: &str) -> Result<(), SpecError> {
    if slot.is_some() {
        return Err(SpecError::new(format!("{what} given twice")));
    }
    *slot = Some(value);
    Ok(())
}

fn prefixed(flag: &str, e: SpecError) -> SpecError {
    SpecError::new(format!("{flag}: {e}"))
}
