//! `BUILT_WITH` against what the build saw: the headers' `CUDART_VERSION`, the variable that named
//! the toolkit, the nvcc published; and the names of the places, which the build script passes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_sys::{FoundBy, BUILT_WITH, CUDART_VERSION, CUDA_VERSION};

/// The header of the toolkit `BUILT_WITH` names, read at compile time (the test binary may run on
/// another machine, as the GPU bundle's do).
const HEADER: &str = include_str!(concat!(env!("ORDO_CUDA_ROOT"), "/include/cuda_runtime_api.h"));

fn header_version() -> u32 {
    HEADER
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define CUDART_VERSION"))
        .map(|rest| rest.trim().parse::<u32>().unwrap())
        .next()
        .unwrap()
}

fn non_empty(v: Option<&'static str>) -> Option<&'static str> {
    v.filter(|v| !v.is_empty())
}

#[test]
fn built_with_is_the_version_of_the_headers_at_its_root() {
    assert_eq!(BUILT_WITH.cuda_version, header_version());
    assert_eq!(BUILT_WITH.cuda_version, CUDART_VERSION);
    assert_eq!(BUILT_WITH.major_minor(), (CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
    let root = BUILT_WITH.root.unwrap();
    assert!(env!("ORDO_CUDA_INCLUDE").starts_with(root), "{root} vs {}", env!("ORDO_CUDA_INCLUDE"));
    assert_ne!(BUILT_WITH.found_by, FoundBy::NoToolkit);
}

/// The variable this test was compiled under named the toolkit (CUDA_HOME over CUDA_PATH); with
/// neither, one of the places after them did.
#[test]
fn built_with_names_the_variable_the_build_saw() {
    match (non_empty(option_env!("CUDA_HOME")), non_empty(option_env!("CUDA_PATH"))) {
        (Some(home), _) => assert_eq!((BUILT_WITH.found_by, BUILT_WITH.root), (FoundBy::CudaHome, Some(home))),
        (None, Some(path)) => assert_eq!((BUILT_WITH.found_by, BUILT_WITH.root), (FoundBy::CudaPath, Some(path))),
        (None, None) => assert!(
            matches!(
                BUILT_WITH.found_by,
                FoundBy::NvccOnPath | FoundBy::UsrLocalCuda | FoundBy::CachePin | FoundBy::CacheNewest
            ),
            "{BUILT_WITH}"
        ),
    }
}

/// The nvcc is `ORDO_NVCC` where it was set, else the toolkit's own `bin/nvcc` (or none).
#[test]
fn built_with_names_the_published_nvcc() {
    match non_empty(option_env!("ORDO_NVCC")) {
        Some(named) => assert_eq!(BUILT_WITH.nvcc, Some(named)),
        None => {
            if let Some(nvcc) = BUILT_WITH.nvcc {
                assert_eq!(nvcc, format!("{}/bin/nvcc", BUILT_WITH.root.unwrap()));
            }
        }
    }
}

#[test]
fn built_with_says_it_all_in_one_line() {
    let line = BUILT_WITH.to_string();
    let (major, minor) = BUILT_WITH.major_minor();
    assert!(line.starts_with(&format!("CUDA {major}.{minor} (CUDART_VERSION {CUDA_VERSION}) at ")), "{line}");
    assert!(line.contains(BUILT_WITH.root.unwrap()), "{line}");
    assert!(line.contains(&format!("found by {}", BUILT_WITH.found_by)), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn every_place_is_found_by_its_name() {
    for place in FoundBy::ALL {
        assert_eq!(FoundBy::from_name(place.name()), Some(place));
    }
    assert_eq!(FoundBy::from_name(""), None);
    assert_eq!(FoundBy::from_name("CUDA_HOMEX"), None);
}
