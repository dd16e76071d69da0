//! The PTX this crate writes is PTX that ptxas accepts (for sm_90, the H200's, and sm_75, the
//! oldest CUDA 13 compiles for): the engine's helper kernels, the stamped copies `ptx::instrument`
//! makes of nvcc's PTX for the chain step (`examples/chain_step.cu`, compiled with
//! `nvcc -ptx -arch=sm_90`: `tests/data/chain_step.ptx`) and of hand-written PTX with predicated
//! returns, `exit`, nested scopes and vector operands, and the delayed copies the PDL check's
//! dynamic part launches (`check::delay`) of every kernel of `tests/data/pdl_cases.ptx`, of the
//! chain step, and of PTX for sm_75 (no trigger there). Needs `ptxas`: the one beside the nvcc ordo
//! was built with, else `$ORDO_MEASURE_PTXAS`, `$CUDA_HOME/bin/ptxas`, `/usr/local/cuda/bin/ptxas`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_measure::{check, helpers, ptx};
use std::path::PathBuf;
use std::process::Command;

fn ptxas() -> PathBuf {
    let candidates = [
        std::env::var_os("ORDO_MEASURE_PTXAS").map(PathBuf::from),
        Some(PathBuf::from(env!("ORDO_MEASURE_BUILD_PTXAS"))).filter(|p| !p.as_os_str().is_empty()),
        std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin/ptxas")),
        Some(PathBuf::from("/usr/local/cuda/bin/ptxas")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file()).expect("no ptxas found: set ORDO_MEASURE_PTXAS")
}

/// Assembles `text` for `arch`; panics with ptxas's message if it refuses.
fn assemble(name: &str, text: &str, arch: &str) {
    let dir = std::env::temp_dir().join(format!("ordo-measure-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}-{arch}.ptx"));
    std::fs::write(&src, text).unwrap();
    let out = Command::new(ptxas())
        .arg(format!("-arch={arch}"))
        .arg("-o")
        .arg(dir.join(format!("{name}-{arch}.cubin")))
        .arg(&src)
        .output()
        .unwrap();
    assert!(out.status.success(), "ptxas refused {name} for {arch}:\n{}\n{text}", String::from_utf8_lossy(&out.stderr));
}

const CHAIN: &str = include_str!("data/chain_step.ptx");

#[test]
fn the_helper_kernels_assemble() {
    assemble("helpers", helpers::PTX, "sm_90");
    assemble("helpers", helpers::PTX, "sm_75");
}

#[test]
fn stamped_copies_of_nvcc_output_assemble_and_find_the_wait() {
    for (kernel, waits) in [
        ("chain_step", false),
        ("chain_step_pdl", true),
        ("chain_step_stamped", false),
        ("chain_step_stamped_pdl", true),
    ] {
        let out = ptx::instrument(CHAIN, kernel).unwrap();
        assert_eq!(out.has_wait, waits, "{kernel}");
        assert_eq!(out.has_trigger, waits, "{kernel}");
        assert_eq!(out.ptx.matches("red.global.min.u64").count(), usize::from(waits), "{kernel}: one release stamp");
        assemble(kernel, &out.ptx, "sm_90");
    }
    assert_eq!(
        ptx::entry_names(CHAIN).unwrap(),
        vec!["chain_step", "chain_step_pdl", "chain_step_stamped", "chain_step_stamped_pdl"]
    );
}

#[test]
fn stamped_copies_of_awkward_ptx_assemble() {
    let text = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u32 k_param_1
)
.maxntid 256, 1, 1
{
\t.reg .pred \t%p<3>;
\t.reg .b32 \t%r<6>;
\t.reg .b64 \t%rd<3>;
\tld.param.u64 \t%rd1, [k_param_0];
\tld.param.u32 \t%r5, [k_param_1];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tmov.u32 \t%r1, %tid.x;
\tsetp.ge.u32 \t%p1, %r1, %r5;
\t@%p1 ret;
\t{
\t.reg .b32 %inner;
\tmov.u32 \t%inner, 3;
\tmov.b64 \t{%r2, %r3}, %rd2;
\t}
\tsetp.eq.u32 \t%p2, %r1, 7;
$L__BB0_1:
\t@!%p2 bra \t$L__BB0_2;
\texit;
$L__BB0_2:
\tgriddepcontrol.wait;
\tst.global.u32 \t[%rd2], %r1; // a comment; with a semicolon
\tret;
}
.visible .entry empty()
{
\tret;
}
";
    assemble("awkward-original", text, "sm_90");
    let k = ptx::instrument(text, "k").unwrap();
    assert!(k.has_wait && !k.has_trigger);
    assemble("awkward", &k.ptx, "sm_90");
    let e = ptx::instrument(&k.ptx, "empty").unwrap();
    assemble("awkward-both", &e.ptx, "sm_90");
}

const CASES: &str = include_str!("data/pdl_cases.ptx");

#[test]
fn delayed_copies_assemble() {
    let mut all = CASES.to_owned();
    for kernel in ptx::entry_names(CASES).unwrap() {
        let d = check::delay::delayed(&all, &kernel).unwrap();
        assert!(d.can_trigger, "{kernel}");
        assert!(d.sites > 0, "{kernel}: no access found");
        all = d.ptx;
    }
    // Stamped and delayed copies side by side, as the check loads them.
    all = ptx::instrument(&all, "consume").unwrap().ptx;
    assemble("pdl-cases-delayed", &all, "sm_90");
    let chain = check::delay::delayed(CHAIN, "chain_step_pdl").unwrap();
    assemble("chain-delayed", &chain.ptx, "sm_90");
    let old = "
.version 7.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_param_0)
{
\t.reg .b64 \t%rd<3>;
\tld.param.u64 \t%rd1, [k_param_0];
\tcvta.to.global.u64 \t%rd2, %rd1;
\tatom.global.add.u32 \t%r1, [%rd2], 1;
\tret;
}
";
    let old = old.replace(".reg .b64 \t%rd<3>;", ".reg .b64 \t%rd<3>;\n\t.reg .b32 \t%r<2>;");
    let d = check::delay::delayed(&old, "k").unwrap();
    assert!(!d.can_trigger && !d.ptx.contains("griddepcontrol"));
    assemble("old-delayed", &d.ptx, "sm_75");
}
