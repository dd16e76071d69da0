//! The statistics of a series of samples, computed as nvbench computes them
//! (`nvbench/detail/statistics.cuh`): the mean; the standard deviation with Bessel's correction,
//! unavailable (infinite) below five samples; quartiles at nvbench's rounded rank
//! (`round(q (n - 1))` of the sorted samples, no interpolation); the *noise*, the standard
//! deviation over the mean; and the relative interquartile range, the spread that outliers move
//! least.
//!
//! Pure arithmetic on `f64`: no CUDA, testable anywhere.

/// Fewer samples than this give no noise estimate (nvbench's `min_samples_for_noise_estimate`).
pub const MIN_SAMPLES_FOR_NOISE: usize = 5;

/// The sample standard deviation of `values` around `mean` (Bessel's correction), or infinity
/// with fewer than [`MIN_SAMPLES_FOR_NOISE`] values, as nvbench's `standard_deviation`.
pub fn standard_deviation(values: &[f64], mean: f64) -> f64 {
    if values.len() < MIN_SAMPLES_FOR_NOISE {
        return f64::INFINITY;
    }
    let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (squares / (values.len() - 1) as f64).sqrt()
}

/// The mean of `values`; infinity for none (nvbench's `compute_mean`).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::INFINITY;
    }
    values.iter().sum::<f64>() / values.len() as f64
}

/// The zero-based rank of the `percentile` (0..=100) in `len` sorted values: `round(p/100 (len-1))`
/// (nvbench's `percentile_rank`). `len` must be non-zero.
fn percentile_rank(percentile: u32, len: usize) -> usize {
    let p = f64::from(percentile.min(100)) / 100.0;
    let rank = (p * (len - 1) as f64).round();
    (rank as usize).min(len - 1)
}

/// The `percentile` (0..=100) of `values` at nvbench's rounded rank; NaN for none, or if any value
/// is NaN.
pub fn percentile(values: &[f64], percentile: u32) -> f64 {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[percentile_rank(percentile, sorted.len())]
}

/// First quartile, median and third quartile at nvbench's rounded ranks; NaN for none, or if any
/// value is NaN.
pub fn quartiles(values: &[f64]) -> (f64, f64, f64) {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |p| sorted[percentile_rank(p, sorted.len())];
    (at(25), at(50), at(75))
}

/// `dispersion / center`, or `None` where that means nothing: a center that is not a positive
/// finite number, a negative or NaN dispersion (nvbench's `compute_relative_dispersion`). An
/// infinite dispersion gives infinity.
pub fn relative_dispersion(dispersion: f64, center: f64) -> Option<f64> {
    if center <= 0.0 || !center.is_finite() || dispersion < 0.0 || dispersion.is_nan() {
        return None;
    }
    Some(dispersion / center)
}

/// The relative standard deviation, `None` below [`MIN_SAMPLES_FOR_NOISE`] samples or where the
/// deviation is not finite (nvbench's `compute_standard_deviation_noise`). nvbench's samples are
/// durations; a GPU gap can be negative (kernels that overlap under PDL), so the callers here pass
/// the mean's magnitude as the center.
pub fn stdev_noise(samples: usize, stdev: f64, mean: f64) -> Option<f64> {
    if samples < MIN_SAMPLES_FOR_NOISE || !stdev.is_finite() {
        return None;
    }
    relative_dispersion(stdev, mean)
}

/// The interquartile range over the median, `None` below [`MIN_SAMPLES_FOR_NOISE`] samples
/// (nvbench's `compute_robust_noise`).
pub fn robust_noise(samples: usize, q1: f64, median: f64, q3: f64) -> Option<f64> {
    if samples < MIN_SAMPLES_FOR_NOISE {
        return None;
    }
    let iqr = q3 - q1;
    if !iqr.is_finite() {
        return None;
    }
    relative_dispersion(iqr, median)
}

/// A running mean and variance, updated one value at a time exactly as nvbench's
/// `online_mean_variance` (which the stopping criterion uses): the variance kept is the biased
/// one (over `n`); [`unbiased_variance`](Self::unbiased_variance) rescales it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OnlineMeanVariance {
    size: u64,
    mean: f64,
    variance: f64,
}

impl OnlineMeanVariance {
    /// Adds one value.
    pub fn update(&mut self, x: f64) {
        self.size += 1;
        if self.size > 2 {
            let f = 1.0 / self.size as f64;
            let diff = x - self.mean;
            self.mean += f * diff;
            let diff2 = diff * diff;
            self.variance += f * ((diff2 - self.variance) - f * diff2);
        } else if self.size == 2 {
            let (x1, x2) = (self.mean, x);
            self.mean = 0.5 * (x1 + x2);
            let half = 0.5 * (x1 - x2);
            self.variance = half * half;
        } else {
            self.mean = x;
        }
    }

    /// How many values were added.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The mean of the values added.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The biased (maximum-likelihood) variance.
    pub fn sample_variance(&self) -> f64 {
        self.variance
    }

    /// The unbiased variance (over `n - 1`); NaN for fewer than two values.
    pub fn unbiased_variance(&self) -> f64 {
        if self.size <= 1 || self.variance < 0.0 {
            return f64::NAN;
        }
        self.variance / (1.0 - 1.0 / self.size as f64)
    }
}

/// What nvbench reports of a series: count, mean, standard deviation and noise, extremes,
/// quartiles and the relative interquartile range. The noise and the relative range are taken
/// over the magnitude of the mean and median, so that they stay defined for negative gaps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Samples summarised (the ones kept).
    pub samples: usize,
    /// Their mean (infinity for none).
    pub mean: f64,
    /// Their standard deviation (infinity below five samples).
    pub stdev: f64,
    /// Standard deviation over mean (`None` below five samples, or where undefined).
    pub noise: Option<f64>,
    /// Smallest sample (NaN for none).
    pub min: f64,
    /// Largest sample (NaN for none).
    pub max: f64,
    /// First quartile.
    pub q1: f64,
    /// Median.
    pub median: f64,
    /// Third quartile.
    pub q3: f64,
    /// Interquartile range over median (`None` below five samples, or where undefined).
    pub rel_iqr: Option<f64>,
}

impl Summary {
    /// The summary of `values`.
    pub fn of(values: &[f64]) -> Summary {
        let n = values.len();
        let mean = mean(values);
        let stdev = standard_deviation(values, mean);
        let (q1, median, q3) = quartiles(values);
        let min = values.iter().copied().reduce(f64::min).unwrap_or(f64::NAN);
        let max = values.iter().copied().reduce(f64::max).unwrap_or(f64::NAN);
        Summary {
            samples: n,
            mean,
            stdev,
            noise: stdev_noise(n, stdev, mean.abs()),
            min,
            max,
            q1,
            median,
            q3,
            rel_iqr: robust_noise(n, q1, median.abs(), q3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quartiles_use_the_rounded_rank() {
        // Ranks for 8 values: q1 round(1.75) = 2, median round(3.5) = 4, q3 round(5.25) = 5.
        let v = [8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0];
        assert_eq!(quartiles(&v), (3.0, 5.0, 6.0));
        // The median is ordo-bench's v[len / 2] for every length.
        for n in 1..40usize {
            let v: Vec<f64> = (0..n).map(|i| i as f64).collect();
            assert_eq!(percentile(&v, 50), (n / 2) as f64, "n = {n}");
        }
        assert!(quartiles(&[]).0.is_nan());
        assert!(percentile(&[1.0, f64::NAN], 50).is_nan());
    }

    #[test]
    fn deviation_needs_five_samples_and_uses_bessel() {
        assert_eq!(standard_deviation(&[1.0, 2.0, 3.0, 4.0], 2.5), f64::INFINITY);
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let m = mean(&v);
        assert_eq!(m, 5.0);
        // Sum of squares 32, over n - 1 = 7.
        assert!((standard_deviation(&v, m) - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(stdev_noise(4, 1.0, 2.0), None);
        assert_eq!(stdev_noise(5, f64::INFINITY, 2.0), None);
        assert_eq!(stdev_noise(5, 1.0, 2.0), Some(0.5));
        assert_eq!(relative_dispersion(1.0, 0.0), None);
        assert_eq!(relative_dispersion(-1.0, 1.0), None);
        assert_eq!(relative_dispersion(f64::INFINITY, 1.0), Some(f64::INFINITY));
    }

    #[test]
    fn online_variance_matches_the_two_pass_figures() {
        let v: Vec<f64> = (0..1000).map(|i| ((i * 7919) % 1013) as f64 * 0.01 + 3.0).collect();
        let mut o = OnlineMeanVariance::default();
        for &x in &v {
            o.update(x);
        }
        let m = mean(&v);
        let unbiased = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (v.len() - 1) as f64;
        assert!((o.mean() - m).abs() < 1e-9);
        assert!((o.unbiased_variance() - unbiased).abs() / unbiased < 1e-9);
        assert!(OnlineMeanVariance::default().unbiased_variance().is_nan());
    }

    #[test]
    fn summary_of_a_series() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        let s = Summary::of(&v);
        assert_eq!((s.samples, s.mean, s.min, s.max, s.median), (5, 3.0, 1.0, 5.0, 3.0));
        assert!((s.noise.unwrap() - (2.5f64).sqrt() / 3.0).abs() < 1e-12);
        assert_eq!(s.rel_iqr, Some((4.0 - 2.0) / 3.0));
        let empty = Summary::of(&[]);
        assert_eq!((empty.samples, empty.noise, empty.rel_iqr), (0, None, None));
        assert!(empty.min.is_nan() && empty.mean.is_infinite());
    }
}
