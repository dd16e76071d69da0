//! The version gates (`cuda_12_5`, `cuda_12_8`, `cuda_13`) and `has_cuda_device` are one list, in
//! ordo-cuda-sys's build script (`API_GATES`), published to dependents as `DEP_ORDO_CUDA_SYS_CFGS`.
//! Every other build script of the repository sets them from there and decides none itself: none
//! names a CUDA version or sets one of those cfgs by name. (This crate is never published, so it
//! may read its siblings; ordo-cuda-core's tests/version_gates.rs checks the cfgs themselves.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

/// This package's folder: at run time where the runner says (a GPU host runs the binaries built
/// elsewhere from its own checkout), else where it was built.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// The build scripts of the repository's crates other than ordo-cuda-sys.
fn build_scripts() -> Vec<PathBuf> {
    let root = manifest_dir().parent().unwrap().to_path_buf();
    let mut scripts = vec![root.join("build.rs")];
    for dir in [root.clone(), root.join("examples"), root.join("examples/embedder")] {
        for entry in std::fs::read_dir(dir).unwrap() {
            let script = entry.unwrap().path().join("build.rs");
            if script.is_file() {
                scripts.push(script);
            }
        }
    }
    scripts
}

/// A CUDA version written as a number (`12080`), outside comments.
fn version_literal(line: &str) -> Option<&str> {
    let code = line.split("//").next().unwrap_or_default();
    code.split(|c: char| !c.is_ascii_digit()).find(|n| n.len() == 5 && n.starts_with('1'))
}

#[test]
fn no_build_script_but_ordo_cuda_sys_decides_a_version_gate_or_the_device() {
    let scripts = build_scripts();
    assert!(scripts.len() >= 6, "{scripts:?}");
    let mut problems = Vec::new();
    for script in &scripts {
        let text = std::fs::read_to_string(script).unwrap();
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}", script.display(), i + 1);
            if let Some(n) = version_literal(line) {
                problems.push(format!("{at}: the version {n}: take the gate from DEP_ORDO_CUDA_SYS_CFGS"));
            }
            if line.contains("rustc-cfg=cuda_1") || line.contains("rustc-cfg=has_cuda_device") {
                problems.push(format!("{at}: a gate set by name: set the cfgs of DEP_ORDO_CUDA_SYS_CFGS"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn this_crates_gates_follow_the_headers_version() {
    let version = ordo_cuda_sys::CUDA_VERSION;
    assert_eq!(cfg!(cuda_12_5), version >= 12050);
    assert_eq!(cfg!(cuda_12_8), version >= 12080);
    assert_eq!(cfg!(cuda_13), version >= 13000);
}

#[test]
fn a_version_outside_comments_is_found() {
    assert_eq!(version_literal("    if v >= 12080 {"), Some("12080"));
    assert_eq!(version_literal("// `13000` for 13.0"), None);
    assert_eq!(version_literal("let port = 8080;"), None);
}
