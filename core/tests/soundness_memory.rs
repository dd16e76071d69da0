//! Regression tests of issue 13 for memory, streams, errors, events, devices and launch: the views'
//! thread bounds and origins, errors met in `Drop`, checked sizes (CPU); ordering of `free_on` and
//! of the blocking copies across streams, blocking copies inside a capture, the launch error's
//! hint, `with_current` on unwind (GPU). The GPU tests load a one-kernel PTX library at run time,
//! so this binary needs no nvcc.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error::{self, CudaError};
#[cfg(cuda_library_api)]
use ordo_cuda_core::launch::Kernel;
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::{copy, order};
use ordo_cuda_core::*;
use static_assertions::{assert_impl_all, assert_not_impl_any};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Mutex, MutexGuard};

/// The tests that read or fill the process-wide drop-error queue run one at a time.
static DROP_QUEUE: Mutex<()> = Mutex::new(());

fn drop_queue() -> MutexGuard<'static, ()> {
    DROP_QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// 16M bytes: long enough that an unordered copy is seen.
const N: usize = 16 << 20;

#[path = "support/random.rs"]
mod random;
use random::random_bytes;

// ---------------------------------------------------------------------------------------------
// Defect 10: thread bounds of the views.

// An exclusive view hands out its elements: sending it needs `T: Send` (`MutexGuard` is `Sync`
// but not `Send`, so the old `T: Sync` bound let it through), sharing it needs `T: Sync`.
assert_not_impl_any!(DeviceSliceMut<'static, Rc<u8>>: Send, Sync);
assert_not_impl_any!(PinnedSliceMut<'static, Rc<u8>>: Send, Sync);
assert_not_impl_any!(DeviceSliceMut<'static, MutexGuard<'static, u8>>: Send);
assert_not_impl_any!(PinnedSliceMut<'static, MutexGuard<'static, u8>>: Send);
assert_impl_all!(DeviceSliceMut<'static, Cell<u8>>: Send);
assert_not_impl_any!(DeviceSliceMut<'static, Cell<u8>>: Sync);
assert_impl_all!(PinnedSliceMut<'static, Cell<u8>>: Send);
assert_not_impl_any!(PinnedSliceMut<'static, Cell<u8>>: Sync);
// A shared view is like `&[T]`: `Send` and `Sync` exactly where `T: Sync`.
assert_not_impl_any!(DeviceSlice<'static, Cell<u8>>: Send, Sync);
assert_not_impl_any!(PinnedSlice<'static, Cell<u8>>: Send, Sync);
assert_impl_all!(DeviceSlice<'static, MutexGuard<'static, u8>>: Send, Sync);
assert_impl_all!(DeviceSlice<'static, u32>: Send, Sync, Copy);
assert_impl_all!(DeviceSliceMut<'static, u32>: Send, Sync);
assert_impl_all!(PinnedSlice<'static, f32>: Send, Sync, Copy);
assert_impl_all!(PinnedSliceMut<'static, f32>: Send, Sync);
// The error stays plain data with its hint.
assert_impl_all!(CudaError: Copy, Send, Sync);
assert_impl_all!(Error: Clone, Send, Sync);

#[test]
fn defect_10_view_thread_bounds_follow_the_element_type() {
    // The checks are the static assertions above; this names them for the test list.
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<DeviceSliceMut<'static, u8>>();
    sync::<DeviceSlice<'static, u8>>();
}

// ---------------------------------------------------------------------------------------------
// Design point 2: views know their buffer's stream.

#[test]
fn defect_02_views_keep_their_origin_through_sub_views_and_reborrows() {
    let mut host = [3u32; 8];
    // SAFETY: the handle is only compared and carried, never used for a CUDA call here.
    let s = unsafe { StreamRef::per_thread_default() };
    // SAFETY: not device memory, but no CUDA call touches it: only the views' bookkeeping is tested.
    let mut v = unsafe { DeviceSliceMut::from_raw_parts_on(host.as_mut_ptr(), 8, s) };
    assert_eq!(v.origin(), Some(s));
    assert_eq!(v.reborrow().origin(), Some(s));
    assert_eq!(v.as_slice().origin(), Some(s));
    assert_eq!(v.as_slice().slice(2..5).unwrap().origin(), Some(s));
    let sub = v.reborrow().slice_mut(1..=3).unwrap();
    assert_eq!((sub.origin(), sub.len()), (Some(s), 3));
    let shared = unsafe { DeviceSlice::from_raw_parts_on(host.as_ptr(), 8, s) };
    assert_eq!(shared.slice(..4).unwrap().origin(), Some(s));
    // Raw views know no origin: their contract covers the ordering.
    let raw = unsafe { DeviceSlice::from_raw_parts(host.as_ptr(), 8) };
    assert_eq!(raw.origin(), None);
    assert_eq!(raw.slice(1..).unwrap().origin(), None);
}

#[test]
fn defect_02_ordering_on_the_same_stream_or_without_an_origin_makes_no_driver_call() {
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    // Without a driver any CUDA call fails; these succeed because they make none.
    order::after_origin(None, s).unwrap();
    order::after_origin(Some(s), s).unwrap();
    order::origin_after(None, s).unwrap();
    order::origin_after(Some(s), s).unwrap();
}

// ---------------------------------------------------------------------------------------------
// Defect 9: errors met in Drop are kept; the launch error keeps CUDA's code.

#[test]
fn defect_09_drop_errors_are_kept_oldest_first_bounded_and_counted() {
    let _q = drop_queue();
    drop(error::take_drop_errors());
    let (seen, lost) = (error::drop_error_count(), error::lost_drop_error_count());
    error::record_drop_error(sys::cudaError::cudaSuccess, "cudaFreeAsync");
    assert!(error::take_drop_errors().is_empty(), "success is not an error");
    let extra = 7;
    for i in 0..error::DROP_ERROR_CAPACITY + extra {
        let code = if i == 0 { sys::cudaError::cudaErrorIllegalAddress } else { sys::cudaError::cudaErrorInvalidValue };
        error::record_drop_error(code, "cudaFreeAsync");
    }
    error::record_drop_error_value(Error::Library(LibraryError::new("cuBLAS", "cublasDestroy_v2", 3)));
    let kept = error::take_drop_errors();
    assert_eq!(kept.len(), error::DROP_ERROR_CAPACITY);
    // The oldest are kept: the first one recorded is first.
    assert_eq!(kept[0].cuda_code(), Some(sys::cudaError::cudaErrorIllegalAddress));
    assert_eq!(kept[0].call(), "cudaFreeAsync");
    assert!(kept[1..].iter().all(|e| e.cuda_code() == Some(sys::cudaError::cudaErrorInvalidValue)));
    assert_eq!(error::drop_error_count() - seen, error::DROP_ERROR_CAPACITY + extra + 1);
    assert_eq!(error::lost_drop_error_count() - lost, extra + 1);
    assert!(error::take_drop_errors().is_empty(), "taking empties the queue");
    // Room again after taking.
    error::record_drop_error_value(Error::Library(LibraryError {
        library: "NCCL",
        call: "ncclCommDestroy",
        status: 2,
        detail: Some("peer gone".into()),
    }));
    let again = error::take_drop_errors();
    assert!(matches!(again[..], [Error::Library(LibraryError { library: "NCCL", .. })]), "{again:?}");
    assert_eq!(again[0].to_string(), "ncclCommDestroy failed: NCCL status 2: peer gone", "the detail is shown");
}

#[test]
fn defect_09_a_hint_keeps_the_cuda_code_name_and_call() {
    let plain = CudaError::new(sys::cudaError::cudaErrorInvalidValue, "cudaLaunchKernelExC");
    let hinted = plain.with_hint("needs Kernel::set_max_dynamic_shared_memory first");
    assert_eq!(plain.hint(), None);
    assert_eq!(hinted.code(), plain.code());
    assert_eq!(hinted.call(), "cudaLaunchKernelExC");
    assert_eq!(hinted.name(), plain.name());
    let e = Error::from(hinted);
    assert_eq!(e.cuda_code(), Some(sys::cudaError::cudaErrorInvalidValue));
    let text = e.to_string();
    assert!(text.contains("cudaLaunchKernelExC failed: cudaErrorInvalidValue (1)"), "{text}");
    assert!(text.contains("set_max_dynamic_shared_memory"), "{text}");
    assert!(!plain.to_string().contains("hint"));
    assert!(format!("{e:?}").contains("hint"));
}

// ---------------------------------------------------------------------------------------------
// Defect 8: absurd sizes are clear errors, before CUDA is called (these pass without a driver).

#[test]
fn defect_08_absurd_sizes_are_clear_errors_before_cuda() {
    let overflows = |e: Error| {
        assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{e:?}");
        assert!(e.to_string().contains("overflows"), "{e}");
    };
    overflows(PinnedBuffer::<u64>::zeroed(usize::MAX, HostAllocFlags::empty()).unwrap_err());
    overflows(PinnedBuffer::<[u8; 3]>::zeroed(usize::MAX / 2, HostAllocFlags::MAPPED).unwrap_err());
    overflows(ManagedBuffer::<u32>::zeroed(usize::MAX / 2, ManagedFlags::ATTACH_GLOBAL).unwrap_err());
    overflows(ManagedBuffer::<f64>::zeroed(usize::MAX / 4, ManagedFlags::ATTACH_HOST).unwrap_err());
    // SAFETY: refused before CUDA is called; used on this thread only.
    let s = unsafe { StreamRef::per_thread_default() };
    overflows(DeviceBuffer::<u32>::alloc_async(usize::MAX / 2, s).unwrap_err());
    overflows(DeviceBuffer::<u16>::zeroed_async(usize::MAX, s).unwrap_err());
    let zero_sized = PinnedBuffer::<[u8; 0]>::zeroed(4, HostAllocFlags::empty()).unwrap_err();
    assert!(zero_sized.to_string().contains("zero-sized"), "{zero_sized}");
    let mut none: [[u32; 0]; 4] = [[]; 4];
    assert!(RegisteredHost::new(&mut none, HostRegisterFlags::empty()).unwrap_err().to_string().contains("zero-sized"));
    for (n, block) in [(usize::MAX, 1), (usize::MAX, 1024), (usize::MAX / 2, 7), (1 << 40, 256)] {
        let e = LaunchConfig::for_elements(n, block).unwrap_err();
        assert!(e.to_string().contains("too many elements"), "{n} {block}: {e}");
    }
    assert!(LaunchConfig::for_elements(10, u32::MAX).is_err());
}

// ---------------------------------------------------------------------------------------------
// GPU tests.

#[cfg(cuda_library_api)]
/// A kernel `ordo_spin(u64 cycles)` that busy-waits for `cycles` clock ticks: a slow piece of work
/// to queue ahead of a write on a stream. PTX, JIT-compiled by the driver.
const SPIN_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry ordo_spin(
    .param .u64 ordo_spin_param_0
)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [ordo_spin_param_0];
    mov.u64 %rd2, %clock64;
$L_spin:
    mov.u64 %rd3, %clock64;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $L_spin;
    ret;
}
\0";

#[cfg(cuda_library_api)]
/// About 0.1 s of spinning at H200 clocks (1.98 GHz).
const SPIN_CYCLES: u64 = 200_000_000;

#[cfg(cuda_library_api)]
fn spin_kernel() -> Kernel<(u64,)> {
    static KERNEL: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let raw = *KERNEL.get_or_init(|| {
        let mut lib: sys::cudaLibrary_t = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; no options. The library is never unloaded.
        let code = unsafe {
            sys::cudaLibraryLoadData(
                &mut lib,
                SPIN_PTX.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        error::check(code, "cudaLibraryLoadData").unwrap();
        let mut kernel: sys::cudaKernel_t = std::ptr::null_mut();
        // SAFETY: a loaded library; a NUL-terminated name.
        let code = unsafe { sys::cudaLibraryGetKernel(&mut kernel, lib, c"ordo_spin".as_ptr()) };
        error::check(code, "cudaLibraryGetKernel").unwrap();
        kernel as usize
    });
    // SAFETY: a cudaKernel_t, which the runtime's launch and attribute calls take as a function
    // pointer; its one parameter is a u64.
    unsafe { Kernel::from_raw(raw as *const std::ffi::c_void) }.unwrap()
}

#[cfg(cuda_library_api)]
/// Queues about 0.1 s of spinning on `s`.
fn spin(s: StreamRef<'_>) {
    // SAFETY: the kernel takes one u64 and touches no memory.
    unsafe { spin_kernel().launch(s, &LaunchConfig::new(1, 1), (SPIN_CYCLES,)) }.unwrap();
}

#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_03_free_on_another_stream_waits_for_the_buffers_own_stream() {
    let a = Stream::new().unwrap();
    let b = Stream::new().unwrap();
    let pool = MemPool::new(Device::current().unwrap()).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    let mut old = DeviceBuffer::<u8>::alloc_from_pool_async(N, pool.as_pool(), a.as_stream()).unwrap();
    let old_ptr = old.as_ptr();
    // A slow write still queued on the buffer's own stream when it is freed on `b`.
    spin(a.as_stream());
    // SAFETY: the memset is on the buffer's own stream, ordered before its free (the fix).
    unsafe { copy::memset_async(old.as_mut_slice(), 0x5A, a.as_stream()).unwrap() };
    old.free_on(b.as_stream()).unwrap();
    // The pool hands the same memory to a new buffer on `b`, which writes a pattern.
    let mut new = DeviceBuffer::<u8>::alloc_from_pool_async(N, pool.as_pool(), b.as_stream()).unwrap();
    assert_eq!(new.as_ptr(), old_ptr, "the pool did not reuse the block: the test proves nothing");
    let pattern = random_bytes(N, 3);
    copy::h2d_blocking(new.as_mut_slice(), &pattern, b.as_stream()).unwrap();
    a.synchronize().unwrap(); // a late memset would have landed by now
    let mut back = vec![0u8; N];
    copy::d2h_blocking(&mut back, new.as_slice(), b.as_stream()).unwrap();
    let kept = back.iter().zip(&pattern).filter(|(x, y)| x == y).count();
    assert_eq!(kept, N, "only {kept} of {N} bytes kept their value: the free ran before the old write");
}

#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_03_blocking_copies_on_another_stream_wait_for_the_buffers_own_stream() {
    let a = Stream::new().unwrap();
    let b = Stream::new().unwrap();
    let mut buf = DeviceBuffer::<u8>::alloc_async(N, a.as_stream()).unwrap();
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0x11, a.as_stream()).unwrap() };
    a.synchronize().unwrap();

    // Device to host on `b` while a write is still queued on `a`: the copy must see the write.
    spin(a.as_stream());
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0xA5, a.as_stream()).unwrap() };
    let mut back = vec![0u8; N];
    copy::d2h_blocking(&mut back, buf.as_slice(), b.as_stream()).unwrap();
    let seen = back.iter().filter(|&&x| x == 0xA5).count();
    assert_eq!(seen, N, "only {seen} of {N} bytes had the write queued before the copy");

    // Host to device on `b` while a write is still queued on `a`: the copy must land after it.
    spin(a.as_stream());
    // SAFETY: on the buffer's own stream.
    unsafe { copy::memset_async(buf.as_mut_slice(), 0x3C, a.as_stream()).unwrap() };
    let pattern = random_bytes(N, 5);
    copy::h2d_blocking(buf.as_mut_slice(), &pattern, b.as_stream()).unwrap();
    copy::d2h_blocking(&mut back, buf.as_slice(), a.as_stream()).unwrap();
    let kept = back.iter().zip(&pattern).filter(|(x, y)| x == y).count();
    assert_eq!(kept, N, "only {kept} of {N} bytes kept the copy: the queued write landed after it");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_12_blocking_copies_refuse_a_capturing_stream_before_enqueuing() {
    let s = Stream::new().unwrap();
    let other = Stream::new().unwrap();
    let data = random_bytes(N, 9);
    let mut buf = DeviceBuffer::<u8>::alloc_async(N, other.as_stream()).unwrap();
    copy::h2d_blocking(buf.as_mut_slice(), &data, other.as_stream()).unwrap();

    // SAFETY: thread-local mode, on a stream only this test uses; the capture is ended below
    // and its (empty) graph destroyed, never launched.
    let code = unsafe {
        sys::cudaStreamBeginCapture(s.as_raw(), sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal)
    };
    error::check(code, "cudaStreamBeginCapture").unwrap();
    let mut host = vec![7u8; N];
    let e = copy::d2h_blocking(&mut host, buf.as_slice(), s.as_stream()).unwrap_err();
    let e2 = copy::h2d_blocking(buf.as_mut_slice(), &data, s.as_stream()).unwrap_err();
    let mut graph: sys::cudaGraph_t = std::ptr::null_mut();
    // SAFETY: the stream captures; `graph` is writable.
    let end = unsafe { sys::cudaStreamEndCapture(s.as_raw(), &mut graph) };
    let mut nodes = usize::MAX;
    if !graph.is_null() {
        // SAFETY: a graph from the capture; only the count is asked for.
        error::check(unsafe { sys::cudaGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) }, "cudaGraphGetNodes")
            .unwrap();
        // SAFETY: ours, never instantiated.
        unsafe { sys::cudaGraphDestroy(graph) };
    }

    for e in [e, e2] {
        assert!(matches!(e, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{e:?}");
        assert!(e.to_string().contains("capturing"), "{e}");
    }
    // Nothing was enqueued: the capture was not invalidated and holds no node.
    error::check(end, "cudaStreamEndCapture").unwrap();
    assert_eq!(nodes, 0);
    assert!(host.iter().all(|&x| x == 7));
    // Outside the capture the same copy runs.
    copy::d2h_blocking(&mut host, buf.as_slice(), s.as_stream()).unwrap();
    assert!(host == data);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_09_a_free_that_fails_in_drop_is_kept() {
    let _q = drop_queue();
    drop(error::take_drop_errors());
    let s = Stream::new().unwrap();
    let buf = DeviceBuffer::<u8>::alloc_async(N, s.as_stream()).unwrap();
    s.synchronize().unwrap();
    // SAFETY: thread-local mode, on a stream only this test uses; the capture is ended below
    // and its graph destroyed, never launched.
    let code = unsafe {
        sys::cudaStreamBeginCapture(s.as_raw(), sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal)
    };
    error::check(code, "cudaStreamBeginCapture").unwrap();
    drop(buf); // a free of memory from outside the graph, inside the capture
    let mut graph: sys::cudaGraph_t = std::ptr::null_mut();
    // SAFETY: the stream captures; `graph` is writable.
    let end = unsafe { sys::cudaStreamEndCapture(s.as_raw(), &mut graph) };
    if !graph.is_null() {
        // SAFETY: ours, never instantiated.
        unsafe { sys::cudaGraphDestroy(graph) };
    }
    let _ = error::take_last_error();
    let kept = error::take_drop_errors();
    println!("end of capture: {end:?}; kept from drop: {kept:?}");
    assert!(kept.iter().any(|e| e.call() == "cudaFreeAsync" && e.cuda().is_some()), "{kept:?}");
    s.synchronize().unwrap();
}

#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_09_a_launch_refused_for_shared_memory_keeps_cudas_code_with_ordos_hint() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let k = spin_kernel();
    let config = LaunchConfig::new(1, 1).with_shared_mem(100 * 1024);
    // SAFETY: the kernel takes one u64 and touches no memory.
    let e = unsafe { k.launch(s, &config, (0u64,)) }.unwrap_err();
    println!("100 KiB without opt-in: {e}");
    let cuda = e.cuda().unwrap_or_else(|| panic!("expected CUDA's error, got {e:?}"));
    assert!(
        cuda.code() == sys::cudaError::cudaErrorInvalidValue
            || cuda.code() == sys::cudaError::cudaErrorInvalidConfiguration,
        "{cuda:?}"
    );
    assert_eq!(cuda.call(), "cudaLaunchKernelExC");
    assert!(cuda.hint().is_some());
    let text = e.to_string();
    assert!(text.contains("set_max_dynamic_shared_memory"), "{text}");
    assert!(text.contains(cuda.name().to_str().unwrap()), "{text}");
    // Not reported twice, and the launch works once allowed on this device.
    error::peek_last_error().unwrap();
    k.set_max_dynamic_shared_memory_on(Device::current().unwrap(), 100 * 1024).unwrap();
    // SAFETY: as above.
    unsafe { k.launch(s, &config, (0u64,)) }.unwrap();
    stream.synchronize().unwrap();
    // Without a hint for a launch that needs none.
    // SAFETY: as above.
    let e = unsafe { k.launch(s, &LaunchConfig::new(1, 1).with_shared_mem(10 << 20), (0u64,)) }.unwrap_err();
    assert!(e.cuda().is_some(), "{e:?}");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn defect_15_with_current_restores_the_device_when_the_closure_panics() {
    let n = device::count().unwrap();
    let first = Device::from_ordinal(0);
    first.set_current().unwrap();
    // One device: nothing switches, the value comes back.
    assert_eq!(first.with_current(|| Ok(5)).unwrap(), 5);
    if n < 2 {
        println!("one device: the unwind path needs two (run on a two-GPU machine)");
        return;
    }
    let second = Device::from_ordinal(1);
    let caught = std::panic::catch_unwind(|| {
        second
            .with_current(|| -> Result<()> {
                assert_eq!(Device::current().unwrap(), second);
                panic!("boom");
            })
            .unwrap();
    });
    assert!(caught.is_err());
    assert_eq!(Device::current().unwrap(), first, "the panic left device 1 current");
    // New streams land on the restored device.
    let s = Stream::new().unwrap();
    assert_eq!(s.device().unwrap(), first);
    // An error from the closure restores too.
    assert!(second.with_current(|| -> Result<()> { Err(Error::invalid("test", "x")) }).is_err());
    assert_eq!(Device::current().unwrap(), first);
}

#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn order_between_streams_of_two_devices_waits_for_the_earlier_stream() {
    if device::count().unwrap() < 2 {
        println!("one device: the cross-device path needs two (run on a two-GPU machine)");
        return;
    }
    let (d0, d1) = (Device::from_ordinal(0), Device::from_ordinal(1));
    let a = d0.with_current(Stream::new).unwrap();
    let b = d1.with_current(Stream::new).unwrap();
    let probe = d1.with_current(Event::new).unwrap();
    // `later` must not pass a probe before `earlier`'s spin ends. Conclusive only when `earlier` is
    // still busy after the probe was asked (the first cross-device wait can take ~0.1 s to set
    // up); a few tries make that near certain.
    let waits = |ordered: &dyn Fn() -> Result<()>| {
        for _ in 0..5 {
            d0.with_current(|| {
                spin(a.as_stream());
                Ok(())
            })
            .unwrap();
            ordered().unwrap();
            probe.record(b.as_stream()).unwrap();
            let status = probe.query().unwrap();
            let still_busy = a.query().unwrap() == StreamStatus::NotReady;
            probe.synchronize().unwrap();
            if still_busy {
                assert_eq!(status, EventStatus::Pending, "b passed the probe while a still ran");
                return;
            }
        }
        panic!("a always finished before the probe was asked: inconclusive");
    };
    // Whichever device is current, the event is made on the recording stream's device (CUDA
    // records an event only on a stream of its own device).
    for current in [d0, d1] {
        current.set_current().unwrap();
        waits(&|| order::after_origin(Some(a.as_stream()), b.as_stream()));
        // `b` as the buffer's stream: it waits for the work just queued on `a`.
        waits(&|| order::origin_after(Some(b.as_stream()), a.as_stream()));
    }
    d0.set_current().unwrap();
}
