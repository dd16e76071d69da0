//! The sampling loop: every variant of a measurement sampled once a round, the order alternating
//! (A B C, then C B A, ...) so that drift and the position in a round favour none, after one
//! warm-up round that is not recorded (ordo-bench's interleaving). Each kept sample feeds the
//! variant's own stopping criterion ([`crate::stopping`]); the measurement ends when every variant's
//! criterion is met with at least the minimum samples, or at the wall-time timeout (then with
//! nvbench's warnings), or after a fixed number of rounds. Samples that carry a clock reading go
//! through the throttle rule ([`crate::throttle`]) first: a dropped sample is counted and not
//! recorded.
//!
//! What a sample is, and how it is taken, is the [`Measure`]'s business; time and sleep come from
//! an [`Environment`], so that the loop runs against synthetic sources and a virtual clock in the
//! tests, with no GPU.

use crate::stats::Summary;
use crate::stopping::{Limits, StdRel, StdRelParams, Stopping};
use crate::throttle::{ClockReading, Throttle, ThrottleParams, Verdict};
use ordo_cuda_core::{Error, Result};

/// One sample of one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metrics this sample gives, in the measure's order; the first drives the stopping
    /// criterion.
    pub values: Vec<f64>,
    /// Seconds of measured time the sample took (counted towards the criterion's `min_time`).
    pub elapsed: f64,
    /// The SM clock reading around the sample, for GPU-timed samples.
    pub clock: Option<ClockReading>,
}

impl Sample {
    /// A sample of one metric that is its own measured time (a duration).
    pub fn duration(seconds: f64) -> Sample {
        Sample { values: vec![seconds], elapsed: seconds, clock: None }
    }
}

/// Something measured in variants, one sample at a time.
pub trait Measure {
    /// How many variants.
    fn variants(&self) -> usize;
    /// Takes one sample of `variant` (`0..variants()`).
    fn sample(&mut self, variant: usize) -> Result<Sample>;
}

/// Variants given as closures.
pub struct Closures<'a, 'f>(pub &'a mut [&'f mut dyn FnMut() -> Result<Sample>]);

impl Measure for Closures<'_, '_> {
    fn variants(&self) -> usize {
        self.0.len()
    }
    fn sample(&mut self, variant: usize) -> Result<Sample> {
        match self.0.get_mut(variant) {
            Some(f) => f(),
            None => Err(Error::invalid("Closures::sample", "no such variant")),
        }
    }
}

/// Where the loop reads the time and sleeps.
pub trait Environment {
    /// Seconds since some fixed point, monotonic.
    fn now(&mut self) -> f64;
    /// Pauses for `seconds`.
    fn sleep(&mut self, seconds: f64);
}

/// The real clock (`std::time::Instant`) and `std::thread::sleep`.
#[derive(Debug)]
pub struct RealTime(std::time::Instant);

impl Default for RealTime {
    fn default() -> RealTime {
        RealTime(std::time::Instant::now())
    }
}

impl Environment for RealTime {
    fn now(&mut self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
    fn sleep(&mut self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(seconds));
        }
    }
}

/// How the loop samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// The stopping rule.
    pub stopping: Stopping,
    /// Minimum samples and timeout (for [`Stopping::StdRel`]).
    pub limits: Limits,
    /// The throttle rule.
    pub throttle: ThrottleParams,
    /// Rounds run first and not recorded.
    pub warmup_rounds: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            stopping: Stopping::StdRel(StdRelParams::default()),
            limits: Limits::default(),
            throttle: ThrottleParams::default(),
            warmup_rounds: 1,
        }
    }
}

impl Settings {
    /// `rounds` recorded rounds after one warm-up round, as `ordo-bench` measures.
    pub fn rounds(rounds: usize) -> Settings {
        Settings { stopping: Stopping::Rounds(rounds), ..Settings::default() }
    }
}

/// What was measured of one variant.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// The kept samples, one vector a metric.
    pub values: Vec<Vec<f64>>,
    /// Measured seconds of the kept samples.
    pub measured_time: f64,
    /// Samples dropped by the throttle rule.
    pub dropped: u64,
    /// The SM clock of each kept sample that had a reading (Hz).
    pub clocks_hz: Vec<f64>,
    /// Whether the stopping criterion was met (always true for a fixed number of rounds).
    pub converged: bool,
    /// nvbench's warnings where the measurement timed out, and any other.
    pub warnings: Vec<String>,
}

impl Series {
    /// The summary of metric `metric` (an empty summary where there is no such metric).
    pub fn summary(&self, metric: usize) -> Summary {
        Summary::of(self.values.get(metric).map_or(&[][..], |v| &v[..]))
    }

    /// The mean SM clock over the kept samples (Hz), if any had a reading.
    pub fn mean_clock_hz(&self) -> Option<f64> {
        (!self.clocks_hz.is_empty()).then(|| self.clocks_hz.iter().sum::<f64>() / self.clocks_hz.len() as f64)
    }
}

/// The order of the variants in round `round` of `n`: forward in even rounds, backward in odd.
pub fn round_order(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| if round % 2 == 0 { k } else { n - 1 - k })
}

/// Samples every variant of `measure` until `settings` say stop; the device's default SM clock is
/// `default_hz` (0 for none: no sample is dropped).
pub fn run<M: Measure + ?Sized>(
    measure: &mut M,
    settings: &Settings,
    default_hz: f64,
    env: &mut dyn Environment,
) -> Result<Vec<Series>> {
    const CALL: &str = "runner::run";
    let n = measure.variants();
    let mut series: Vec<Series> = (0..n)
        .map(|_| Series {
            values: Vec::new(),
            measured_time: 0.0,
            dropped: 0,
            clocks_hz: Vec::new(),
            converged: false,
            warnings: Vec::new(),
        })
        .collect();
    if n == 0 {
        return Ok(series);
    }
    let params = match settings.stopping {
        Stopping::StdRel(p) => p,
        Stopping::Rounds(_) => StdRelParams::default(),
    };
    let mut criteria: Vec<StdRel> = (0..n).map(|_| StdRel::new(params)).collect();
    let mut throttle = Throttle::new(settings.throttle, default_hz);
    let mut round = 0usize;
    let mut started = None;
    let mut timed_out = false;
    loop {
        let recording = round >= settings.warmup_rounds;
        if recording && started.is_none() {
            started = Some(env.now());
        }
        for i in round_order(round, n) {
            let sample = measure.sample(i)?;
            if !recording {
                continue;
            }
            let s = &mut series[i];
            if s.values.is_empty() {
                s.values = vec![Vec::new(); sample.values.len()];
            }
            if sample.values.len() != s.values.len() || sample.values.is_empty() {
                return Err(Error::invalid(CALL, "a variant gave samples of different numbers of metrics"));
            }
            match throttle.judge(sample.clock) {
                Verdict::Drop { pause, .. } => {
                    s.dropped += 1;
                    env.sleep(pause);
                    continue;
                }
                Verdict::Keep(hz) => {
                    if let Some(hz) = hz {
                        s.clocks_hz.push(hz);
                    }
                }
            }
            for (m, v) in sample.values.iter().enumerate() {
                s.values[m].push(*v);
            }
            if sample.elapsed.is_finite() && sample.elapsed > 0.0 {
                s.measured_time += sample.elapsed;
            }
            criteria[i].add(sample.values[0], sample.elapsed);
            let kept = s.values[0].len();
            if matches!(settings.stopping, Stopping::StdRel(_))
                && kept >= settings.limits.min_samples
                && criteria[i].is_finished()
            {
                s.converged = true;
            }
        }
        round += 1;
        if !recording {
            continue;
        }
        match settings.stopping {
            Stopping::Rounds(r) => {
                if round - settings.warmup_rounds >= r {
                    series.iter_mut().for_each(|s| s.converged = true);
                    break;
                }
            }
            Stopping::StdRel(_) => {
                if series.iter().all(|s| s.converged) {
                    break;
                }
                let t0 = started.unwrap_or(0.0);
                if env.now() - t0 > settings.limits.timeout {
                    timed_out = true;
                    break;
                }
            }
        }
    }
    let wall = started.map(|t0| env.now() - t0).unwrap_or(0.0);
    for (s, c) in series.iter_mut().zip(&criteria) {
        if timed_out && !s.converged {
            s.warnings = timeout_warnings(s, c, settings, params, wall);
        }
        if s.dropped > 0 {
            s.warnings.push(format!("{} samples dropped: SM clock below the throttle threshold", s.dropped));
        }
    }
    Ok(series)
}

/// nvbench's warnings for a measurement that timed out (`measure_timeout_warnings.cuh`).
fn timeout_warnings(s: &Series, c: &StdRel, settings: &Settings, p: StdRelParams, wall: f64) -> Vec<String> {
    let kept = s.values.first().map_or(0, Vec::len);
    let mut w = Vec::new();
    let noise = s.summary(0).noise;
    if kept < crate::stats::MIN_SAMPLES_FOR_NOISE {
        w.push(format!(
            "timed out ({wall:.2} s) before accumulating enough samples to estimate noise ({kept} < {})",
            crate::stats::MIN_SAMPLES_FOR_NOISE
        ));
    } else if let Some(noise) = noise {
        if noise > p.max_noise {
            w.push(format!(
                "timed out ({wall:.2} s) while over noise threshold ({:.2}% > {:.2}%)",
                noise * 100.0,
                p.max_noise * 100.0
            ));
        }
    } else {
        w.push(format!("timed out ({wall:.2} s) while unable to estimate noise for max-noise"));
    }
    if kept < settings.limits.min_samples {
        w.push(format!(
            "timed out ({wall:.2} s) before accumulating min_samples ({kept} < {})",
            settings.limits.min_samples
        ));
    }
    if c.measured_time() < p.min_time {
        w.push(format!(
            "timed out ({wall:.2} s) before accumulating min_time ({:.2} s < {:.2} s)",
            c.measured_time(),
            p.min_time
        ));
    }
    w
}
