//! The report's command line and files, without a GPU: JSON stays valid with non-finite figures
//! and notes holding quotes, backslashes and line breaks; CSV fields are quoted as RFC 4180 says;
//! unknown flags and flags without a file are refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "../benches/ordo-bench/output.rs"]
mod output;

use output::{parse_args, to_csv, to_json, Options, Row};

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn awkward_rows() -> Vec<Row> {
    vec![
        Row {
            group: "launch",
            name: "empty kernel, \"typed\"".into(),
            unit: "us",
            ordo: 3.1,
            baseline: Some(3.0),
            note: "a\\b, c\nd".into(),
        },
        Row {
            group: "pdl",
            name: "no samples".into(),
            unit: "us",
            ordo: f64::NAN,
            baseline: Some(0.0),
            note: String::new(),
        },
        Row { group: "copy", name: "H2D".into(), unit: "GB/s", ordo: f64::INFINITY, baseline: None, note: "x".into() },
    ]
}

#[test]
fn json_is_valid_with_non_finite_figures_and_awkward_text() {
    let text = to_json(&awkward_rows());
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["figure"], "empty kernel, \"typed\"");
    assert_eq!(rows[0]["note"], "a\\b, c\nd");
    assert!((rows[0]["ratio"].as_f64().unwrap() - 3.1 / 3.0).abs() < 1e-12);
    assert!(rows[1]["ordo"].is_null() && rows[1]["ratio"].is_null(), "NaN is null");
    assert!(rows[2]["ordo"].is_null() && rows[2]["baseline"].is_null(), "infinity and no baseline are null");
}

#[test]
fn csv_quotes_fields_with_commas_quotes_and_line_breaks() {
    let text = to_csv(&awkward_rows());
    let mut lines = text.split_inclusive('\n');
    assert_eq!(lines.next().unwrap(), "group,figure,unit,ordo,baseline,ratio,note\n");
    let expect_first = format!("launch,\"empty kernel, \"\"typed\"\"\",us,3.1,3,{},\"a\\b, c\nd\"\n", 3.1 / 3.0);
    assert!(text.contains(&expect_first), "{text}");
    assert!(text.contains("pdl,no samples,us,,0,,\n"), "{text}");
    assert!(text.contains("copy,H2D,GB/s,,,,x\n"), "{text}");
}

#[test]
fn arguments_are_parsed_and_unknown_ones_refused() {
    assert_eq!(parse_args(args(&[])).unwrap(), Options::default());
    let o = parse_args(args(&["--bench", "--quick", "--json", "b.json", "--csv", "b.csv", "--svg", "t.svg"])).unwrap();
    assert_eq!(
        o,
        Options {
            quick: true,
            json: Some("b.json".into()),
            csv: Some("b.csv".into()),
            svg: Some("t.svg".into()),
            only: None
        }
    );
    let o = parse_args(args(&["--only", "launch,decode"])).unwrap();
    assert!(o.runs("launch") && o.runs("decode") && !o.runs("gaps"), "--only lists the groups");
    assert!(Options::default().runs("gaps"), "every group without --only");
    assert!(parse_args(args(&["--jsn", "b.json"])).unwrap_err().contains("--jsn"));
    assert!(parse_args(args(&["--json"])).unwrap_err().contains("needs a value"));
    assert!(parse_args(args(&["--json", "--quick"])).unwrap_err().contains("needs a value"));
    assert!(parse_args(args(&["--only"])).unwrap_err().contains("needs a value"));
    assert!(parse_args(args(&["--csv", "a", "--csv", "b"])).unwrap_err().contains("twice"));
}
