//! When to stop sampling: nvbench's `stdrel` criterion (`nvbench/detail/stdrel_criterion.cxx`)
//! and the limits around it (`measure_cold.cu`: a minimum sample count, a wall-time timeout).
//!
//! `stdrel` keeps a running mean and variance of the samples and, from the fifth on, the noise
//! (standard deviation over mean) after each. It is finished when the measured time exceeds
//! `min_time` and either the latest noise is below `max_noise` or, for series that are noisy by
//! nature, the noise itself has settled: at every sixteenth sample, once more than 64 noise values
//! are kept (the last 512), their relative standard deviation is under 5%. 64 invalid noise values
//! in a row finish it too. Defaults as nvbench's: 0.5% noise, 0.5 s, at least 10 samples, 15 s
//! timeout.
//!
//! One adaptation: nvbench counts the measured time as the samples' mean times their count, which
//! is right when a sample *is* a duration. Here a sample may be a duration per launch out of a
//! batch (host submit time) or a gap out of a chain; each sample brings the time it took to
//! measure (`elapsed`), and `min_time` is checked against their sum. For a cold kernel time the
//! two are the same.

use crate::stats::{relative_dispersion, OnlineMeanVariance, MIN_SAMPLES_FOR_NOISE};
use std::collections::VecDeque;

/// How a measurement decides it has enough samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stopping {
    /// nvbench's `stdrel` criterion within [`Limits`].
    StdRel(StdRelParams),
    /// Exactly this many rounds after the warm-up (what `ordo-bench` does), throttled samples
    /// dropped and not replaced.
    Rounds(usize),
}

/// The parameters of the `stdrel` criterion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StdRelParams {
    /// Stop once the noise is below this (fraction; nvbench's `--max-noise` is in percent).
    pub max_noise: f64,
    /// Seconds of measured time needed before stopping.
    pub min_time: f64,
}

impl Default for StdRelParams {
    fn default() -> StdRelParams {
        StdRelParams { max_noise: 0.005, min_time: 0.5 }
    }
}

/// Limits around the criterion (nvbench's benchmark defaults).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Samples a variant needs before the criterion may stop it.
    pub min_samples: usize,
    /// Wall seconds after which the measurement stops, finished or not.
    pub timeout: f64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { min_samples: 10, timeout: 15.0 }
    }
}

/// Consecutive invalid noise estimates that end the criterion.
const INVALID_NOISE_LIMIT: u64 = 64;
/// Noise values kept.
const NOISE_WINDOW: usize = 512;
/// The stability check needs more noise values than this...
const MIN_NOISE_STABILITY_WINDOW: usize = 64;
/// ...and runs at every this many samples.
const NOISE_STABILITY_INTERVAL: u64 = 16;
/// The relative standard deviation of the kept noise values below which the noise has settled.
const NOISE_STABILITY_THRESHOLD: f64 = 0.05;

/// nvbench's `stdrel` criterion for one series.
#[derive(Debug, Clone)]
pub struct StdRel {
    params: StdRelParams,
    summary: OnlineMeanVariance,
    measured_time: f64,
    consecutive_invalid: u64,
    noise: VecDeque<f64>,
}

impl StdRel {
    /// A criterion with nothing measured yet.
    pub fn new(params: StdRelParams) -> StdRel {
        StdRel {
            params,
            summary: OnlineMeanVariance::default(),
            measured_time: 0.0,
            consecutive_invalid: 0,
            noise: VecDeque::with_capacity(NOISE_WINDOW),
        }
    }

    /// Adds a sample `value` that took `elapsed` seconds of measured time.
    pub fn add(&mut self, value: f64, elapsed: f64) {
        self.summary.update(value);
        if elapsed.is_finite() && elapsed > 0.0 {
            self.measured_time += elapsed;
        }
        if self.summary.len() < MIN_SAMPLES_FOR_NOISE as u64 {
            return;
        }
        let noise = relative_dispersion(self.summary.unbiased_variance().sqrt(), self.summary.mean().abs());
        match noise {
            Some(n) if n.is_finite() => {
                self.consecutive_invalid = 0;
                if self.noise.len() == NOISE_WINDOW {
                    self.noise.pop_front();
                }
                self.noise.push_back(n);
            }
            _ => self.consecutive_invalid += 1,
        }
    }

    /// The noise after the latest sample, if there is an estimate.
    pub fn current_noise(&self) -> Option<f64> {
        self.noise.back().copied()
    }

    /// The measured time so far (seconds).
    pub fn measured_time(&self) -> f64 {
        self.measured_time
    }

    /// Whether the criterion is met (nvbench's `do_is_finished`).
    pub fn is_finished(&self) -> bool {
        if self.consecutive_invalid >= INVALID_NOISE_LIMIT {
            return true;
        }
        if self.measured_time <= self.params.min_time {
            return false;
        }
        let Some(&last) = self.noise.back() else {
            return false;
        };
        if self.consecutive_invalid != 0 {
            return false;
        }
        if last < self.params.max_noise {
            return true;
        }
        if self.noise.len() > MIN_NOISE_STABILITY_WINDOW && self.summary.len() % NOISE_STABILITY_INTERVAL == 0 {
            let mut settled = OnlineMeanVariance::default();
            for &n in &self.noise {
                settled.update(n);
            }
            let (mean, variance) = (settled.mean(), settled.sample_variance());
            if mean.is_finite() && variance.is_finite() {
                let scaled = mean * NOISE_STABILITY_THRESHOLD;
                if variance < scaled * scaled {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_min_time_before_the_noise_counts() {
        let mut c = StdRel::new(StdRelParams { max_noise: 0.01, min_time: 1.0 });
        for _ in 0..100 {
            c.add(1e-3, 1e-3);
        }
        // Zero noise, but only 0.1 s measured.
        assert_eq!(c.current_noise(), Some(0.0));
        assert!(!c.is_finished());
        for _ in 0..901 {
            c.add(1e-3, 1e-3);
        }
        assert!(c.is_finished());
    }

    #[test]
    fn a_settled_noise_above_target_finishes_at_the_stability_check() {
        // Alternating 1 and 2: the noise converges to about 33%, far above 0.5%.
        let mut c = StdRel::new(StdRelParams { max_noise: 0.005, min_time: 0.0 });
        let mut finished_at = None;
        for i in 0..2000u64 {
            c.add(if i % 2 == 0 { 1.0 } else { 2.0 }, 1.0);
            if c.is_finished() {
                finished_at = Some(i + 1);
                break;
            }
        }
        let n = finished_at.expect("the stability check stops a settled series");
        assert_eq!(n % NOISE_STABILITY_INTERVAL, 0, "only at the check interval");
        assert!(n > (MIN_NOISE_STABILITY_WINDOW + MIN_SAMPLES_FOR_NOISE) as u64);
        assert!(c.current_noise().unwrap() > 0.3);
    }

    #[test]
    fn invalid_noise_estimates_end_it() {
        // A zero mean makes every relative noise undefined.
        let mut c = StdRel::new(StdRelParams::default());
        for _ in 0..(MIN_SAMPLES_FOR_NOISE as u64 + INVALID_NOISE_LIMIT - 2) {
            c.add(0.0, 1.0);
        }
        assert!(!c.is_finished());
        c.add(0.0, 1.0);
        assert!(c.is_finished());
    }
}
