//! Tests that need no GPU: the compiled targets, chain planning arithmetic, argument checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_core::{DeviceSlice, DeviceSliceMut, Error, StreamRef};
use ordo_kernels::{ChainPdl, ChainPlan, Trigger};

#[test]
fn kernels_are_compiled_for_sm80_sm90_and_compute90_ptx() {
    let listing = include_str!(concat!(env!("OUT_DIR"), "/fatbin-listing.txt"));
    let kernels_obj: Vec<&str> =
        listing.split("member ").filter(|m| m.contains("kernels.o:") && !m.contains("dlink")).collect();
    assert_eq!(kernels_obj.len(), 1, "{listing}");
    let m = kernels_obj[0];
    assert!(m.contains("sm_80.cubin"), "{listing}");
    assert!(m.contains("sm_90.cubin"), "{listing}");
    assert!(m.contains("sm_90.ptx"), "PTX for compute_90 missing: {listing}");
}

#[test]
fn chain_plan_follows_the_wave_rule() {
    // 132 SMs x 8 blocks of 256 threads = 1056 blocks a wave.
    let wave = 132 * 8;
    let plan = |n, blocks, pdl| ChainPlan::with_wave(n, blocks, wave, pdl).unwrap();
    let small = plan(4096, 16, ChainPdl::Auto);
    assert!(small.pdl() && small.trigger() == Trigger::Start);
    assert_eq!((small.n(), small.blocks(), small.one_wave_blocks()), (4096, 16, wave));
    let edge = plan(wave as usize * 256, wave, ChainPdl::Auto);
    assert!(edge.pdl() && edge.trigger() == Trigger::Start, "exactly one wave still triggers early");
    let large = plan(4 << 20, 16384, ChainPdl::Auto);
    assert!(large.pdl() && large.trigger() == Trigger::End);
    assert!(!plan(4096, 16, ChainPdl::Off).pdl());
    let forced = plan(4 << 20, 16384, ChainPdl::EarlyTrigger);
    assert!(forced.pdl() && forced.trigger() == Trigger::Start);
    let source = plan(4 << 20, 16384, ChainPdl::WaitThenTrigger);
    assert!(source.pdl() && source.trigger() == Trigger::AfterWait);
    let late = plan(4096, 16, ChainPdl::LateTrigger);
    assert!(late.pdl() && late.trigger() == Trigger::End);
}

/// Defect 14: a plan whose grid leaves elements unwritten (or whose thread indices overflow the
/// kernel's `int`) cannot be made; its fields cannot be changed afterwards (they are private).
#[test]
fn defect_14_a_chain_plan_must_cover_every_element() {
    let usage = |r: ordo_core::Result<ChainPlan>, what: &str| {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e:?}");
        assert!(e.to_string().contains(what), "{e} lacks {what}");
    };
    // The source of the defect: 33,536 elements short.
    usage(ChainPlan::with_wave(4 << 20, 16384 - 131, 1056, ChainPdl::Auto), "too few blocks");
    usage(ChainPlan::with_wave(1000, 3, 1056, ChainPdl::Off), "too few blocks");
    usage(ChainPlan::with_wave(1, 0, 1056, ChainPdl::Off), "too few blocks");
    usage(ChainPlan::with_wave(0, 1, 1056, ChainPdl::Off), "zero elements");
    usage(ChainPlan::with_wave(i32::MAX as usize + 1, u32::MAX, 1056, ChainPdl::Off), "i32::MAX");
    usage(ChainPlan::with_wave(usize::MAX, u32::MAX, 1056, ChainPdl::Off), "i32::MAX");
    usage(ChainPlan::with_wave(4096, (1 << 23) + 1, 1056, ChainPdl::Off), "too many blocks");
    usage(ChainPlan::with_wave(4096, u32::MAX, 1056, ChainPdl::Off), "too many blocks");
    // The edges that are fine: exactly enough blocks, one block of slack, the largest grid.
    assert_eq!(ChainPlan::with_wave(1000, 4, 1056, ChainPdl::Off).unwrap().blocks(), 4);
    assert_eq!(ChainPlan::with_wave(1000, 5, 1056, ChainPdl::Off).unwrap().blocks(), 5);
    assert_eq!(ChainPlan::with_wave(i32::MAX as usize, 1 << 23, 1056, ChainPdl::Off).unwrap().blocks(), 1 << 23);
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
        usage(ordo_kernels::square(s, a, view(&mut host, 32)).unwrap_err());
        usage(ordo_kernels::gemv_normalize(s, a, a.slice(..8).unwrap(), view(&mut host, 8), 8, 7).unwrap_err());
        usage(ordo_kernels::gemv_normalize(s, a, a, view(&mut host, 8), usize::MAX, 2).unwrap_err());
        usage(ordo_kernels::add_one(s, view(&mut host, 0)).unwrap_err());
        let rgb = DeviceSlice::from_raw_parts(bytes.as_ptr(), 48);
        let out = DeviceSliceMut::from_raw_parts(bytes.as_mut_ptr(), 16);
        usage(ordo_kernels::frame_filter(s, rgb, out, 4, 5).unwrap_err());
        let plan = ChainPlan::with_wave(64, 1, 1, ChainPdl::Auto).unwrap();
        usage(ordo_kernels::chain(s, view(&mut host, 64), view(&mut host, 32), a, 3, &plan).unwrap_err());
    }
}
