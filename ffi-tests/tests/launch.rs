//! `ordo_launch_kernel` and `ordo_pdl_plan_launch` through the C ABI: the launch configuration is
//! read only at the sizes of its three layouts (or larger), so that a size between them cannot hand
//! CUDA half an event pointer; the third layout's memory-synchronisation domain and preferred
//! cluster reach the launch (and a captured launch's node); a launch CUDA refuses inside the
//! caller's capture is a documented, non-sticky status; the plan refuses every bad argument before
//! CUDA; and the grid-stride loop that `pdl.cuh` documents stays in bounds for every grid a plan
//! returns. Their `_resolved` forms (the caller's `cudaGetKernel`, for a program with its own copy
//! of the CUDA runtime) refuse what the plain ones refuse without asking the resolver, and ask it
//! once a kernel; a resolver that fails for a kernel does not stop another from being asked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::{c_int, c_void};
use core::ptr::{null, null_mut};
use core::sync::atomic::{AtomicUsize, Ordering};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::launch::{config, empty_kernel};

const FULL: usize = core::mem::size_of::<OrdoLaunchConfig>();

/// Every `size` between the layouts' (64, 88) and `sizeof(ordo_launch_config)` (104) is refused
/// with `ORDO_ERROR_INVALID_ARGUMENT` (ordo.h): 65..71 and 81..87 would otherwise hand CUDA an
/// event handle made of half a pointer, 72..80 drop the completion event, 89..103 read part of the
/// domain or of the preferred cluster dimensions.
#[test]
fn launch_config_sizes_between_the_layouts_are_refused() {
    assert_eq!(ORDO_LAUNCH_CONFIG_FIRST_SIZE, 64);
    assert_eq!(ORDO_LAUNCH_CONFIG_SECOND_SIZE, 88);
    assert_eq!(FULL, 104);
    let legacy = sys::cudaStreamLegacy();
    let mut accepted = Vec::new();
    for size in (65..FULL).filter(|&size| size != ORDO_LAUNCH_CONFIG_SECOND_SIZE) {
        let mut c = config(size);
        // What a caller of the current header holds: live-looking event handles, a domain.
        c.programmatic_event = 0x7f12_3456_0000_1000_usize as sys::cudaEvent_t;
        c.launch_completion_event = 0x7f12_3456_0000_2000_usize as sys::cudaEvent_t;
        c.mem_sync_domain = ORDO_MEM_SYNC_DOMAIN_REMOTE;
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &c) };
        if st != ORDO_ERROR_INVALID_ARGUMENT {
            accepted.push((size, st));
        }
    }
    assert!(
        accepted.is_empty(),
        "sizes between the layouts (64, 88) and sizeof (104) were not refused: {accepted:?} \
         (65..71 and 81..87 hand CUDA an event handle built from half a pointer)"
    );
}

/// The three layouts' sizes and larger (later) ones are accepted, smaller ones refused: the
/// control of the test above (a size ordo accepts reaches CUDA).
#[test]
fn launch_config_sizes_of_the_layouts_are_accepted() {
    let legacy = sys::cudaStreamLegacy();
    for size in [0, 8, 63] {
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &config(size)) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "size {size}");
    }
    for size in [64, 88, 104, 112, 4096] {
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &config(size)) };
        assert_ne!(st, ORDO_ERROR_INVALID_ARGUMENT, "size {size}");
        assert!(is_documented(st));
    }
}

/// A domain out of range is refused before CUDA at the third layout's size, and not read at the
/// second's (a caller of the older header has no such field: its bytes are not the domain).
#[test]
fn a_domain_out_of_range_is_refused_where_the_layout_has_it() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let legacy = sys::cudaStreamLegacy();
    for domain in [3, -1, i32::MAX] {
        let c = OrdoLaunchConfig { mem_sync_domain: domain, ..config(FULL) };
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &c) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "domain {domain}");
        let older = OrdoLaunchConfig { size: ORDO_LAUNCH_CONFIG_SECOND_SIZE, ..c };
        let st = unsafe { ordo_launch_kernel(legacy, empty_kernel(), null_mut(), &older) };
        assert!(st != ORDO_ERROR_INVALID_ARGUMENT && is_documented(st), "domain {domain} at the second size: {st}");
    }
}

/// Sizes 68 and 84 with real events are refused before CUDA (where half the event's address
/// would reach the driver).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_launch_config_sizes_between_the_layouts_are_refused_with_real_events() {
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
/// without the opt-in) inside the caller's capture returns a documented, non-sticky status; what
/// CUDA does to the capture is printed (`docs/cuda-behaviours.md`, CB-10).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_launch_cuda_refuses_inside_a_capture_is_a_documented_non_sticky_status() {
    // The lock and a non-blocking stream: a capture of a blocking stream makes other tests' calls
    // on the legacy stream fail with cudaErrorStreamCaptureImplicit (906) while it is open.
    let _gpu = ordo_ffi_tests::gpu_lock();
    let mut stream: sys::cudaStream_t = null_mut();
    let flags = sys::cudaStreamNonBlocking;
    assert_eq!(unsafe { sys::cudaStreamCreateWithFlags(&mut stream, flags) }, sys::cudaError::cudaSuccess);
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

/// `ordo_pdl_plan_launch` refuses every bad argument before CUDA, and writes nothing then.
#[test]
fn pdl_plan_launch_refuses_bad_arguments_before_cuda() {
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

/// `pdl.cuh`'s documented grid-stride loop (an unsigned index) never wraps for the grids
/// `ordo_pdl_plan_launch` returns, up to n = 2^31 - 1 (an `int` index wraps negative past 2^31 and
/// still passes `i < n`: a write out of bounds).
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

/// A resolver that counts its calls in `COUNT` and asks this binary's CUDA runtime (the one ordo
/// uses here: the test binaries hold one runtime, so it stands in for a program's own).
macro_rules! counting_resolver {
    ($name:ident, $count:ident) => {
        static $count: AtomicUsize = AtomicUsize::new(0);
        unsafe extern "C" fn $name(kernel: *mut sys::cudaKernel_t, entry: *const c_void) -> c_int {
            $count.fetch_add(1, Ordering::Relaxed);
            let code = unsafe { sys::cudaGetKernel(kernel, entry) };
            if code != sys::cudaError::cudaSuccess {
                unsafe { sys::cudaGetLastError() };
            }
            code.0 as c_int
        }
    };
}

counting_resolver!(refusals_resolver, REFUSALS_ASKED);

/// A plan with its size set, nothing else.
fn empty_plan() -> OrdoPdlPlan {
    OrdoPdlPlan {
        size: core::mem::size_of::<OrdoPdlPlan>(),
        use_pdl_form: 0,
        grid: 0,
        full_blocks: 0,
        one_wave_blocks: 0,
    }
}

/// The `_resolved` exports refuse what the plain ones refuse, before asking the resolver; with a
/// NULL resolver, or one whose runtime has no driver here, they return what the plain ones return.
#[test]
fn resolved_exports_refuse_what_the_plain_ones_refuse_without_asking() {
    let legacy = sys::cudaStreamLegacy();
    let k = empty_kernel();
    let r: OrdoKernelResolverFn = Some(refusals_resolver);
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let mut zero_grid = config(88);
    zero_grid.grid = [0, 1, 1];
    for (what, stream, kernel, c) in [
        ("null stream", null_mut(), k, config(88)),
        ("null kernel", legacy, null(), config(88)),
        ("size between the layouts", legacy, k, config(70)),
        ("zero grid", legacy, k, zero_grid),
    ] {
        assert_eq!(unsafe { ordo_launch_kernel_resolved(stream, kernel, null_mut(), &c, r) }, ia, "{what}");
        assert_eq!(unsafe { ordo_launch_kernel(stream, kernel, null_mut(), &c) }, ia, "{what}");
    }
    let mut plan = empty_plan();
    for (what, plain, pdl, n, mode) in [
        ("null plain", null(), k, 10, 0),
        ("null pdl", k, null(), 10, 0),
        ("zero n", k, k, 0, 0),
        ("mode", k, k, 10, 9),
    ] {
        let st = unsafe { ordo_pdl_plan_launch_resolved(plain, pdl, 0, n, 256, mode, &mut plan, r) };
        assert_eq!(st, ia, "{what}");
    }
    assert_eq!(REFUSALS_ASKED.load(Ordering::Relaxed), 0, "a resolver asked for a refused call");
    // A valid call: the same status as the plain export's (no driver here: CUDA's; on a GPU, success).
    let plain = unsafe { ordo_launch_kernel(legacy, k, null_mut(), &config(88)) };
    let with_none = unsafe { ordo_launch_kernel_resolved(legacy, k, null_mut(), &config(88), None) };
    let with_resolver = unsafe { ordo_launch_kernel_resolved(legacy, k, null_mut(), &config(88), r) };
    assert_eq!((with_none, with_resolver), (plain, plain));
    assert!(is_documented(plain), "{plain}");
    unsafe { sys::cudaDeviceSynchronize() };
}

extern "C" {
    /// `__global__ void ordok_add_one(float* x, int n)` in ordo-cuda-kernels: x[i] += 1.
    fn ordok_add_one(x: *mut f32, n: i32);
    /// `__global__ void ordok_square(const float* in, float* out, int n)`.
    fn ordok_square(input: *const f32, out: *mut f32, n: i32);
    /// `__global__ void ordok_heavy_into(const float* in, float* out, int n)`.
    fn ordok_heavy_into(input: *const f32, out: *mut f32, n: i32);
}

counting_resolver!(launches_resolver, LAUNCHES_ASKED);
counting_resolver!(plans_resolver, PLANS_ASKED);

/// A kernel launched 20 times through `ordo_launch_kernel_resolved` runs 20 times (against the CPU)
/// and its resolver is asked once; the plain export finds the handle then; a plan through
/// `ordo_pdl_plan_launch_resolved` equals the plain export's and asks once a form.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_resolved_launches_ask_the_resolver_once_and_run() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let n = 4099usize;
    let host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 101) as f32 * 0.25).collect();
    let mut x: *mut c_void = null_mut();
    assert_eq!(unsafe { sys::cudaMalloc(&mut x, n * 4) }, sys::cudaError::cudaSuccess);
    let to_device = sys::cudaMemcpyKind::cudaMemcpyHostToDevice;
    assert_eq!(unsafe { sys::cudaMemcpy(x, host.as_ptr().cast(), n * 4, to_device) }, sys::cudaError::cudaSuccess);
    let kernel = ordok_add_one as unsafe extern "C" fn(*mut f32, i32) as *const c_void;
    let mut c = config(88);
    c.grid = [n.div_ceil(256) as u32, 1, 1];
    c.block = [256, 1, 1];
    let (mut xp, mut np) = (x.cast::<f32>(), n as i32);
    let mut args = [(&raw mut xp).cast::<c_void>(), (&raw mut np).cast::<c_void>()];
    let legacy = sys::cudaStreamLegacy();
    for i in 0..20 {
        let st = unsafe { ordo_launch_kernel_resolved(legacy, kernel, args.as_mut_ptr(), &c, Some(launches_resolver)) };
        assert_eq!(st, ORDO_SUCCESS, "launch {i}");
    }
    let st = unsafe { ordo_launch_kernel(legacy, kernel, args.as_mut_ptr(), &c) };
    assert_eq!(st, ORDO_SUCCESS, "the plain export after the resolved one");
    let mut got = vec![0f32; n];
    let to_host = sys::cudaMemcpyKind::cudaMemcpyDeviceToHost;
    assert_eq!(unsafe { sys::cudaMemcpy(got.as_mut_ptr().cast(), x, n * 4, to_host) }, sys::cudaError::cudaSuccess);
    unsafe { sys::cudaFree(x) };
    let want: Vec<f32> = host.iter().map(|v| (0..21).fold(*v, |v, _| v + 1.0)).collect();
    assert_eq!(got, want);
    // At most once: another test of this binary may have launched the kernel first (the handle is
    // then in the table already, and no resolver is asked).
    assert!(LAUNCHES_ASKED.load(Ordering::Relaxed) <= 1, "the resolver is asked at the first launch only");

    let plain = ordok_square as unsafe extern "C" fn(*const f32, *mut f32, i32) as *const c_void;
    let pdl = ordok_heavy_into as unsafe extern "C" fn(*const f32, *mut f32, i32) as *const c_void;
    for n in [4096usize, 1 << 22] {
        let mut a = empty_plan();
        let mut b = a;
        let r: OrdoKernelResolverFn = Some(plans_resolver);
        assert_eq!(unsafe { ordo_pdl_plan_launch_resolved(plain, pdl, 0, n, 256, ORDO_PDL_AUTO, &mut a, r) }, 0);
        assert_eq!(unsafe { ordo_pdl_plan_launch(plain, pdl, 0, n, 256, ORDO_PDL_AUTO, &mut b) }, 0);
        assert_eq!(
            (a.use_pdl_form, a.grid, a.full_blocks, a.one_wave_blocks),
            (b.use_pdl_form, b.grid, b.full_blocks, b.one_wave_blocks),
            "{n}"
        );
    }
    assert!(PLANS_ASKED.load(Ordering::Relaxed) <= 2, "asked once a form at most");
}

extern "C" {
    /// `__global__ void ordok_scale_add(float* x, float a, float b, int n)`: x[i] = x[i] * a + b.
    /// Launched by no other test of this binary, so that its handle is in ordo's table only as
    /// this test enters it.
    fn ordok_scale_add(x: *mut f32, a: f32, b: f32, n: i32);
}

static REFUSING_ASKED: AtomicUsize = AtomicUsize::new(0);

/// The runtime of a file that does not know the kernel (the program's, for a library's kernel
/// registered with the library's own static runtime): `cudaErrorInvalidDeviceFunction`.
unsafe extern "C" fn refusing_resolver(_kernel: *mut sys::cudaKernel_t, _entry: *const c_void) -> c_int {
    REFUSING_ASKED.fetch_add(1, Ordering::Relaxed);
    sys::cudaError::cudaErrorInvalidDeviceFunction.0 as c_int
}

static KNOWING_ASKED: AtomicUsize = AtomicUsize::new(0);

/// The runtime of the library's own file, which knows the kernel: its handle (here `entry` is the
/// kernel's `cudaKernel_t`, which is its own handle).
unsafe extern "C" fn knowing_resolver(kernel: *mut sys::cudaKernel_t, entry: *const c_void) -> c_int {
    KNOWING_ASKED.fetch_add(1, Ordering::Relaxed);
    unsafe { kernel.write(entry.cast_mut().cast()) };
    0
}

/// A kernel that neither ordo's runtime nor the first file's resolver knows (a `cudaKernel_t`
/// ordo has not seen, which ordo's runtime says is none of its kernels' stubs), launched first
/// from that file: its resolver is asked once, and the launches run through the runtime. A launch
/// from another file, whose resolver knows the kernel, then asks that one, once, and every launch
/// from then on, the first file's included, gets its handle. Before, the first resolver's failure stopped every
/// other from being asked for the address: in a process of two runtimes, where the runtime's
/// launch fails too (400), the kernel failed for the rest of the process.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_resolver_that_failed_does_not_stop_another() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let stub = ordok_scale_add as unsafe extern "C" fn(*mut f32, f32, f32, i32) as *const c_void;
    let mut handle: sys::cudaKernel_t = null_mut();
    assert_eq!(unsafe { sys::cudaGetKernel(&mut handle, stub) }, sys::cudaError::cudaSuccess);
    let kernel = handle.cast::<c_void>().cast_const();
    // Whether ordo's runtime knows the handle as a kernel's address (it did not: a handle is no
    // stub); where it does, the handle is ordo's at the first launch and no resolver is asked
    // after it.
    let mut again: sys::cudaKernel_t = null_mut();
    let runtime_knows_it = unsafe { sys::cudaGetKernel(&mut again, kernel) } == sys::cudaError::cudaSuccess;
    unsafe { sys::cudaGetLastError() };
    let x = DeviceFloats::upload(&vec![1.0; 1000]);
    let mut c = config(FULL);
    c.grid = [4, 1, 1];
    c.block = [256, 1, 1];
    let (mut xp, mut a, mut b, mut n) = (x.ptr, 1.0f32, 1.0f32, x.n as i32);
    let mut args = [
        (&raw mut xp).cast::<c_void>(),
        (&raw mut a).cast::<c_void>(),
        (&raw mut b).cast::<c_void>(),
        (&raw mut n).cast::<c_void>(),
    ];
    let legacy = sys::cudaStreamLegacy();
    let mut launch = |resolver: OrdoKernelResolverFn| unsafe {
        ordo_launch_kernel_resolved(legacy, kernel, args.as_mut_ptr(), &c, resolver)
    };
    for i in 0..3 {
        assert_eq!(launch(Some(refusing_resolver)), ORDO_SUCCESS, "from the first file, {i}");
    }
    for i in 0..3 {
        assert_eq!(launch(Some(knowing_resolver)), ORDO_SUCCESS, "from the library's file, {i}");
    }
    assert_eq!(launch(Some(refusing_resolver)), ORDO_SUCCESS, "from the first file again");
    assert_eq!(unsafe { ordo_launch_kernel(legacy, kernel, args.as_mut_ptr(), &c) }, ORDO_SUCCESS, "plain");
    assert_eq!(x.download(), vec![9.0; 1000], "eight launches ran");
    let asked = (REFUSING_ASKED.load(Ordering::Relaxed), KNOWING_ASKED.load(Ordering::Relaxed));
    if !cfg!(cuda_12_8) {
        assert_eq!(asked, (0, 0), "no table of kernels: no resolver is asked");
    } else if runtime_knows_it {
        assert_eq!(asked, (1, 0), "ordo's runtime resolved it at the first launch");
    } else {
        assert_eq!(asked, (1, 1), "each resolver once: the failing one is not asked again, the other is");
    }
}

/// `n` floats of device memory, freed on drop.
struct DeviceFloats {
    ptr: *mut f32,
    n: usize,
}

impl DeviceFloats {
    fn upload(host: &[f32]) -> DeviceFloats {
        let mut p: *mut c_void = null_mut();
        assert_eq!(unsafe { sys::cudaMalloc(&mut p, host.len() * 4) }, sys::cudaError::cudaSuccess);
        let kind = sys::cudaMemcpyKind::cudaMemcpyHostToDevice;
        let code = unsafe { sys::cudaMemcpy(p, host.as_ptr().cast(), host.len() * 4, kind) };
        assert_eq!(code, sys::cudaError::cudaSuccess);
        DeviceFloats { ptr: p.cast(), n: host.len() }
    }

    /// The floats, after everything enqueued before has completed.
    fn download(&self) -> Vec<f32> {
        assert_eq!(unsafe { sys::cudaDeviceSynchronize() }, sys::cudaError::cudaSuccess);
        let mut out = vec![0f32; self.n];
        let kind = sys::cudaMemcpyKind::cudaMemcpyDeviceToHost;
        let code = unsafe { sys::cudaMemcpy(out.as_mut_ptr().cast(), self.ptr.cast(), self.n * 4, kind) };
        assert_eq!(code, sys::cudaError::cudaSuccess);
        out
    }
}

impl Drop for DeviceFloats {
    fn drop(&mut self) {
        unsafe { sys::cudaFree(self.ptr.cast()) };
    }
}

/// Blocks of `ordok_add_one` over the floats: 64 blocks of 256 threads (a grid that clusters of 2
/// and preferred clusters of 4 divide), the last block partly idle.
const ADD_ONE_N: usize = 64 * 256 - 5;

/// `ordok_add_one` over `x` on `stream` with `c` (grid and block set here) through
/// `ordo_launch_kernel`.
fn add_one(stream: sys::cudaStream_t, x: &DeviceFloats, c: OrdoLaunchConfig) -> OrdoStatus {
    let kernel = ordok_add_one as unsafe extern "C" fn(*mut f32, i32) as *const c_void;
    let c = OrdoLaunchConfig { grid: [64, 1, 1], block: [256, 1, 1], ..c };
    let (mut xp, mut np) = (x.ptr, x.n as i32);
    let mut args = [(&raw mut xp).cast::<c_void>(), (&raw mut np).cast::<c_void>()];
    unsafe { ordo_launch_kernel(stream, kernel, args.as_mut_ptr(), &c) }
}

/// Whether the current device has thread-block clusters (compute capability 9.0 or later).
fn has_clusters() -> bool {
    ordo_cuda_core::Device::current().unwrap().compute_capability().unwrap().0 >= 9
}

/// Launches with the third layout's fields run and compute what they should: each domain, the
/// preferred cluster dimensions (with a cluster of 2, on sm_90 and later), both at once; the second
/// layout's size with bytes past it that would be refused as a domain runs as before. Against
/// headers older than CUDA 12.8, the preferred cluster is ORDO_ERROR_NOT_SUPPORTED and runs nothing.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_launches_with_a_domain_or_a_preferred_cluster_run() {
    let _gpu = ordo_ffi_tests::gpu_lock();
    let host: Vec<f32> = (0..ADD_ONE_N).map(|i| 0.25 + (i % 89) as f32 * 0.5).collect();
    let x = DeviceFloats::upload(&host);
    let s = sys::cudaStreamPerThread();
    let base = config(FULL);
    let mut ran = 0;
    for domain in [ORDO_MEM_SYNC_DOMAIN_DEFAULT, ORDO_MEM_SYNC_DOMAIN_REMOTE] {
        assert_eq!(add_one(s, &x, OrdoLaunchConfig { mem_sync_domain: domain, ..base }), ORDO_SUCCESS, "{domain}");
        ran += 1;
    }
    let older = OrdoLaunchConfig {
        size: ORDO_LAUNCH_CONFIG_SECOND_SIZE,
        mem_sync_domain: 7,
        preferred_cluster: [3, 1, 1],
        ..base
    };
    assert_eq!(add_one(s, &x, older), ORDO_SUCCESS, "the second layout's size: the fields past it unread");
    ran += 1;
    assert_eq!(add_one(s, &x, OrdoLaunchConfig { mem_sync_domain: 3, ..base }), ORDO_ERROR_INVALID_ARGUMENT);
    let clustered = OrdoLaunchConfig { cluster: [2, 1, 1], preferred_cluster: [4, 1, 1], ..base };
    for c in [clustered, OrdoLaunchConfig { mem_sync_domain: ORDO_MEM_SYNC_DOMAIN_REMOTE, ..clustered }] {
        let st = add_one(s, &x, c);
        if !cfg!(cuda_12_8) {
            assert_eq!(st, ORDO_ERROR_NOT_SUPPORTED, "preferred clusters against headers before CUDA 12.8");
        } else if has_clusters() {
            assert_eq!(st, ORDO_SUCCESS, "preferred cluster {:?} of {:?}", c.preferred_cluster, c.cluster);
            ran += 1;
        } else {
            println!("no clusters on this device: CUDA's status {st}");
            assert!(is_documented(st) && ordo_status_is_sticky(st) == 0, "{st}");
        }
    }
    let want: Vec<f32> = host.iter().map(|&v| (0..ran).fold(v, |v, _| v + 1.0)).collect();
    assert!(x.download() == want, "each launch ran once ({ran} launches)");
}

/// The value of attribute `id` on kernel node `node`.
fn node_attribute(node: sys::cudaGraphNode_t, id: sys::cudaLaunchAttributeID) -> sys::cudaLaunchAttributeValue {
    let mut value = sys::cudaLaunchAttributeValue { pad: [0; 64] };
    let code = unsafe { sys::cudaGraphKernelNodeGetAttribute(node, id, &mut value) };
    assert_eq!(code, sys::cudaError::cudaSuccess, "cudaGraphKernelNodeGetAttribute({id:?})");
    value
}

/// A launch captured into the caller's graph carries the domain (and, on sm_90 and later with CUDA
/// 12.8 headers, the cluster and preferred cluster dimensions) to its kernel node, read back from
/// the node; the graph replays and computes what it should.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_a_captured_launch_keeps_the_domain_and_the_preferred_cluster_on_its_node() {
    use sys::cudaLaunchAttributeID as Id;
    let _gpu = ordo_ffi_tests::gpu_lock();
    let host: Vec<f32> = (0..ADD_ONE_N).map(|i| (i % 13) as f32 - 6.0).collect();
    let x = DeviceFloats::upload(&host);
    let preferred = cfg!(cuda_12_8) && has_clusters();
    let mut c = OrdoLaunchConfig { mem_sync_domain: ORDO_MEM_SYNC_DOMAIN_REMOTE, ..config(FULL) };
    if preferred {
        c = OrdoLaunchConfig { cluster: [2, 1, 1], preferred_cluster: [4, 1, 1], ..c };
    }
    let mut stream: sys::cudaStream_t = null_mut();
    let code = unsafe { sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking) };
    assert_eq!(code, sys::cudaError::cudaSuccess);
    let mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal;
    assert_eq!(unsafe { sys::cudaStreamBeginCapture(stream, mode) }, sys::cudaError::cudaSuccess);
    let st = add_one(stream, &x, c);
    let detail = if st == ORDO_SUCCESS { String::new() } else { last_error_text() };
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    unsafe { sys::cudaStreamIsCapturing(stream, &mut status) };
    let mut graph: sys::cudaGraph_t = null_mut();
    let end = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
    assert_eq!(st, ORDO_SUCCESS, "the captured launch: {detail}");
    assert_eq!(end, sys::cudaError::cudaSuccess, "the capture's end (its status after the launch: {status:?})");
    let mut node: sys::cudaGraphNode_t = null_mut();
    let mut count = 1usize;
    assert_eq!(unsafe { sys::cudaGraphGetNodes(graph, &mut node, &mut count) }, sys::cudaError::cudaSuccess);
    assert_eq!(count, 1, "one kernel node");
    let domain = unsafe { node_attribute(node, Id::cudaLaunchAttributeMemSyncDomain).memSyncDomain };
    assert_eq!(domain, sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote);
    if preferred {
        let cluster = unsafe { node_attribute(node, Id::cudaLaunchAttributeClusterDimension).clusterDim };
        assert_eq!((cluster.x, cluster.y, cluster.z), (2, 1, 1));
        // Driver 580 answers cudaErrorInvalidValue for this attribute of a captured kernel node
        // (CB-31): the node's preferred cluster cannot be read back there; the replays below still
        // check the launch's results.
        let mut value = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        let id = Id::cudaLaunchAttributePreferredClusterDimension;
        match unsafe { sys::cudaGraphKernelNodeGetAttribute(node, id, &mut value) } {
            sys::cudaError::cudaSuccess => {
                let p = unsafe { value.preferredClusterDim };
                assert_eq!((p.x, p.y, p.z), (4, 1, 1));
            }
            code => {
                println!("the node's preferred cluster is not reported: {code:?} (CB-31)");
                unsafe { sys::cudaGetLastError() };
            }
        }
    }
    let mut exec: sys::cudaGraphExec_t = null_mut();
    assert_eq!(unsafe { sys::cudaGraphInstantiate(&mut exec, graph, 0) }, sys::cudaError::cudaSuccess);
    for _ in 0..2 {
        assert_eq!(unsafe { sys::cudaGraphLaunch(exec, stream) }, sys::cudaError::cudaSuccess);
    }
    assert_eq!(unsafe { sys::cudaStreamSynchronize(stream) }, sys::cudaError::cudaSuccess);
    let got = x.download();
    unsafe {
        sys::cudaGraphExecDestroy(exec);
        sys::cudaGraphDestroy(graph);
        sys::cudaStreamDestroy(stream);
    }
    assert!(got == host.iter().map(|v| v + 2.0).collect::<Vec<_>>(), "two replays, one add each");
}

/// The calling thread's last error, as `ordo_last_error_message` writes it.
fn last_error_text() -> String {
    let mut buf = vec![0u8; 1024];
    let n = unsafe { ordo_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(buf.len()));
    String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string()
}
