//! The command line without a GPU: the worked example's command parses into what it says; wrong
//! command lines are errors that name what is wrong; no list of arguments, however mangled,
//! makes the parser panic (random words and fragments of valid ones, thousands of them); and the
//! command itself, run as a process, refuses expressions nested 60,000 deep and sizes past 64 bits
//! with one line that starts with its name once, rather than dying of a stack overflow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ordo_cuda_core::error::{Error, UsageKind};
use ordo_cuda_measure::cli::{self, Command, Measures};
use ordo_cuda_measure::spec::args::ArgSpec;
use ordo_cuda_measure::spec::expr::{MAX_DEPTH, MAX_LEN};
use ordo_cuda_measure::stopping::Stopping;
use std::process::Command as Process;

fn parse(words: &str) -> Result<Command, String> {
    cli::parse(words.split_whitespace().map(str::to_owned)).map_err(|e| e.to_string())
}

fn run(words: &str) -> cli::RunSpec {
    match parse(words).unwrap() {
        Command::Run(r) => *r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_worked_example_parses() {
    let r = run("run chain_step.cubin --kernel chain_step_stamped --pdl-form chain_step_stamped_pdl \
                 --grid n/256 --block 256 --arg f32[n]=rand --arg f32[n] --arg f32[n]=0.5 --arg i32=n --arg stamps \
                 -a n=[4096,1M] --json out.json --min-time 0.1 --max-noise 1 --timeout 5");
    assert_eq!(r.module, "chain_step.cubin");
    assert_eq!(r.kernels.len(), 1);
    let k = &r.kernels[0];
    assert_eq!((k.name.as_str(), k.pdl_form.as_deref()), ("chain_step_stamped", Some("chain_step_stamped_pdl")));
    assert!(k.self_stamped() && !k.pdl);
    assert_eq!(k.args.len(), 5);
    assert_eq!(k.args[4], ArgSpec::Stamps);
    let at = |n: i64| k.grid.eval(&|v| (v == "n").then_some(n)).unwrap();
    assert_eq!(at(4096), (16, 1, 1));
    assert_eq!(at(4097), (17, 1, 1));
    assert_eq!(r.axes[0].values, vec![4096, 1 << 20]);
    assert_eq!(r.json.as_deref(), Some("out.json"));
    assert_eq!(r.measures, Measures::ALL);
    match r.settings.stopping {
        Stopping::StdRel(p) => assert!((p.min_time - 0.1).abs() < 1e-12 && (p.max_noise - 0.01).abs() < 1e-12),
        other => panic!("{other:?}"),
    }
    assert_eq!(r.settings.limits.timeout, 5.0);
}

#[test]
fn a_then_b_inherits_the_shape_and_sees_the_first_kernels_buffers() {
    let r = run("run k.cu -k a --grid 4 --block 128 --arg x:f32[64] --arg y:f32[64] --then -k b --arg @y --arg @x --rounds 7 --measure gaps,cold");
    assert_eq!(r.kernels.len(), 2);
    assert_eq!(r.kernels[1].grid, r.kernels[0].grid);
    assert_eq!(r.kernels[1].args, vec![ArgSpec::Ref("y".into()), ArgSpec::Ref("x".into())]);
    assert_eq!(r.settings.stopping, Stopping::Rounds(7));
    assert!(r.measures.gaps && r.measures.cold && !r.measures.submit);
}

#[test]
fn wrong_command_lines_say_what_is_wrong() {
    for (words, says) in [
        ("frob", "unknown command"),
        ("run", "no module"),
        ("run k.cubin", "no --kernel"),
        ("run k.cubin -k a --arg f32[n]", "\"n\" is not an axis"),
        ("run k.cubin -k a --arg @x", "@x names no buffer"),
        ("run k.cubin -k a --arg x:f32[4] --arg x:f32[4]", "given twice"),
        ("run k.cubin -k a --arg stamps --arg stamps", "stamps given twice"),
        ("run k.cubin -k a --pdl --pdl-form b", "one or the other"),
        ("run k.cubin -k a --then", "kernel B (after --then): no --kernel"),
        ("run k.cubin -k a --then -k b --then -k c", "--then given twice"),
        ("run k.cubin -k a --grid", "--grid needs a value"),
        ("run k.cubin -k a --grid 1,2,3,4", "X[,Y[,Z]]"),
        ("run k.cubin -k a --launches 1", "not in 2..=512"),
        ("run k.cubin -k a --launches many", "not a valid number"),
        ("run k.cubin -k a --timeout -1", "non-negative"),
        ("run k.cubin -k a --measure fast", "not one of"),
        ("run k.cubin -k a --frob", "unknown option"),
        ("run a.cubin b.cubin -k a", "the module given twice"),
        ("run k.cubin -k a -a n=[1:1000] -a m=[1:1000]", "more than 100000 points"),
        ("run k.cubin -k a -a n=1 -a n=2", "given twice"),
        ("compare a.json", "two JSON reports"),
        ("compare a.json b.json --threshold-diff", "needs a percentage"),
    ] {
        let e = parse(words).expect_err(words);
        assert!(e.contains(says), "{words:?}: {e:?} should say {says:?}");
    }
    assert!(matches!(parse("help"), Ok(Command::Help)));
    assert!(matches!(parse(""), Ok(Command::Help)));
}

#[test]
fn mangled_command_lines_never_panic() {
    let words = [
        "run",
        "compare",
        "k.cubin",
        "-k",
        "--kernel",
        "a",
        "--then",
        "--arg",
        "f32[n]",
        "f32[n]=1.5",
        "x:f32[n/2]=rand",
        "@x",
        "stamps",
        "launch",
        "i32=n",
        "u8=300",
        "bf16=1e-3",
        "--grid",
        "n/256",
        "2^[1:3]",
        "(n",
        "n)",
        "-a",
        "n=[1,2]",
        "n=2^[12:24:4]",
        "n[pow2]=[1:4]",
        "--block",
        "256,2",
        "--smem",
        "4K",
        "--rounds",
        "0",
        "--max-noise",
        "nan",
        "--pdl",
        "--pdl-form",
        "b",
        "--measure",
        "gaps,hot",
        "--json",
        "--",
        "-",
        "=",
        "[",
        "]",
        ":",
        "@",
        "^",
        "9999999999999999999999",
        "f32[",
        "x:",
        "--timeout",
        "inf",
        "-0",
        "0x",
        "1G*1G*1G",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 14) as usize;
        let mut args: Vec<String> = Vec::with_capacity(len);
        for _ in 0..len {
            let w = words[(next() % words.len() as u64) as usize];
            // Sometimes a fragment of a word.
            let w = if next() % 5 == 0 { &w[..(next() as usize) % (w.len() + 1)] } else { w };
            args.push(w.to_owned());
        }
        let _ = cli::parse(args);
    }
}

/// The command run as a process with `args`: its exit code (`None` when a signal ended it) and
/// its standard error.
fn ordo_measure(args: &[&str]) -> (Option<i32>, String) {
    let out = Process::new(support::ordo_measure_binary()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// An expression nested `levels` deep: `((((1))))`.
fn nested(levels: usize) -> String {
    format!("{}1{}", "(".repeat(levels), ")".repeat(levels))
}

/// Each option that takes an expression, with `levels` levels of nesting, and a sum of `levels`
/// terms (parsed in a loop, but a tree as deep as it is long, evaluated and dropped by recursion),
/// and what the error says: 2,000 levels fit in [`MAX_LEN`] and are refused by their depth; 60,000
/// (a 120 KB argument, under Linux's 128 KiB for one argument, which overflowed the stack before
/// the depth limit) by their length.
fn deep_command_lines(levels: usize) -> (Vec<Vec<String>>, String) {
    let deep = nested(levels);
    let long = vec!["1"; levels].join("+");
    let says = if deep.len() <= MAX_LEN {
        format!("expression nested deeper than {MAX_DEPTH}")
    } else {
        format!("expression longer than {MAX_LEN} bytes")
    };
    let base = ["run", "k.ptx", "--kernel", "k"].map(String::from).to_vec();
    let with = |extra: &[String]| [base.clone(), extra.to_vec()].concat();
    let mut lines = Vec::new();
    for e in [&deep, &long] {
        lines.push(with(&["--grid".into(), e.clone()]));
        lines.push(with(&["--block".into(), format!("1,{e}")]));
        lines.push(with(&["--smem".into(), e.clone()]));
        lines.push(with(&["--arg".into(), format!("f32[{e}]")]));
        lines.push(with(&["--arg".into(), format!("i32={e}")]));
        lines.push(with(&["--arg".into(), format!("u8[4]={e}")]));
        lines.push(with(&["-a".into(), format!("n={e}")]));
        lines.push(with(&["-a".into(), format!("n=[1,{e}]")]));
        lines.push(with(&["-a".into(), format!("n=[1:{e}]")]));
        lines.push(with(&["-a".into(), format!("n=2^[{e}]")]));
    }
    (lines, says)
}

#[test]
fn expressions_nested_60000_deep_are_refused_by_the_parser() {
    for levels in [2_000, 60_000] {
        let (lines, says) = deep_command_lines(levels);
        for line in lines {
            let e = cli::parse(line.clone()).unwrap_err().to_string();
            assert!(e.contains(&says), "{levels} {}: {e}", line[4]);
            assert!(e.len() < 400, "{}: the error quotes an excerpt, not the argument: {e}", line[4]);
        }
    }
}

#[test]
fn expressions_nested_60000_deep_are_refused_by_the_command_without_a_stack_overflow() {
    for levels in [2_000, 60_000] {
        let (lines, says) = deep_command_lines(levels);
        for line in lines {
            let args: Vec<&str> = line.iter().map(String::as_str).collect();
            let (code, stderr) = ordo_measure(&args);
            assert_eq!(
                code,
                Some(2),
                "{levels} {} {}: ended by {code:?} (134 or a signal: the stack overflowed): {stderr}",
                line[4],
                &line[5][..8]
            );
            assert!(stderr.contains(&says), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(stderr.len() < 400, "{} bytes of error", stderr.len());
        }
    }
}

/// A balanced sum of `leaves` names: as shallow as a tree of that many terms can be.
fn balanced(leaves: usize) -> String {
    if leaves == 1 {
        return "n".into();
    }
    format!("({}+{})", balanced(leaves / 2), balanced(leaves - leaves / 2))
}

/// An 80 KB expression 16 deep (20,000 terms) passed the depth limit, and the command evaluated
/// and wrote it at each of the sweep's points: 10,000 points took 10 s to parse, 100,000 over
/// 300 s. It is refused by its length now, at once, in each option that takes an expression.
#[test]
fn an_80_kb_expression_is_refused_at_once() {
    let e = balanced(20_000);
    assert!(e.len() > 79_000, "{}", e.len());
    let sweep = "-a n=[1:100000]";
    for option in [
        format!("--arg f32[{e}]"),
        format!("--arg u8[n]={e}"),
        format!("--arg i32={e}"),
        format!("--grid {e}"),
        format!("--block 1,{e}"),
        format!("--smem {e}"),
    ] {
        let started = std::time::Instant::now();
        let err = parse(&format!("run k.ptx -k k {sweep} {option}")).unwrap_err();
        let took = started.elapsed();
        assert!(err.contains(&format!("expression longer than {MAX_LEN} bytes")), "{}: {err}", &option[..12]);
        assert!(err.len() < 400, "{err}");
        assert!(took.as_secs_f64() < 1.0, "{}: {took:?}", &option[..12]);
    }
}

/// A sweep of 100,000 points (the most there may be) with written expressions is checked whole,
/// every expression at every point, in well under a second (5 s allowed: a debug build, a loaded
/// machine); and the check still finds a point that is wrong.
#[test]
fn a_sweep_of_100000_points_parses_in_well_under_a_second() {
    let words = "run k.ptx -k k --grid (n+255)/256 --block 256 --smem 4*n%1K --arg x:f32[n]=rand \
                 --arg f32[2*n+1]=0.5 --arg u8[n]=7 --arg i32=n --arg u64=n*n --arg stamps \
                 --then -k b --arg @x --arg i32=n/2 -a n=[1:100000]";
    let started = std::time::Instant::now();
    let r = run(words);
    let took = started.elapsed();
    assert_eq!(r.axes[0].values.len(), 100_000);
    assert!(took.as_secs_f64() < 5.0, "{took:?}");
    let started = std::time::Instant::now();
    let e = parse(&words.replace("[1:100000]", "[0:99999]")).unwrap_err();
    assert!(e.starts_with("at n=0: kernel k, argument 0 (f32[n]): a buffer of 0 elements"), "{e}");
    let e = parse(&words.replace("u8[n]=7", "u8[n-99999]=7")).unwrap_err();
    assert!(e.starts_with("at n=1: kernel k, argument 2 (u8[n-99999])"), "{e}");
    let e = parse(&words.replace("u8[n]=7", "u8[99999-n]=7")).unwrap_err();
    assert!(e.starts_with("at n=99999: kernel k, argument 2 (u8[99999-n]): a buffer of 0 elements"), "{e}");
    assert!(started.elapsed().as_secs_f64() < 15.0, "{:?}", started.elapsed());
}

#[test]
fn reports_nested_deep_are_refused_by_compare() {
    // `compare` reads its reports with serde_json, whose recursion limit (128) refuses these.
    for text in ["[".repeat(100_000), format!("{{\"rows\":{}", "[".repeat(100_000))] {
        assert!(ordo_cuda_measure::Report::from_json(&text).is_err());
    }
}

#[test]
fn buffer_sizes_past_64_bits_are_refused_before_the_gpu_is_touched() {
    for (axis, arg, says) in [
        ("n=2^62", "f32[n]", "4611686018427387904 elements of f32 (4 bytes each) are more than 2^63-1 bytes"),
        ("n=2^61", "f64[n]", "are more than 2^63-1 bytes"),
        ("n=2^62", "f32[n*8]", "integer overflow"),
        ("n=[1,2^62]", "u8[n*4]", "integer overflow"),
        ("n=0", "f32[n]", "a buffer of 0 elements"),
        ("n=[4,-4]", "f32[n]", "a buffer of -4 elements"),
    ] {
        let e = parse(&format!("run k.ptx -k k -a {axis} --arg {arg}")).unwrap_err();
        assert!(e.contains(says) && e.contains("kernel k, argument 0"), "{axis} {arg}: {e}");
        let (code, stderr) = ordo_measure(&["run", "k.ptx", "-k", "k", "-a", axis, "--arg", arg]);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.starts_with("ordo-measure: at n=") && stderr.contains(says), "{stderr}");
    }
    // The point is named as the report shows it.
    let e = parse("run k.ptx -k k -a n=2^[10:62:26] --arg f32[n]").unwrap_err();
    assert!(e.starts_with("at n=2^62: kernel k, argument 0 (f32[n])"), "{e}");
    // Every point of the sweep is checked: shapes and scalars too.
    for (words, says) in [
        ("-a n=[1,0] --grid n", "at n=0: kernel k: grid: dimension 0"),
        ("-a n=2^[0,40] --arg i32=n", "at n=2^40: kernel k: argument 0: 1099511627776 does not fit"),
        ("-a n=[1,0] --grid 4/n", "division by zero"),
        ("-a n=2^40 --smem n", "shared memory: 1099511627776 bytes"),
        ("-a n=4 --arg u8[n]=300", "argument 0: 300 does not fit"),
    ] {
        let e = parse(&format!("run k.ptx -k k {words}")).unwrap_err();
        assert!(e.contains(says), "{words}: {e}");
    }
    // 160 GiB is a size: whether it fits is the device's to say (tests/gpu.rs).
    assert!(parse("run k.ptx -k k -a n=40G --arg f32[n]=rand").is_ok());
}

/// Short expressions, but many of them: 1,000 `--arg`s (12 KB of command line) over 100,000
/// points were 100 million evaluations to check, and 10,000 of them a billion. Past
/// `MAX_SWEEP_TERMS` the sweep is refused before any is made; the same arguments over fewer points
/// are checked.
#[test]
fn a_sweep_with_more_terms_than_the_bound_is_refused_before_it_is_checked() {
    let args = " --arg i32=n".repeat(1_000);
    let started = std::time::Instant::now();
    let e = parse(&format!("run k.ptx -k k -a n=[1:100000]{args}")).unwrap_err();
    assert!(started.elapsed().as_secs_f64() < 1.0, "{:?}", started.elapsed());
    assert!(e.starts_with("a sweep too large to check: 100000 points of 1007 terms"), "{e}");
    assert!(e.contains(&format!("more than {} evaluations", ordo_cuda_measure::spec::MAX_SWEEP_TERMS)), "{e}");
    let r = run(&format!("run k.ptx -k k -a n=[1:1000]{args}"));
    assert_eq!((r.kernels[0].args.len(), r.kernels[0].terms()), (1_000, 1_007));
}

#[test]
fn error_lines_name_the_command_once() {
    let once =
        |line: &str| line.starts_with("ordo-measure: ") && !line["ordo-measure: ".len()..].starts_with("ordo-measure");
    // The engine's own errors are usage errors whose call is the command: their words alone.
    let own = Error::usage(UsageKind::InvalidArgument, cli::PROGRAM, "reading k.ptx: No such file");
    assert_eq!(format!("{}: {}", cli::PROGRAM, cli::error_text(&own)), "ordo-measure: reading k.ptx: No such file");
    // Another function's error keeps its call.
    let other = Error::invalid("LaunchConfig::validate", "block of 2048 threads");
    assert!(cli::error_text(&other).starts_with("LaunchConfig::validate"));
    // The command, as a process: a wrong command line, and a run that fails (here: no driver, or,
    // on a GPU machine, the engine's error for a missing module file).
    let missing = std::env::temp_dir().join(format!("ordo-measure-missing-{}.ptx", std::process::id()));
    let missing = missing.to_str().unwrap();
    for (args, code) in [(vec!["frob"], 2), (vec!["run", missing, "-k", "k"], 1)] {
        let (got, stderr) = ordo_measure(&args);
        assert_eq!(got, Some(code), "{args:?}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(once(first), "{args:?}: {first:?} should start with exactly one \"ordo-measure: \"");
    }
}
