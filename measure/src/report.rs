//! A measurement report: a header (the device, driver, runtime, clocks and peer access of the run,
//! and how it sampled) and rows, one a (kernel, axis values, measure, metric, variant), each with
//! nvbench's summary of its samples. Written as markdown (the default), CSV or JSON; the JSON is
//! read back by [`crate::compare`].
//!
//! Times are kept in seconds (unit `"s"`) and shown in markdown scaled to ns, us, ms or s. In JSON
//! a figure that is not a finite number is `null`; CSV fields are quoted as RFC 4180 says.

use crate::stats::Summary;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The device a report was measured on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceInfo {
    /// CUDA ordinal.
    pub ordinal: i32,
    /// `cudaDeviceProp::name`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Default SM clock (`cudaDevAttrClockRate`), kHz: what the throttle rule compares with.
    pub sm_clock_khz: u32,
    /// Memory clock (`cudaDevAttrMemoryClockRate`), kHz.
    pub memory_clock_khz: u32,
    /// Memory bus width, bits.
    pub memory_bus_bits: u32,
    /// L2 cache, bytes (the size of the buffer written between cold samples).
    pub l2_bytes: u64,
}

/// Another device and what this process may reach of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its ordinal.
    pub ordinal: i32,
    /// `cudaDeviceCanAccessPeer` from the measured device.
    pub can_access: bool,
    /// Whether the measured device may read its default memory pool (`cudaMemPoolGetAccess`): a
    /// peer mapping this process has made.
    pub pool_mapped: bool,
}

/// What every report states first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    /// The tool and its version.
    pub tool: String,
    /// The measured device.
    pub device: DeviceInfo,
    /// `cudaDriverGetVersion` (13000 for 13.0).
    pub driver_version: u32,
    /// `cudaRuntimeGetVersion`.
    pub runtime_version: u32,
    /// The CUDA headers ordo was built against.
    pub bindings_version: u32,
    /// The other devices.
    pub peers: Vec<PeerInfo>,
    /// How the samples were taken and when sampling stopped, in words.
    pub sampling: String,
}

impl Header {
    /// The header as markdown lines.
    pub fn to_markdown(&self) -> String {
        let d = &self.device;
        let v = |x: u32| format!("{}.{}", x / 1000, (x % 1000) / 10);
        let peers = if self.peers.is_empty() {
            "none (one device)".to_owned()
        } else {
            self.peers
                .iter()
                .map(|p| {
                    format!(
                        "device {}: {}, {}",
                        p.ordinal,
                        if p.can_access { "peer access possible" } else { "no peer access" },
                        if p.pool_mapped { "its pool mapped here" } else { "nothing mapped" }
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let mut s = String::new();
        let _ = writeln!(s, "# {}\n", self.tool);
        let _ = writeln!(
            s,
            "- device {}: {} (sm_{}{}, {} SMs, L2 {} MiB)",
            d.ordinal,
            d.name,
            d.compute_capability.0,
            d.compute_capability.1,
            d.sms,
            d.l2_bytes >> 20
        );
        let _ = writeln!(
            s,
            "- clocks: SM {} MHz default, memory {} MHz, {}-bit bus",
            d.sm_clock_khz / 1000,
            d.memory_clock_khz / 1000,
            d.memory_bus_bits
        );
        let _ = writeln!(
            s,
            "- driver {}, runtime {}, built against {}",
            v(self.driver_version),
            v(self.runtime_version),
            v(self.bindings_version)
        );
        let _ = writeln!(s, "- peers: {peers}");
        let _ = writeln!(s, "- sampling: {}", self.sampling);
        s
    }

    pub(crate) fn to_json(&self) -> Value {
        let d = &self.device;
        json!({
            "tool": self.tool,
            "device": {
                "ordinal": d.ordinal,
                "name": d.name,
                "compute_capability": [d.compute_capability.0, d.compute_capability.1],
                "sms": d.sms,
                "sm_clock_khz": d.sm_clock_khz,
                "memory_clock_khz": d.memory_clock_khz,
                "memory_bus_bits": d.memory_bus_bits,
                "l2_bytes": d.l2_bytes,
            },
            "driver_version": self.driver_version,
            "runtime_version": self.runtime_version,
            "bindings_version": self.bindings_version,
            "peers": self.peers.iter().map(|p| json!({
                "ordinal": p.ordinal, "can_access": p.can_access, "pool_mapped": p.pool_mapped
            })).collect::<Vec<_>>(),
            "sampling": self.sampling,
        })
    }

    fn from_json(v: &Value) -> Header {
        let d = &v["device"];
        let u = |x: &Value| x.as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
        Header {
            tool: v["tool"].as_str().unwrap_or_default().to_owned(),
            device: DeviceInfo {
                ordinal: d["ordinal"].as_i64().and_then(|n| i32::try_from(n).ok()).unwrap_or(0),
                name: d["name"].as_str().unwrap_or_default().to_owned(),
                compute_capability: (u(&d["compute_capability"][0]), u(&d["compute_capability"][1])),
                sms: u(&d["sms"]),
                sm_clock_khz: u(&d["sm_clock_khz"]),
                memory_clock_khz: u(&d["memory_clock_khz"]),
                memory_bus_bits: u(&d["memory_bus_bits"]),
                l2_bytes: d["l2_bytes"].as_u64().unwrap_or(0),
            },
            driver_version: u(&v["driver_version"]),
            runtime_version: u(&v["runtime_version"]),
            bindings_version: u(&v["bindings_version"]),
            peers: v["peers"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|p| PeerInfo {
                            ordinal: p["ordinal"].as_i64().and_then(|n| i32::try_from(n).ok()).unwrap_or(0),
                            can_access: p["can_access"].as_bool().unwrap_or(false),
                            pool_mapped: p["pool_mapped"].as_bool().unwrap_or(false),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            sampling: v["sampling"].as_str().unwrap_or_default().to_owned(),
        }
    }
}

/// One reported figure: a metric of one variant, with the summary of its samples.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The kernel, or kernels (`A -> B`).
    pub kernel: String,
    /// Axis values of this point of the sweep, in axis order.
    pub axes: Vec<(String, String)>,
    /// What was measured: `submit`, `sync`, `gap`, `cold`, `hot`, or a group's own name.
    pub measure: String,
    /// Which figure of the measure: `launch`, `gap`, `release`, `span`, `period`, `gpu`, `cpu`, ...
    pub metric: String,
    /// How it was launched: the path and mode (`cudaLaunchKernelEx`, `graph, PDL`, ...).
    pub variant: String,
    /// `"s"` for times.
    pub unit: String,
    /// The kept samples' statistics.
    pub summary: Summary,
    /// Samples dropped by the throttle rule.
    pub dropped: u64,
    /// The mean SM clock over the kept samples (Hz), where measured.
    pub clock_hz: Option<f64>,
    /// The variant this row is compared with in the same rounds, if any.
    pub baseline: Option<String>,
    /// Median over the baseline's median.
    pub ratio: Option<f64>,
    /// Whether the stopping criterion was met.
    pub converged: bool,
    /// nvbench's warnings and the engine's.
    pub warnings: Vec<String>,
    /// Anything else worth knowing.
    pub note: String,
}

impl Row {
    /// The key rows are matched by in a comparison: kernel, axes, measure, metric, variant.
    pub fn key(&self) -> String {
        let axes: Vec<String> = self.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{} | {} | {} | {} | {}", self.kernel, axes.join(" "), self.measure, self.metric, self.variant)
    }

    fn to_json(&self) -> Value {
        let s = &self.summary;
        let axes: serde_json::Map<String, Value> =
            self.axes.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        json!({
            "kernel": self.kernel,
            "axes": axes,
            "measure": self.measure,
            "metric": self.metric,
            "variant": self.variant,
            "unit": self.unit,
            "samples": s.samples,
            "dropped": self.dropped,
            "mean": number(s.mean),
            "stdev": number(s.stdev),
            "noise": s.noise.map_or(Value::Null, number),
            "min": number(s.min),
            "q1": number(s.q1),
            "median": number(s.median),
            "q3": number(s.q3),
            "max": number(s.max),
            "rel_iqr": s.rel_iqr.map_or(Value::Null, number),
            "clock_hz": self.clock_hz.map_or(Value::Null, number),
            "baseline": self.baseline,
            "ratio": self.ratio.map_or(Value::Null, number),
            "converged": self.converged,
            "warnings": self.warnings,
            "note": self.note,
        })
    }

    fn from_json(v: &Value) -> Result<Row, String> {
        let text = |k: &str| v[k].as_str().map(str::to_owned).ok_or(format!("a row without \"{k}\""));
        let f = |k: &str| v[k].as_f64();
        let nan = |k: &str| f(k).unwrap_or(f64::NAN);
        let axes = match &v["axes"] {
            Value::Object(m) => m.iter().map(|(k, x)| (k.clone(), x.as_str().unwrap_or_default().to_owned())).collect(),
            _ => Vec::new(),
        };
        Ok(Row {
            kernel: text("kernel")?,
            axes,
            measure: text("measure")?,
            metric: text("metric")?,
            variant: text("variant")?,
            unit: text("unit").unwrap_or_default(),
            summary: Summary {
                samples: v["samples"].as_u64().map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
                mean: f("mean").unwrap_or(f64::INFINITY),
                stdev: f("stdev").unwrap_or(f64::INFINITY),
                noise: f("noise"),
                min: nan("min"),
                q1: nan("q1"),
                median: nan("median"),
                q3: nan("q3"),
                max: nan("max"),
                rel_iqr: f("rel_iqr"),
            },
            dropped: v["dropped"].as_u64().unwrap_or(0),
            clock_hz: f("clock_hz"),
            baseline: v["baseline"].as_str().map(str::to_owned),
            ratio: f("ratio"),
            converged: v["converged"].as_bool().unwrap_or(false),
            warnings: v["warnings"]
                .as_array()
                .map(|a| a.iter().filter_map(|w| w.as_str().map(str::to_owned)).collect())
                .unwrap_or_default(),
            note: v["note"].as_str().unwrap_or_default().to_owned(),
        })
    }
}

/// A header and its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The run's header.
    pub header: Header,
    /// The figures.
    pub rows: Vec<Row>,
}

/// A number for JSON: `null` unless finite.
pub(crate) fn number(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A duration in seconds, scaled to ns, us, ms or s, three decimals.
pub fn format_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "-".to_owned();
    }
    let a = s.abs();
    if a >= 1.0 {
        format!("{s:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if a >= 1e-6 || a == 0.0 {
        format!("{:.3} us", s * 1e6)
    } else {
        format!("{:.1} ns", s * 1e9)
    }
}

/// A value in `unit`: durations scaled, anything else with its unit.
pub fn format_value(x: f64, unit: &str) -> String {
    match unit {
        "s" => format_seconds(x),
        _ if !x.is_finite() => "-".to_owned(),
        _ => format!("{x:.3} {unit}"),
    }
}

/// A fraction as a percentage; `inf` for none (nvbench prints unavailable noise so).
pub fn format_percent(x: Option<f64>) -> String {
    match x {
        Some(p) if p.is_finite() => format!("{:.2}%", p * 100.0),
        _ => "inf".to_owned(),
    }
}

/// One CSV field, quoted when it must be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// A number for CSV: empty unless finite.
fn csv_number(x: Option<f64>) -> String {
    x.filter(|v| v.is_finite()).map_or(String::new(), |v| v.to_string())
}

/// A markdown table cell: pipes and line breaks escaped.
pub(crate) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

impl Report {
    /// The report as markdown: the header, then one table for each kernel and point of the sweep,
    /// warnings under it.
    pub fn to_markdown(&self) -> String {
        let mut s = self.header.to_markdown();
        let mut groups: Vec<(String, Vec<&Row>)> = Vec::new();
        for r in &self.rows {
            let axes: Vec<String> = r.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let title = if axes.is_empty() { r.kernel.clone() } else { format!("{} ({})", r.kernel, axes.join(", ")) };
            match groups.iter_mut().find(|(t, _)| *t == title) {
                Some((_, rows)) => rows.push(r),
                None => groups.push((title, vec![r])),
            }
        }
        for (title, rows) in groups {
            let _ = writeln!(s, "\n## {}\n", cell(&title));
            let _ = writeln!(
                s,
                "| measure | metric | variant | samples | dropped | mean | noise | median | rel IQR | SM clock | vs | ratio |"
            );
            let _ = writeln!(s, "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |");
            for r in &rows {
                let m = &r.summary;
                let clock = r.clock_hz.map_or("-".to_owned(), |hz| format!("{:.0} MHz", hz / 1e6));
                let ratio = r.ratio.filter(|x| x.is_finite()).map_or(String::new(), |x| format!("{x:.3}x"));
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    cell(&r.measure),
                    cell(&r.metric),
                    cell(&r.variant),
                    m.samples,
                    r.dropped,
                    format_value(m.mean, &r.unit),
                    format_percent(m.noise),
                    format_value(m.median, &r.unit),
                    format_percent(m.rel_iqr),
                    clock,
                    cell(r.baseline.as_deref().unwrap_or("")),
                    ratio
                );
            }
            // Each measure's note once; each row's warnings.
            let mut notes: Vec<String> = Vec::new();
            for r in &rows {
                let note = format!("- {}: {}", r.measure, r.note);
                if !r.note.is_empty() && !notes.contains(&note) {
                    notes.push(note);
                }
            }
            for r in &rows {
                let label = format!("{} {} ({})", r.measure, r.metric, r.variant);
                notes.extend(r.warnings.iter().map(|w| format!("- warning, {label}: {w}")));
            }
            if !notes.is_empty() {
                let _ = writeln!(s);
                for n in notes {
                    let _ = writeln!(s, "{}", n.replace(['\n', '\r'], " "));
                }
            }
        }
        s
    }

    /// The report as CSV, one line a row (the header is in the markdown and JSON forms).
    pub fn to_csv(&self) -> String {
        let mut csv = String::from(
            "kernel,axes,measure,metric,variant,unit,samples,dropped,mean,stdev,noise,min,q1,median,q3,max,rel_iqr,clock_hz,converged,baseline,ratio,warnings,note\n",
        );
        for r in &self.rows {
            let m = &r.summary;
            let axes: Vec<String> = r.axes.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let line = [
                csv_field(&r.kernel),
                csv_field(&axes.join(" ")),
                csv_field(&r.measure),
                csv_field(&r.metric),
                csv_field(&r.variant),
                csv_field(&r.unit),
                m.samples.to_string(),
                r.dropped.to_string(),
                csv_number(Some(m.mean)),
                csv_number(Some(m.stdev)),
                csv_number(m.noise),
                csv_number(Some(m.min)),
                csv_number(Some(m.q1)),
                csv_number(Some(m.median)),
                csv_number(Some(m.q3)),
                csv_number(Some(m.max)),
                csv_number(m.rel_iqr),
                csv_number(r.clock_hz),
                r.converged.to_string(),
                csv_field(r.baseline.as_deref().unwrap_or("")),
                csv_number(r.ratio),
                csv_field(&r.warnings.join("; ")),
                csv_field(&r.note),
            ];
            csv.push_str(&line.join(","));
            csv.push('\n');
        }
        csv
    }

    /// The report as JSON.
    pub fn to_json(&self) -> String {
        let v = json!({
            "header": self.header.to_json(),
            "rows": self.rows.iter().map(Row::to_json).collect::<Vec<_>>(),
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_else(|_| String::from("{}"));
        s.push('\n');
        s
    }

    /// A report read back from [`to_json`](Self::to_json)'s text; an error naming what is wrong.
    pub fn from_json(text: &str) -> Result<Report, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let rows = v["rows"].as_array().ok_or("no \"rows\" array: not an ordo-measure report")?;
        Ok(Report {
            header: Header::from_json(&v["header"]),
            rows: rows.iter().map(Row::from_json).collect::<Result<_, _>>()?,
        })
    }
}
