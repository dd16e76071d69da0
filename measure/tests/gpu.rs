//! The engine on a GPU, checked against what must hold: a kernel that spins a known time measures
//! at least that time (cold, hot, span) and not much more; the SM clock read around samples is
//! plausible; the stamped copy of a kernel computes what the kernel computes and writes its
//! stamps; in a sequence, a kernel's release from its wait never comes before the previous
//! kernel's end, and without PDL a kernel never starts before the previous one ended (both would
//! break if stamps went to the wrong launch's slots); ordo's launch and `cudaLaunchKernelEx`
//! measure on the same kernel; a wrong argument list is refused before any launch; CUDA C compiles
//! through NVRTC into the same stamped forms.
//!
//! The chain-step tests need sm_90 (the PTX is nvcc's for sm_90, and the kernel uses
//! griddepcontrol); on an older GPU they say so and pass.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(measure_engine)]

mod support;

use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::library::Library;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{Device, SharedStreamBuffer};
use ordo_cuda_measure::engine::module::{self, Module};
use ordo_cuda_measure::engine::{Engine, Func, Options, RawArg, Subject, Target};
use ordo_cuda_measure::report::Row;
use ordo_cuda_measure::{ptx, Settings};

const CHAIN_PTX: &str = include_str!("data/chain_step.ptx");

/// A kernel that spins `ns` nanoseconds of %globaltimer in every thread and has thread 0 of
/// block 0 write 1 to `out[0]`.
const USER_SPIN: &str = "
.version 7.0
.target sm_70
.address_size 64
.visible .entry user_spin(.param .u64 ns, .param .u64 out)
{
\t.reg .pred %p<3>;
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<6>;
\tld.param.u64 %rd1, [ns];
\tmov.u64 %rd2, %globaltimer;
LOOP:
\tmov.u64 %rd3, %globaltimer;
\tsub.u64 %rd4, %rd3, %rd2;
\tsetp.lt.u64 %p1, %rd4, %rd1;
\t@%p1 bra LOOP;
\tmov.u32 %r1, %tid.x;
\tmov.u32 %r2, %ctaid.x;
\tor.b32 %r3, %r1, %r2;
\tsetp.ne.u32 %p2, %r3, 0;
\t@%p2 ret;
\tld.param.u64 %rd5, [out];
\tcvta.to.global.u64 %rd5, %rd5;
\tst.global.u32 [%rd5], 1;
\tret;
}
";

fn options() -> Options {
    Options { settings: Settings::rounds(5), launches: 20, submit_launches: 20, ..Options::default() }
}

fn engine() -> Engine {
    Engine::new(Device::new(0).unwrap(), options()).unwrap()
}

/// Held by every GPU test for its whole body: the engine's blocking kernel spins until its host
/// thread has queued what goes behind it, and another thread's call that waits for the device
/// meanwhile (a synchronous free, a module load, a device synchronise) would hold up that thread's
/// launches until the spin times out. So the tests measure one at a time, as the command does.
fn alone() -> std::sync::MutexGuard<'static, ()> {
    static GPU: std::sync::Mutex<()> = std::sync::Mutex::new(());
    GPU.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn is_sm90(engine: &Engine) -> bool {
    let cc = engine.header().device.compute_capability;
    if cc.0 < 9 {
        eprintln!("needs sm_90 for the chain step (griddepcontrol); this device is sm_{}{}: skipped", cc.0, cc.1);
        return false;
    }
    true
}

fn rows_of<'a>(rows: &'a [Row], metric: &str, variant: &str) -> &'a Row {
    rows.iter().find(|r| r.metric == metric && r.variant == variant).unwrap_or_else(|| {
        panic!(
            "no row {metric} / {variant} among {:?}",
            rows.iter().map(|r| (&r.metric, &r.variant)).collect::<Vec<_>>()
        )
    })
}

/// The spin kernel, instrumented, as a subject with its stamped copy.
fn spin_subject(engine: &Engine, ns: u64, blocks: u32) -> (Subject, SharedStreamBuffer<u32>) {
    let inst = ptx::instrument(USER_SPIN, "user_spin").unwrap();
    let lib = Library::from_ptx(&inst.ptx).unwrap();
    let mut out = SharedStreamBuffer::<u32>::zeroed_async(1, engine.stream()).unwrap();
    let args = vec![RawArg::Bytes { word: ns, size: 8 }, RawArg::Bytes { word: out.as_mut_ptr() as u64, size: 8 }];
    let config = LaunchConfig::new(blocks, 64);
    let device = engine.device();
    let make = |name: &core::ffi::CStr, args: Vec<RawArg>| {
        let func = Func::from_library(&lib, name).unwrap();
        // SAFETY: user_spin(u64, u32*) writes out[0], which outlives the subject (the caller
        // drops the subject first).
        device.with_current(|| unsafe { Target::raw(name.to_str().unwrap(), func, config, args) }).unwrap()
    };
    let mut stamped = args.clone();
    stamped.push(RawArg::Stamps);
    let s = Subject::new(make(c"user_spin", args)).with_stamped(make(c"user_spin__ordo_stamped", stamped));
    (s, out)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_a_kernel_of_known_duration_measures_that_long() {
    let _alone = alone();
    let mut e = engine();
    const NS: u64 = 50_000;
    let (mut s, out) = spin_subject(&e, NS, 4);
    let cold = e.cold(&mut s).unwrap();
    let hot = e.hot(&mut s).unwrap();
    let gaps = e.gaps(&mut s, None).unwrap();
    for (rows, metric) in [(&cold, "gpu"), (&hot, "gpu")] {
        let r = rows_of(rows, metric, "ordo");
        let (lo, hi) = (r.summary.min, r.summary.max);
        assert!(lo >= NS as f64 * 1e-9 * 0.99 && hi < NS as f64 * 1e-9 + 30e-6, "{} {metric}: {lo}..{hi}", r.measure);
        // Five rounds: kept or dropped by the throttle rule, most kept.
        assert_eq!(r.summary.samples as u64 + r.dropped, 5);
        assert!(r.summary.samples >= 3, "{} of 5 dropped as throttled", r.dropped);
        let base = rows_of(rows, metric, "cudaLaunchKernelEx");
        assert!(r.ratio.unwrap() > 0.9 && r.ratio.unwrap() < 1.1, "the same kernel either way: {:?}", r.ratio);
        assert!(base.summary.median > 0.0);
    }
    // The SM clock read around the cold samples is that of a running GPU.
    let clock = rows_of(&cold, "gpu", "ordo").clock_hz.expect("a clock reading");
    let default = f64::from(e.header().device.sm_clock_khz) * 1e3;
    assert!(clock > 0.1 * default && clock < 1.6 * default, "SM clock {clock} against {default}");
    // The stamped copy's span is the spin, and without PDL nothing overlaps.
    for mode in ["eager", "queued", "graph"] {
        let span = rows_of(&gaps, "span", &format!("{mode}, no PDL, ordo"));
        assert!(
            span.summary.min >= NS as f64 * 1e-9 * 0.99 && span.summary.max < NS as f64 * 1e-9 + 10e-6,
            "{mode}: {:?}",
            span.summary
        );
        let gap = rows_of(&gaps, "gap", &format!("{mode}, no PDL, ordo"));
        assert!(gap.summary.min > -0.1e-6, "{mode}: a kernel started before the previous ended: {:?}", gap.summary);
        let period = rows_of(&gaps, "period", &format!("{mode}, no PDL, ordo"));
        assert!(period.summary.min >= NS as f64 * 1e-9 * 0.99, "{mode}: {:?}", period.summary);
    }
    let mut host = [0u32];
    copy::d2h_blocking(&mut host, out.as_slice(), e.stream().as_stream()).unwrap();
    assert_eq!(host[0], 1, "the kernel ran");
    drop(s);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_submit_and_sync_measure_every_path_that_launches() {
    let _alone = alone();
    let mut e = engine();
    let (mut s, _out) = spin_subject(&e, 0, 1);
    let submit = e.submit(&mut s).unwrap();
    let sync = e.sync(&mut s).unwrap();
    for (rows, metric) in [(&submit, "launch"), (&sync, "launch + sync")] {
        for path in ["ordo", "cudaLaunchKernelEx"] {
            let r = rows_of(rows, metric, path);
            assert!(r.summary.median > 0.0 && r.summary.median < 1e-3, "{metric} {path}: {:?}", r.summary);
        }
        // The other paths either measured or said why not.
        for path in ["<<<>>>", "cuLaunchKernelEx"] {
            assert!(rows.iter().any(|r| r.variant == path) || rows[0].note.contains(path), "{path}: {}", rows[0].note);
        }
    }
    assert!(e.header().driver_version >= 12050 && !e.header().device.name.is_empty());
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_a_wrong_argument_list_is_refused_before_any_launch() {
    let _alone = alone();
    let e = engine();
    let lib = Library::from_ptx(USER_SPIN).unwrap();
    let func = Func::from_library(&lib, c"user_spin").unwrap();
    let config = LaunchConfig::new(1, 1);
    let one = vec![RawArg::Bytes { word: 0, size: 8 }];
    // SAFETY: refused before any launch.
    let err = e.device().with_current(|| unsafe { Target::raw("user_spin", func.clone(), config, one) }).unwrap_err();
    assert!(err.to_string().contains("takes 2 parameters, 1 arguments given"), "{err}");
    let small = vec![RawArg::Bytes { word: 0, size: 4 }, RawArg::Bytes { word: 0, size: 8 }];
    // SAFETY: as above.
    let err = e.device().with_current(|| unsafe { Target::raw("user_spin", func, config, small) }).unwrap_err();
    assert!(err.to_string().contains("parameter 0 is 8 bytes"), "{err}");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_the_stamped_copy_computes_what_the_kernel_computes() {
    let _alone = alone();
    let e = engine();
    if !is_sm90(&e) {
        return;
    }
    let n = 100_000usize;
    let inst = ptx::instrument(CHAIN_PTX, "chain_step_pdl").unwrap();
    let lib = Library::from_ptx(&inst.ptx).unwrap();
    let s = e.stream().as_stream();
    let prev_host: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25 - 3.0).collect();
    let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
    let mut prev = SharedStreamBuffer::<f32>::alloc_async(n, e.stream()).unwrap();
    let mut scale = SharedStreamBuffer::<f32>::alloc_async(n, e.stream()).unwrap();
    copy::h2d_blocking(prev.as_mut_slice(), &prev_host, s).unwrap();
    copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s).unwrap();
    let mut outs = [
        SharedStreamBuffer::<f32>::zeroed_async(n, e.stream()).unwrap(),
        SharedStreamBuffer::<f32>::zeroed_async(n, e.stream()).unwrap(),
    ];
    let blocks = n.div_ceil(256) as u32;
    // Entry is stored, release kept by `red.min` and end by `red.max`: the release slots start at
    // u64::MAX, the others at 0, as the engine sets them.
    let initial: Vec<u64> = (0..3 * blocks as usize).map(|i| if i % 3 == 1 { u64::MAX } else { 0 }).collect();
    let mut st = SharedStreamBuffer::<u64>::zeroed_async(3 * blocks as usize, e.stream()).unwrap();
    copy::h2d_blocking(st.as_mut_slice(), &initial, s).unwrap();
    for (i, name) in [c"chain_step_pdl", c"chain_step_pdl__ordo_stamped"].into_iter().enumerate() {
        let func = Func::from_library(&lib, name).unwrap();
        let (mut p, mut o, mut sc, mut nn, mut stp) =
            (prev.as_mut_ptr(), outs[i].as_mut_ptr(), scale.as_mut_ptr(), n as i32, st.as_mut_ptr());
        let mut args: Vec<*mut core::ffi::c_void> = vec![
            (&mut p as *mut *mut f32).cast(),
            (&mut o as *mut *mut f32).cast(),
            (&mut sc as *mut *mut f32).cast(),
            (&mut nn as *mut i32).cast(),
            (&mut stp as *mut *mut u64).cast(),
        ];
        if i == 0 {
            args.pop();
        }
        // SAFETY: (prev, out, scale, n[, stamps]): n floats each, 3 u64 a block; alive until the
        // synchronise below.
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
        assert_eq!(a[i].to_bits(), prev_host[i].mul_add(scale_host[i], 1.0).to_bits(), "original, element {i}");
    }
    assert_eq!(a, b, "the stamped copy computes the same");
    let mut stamps = vec![0u64; 3 * blocks as usize];
    copy::d2h_blocking(&mut stamps, st.as_slice(), s).unwrap();
    for (blk, w) in stamps.chunks(3).enumerate() {
        // Entry is thread 0's stamp; another warp of the block may pass its wait (release) a
        // few nanoseconds before thread 0 stamps entry (seen under racecheck): only the end
        // bounds both.
        assert!(w[0] > 0 && w[2] >= w[0] && w[2] >= w[1], "block {blk}: entry {} release {} end {}", w[0], w[1], w[2]);
    }
}

/// Gap rows of a sequence: releases never before the previous end; without PDL no overlap.
fn check_gaps(rows: &[Row], releases: bool) {
    for mode in ["eager", "queued", "graph"] {
        let off = rows_of(rows, "gap", &format!("{mode}, no PDL, ordo"));
        assert!(off.summary.min > -0.1e-6, "{mode}: no PDL yet overlap: {:?}", off.summary);
        let on = rows_of(rows, "gap", &format!("{mode}, PDL, ordo"));
        assert!(on.summary.median.is_finite());
        if releases {
            let r = rows_of(rows, "release", &format!("{mode}, PDL, ordo"));
            assert!(r.summary.min > -0.1e-6, "{mode}: released before the previous kernel ended: {:?}", r.summary);
        }
        for pdl in ["no PDL", "PDL"] {
            let period = rows_of(rows, "period", &format!("{mode}, {pdl}, ordo"));
            assert!(period.summary.median > 0.0);
        }
    }
    for mode in ["eager", "queued"] {
        assert!(
            rows_of(rows, "gap", &format!("{mode}, PDL, ordo")).baseline.as_deref()
                == Some(&*format!("{mode}, PDL, cudaLaunchKernelEx"))
        );
    }
}

/// The run spec the command would make of these words.
fn spec(words: &str) -> ordo_cuda_measure::cli::RunSpec {
    match ordo_cuda_measure::cli::parse(words.split_whitespace().map(str::to_owned)).unwrap() {
        ordo_cuda_measure::cli::Command::Run(r) => *r,
        other => panic!("{other:?}"),
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_the_chain_step_from_ptx_self_stamped_and_instrumented() {
    let _alone = alone();
    let mut e = engine();
    if !is_sm90(&e) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-measure-gpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("chain_step.ptx");
    std::fs::write(&path, CHAIN_PTX).unwrap();
    let args = "--grid n/256 --block 256 --arg f32[n]=rand --arg f32[n] --arg f32[n]=0.5 --arg i32=n -a n=4096";
    for words in [
        format!(
            "run {} --kernel chain_step_stamped --pdl-form chain_step_stamped_pdl {args} --arg stamps",
            path.display()
        ),
        format!("run {} --kernel chain_step --pdl-form chain_step_pdl {args}", path.display()),
        format!("run {} --kernel chain_step_pdl --pdl {args}", path.display()),
    ] {
        let r = spec(&words);
        let m = Module::load(&r.module, &module::to_instrument(&r), &[], e.device()).unwrap();
        let point = vec![("n".to_owned(), 4096)];
        let (mut subjects, buffers) = module::subjects(&e, &m, &r, &point).unwrap();
        assert_eq!(buffers.bytes(), 3 * 4096 * 4);
        let rows = e.gaps(&mut subjects[0], None).unwrap();
        check_gaps(&rows, true);
        drop(subjects);
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_a_then_b_from_cuda_c_through_nvrtc() {
    let _alone = alone();
    let mut e = engine();
    if !is_sm90(&e) {
        return;
    }
    // The source is embedded at compile time and written to a file of its own, as a user's `.cu`
    // would be: the test binary may run where the source tree is not.
    let cu = std::env::temp_dir().join(format!("ordo-measure-chain-step-{}.cu", std::process::id()));
    std::fs::write(&cu, include_str!("../examples/chain_step.cu")).unwrap();
    let cu = cu.display();
    let words = format!(
        "run {cu} --kernel chain_step --pdl-form chain_step_pdl --grid n/256 --block 256 \
         --arg a:f32[n]=rand --arg b:f32[n] --arg s:f32[n]=0.5 --arg i32=n \
         --then --kernel chain_step --pdl-form chain_step_pdl --arg @b --arg @a --arg @s --arg i32=n -a n=4096"
    );
    let r = spec(&words);
    let m = match Module::load(&r.module, &module::to_instrument(&r), &[], e.device()) {
        Ok(m) => m,
        Err(err) if err.to_string().contains("not found by dlopen") => {
            eprintln!("NVRTC is not installed here: {err}");
            return;
        }
        Err(err) => panic!("{err}"),
    };
    let (mut subjects, _buffers) = module::subjects(&e, &m, &r, &[("n".to_owned(), 4096)]).unwrap();
    assert_eq!(subjects.len(), 2);
    let (a, b) = subjects.split_at_mut(1);
    let rows = e.gaps(&mut a[0], b.first_mut()).unwrap();
    for metric in ["gap A->B", "gap B->A", "release A->B", "release B->A", "span A", "span B", "period"] {
        let row = rows_of(&rows, metric, "graph, PDL, ordo");
        assert!(row.summary.median.is_finite(), "{metric}");
        if metric.starts_with("release") {
            assert!(row.summary.min > -0.1e-6, "{metric}: {:?}", row.summary);
        }
    }
    assert_eq!(rows[0].kernel, "chain_step -> chain_step");
    drop(subjects);
}

/// The command run as a process with `args`: its exit code, its standard error, and how long it
/// ran.
fn ordo_measure(args: &[&str]) -> (Option<i32>, String, std::time::Duration) {
    let started = std::time::Instant::now();
    let out = std::process::Command::new(support::ordo_measure_binary()).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), started.elapsed())
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_a_buffer_larger_than_the_device_fails_at_once_naming_it() {
    let _alone = alone();
    let path = std::env::temp_dir().join(format!("ordo-measure-oversized-{}.ptx", std::process::id()));
    std::fs::write(&path, USER_SPIN).unwrap();
    let path = path.to_str().unwrap();
    let (free, total) = module::memory_info(Device::new(0).unwrap()).unwrap();
    // One buffer of more than the whole memory (160 GiB on a 141 GiB H200: it used to print
    // nothing for 120 s, filling its contents on the host), then two that fit alone but not
    // together.
    let one = (total / 4 + (1 << 30)).to_string();
    let half = (free / 2 / 4 + (1 << 20)).to_string();
    for (fill, n, says) in [
        ("", &one, "more than the device's whole memory"),
        ("=rand", &one, "more than the device's whole memory"),
        ("=0.5", &one, "more than the device's whole memory"),
        ("", &half, "the 2 buffers need"),
    ] {
        let arg = format!("f32[n]{fill}");
        let axis = format!("n={n}");
        let mut args = vec!["run", path, "--kernel", "user_spin", "--arg", "u64=0", "--arg", &arg, "-a", &axis];
        if says.starts_with("the 2") {
            args.extend(["--arg", "f32[n]"]);
        }
        let (code, stderr, took) = ordo_measure(&args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(took.as_secs_f64() < 5.0, "{args:?}: failed after {took:?}, not at once: {stderr}");
        assert!(
            stderr.starts_with("ordo-measure: at n=") && !stderr.contains("ordo-measure: ordo-measure"),
            "{stderr}"
        );
        for part in [says, "kernel user_spin, argument 1 (f32[n])", "GiB (", "of memory", "free"] {
            assert!(stderr.contains(part), "{args:?}: {stderr:?} should say {part:?}");
        }
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_fills_larger_than_the_host_chunk_are_whole() {
    let _alone = alone();
    let e = engine();
    let path = std::env::temp_dir().join(format!("ordo-measure-fills-{}.ptx", std::process::id()));
    std::fs::write(&path, CHAIN_PTX).unwrap();
    // chain_step(prev, out, scale, n): three pointers and an i32; the buffers' types are the
    // test's (the kernel is not launched). 5M elements: past the 16 MiB host chunk, not a power of
    // two of it.
    let n = 5_000_000usize;
    let r = spec(&format!(
        "run {} --kernel chain_step --grid 1 --block 1 --arg f32[n]=rand --arg f64[n]=0.5 --arg i16[n]=-1 --arg i32=n -a n={n}",
        path.display()
    ));
    let m = Module::load(&r.module, &[], &[], e.device()).unwrap();
    let (subjects, buffers) = module::subjects(&e, &m, &r, &[("n".to_owned(), n as i64)]).unwrap();
    let read = |i: usize| {
        let b = buffers.get(i).unwrap();
        let mut host = vec![0u8; b.len()];
        copy::d2h_blocking(&mut host, b.as_slice(), e.stream().as_stream()).unwrap();
        host
    };
    let rand: Vec<f32> = read(0).chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert!(rand.iter().all(|x| (0.0..1.0).contains(x)), "random floats in [0, 1)");
    assert!(rand[..1000].iter().any(|&x| x != rand[0]));
    let period = (16 << 20) / 4;
    assert_eq!(rand[..n - period], rand[period..], "the 16 MiB chunk repeated to the end");
    assert!(read(1).chunks(8).all(|c| f64::from_le_bytes(c.try_into().unwrap()) == 0.5), "every f64 0.5");
    assert!(read(2).iter().all(|&b| b == 0xff), "every i16 -1");
    drop(subjects);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn measure_engine_a_pair_whose_a_does_not_wait_says_so() {
    let _alone = alone();
    let mut e = engine();
    if !is_sm90(&e) {
        return;
    }
    let path = std::env::temp_dir().join(format!("ordo-measure-pair-{}.ptx", std::process::id()));
    std::fs::write(&path, CHAIN_PTX).unwrap();
    let r = spec(&format!(
        "run {} --kernel chain_step --grid n/256 --block 256 --arg a:f32[n]=rand --arg b:f32[n] --arg s:f32[n]=0.5 \
         --arg i32=n --then --kernel chain_step_pdl --arg @b --arg @a --arg @s --arg i32=n -a n=4096",
        path.display()
    ));
    let m = Module::load(&r.module, &module::to_instrument(&r), &[], e.device()).unwrap();
    let (mut subjects, _buffers) = module::subjects(&e, &m, &r, &[("n".to_owned(), 4096)]).unwrap();
    let (a, b) = subjects.split_at_mut(1);
    let rows = e.gaps(&mut a[0], b.first_mut()).unwrap();
    assert!(rows.iter().all(|r| !r.variant.contains(", PDL,")), "no PDL rows");
    let note = &rows[0].note;
    assert!(
        note.contains("A (chain_step) has no griddepcontrol.wait and no PDL form; B (chain_step_pdl) waits"),
        "{note}"
    );
    drop(subjects);
}
