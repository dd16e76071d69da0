//! The results: one row a mode and frame size, printed as a markdown table and written as JSON.

use serde_json::json;

/// What one mode measured at one frame size.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub mode: &'static str,
    pub frame_mib: usize,
    /// Frames in the timed pass.
    pub frames: usize,
    /// Nanoseconds from the producer beginning the timed pass's first frame to the consumer's
    /// stream having completed its last.
    pub elapsed_ns: u64,
    /// One frame's latency in the latency pass, nanoseconds, one a frame.
    pub latencies_ns: Vec<u64>,
    /// Sample words checked (over every pass) and how many differed from the pattern.
    pub checked: u64,
    pub wrong: u64,
}

impl Row {
    pub fn frames_per_s(&self) -> f64 {
        self.frames as f64 / (self.elapsed_ns.max(1) as f64 * 1e-9)
    }

    /// Gigabytes (10^9 bytes) of frames a second.
    pub fn gb_per_s(&self) -> f64 {
        self.frames_per_s() * (self.frame_mib as f64 * (1 << 20) as f64) / 1e9
    }

    /// The `q` quantile (0 < q <= 1) of the latencies in microseconds, nearest rank.
    pub fn latency_us(&self, q: f64) -> Option<f64> {
        let mut sorted = self.latencies_ns.clone();
        sorted.sort_unstable();
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
        sorted.get(rank - 1).map(|&ns| ns as f64 / 1e3)
    }

    /// Every sample checked and none wrong.
    pub fn passed(&self) -> bool {
        self.wrong == 0 && self.checked > 0
    }
}

fn us(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

/// The table, a line a row, with its header.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| mode | frame MiB | frames/s | GB/s | latency p50 (us) | latency p99 (us) | check |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.2} | {} | {} | {} |\n",
            r.mode,
            r.frame_mib,
            r.frames_per_s(),
            r.gb_per_s(),
            us(r.latency_us(0.5)),
            us(r.latency_us(0.99)),
            if r.passed() { "pass" } else { "FAIL" },
        ));
    }
    out
}

/// The same as JSON, with the run's settings.
pub fn json(rows: &[Row], slots: usize, warmup: usize) -> serde_json::Value {
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({
                "mode": r.mode,
                "frame_mib": r.frame_mib,
                "frames": r.frames,
                "elapsed_ns": r.elapsed_ns,
                "frames_per_s": r.frames_per_s(),
                "gb_per_s": r.gb_per_s(),
                "latency_p50_us": r.latency_us(0.5),
                "latency_p99_us": r.latency_us(0.99),
                "latency_frames": r.latencies_ns.len(),
                "checked_words": r.checked,
                "wrong_words": r.wrong,
                "check": if r.passed() { "pass" } else { "FAIL" },
            })
        })
        .collect();
    json!({
        "what": "frames handed from a producer process to a consumer process on one GPU: CUDA IPC against pinned shared host memory",
        "slots": slots,
        "warmup_frames": warmup,
        "latency": "from the producer beginning a frame (before its fill is enqueued) to the consumer's stream having completed its copy of it, one frame in flight",
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(latencies_ns: Vec<u64>, wrong: u64) -> Row {
        Row { mode: "ipc", frame_mib: 16, frames: 400, elapsed_ns: 1_000_000_000, latencies_ns, checked: 800, wrong }
    }

    #[test]
    fn rates_and_quantiles_follow_from_the_row() {
        let r = row((1..=100).map(|us| us * 1000).collect(), 0);
        assert_eq!(r.frames_per_s(), 400.0);
        assert!((r.gb_per_s() - 400.0 * 16.0 * 1_048_576.0 / 1e9).abs() < 1e-9);
        assert_eq!((r.latency_us(0.5), r.latency_us(0.99)), (Some(50.0), Some(99.0)));
        assert_eq!(row(vec![], 0).latency_us(0.5), None);
        let table = markdown(&[r.clone(), row(vec![7000], 3)]);
        assert!(
            table.starts_with("| mode | frame MiB | frames/s | GB/s | latency p50 (us) | latency p99 (us) | check |")
        );
        assert!(table.contains("| ipc | 16 | 400 | 6.71 | 50.0 | 99.0 | pass |"), "{table}");
        assert!(table.contains("| 7.0 | 7.0 | FAIL |"), "{table}");
        let j = json(&[r], 4, 20);
        assert_eq!(j["rows"][0]["check"], "pass");
        assert_eq!(j["rows"][0]["latency_p99_us"], 99.0);
    }
}
