//! The fresh-eyes review of the C ABI (session 5): one regression test per defect it found, each
//! asserting what `include/ordo.h` promises (each failed on the reviewed tree, main at 2d7e4bf),
//! and `sound_*` tests pinning down what it checked and found right. The `gpu_*` tests need a CUDA
//! device (and some NCCL).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use std::sync::atomic::{AtomicUsize, Ordering};

unsafe extern "C" {
    /// `__global__ void ordok_empty()` in ordo-cuda-kernels (linked into ordo).
    fn ordok_empty();
}

fn empty_kernel() -> *const c_void {
    ordok_empty as unsafe extern "C" fn() as *const c_void
}

fn config(size: usize) -> OrdoLaunchConfig {
    OrdoLaunchConfig {
        size,
        grid: [1, 1, 1],
        block: [32, 1, 1],
        shared_mem_bytes: 0,
        pdl: 0,
        has_priority: 0,
        priority: 0,
        cluster: [0, 0, 0],
        cooperative: 0,
        programmatic_event: null_mut(),
        programmatic_event_at_block_start: 0,
        launch_completion_event: null_mut(),
    }
}

// ---- 1. ordo_launch_kernel: a `size` between the two layouts -------------------------------------

/// ordo.h: "Set size to sizeof(ordo_launch_config) (the size of the first layout, up to and
/// including cooperative, is accepted too)", and ORDO_ERROR_INVALID_ARGUMENT is "a zero or
/// mismatched size". `ordo_launch_kernel` (src/ffi/launch.rs:127-140) accepts every size from the
/// first layout's (64) up and copies `min(size, 88)` bytes over a zeroed struct: a size of 65..71
/// copies part of `programmatic_event`, 81..87 part of `launch_completion_event`, so the launch
/// gets an event handle made of the low bytes of the caller's pointer (upper bytes zero), which
/// CUDA then uses as a `cudaEvent_t`: undefined behaviour (a wild pointer inside the driver).
/// Sizes 72..80 silently take the programmatic event but drop the completion event.
///
/// Without a driver the mismatched sizes reach CUDA (status 35) instead of being refused (-1).
#[test]
fn launch_config_sizes_between_the_layouts_are_refused() {
    assert_eq!(ORDO_LAUNCH_CONFIG_FIRST_SIZE, 64);
    assert_eq!(core::mem::size_of::<OrdoLaunchConfig>(), 88);
    let legacy = sys::cudaStreamLegacy();
    let mut accepted = Vec::new();
    for size in 65..core::mem::size_of::<OrdoLaunchConfig>() {
        let mut c = config(size);
        // What a caller of the current header holds: live-looking event handles.
        c.programmatic_event = 0x7f12_3456_0000_1000_usize as sys::cudaEvent_t;
        c.launch_completion_event = 0x7f12_3456_0000_2000_usize as sys::cudaEvent_t;
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &c) };
        if st != ORDO_ERROR_INVALID_ARGUMENT {
            accepted.push((size, st));
        }
    }
    assert!(
        accepted.is_empty(),
        "sizes between the first layout (64) and sizeof (88) were not refused: {accepted:?} \
         (65..71 and 81..87 hand CUDA an event handle built from half a pointer)"
    );
}

/// The two layouts and larger (later) sizes are accepted; smaller ones refused: the control for
/// the test above (a size ordo means to accept reaches CUDA: no driver here, a launch on a GPU).
#[test]
fn sound_launch_config_sizes_of_the_layouts_are_accepted() {
    let legacy = sys::cudaStreamLegacy();
    for size in [0, 8, 63] {
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &config(size)) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "size {size}");
    }
    for size in [64, 88, 96, 4096] {
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &config(size)) };
        assert_ne!(st, ORDO_ERROR_INVALID_ARGUMENT, "size {size}");
        assert!(is_documented(st));
    }
}

// ---- 2. Graph cache calls at thread exit: ORDO_ERROR_PANIC ----------------------------------------

unsafe extern "C" fn nop_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    ORDO_SUCCESS
}

static EXIT_STATUS: std::sync::Mutex<Vec<(&'static str, OrdoStatus)>> = std::sync::Mutex::new(Vec::new());

fn run_cache(cache: usize) -> OrdoStatus {
    unsafe { ordo_graph_cache_run(cache as *mut OrdoGraphCache, sys::cudaStreamLegacy(), 1, null_mut()) }
}

struct RunAtExit(usize);
impl Drop for RunAtExit {
    fn drop(&mut self) {
        EXIT_STATUS.lock().unwrap().push(("thread_local destructor", run_cache(self.0)));
    }
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<RunAtExit>> = const { std::cell::RefCell::new(None) };
}

type PthreadKey = u32;
unsafe extern "C" {
    fn pthread_key_create(key: *mut PthreadKey, dtor: Option<unsafe extern "C" fn(*mut c_void)>) -> i32;
    fn pthread_setspecific(key: PthreadKey, value: *const c_void) -> i32;
}

/// A C library's per-thread cleanup: a pthread key destructor (they run after every thread_local
/// destructor, glibc's `__call_tls_dtors` then `__nptl_deallocate_tsd`).
unsafe extern "C" fn key_dtor(cache: *mut c_void) {
    EXIT_STATUS.lock().unwrap().push(("pthread key destructor", run_cache(cache as usize)));
}

/// ordo.h: "Every function may be called from any thread"; ORDO_ERROR_PANIC is for "a Rust panic
/// caught at the boundary". `handles::enter_call` (src/ffi/handles.rs:92, `IN_CALL.with`) reads a
/// thread-local that has a destructor with `with`, which panics once that destructor has run.
/// So `ordo_graph_cache_run` and `ordo_graph_cache_capture_all` called from thread-exit cleanup
/// (a C++ `thread_local` destructor registered before ordo's, or any pthread key destructor, as C
/// libraries clean up per-thread state) panic inside ordo and return ORDO_ERROR_PANIC (the panic
/// message goes to stderr; the last-error record is not written either, its TLS is gone too), where
/// the same call earlier in the thread's life does its work (here, without a driver: CUDA's 35).
#[test]
fn graph_cache_run_from_thread_exit_cleanup_is_refused_not_a_panic() {
    let mut cache: *mut OrdoGraphCache = null_mut();
    let st = unsafe { ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut cache) };
    assert_eq!(st, ORDO_SUCCESS);
    let token = cache as usize;
    let during = std::thread::spawn(move || {
        // The key's destructor and a thread_local registered before ordo's own thread-locals.
        let mut key: PthreadKey = 0;
        assert_eq!(unsafe { pthread_key_create(&mut key, Some(key_dtor)) }, 0);
        assert_eq!(unsafe { pthread_setspecific(key, token as *const c_void) }, 0);
        AT_EXIT.with(|a| *a.borrow_mut() = Some(RunAtExit(token)));
        run_cache(token) // the thread's ordinary call: registers ordo's IN_CALL destructor
    })
    .join()
    .unwrap();
    ordo_graph_cache_destroy(cache);
    let at_exit = EXIT_STATUS.lock().unwrap().clone();
    println!("during the thread: {during}; at exit: {at_exit:?}");
    assert_ne!(during, ORDO_ERROR_PANIC);
    assert_eq!(at_exit.len(), 2, "both cleanups ran");
    for (what, st) in at_exit {
        assert_ne!(st, ORDO_ERROR_PANIC, "{what}: ordo_graph_cache_run panicked inside ordo");
        // ordo.h (THREADS): refused there, where its callback's re-entry cannot be guarded.
        assert_eq!(st, ORDO_ERROR_NOT_SUPPORTED, "{what}");
    }
}

// ---- 3. include/ordo/pdl.cuh: the documented loop wraps for grids ordo_pdl_plan_launch returns ---

/// The index sequence of one thread of pdl.cuh's documented body
///     for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
/// (unsigned arithmetic, modulo 2^32): the first index it would use outside [0, n), if any.
fn first_out_of_bounds(thread: u32, stride: u32, n: i32) -> Option<u64> {
    let n = n as u32;
    let mut i = thread;
    while i < n {
        let next = i.wrapping_add(stride);
        if next < i {
            return Some(u64::from(i) + u64::from(stride)); // wrapped: it would restart below n
        }
        i = next;
    }
    None
}

/// The review found that pdl.cuh's example body used an `int` index, which wraps negative past
/// 2^31 and still passes `i < n`, for grids `ordo_pdl_plan_launch` returns (full grids above about
/// 2^30 elements, the one-wave grid near 2^31): a write out of bounds. The example now indexes
/// unsigned, as ordo's own chain kernel does; this checks, with the plans' own grids, that its
/// loop never wraps for any n a plan allows.
#[test]
fn pdl_cuh_example_loop_stays_in_bounds_for_planned_grids() {
    use ordo_cuda_core::launch::{BeyondOneWave, PdlMode, PdlPlan};
    // Embedded at compile time: the test binary runs on machines that have no source tree.
    let header = include_str!("../../core/include/ordo/pdl.cuh");
    assert!(header.contains("for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n;"));
    let one_wave = 132 * 8; // an H200: 132 SMs, 8 blocks of 256 threads each
    let mut bad = Vec::new();
    for (n, mode) in [
        ((1usize << 30) + (1 << 29), PdlMode::Plain),
        ((1usize << 30) + (1 << 29), PdlMode::PdlFullGrid),
        (i32::MAX as usize, PdlMode::Plain),
        (i32::MAX as usize, PdlMode::Auto),
        (i32::MAX as usize, PdlMode::PlainOneWave),
    ] {
        let plan = PdlPlan::for_elements(n, 256, one_wave, mode, BeyondOneWave::default()).unwrap();
        let stride = plan.grid() * 256;
        // The last thread of the grid is the one whose next index wraps first.
        if let Some(i) = first_out_of_bounds(stride - 1, stride, n as i32) {
            bad.push((n, mode, plan.grid(), i));
        }
    }
    assert!(bad.is_empty(), "(n, mode, grid, index past 2^32 the documented loop would reach): {bad:?}");
}

// ---- 4. Things checked and found sound (CPU) ------------------------------------------------------

static FREED: AtomicUsize = AtomicUsize::new(0);
unsafe extern "C" fn count_free(user: *mut c_void) {
    assert_eq!(user as usize, 0xf00d);
    FREED.fetch_add(1, Ordering::SeqCst);
}

/// The finalizer runs exactly once on every failing path after the options were read, and not at
/// all when they could not be (NULL, misaligned, too small a size), as ordo.h says.
#[test]
fn sound_user_free_runs_once_on_every_failure_after_the_options_were_read() {
    let good = OrdoGraphCacheOptions {
        size: core::mem::size_of::<OrdoGraphCacheOptions>(),
        capture_mode: ORDO_CAPTURE_GLOBAL,
        warmup: 0,
        overflow_eager: 0,
        instantiate_flags: 0,
        user_free: Some(count_free),
    };
    let user = 0xf00d as *mut c_void;
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let raw = [0u64; 8];
    let misaligned_usize = unsafe { raw.as_ptr().cast::<u8>().add(4).cast::<usize>() };
    let cases: Vec<(&str, *const usize, usize, OrdoGraphCacheOptions, OrdoCaptureFn, bool, usize)> = vec![
        ("null out", null(), 0, good, Some(nop_body), false, 1),
        ("null body", null(), 0, good, None, true, 1),
        ("null buckets", null(), 3, good, Some(nop_body), true, 1),
        ("misaligned buckets", misaligned_usize, 2, good, Some(nop_body), true, 1),
        ("count overflows", [1usize].as_ptr(), usize::MAX / 4, good, Some(nop_body), true, 1),
        ("decreasing buckets", [4usize, 2].as_ptr(), 2, good, Some(nop_body), true, 1),
        ("bad mode", null(), 0, OrdoGraphCacheOptions { capture_mode: 7, ..good }, Some(nop_body), true, 1),
        ("bad flags", null(), 0, OrdoGraphCacheOptions { instantiate_flags: 4, ..good }, Some(nop_body), true, 1),
        ("size too small", null(), 0, OrdoGraphCacheOptions { size: 8, ..good }, Some(nop_body), true, 0),
    ];
    for (what, buckets, n, options, body, out_ok, frees) in cases {
        let before = FREED.load(Ordering::SeqCst);
        let mut cache: *mut OrdoGraphCache = null_mut();
        let out = if out_ok { &mut cache as *mut _ } else { null_mut() };
        let st = unsafe { ordo_graph_cache_create_with_options(buckets, n, &options, body, user, out) };
        assert_eq!(st, ia, "{what}");
        assert!(cache.is_null(), "{what}");
        assert_eq!(FREED.load(Ordering::SeqCst) - before, frees, "{what}: finalizer calls");
    }
    // A live cache: once, at the last destroy, not at a wrong-kind destroy.
    let before = FREED.load(Ordering::SeqCst);
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(
        unsafe { ordo_graph_cache_create_with_options(null(), 0, &good, Some(nop_body), user, &mut cache) },
        ORDO_SUCCESS
    );
    ordo_timer_destroy(cache.cast());
    ordo_staging_ring_destroy(cache.cast());
    ordo_nccl_comm_destroy(cache.cast());
    assert_eq!(FREED.load(Ordering::SeqCst), before);
    ordo_graph_cache_destroy(cache);
    ordo_graph_cache_destroy(cache);
    assert_eq!(FREED.load(Ordering::SeqCst), before + 1);
}

/// ordo_last_error and ordo_last_error_message: sizes, truncation, NUL termination, nothing
/// written past the caller's struct or buffer.
#[test]
fn sound_last_error_buffers_and_sizes() {
    ordo_clear_last_error();
    // A failure to record: a null stream.
    let st = unsafe { ordo_launch_kernel(null_mut(), empty_kernel(), null_mut(), &config(88)) };
    assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
    let full = unsafe { ordo_last_error_message(null_mut(), 0) };
    assert!(full > 8);
    for len in [1usize, 2, 7, full, full + 1, full + 5] {
        let mut buf = vec![0x55u8 as core::ffi::c_char; len + 8];
        let got = unsafe { ordo_last_error_message(buf.as_mut_ptr(), len) };
        assert_eq!(got, full);
        let written = buf[..len].iter().position(|&c| c == 0).expect("NUL-terminated");
        assert_eq!(written, full.min(len - 1));
        assert!(buf[len..].iter().all(|&c| c == 0x55u8 as core::ffi::c_char), "nothing past len {len}");
    }
    // The record: refused below sizeof (nothing written), filled at sizeof, tail left alone above.
    #[repr(C)]
    struct Bigger {
        info: OrdoErrorInfo,
        tail: [u64; 4],
    }
    let mut b: Bigger = unsafe { core::mem::zeroed() };
    b.tail = [0x1234; 4];
    b.info.size = core::mem::size_of::<OrdoErrorInfo>() - 1;
    b.info.status = 77;
    assert_eq!(unsafe { ordo_last_error(&mut b.info) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(b.info.status, 77, "nothing written");
    b.info.size = core::mem::size_of::<Bigger>();
    assert_eq!(unsafe { ordo_last_error(&mut b.info) }, ORDO_SUCCESS);
    assert_eq!(b.info.status, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(b.info.size, core::mem::size_of::<Bigger>(), "the caller's size kept");
    assert_eq!(b.tail, [0x1234; 4], "fields past this version's struct untouched");
    assert_eq!(b.info.message[ORDO_LAST_ERROR_MESSAGE_LEN - 1], 0);
    let misaligned = unsafe { (&mut b as *mut Bigger).cast::<u8>().add(4).cast::<OrdoErrorInfo>() };
    assert_eq!(unsafe { ordo_last_error(misaligned) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { ordo_last_error(null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
    ordo_clear_last_error();
    assert_eq!(unsafe { ordo_last_error_message(null_mut(), 0) }, 0);
}

/// ordo_pdl_plan_launch refuses every bad argument before CUDA and writes nothing then.
#[test]
fn sound_pdl_plan_launch_checks_before_cuda() {
    let k = empty_kernel();
    let ok = OrdoPdlPlan {
        size: core::mem::size_of::<OrdoPdlPlan>(),
        use_pdl_form: 9,
        grid: 9,
        full_blocks: 9,
        one_wave_blocks: 9,
    };
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    for (what, plain, pdl, device, n, block, mode, size) in [
        ("null plain", null(), k, 0, 10, 256, 0, 24),
        ("null pdl", k, null(), 0, 10, 256, 0, 24),
        ("negative device", k, k, -1, 10, 256, 0, 24),
        ("zero n", k, k, 0, 0, 256, 0, 24),
        ("zero block", k, k, 0, 10, 0, 0, 24),
        ("big block", k, k, 0, 10, 1025, 0, 24),
        ("n past 2^31 threads", k, k, 0, (1usize << 31) + 1, 256, 0, 24),
        ("n max", k, k, 0, usize::MAX, 1, 0, 24),
        ("mode", k, k, 0, 10, 256, 6, 24),
        ("mode -1", k, k, 0, 10, 256, -1, 24),
        ("small size", k, k, 0, 10, 256, 0, 23),
    ] {
        let mut out = OrdoPdlPlan { size, ..ok };
        let st = unsafe { ordo_pdl_plan_launch(plain, pdl, device, n, block, mode, &mut out) };
        assert_eq!(st, ia, "{what}");
        assert_eq!((out.grid, out.use_pdl_form), (9, 9), "{what}: nothing written");
    }
}

// ---- 5. GPU reproducers (written, not run: the review machine has no GPU) ------------------------

/// A graph-cache body and a pipeline compute that return ORDO_NOT_READY (cudaErrorNotReady, 600):
/// the export returns 600 unchanged (status.rs:119 passes documented callback statuses through), which
/// ORDO_FAILED counts as no failure, and the guard (status.rs:162-168) then leaves the last-error
/// record untouched. But nothing ran: the bucket was not captured or replayed (bucket_out is not
/// written), the pipeline stopped after its first chunk. ordo.h says ORDO_NOT_READY is "not a
/// failure: the answer 'not yet'" of a ring acquire or a timer; a caller testing ORDO_FAILED takes
/// the failed run for a success. (Any callback status the caller's own CUDA call returned is
/// passed on, so a callback that forwards cudaStreamQuery's answer hits this.)
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_callback_returning_not_ready_is_a_failure() {
    unsafe extern "C" fn not_ready_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
        ORDO_NOT_READY
    }
    unsafe extern "C" fn not_ready_compute(
        _: sys::cudaStream_t,
        _: *const f32,
        _: *mut f32,
        _: usize,
        _: *mut c_void,
    ) -> OrdoStatus {
        ORDO_NOT_READY
    }
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    // Graph cache.
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 0, Some(not_ready_body), null_mut(), &mut cache) }, 0);
    ordo_clear_last_error();
    let mut bucket = 12345usize;
    let st = unsafe { ordo_graph_cache_run(cache, stream, 3, &mut bucket) };
    let recorded = unsafe { ordo_last_error_message(null_mut(), 0) };
    ordo_graph_cache_destroy(cache);
    assert_eq!(bucket, 12345, "nothing ran: bucket_out not written");
    assert!(
        st != ORDO_NOT_READY && st != ORDO_SUCCESS,
        "ordo_graph_cache_run returned {st}: ORDO_FAILED says no failure, though nothing ran"
    );
    assert!(recorded > 0, "the failure is in the last-error record");
    // Pipeline.
    let n = 1024;
    let (mut hi, mut ho, mut di, mut dout) = (null_mut(), null_mut(), null_mut(), null_mut());
    unsafe {
        assert_eq!(sys::cudaMallocHost(&mut hi, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMallocHost(&mut ho, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMalloc(&mut di, n * 4), sys::cudaError::cudaSuccess);
        assert_eq!(sys::cudaMalloc(&mut dout, n * 4), sys::cudaError::cudaSuccess);
    }
    ordo_clear_last_error();
    let st = unsafe {
        ordo_pipeline_run(
            stream,
            hi.cast(),
            di.cast(),
            dout.cast(),
            ho.cast(),
            n,
            4,
            Some(not_ready_compute),
            null_mut(),
        )
    };
    let recorded = unsafe { ordo_last_error_message(null_mut(), 0) };
    unsafe {
        sys::cudaStreamSynchronize(stream);
        sys::cudaFreeHost(hi);
        sys::cudaFreeHost(ho);
        sys::cudaFree(di);
        sys::cudaFree(dout);
        sys::cudaStreamDestroy(stream);
    }
    assert!(st != ORDO_NOT_READY && st != ORDO_SUCCESS, "ordo_pipeline_run returned {st} after one chunk of four");
    assert!(recorded > 0, "the failure is in the last-error record");
}

/// A callback that passes on a sticky CUDA code (700, cudaErrorIllegalAddress, as its own CUDA
/// call reported it): the export returns 700 and ordo_status_is_sticky(700) is 1, but the record
/// says sticky 0 and cuda_error 0 (last_error.rs:71,76: the callback's status is a Library error,
/// whose is_sticky() and cuda_code() are false/None). ordo.h: "sticky: 1 when the error is sticky".
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_callback_sticky_status_is_recorded_as_sticky() {
    unsafe extern "C" fn sticky_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
        700
    }
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    let mut cache: *mut OrdoGraphCache = null_mut();
    assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 1, Some(sticky_body), null_mut(), &mut cache) }, 0);
    let st = unsafe { ordo_graph_cache_run(cache, stream, 1000, null_mut()) }; // overflow: eager
    ordo_graph_cache_destroy(cache);
    unsafe { sys::cudaStreamDestroy(stream) };
    assert_eq!(st, 700);
    let mut info: OrdoErrorInfo = unsafe { core::mem::zeroed() };
    info.size = core::mem::size_of::<OrdoErrorInfo>();
    assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
    assert_eq!(ordo_status_is_sticky(st), 1);
    assert_eq!(info.sticky, ordo_status_is_sticky(info.status), "record {:?}", (info.status, info.cuda_error));
}

/// The size-68 case of the first test with a real event: ordo builds the handle from the low four
/// bytes of the event's address and CUDA dereferences it. Expected on main: a crash (SIGSEGV in
/// the driver) or a garbage status; the header promises ORDO_ERROR_INVALID_ARGUMENT.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_launch_config_size_68_is_refused_with_real_events() {
    let mut e: sys::cudaEvent_t = null_mut();
    assert_eq!(
        unsafe { sys::cudaEventCreateWithFlags(&mut e, sys::cudaEventDisableTiming) },
        sys::cudaError::cudaSuccess
    );
    let mut c = config(68);
    c.programmatic_event = e;
    c.launch_completion_event = e;
    let st = unsafe { ordo_launch_kernel(sys::cudaStreamLegacy(), empty_kernel(), null_mut(), &c) };
    c.size = 84;
    let st84 = unsafe { ordo_launch_kernel(sys::cudaStreamLegacy(), empty_kernel(), null_mut(), &c) };
    unsafe { sys::cudaDeviceSynchronize() };
    unsafe { sys::cudaEventDestroy(e) };
    assert_eq!((st, st84), (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_ARGUMENT));
}

/// A launch that passes ordo's checks but that CUDA refuses (dynamic shared memory over 48 KiB
/// without the opt-in) inside the caller's capture. ordo.h (CAPTURES): "the work is captured ...
/// and the capture stays valid, or the call is refused with a documented status without touching
/// the capture". Suspected: CUDA invalidates the capture on the refused launch (random_calls.rs
/// avoids exactly these launches inside captures: "A capture is only given launches that ordo
/// refuses or CUDA takes, so that the caller's capture stays valid").
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_launch_cuda_refuses_inside_a_capture() {
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    let mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal;
    assert_eq!(unsafe { sys::cudaStreamBeginCapture(stream, mode) }, sys::cudaError::cudaSuccess);
    let mut c = config(88);
    c.shared_mem_bytes = 200 * 1024;
    let st = unsafe { ordo_launch_kernel(stream, empty_kernel(), null_mut(), &c) };
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    unsafe { sys::cudaStreamIsCapturing(stream, &mut status) };
    let mut graph: sys::cudaGraph_t = null_mut();
    let end = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }
    unsafe { sys::cudaGetLastError() };
    unsafe { sys::cudaStreamDestroy(stream) };
    // What CUDA does to the capture is CUDA's (ordo.h says so at ordo_launch_kernel): printed
    // for the record; what ordo owes is a documented, non-sticky refusal.
    println!("a launch CUDA refuses inside a capture: status {st}; capture after it {status:?}; end {end:?}");
    assert_ne!(st, ORDO_SUCCESS);
    assert!(is_documented(st) && ordo_status_is_sticky(st) == 0, "{st}");
}

// ---- 6. NCCL (GPU and libnccl.so.2; written, not run) -----------------------------------------

/// A unique id, or `None` where NCCL cannot be loaded.
fn nccl_id() -> Option<[u8; ORDO_NCCL_UNIQUE_ID_BYTES]> {
    let mut id = [0u8; ORDO_NCCL_UNIQUE_ID_BYTES];
    let st = unsafe { ordo_nccl_get_unique_id(id.as_mut_ptr(), id.len()) };
    if st == ORDO_ERROR_NOT_SUPPORTED {
        println!("skipped: NCCL not loadable");
        return None;
    }
    assert_eq!(st, ORDO_SUCCESS, "ordo_nccl_get_unique_id");
    Some(id)
}

/// A one-rank communicator on device 0 and a stream there.
fn one_rank() -> Option<(*mut OrdoNcclComm, sys::cudaStream_t)> {
    let id = nccl_id()?;
    assert_eq!(unsafe { sys::cudaSetDevice(0) }, sys::cudaError::cudaSuccess);
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    let mut comm = null_mut();
    assert_eq!(unsafe { ordo_nccl_comm_init_rank(0, 1, id.as_ptr(), id.len(), 0, &mut comm) }, ORDO_SUCCESS);
    Some((comm, stream))
}

/// ordo.h CAPTURES: "Every function may be called while the stream it is given is being captured
/// ... the call is refused with a documented status without touching the capture".
/// `ordo_nccl_comm_wait` (src/ffi/nccl.rs:135-151) polls `Communicator::wait`, which calls
/// `cudaStreamQuery` on the stream (kernels/src/nccl/comm.rs:360): on a capturing stream CUDA
/// refuses the query and invalidates the capture (in every mode). The export ignores that error
/// (`is_ok()`), keeps polling until `timeout_ms` has passed, and returns ORDO_ERROR_LIBRARY
/// (ncclTimeout); the caller's capture is gone. Expected: ORDO_ERROR_STREAM_CAPTURING, capture
/// intact. The same loop also hides any CUDA error of the stream (a sticky 700 included) behind a
/// full timeout and ORDO_ERROR_LIBRARY.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_wait_on_a_capturing_stream_is_refused() {
    let Some((comm, stream)) = one_rank() else { return };
    let mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal;
    assert_eq!(unsafe { sys::cudaStreamBeginCapture(stream, mode) }, sys::cudaError::cudaSuccess);
    let t = std::time::Instant::now();
    let st = unsafe { ordo_nccl_comm_wait(comm, stream, 200) };
    let waited = t.elapsed();
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    unsafe { sys::cudaStreamIsCapturing(stream, &mut status) };
    let mut graph: sys::cudaGraph_t = null_mut();
    let end = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }
    ordo_nccl_comm_destroy(comm);
    unsafe { sys::cudaStreamDestroy(stream) };
    println!("status {st} after {waited:?}; capture {status:?}; end {end:?}");
    assert_eq!(st, ORDO_ERROR_STREAM_CAPTURING);
    assert_eq!(status, sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive, "the capture was invalidated");
    assert_eq!(end, sys::cudaError::cudaSuccess);
}

/// ordo.h STATUS CODES: "zero sizes ... give ORDO_ERROR_INVALID_ARGUMENT before anything is
/// enqueued (one exception, said at ordo_graph_cache_run)". The NCCL collectives check pointers
/// and byte counts (`typed`, src/ffi/nccl.rs:165-190) but not a zero count, which reaches NCCL.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_zero_count_is_refused() {
    let Some((comm, stream)) = one_rank() else { return };
    let mut d: *mut c_void = null_mut();
    assert_eq!(unsafe { sys::cudaMalloc(&mut d, 1024) }, sys::cudaError::cudaSuccess);
    let f32t = ORDO_NCCL_FLOAT32;
    let sts = unsafe {
        [
            ordo_nccl_all_reduce(comm, d, d, 0, f32t, ORDO_NCCL_SUM, stream),
            ordo_nccl_broadcast(comm, d, d, 0, f32t, 0, stream),
            ordo_nccl_reduce(comm, d, d, 0, f32t, ORDO_NCCL_SUM, 0, stream),
            ordo_nccl_all_gather(comm, d, d, 0, f32t, stream),
            ordo_nccl_reduce_scatter(comm, d, d, 0, f32t, ORDO_NCCL_SUM, stream),
        ]
    };
    unsafe { sys::cudaStreamSynchronize(stream) };
    ordo_nccl_comm_destroy(comm);
    unsafe {
        sys::cudaFree(d);
        sys::cudaStreamDestroy(stream);
    }
    assert_eq!(sts, [ORDO_ERROR_INVALID_ARGUMENT; 5]);
}

/// ordo.h: "wait: waits at most timeout_ms for the work on `stream`, polling the communicator's
/// health, so that a dead peer gives ORDO_ERROR_LIBRARY instead of a hang"; THREADS: "No other
/// call waits for the device or for another thread". ordo holds the device's NCCL lock
/// (`device_lock`, kernels/src/nccl/comm.rs:108) across `ncclCommInitRank`
/// (comm.rs:153-157), which blocks until every rank has joined, and across `ncclCommDestroy`
/// (comm.rs:399-401), which waits for the queued collectives of every rank. Meanwhile every other
/// NCCL call ordo makes for that device blocks on the lock: `ordo_nccl_comm_wait` on another,
/// healthy communicator (its health poll, `ncclCommGetAsyncError`, takes the lock) ignores its
/// timeout, and a watchdog's `ordo_nccl_comm_abort` of any communicator of the device hangs too.
/// Here: rank 0 of a two-rank communicator whose rank 1 never joins (a peer that died before
/// joining) blocks thread A; thread B's 100 ms wait on a one-rank communicator of the same device
/// never returns. The scenario runs in a child process (this binary, run again with
/// ORDO_BREAK14_CHILD=1), since it leaves device 0's NCCL lock held for good.
/// Two communicators initialised from two threads in opposite orders on two ranks deadlock the
/// same way, where NCCL alone would make both.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_wait_keeps_its_timeout_while_another_thread_inits_on_the_device() {
    const NAME: &str = "gpu_nccl_wait_keeps_its_timeout_while_another_thread_inits_on_the_device";
    if std::env::var_os("ORDO_BREAK14_CHILD").is_some() {
        let code = nccl_wait_child();
        std::process::exit(code); // the blocked threads go with the process
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--include-ignored"])
        .env("ORDO_BREAK14_CHILD", "1")
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let status = status.expect("child hung past 60 s");
    assert!(status.success(), "child: {status:?} (2: the wait was still blocked after 10 s)");
}

/// The child's scenario: 0 when the wait came back in time (or NCCL is missing), 2 when it hung.
fn nccl_wait_child() -> i32 {
    let Some((comm, stream)) = one_rank() else { return 0 };
    let Some(id2) = nccl_id() else { return 0 };
    std::thread::spawn(move || {
        let mut c = null_mut();
        // Rank 0 of 2; rank 1 never comes.
        let st = unsafe { ordo_nccl_comm_init_rank(0, 2, id2.as_ptr(), id2.len(), 0, &mut c) };
        println!("init of the two-rank communicator returned {st}");
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let (tx, rx) = std::sync::mpsc::channel();
    let (comm_token, stream_token) = (comm as usize, stream as usize);
    std::thread::spawn(move || {
        let t = std::time::Instant::now();
        let st = unsafe { ordo_nccl_comm_wait(comm_token as *mut _, stream_token as sys::cudaStream_t, 100) };
        let _ = tx.send((st, t.elapsed()));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok((st, took)) => {
            println!("wait returned {st} after {took:?}");
            i32::from(st != ORDO_SUCCESS || took > std::time::Duration::from_secs(2))
        }
        Err(_) => {
            println!("ordo_nccl_comm_wait(timeout 100 ms) still blocked after 10 s");
            2
        }
    }
}
