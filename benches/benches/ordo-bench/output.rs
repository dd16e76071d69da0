//! The report's command line and its files: JSON through `serde_json` (a figure that is not a
//! finite number is `null`, every string escaped), CSV quoted as RFC 4180 says (fields with a
//! comma, quote or line break in double quotes, quotes doubled). Kept apart from the measurements
//! so that `benches/tests/report_output.rs` checks it without a GPU.

/// One reported figure: ordo's value, the baseline's (plain C++, or what the name says), and a note.
pub(crate) struct Row {
    pub(crate) group: &'static str,
    pub(crate) name: String,
    pub(crate) unit: &'static str,
    pub(crate) ordo: f64,
    pub(crate) baseline: Option<f64>,
    pub(crate) note: String,
}

impl Row {
    /// ordo's value over the baseline's, when there is one.
    pub(crate) fn ratio(&self) -> Option<f64> {
        self.baseline.map(|b| self.ordo / b)
    }
}

/// What the command line asked for.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    pub(crate) quick: bool,
    pub(crate) json: Option<String>,
    pub(crate) csv: Option<String>,
    pub(crate) svg: Option<String>,
    /// The groups to run (`--only launch,decode`); `None`: every group.
    pub(crate) only: Option<String>,
}

pub(crate) const USAGE: &str =
    "usage: ordo-bench [--quick] [--only GROUP[,GROUP...]] [--json FILE] [--csv FILE] [--svg FILE]";

impl Options {
    /// Whether group `name` runs: every group without `--only`, else the ones it lists.
    pub(crate) fn runs(&self, name: &str) -> bool {
        self.only.as_deref().map_or(true, |only| only.split(',').any(|g| g.trim() == name))
    }
}

/// Parses the arguments after the program's name. `--bench`, which cargo passes to every bench
/// target, is accepted and ignored; anything else unknown, a flag given twice, or a flag without
/// its file is an error naming it.
pub(crate) fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<Options, String> {
    let mut o = Options::default();
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--quick" => {
                o.quick = true;
                continue;
            }
            "--bench" => continue,
            "--json" => &mut o.json,
            "--csv" => &mut o.csv,
            "--svg" => &mut o.svg,
            "--only" => &mut o.only,
            other => return Err(format!("unknown argument {other:?}; {USAGE}")),
        };
        if slot.is_some() {
            return Err(format!("{a} given twice"));
        }
        match args.next() {
            Some(file) if !file.starts_with("--") => *slot = Some(file),
            _ => return Err(format!("{a} needs a value; {USAGE}")),
        }
    }
    Ok(o)
}

/// A number for JSON: `null` unless finite.
fn number(x: Option<f64>) -> serde_json::Value {
    x.and_then(serde_json::Number::from_f64).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// The rows as a JSON array of objects.
pub(crate) fn to_json(rows: &[Row]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|x| {
            serde_json::json!({
                "group": x.group,
                "figure": x.name,
                "unit": x.unit,
                "ordo": number(Some(x.ordo)),
                "baseline": number(x.baseline),
                "ratio": number(x.ratio()),
                "note": x.note,
            })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&rows).unwrap_or_else(|_| String::from("[]"));
    s.push('\n');
    s
}

/// One CSV field, quoted when it must be.
fn field(s: &str) -> String {
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

/// The rows as CSV with a header line.
pub(crate) fn to_csv(rows: &[Row]) -> String {
    let mut csv = String::from("group,figure,unit,ordo,baseline,ratio,note\n");
    for x in rows {
        let line = [
            field(x.group),
            field(&x.name),
            field(x.unit),
            csv_number(Some(x.ordo)),
            csv_number(x.baseline),
            csv_number(x.ratio()),
            field(&x.note),
        ];
        csv.push_str(&line.join(","));
        csv.push('\n');
    }
    csv
}
