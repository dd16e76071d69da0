//! The PDL check on a GPU: the seeded bugs of `tests/data/pdl_cases.cu` that the static check
//! finds are seen racing too (B reading A's output before its wait, B zeroing A's input before
//! its wait, B waiting in even blocks only), with the trial, point and perturbation that showed
//! it; correct pairs (a B that reads only its own buffer before the wait, ordo's chain step
//! ping-ponging, `ordo/pdl.cuh`'s PDL form after itself) never differ from the runs without PDL;
//! the delayed copy of A computes what A computes; and the command proves the chain step safe,
//! then advises on it, but gives no advice for a racing pair.
//!
//! Needs sm_90 (griddepcontrol); on an older GPU the tests say so and pass. They hold one lock
//! for their whole body, as tests/gpu.rs's do: the gap measure's blocking kernel must not wait on
//! another test's device-wide call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(measure_engine)]

mod support;

use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::library::Library;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{Device, SharedStreamBuffer};
use ordo_cuda_measure::check::{self, DynamicReport, Verdict};
use ordo_cuda_measure::cli::{self, CheckSpec, Command};
use ordo_cuda_measure::engine::module::{Module, ModuleSource};
use ordo_cuda_measure::engine::{Edge, Engine, Func, Options, RaceOptions};
use ordo_cuda_measure::Settings;

const CASES: &str = include_str!("data/pdl_cases.ptx");
const CHAIN: &str = include_str!("data/chain_step.ptx");

fn alone() -> std::sync::MutexGuard<'static, ()> {
    static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GPU.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn engine() -> Option<Engine> {
    let e = Engine::new(
        Device::new(0).unwrap(),
        Options { settings: Settings::rounds(3), launches: 20, submit_launches: 20, ..Options::default() },
    )
    .unwrap();
    let cc = e.header().device.compute_capability;
    if cc.0 < 9 {
        eprintln!("needs sm_90 (griddepcontrol); this device is sm_{}{}: skipped", cc.0, cc.1);
        return None;
    }
    Some(e)
}

/// `ptx` written to a file of its own (the test may run where the source tree is not).
fn file(name: &str, ptx: &str) -> String {
    let dir = std::env::temp_dir().join(format!("ordo-measure-check-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, ptx).unwrap();
    path.to_str().unwrap().to_owned()
}

fn spec(module: &str, words: &str) -> CheckSpec {
    let line = format!("check {module} {words}");
    match cli::parse(line.split_whitespace().map(str::to_owned)).unwrap() {
        Command::Check(c) => *c,
        other => panic!("{other:?}"),
    }
}

/// A (`produce_early(in, a, n)`) then B with its arguments, 4096 elements in 16 blocks of 256.
fn pair(b: &str, b_args: &str) -> String {
    format!(
        "--kernel produce_early --grid n/256 --block 256 --arg in:f32[n]=rand --arg a:f32[n] --arg i32=n \
         --then --kernel {b} {b_args} -a n=4096"
    )
}

/// The static verdict and the dynamic check of the spec's first edge.
fn both(e: &mut Engine, spec: &CheckSpec) -> (Verdict, DynamicReport) {
    let source = ModuleSource::read(&spec.run.module, &[], None).unwrap();
    let verdict = check::check_static(source.ptx.as_ref().unwrap(), spec).unwrap()[0].verdict;
    let (a, a_index, b, b_index) = check::edges(spec)[0].clone();
    let module = Module::from_source(&source, &[], &[a.as_str()]).unwrap();
    let edge = Edge { a, a_index, b, b_index };
    let options = RaceOptions { trials: spec.trials, seed: spec.seed, max_delay_ns: spec.max_delay_ns };
    let report = e.race_check(&module, &spec.run, &edge, &options).unwrap();
    assert_eq!((report.trials, report.points), (spec.trials, 1));
    assert!(
        !report.notes.iter().any(|n| n.contains("no early trigger") || n.contains("launched as it is")),
        "{:?}",
        report.notes
    );
    (verdict, report)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_a_read_of_as_output_before_the_wait_is_seen_racing() {
    let _alone = alone();
    let Some(mut e) = engine() else { return };
    let m = file("cases.ptx", CASES);
    let s = spec(&m, &pair("consume_raw", "--arg @a --arg f32[n]=0.5 --arg out:f32[n] --arg i32=n"));
    let (verdict, report) = both(&mut e, &s);
    assert_eq!(verdict, Verdict::Race);
    assert!(report.trials_with_race > 0, "no trial of {} showed the race: {report:#?}", report.trials);
    let first = &report.races[0];
    assert_eq!(first.buffer, "B argument 2 (out)");
    assert_eq!(first.point, vec![("n".to_owned(), "4096".to_owned())]);
    assert_eq!(first.grids, [(16, 1, 1), (16, 1, 1)]);
    assert_ne!(first.expected, first.seen);
    assert_eq!(report.unstable_bytes, 0);
    eprintln!(
        "{} of {} trials raced; first: trial {} ({})",
        report.trials_with_race,
        report.trials,
        first.trial,
        first.perturbation.describe()
    );
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_a_write_of_memory_a_reads_before_the_wait_is_seen_racing() {
    let _alone = alone();
    let Some(mut e) = engine() else { return };
    let m = file("cases.ptx", CASES);
    let s = spec(&m, &pair("consume_war", "--arg @a --arg @in --arg out:f32[n] --arg i32=n"));
    let (verdict, report) = both(&mut e, &s);
    assert_eq!(verdict, Verdict::Race);
    assert!(report.trials_with_race > 0, "{report:#?}");
    // A read its input after B zeroed it: A's output differs.
    assert_eq!(report.races[0].buffer, "A argument 1 (a)", "{report:#?}");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_a_wait_on_one_branch_is_seen_racing() {
    let _alone = alone();
    let Some(mut e) = engine() else { return };
    let m = file("cases.ptx", CASES);
    let s = spec(&m, &pair("consume_some", "--arg @a --arg out:f32[n] --arg i32=n"));
    let (verdict, report) = both(&mut e, &s);
    assert_eq!(verdict, Verdict::Race);
    assert!(report.trials_with_race > 0, "{report:#?}");
    assert_eq!(report.races[0].buffer, "B argument 1 (out)");
    // Only the blocks that skip the wait (odd ones) read early: the first element differing is
    // in block 1 or later.
    assert!(report.races.iter().all(|r| r.index >= 256), "{report:#?}");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_correct_pairs_never_differ() {
    let _alone = alone();
    let Some(mut e) = engine() else { return };
    let cases = file("cases.ptx", CASES);
    let chain = file("chain_step.ptx", CHAIN);
    for s in [
        spec(&cases, &pair("consume", "--arg @a --arg s:f32[n]=0.5 --arg out:f32[n] --arg i32=n")),
        spec(
            &chain,
            "--kernel chain_step --pdl-form chain_step_pdl --grid n/256 --block 256 \
             --arg a:f32[n]=rand --arg b:f32[n] --arg s:f32[n]=0.5 --arg i32=n \
             --then --kernel chain_step --pdl-form chain_step_pdl --arg @b --arg @a --arg @s --arg i32=n -a n=4096",
        ),
        spec(&cases, "--kernel scale --pdl-form scale_pdl --grid n/256 --block 256 --arg f32[n]=rand --arg f32[n] --arg i32=n -a n=4096"),
    ] {
        let (verdict, report) = both(&mut e, &s);
        assert_eq!(verdict, Verdict::Safe, "{}", s.run.kernels[0].name);
        assert_eq!(report.trials_with_race, 0, "{report:#?}");
        assert_eq!(report.unstable_bytes, 0);
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_the_delayed_copy_computes_what_the_kernel_computes() {
    let _alone = alone();
    let Some(e) = engine() else { return };
    let d = check::delay::delayed(CASES, "produce_early").unwrap();
    let lib = Library::from_ptx(&d.ptx).unwrap();
    let s = e.stream().as_stream();
    let n = 100_000usize;
    let input: Vec<f32> = (0..n).map(|i| (i % 101) as f32 * 0.5 - 7.0).collect();
    let mut inp = SharedStreamBuffer::<f32>::alloc_async(n, e.stream()).unwrap();
    copy::h2d_blocking(inp.as_mut_slice(), &input, s).unwrap();
    let mut outs = [
        SharedStreamBuffer::<f32>::zeroed_async(n, e.stream()).unwrap(),
        SharedStreamBuffer::<f32>::zeroed_async(n, e.stream()).unwrap(),
    ];
    let blocks = n.div_ceil(256) as u32;
    for (i, name) in [c"produce_early", c"produce_early__ordo_delayed"].into_iter().enumerate() {
        let func = Func::from_library(&lib, name).unwrap();
        let (mut p, mut o, mut nn) = (inp.as_mut_ptr(), outs[i].as_mut_ptr(), n as i32);
        let (mut delay, mut from, mut trigger) = (20_000u64, blocks / 2, 1u32);
        let mut args: Vec<*mut core::ffi::c_void> = vec![
            (&mut p as *mut *mut f32).cast(),
            (&mut o as *mut *mut f32).cast(),
            (&mut nn as *mut i32).cast(),
            (&mut delay as *mut u64).cast(),
            (&mut from as *mut u32).cast(),
            (&mut trigger as *mut u32).cast(),
        ];
        if i == 0 {
            args.truncate(3);
        }
        // SAFETY: (in, out, n[, delay, from, trigger]): n floats each; alive until the synchronise.
        unsafe {
            ordo_cuda_core::launch::launch_raw(func.as_runtime(), s, &LaunchConfig::new(blocks, 256), args.as_mut_ptr())
                .unwrap()
        };
    }
    s.synchronize().unwrap();
    let mut a = vec![0f32; n];
    let mut b = vec![0f32; n];
    copy::d2h_blocking(&mut a, outs[0].as_slice(), s).unwrap();
    copy::d2h_blocking(&mut b, outs[1].as_slice(), s).unwrap();
    for i in 0..n {
        assert_eq!(a[i], input[i] * 2.0 + 1.0, "original, element {i}");
    }
    assert_eq!(a, b, "the delayed copy computes the same");
}

/// The command as a process: exit status, JSON report, standard error.
fn command(args: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let json = std::env::temp_dir().join(format!("ordo-measure-check-gpu-{}.json", std::process::id()));
    let mut all: Vec<&str> = args.to_vec();
    let path = json.to_str().unwrap().to_owned();
    all.extend(["--json", &path, "--quiet"]);
    let out = std::process::Command::new(support::ordo_measure_binary()).args(&all).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = std::fs::read_to_string(&json).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let _ = std::fs::remove_file(&json);
    (out.status.code(), v, stderr)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn check_gpu_the_command_proves_then_advises_and_refuses_advice_for_a_race() {
    let _alone = alone();
    if engine().is_none() {
        return;
    }
    let chain = file("chain_step.ptx", CHAIN);
    let words = "--kernel chain_step --pdl-form chain_step_pdl --grid n/256 --block 256 \
                 --arg a:f32[n]=rand --arg b:f32[n] --arg s:f32[n]=0.5 --arg i32=n \
                 --then --kernel chain_step --pdl-form chain_step_pdl --arg @b --arg @a --arg @s --arg i32=n \
                 -a n=[4096,1M] --chain --trials 50 --rounds 3";
    let mut args = vec!["check", chain.as_str()];
    args.extend(words.split_whitespace());
    let (code, v, err) = command(&args);
    assert_eq!(code, Some(0), "{err}\n{v:#}");
    assert_eq!(v["verdict"], "safe");
    assert_eq!(v["edges"].as_array().unwrap().len(), 2);
    assert_eq!(v["dynamic"].as_array().unwrap().len(), 2);
    assert!(v["dynamic"].as_array().unwrap().iter().all(|d| d["trials_with_race"] == 0 && d["points"] == 2));
    let advice = v["advice"].as_array().unwrap();
    assert_eq!(advice.len(), 4, "two edges at two points: {v:#}");
    for a in advice {
        assert_ne!(a["recommendation"], "not measured", "{a:#}");
        for k in ["gap_plain", "gap_pdl", "release", "period_plain", "period_pdl"] {
            assert!(a[k]["seconds"].as_f64().is_some_and(f64::is_finite), "{k}: {a:#}");
        }
        assert!(a["waves"].as_f64().is_some_and(|w| w > 0.0), "{a:#}");
    }
    let cases = file("cases.ptx", CASES);
    let mut args = vec!["check", cases.as_str()];
    let raw = pair("consume_raw", "--arg @a --arg f32[n]=0.5 --arg out:f32[n] --arg i32=n");
    args.extend(raw.split_whitespace());
    args.extend(["--rounds", "3"]);
    let (code, v, err) = command(&args);
    assert_eq!(code, Some(1), "{err}\n{v:#}");
    assert_eq!(v["verdict"], "race");
    assert!(v["dynamic"][0]["trials_with_race"].as_u64().unwrap() > 0, "{v:#}");
    assert!(v["advice"].as_array().unwrap().is_empty());
    assert!(v["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with("no advice")), "{v:#}");
}
