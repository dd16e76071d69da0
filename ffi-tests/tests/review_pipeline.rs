//! The second fresh-eyes review of the C ABI (session 5: pipeline handles, allocation options):
//! the option and argument checks it found made before any CUDA call. (Its one confirmed finding,
//! a callback's positive status that is no known CUDA code coming back unchanged, was settled in
//! ordo.h: positive values are CUDA's code space, passed through; see `status.rs`'s tests.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ptr::null_mut;
use ordo::ffi::*;
use ordo::sys;

/// Checked sound: option and argument checks that run before any CUDA call (no driver needed).
#[test]
fn sound_pipeline_options_and_arguments_are_refused_before_cuda() {
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let size = core::mem::size_of::<OrdoPipelineOptions>();
    let ok = OrdoPipelineOptions {
        size,
        device: -1,
        element_size: 4,
        streams: 0,
        priority: 0,
        chunks: 0,
        stage_timing: 0,
        pool: null_mut(),
    };
    let mut out: *mut OrdoPipeline = null_mut();
    for (what, o) in [
        ("short size", OrdoPipelineOptions { size: size - 1, ..ok }),
        ("size 0", OrdoPipelineOptions { size: 0, ..ok }),
        ("element_size 0", OrdoPipelineOptions { element_size: 0, ..ok }),
        ("streams 65", OrdoPipelineOptions { streams: 65, ..ok }),
        ("chunks 65537", OrdoPipelineOptions { chunks: (1 << 16) + 1, ..ok }),
        ("stage_timing 2", OrdoPipelineOptions { stage_timing: 2, ..ok }),
        ("stage_timing -1", OrdoPipelineOptions { stage_timing: -1, ..ok }),
        ("device -2", OrdoPipelineOptions { device: -2, ..ok }),
        ("device i32::MIN", OrdoPipelineOptions { device: i32::MIN, ..ok }),
    ] {
        assert_eq!(unsafe { ordo_pipeline_create(&o, &mut out) }, ia, "{what}");
        assert!(out.is_null(), "{what}: out untouched");
    }
    // A struct longer than this version's: only this version's fields are read (bad ones refused).
    #[repr(C)]
    struct Longer {
        o: OrdoPipelineOptions,
        extra: [u64; 4],
    }
    let longer = Longer { o: OrdoPipelineOptions { size: size + 32, element_size: 0, ..ok }, extra: [!0; 4] };
    assert_eq!(unsafe { ordo_pipeline_create(&longer.o, &mut out) }, ia);
    // Misaligned options and out.
    let mut raw = [0u64; 16];
    let mis = unsafe { raw.as_mut_ptr().cast::<u8>().add(4) }.cast::<OrdoPipelineOptions>();
    unsafe { mis.write_unaligned(ok) };
    assert_eq!(unsafe { ordo_pipeline_create(mis, &mut out) }, ia, "misaligned options");
    let mis_out = unsafe { raw.as_mut_ptr().cast::<u8>().add(1) }.cast::<*mut OrdoPipeline>();
    assert_eq!(unsafe { ordo_pipeline_create(&ok, mis_out) }, ia, "misaligned out");
    assert_eq!(unsafe { ordo_pipeline_create(&ok, null_mut()) }, ia, "null out");
    // Runs on stale / forged / NULL handles.
    let mut b = [0u32; 8];
    let legacy = sys::cudaStreamLegacy();
    for h in [null_mut(), 0x1234usize as *mut OrdoPipeline, usize::MAX as *mut OrdoPipeline] {
        let st = unsafe {
            ordo_pipeline_run_on(
                h,
                legacy,
                b.as_ptr().cast(),
                null_mut(),
                null_mut(),
                b.as_mut_ptr().cast(),
                2,
                None,
                null_mut(),
            )
        };
        assert_eq!(st, ORDO_ERROR_INVALID_HANDLE);
        ordo_pipeline_destroy(h);
    }
    // ordo_pipeline_run: overflowing n, zero n, chunks 0 / over n / over 65536, misaligned host.
    let (hi, ho) = (b.as_ptr(), b.as_mut_ptr());
    let (di, dout) = (b.as_mut_ptr().cast::<f32>(), b.as_mut_ptr().cast::<f32>());
    for (what, n, chunks, hin) in [
        ("n * 4 overflows", usize::MAX / 2, 1, hi.cast::<f32>()),
        ("n * 4 over isize::MAX", isize::MAX as usize / 4 + 1, 1, hi.cast::<f32>()),
        ("n 0", 0, 1, hi.cast::<f32>()),
        ("chunks 0", 8, 0, hi.cast::<f32>()),
        ("chunks over n", 8, 9, hi.cast::<f32>()),
        ("chunks over 65536", 1 << 20, (1 << 16) + 1, hi.cast::<f32>()),
        ("misaligned host_in", 4, 1, unsafe { hi.cast::<u8>().add(2) }.cast::<f32>()),
    ] {
        let st = unsafe { ordo_pipeline_run(legacy, hin, di, dout, ho.cast(), n, chunks, None, null_mut()) };
        assert_eq!(st, ia, "{what}");
    }
}
