//! Tests that need no GPU: the compiled targets, chain planning arithmetic, argument checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::sys::BUILT_WITH;
use ordo_cuda_core::{DeviceSlice, DeviceSliceMut, Error, StreamRef};
use ordo_cuda_kernels::{ChainPlan, PdlMode};

/// What the build script's cuobjdump said of the compiled kernels. Where it could not run (no
/// cuobjdump beside the nvcc the build used), the test fails saying so and how to get one: a test
/// that cannot read the compiled targets has not checked them, so it does not pass.
fn cuobjdump_output(text: &'static str) -> &'static str {
    if text.starts_with("cuobjdump not runnable") || text.starts_with("cuobjdump failed") {
        let (major, minor) = BUILT_WITH.major_minor();
        panic!(
            "the build could not read the compiled kernels with cuobjdump, so their targets are not checked: {text}\n\
             The build used {BUILT_WITH}.\n\
             cuobjdump is looked for beside that nvcc. NVIDIA's installers put it there; for a pip-wheel toolkit in \
             ordo's cache, `bash scripts/toolkits.sh {major}.{minor} --install-only` adds it (the \
             nvidia-cuda-cuobjdump wheel of {major}.{minor}, or of the oldest later {major}.x where {major}.{minor} \
             has none), as `bash scripts/setup.sh` does for 13.0."
        );
    }
    text
}

#[test]
fn kernels_are_compiled_for_sm80_sm90_and_compute90_ptx() {
    let listing = cuobjdump_output(include_str!(concat!(env!("OUT_DIR"), "/fatbin-listing.txt")));
    let kernels_obj: Vec<&str> =
        listing.split("member ").filter(|m| m.contains("kernels.o:") && !m.contains("dlink")).collect();
    assert_eq!(kernels_obj.len(), 1, "{listing}");
    let m = kernels_obj[0];
    assert!(m.contains("sm_80.cubin"), "{listing}");
    assert!(m.contains("sm_90.cubin"), "{listing}");
    assert!(m.contains("sm_90.ptx"), "PTX for compute_90 missing: {listing}");
}

/// The PTX of each `.entry` in the compiled kernels: (name, body).
fn ptx_entries() -> Vec<(&'static str, &'static str)> {
    let ptx = cuobjdump_output(include_str!(concat!(env!("OUT_DIR"), "/kernels-ptx.txt")));
    let mut entries: Vec<(&str, &str)> =
        ptx.split(".entry ").skip(1).map(|e| (e.split('(').next().unwrap_or("").trim(), e)).collect();
    entries.sort();
    entries.dedup_by_key(|e| e.0);
    assert!(entries.len() >= 10, "no PTX entries found: {}", &ptx[..ptx.len().min(300)]);
    entries
}

/// Only the PDL form of a kernel carries `griddepcontrol` (a kernel that merely contains the wait
/// pays for it in grids of several waves, PDL attribute or not: `docs/cuda-behaviours.md`, CB-23).
/// The plain form
/// of the chain step, and every other kernel of ordo's (gemv_normalize's, the frame filter's),
/// have none.
#[test]
fn only_the_pdl_forms_carry_griddepcontrol() {
    let entries = ptx_entries();
    let with: Vec<&str> =
        entries.iter().filter(|(_, body)| body.contains("griddepcontrol")).map(|(name, _)| *name).collect();
    assert_eq!(with, ["ordok_chain_step_pdl"], "kernels with griddepcontrol");
    let pdl = entries.iter().find(|(n, _)| *n == "ordok_chain_step_pdl").unwrap().1;
    assert!(pdl.contains("griddepcontrol.wait") && pdl.contains("griddepcontrol.launch_dependents"));
    assert!(entries.iter().any(|(n, _)| *n == "ordok_chain_step"), "the plain form is compiled");
}

/// The WHILE-loop step and the condition setter set their condition through
/// `cudaGraphSetConditional` (ordo/graph.cuh), which the driver resolves at module load: the
/// kernels are compiled whole-program (no `-rdc`), and only these two kernels call it.
#[test]
fn only_the_condition_kernels_set_a_graph_condition() {
    let entries = ptx_entries();
    let with: Vec<&str> = entries
        .iter()
        .filter(|(_, body)| body.contains("call.uni") && body.contains("cudaGraphSetConditional"))
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(with, ["ordok_countdown", "ordok_set_condition_from"], "kernels calling cudaGraphSetConditional");
}

#[test]
fn chain_plan_follows_the_pdl_rule() {
    // 132 SMs x 8 blocks of 256 threads = 1056 blocks a wave.
    let wave = 132 * 8;
    let plan = |n, mode| ChainPlan::with_wave(n, wave, mode).unwrap();
    // Within one wave: the PDL form over the full grid.
    let small = plan(4096, PdlMode::Auto);
    assert!(small.pdl() && !small.launch_plan().grid_stride());
    assert_eq!((small.n(), small.blocks(), small.one_wave_blocks()), (4096, 16, wave));
    let edge = plan(wave as usize * 256, PdlMode::Auto);
    assert!(edge.pdl() && edge.blocks() == wave, "exactly one wave is still PDL over the full grid");
    // Beyond, up to four waves of work (1M elements: 4096 blocks): the PDL form over one wave,
    // grid-stride.
    let mid = plan(1 << 20, PdlMode::Auto);
    assert!(mid.pdl() && mid.blocks() == wave && mid.launch_plan().grid_stride());
    // Past four waves (4M elements): the plain form over one wave, grid-stride, no PDL.
    let large = plan(4 << 20, PdlMode::Auto);
    assert!(!large.pdl() && large.blocks() == wave && large.launch_plan().grid_stride());
    assert_eq!(large.launch_plan().full_blocks(), 16384);
    // The baselines: the plain form (no griddepcontrol), full grid or one wave.
    let plain = plan(4 << 20, PdlMode::Plain);
    assert!(!plain.pdl() && plain.blocks() == 16384);
    let plain_wave = plan(4 << 20, PdlMode::PlainOneWave);
    assert!(!plain_wave.pdl() && plain_wave.blocks() == wave);
    let full = plan(4 << 20, PdlMode::PdlFullGrid);
    assert!(full.pdl() && full.blocks() == 16384);
    assert!(!plan(4096, PdlMode::Plain).pdl());
}

/// A plan whose grid would leave elements unwritten cannot be made: the grid is not an input, it
/// comes from `n` and the rule, every form's body is a grid-stride loop (correct over any grid),
/// and `n` past the kernel's `int` index is refused.
#[test]
fn a_chain_plan_must_cover_every_element() {
    let usage = |r: ordo_cuda_core::Result<ChainPlan>, what: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
        assert!(e.to_string().contains(what), "{e} lacks {what}");
    };
    usage(ChainPlan::with_wave(0, 1056, PdlMode::Plain), "zero elements");
    usage(ChainPlan::with_wave(i32::MAX as usize + 1, 1056, PdlMode::Plain), "i32::MAX");
    usage(ChainPlan::with_wave(usize::MAX, 1056, PdlMode::Plain), "i32::MAX");
    usage(ChainPlan::with_wave(4096, 0, PdlMode::Auto), "one wave of 0 blocks");
    for mode in [PdlMode::Auto, PdlMode::Plain, PdlMode::PlainOneWave, PdlMode::PdlFullGrid, PdlMode::PdlOneWave] {
        for n in [1usize, 1000, 4096, 4 << 20, i32::MAX as usize] {
            let p = ChainPlan::with_wave(n, 1056, mode).unwrap();
            let full = n.div_ceil(256) as u32;
            assert_eq!(p.launch_plan().full_blocks(), full, "{mode:?} n {n}");
            // The one-element-a-thread grid covers n; a smaller grid is the grid-stride form.
            assert!(p.blocks() == full || (p.blocks() < full && p.launch_plan().grid_stride()), "{mode:?} n {n}");
        }
    }
}

#[test]
fn mismatched_lengths_are_usage_errors_before_any_cuda_call() {
    let mut host = vec![0f32; 64];
    let mut bytes = vec![0u8; 64];
    let view = |v: &mut Vec<f32>, n| unsafe { DeviceSliceMut::from_raw_parts(v.as_mut_ptr(), n) };
    let usage = |e: Error| assert!(matches!(e, Error::Usage(_)), "{e:?}");
    // SAFETY: every call below is refused before CUDA is reached (nothing is enqueued and the
    // host memory behind the views is never touched); the stream is used on this thread only.
    unsafe {
        let s = StreamRef::per_thread_default();
        let a = DeviceSlice::from_raw_parts(host.as_ptr(), 64);
        usage(ordo_cuda_kernels::square(s, a, view(&mut host, 32)).unwrap_err());
        usage(ordo_cuda_kernels::gemv_normalize(s, a, a.slice(..8).unwrap(), view(&mut host, 8), 8, 7).unwrap_err());
        usage(ordo_cuda_kernels::gemv_normalize(s, a, a, view(&mut host, 8), usize::MAX, 2).unwrap_err());
        usage(ordo_cuda_kernels::add_one(s, view(&mut host, 0)).unwrap_err());
        let rgb = DeviceSlice::from_raw_parts(bytes.as_ptr(), 48);
        let out = DeviceSliceMut::from_raw_parts(bytes.as_mut_ptr(), 16);
        usage(ordo_cuda_kernels::frame_filter(s, rgb, out, 4, 5).unwrap_err());
        let plan = ChainPlan::with_wave(64, 1, PdlMode::Auto).unwrap();
        usage(ordo_cuda_kernels::chain(s, view(&mut host, 64), view(&mut host, 32), a, 3, &plan).unwrap_err());
    }
}
