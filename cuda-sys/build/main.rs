//! Build script of ordo-cuda-sys: finds a CUDA toolkit, generates the runtime bindings with bindgen,
//! gates the calls whose signatures differ between CUDA versions, links the runtime, and passes what
//! it found to dependents through `links = "cudart"` metadata (`DEP_CUDART_*`).

mod discover;

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The oldest toolkit supported: CUDA 12.3, the first whose graph calls carry edge data (the form
/// every later version has). The test command builds and tests against it; older ones are refused.
const OLDEST: u32 = 12030;

/// Version thresholds of API forms (not a table of known releases): each is the first runtime
/// version that has the form, so any later version, released or not, takes it.
const API_GATES: &[(&str, u32, &str)] =
    &[("cuda_12_8", 12080, "cudaStreamGetDevice"), ("cuda_13", 13000, "the _v2/_v3 names became the plain names")];

fn main() -> ExitCode {
    for var in ["CUDA_HOME", "CUDA_PATH", "ORDO_CUDA_CACHE", "ORDO_GPU_TESTS"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build");
    println!("cargo::rerun-if-changed=wrapper.h");
    for (cfg, _, _) in API_GATES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    println!("cargo::rustc-check-cfg=cfg(has_cuda_device)");

    let places = discover::Places::from_env(&|k| env::var_os(k));
    let toolkit = match discover::discover(&places) {
        Ok(t) => t,
        Err(not_found) => {
            eprintln!("{not_found}");
            return ExitCode::FAILURE;
        }
    };
    println!("cargo::warning=ordo-cuda-sys: CUDA {} from {}", version_string(toolkit.version), toolkit.found_via);
    if toolkit.version < OLDEST {
        eprintln!(
            "ordo-cuda-sys: CUDA {} ({}) is older than the oldest supported, {}. Point CUDA_HOME at CUDA {} or later \
             (`bash scripts/setup.sh` installs 13.0).",
            version_string(toolkit.version),
            toolkit.found_via,
            version_string(OLDEST),
            version_string(OLDEST)
        );
        return ExitCode::FAILURE;
    }

    for (cfg, since, _) in API_GATES {
        if toolkit.version >= *since {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    let has_device = has_cuda_device();
    if has_device {
        println!("cargo::rustc-cfg=has_cuda_device");
    }

    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap_or_default());
    if let Err(e) = generate(&toolkit, &out.join("bindings.rs")) {
        eprintln!("ordo-cuda-sys: bindgen failed on {}: {e}", toolkit.include_dir().display());
        eprintln!("bindgen needs libclang: `bash scripts/setup.sh` installs it (apt-get install libclang-dev).");
        return ExitCode::FAILURE;
    }

    link(&toolkit);

    // Metadata for dependents (DEP_CUDART_ROOT, ...), and for this crate's own tests.
    println!("cargo::metadata=root={}", toolkit.root.display());
    println!("cargo::metadata=include={}", join_paths(&toolkit.include_dirs));
    println!("cargo::metadata=lib={}", toolkit.lib_dir.display());
    println!("cargo::metadata=version={}", toolkit.version);
    if let Some(nvcc) = &toolkit.nvcc {
        println!("cargo::metadata=nvcc={}", nvcc.display());
    }
    println!("cargo::metadata=has_device={}", u8::from(has_device));
    println!("cargo::metadata=gencode={GENCODE}");
    println!("cargo::rustc-env=ORDO_CUDA_VERSION={}", toolkit.version);
    println!("cargo::rustc-env=ORDO_CUDA_INCLUDE={}", toolkit.include_dir().display());
    ExitCode::SUCCESS
}

/// The GPU targets every crate of the workspace compiles its CUDA C for, published once
/// (`DEP_CUDART_GENCODE`, nvcc flags separated by spaces): sm_80 and sm_90 machine code, and
/// compute_90 PTX that the driver compiles for later GPUs.
const GENCODE: &str =
    "-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90";

fn version_string(v: u32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn join_paths(paths: &[PathBuf]) -> String {
    env::join_paths(paths).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default()
}

/// An NVIDIA device is visible to this machine's driver, or ORDO_GPU_TESTS=1 says to assume one.
fn has_cuda_device() -> bool {
    if let Some(v) = env::var_os("ORDO_GPU_TESTS") {
        return v == "1";
    }
    Path::new("/dev/nvidia0").exists() || Path::new("/proc/driver/nvidia/gpus").is_dir()
}

fn generate(toolkit: &discover::Toolkit, out: &Path) -> Result<(), String> {
    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        // The runtime headers parse as plain C. Never define CUDA_API_PER_THREAD_DEFAULT_STREAM here:
        // it renames the functions to their _ptsz/_ptds forms.
        .clang_args(["-x", "c", "-std=c99"])
        .allowlist_function("cuda.*")
        .allowlist_type("cuda.*|CU.*")
        .allowlist_var("CUDA.*|cuda.*")
        .use_core()
        .ctypes_prefix("core::ffi")
        // Newtype constants, never Rust enums: a value a later driver returns must not be UB.
        .default_enum_style(bindgen::EnumVariation::NewType { is_bitfield: false, is_global: false })
        .bitfield_enum("cudaGraphInstantiateFlags")
        .derive_default(true)
        .derive_hash(false)
        .layout_tests(true)
        .generate_comments(false)
        .merge_extern_blocks(true)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &toolkit.include_dirs {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder.generate().map_err(|e| e.to_string())?;
    bindings.write_to_file(out).map_err(|e| format!("writing {}: {e}", out.display()))
}

fn link(toolkit: &discover::Toolkit) {
    println!("cargo::rustc-link-search=native={}", toolkit.lib_dir.display());
    if env::var_os("CARGO_FEATURE_SHARED_CUDART").is_some() {
        // The wheels ship only the versioned name (libcudart.so.13).
        let unversioned = toolkit.lib_dir.join("libcudart.so");
        if unversioned.exists() {
            println!("cargo::rustc-link-lib=dylib=cudart");
        } else if let Some(name) = versioned_cudart(&toolkit.lib_dir) {
            println!("cargo::rustc-link-lib=dylib:+verbatim={name}");
        } else {
            println!("cargo::rustc-link-lib=dylib=cudart");
        }
    } else {
        // The static runtime loads the driver (libcuda.so.1) at run time: binaries built on a
        // machine with no driver run as they are on one with a GPU.
        // Not bundled into ordo's rlibs and static library: Rust binaries link it from the search
        // path, and C++ programs linking libordo.a link the CUDA runtime themselves (nvcc does by
        // default), so a program never holds two copies of the runtime.
        println!("cargo::rustc-link-lib=static:-bundle=cudart_static");
        for lib in ["rt", "pthread", "dl", "stdc++"] {
            println!("cargo::rustc-link-lib=dylib={lib}");
        }
    }
}

fn versioned_cudart(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libcudart.so."))
        .collect();
    names.sort_by_key(|n| n.len());
    names.into_iter().next()
}
