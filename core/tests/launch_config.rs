//! Launch configurations, grids and kernel arguments, checked before CUDA; and the error of a launch
//! that reaches CUDA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::*;

#[test]
fn launch_configurations_are_checked_before_cuda() {
    use ordo_cuda_core::launch::{Dim3, LaunchConfig};
    let ok = LaunchConfig::new(16, 256);
    assert!(ok.validate().is_ok());
    let bad = |c: LaunchConfig, what: &str| {
        let e = c.validate().unwrap_err();
        assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{e:?}");
        assert!(e.to_string().contains(what), "{e} lacks {what}");
    };
    bad(LaunchConfig::new(0, 256), "zero grid");
    bad(LaunchConfig::new((1, 0), 256), "zero grid");
    bad(LaunchConfig::new(1, 0), "zero block");
    bad(LaunchConfig::new(1, 2048), "over 1024");
    bad(LaunchConfig::new(1, (32, 32, 2)), "over 1024");
    bad(LaunchConfig::new(1, (1, 1, 65)), "over 1024");
    bad(LaunchConfig::new((1, 70000), 32), "grid dimension");
    bad(LaunchConfig::new(6, 32).with_cluster(4), "multiple of the cluster");
    bad(LaunchConfig::new(8, 32).with_cluster((0, 1, 1)), "zero cluster");
    assert!(LaunchConfig::new(8, 32).with_cluster(4).validate().is_ok());
    assert_eq!(LaunchConfig::for_elements(1000, 256).unwrap().grid, Dim3::new(4, 1, 1));
    assert_eq!(LaunchConfig::for_elements(1024, 256).unwrap().grid, Dim3::new(4, 1, 1));
    assert!(LaunchConfig::for_elements(0, 256).is_err());
    assert!(LaunchConfig::for_elements(10, 0).is_err());
    assert!(LaunchConfig::for_elements(usize::MAX, 1).is_err());
    let c = LaunchConfig::new(1, 1).with_pdl(true).with_priority(-2).with_shared_mem(1024);
    assert!(c.pdl && c.priority == Some(-2) && c.shared_mem_bytes == 1024);
    // Cooperative launches and clusters exclude each other; preferred clusters need clusters,
    // whose multiple they must be, and divide the grid.
    bad(LaunchConfig::new(8, 32).with_cooperative(true).with_cluster(2), "cooperative launch with clusters");
    let domain = LaunchConfig::new(8, 32).with_cooperative(true).with_mem_sync_domain(launch::MemSyncDomain::Remote);
    assert!(domain.validate().is_ok() && domain.cooperative);
    if cfg!(cuda_12_8) {
        assert!(LaunchConfig::new(16, 32).with_cluster(2).with_preferred_cluster(4).validate().is_ok());
        bad(LaunchConfig::new(16, 32).with_preferred_cluster(4), "without cluster dimensions");
        bad(LaunchConfig::new(16, 32).with_cluster(2).with_preferred_cluster(3), "not a multiple of the cluster");
        bad(
            LaunchConfig::new(12, 32).with_cluster(2).with_preferred_cluster(8),
            "grid not a multiple of the preferred",
        );
    } else {
        let e = LaunchConfig::new(16, 32).with_cluster(2).with_preferred_cluster(4).validate().unwrap_err();
        assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::NotSupported, .. })), "{e:?}");
    }
}

#[test]
fn kernel_arguments_are_packed_by_address_in_order() {
    use ordo_cuda_core::launch::KernelArgs;
    let mut args = (7u8, 0x1122_3344_5566_7788u64, 2.5f32, core::ptr::null_mut::<f32>());
    let ptrs = args.arg_ptrs();
    assert_eq!(ptrs.len(), 4);
    unsafe {
        assert_eq!(*(ptrs[0] as *const u8), 7);
        assert_eq!(*(ptrs[1] as *const u64), 0x1122_3344_5566_7788);
        assert_eq!(*(ptrs[2] as *const f32), 2.5);
        assert!((*(ptrs[3] as *const *mut f32)).is_null());
    }
    assert_eq!(ptrs[1], (&mut args.1 as *mut u64).cast());
    let mut none = ();
    assert_eq!(none.arg_ptrs().len(), 0);
}

#[test]
fn a_bad_launch_configuration_never_reaches_cuda() {
    use ordo_cuda_core::launch::{Kernel, LaunchConfig};
    extern "C" fn not_a_kernel(_: i32) {}
    let k = Kernel::new(not_a_kernel as unsafe extern "C" fn(i32));
    // SAFETY: the zero grid is refused before CUDA is called: nothing is launched, and the stream
    // handle is used on this thread only.
    let e = unsafe { k.launch(StreamRef::per_thread_default(), &LaunchConfig::new(0, 32), (1,)) }.unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
}

/// A launch that reaches CUDA goes through the default path where it can; where it cannot (no
/// driver here; on a GPU machine, an address that is no kernel, which the driver path cannot
/// resolve) it is made through the runtime, and the error is the runtime's, with its code and the
/// call's name, not sticky, and not left in the last-error slot. The same for the runtime path
/// and for `launch_raw`.
#[test]
fn a_launch_the_driver_path_cannot_make_reports_the_runtimes_error() {
    use ordo_cuda_core::launch::{self, Kernel, LaunchConfig, LaunchPath};
    extern "C" fn not_a_kernel(_: i32) {}
    let k = Kernel::new(not_a_kernel as unsafe extern "C" fn(i32));
    assert_eq!(k.launch_path(), LaunchPath::Runtime);
    // SAFETY: used on this thread only, its current device unchanged; nothing is launched (the
    // address is no kernel: CUDA refuses it, or there is no driver).
    let s = unsafe { StreamRef::per_thread_default() };
    // With an attribute (the general path) and without (the fast path for plain launches).
    let (config, plain) = (LaunchConfig::new(1, 32).with_priority(0), LaunchConfig::new(1, 32));
    let mut arg = 1i32;
    let mut args = [(&mut arg as *mut i32).cast::<core::ffi::c_void>()];
    for (what, e) in [
        ("default", unsafe { k.launch(s, &config, (1,)) }.unwrap_err()),
        ("default, plain", unsafe { k.launch(s, &plain, (1,)) }.unwrap_err()),
        ("runtime", unsafe { k.launch_runtime(s, &config, (1,)) }.unwrap_err()),
        ("launch_raw", unsafe { launch::launch_raw(k.as_raw(), s, &config, args.as_mut_ptr()) }.unwrap_err()),
        ("launch_raw, plain", unsafe { launch::launch_raw(k.as_raw(), s, &plain, args.as_mut_ptr()) }.unwrap_err()),
    ] {
        let cuda = e.cuda().unwrap_or_else(|| panic!("{what}: not CUDA's error: {e:?}"));
        assert_eq!(cuda.call(), "cudaLaunchKernelExC", "{what}");
        assert!(!cuda.is_sticky(), "{what}: {e}");
        if !cuda.is_no_driver() {
            error::peek_last_error().unwrap();
        }
    }
}

/// A block whose volume overflows `u64` (three `u32` factors) is refused like any block over 1024
/// threads, never a panic or a wrapped (accepted) volume.
#[test]
fn a_block_volume_past_u64_is_refused_not_a_panic() {
    let config = ordo_cuda_core::LaunchConfig::new(1u32, (1u32 << 31, 1u32 << 31, 4u32));
    assert!(config.validate().is_err());
}

/// 2-D and 3-D grids covering an extent: each dimension rounded up; bad shapes refused.
#[test]
fn grids_cover_2d_and_3d_extents() {
    use ordo_cuda_core::LaunchConfig;
    let c = LaunchConfig::for_extent((1920u32, 1080u32), (16u32, 16u32)).unwrap();
    assert_eq!((c.grid.x, c.grid.y, c.grid.z), (120, 68, 1));
    assert_eq!((c.block.x, c.block.y, c.block.z), (16, 16, 1));
    let c = LaunchConfig::for_extent((65u32, 33u32, 17u32), (8u32, 8u32, 4u32)).unwrap();
    assert_eq!((c.grid.x, c.grid.y, c.grid.z), (9, 5, 5));
    assert!(LaunchConfig::for_extent((0u32, 10u32), (16u32, 16u32)).is_err(), "zero extent");
    assert!(LaunchConfig::for_extent((10u32, 10u32), (0u32, 16u32)).is_err(), "zero block");
    assert!(LaunchConfig::for_extent((10u32, 10u32), (64u32, 32u32)).is_err(), "2048 threads a block");
    assert!(LaunchConfig::for_extent((1u32, u32::MAX), (1u32, 1u32)).is_err(), "grid y over 65535");
}
