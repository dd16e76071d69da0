//! Tests that need no GPU: error classification against the headers, usage errors caught before
//! CUDA, and every constructor returning `Err` (never panicking) when there is no driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error::{is_sticky_code, CudaError};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

/// `(value, name, documented as leaving the process in an inconsistent state or needing a restart)` for each
/// `cudaError` value in the header the build used.
fn header_errors() -> Vec<(u32, String, bool)> {
    let text = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
    let start = text.find("enum __device_builtin__ cudaError").unwrap();
    let body = &text[start..];
    let body = &body[..body.find("};").unwrap()];
    let mut out = Vec::new();
    let mut doc = String::new();
    for line in body.lines() {
        let t = line.trim();
        if t.starts_with("/**") {
            doc.clear();
        }
        doc.push_str(t);
        doc.push(' ');
        if let Some(rest) = t.strip_prefix("cudaError") {
            let mut parts = rest.split('=');
            let name = format!("cudaError{}", parts.next().unwrap().trim());
            let value: u32 = parts.next().unwrap().trim().trim_end_matches(',').parse().unwrap();
            let doc_text = doc.split_whitespace().collect::<Vec<_>>().join(" ");
            let sticky = doc_text.contains("inconsistent state") || doc_text.contains("terminated and relaunched");
            out.push((value, name, sticky));
            doc.clear();
        }
    }
    out
}

#[test]
fn error_names_match_the_header() {
    let errors = header_errors();
    assert!(errors.len() > 100, "parsed {} values", errors.len());
    for (value, name, _) in &errors {
        let e = CudaError::new(sys::cudaError(*value), "test");
        assert_eq!(e.name().to_str().unwrap(), name, "value {value}");
        assert!(!e.description().to_bytes().is_empty());
    }
}

#[test]
fn sticky_classification_matches_the_header_documentation() {
    for (value, name, sticky) in header_errors() {
        assert_eq!(is_sticky_code(sys::cudaError(value)), sticky, "{name} = {value}");
    }
    let e = Error::from(CudaError::new(sys::cudaError::cudaErrorIllegalAddress, "cudaStreamSynchronize"));
    assert!(e.is_sticky());
    let text = e.to_string();
    assert!(text.contains("cudaStreamSynchronize failed: cudaErrorIllegalAddress (700)"), "{text}");
    assert!(text.contains("sticky"), "{text}");
    let e = CudaError::new(sys::cudaError::cudaErrorInvalidConfiguration, "cudaLaunchKernelExC");
    assert!(!e.is_sticky());
    assert!(!e.to_string().contains("sticky"));
}

#[test]
fn flags_equal_the_c_constants() {
    assert_eq!(StreamFlags::NON_BLOCKING.bits(), 0x01);
    assert_eq!(StreamFlags::BLOCKING.bits(), 0x00);
    assert_eq!(EventFlags::BLOCKING_SYNC.bits(), 0x01);
    assert_eq!(EventFlags::DISABLE_TIMING.bits(), 0x02);
    assert_eq!(EventFlags::INTERPROCESS.bits(), 0x04);
    assert_eq!(HostAllocFlags::PORTABLE.bits(), 0x01);
    assert_eq!(HostAllocFlags::MAPPED.bits(), 0x02);
    assert_eq!(HostAllocFlags::WRITE_COMBINED.bits(), 0x04);
    assert_eq!(HostRegisterFlags::PORTABLE.bits(), 0x01);
    assert_eq!(HostRegisterFlags::MAPPED.bits(), 0x02);
    assert_eq!(HostRegisterFlags::READ_ONLY.bits(), 0x08);
    assert_eq!(ManagedFlags::ATTACH_GLOBAL.bits(), 0x01);
    assert_eq!(ManagedFlags::ATTACH_HOST.bits(), 0x02);
}

#[test]
fn handles_are_as_small_as_the_raw_ones() {
    use core::mem::size_of;
    assert_eq!(size_of::<Stream>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<StreamRef<'_>>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<Option<StreamRef<'_>>>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<Event>(), size_of::<sys::cudaEvent_t>());
    assert_eq!(size_of::<TimingEvent>(), size_of::<sys::cudaEvent_t>());
    assert_eq!(size_of::<Device>(), 4);
}

#[test]
fn null_and_named_streams() {
    assert!(unsafe { StreamRef::from_raw(core::ptr::null_mut()) }.is_none());
    // SAFETY: the handles are only compared, never used for CUDA calls.
    assert_eq!(unsafe { StreamRef::legacy_default() }.as_raw() as usize, 1);
    // SAFETY: as above.
    assert_eq!(unsafe { StreamRef::per_thread_default() }.as_raw() as usize, 2);
}

#[test]
fn sizes_are_checked_before_cuda_is_called() {
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    let zero = DeviceBuffer::<f32>::alloc_async(0, s).unwrap_err();
    assert!(matches!(zero, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{zero:?}");
    assert!(zero.to_string().contains("zero length"), "{zero}");
    let overflow = DeviceBuffer::<u64>::alloc_async(usize::MAX / 4, s).unwrap_err();
    assert!(overflow.to_string().contains("overflows"), "{overflow}");
    assert!(PinnedBuffer::<u8>::zeroed(0, HostAllocFlags::empty()).is_err());
    assert!(PinnedBuffer::<[u8; 16]>::zeroed(usize::MAX / 8, HostAllocFlags::empty())
        .unwrap_err()
        .to_string()
        .contains("overflows"));
    assert!(ManagedBuffer::<f64>::zeroed(0, ManagedFlags::ATTACH_GLOBAL).is_err());
    let mut empty: [f32; 0] = [];
    assert!(RegisteredHost::new(&mut empty, HostRegisterFlags::empty()).is_err());
}

#[test]
fn views_check_ranges_and_lengths() {
    let mut host = [1.0f32; 8];
    let dev = unsafe { DeviceSliceMut::from_raw_parts(host.as_mut_ptr(), 8) };
    assert!(dev.as_slice().slice(2..6).is_ok());
    assert_eq!(dev.as_slice().slice(2..=5).unwrap().len(), 4);
    assert!(dev.as_slice().slice(4..9).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = dev.as_slice().slice(5..3);
    assert!(reversed.is_err());
    let pinned = unsafe { PinnedSlice::from_raw_parts(host.as_ptr(), 4) };
    // SAFETY: refused before CUDA is called (the lengths differ); the stream is used on this thread only.
    let err = unsafe { copy::h2d_async(dev, pinned, StreamRef::per_thread_default()) }.unwrap_err();
    assert!(err.to_string().contains("lengths differ"), "{err}");
}

#[test]
fn without_a_driver_every_constructor_returns_err() {
    if driver_present() {
        return; // covered by the GPU tests there
    }
    let no_driver = |e: Error| {
        let c = e.cuda().unwrap_or_else(|| panic!("expected a CUDA error, got {e:?}"));
        assert!(c.is_no_driver(), "{c:?}");
    };
    no_driver(device::count().unwrap_err());
    no_driver(Device::current().unwrap_err());
    no_driver(Device::new(0).unwrap_err());
    no_driver(Device::from_ordinal(0).sm_count().unwrap_err());
    no_driver(Device::from_ordinal(0).name().unwrap_err());
    no_driver(Device::from_ordinal(0).stream_priority_range().unwrap_err());
    no_driver(Stream::new().unwrap_err());
    no_driver(Stream::with_flags(StreamFlags::BLOCKING).unwrap_err());
    no_driver(Stream::with_priority(StreamFlags::NON_BLOCKING, 0).unwrap_err());
    no_driver(Event::new().unwrap_err());
    no_driver(TimingEvent::new().unwrap_err());
    no_driver(MemPool::new(Device::from_ordinal(0)).unwrap_err());
    no_driver(MemPool::device_default(Device::from_ordinal(0)).unwrap_err());
    // SAFETY: used on this thread only, with the current device unchanged.
    let per_thread = unsafe { StreamRef::per_thread_default() };
    no_driver(DeviceBuffer::<f32>::alloc_async(16, per_thread).unwrap_err());
    no_driver(PinnedBuffer::<f32>::zeroed(16, HostAllocFlags::empty()).unwrap_err());
    no_driver(ManagedBuffer::<f32>::zeroed(16, ManagedFlags::ATTACH_GLOBAL).unwrap_err());
    let mut data = vec![0u32; 16];
    no_driver(RegisteredHost::new(&mut data, HostRegisterFlags::empty()).unwrap_err());
    no_driver(per_thread.synchronize().unwrap_err());
    no_driver(per_thread.query().unwrap_err());
    assert_eq!(device::runtime_version().unwrap(), sys::CUDA_VERSION);
    assert_eq!(device::driver_version().unwrap(), 0);
}

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

#[test]
fn bucket_round_up_and_its_edges() {
    use ordo_cuda_core::graph_cache::{bucket_index, default_buckets, GraphCache, Overflow};
    // SAFETY: used on this thread only, with the current device unchanged.
    let per_thread = unsafe { StreamRef::per_thread_default() };
    let b = default_buckets();
    assert_eq!(b, vec![1, 2, 4, 8, 16, 32, 64, 128, 256]);
    assert_eq!(bucket_index(&b, 0), Some(0));
    assert_eq!(bucket_index(&b, 1), Some(0));
    assert_eq!(bucket_index(&b, 2), Some(1));
    assert_eq!(bucket_index(&b, 3), Some(2));
    assert_eq!(bucket_index(&b, 5), Some(3));
    assert_eq!(bucket_index(&b, 129), Some(8));
    assert_eq!(bucket_index(&b, 256), Some(8));
    assert_eq!(bucket_index(&b, 257), None);
    assert_eq!(bucket_index(&b, usize::MAX), None);
    let odd = [3, 10, 1000];
    assert_eq!(bucket_index(&odd, 4), Some(1));
    assert_eq!(bucket_index(&odd, 11), Some(2));
    let body = |_: StreamRef<'_>, _: usize| -> Result<()> { Ok(()) };
    // SAFETY (every cache below): the bodies enqueue nothing, so a capture of them would use no
    // memory or handle; and no capture happens (bad buckets, a size over the largest bucket, the
    // eager overflow path).
    let new = |buckets, overflow| unsafe { GraphCache::new(buckets, overflow, body) };
    assert!(new(vec![], Overflow::Error).is_err());
    assert!(new(vec![0, 4], Overflow::Error).is_err());
    assert!(new(vec![4, 4], Overflow::Error).is_err());
    assert!(new(vec![8, 4], Overflow::Error).is_err());
    let mut cache = new(vec![4, 8], Overflow::Error).unwrap();
    assert_eq!(cache.bucket_for(5), Some(8));
    assert_eq!(cache.bucket_for(9), None);
    let e = cache.run(per_thread, 9).unwrap_err();
    assert!(e.to_string().contains("largest bucket"), "{e}");
    let mut calls = Vec::new();
    // SAFETY: as above.
    let mut eager = unsafe {
        GraphCache::new(vec![4], Overflow::Eager, |_: StreamRef<'_>, n: usize| {
            calls.push(n);
            Ok(())
        })
    }
    .unwrap();
    assert_eq!(eager.run(per_thread, 100).unwrap(), 100);
    assert_eq!(eager.captured(), 0);
    drop(eager);
    assert_eq!(calls, vec![100]);
    // The table lookup agrees with the binary search, for tabled and searched bucket lists, at
    // every size up to past the largest bucket.
    for buckets in [default_buckets(), vec![1], vec![3, 10, 1000], vec![7, 1 << 16], vec![5, (1 << 16) + 1]] {
        let largest = *buckets.last().unwrap();
        let cache = new(buckets.clone(), Overflow::Error).unwrap();
        let sizes = (0..=largest.min(5000) + 2).chain([largest - 1, largest, largest + 1, usize::MAX]);
        for n in sizes {
            assert_eq!(cache.bucket_for(n), bucket_index(&buckets, n).map(|i| buckets[i]), "{buckets:?} n {n}");
        }
    }
    // SAFETY: as above.
    let options =
        graph_cache::CacheOptions { mode: graph::CaptureMode::ThreadLocal, warmup: true, ..Default::default() };
    let cache = unsafe { GraphCache::with_options(vec![2, 4], Overflow::Error, options, body) }.unwrap();
    assert_eq!(cache.options(), options);
}

#[test]
fn pipeline_model_matches_the_sources_measurements() {
    use ordo_cuda_core::pipeline::{
        check_run, choose_plan, chunk_range, predict_ms, Machine, Plan, Schedule, StageTimes,
    };
    // The source's program on an H200: 256 MiB in, the 64-step kernel, 256 MiB out.
    let times = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    let h200 = Machine {
        copy_engines: 3,
        duplex: 1.83,
        chunk_overhead_ms: 0.004,
        stage_timing_overhead_ms: 0.010,
        stage_timing: false,
    };
    let rr = |chunks, streams| Plan { chunks, schedule: Schedule::RoundRobin { streams } };
    let serial = predict_ms(times, rr(1, 1), &h200);
    assert!((serial - 10.074).abs() < 0.01, "{serial}");
    // Measured with plain C++: 8 chunks on 4 streams 5.98 ms; 32 chunks on 8 streams 5.64 ms; bound 5.28 ms.
    let p8 = predict_ms(times, rr(8, 4), &h200);
    let p32 = predict_ms(times, rr(32, 8), &h200);
    assert!((p8 - 5.98).abs() / 5.98 < 0.02, "{p8}");
    assert!((p32 - 5.64).abs() / 5.64 < 0.02, "{p32}");
    assert!(p32 > 5.28);
    // Two streams keep at most two chunks in flight: no better than (a + b + c) / 2.
    assert!(predict_ms(times, rr(32, 2), &h200) >= 10.07 / 2.0);
    // With several copy engines the planner stages the pipeline; the chunk count balances fill
    // against per-chunk cost.
    let best = choose_plan(times, &h200, 256);
    assert_eq!(best.schedule, Schedule::Staged);
    assert!(best.chunks >= 16 && best.chunks <= 64, "{best:?}");
    assert_eq!(best.streams(), 3);
    let staged = predict_ms(times, best, &h200);
    assert!(staged <= p32 + 1e-9 && staged > 5.28, "{staged}");
    // Stage timing adds its cost a chunk, and moves the planner to fewer chunks.
    let timed = Machine { stage_timing: true, ..h200 };
    let p32t = predict_ms(times, rr(32, 8), &timed);
    assert!((p32t - p32 - 32.0 * 0.010).abs() < 1e-9, "{p32t} {p32}");
    assert!(choose_plan(times, &timed, 256).chunks <= best.chunks);
    // One copy engine: copies in and out take turns, and the planner uses round robin.
    let one = Machine { copy_engines: 1, ..h200 };
    assert!(predict_ms(times, rr(32, 4), &one) > 9.75);
    assert!(matches!(choose_plan(times, &one, 64).schedule, Schedule::RoundRobin { .. }));
    // Compute-bound work: the compute dominates.
    let compute = StageTimes { copy_in_ms: 1.0, compute_ms: 10.0, copy_out_ms: 1.0 };
    let pc = predict_ms(compute, Plan { chunks: 16, schedule: Schedule::Staged }, &h200);
    assert!((pc - (10.0 + 2.0 / 16.0 + 0.064)).abs() < 1e-9, "{pc}");
    // Chunks cover every element once, sizes within one of each other.
    for (n, k) in [(10usize, 3usize), (1000, 7), (7, 7), (1 << 26, 32), (5, 1)] {
        let ranges: Vec<_> = (0..k).map(|i| chunk_range(n, k, i)).collect();
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges[k - 1].end, n);
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        let (min, max) = (ranges.iter().map(|r| r.len()).min().unwrap(), ranges.iter().map(|r| r.len()).max().unwrap());
        assert!(max - min <= 1 && min >= 1);
    }
    assert!(check_run([10; 4], 3).is_ok());
    assert!(check_run([10; 4], 0).unwrap_err().to_string().contains("zero chunks"));
    assert!(check_run([10; 4], 11).unwrap_err().to_string().contains("more chunks than elements"));
    assert!(check_run([10, 10, 9, 10], 2).unwrap_err().to_string().contains("same length"));
    assert!(h200.engines_note().contains("overlap each other"));
}

#[test]
fn upload_at_instantiation_needs_a_stream() {
    use ordo_cuda_core::graph::InstantiateFlags;
    // Refused before CUDA is reached: the flag needs the stream that instantiate_and_upload takes.
    if let Ok(g) = Graph::new() {
        let e = g.instantiate(InstantiateFlags::UPLOAD).unwrap_err();
        assert!(e.to_string().contains("instantiate_and_upload"), "{e}");
    } else {
        // Without a driver even an empty graph cannot be made; the check is the same code path.
        assert!(Graph::new().unwrap_err().cuda().unwrap().is_no_driver());
    }
}

/// A chunk range asked of zero chunks is empty, never a division by zero.
#[test]
fn chunk_range_of_no_chunk_is_empty_not_a_division_by_zero() {
    use ordo_cuda_core::pipeline::chunk_range;
    assert_eq!(chunk_range(10, 0, 0), 10..10);
    assert_eq!(chunk_range(10, 0, 3), 10..10);
    assert_eq!(chunk_range(0, 0, 0), 0..0);
    // Past the last chunk: empty at the end, never beyond n.
    assert_eq!(chunk_range(10, 3, 3), 10..10);
    assert_eq!(chunk_range(10, 3, usize::MAX), 10..10);
    // Extreme sizes stay exact.
    assert_eq!(chunk_range(usize::MAX, usize::MAX, usize::MAX - 1), usize::MAX - 1..usize::MAX);
    assert_eq!(chunk_range(usize::MAX, 2, 1).end, usize::MAX);
}

#[test]
fn runs_in_records_are_checked_against_whole_elements() {
    use ordo_cuda_core::pipeline::{check_run, check_run_records};
    assert!(check_run_records([24; 4], 12, 2).is_ok());
    assert!(check_run_records([24; 4], 0, 1).is_err(), "zero values an element");
    assert!(check_run_records([25; 4], 12, 1).is_err(), "not a whole number of elements");
    assert!(check_run_records([24; 4], 12, 3).is_err(), "more chunks than elements");
    assert!(check_run_records([24, 24, 12, 24], 12, 1).is_err(), "lengths differ");
    assert!(check_run_records([usize::MAX; 4], usize::MAX, 1).is_ok(), "one element of every value");
    assert_eq!(check_run([24; 4], 3).is_ok(), check_run_records([24; 4], 1, 3).is_ok());
}

#[test]
fn chunk_of_finds_the_chunk_holding_each_record() {
    use ordo_cuda_core::pipeline::{chunk_of, chunk_range};
    for n in 1..40usize {
        for k in 1..=n + 2 {
            for r in 0..n {
                let brute = (0..k).find(|&i| chunk_range(n, k, i).contains(&r)).unwrap();
                assert_eq!(chunk_of(n, k, r), brute, "n {n} k {k} r {r}");
            }
            assert_eq!(chunk_of(n, k, n), k, "no chunk holds n");
        }
    }
    assert_eq!(chunk_of(10, 0, 3), 0);
    assert_eq!(chunk_of(usize::MAX, usize::MAX, usize::MAX - 1), usize::MAX - 1);
    assert_eq!(chunk_of(usize::MAX, 2, usize::MAX - 1), 1);
}

/// The window of each chunk of a stencil run, against brute force: the records it writes, the
/// records its compute reads (the halo clamped at the frame's edges), and the chunks whose
/// copy-ins that compute needs.
#[test]
fn stencil_windows_widen_each_chunk_by_the_halo_clamped_at_the_edges() {
    use ordo_cuda_core::pipeline::{chunk_range, stencil_window, StencilWindow};
    for records in 1..30usize {
        for chunks in 1..=records {
            for halo in [0, 1, 2, 3, 5, 31, usize::MAX] {
                for i in 0..chunks {
                    let w = stencil_window(records, chunks, halo, i);
                    let rows = chunk_range(records, chunks, i);
                    let reads = rows.start.saturating_sub(halo)..rows.end.saturating_add(halo).min(records);
                    let first = (0..chunks).find(|&j| chunk_range(records, chunks, j).contains(&reads.start)).unwrap();
                    let last = (0..chunks).rev().find(|&j| chunk_range(records, chunks, j).contains(&(reads.end - 1)));
                    let what = format!("records {records} chunks {chunks} halo {halo} chunk {i}");
                    assert_eq!(w, StencilWindow { rows, reads, needs: first..last.unwrap() + 1 }, "{what}");
                    assert!(w.needs.contains(&i), "{what}");
                }
            }
        }
    }
    // Examples: 10 rows in 3 chunks (3, 3, 4 rows), halo 2.
    let w = stencil_window(10, 3, 2, 0);
    assert_eq!((w.rows, w.reads, w.needs), (0..3, 0..5, 0..2));
    let w = stencil_window(10, 3, 2, 1);
    assert_eq!((w.rows, w.reads, w.needs), (3..6, 1..8, 0..3));
    // A halo larger than a chunk (2-row chunks, halo 5) reaches chunks beyond the neighbours.
    let w = stencil_window(14, 7, 5, 3);
    assert_eq!((w.rows, w.reads, w.needs), (6..8, 1..13, 0..7));
    // A halo as large as usize reads the whole frame, with no overflow.
    let w = stencil_window(usize::MAX, 3, usize::MAX, 1);
    assert_eq!((w.reads, w.needs), (0..usize::MAX, 0..3));
    // No chunk: empty ranges, never a division by zero.
    assert_eq!(stencil_window(10, 0, 1, 0), StencilWindow { rows: 10..10, reads: 10..10, needs: 0..0 });
    assert_eq!(stencil_window(10, 3, 1, 3), StencilWindow { rows: 10..10, reads: 10..10, needs: 3..3 });
    assert_eq!(stencil_window(0, 1, 1, 0), StencilWindow { rows: 0..0, reads: 0..0, needs: 0..0 });
}

#[test]
fn stencil_runs_are_checked_before_cuda() {
    use ordo_cuda_core::pipeline::{check_stencil, MAX_CHUNKS};
    let err = |lens, i, o, chunks| check_stencil(lens, i, o, chunks).unwrap_err().to_string();
    // 8 rows of 6 inputs and 3 outputs.
    assert_eq!(check_stencil([48, 48, 24, 24], 6, 3, 3), Ok(8));
    assert_eq!(check_stencil([48, 48, 96, 96], 6, 12, 8), Ok(8), "more outputs than inputs a row");
    assert!(err([48, 48, 24, 24], 0, 3, 1).contains("zero values a record"));
    assert!(err([48, 48, 24, 24], 6, 0, 1).contains("zero values a record"));
    assert!(err([48, 48, 24, 24], 6, 3, 0).contains("zero chunks"));
    assert!(err([48, 48, 24, 24], 6, 3, MAX_CHUNKS + 1).contains("MAX_CHUNKS"));
    assert!(err([48, 42, 24, 24], 6, 3, 1).contains("input and its device buffer"));
    assert!(err([48, 48, 21, 24], 6, 3, 1).contains("output and its device buffer"));
    assert!(err([50, 50, 24, 24], 6, 3, 1).contains("whole number of records"));
    assert!(err([48, 48, 27, 27], 6, 3, 1).contains("out_record_len values for each input record"));
    assert!(err([48, 48, 24, 24], 6, 3, 9).contains("more chunks than records"));
    // records * out_record_len overflows: refused, not wrapped.
    let big = usize::MAX - usize::MAX % 2;
    assert!(err([big, big, 4, 4], 2, usize::MAX, 1).contains("overflows"));
    assert!(err([0, 0, 0, 0], 6, 3, 1).contains("more chunks than records"));
}

/// The order a run enqueues its steps in, simulated on streams and events as CUDA orders them:
/// each compute starts after the copy-in of every chunk whose records it reads, every wait names
/// an event recorded by an earlier step (so no wait can close a cycle), every recorded event is
/// waited for, each chunk is copied in and computed once; and with a halo of 0 the order is the
/// one `Pipeline::run` always had (copy-in, a wait where the stages' streams differ, compute).
#[test]
fn enqueue_steps_order_every_compute_after_the_copy_ins_it_reads() {
    use ordo_cuda_core::pipeline::{enqueue_steps, stencil_window, Plan, Schedule, Step};
    let schedules = [
        Schedule::Staged,
        Schedule::RoundRobin { streams: 1 },
        Schedule::RoundRobin { streams: 2 },
        Schedule::RoundRobin { streams: 3 },
        Schedule::RoundRobin { streams: 4 },
        Schedule::RoundRobin { streams: 8 },
    ];
    for records in [1usize, 2, 5, 14, 31, 100] {
        for chunks in (1..=records.min(16)).chain([records]) {
            for schedule in schedules {
                for halo in [0usize, 1, 2, 5, 40, usize::MAX] {
                    let plan = Plan { chunks, schedule };
                    let what = format!("records {records} {plan:?} halo {halo}");
                    let streams = plan.workers();
                    // The copy-ins each stream has passed (stream order), and each event's record.
                    let mut known = vec![vec![false; chunks]; 3.max(streams)];
                    let mut recorded: Vec<Option<Vec<bool>>> = vec![None; chunks];
                    let mut waited = vec![false; chunks];
                    let (mut copied, mut computed) = (vec![0; chunks], vec![0; chunks]);
                    let steps: Vec<Step> = enqueue_steps(plan, records, halo).collect();
                    for &step in &steps {
                        match step {
                            Step::CopyIn { chunk, record } => {
                                let s = plan.stage_streams(chunk)[0];
                                copied[chunk] += 1;
                                known[s][chunk] = true;
                                if record {
                                    recorded[chunk] = Some(known[s].clone());
                                }
                            }
                            Step::Wait { chunk, on } => {
                                let s = plan.stage_streams(chunk)[1];
                                assert_ne!(s, plan.stage_streams(on)[0], "{what}: a wait on its own stream");
                                let event = recorded[on].as_ref().unwrap_or_else(|| panic!("{what}: {on} unrecorded"));
                                for (k, &done) in event.iter().enumerate() {
                                    known[s][k] |= done;
                                }
                                waited[on] = true;
                            }
                            Step::Compute { chunk } => {
                                let s = plan.stage_streams(chunk)[1];
                                computed[chunk] += 1;
                                for j in stencil_window(records, chunks, halo, chunk).needs {
                                    assert!(known[s][j], "{what}: compute {chunk} before copy-in {j}");
                                }
                            }
                        }
                    }
                    assert!(copied.iter().chain(&computed).all(|&n| n == 1), "{what}: {steps:?}");
                    for (j, event) in recorded.iter().enumerate() {
                        assert_eq!(event.is_some(), waited[j], "{what}: chunk {j}'s event recorded but not waited");
                    }
                    if matches!(schedule, Schedule::Staged) {
                        let waits = steps.iter().filter(|s| matches!(s, Step::Wait { .. })).count();
                        assert_eq!(waits, chunks, "{what}: one wait a compute");
                    }
                    if halo == 0 {
                        let staged = matches!(schedule, Schedule::Staged);
                        let before: Vec<Step> = (0..chunks)
                            .flat_map(|i| {
                                let copy = Step::CopyIn { chunk: i, record: staged };
                                let wait = staged.then_some(Step::Wait { chunk: i, on: i });
                                [Some(copy), wait, Some(Step::Compute { chunk: i })].into_iter().flatten()
                            })
                            .collect();
                        assert_eq!(steps, before, "{what}");
                    }
                }
            }
        }
    }
    // Round robin over 2 streams, 4 chunks of 2 rows, halo 1: each chunk's copy-in is out before
    // the compute of the chunk before it, and each compute waits for its neighbours' events.
    let plan = Plan { chunks: 4, schedule: Schedule::RoundRobin { streams: 2 } };
    let steps: Vec<Step> = enqueue_steps(plan, 8, 1).collect();
    let copy = |chunk| Step::CopyIn { chunk, record: true };
    let wait = |chunk, on| Step::Wait { chunk, on };
    let compute = |chunk| Step::Compute { chunk };
    let expect = [
        copy(0),
        copy(1),
        wait(0, 1),
        compute(0),
        copy(2),
        wait(1, 0),
        wait(1, 2),
        compute(1),
        copy(3),
        wait(2, 1),
        wait(2, 3),
        compute(2),
        wait(3, 2),
        compute(3),
    ];
    assert_eq!(steps, expect);
}

/// `choose_plan` given a huge chunk limit ends, with a plan within `MAX_CHUNKS`.
#[test]
fn choose_plan_with_a_huge_chunk_limit_terminates_within_max_chunks() {
    use ordo_cuda_core::pipeline::{choose_plan, Machine, StageTimes, MAX_CHUNKS};
    let times = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    // No per-chunk cost: more chunks always look better, so the planner goes to its limit.
    for copy_engines in [0, 1, 3] {
        let free = Machine {
            copy_engines,
            duplex: 1.83,
            chunk_overhead_ms: 0.0,
            stage_timing_overhead_ms: 0.0,
            stage_timing: false,
        };
        for max in [usize::MAX, usize::MAX / 2 + 1, 1 << 40, MAX_CHUNKS + 1] {
            let plan = choose_plan(times, &free, max);
            assert!(
                plan.chunks >= 1 && plan.chunks <= MAX_CHUNKS && plan.chunks.is_power_of_two(),
                "{copy_engines} {max}: {plan:?}"
            );
        }
        assert_eq!(choose_plan(times, &free, 0).chunks, 1);
    }
    let free = Machine {
        copy_engines: 3,
        duplex: 1.83,
        chunk_overhead_ms: 0.0,
        stage_timing_overhead_ms: 0.0,
        stage_timing: false,
    };
    assert_eq!(choose_plan(times, &free, usize::MAX).chunks, MAX_CHUNKS);
    assert_eq!(choose_plan(times, &free, 100).chunks, 64);
}

/// NaN, negative and infinite inputs give NaN or infinity from `predict_ms` and a plan from
/// `choose_plan`, never a panic or a hang.
#[test]
fn predict_ms_and_choose_plan_on_nan_negative_and_infinite_input() {
    use ordo_cuda_core::pipeline::{choose_plan, predict_ms, Machine, MachineModel, Plan, Schedule, StageTimes};
    let h200 = Machine { stage_timing: true, ..MachineModel::H200_PCIE5.machine(3) };
    let good = StageTimes { copy_in_ms: 4.89, compute_ms: 0.32, copy_out_ms: 4.86 };
    let plans = [
        Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } },
        Plan { chunks: 32, schedule: Schedule::RoundRobin { streams: 8 } },
        Plan { chunks: 32, schedule: Schedule::Staged },
        Plan { chunks: 0, schedule: Schedule::RoundRobin { streams: 0 } },
    ];
    let nan_times = [
        StageTimes { copy_in_ms: f64::NAN, ..good },
        StageTimes { compute_ms: -1.0, ..good },
        StageTimes { copy_out_ms: f64::NEG_INFINITY, ..good },
    ];
    let nan_machines = [
        Machine { duplex: f64::NAN, ..h200 },
        Machine { chunk_overhead_ms: f64::NAN, ..h200 },
        Machine { stage_timing_overhead_ms: -0.5, ..h200 },
    ];
    for plan in plans {
        assert!(predict_ms(good, plan, &h200).is_finite(), "{plan:?}");
        for t in nan_times {
            assert!(predict_ms(t, plan, &h200).is_nan(), "{t:?} {plan:?}");
        }
        for m in &nan_machines {
            assert!(predict_ms(good, plan, m).is_nan(), "{m:?} {plan:?}");
        }
        assert_eq!(predict_ms(StageTimes { compute_ms: f64::INFINITY, ..good }, plan, &h200), f64::INFINITY);
        assert_eq!(predict_ms(good, plan, &Machine { chunk_overhead_ms: f64::INFINITY, ..h200 }), f64::INFINITY);
        // A duplex outside 1.0-2.0 is clamped, still a finite prediction.
        assert!(predict_ms(good, plan, &Machine { duplex: f64::INFINITY, ..h200 }).is_finite());
        assert!(predict_ms(good, plan, &Machine { duplex: 0.0, ..h200 }).is_finite());
    }
    // Nothing to compare: the planner falls back to one chunk on one stream.
    let serial = Plan { chunks: 1, schedule: Schedule::RoundRobin { streams: 1 } };
    for t in nan_times.into_iter().chain([StageTimes { copy_in_ms: f64::INFINITY, ..good }]) {
        assert_eq!(choose_plan(t, &h200, usize::MAX), serial, "{t:?}");
    }
    for m in &nan_machines {
        assert_eq!(choose_plan(good, m, 1 << 20), serial, "{m:?}");
    }
}

/// A run of more than `MAX_CHUNKS` chunks is refused.
#[test]
fn a_run_refuses_more_chunks_than_max_chunks() {
    use ordo_cuda_core::pipeline::{check_run, MAX_CHUNKS};
    assert!(check_run([usize::MAX; 4], MAX_CHUNKS).is_ok());
    let e = check_run([usize::MAX; 4], MAX_CHUNKS + 1).unwrap_err();
    assert!(e.to_string().contains("MAX_CHUNKS"), "{e}");
    assert!(check_run([usize::MAX; 4], usize::MAX).is_err());
}

/// A block whose volume overflows `u64` (three `u32` factors) is refused like any block over 1024
/// threads, never a panic or a wrapped (accepted) volume.
#[test]
fn a_block_volume_past_u64_is_refused_not_a_panic() {
    let config = ordo_cuda_core::LaunchConfig::new(1u32, (1u32 << 31, 1u32 << 31, 4u32));
    assert!(config.validate().is_err());
}

/// A pipeline of more than `MAX_STREAMS` streams is refused before CUDA is called.
#[test]
fn a_pipeline_of_absurdly_many_streams_is_refused_before_cuda() {
    let e = ordo_cuda_core::pipeline::Pipeline::new(usize::MAX).err().expect("refused");
    assert!(e.cuda_code().is_none(), "{e}");
    assert!(ordo_cuda_core::pipeline::Pipeline::new(ordo_cuda_core::pipeline::MAX_STREAMS + 1).is_err());
}

/// With no driver at all, CUDA says "driver version is insufficient"; ordo's error says there is
/// no NVIDIA driver, keeping CUDA's code.
#[test]
fn without_a_driver_the_error_says_so() {
    if driver_present() {
        return; // a GPU machine has a driver
    }
    let e = Stream::new().unwrap_err();
    let c = e.cuda().expect("a CUDA error");
    assert_eq!(c.code(), ordo_cuda_core::sys::cudaError::cudaErrorInsufficientDriver);
    assert!(e.to_string().contains("no NVIDIA driver"), "{e}");
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

#[test]
fn instantiate_flags_are_the_headers_values() {
    use ordo_cuda_core::graph::InstantiateFlags;
    let text = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
    let value = |name: &str| -> u64 {
        let at = text.find(&format!("{name} ")).unwrap() + name.len();
        let rest = text[at..].trim_start().strip_prefix('=').unwrap().trim_start();
        rest[..rest.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
    };
    assert_eq!(InstantiateFlags::AUTO_FREE_ON_LAUNCH.bits(), value("cudaGraphInstantiateFlagAutoFreeOnLaunch"));
    assert_eq!(InstantiateFlags::UPLOAD.bits(), value("cudaGraphInstantiateFlagUpload"));
    assert_eq!(InstantiateFlags::DEVICE_LAUNCH.bits(), value("cudaGraphInstantiateFlagDeviceLaunch"));
    assert_eq!(InstantiateFlags::USE_NODE_PRIORITY.bits(), value("cudaGraphInstantiateFlagUseNodePriority"));
}

#[test]
fn device_launch_with_auto_free_is_refused_before_cuda() {
    use ordo_cuda_core::graph::InstantiateFlags;
    let both = InstantiateFlags::DEVICE_LAUNCH | InstantiateFlags::AUTO_FREE_ON_LAUNCH;
    if let Ok(g) = Graph::new() {
        let e = g.instantiate(both).unwrap_err();
        assert!(e.to_string().contains("AUTO_FREE_ON_LAUNCH"), "{e}");
    } else {
        // Without a driver even an empty graph cannot be made; the check is in-crate tested too.
        assert!(Graph::new().unwrap_err().cuda().unwrap().is_no_driver());
    }
}

#[test]
fn a_captured_one_dimensional_copy_reads_as_a_linear_copy() {
    use ordo_cuda_core::graph::LinearCopy;
    use ordo_cuda_sys as sys;
    let (mut src, mut dst) = ([1u8; 64], [2u8; 64]);
    // The form CUDA stores for a captured `cudaMemcpyAsync` of 48 bytes at offsets 8 and 16.
    let p = sys::cudaMemcpy3DParms {
        srcPtr: sys::cudaPitchedPtr { ptr: src.as_mut_ptr().cast(), pitch: 64, xsize: 64, ysize: 1 },
        dstPtr: sys::cudaPitchedPtr { ptr: dst.as_mut_ptr().cast(), pitch: 64, xsize: 64, ysize: 1 },
        srcPos: sys::cudaPos { x: 8, y: 0, z: 0 },
        dstPos: sys::cudaPos { x: 16, y: 0, z: 0 },
        extent: sys::cudaExtent { width: 48, height: 1, depth: 1 },
        kind: sys::cudaMemcpyKind::cudaMemcpyHostToDevice,
        ..Default::default()
    };
    let c = LinearCopy::from_params(&p).unwrap();
    assert_eq!(c.src, src[8..].as_ptr().cast());
    assert_eq!(c.dst, dst[16..].as_mut_ptr().cast());
    assert_eq!((c.bytes, c.kind), (48, sys::cudaMemcpyKind::cudaMemcpyHostToDevice));
    // Two rows, a row offset, an array, or nothing at all: not linear.
    let mut rows = p;
    rows.extent.height = 2;
    let mut offset = p;
    offset.dstPos.y = 1;
    let mut array = p;
    array.srcArray = 8 as sys::cudaArray_t;
    let mut empty = p;
    empty.extent.width = 0;
    for q in [rows, offset, array, empty] {
        assert_eq!(LinearCopy::from_params(&q), None);
    }
}

#[test]
fn update_outcomes_name_each_refused_change() {
    use ordo_cuda_core::graph::{UpdateNodes, UpdateOutcome};
    use ordo_cuda_sys as sys;
    use sys::cudaGraphExecUpdateResult as R;
    let (node, from) = (16 as sys::cudaGraphNode_t, 32 as sys::cudaGraphNode_t);
    let nodes = UpdateNodes { node, from_node: from };
    let outcome = |result| {
        UpdateOutcome::from_info(&sys::cudaGraphExecUpdateResultInfo { result, errorNode: node, errorFromNode: from })
    };
    assert_eq!(outcome(R::cudaGraphExecUpdateSuccess), UpdateOutcome::Updated);
    assert!(outcome(R::cudaGraphExecUpdateSuccess).is_updated());
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorTopologyChanged), UpdateOutcome::TopologyChanged);
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorNodeTypeChanged), UpdateOutcome::NodeTypeChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorFunctionChanged), UpdateOutcome::FunctionChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorParametersChanged), UpdateOutcome::ParametersChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorNotSupported), UpdateOutcome::NotSupported(nodes));
    assert_eq!(
        outcome(R::cudaGraphExecUpdateErrorUnsupportedFunctionChange),
        UpdateOutcome::UnsupportedFunctionChange(nodes)
    );
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorAttributesChanged), UpdateOutcome::AttributesChanged(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateError), UpdateOutcome::Other(R::cudaGraphExecUpdateError, nodes));
    assert_eq!(outcome(R(999)), UpdateOutcome::Other(R(999), nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorParametersChanged).nodes(), Some(nodes));
    assert_eq!(outcome(R::cudaGraphExecUpdateErrorTopologyChanged).nodes(), None);
    assert!(!outcome(R::cudaGraphExecUpdateErrorTopologyChanged).reason().is_empty());
}

#[test]
fn a_conditional_handle_is_passed_to_kernels_as_cudas_64_bit_handle() {
    use ordo_cuda_core::graph::ConditionalHandle;
    use ordo_cuda_sys as sys;
    // `ordo_conditional_handle` in include/ordo/graph.cuh: the kernel parameter is 8 bytes.
    assert_eq!(std::mem::size_of::<ConditionalHandle>(), std::mem::size_of::<sys::cudaGraphConditionalHandle>());
    assert_eq!(std::mem::size_of::<ConditionalHandle>(), 8);
    assert_eq!(std::mem::align_of::<ConditionalHandle>(), 8);
}

#[test]
fn while_nodes_return_err_without_a_driver() {
    // With a driver and no device, or no driver at all, making a graph fails; with a device the
    // WHILE node is made (its GPU test runs it).
    match Graph::new() {
        Ok(g) => {
            let c = g.conditional_handle(Some(1)).unwrap();
            let (node, _body) = g.add_while_node(&[], c).unwrap();
            assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
            assert_eq!(g.root_nodes().unwrap(), vec![node]);
        }
        Err(e) => assert!(e.cuda().is_some(), "{e}"),
    }
}

#[test]
fn an_error_takes_static_words_or_words_made_at_run_time() {
    use ordo_cuda_core::error::{Text, UsageError};
    // Static words, also in a constant.
    const REFUSED: Error = Error::usage_static(UsageKind::InvalidArgument, "frame", "no rows");
    assert_eq!(REFUSED.to_string(), "frame: InvalidArgument: no rows");
    assert_eq!(Error::invalid("frame", "no rows"), REFUSED);
    // Words made at run time (a caller's own checks), kept whole and shared by clones.
    let (rows, max) = (4097, 4096);
    let e = Error::invalid("frame", format!("{rows} rows, at most {max}"));
    assert_eq!(e.to_string(), "frame: InvalidArgument: 4097 rows, at most 4096");
    let copy = e.clone();
    let (Error::Usage(a), Error::Usage(b)) = (&e, &copy) else { panic!("{e:?}") };
    assert!(core::ptr::eq(a.what.as_str(), b.what.as_str()), "clones share the text");
    assert_eq!(a.what, "4097 rows, at most 4096");
    assert_eq!(a.what.as_static(), None);
    assert!(matches!(REFUSED, Error::Usage(UsageError { ref what, .. }) if what.as_static() == Some("no rows")));
    // Every owned form a caller may hold.
    let boxed: Box<str> = "boxed".into();
    let shared: std::sync::Arc<str> = "shared".into();
    let cow: std::borrow::Cow<'static, str> = std::borrow::Cow::Owned("cow".to_owned());
    for (text, words) in [(Text::from(boxed), "boxed"), (Text::from(shared), "shared"), (Text::from(cow), "cow")] {
        assert_eq!(
            Error::usage(UsageKind::NotSupported, "x", text.clone()).to_string(),
            format!("x: NotSupported: {words}")
        );
        assert_eq!(format!("{text:?}"), format!("{words:?}"));
    }
    // No size is paid for it: 64 bytes, as with static texts only.
    assert!(core::mem::size_of::<Error>() <= 64);
}

#[test]
fn conditional_nodes_refuse_bad_kinds_before_cuda() {
    use ordo_cuda_core::graph::ConditionalKind;
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    let usage = |e: Error, kind: UsageKind, what: &str| {
        assert!(matches!(e, Error::Usage(UsageError { kind: k, .. }) if k == kind), "{e:?}");
        assert!(e.to_string().contains(what), "{e} lacks {what}");
    };
    let e = s.capture_conditional(ConditionalKind::Switch { cases: 0 }, None, |_, _| Ok(())).unwrap_err();
    usage(e, UsageKind::InvalidArgument, "at least one case");
    if !cfg!(cuda_12_8) {
        for kind in [ConditionalKind::IfElse, ConditionalKind::Switch { cases: 3 }] {
            let e = s.capture_conditional(kind, None, |_, _| Ok(())).unwrap_err();
            usage(e, UsageKind::NotSupported, "12.8");
        }
    }
    // A good kind on a stream that is not capturing: refused (CUDA's error without a driver or a
    // device), and the function is not called.
    let e = s
        .capture_conditional(ConditionalKind::While, Some(1), |_, _| -> Result<()> {
            panic!("called outside a capture")
        })
        .unwrap_err();
    match e {
        Error::Usage(_) => usage(e, UsageKind::InvalidArgument, "not capturing"),
        Error::Cuda(_) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn conditional_nodes_have_their_bodies_or_return_err_without_a_driver() {
    use ordo_cuda_core::graph::ConditionalKind;
    let Ok(g) = Graph::new() else {
        // Without a driver, or a device, even an empty graph cannot be made.
        assert!(Graph::new().unwrap_err().cuda().is_some());
        return;
    };
    let mut kinds = vec![ConditionalKind::If, ConditionalKind::While];
    if cfg!(cuda_12_8) {
        kinds.extend([ConditionalKind::IfElse, ConditionalKind::Switch { cases: 5 }]);
    }
    for kind in kinds {
        let c = g.conditional_handle(Some(0)).unwrap();
        let (node, bodies) = g.add_conditional_node(&[], c, kind).unwrap();
        assert_eq!(node.kind().unwrap(), NodeKind::Conditional);
        assert_eq!(bodies.len(), kind.body_count() as usize, "{kind:?}");
        let raw: Vec<_> = bodies.iter().map(|b| b.as_raw()).collect();
        assert!(raw.iter().all(|b| !b.is_null()), "{kind:?}");
        assert!(raw.iter().enumerate().all(|(i, b)| !raw[..i].contains(b)), "{kind:?}: a body twice");
        assert!(bodies.get(bodies.len()).is_none());
        // A conditional node in a body.
        let c = g.conditional_handle(None).unwrap();
        let (inner, inner_bodies) = bodies.get(0).unwrap().add_conditional_node(&[], c, ConditionalKind::If).unwrap();
        assert_eq!((inner.kind().unwrap(), inner_bodies.len()), (NodeKind::Conditional, 1));
    }
    let c = g.conditional_handle(Some(0)).unwrap();
    let e = g.add_conditional_node(&[], c, ConditionalKind::Switch { cases: 0 }).unwrap_err();
    assert!(e.to_string().contains("at least one case"), "{e}");
}
