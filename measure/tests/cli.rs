//! The command line without a GPU: the worked example's command parses into what it says; wrong
//! command lines are errors that name what is wrong; and no list of arguments, however mangled,
//! makes the parser panic (random words and fragments of valid ones, thousands of them).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_measure::cli::{self, Command, Measures};
use ordo_cuda_measure::spec::args::ArgSpec;
use ordo_cuda_measure::stopping::Stopping;

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
