//! Errors: those met in `Drop` are kept in a bounded queue, oldest first, and counted; a hint keeps
//! CUDA's code, name and call; absurd sizes are clear errors before CUDA is called (CPU). A free
//! that fails in `Drop` is kept, and a launch refused for its shared memory keeps CUDA's code with
//! ordo's hint (GPU; the launch uses a kernel loaded at run time from PTX, so this binary needs no
//! nvcc).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error::{self, CudaError};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::*;
use std::sync::{Mutex, MutexGuard};

/// The tests that read or fill the process-wide drop-error queue run one at a time.
static DROP_QUEUE: Mutex<()> = Mutex::new(());

fn drop_queue() -> MutexGuard<'static, ()> {
    DROP_QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// 16M bytes.
const N: usize = 16 << 20;

#[cfg(cuda_library_api)]
#[path = "support/spin.rs"]
mod spin;
#[cfg(cuda_library_api)]
use spin::spin_kernel;

/// Errors met in `Drop` are kept oldest first up to the capacity, the rest counted as lost;
/// taking empties the queue; a library error keeps its detail.
#[test]
fn drop_errors_are_kept_oldest_first_bounded_and_counted() {
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

/// A hint added to CUDA's error keeps its code, name and call, and shows in the text.
#[test]
fn a_hint_keeps_the_cuda_code_name_and_call() {
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

/// Sizes whose bytes overflow, zero-sized element types and launch shapes past what a grid
/// holds are usage errors before CUDA is called.
#[test]
fn absurd_sizes_are_clear_errors_before_cuda() {
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

/// A buffer dropped inside a capture of memory from outside the graph: the free CUDA refuses is
/// kept in the drop-error queue, naming `cudaFreeAsync`.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_free_that_fails_in_drop_is_kept() {
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

/// A launch CUDA refuses for its dynamic shared memory keeps CUDA's code, name and call with
/// ordo's hint, and runs once the kernel is allowed that much.
#[cfg(cuda_library_api)] // the spin kernel is loaded with cudaLibraryLoadData (CUDA 12.8+)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_launch_refused_for_shared_memory_keeps_cudas_code_with_ordos_hint() {
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
