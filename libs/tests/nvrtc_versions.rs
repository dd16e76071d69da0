//! Real NVRTC libraries of every CUDA 13 release, compiling without a GPU: each loads (every
//! function ordo needs resolves), says its release, compiles a kernel to PTX of that release for the
//! architecture asked (and for its default one), and reports an error in the source with its log.
//! NVRTC 13.0's wheel finds its builtins library only because ordo loads it first from NVRTC's
//! own folder (the library has no `$ORIGIN` search path).
//!
//! The libraries are listed in `ORDO_NVRTC_LIBS` (paths separated by `:`);
//! `scripts/lib-versions.sh` downloads them and runs this test. Without the variable the test
//! says so and checks nothing. Each library is tested in a child process of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nvrtc")]

use ordo_cuda_core::Error;
use ordo_cuda_libs::nvrtc::Nvrtc;
use std::process::Command;

const TEST: &str = "every_listed_nvrtc_compiles_without_a_gpu";
const CHILD: &str = "ORDO_NVRTC_VERSIONS_CHILD";

const SOURCE: &str = r#"extern "C" __global__ void twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}"#;

fn child() {
    let nvrtc = Nvrtc::load().unwrap();
    let (major, minor) = nvrtc.version().unwrap();
    println!("NVRTC {major}.{minor}");
    let ptx = nvrtc.compile_ptx(SOURCE, "twice.cu", &["--gpu-architecture=compute_90"]).unwrap();
    let text = ptx.text();
    assert!(text.contains(".visible .entry twice("), "{text}");
    assert!(text.contains(".target sm_90"), "{text}");
    // PTX ISA 9.x for CUDA 13.x: `.version 9.<minor>`.
    assert!(text.contains(&format!(".version 9.{minor}")), "PTX ISA of CUDA 13.{minor}:\n{text}");
    let default = nvrtc.compile_ptx(SOURCE, "twice.cu", &[]).unwrap();
    assert!(default.text().contains(".entry twice("));
    let bad = nvrtc.compile_ptx("extern \"C\" __global__ void k() { undeclared_thing(); }", "bad.cu", &[]).unwrap_err();
    assert!(
        matches!(&bad.error, Error::Library(l) if l.library == "NVRTC" && l.call == "nvrtcCompileProgram"),
        "{bad}"
    );
    assert!(bad.log.contains("bad.cu") && bad.log.contains("undeclared_thing"), "{}", bad.log);
    println!("COMPILED {}", text.lines().find(|l| l.starts_with(".version")).unwrap_or("?"));
}

#[test]
fn every_listed_nvrtc_compiles_without_a_gpu() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let Ok(libs) = std::env::var("ORDO_NVRTC_LIBS") else {
        println!("skipped: ORDO_NVRTC_LIBS lists no NVRTC libraries (scripts/lib-versions.sh sets it)");
        return;
    };
    let exe = std::env::current_exe().unwrap();
    for lib in libs.split(':').filter(|l| !l.is_empty()) {
        let out = Command::new(&exe)
            .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("ORDO_NVRTC", lib)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && text.contains("COMPILED"), "{lib}:\n{text}");
        let release = text.lines().find_map(|l| l.find("NVRTC 13.").map(|i| &l[i..])).unwrap_or("?");
        println!("{lib}: {release}: compiles");
    }
}
