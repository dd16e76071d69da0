//! The static PDL check on nvcc's PTX, no GPU: the seeded bugs of `tests/data/pdl_cases.cu`
//! (B reading A's output before its wait, B writing memory A reads, a wait on one branch only, a
//! B that never waits, an address loaded from memory) are found at their lines, with the
//! parameter their address comes from and a path that misses the wait; correct kernels (ordo's
//! chain step in both directions, `ordo/pdl.cuh`'s PDL form, a B that reads only what A leaves
//! alone) are proven safe once the arguments say what A writes, and only "safe if" without them;
//! A's trigger placement is reported early, late or absent. The command's `check --static` gives
//! the same on PTX and on a fatbin's PTX, with exit status 0 (safe), 1 (race), 3 (unproven), and
//! JSON that says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use ordo_cuda_measure::check::{self, EdgeReport, Finding, KernelAnalysis, Knowledge, Placement, Verdict, When};
use ordo_cuda_measure::cli::{self, CheckSpec, Command};
use std::collections::BTreeSet;

const CASES: &str = include_str!("data/pdl_cases.ptx");
const CHAIN: &str = include_str!("data/chain_step.ptx");

fn spec(words: &str) -> CheckSpec {
    match cli::parse(words.split_whitespace().map(str::to_owned)).unwrap() {
        Command::Check(c) => *c,
        other => panic!("{other:?}"),
    }
}

/// The static check of `words` (a `check` command line) on `ptx`.
fn edges(ptx: &str, words: &str) -> Vec<EdgeReport> {
    check::check_static(ptx, &spec(&format!("check m.ptx {words}"))).unwrap()
}

/// The line of the first line of `kernel`'s body in `ptx` holding `text`.
fn line_of(ptx: &str, kernel: &str, text: &str) -> usize {
    let start = ptx.find(&format!(".entry {kernel}(")).unwrap();
    let offset = start + ptx[start..].find(text).unwrap();
    ptx[..offset].matches('\n').count() + 1
}

/// A: `produce_*(in, a, n)`; B: the consumer's own arguments after `--then`.
fn pair(a: &str, b: &str, b_args: &str) -> String {
    format!("--kernel {a} --arg in:f32[n]=rand --arg a:f32[n] --arg i32=n --then --kernel {b} {b_args} -a n=4096")
}

#[test]
fn a_read_of_as_output_before_the_wait_is_a_race_at_its_line() {
    let e =
        &edges(CASES, &pair("produce_early", "consume_raw", "--arg @a --arg f32[n]=0.5 --arg out:f32[n] --arg i32=n"))
            [0];
    assert_eq!(e.verdict, Verdict::Race);
    assert_eq!(e.waits, vec![line_of(CASES, "consume_raw", "griddepcontrol.wait")]);
    let before: Vec<_> = e.before_wait().collect();
    assert_eq!(before.len(), 1, "{before:?}");
    let x = before[0];
    assert_eq!(x.line, line_of(CASES, "consume_raw", "ld.global.f32"));
    assert_eq!(x.from, vec!["parameter 0 (consume_raw_param_0)"]);
    assert_eq!(x.when, When::BeforeOnEveryPath);
    assert!(
        matches!(&x.finding, Some(Finding::Race(t)) if t.contains("which A writes (read after write)")),
        "{:?}",
        x.finding
    );
    // Everything else is certainly after the wait.
    assert!(e.accesses.iter().filter(|a| a.line != x.line).all(|a| a.when == When::AfterWait && a.finding.is_none()));
    assert!(
        e.knowledge.source.starts_with("derived from the arguments: A writes parameter 0"),
        "{}",
        e.knowledge.source
    );
}

#[test]
fn without_arguments_the_access_is_safe_only_if_and_the_flags_decide() {
    let words = "--kernel produce_early --then --kernel consume_raw";
    let e = &edges(CASES, words)[0];
    assert_eq!(e.verdict, Verdict::Unproven);
    let x = e.before_wait().next().unwrap();
    assert_eq!(x.finding, Some(Finding::SafeIf("A does not write parameter 0 (consume_raw_param_0)'s memory".into())));
    assert_eq!(edges(CASES, &format!("{words} --a-writes 0"))[0].verdict, Verdict::Race);
    let told = &edges(CASES, &format!("{words} --a-writes 2"))[0];
    assert_eq!(told.verdict, Verdict::Safe);
    assert!(told.knowledge.source.starts_with("stated: --a-writes 2"), "{}", told.knowledge.source);
    assert_eq!(edges(CASES, &format!("{words} --a-writes none"))[0].verdict, Verdict::Safe);
    let err = check::check_static(CASES, &spec(&format!("check m.ptx {words} --a-writes 7"))).unwrap_err();
    assert!(err.to_string().contains("has 4 parameters: there is no parameter 7"), "{err}");
}

#[test]
fn a_write_of_memory_a_reads_before_the_wait_is_a_race() {
    let e = &edges(CASES, &pair("produce_early", "consume_war", "--arg @a --arg @in --arg out:f32[n] --arg i32=n"))[0];
    assert_eq!(e.verdict, Verdict::Race);
    let x: Vec<_> = e.before_wait().collect();
    assert_eq!(x.len(), 1, "{x:?}");
    assert_eq!(x[0].line, line_of(CASES, "consume_war", "st.global.u32"));
    assert_eq!(x[0].from, vec!["parameter 1 (consume_war_param_1)"]);
    assert!(matches!(&x[0].finding, Some(Finding::Race(t)) if t.contains("which A reads (write after read)")), "{x:?}");
    // Stated: A reads B's parameter 1 and writes 0.
    let stated = &edges(CASES, "--kernel produce_early --then --kernel consume_war --a-writes 0 --a-reads 1")[0];
    assert_eq!(stated.verdict, Verdict::Race);
    // Stated writes only: whether A reads it is the condition left.
    let half = &edges(CASES, "--kernel produce_early --then --kernel consume_war --a-writes 0")[0];
    assert_eq!(half.verdict, Verdict::Unproven);
    let f = half.before_wait().next().unwrap().finding.clone().unwrap();
    assert_eq!(f, Finding::SafeIf("A does not read parameter 1 (consume_war_param_1)'s memory".into()));
}

#[test]
fn a_wait_on_one_branch_leaves_the_other_racing_with_a_path_shown() {
    let e = &edges(CASES, &pair("produce_early", "consume_some", "--arg @a --arg out:f32[n] --arg i32=n"))[0];
    assert_eq!(e.verdict, Verdict::Race);
    let load = e.before_wait().find(|a| a.instruction.starts_with("ld.global")).unwrap();
    let When::BeforeOnSomePath { path } = &load.when else { panic!("{:?}", load.when) };
    // The path takes the branch around the wait.
    let branch = line_of(CASES, "consume_some", "@%p3 bra");
    assert!(path[0].starts_with(&format!("line {branch}: @%p3 bra")) && path[0].ends_with("(taken)"), "{path:?}");
    assert!(matches!(load.finding, Some(Finding::Race(_))));
    // The store goes to B's own buffer: safe.
    let store = e.before_wait().find(|a| a.instruction.starts_with("st.global")).unwrap();
    assert!(matches!(store.finding, Some(Finding::Safe(_))), "{:?}", store.finding);
}

#[test]
fn a_kernel_that_never_waits_is_reported_as_such() {
    let e = &edges(CASES, &pair("produce_early", "consume_never", "--arg @a --arg out:f32[n] --arg i32=n"))[0];
    assert!(e.waits.is_empty());
    assert_eq!(e.verdict, Verdict::Race);
    assert!(e.accesses.iter().all(|a| a.when == When::BeforeOnEveryPath));
    let md = check::CheckReport { module: "m".into(), edges: vec![e.clone()], ..Default::default() }.to_markdown();
    assert!(md.contains("**never waits**"), "{md}");
}

#[test]
fn an_address_loaded_from_memory_may_be_global_and_is_not_followed() {
    let e = &edges(CASES, "--kernel produce_early --then --kernel consume_indirect")[0];
    assert_eq!(e.verdict, Verdict::Unproven);
    let before: Vec<_> = e.before_wait().collect();
    assert_eq!(before.len(), 2, "{before:?}");
    // The table's entry, read through parameter 0; then the generic load through the entry.
    assert_eq!(before[0].from, vec!["parameter 0 (consume_indirect_param_0)"]);
    assert_eq!(before[1].space, check::Space::MaybeGlobal);
    assert!(before[1].instruction.starts_with("ld.f32"), "{}", before[1].instruction);
    assert!(matches!(&before[1].finding, Some(Finding::Unknown(t)) if t.starts_with("a pointer loaded from memory")));
}

#[test]
fn the_trigger_is_reported_early_late_or_absent() {
    let t = |a: &str| edges(CASES, &format!("--kernel {a} --then --kernel consume"))[0].trigger.clone();
    let early = t("produce_early");
    assert_eq!((early.placement, early.on_every_path), (Placement::Early, true));
    assert_eq!(early.lines, vec![line_of(CASES, "produce_early", "griddepcontrol.launch_dependents")]);
    assert_eq!((early.stores, early.stores_after_every), (1, 1));
    assert!(early.summary.starts_with("early: line") && early.summary.contains("safe"), "{}", early.summary);
    let late = t("produce_late");
    assert_eq!((late.placement, late.stores_after_some), (Placement::Late, 0));
    // The trigger after the loop is on every path out of A.
    assert!(late.on_every_path, "{late:?}");
    let none = t("produce_plain");
    assert_eq!((none.placement, none.lines.len()), (Placement::None, 0));
    assert!(none.summary.contains("never triggers"));
}

#[test]
fn correct_kernels_are_proven_safe_with_their_arguments() {
    // B reads `scale` before its wait: A does not write it.
    let ok = pair("produce_early", "consume", "--arg @a --arg s:f32[n]=0.5 --arg out:f32[n] --arg i32=n");
    let e = &edges(CASES, &ok)[0];
    assert_eq!(e.verdict, Verdict::Safe, "{e:#?}");
    assert_eq!(e.before_wait().count(), 1);
    assert!(
        matches!(&e.before_wait().next().unwrap().finding, Some(Finding::Safe(t)) if t.contains("from the arguments"))
    );
    // Without arguments: safe only if A does not write `scale`.
    assert_eq!(edges(CASES, "--kernel produce_early --then --kernel consume")[0].verdict, Verdict::Unproven);
    // ordo's chain step, ping-ponging between a and b, both edges of A B A B.
    let chain = "--kernel chain_step --pdl-form chain_step_pdl --grid n/256 --block 256 \
                 --arg a:f32[n]=rand --arg b:f32[n] --arg s:f32[n]=0.5 --arg i32=n \
                 --then --kernel chain_step --pdl-form chain_step_pdl --arg @b --arg @a --arg @s --arg i32=n -a n=4096 --chain";
    let both = edges(CHAIN, chain);
    assert_eq!(both.len(), 2);
    for e in &both {
        assert_eq!((e.a.as_str(), e.b.as_str()), ("chain_step_pdl", "chain_step_pdl"));
        assert_eq!(e.verdict, Verdict::Safe, "{e:#?}");
        assert_eq!(e.trigger.placement, Placement::Early);
    }
    // One kernel after itself (what `run --pdl-form` measures): the same memory on both sides.
    let one = "--kernel chain_step --pdl-form chain_step_pdl --arg f32[n]=rand --arg f32[n] --arg f32[n]=0.5 --arg i32=n -a n=4096";
    assert_eq!(edges(CHAIN, one)[0].verdict, Verdict::Safe);
    // ordo/pdl.cuh's PDL form waits first: nothing before its wait, safe with nothing known.
    let pdl = &edges(CASES, "--kernel scale --pdl-form scale_pdl")[0];
    assert_eq!((pdl.verdict, pdl.before_wait().count()), (Verdict::Safe, 0));
    // Its plain form launched with PDL is not: it writes what the previous launch writes.
    let plain = &edges(CASES, "--kernel scale --arg f32[n] --arg f32[n] --arg i32=n -a n=4096")[0];
    assert_eq!(plain.verdict, Verdict::Race);
    assert!(plain.waits.is_empty());
}

#[test]
fn the_api_takes_kernels_and_knowledge_directly() {
    let a = KernelAnalysis::new(CASES, "produce_early").unwrap();
    let b = KernelAnalysis::new(CASES, "consume").unwrap();
    assert_eq!(a.effects().writes, BTreeSet::from([1]));
    assert_eq!(a.effects().reads, BTreeSet::from([0]));
    let none = EdgeReport::check(&a, &b, Knowledge::none(&a));
    assert_eq!(none.verdict, Verdict::Unproven);
    let ids = |v: &[&str]| v.iter().map(|s| (!s.is_empty()).then(|| (*s).to_owned())).collect::<Vec<_>>();
    let k = Knowledge::from_buffers(&a, &ids(&["x", "y", ""]), &b, &ids(&["y", "s", "z", ""]));
    assert_eq!((k.a_writes.clone(), k.a_reads.clone()), (Some(BTreeSet::from([0])), Some(BTreeSet::new())));
    assert_eq!(EdgeReport::check(&a, &b, k).verdict, Verdict::Safe);
    assert!(KernelAnalysis::new(CASES, "missing").unwrap_err().to_string().contains("no kernel \"missing\""));
}

/// `ordo-measure check --static` as a process: exit status and standard output.
fn command(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(support::ordo_measure_binary()).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_command_exits_by_verdict_and_writes_json() {
    let data = support::manifest_dir().join("tests/data");
    let ptx = data.join("pdl_cases.ptx").display().to_string();
    let json = std::env::temp_dir().join(format!("ordo-measure-check-{}.json", std::process::id()));
    let json = json.to_str().unwrap();
    let (code, out, err) = command(&[
        "check",
        &ptx,
        "--static",
        "--kernel",
        "produce_early",
        "--then",
        "--kernel",
        "consume_raw",
        "--json",
        json,
    ]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.contains("**verdict: unproven** (exit 3)"), "{out}");
    let (code, out, _) = command(&[
        "check",
        &ptx,
        "--static",
        "--kernel",
        "produce_early",
        "--then",
        "--kernel",
        "consume_raw",
        "--a-writes",
        "0",
    ]);
    assert_eq!(code, Some(1), "{out}");
    let (code, _, _) = command(&["check", &ptx, "--static", "--kernel", "scale_pdl"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["verdict"], "unproven");
    assert_eq!(v["exit_code"], 3);
    let e = &v["edges"][0];
    assert_eq!(
        (e["a"].as_str(), e["b"].as_str(), e["never_waits"].as_bool()),
        (Some("produce_early"), Some("consume_raw"), Some(false))
    );
    assert_eq!(e["trigger"]["placement"], "early");
    let first = &e["accesses"][0];
    assert_eq!(first["when"], "before the wait on every path");
    assert_eq!(first["finding"]["kind"], "safe if");
    assert_eq!(first["from"][0], "parameter 0 (consume_raw_param_0)");
    assert!(v["dynamic"].as_array().unwrap().is_empty() && v["advice"].as_array().unwrap().is_empty());
    // The fatbin of the same source, its PTX stored uncompressed, reads the same.
    let fatbin = data.join("pdl_cases.fatbin").display().to_string();
    let (code, out, err) =
        command(&["check", &fatbin, "--static", "--kernel", "produce_early", "--then", "--kernel", "consume_never"]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(out.contains("**never waits**"), "{out}");
    // A wrong kernel name is a failure that names the module's kernels.
    let (code, _, err) = command(&["check", &ptx, "--static", "--kernel", "nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("no kernel \"nope\"") && err.contains("consume_raw"), "{err}");
    let _ = std::fs::remove_file(json);
}

#[test]
fn check_options_parse_and_wrong_ones_are_refused() {
    let c = spec("check k.ptx --kernel a --then --kernel b --a-writes 0,2 --a-reads none --chain --trials 50 --seed 9 --max-delay-us 20 --no-advice --rounds 3");
    assert_eq!(c.a_writes, Some(BTreeSet::from([0, 2])));
    assert_eq!(c.a_reads, Some(BTreeSet::new()));
    assert!(c.chain && !c.static_only && !c.advise);
    assert_eq!((c.trials, c.seed, c.max_delay_ns), (50, 9, 20_000));
    assert_eq!(c.run.kernels.len(), 2);
    let d = spec("check k.ptx --kernel a");
    assert_eq!((d.trials, d.seed, d.max_delay_ns, d.advise, d.a_writes), (200, 1, 100_000, true, None));
    for (words, says) in [
        ("check k.ptx --kernel a --chain", "--chain needs two kernels"),
        ("check k.ptx --kernel a --a-writes x", "--a-writes"),
        ("check k.ptx --kernel a --a-writes 1 --a-writes 2", "given twice"),
        ("check k.ptx --kernel a --trials 0", "--trials"),
        ("check --kernel a", "no module file"),
    ] {
        let err = cli::parse(words.split_whitespace().map(str::to_owned)).unwrap_err().to_string();
        assert!(err.contains(says), "{words}: {err}");
    }
}
