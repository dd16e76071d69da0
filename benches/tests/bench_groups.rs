//! ordo-bench's group list (`groups` in benches/ordo-bench/main.rs) is a slice with no length to
//! keep: this checks that every group a module defines (`pub(crate) fn NAME_group`) is in it once,
//! under a name of its own, so that a new group cannot be left out of the report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

/// This package's folder: at run time where the runner says (a GPU host runs the binaries built
/// elsewhere from its own checkout), else where it was built.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

fn bench_dir() -> std::path::PathBuf {
    manifest_dir().join("benches/ordo-bench")
}

/// `module::function` of every `pub(crate) fn *_group(` in the report's modules.
fn defined_groups() -> BTreeSet<String> {
    let mut groups = BTreeSet::new();
    for entry in std::fs::read_dir(bench_dir()).unwrap() {
        let path = entry.unwrap().path();
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for rest in text.split("pub(crate) fn ").skip(1) {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if name.ends_with("_group") && rest[name.len()..].starts_with('(') {
                groups.insert(format!("{module}::{name}"));
            }
        }
    }
    groups
}

/// `(name, module::function)` of each entry of main.rs's `groups` list, in order.
fn listed_groups() -> Vec<(String, String)> {
    let main = std::fs::read_to_string(bench_dir().join("main.rs")).unwrap();
    let start = main.find("let groups: &[(&str, Group)] = &[").expect("main.rs has the `groups` slice");
    let list = &main[start..];
    let list = &list[list.find('\n').unwrap()..list.find("];").unwrap()];
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(|l| {
            let (name, function) = l
                .trim_start_matches('(')
                .trim_end_matches(',')
                .trim_end_matches(')')
                .split_once(", ")
                .unwrap_or_else(|| panic!("not a (name, group) entry: {l}"));
            (name.trim_matches('"').to_string(), function.to_string())
        })
        .collect()
}

#[test]
fn every_group_a_module_defines_is_listed_once_under_its_own_name() {
    let defined = defined_groups();
    let listed = listed_groups();
    assert!(defined.len() >= 12 && listed.len() >= 12, "defined {defined:?}, listed {listed:?}");
    let functions: Vec<&str> = listed.iter().map(|(_, f)| f.as_str()).collect();
    for group in &defined {
        let times = functions.iter().filter(|f| **f == group).count();
        assert_eq!(times, 1, "{group} is in main.rs's `groups` {times} times");
    }
    for (name, function) in &listed {
        assert!(defined.contains(function), "{name}: {function} is no group a module defines");
    }
    let names: BTreeSet<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), listed.len(), "a name given twice: {listed:?}");
}
