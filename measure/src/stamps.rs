//! `%globaltimer` stamps read back from a sequence of launches, reduced to GPU gaps (pure
//! arithmetic, testable without a GPU).
//!
//! Each launch writes three `u64` a block (entry, release from `griddepcontrol.wait`, end: see
//! `spec::args` and [`crate::ptx`]); a launch's slots follow the previous launch's. Per launch the
//! first entry, the first release and the last end over its blocks; between launch `k` and `k + 1`:
//! - **gap**: `entry(k + 1) - end(k)`, the time the GPU had nothing of the two running (negative
//!   when the next kernel started before the previous ended: PDL's overlap);
//! - **release**: `release(k + 1) - end(k)`, from the previous kernel's end to the next one's
//!   first block leaving its wait;
//! - **span** of launch `k`: `end(k) - entry(k)`, first entry to last end.

/// A launch's first entry, first release (if any block recorded one) and last end, nanoseconds of
/// `%globaltimer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelTimes {
    /// First block's entry.
    pub entry: u64,
    /// First block's release from its wait.
    pub release: Option<u64>,
    /// Last block's end.
    pub end: u64,
}

/// Per launch, from the stamp slots of launches of `blocks[k]` blocks each, in order. An error
/// names the first block that wrote no entry or end (a zero), or a slot array of the wrong size.
pub fn reduce(slots: &[u64], blocks: &[usize]) -> Result<Vec<KernelTimes>, String> {
    let total: usize = blocks.iter().try_fold(0usize, |a, &b| a.checked_add(b)).ok_or("too many blocks")?;
    if total.checked_mul(3) != Some(slots.len()) {
        return Err(format!("{} stamp slots for {total} blocks", slots.len()));
    }
    let mut out = Vec::with_capacity(blocks.len());
    let mut at = 0usize;
    for (k, &n) in blocks.iter().enumerate() {
        let launch = &slots[3 * at..3 * (at + n)];
        at += n;
        let mut t = KernelTimes { entry: u64::MAX, release: None, end: 0 };
        for (b, s) in launch.chunks_exact(3).enumerate() {
            if s[0] == 0 || s[2] == 0 {
                return Err(format!(
                    "launch {k}, block {b} wrote no {} stamp",
                    if s[0] == 0 { "entry" } else { "end" }
                ));
            }
            t.entry = t.entry.min(s[0]);
            t.end = t.end.max(s[2]);
            if s[1] != 0 && s[1] != u64::MAX {
                t.release = Some(t.release.map_or(s[1], |r| r.min(s[1])));
            }
        }
        if n == 0 {
            return Err(format!("launch {k} has no blocks"));
        }
        out.push(t);
    }
    Ok(out)
}

/// `a - b` in nanoseconds, as a float (either sign).
fn diff_ns(a: u64, b: u64) -> f64 {
    (i128::from(a) - i128::from(b)) as f64
}

/// Gaps, releases and spans of a sequence, nanoseconds, in launch order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sequence {
    /// `entry(k + 1) - end(k)`.
    pub gaps: Vec<f64>,
    /// `release(k + 1) - end(k)`, where launch `k + 1` recorded a release.
    pub releases: Vec<f64>,
    /// `end(k) - entry(k)`.
    pub spans: Vec<f64>,
}

impl Sequence {
    /// The figures of `kernels`.
    pub fn of(kernels: &[KernelTimes]) -> Sequence {
        Sequence::every(kernels, 1, 0)
    }

    /// The figures of the boundaries `k -> k + 1` and the spans of the launches `k` with
    /// `k % stride == phase`: for a sequence A B A B ..., stride 2 and phase 0 give A -> B and A's
    /// spans, phase 1 gives B -> A and B's spans.
    pub fn every(kernels: &[KernelTimes], stride: usize, phase: usize) -> Sequence {
        let stride = stride.max(1);
        let mut s = Sequence::default();
        for (k, w) in kernels.windows(2).enumerate() {
            if k % stride != phase {
                continue;
            }
            s.gaps.push(diff_ns(w[1].entry, w[0].end));
            if let Some(r) = w[1].release {
                s.releases.push(diff_ns(r, w[0].end));
            }
        }
        s.spans = kernels
            .iter()
            .enumerate()
            .filter(|(k, _)| k % stride == phase)
            .map(|(_, t)| diff_ns(t.end, t.entry))
            .collect();
        s
    }
}

/// The smallest step between distinct non-zero stamps: the timer's resolution as seen here.
pub fn resolution_ns(slots: &[u64]) -> Option<u64> {
    let mut v: Vec<u64> = slots.iter().copied().filter(|&t| t != 0 && t != u64::MAX).collect();
    v.sort_unstable();
    v.dedup();
    v.windows(2).map(|w| w[1] - w[0]).min()
}

/// The median (nvbench's rank) of `v`; NaN for none.
pub fn median(v: &[f64]) -> f64 {
    crate::stats::percentile(v, 50)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduces_blocks_to_launches_and_gaps() {
        // Two launches of two blocks, then one of one block; the second recorded releases.
        #[rustfmt::skip]
        let slots = [
            100, u64::MAX, 150,   110, u64::MAX, 160,
            150, 170, 200,        140, 175, 210,
            205, u64::MAX, 230,
        ];
        let k = reduce(&slots, &[2, 2, 1]).unwrap();
        assert_eq!(k[0], KernelTimes { entry: 100, release: None, end: 160 });
        assert_eq!(k[1], KernelTimes { entry: 140, release: Some(170), end: 210 });
        let s = Sequence::of(&k);
        assert_eq!(s.gaps, vec![-20.0, -5.0]);
        assert_eq!(s.releases, vec![10.0]);
        assert_eq!(s.spans, vec![60.0, 70.0, 25.0]);
        assert_eq!(resolution_ns(&slots), Some(5));
        let ab = Sequence::every(&k, 2, 0);
        assert_eq!((ab.gaps, ab.releases, ab.spans), (vec![-20.0], vec![10.0], vec![60.0, 25.0]));
        let ba = Sequence::every(&k, 2, 1);
        assert_eq!((ba.gaps, ba.releases, ba.spans), (vec![-5.0], vec![], vec![70.0]));
    }

    #[test]
    fn missing_stamps_and_wrong_sizes_are_errors() {
        assert!(reduce(&[1, 2, 0], &[1]).unwrap_err().contains("end"));
        assert!(reduce(&[0, 2, 3], &[1]).unwrap_err().contains("entry"));
        assert!(reduce(&[1, 2, 3], &[2]).is_err());
        assert!(reduce(&[], &[0]).is_err());
        assert!(reduce(&[1, 2, 3], &[usize::MAX, 2]).is_err());
    }
}
