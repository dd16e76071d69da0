//! Throttle detection as nvbench does it (`nvbench/detail/gpu_frequency.cxx`, the check in
//! `measure_cold.cu`): around every GPU-timed sample a stamp kernel reads `%globaltimer`
//! (nanoseconds) and `%clock64` (SM cycles) on SM 0, before and after the measured work; cycles over
//! nanoseconds is the SM clock during the sample. A sample whose clock is below `threshold` (75%)
//! of the device's default SM clock is dropped, and the measurement pauses for the recovery delay
//! (0.05 s) to let the GPU cool; after more than two drops in a row the delay grows by
//! `min(1.5 delay, 0.5 s)` each time. Measuring variants interleaved, the run of drops counts
//! across them: the clock is the GPU's, and a kept sample of any variant shows it recovered.

/// Elapsed `%globaltimer` nanoseconds and `%clock64` cycles between two stamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    /// Nanoseconds between the stamps.
    pub ns: u64,
    /// SM cycles between the stamps.
    pub cycles: u64,
}

impl ClockReading {
    /// The reading between two `(globaltimer, clock64)` stamps; `None` if time or cycles went
    /// backwards (a stamp from another SM, or none written).
    pub fn between(start: (u64, u64), stop: (u64, u64)) -> Option<ClockReading> {
        Some(ClockReading { ns: stop.0.checked_sub(start.0)?, cycles: stop.1.checked_sub(start.1)? })
    }

    /// The SM clock in Hz; `None` when no time passed between the stamps.
    pub fn hz(&self) -> Option<f64> {
        (self.ns > 0).then(|| self.cycles as f64 / self.ns as f64 * 1e9)
    }
}

/// The throttle rule's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottleParams {
    /// Fraction of the default SM clock below which a sample is dropped (nvbench: 0.75).
    pub threshold: f64,
    /// Seconds to pause after a drop (nvbench: 0.05).
    pub recovery_delay: f64,
}

impl Default for ThrottleParams {
    fn default() -> ThrottleParams {
        ThrottleParams { threshold: 0.75, recovery_delay: 0.05 }
    }
}

/// What to do with a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Keep it; the SM clock measured during it, if there was a reading.
    Keep(Option<f64>),
    /// Drop it: the GPU ran at `hz`; pause `pause` seconds before the next sample.
    Drop {
        /// The SM clock measured.
        hz: f64,
        /// Seconds to pause.
        pause: f64,
    },
}

/// The throttle rule with its state (the consecutive drops and the grown delay).
#[derive(Debug, Clone)]
pub struct Throttle {
    params: ThrottleParams,
    default_hz: f64,
    delay: f64,
    consecutive: u64,
    dropped: u64,
}

impl Throttle {
    /// The rule for a device whose default SM clock is `default_hz` (`cudaDevAttrClockRate`); a
    /// default of zero or less disables it.
    pub fn new(params: ThrottleParams, default_hz: f64) -> Throttle {
        Throttle { params, default_hz, delay: params.recovery_delay, consecutive: 0, dropped: 0 }
    }

    /// The verdict on a sample with clock reading `reading` (none for host-timed samples).
    pub fn judge(&mut self, reading: Option<ClockReading>) -> Verdict {
        let Some(hz) = reading.and_then(|r| r.hz()) else {
            return Verdict::Keep(None);
        };
        if self.default_hz > 0.0 && hz < self.default_hz * self.params.threshold {
            if self.consecutive > 2 {
                self.delay += (self.delay * 1.5).min(0.5);
            }
            self.consecutive += 1;
            self.dropped += 1;
            return Verdict::Drop { hz, pause: self.delay.max(0.0) };
        }
        self.consecutive = 0;
        Verdict::Keep(Some(hz))
    }

    /// Samples dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The default SM clock (Hz) the rule compares with.
    pub fn default_hz(&self) -> f64 {
        self.default_hz
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(mhz: u64) -> Option<ClockReading> {
        // 10 us at `mhz`.
        Some(ClockReading { ns: 10_000, cycles: mhz * 10 })
    }

    #[test]
    fn below_threshold_is_dropped_and_the_delay_grows_after_two() {
        let mut t = Throttle::new(ThrottleParams::default(), 1980e6);
        assert_eq!(t.judge(reading(1980)), Verdict::Keep(Some(1980e6)));
        assert_eq!(t.judge(None), Verdict::Keep(None));
        // 75% of 1980 MHz is 1485 MHz.
        assert_eq!(t.judge(reading(1490)), Verdict::Keep(Some(1490e6)));
        let pauses: Vec<f64> = (0..5)
            .map(|_| match t.judge(reading(1400)) {
                Verdict::Drop { pause, .. } => pause,
                v => panic!("{v:?}"),
            })
            .collect();
        // nvbench: the delay grows once more than two drops came in a row.
        let expected = [0.05, 0.05, 0.05, 0.05 + 0.075, 0.125 + 0.1875];
        for (p, e) in pauses.iter().zip(expected) {
            assert!((p - e).abs() < 1e-12, "{pauses:?}");
        }
        assert_eq!(t.dropped(), 5);
        // A kept sample resets the run of drops, not the grown delay.
        assert!(matches!(t.judge(reading(1900)), Verdict::Keep(_)));
        assert!(matches!(t.judge(reading(100)), Verdict::Drop { pause, .. } if (pause - 0.3125).abs() < 1e-12));
    }

    #[test]
    fn readings_that_go_backwards_or_take_no_time_are_not_judged() {
        assert_eq!(ClockReading::between((10, 10), (5, 20)), None);
        assert_eq!(ClockReading::between((10, 10), (20, 5)), None);
        assert_eq!(ClockReading { ns: 0, cycles: 10 }.hz(), None);
        let mut t = Throttle::new(ThrottleParams::default(), 1980e6);
        assert_eq!(t.judge(Some(ClockReading { ns: 0, cycles: 0 })), Verdict::Keep(None));
        let mut off = Throttle::new(ThrottleParams::default(), 0.0);
        assert!(matches!(off.judge(reading(1)), Verdict::Keep(Some(_))));
    }
}
