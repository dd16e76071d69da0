//! The sampling loop and its statistics against synthetic sources on a virtual clock, no GPU:
//! throttled samples (an SM clock below 75% of the default, with a value that would show if it
//! were kept) are dropped, counted and paused for as nvbench pauses; a quiet source stops on its
//! noise once the minimum time is measured; a source whose noise never settles runs to the
//! timeout and is flagged with nvbench's warnings; variants alternate their order each round; a
//! fixed number of rounds gives exactly that many samples; and a report written as JSON reads
//! back and compares with nvbench_compare's verdicts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_measure::compare::{self, Status};
use ordo_cuda_measure::report::{Header, Report, Row};
use ordo_cuda_measure::runner::{self, Environment, Measure, Sample, Settings};
use ordo_cuda_measure::stopping::{Limits, StdRelParams, Stopping};
use ordo_cuda_measure::throttle::ClockReading;
use ordo_cuda_measure::Summary;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// Time that advances only as samples take it and sleeps pass.
struct Virtual {
    now: Rc<Cell<f64>>,
    sleeps: Rc<RefCell<Vec<f64>>>,
}

impl Environment for Virtual {
    fn now(&mut self) -> f64 {
        self.now.get()
    }
    fn sleep(&mut self, s: f64) {
        self.sleeps.borrow_mut().push(s);
        self.now.set(self.now.get() + s);
    }
}

/// xorshift64*: deterministic jitter in [-1, 1).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (r >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

const DEFAULT_HZ: f64 = 1980e6;

/// A variant: a base value, relative jitter, a drift a sample, and which of its samples run
/// throttled.
struct Source {
    base: f64,
    jitter: f64,
    drift: f64,
    throttled: fn(usize) -> bool,
    taken: usize,
}

struct Synthetic {
    sources: Vec<Source>,
    rng: Rng,
    now: Rc<Cell<f64>>,
    order: Vec<usize>,
}

impl Synthetic {
    fn new(sources: Vec<Source>) -> (Synthetic, Virtual) {
        let now = Rc::new(Cell::new(0.0));
        let env = Virtual { now: now.clone(), sleeps: Rc::new(RefCell::new(Vec::new())) };
        (Synthetic { sources, rng: Rng(0x1234_5678), now, order: Vec::new() }, env)
    }
}

impl Measure for Synthetic {
    fn variants(&self) -> usize {
        self.sources.len()
    }

    fn sample(&mut self, v: usize) -> ordo_cuda_core::Result<Sample> {
        self.order.push(v);
        let j = self.rng.next();
        let s = &mut self.sources[v];
        let i = s.taken;
        s.taken += 1;
        let throttled = (s.throttled)(i);
        let mut value = s.base * (1.0 + s.jitter * j) * (1.0 + s.drift * i as f64);
        // A throttled sample runs at 1000 MHz and is 100 times slower: kept, it would show.
        let mhz: u64 = if throttled { 1000 } else { 1980 };
        if throttled {
            value *= 100.0;
        }
        self.now.set(self.now.get() + value + 20e-6);
        let ns = 50_000u64;
        Ok(Sample {
            values: vec![value, 2.0 * value],
            elapsed: value,
            clock: Some(ClockReading { ns, cycles: mhz * ns / 1000 }),
        })
    }
}

fn quiet(base: f64) -> Source {
    Source { base, jitter: 0.001, drift: 0.0, throttled: |_| false, taken: 0 }
}

fn settings(min_time: f64, timeout: f64) -> Settings {
    Settings {
        stopping: Stopping::StdRel(StdRelParams { max_noise: 0.005, min_time }),
        limits: Limits { min_samples: 10, timeout },
        ..Settings::default()
    }
}

#[test]
fn throttled_samples_are_dropped_counted_and_paused_for() {
    // The GPU throttles during rounds 20..25 (both variants), and once more for the first
    // variant's sample 40.
    let (mut m, mut env) = Synthetic::new(vec![
        Source { throttled: |i| (20..25).contains(&i) || i == 40, ..quiet(1e-3) },
        Source { throttled: |i| (20..25).contains(&i), ..quiet(2e-3) },
    ]);
    let sleeps = env.sleeps.clone();
    let series = runner::run(&mut m, &settings(0.05, 100.0), DEFAULT_HZ, &mut env).unwrap();
    // The warm-up round's samples (index 0) are not judged; the others are.
    assert_eq!(series[0].dropped, 6);
    assert_eq!(series[1].dropped, 5);
    for s in &series {
        let sum = s.summary(0);
        assert!(sum.max < 2.1e-3, "no throttled value kept: max {}", sum.max);
        assert!(s.clocks_hz.iter().all(|&hz| (hz - DEFAULT_HZ).abs() < 1.0));
        assert!(s.warnings.iter().any(|w| w.contains(&format!("{} samples dropped", s.dropped))), "{:?}", s.warnings);
        assert!(s.converged);
    }
    // nvbench's pauses: 0.05 s while the run of drops (across variants: the clock is the GPU's)
    // is up to three long, then growing by min(1.5 delay, 0.5 s); the grown delay stays for the
    // next drop after kept samples.
    let expected = [0.05, 0.05, 0.05, 0.125, 0.3125, 0.78125, 1.28125, 1.78125, 2.28125, 2.78125, 2.78125];
    let got = sleeps.borrow().clone();
    assert_eq!(got.len(), expected.len(), "{got:?}");
    for (g, e) in got.iter().zip(expected) {
        assert!((g - e).abs() < 1e-12, "{got:?}");
    }
}

#[test]
fn every_sample_throttled_ends_at_the_timeout_with_nothing_kept() {
    let (mut m, mut env) = Synthetic::new(vec![Source { throttled: |_| true, ..quiet(1e-3) }]);
    let series = runner::run(&mut m, &settings(0.05, 2.0), DEFAULT_HZ, &mut env).unwrap();
    assert_eq!(series[0].summary(0).samples, 0);
    assert!(series[0].dropped > 3);
    assert!(!series[0].converged);
    let w = series[0].warnings.join("\n");
    assert!(w.contains("enough samples to estimate noise") && w.contains("min_samples"), "{w}");
}

#[test]
fn a_quiet_source_stops_on_its_noise_after_the_minimum_time() {
    let (mut m, mut env) = Synthetic::new(vec![quiet(1e-3), quiet(3e-3)]);
    let series = runner::run(&mut m, &settings(0.2, 15.0), DEFAULT_HZ, &mut env).unwrap();
    for s in &series {
        assert!(s.converged && s.warnings.is_empty(), "{:?}", s.warnings);
        assert!(s.measured_time > 0.2);
        let sum = s.summary(0);
        assert!(sum.noise.unwrap() < 0.005);
        // The second metric is kept with the first.
        assert_eq!(s.summary(1).samples, sum.samples);
        assert!((s.summary(1).mean - 2.0 * sum.mean).abs() < 1e-12);
    }
    // The faster variant needed more samples for the same measured time; both ran every round.
    assert_eq!(series[0].summary(0).samples, series[1].summary(0).samples);
    assert!(env.now() < 15.0, "stopped before the timeout");
}

#[test]
fn a_noise_that_never_settles_is_flagged_at_the_timeout() {
    // A drift of 0.5% a sample: the relative spread grows without end.
    let (mut m, mut env) = Synthetic::new(vec![Source { drift: 0.005, ..quiet(1e-3) }]);
    let series = runner::run(&mut m, &settings(0.05, 1.0), DEFAULT_HZ, &mut env).unwrap();
    let s = &series[0];
    assert!(!s.converged);
    assert!(s.summary(0).noise.unwrap() > 0.005);
    assert!(s.warnings.iter().any(|w| w.contains("over noise threshold")), "{:?}", s.warnings);
    assert!(env.now() > 1.0);
}

#[test]
fn a_jittered_source_that_settles_stops_before_the_timeout_and_reports_its_noise() {
    // 10% uniform jitter never gets under 0.5% noise, but the noise settles (nvbench's
    // stability check) and the measured noise is that of the jitter (uniform: 10% / sqrt(3)).
    let (mut m, mut env) = Synthetic::new(vec![Source { jitter: 0.10, ..quiet(1e-3) }]);
    let series = runner::run(&mut m, &settings(0.05, 60.0), DEFAULT_HZ, &mut env).unwrap();
    let s = &series[0];
    assert!(s.converged, "{:?}", s.warnings);
    let noise = s.summary(0).noise.unwrap();
    assert!((noise - 0.10 / 3f64.sqrt()).abs() < 0.015, "noise {noise}");
    assert!(env.now() < 60.0);
}

#[test]
fn variants_alternate_their_order_and_fixed_rounds_give_that_many_samples() {
    let (mut m, mut env) = Synthetic::new(vec![quiet(1e-3), quiet(1e-3), quiet(1e-3)]);
    let series = runner::run(&mut m, &Settings::rounds(4), DEFAULT_HZ, &mut env).unwrap();
    // One warm-up round, then four.
    assert_eq!(m.order, vec![0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0, 0, 1, 2]);
    assert!(series.iter().all(|s| s.summary(0).samples == 4 && s.converged));
    // Fixed rounds: a dropped sample is not replaced.
    let (mut m, mut env) = Synthetic::new(vec![Source { throttled: |i| i == 2, ..quiet(1e-3) }]);
    let series = runner::run(&mut m, &Settings::rounds(4), DEFAULT_HZ, &mut env).unwrap();
    assert_eq!((series[0].summary(0).samples, series[0].dropped), (3, 1));
}

fn row(variant: &str, mean: f64, noise: f64) -> Row {
    let values: Vec<f64> = (0..20).map(|i| mean * (1.0 + noise * if i % 2 == 0 { 1.0 } else { -1.0 })).collect();
    Row {
        kernel: "k".into(),
        axes: vec![("n".into(), "4096".into())],
        measure: "gaps".into(),
        metric: "gap".into(),
        variant: variant.into(),
        unit: "s".into(),
        summary: Summary::of(&values),
        dropped: 1,
        clock_hz: Some(1.9e9),
        baseline: None,
        ratio: None,
        converged: true,
        warnings: vec!["a \"quoted\", warning".into()],
        note: "note, with comma".into(),
    }
}

#[test]
fn reports_read_back_and_compare_with_nvbench_rule() {
    let reference = Report {
        header: Header { tool: "ordo-measure test".into(), sampling: "rounds".into(), ..Header::default() },
        rows: vec![
            row("graph, PDL, ordo", 0.26e-6, 0.05),
            row("graph, no PDL, ordo", 0.77e-6, 0.02),
            row("eager, PDL, ordo", -0.1e-6, 0.05),
        ],
    };
    let text = reference.to_json();
    let back = Report::from_json(&text).unwrap();
    assert_eq!(back.rows.len(), 3);
    assert_eq!(back.header.tool, "ordo-measure test");
    for (a, b) in reference.rows.iter().zip(&back.rows) {
        assert_eq!(a.key(), b.key());
        assert_eq!(a.warnings, b.warnings);
        assert!((a.summary.mean - b.summary.mean).abs() < 1e-18);
        assert!((a.summary.noise.unwrap() - b.summary.noise.unwrap()).abs() < 1e-12);
    }
    let same = compare::compare(&reference, &back);
    assert!(same.iter().all(|c| c.status == Status::Same));

    let mut candidate = back.clone();
    candidate.rows[0] = row("graph, PDL, ordo", 0.30e-6, 0.05); // +15%, noise ~5%: slower
    candidate.rows[1] = row("graph, no PDL, ordo", 0.775e-6, 0.02); // +0.6%: same
    candidate.rows[2] = row("eager, PDL, ordo", -0.2e-6, 0.05); // more overlap: faster
    candidate.rows.push(row("queued, PDL, ordo", 1e-6, 0.01)); // no reference: not compared
    let c = compare::compare(&reference, &candidate);
    let statuses: Vec<Status> = c.iter().map(|x| x.status).collect();
    assert_eq!(statuses, vec![Status::Slower, Status::Same, Status::Faster]);
    let md = compare::to_markdown(&reference, &candidate, &c, 0.0);
    assert!(md.contains("SLOWER") && md.contains("FASTER") && md.contains("Total matches: 3"), "{md}");

    // CSV and markdown carry every row; awkward text stays in its field.
    let csv = reference.to_csv();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.contains("\"a \"\"quoted\"\", warning\""));
    let md = reference.to_markdown();
    assert!(md.contains("## k (n=4096)") && md.contains("graph, PDL, ordo") && md.contains("260.0 ns"), "{md}");
    assert!(Report::from_json("[]").is_err());
    assert!(Report::from_json("{\"rows\": [{}]}").is_err());
}
