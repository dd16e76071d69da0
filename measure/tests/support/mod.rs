//! What the integration tests share: where the `ordo-measure` binary and this package's folder are
//! at run time. A GPU host runs test binaries built on another machine (the GPU bundle), where the
//! build machine's paths (`env!("CARGO_BIN_EXE_...")`, `env!("CARGO_MANIFEST_DIR")`) do not exist.
#![allow(dead_code)]

use std::path::PathBuf;

/// This package's folder: `CARGO_MANIFEST_DIR` at run time (cargo and the bundle's runner set it),
/// else the folder it was built in.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}

/// The `ordo-measure` binary: `ORDO_MEASURE_BIN` when set; the one cargo built, where it exists;
/// else the GPU bundle's copy beside the checkout (`target/gpu-bundle/bin/exe--measure--ordo-measure`).
pub fn ordo_measure_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("ORDO_MEASURE_BIN") {
        return path.into();
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_ordo-measure"));
    if built.exists() {
        return built;
    }
    manifest_dir().join("../target/gpu-bundle/bin/exe--measure--ordo-measure")
}
