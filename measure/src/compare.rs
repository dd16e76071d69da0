//! Two reports compared row by row with nvbench's rule (`python/scripts/nvbench_compare.py`): a row
//! of the candidate is matched with the reference's row of the same key (kernel, axis values,
//! measure, metric, variant); the difference of the means, relative to the reference mean, is
//! judged against the smaller of the two rows' noises (the noise of either alone where the other
//! has none; a noise of zero counts as none, as in the script). Within it: SAME; beyond it:
//! FASTER or SLOWER (lower is faster: every figure here is a time); no noise on either side:
//! `????`.
//!
//! Gaps can be negative (overlapping kernels); the relative difference is taken over the
//! reference's magnitude, so a more negative gap is FASTER.

use crate::report::{format_percent, format_value, Report, Row};
use std::fmt::Write as _;

/// The verdict on one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The difference is within the noise.
    Same,
    /// Lower than the reference beyond the noise.
    Faster,
    /// Higher than the reference beyond the noise.
    Slower,
    /// Neither row has a noise estimate (or the reference mean is unusable).
    Unknown,
}

impl Status {
    /// The word printed for it.
    pub fn label(self) -> &'static str {
        match self {
            Status::Same => "SAME",
            Status::Faster => "FASTER",
            Status::Slower => "SLOWER",
            Status::Unknown => "????",
        }
    }
}

/// nvbench_compare's rule for one pair of means and noises.
pub fn status(ref_mean: f64, ref_noise: Option<f64>, cmp_mean: f64, cmp_noise: Option<f64>) -> Status {
    let usable = |n: Option<f64>| n.filter(|x| x.is_finite() && *x != 0.0);
    let min_noise = match (usable(ref_noise), usable(cmp_noise)) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => return Status::Unknown,
    };
    if !ref_mean.is_finite() || !cmp_mean.is_finite() || ref_mean == 0.0 {
        return Status::Unknown;
    }
    let diff = cmp_mean - ref_mean;
    if (diff / ref_mean.abs()).abs() <= min_noise {
        Status::Same
    } else if diff < 0.0 {
        Status::Faster
    } else {
        Status::Slower
    }
}

/// One matched row.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The rows' key.
    pub key: String,
    /// The unit of both.
    pub unit: String,
    /// Reference mean and noise.
    pub reference: (f64, Option<f64>),
    /// Candidate mean and noise.
    pub candidate: (f64, Option<f64>),
    /// The verdict.
    pub status: Status,
}

impl Comparison {
    /// Candidate minus reference.
    pub fn diff(&self) -> f64 {
        self.candidate.0 - self.reference.0
    }

    /// The difference over the reference's magnitude.
    pub fn relative_diff(&self) -> f64 {
        self.diff() / self.reference.0.abs()
    }
}

/// The candidate's rows that the reference has too, in the candidate's order, compared.
pub fn compare(reference: &Report, candidate: &Report) -> Vec<Comparison> {
    candidate
        .rows
        .iter()
        .filter_map(|c| {
            let key = c.key();
            let r: &Row = reference.rows.iter().find(|r| r.key() == key)?;
            Some(Comparison {
                key,
                unit: c.unit.clone(),
                reference: (r.summary.mean, r.summary.noise),
                candidate: (c.summary.mean, c.summary.noise),
                status: status(r.summary.mean, r.summary.noise, c.summary.mean, c.summary.noise),
            })
        })
        .collect()
}

/// The comparison as a markdown table and nvbench's summary counts; rows whose relative
/// difference is below `threshold` (a fraction) are counted but not listed.
pub fn to_markdown(reference: &Report, candidate: &Report, rows: &[Comparison], threshold: f64) -> String {
    let mut s = String::new();
    let dev = |r: &Report| format!("{} (driver {})", r.header.device.name, r.header.driver_version);
    let _ = writeln!(s, "# ordo-measure compare\n");
    let _ = writeln!(s, "- reference: {}", dev(reference));
    let _ = writeln!(s, "- candidate: {}\n", dev(candidate));
    let _ = writeln!(s, "| kernel \\| axes \\| measure \\| metric \\| variant | Ref | Ref noise | Cmp | Cmp noise | Diff | %Diff | Status |");
    let _ = writeln!(s, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | :---: |");
    for c in rows {
        if c.relative_diff().abs() < threshold {
            continue;
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {:.2}% | {} |",
            c.key.replace('|', "\\|"),
            format_value(c.reference.0, &c.unit),
            format_percent(c.reference.1),
            format_value(c.candidate.0, &c.unit),
            format_percent(c.candidate.1),
            format_value(c.diff(), &c.unit),
            c.relative_diff() * 100.0,
            c.status.label()
        );
    }
    let count = |st: Status| rows.iter().filter(|c| c.status == st).count();
    let _ = writeln!(s, "\n# Summary\n");
    let _ = writeln!(s, "- Total matches: {}", rows.len());
    let _ = writeln!(s, "  - Pass    (diff <= min_noise): {}", count(Status::Same));
    let _ = writeln!(s, "  - Unknown (no noise estimate):  {}", count(Status::Unknown));
    let _ = writeln!(s, "  - Failure (diff > min_noise):   {}", count(Status::Faster) + count(Status::Slower));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvbench_compare_rule() {
        // Within the smaller noise: same.
        assert_eq!(status(1.0, Some(0.05), 1.04, Some(0.10)), Status::Same);
        // Beyond the smaller noise, though within the larger.
        assert_eq!(status(1.0, Some(0.05), 1.06, Some(0.10)), Status::Slower);
        assert_eq!(status(1.0, Some(0.05), 0.94, Some(0.10)), Status::Faster);
        // One side without noise: the other's.
        assert_eq!(status(1.0, None, 1.06, Some(0.10)), Status::Same);
        assert_eq!(status(1.0, Some(0.0), 1.06, Some(0.05)), Status::Slower);
        // Neither: unknown.
        assert_eq!(status(1.0, None, 2.0, Some(0.0)), Status::Unknown);
        assert_eq!(status(0.0, Some(0.1), 2.0, Some(0.1)), Status::Unknown);
        // Negative gaps: more negative is faster.
        assert_eq!(status(-0.2e-6, Some(0.05), -0.3e-6, Some(0.05)), Status::Faster);
        assert_eq!(status(-0.2e-6, Some(0.05), -0.1e-6, Some(0.05)), Status::Slower);
        assert_eq!(status(-0.2e-6, Some(0.05), -0.205e-6, Some(0.05)), Status::Same);
    }
}
