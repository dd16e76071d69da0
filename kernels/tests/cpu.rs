//! Tests that need no GPU: the compiled targets, chain planning arithmetic, argument checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_core::{DeviceSlice, DeviceSliceMut, Error, StreamRef};
use ordo_kernels::{ChainPdl, ChainPlan, Trigger};

#[test]
fn kernels_are_compiled_for_sm80_sm90_and_compute90_ptx() {
    let listing = include_str!(concat!(env!("OUT_DIR"), "/fatbin-listing.txt"));
    let kernels_obj: Vec<&str> = listing
        .split("member ")
        .filter(|m| m.contains("kernels.o:") && !m.contains("dlink"))
        .collect();
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
    let small = ChainPlan::with_wave(4096, 16, wave, ChainPdl::Auto);
    assert!(small.pdl && small.trigger == Trigger::Start);
    let edge = ChainPlan::with_wave(wave as usize * 256, wave, wave, ChainPdl::Auto);
    assert!(edge.pdl && edge.trigger == Trigger::Start, "exactly one wave still triggers early");
    let large = ChainPlan::with_wave(4 << 20, 16384, wave, ChainPdl::Auto);
    assert!(large.pdl && large.trigger == Trigger::End);
    assert!(!ChainPlan::with_wave(4096, 16, wave, ChainPdl::Off).pdl);
    let forced = ChainPlan::with_wave(4 << 20, 16384, wave, ChainPdl::EarlyTrigger);
    assert!(forced.pdl && forced.trigger == Trigger::Start);
    let source = ChainPlan::with_wave(4 << 20, 16384, wave, ChainPdl::WaitThenTrigger);
    assert!(source.pdl && source.trigger == Trigger::AfterWait);
    let late = ChainPlan::with_wave(4096, 16, wave, ChainPdl::LateTrigger);
    assert!(late.pdl && late.trigger == Trigger::End);
}

#[test]
fn mismatched_lengths_are_usage_errors_before_any_cuda_call() {
    let mut host = vec![0f32; 64];
    let mut bytes = vec![0u8; 64];
    let s = StreamRef::per_thread_default();
    let view = |v: &mut Vec<f32>, n| unsafe { DeviceSliceMut::from_raw_parts(v.as_mut_ptr(), n) };
    let usage = |e: Error| assert!(matches!(e, Error::Usage(_)), "{e:?}");
    unsafe {
        let a = DeviceSlice::from_raw_parts(host.as_ptr(), 64);
        usage(ordo_kernels::square(s, a, view(&mut host, 32)).unwrap_err());
        usage(ordo_kernels::gemv_normalize(s, a, a.slice(..8).unwrap(), view(&mut host, 8), 8, 7).unwrap_err());
        usage(ordo_kernels::gemv_normalize(s, a, a, view(&mut host, 8), usize::MAX, 2).unwrap_err());
        usage(ordo_kernels::add_one(s, view(&mut host, 0)).unwrap_err());
        let rgb = DeviceSlice::from_raw_parts(bytes.as_ptr(), 48);
        let out = DeviceSliceMut::from_raw_parts(bytes.as_mut_ptr(), 16);
        usage(ordo_kernels::frame_filter(s, rgb, out, 4, 5).unwrap_err());
        let plan = ChainPlan::with_wave(64, 1, 1, ChainPdl::Auto);
        usage(ordo_kernels::chain(s, view(&mut host, 64), view(&mut host, 32), a, 3, &plan).unwrap_err());
    }
}
