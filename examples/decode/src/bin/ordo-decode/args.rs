//! The command line.

use std::path::PathBuf;

pub const USAGE: &str = "\
ordo-decode: a Llama-3-8B-shaped decode step on ordo (cuBLAS GEMMs, ordo's kernels with PDL,
the bucket graph cache), eager and replayed, with a correctness pass and a per-operation profile.

usage: ordo-decode [--layers N] [--check-layers N] [--batches 1,8,32] [--contexts 512,2048]
                   [--steps N] [--warmup N] [--chunk N] [--no-pdl] [--no-reference] [--out DIR]
       ordo-decode --serve SECONDS [--barrier DIR] [--layers N] [--batches B] [--contexts C]

  --layers N        layers timed (default 32)
  --check-layers N  layers of the correctness pass whose outputs torch_decode.py compares (default 2)
  --batches LIST    batch sizes, one graph-cache bucket each (default 1,8,32)
  --contexts LIST   cached tokens before the new one (default 512,2048)
  --steps N         timed steps a configuration and mode (default 60)
  --warmup N        untimed steps before them (default 5)
  --chunk N         cache positions an attention work item takes (default 128)
  --no-pdl          launch ordo's kernels in their plain forms, without PDL
  --no-reference    skip the CPU reference check (2 layers at batch 1, the first context)
  --out DIR         where ordo.json and the check outputs go (default decode-run)
  --serve SECONDS   throughput mode, for several processes at once (scripts/mps-bench.sh): the
                    first batch and context only, replayed, each step synchronised, for SECONDS;
                    one JSON line on stdout (steps, steps/s, median and p99 ms)
  --profile-step    with --serve: one replayed step between cudaProfilerStart and cudaProfilerStop
                    before the timed steps (for `ncu --profile-from-start off`: the kernels of
                    one step; scripts/decode-kernel-sum.sh)
  --barrier DIR     with --serve: once warm, create DIR/ready.PID, then wait (at most 10 minutes)
                    for DIR/go, which holds the wall-clock time (Unix ms) the timed steps start
                    at: processes started one after the other time the same window

cuBLAS: ORDO_CUBLAS names the library; unset, the one PyTorch's wheel ships (asked of python3) is
tried first, then the loader's libcublas.so.13/.12.";

/// What the command line asks for.
#[derive(Debug, Clone)]
pub struct Args {
    pub layers: usize,
    pub check_layers: usize,
    pub batches: Vec<usize>,
    pub contexts: Vec<usize>,
    pub steps: usize,
    pub warmup: usize,
    pub chunk: usize,
    pub pdl: bool,
    pub reference: bool,
    pub out: PathBuf,
    /// `--serve`: seconds of replayed steps.
    pub serve_s: Option<f64>,
    /// `--profile-step`: one step between the profiler's start and stop.
    pub profile_step: bool,
    /// `--barrier`: the folder where served processes meet before their timed steps.
    pub barrier: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Args {
        Args {
            layers: 32,
            check_layers: 2,
            batches: vec![1, 8, 32],
            contexts: vec![512, 2048],
            steps: 60,
            warmup: 5,
            chunk: 128,
            pdl: true,
            reference: true,
            out: PathBuf::from("decode-run"),
            serve_s: None,
            barrier: None,
            profile_step: false,
        }
    }
}

/// `None` for `--help`.
pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args::default();
    let number = |v: Option<String>, name: &str| -> Result<usize, String> {
        let v = v.ok_or(format!("{name} needs a value"))?;
        v.parse::<usize>().map_err(|_| format!("{name}: not a number: {v}"))
    };
    let list = |v: Option<String>, name: &str| -> Result<Vec<usize>, String> {
        let v = v.ok_or(format!("{name} needs a value"))?;
        let mut l = v
            .split(',')
            .map(|x| x.trim().parse::<usize>().map_err(|_| format!("{name}: not a number: {x}")))
            .collect::<Result<Vec<_>, _>>()?;
        l.sort_unstable();
        l.dedup();
        if l.is_empty() || l[0] == 0 {
            return Err(format!("{name}: positive numbers, comma-separated"));
        }
        Ok(l)
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--layers" => a.layers = number(it.next(), "--layers")?,
            "--check-layers" => a.check_layers = number(it.next(), "--check-layers")?,
            "--batches" => a.batches = list(it.next(), "--batches")?,
            "--contexts" => a.contexts = list(it.next(), "--contexts")?,
            "--steps" => a.steps = number(it.next(), "--steps")?,
            "--warmup" => a.warmup = number(it.next(), "--warmup")?,
            "--chunk" => a.chunk = number(it.next(), "--chunk")?,
            "--no-pdl" => a.pdl = false,
            "--no-reference" => a.reference = false,
            "--out" => a.out = PathBuf::from(it.next().ok_or("--out needs a value")?),
            "--serve" => {
                let v = it.next().ok_or("--serve needs a value")?;
                match v.parse::<f64>() {
                    Ok(s) if s.is_finite() && s > 0.0 && s <= 3600.0 => a.serve_s = Some(s),
                    _ => return Err(format!("--serve: seconds in (0, 3600]: {v}")),
                }
            }
            "--profile-step" => a.profile_step = true,
            "--barrier" => a.barrier = Some(PathBuf::from(it.next().ok_or("--barrier needs a value")?)),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.layers == 0 || a.check_layers == 0 || a.check_layers > a.layers || a.steps == 0 {
        return Err("--layers, --check-layers (at most --layers) and --steps must be positive".into());
    }
    Ok(Some(a))
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn args(line: &str) -> Result<Option<super::Args>, String> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn serve_takes_seconds_and_a_barrier() {
        let a = args("--serve 2.5 --barrier /tmp/b --batches 8 --profile-step").ok().flatten();
        let a = a.as_ref();
        assert_eq!(a.and_then(|a| a.serve_s), Some(2.5));
        assert_eq!(a.and_then(|a| a.barrier.clone()), Some(std::path::PathBuf::from("/tmp/b")));
        assert_eq!(a.map(|a| a.batches.clone()), Some(vec![8]));
        assert_eq!(a.map(|a| a.profile_step), Some(true));
        assert_eq!(args("").ok().flatten().and_then(|a| a.serve_s), None);
    }

    #[test]
    fn serve_refuses_what_is_not_a_duration() {
        for bad in ["--serve 0", "--serve -1", "--serve nan", "--serve inf", "--serve 1e9", "--serve", "--barrier"] {
            assert!(args(bad).is_err(), "{bad}");
        }
    }
}
