//! Whether PDL pays on an edge proven safe, from the engine's gap measure (graph replays, the
//! form PDL helps most): the gap between A's end and B's start without and with PDL, B's release
//! from its wait, and the period (a kernel's GPU time, gap included) without and with PDL. The
//! period is the verdict: it holds both what PDL saves at the boundary and what the wait costs
//! inside the kernel, which in grids of several waves is 1.3-1.9x the kernel's time in ordo's
//! measurements (`docs/cuda-behaviours.md`, CB-23; `ordo/pdl.cuh`).

/// What to do with the edge's PDL attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recommendation {
    /// PDL saves time: keep it.
    Keep,
    /// PDL saves nothing here: launch B plainly (its plain form, without the wait).
    DropAttribute,
    /// The wait costs more than PDL saves in this grid of several waves: launch the PDL form over a
    /// one-wave grid-stride grid (ordo's `PdlKernel`), which keeps the saving up to four waves of work.
    OneWaveForm,
    /// Not measured (why: in the advice's note).
    NotMeasured,
}

impl Recommendation {
    /// `keep`, `drop the attribute`, `one-wave form`, `not measured`.
    pub fn label(self) -> &'static str {
        match self {
            Recommendation::Keep => "keep",
            Recommendation::DropAttribute => "drop the attribute",
            Recommendation::OneWaveForm => "one-wave form",
            Recommendation::NotMeasured => "not measured",
        }
    }
}

/// One figure with its noise (relative standard deviation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// Seconds (the median of the samples).
    pub seconds: f64,
    /// Relative noise, if measured.
    pub noise: Option<f64>,
}

/// The advice for one edge at one sweep point.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// `A -> B`.
    pub edge: String,
    /// The sweep point.
    pub point: Vec<(String, String)>,
    /// Gap from A's end to B's start, without PDL.
    pub gap_plain: Option<Figure>,
    /// The same with PDL (negative: B started before A ended).
    pub gap_pdl: Option<Figure>,
    /// From A's end to B leaving its wait, with PDL.
    pub release: Option<Figure>,
    /// A kernel's GPU time in the sequence, gap included, without PDL.
    pub period_plain: Option<Figure>,
    /// The same with PDL.
    pub period_pdl: Option<Figure>,
    /// B's grid in waves (blocks over SMs times the blocks a SM holds), if known.
    pub waves: Option<f64>,
    /// What to do.
    pub recommendation: Recommendation,
    /// Why, in words.
    pub why: String,
}

/// The recommendation from the periods without and with PDL and B's waves. PDL pays when its
/// period is shorter by more than the larger of the two noises (at least 1%).
pub fn recommend(plain: Option<Figure>, pdl: Option<Figure>, waves: Option<f64>) -> (Recommendation, String) {
    let (Some(plain), Some(pdl)) = (plain, pdl) else {
        return (Recommendation::NotMeasured, "no period without and with PDL to compare".to_owned());
    };
    if !(plain.seconds > 0.0 && pdl.seconds > 0.0) {
        return (Recommendation::NotMeasured, "a period of zero or less: nothing measured".to_owned());
    }
    let noise = plain.noise.unwrap_or(0.0).max(pdl.noise.unwrap_or(0.0)).max(0.01);
    let saving = (plain.seconds - pdl.seconds) / plain.seconds;
    let pays = saving > noise;
    let w = waves.map_or("an unknown number of".to_owned(), |w| format!("{w:.2}"));
    let us = |s: f64| format!("{:.2} us", s * 1e6);
    let figures = format!(
        "period {} with PDL against {} without ({:+.1}%, noise {:.1}%), grid of {w} waves",
        us(pdl.seconds),
        us(plain.seconds),
        -saving * 100.0,
        noise * 100.0
    );
    let several = waves.is_some_and(|w| w > 1.0);
    match (pays, several) {
        (true, _) => (Recommendation::Keep, format!("PDL pays: {figures}")),
        (false, true) if waves.is_some_and(|w| w <= 4.0) => (
            Recommendation::OneWaveForm,
            format!("PDL does not pay: {figures}; a kernel that contains the wait is slower in a grid of several waves (ordo: 1.3-1.9x), so launch the PDL form over one wave as a grid-stride loop (ordo's PdlKernel), which keeps PDL's saving up to four waves of work, or drop the attribute"),
        ),
        (false, true) => (
            Recommendation::DropAttribute,
            format!("PDL does not pay: {figures}; past four waves even a one-wave PDL grid costs more than PDL saves (ordo's finding): launch the plain form without the attribute"),
        ),
        (false, false) => (
            Recommendation::DropAttribute,
            format!("PDL does not pay: {figures}; the launch gap it hides is not what this pair waits on: launch without the attribute"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(us: f64) -> Option<Figure> {
        Some(Figure { seconds: us * 1e-6, noise: Some(0.005) })
    }

    #[test]
    fn recommends_from_the_periods_and_the_waves() {
        assert_eq!(recommend(f(3.0), f(2.4), Some(0.5)).0, Recommendation::Keep);
        assert_eq!(recommend(f(3.0), f(2.4), Some(8.0)).0, Recommendation::Keep);
        assert_eq!(recommend(f(30.0), f(45.0), Some(3.0)).0, Recommendation::OneWaveForm);
        assert_eq!(recommend(f(30.0), f(45.0), Some(12.0)).0, Recommendation::DropAttribute);
        assert_eq!(recommend(f(3.0), f(2.99), Some(0.5)).0, Recommendation::DropAttribute, "within the noise");
        assert_eq!(recommend(None, f(2.0), None).0, Recommendation::NotMeasured);
        let (_, why) = recommend(f(3.0), f(2.4), Some(0.5));
        assert!(why.contains("2.40 us with PDL against 3.00 us without (-20.0%"), "{why}");
    }
}
