//! What every family of the fuzz shares: the random generator, the status checks, the test's own
//! raw CUDA calls (made with the thread's capture mode relaxed), the callbacks given to ordo, and
//! device and pinned buffers for the GPU tests.
#![allow(dead_code)]

use core::ffi::c_void;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

pub(crate) const CUDA_INVALID_VALUE: OrdoStatus = 1;
pub(crate) const CUDA_NOT_READY: OrdoStatus = ORDO_NOT_READY;

pub(crate) fn gpu() -> bool {
    ordo_cuda_core::device::count().is_ok_and(|n| n > 0)
}

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub(crate) fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
    /// A size: mostly valid (1..=max_valid), sometimes zero, overflowing or absurd.
    pub(crate) fn size(&mut self, max_valid: usize) -> usize {
        match self.below(8) {
            0 => 0,
            1 => usize::MAX - self.below(3) as usize,
            2 => 1usize << (32 + self.below(31)),
            _ => 1 + self.below(max_valid as u64) as usize,
        }
    }
}

/// CUDA refuses work on the legacy stream while any blocking stream captures, and another fuzz
/// thread's graph cache may be capturing its `cudaStreamPerThread` (a blocking stream) just then:
/// `cudaErrorStreamCaptureImplicit` on the legacy stream counts as the expected status `want`.
/// (Even the query of the legacy stream's capture state, which ordo makes before it checks where
/// memory lives, fails so: `docs/cuda-behaviours.md`, CB-04.)
pub(crate) fn legacy_conflict(status: OrdoStatus, stream: sys::cudaStream_t, want: OrdoStatus) -> OrdoStatus {
    const CUDA_STREAM_CAPTURE_IMPLICIT: OrdoStatus = 906;
    if status == CUDA_STREAM_CAPTURE_IMPLICIT && stream == sys::cudaStreamLegacy() {
        LEGACY_CONFLICTS.fetch_add(1, Ordering::Relaxed);
        want
    } else {
        status
    }
}

pub(crate) static LEGACY_CONFLICTS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn check(status: OrdoStatus, what: &str) -> OrdoStatus {
    assert!(is_documented(status), "{what}: undocumented status {status}");
    // Stricter than the header's promise (any CUDA code): what ordo's exports return in practice.
    let seen =
        status == ORDO_SUCCESS || (1..=999).contains(&status) || (ORDO_LAST_CODE..=ORDO_FIRST_CODE).contains(&status);
    assert!(seen, "{what}: status {status}, neither success, a CUDA code nor ordo's");
    status
}

/// The test's own raw CUDA calls, made with the thread's capture mode relaxed, so that they never
/// disturb a global-mode capture another thread of the test holds open (as ordo's calls never do).
pub(crate) fn raw<R>(f: impl FnOnce() -> R) -> R {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    let exchanged = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } == sys::cudaError::cudaSuccess;
    let r = f();
    if exchanged {
        unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    }
    r
}

pub(crate) fn cuda(code: sys::cudaError_t, what: &str) {
    assert_eq!(code, sys::cudaError::cudaSuccess, "{what}");
}

pub(crate) fn capture_status(s: sys::cudaStream_t) -> sys::cudaStreamCaptureStatus {
    let mut st = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    cuda(unsafe { sys::cudaStreamIsCapturing(s, &mut st) }, "cudaStreamIsCapturing");
    st
}

/// The capture modes a thread may use while other threads make capture-unsafe calls.
pub(crate) const CONCURRENT_MODES: [sys::cudaStreamCaptureMode; 2] = [
    sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal,
    sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed,
];

pub(crate) const MODES: [sys::cudaStreamCaptureMode; 3] = [
    sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal,
    sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal,
    sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed,
];

// ---- Callbacks ----------------------------------------------------------------------------------

// ordo's chain step, both forms (`ORDO_PDL_KERNELS` in ordo-cuda-kernels, linked into ordo): the
// fuzz's kernel for `ordo_launch_kernel` and `ordo_pdl_plan_launch`. A grid-stride loop over n.
unsafe extern "C" {
    pub(crate) fn ordok_chain_step(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
    pub(crate) fn ordok_chain_step_pdl(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
}

pub(crate) unsafe extern "C" fn nop_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    ORDO_SUCCESS
}
pub(crate) unsafe extern "C" fn failing_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    CUDA_INVALID_VALUE
}
pub(crate) unsafe extern "C" fn garbage_body(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    -300
}

/// What [`add_one_body`] works on: a device buffer of 256 floats and one of 256 ones.
pub(crate) struct AddOne {
    pub(crate) x: *mut f32,
    pub(crate) ones: *const f32,
}

/// Adds 1 to the first `bucket` floats of `x`, by calling back into ordo: one chain step of scale 1
/// in place (prev * 1 + 1).
pub(crate) unsafe extern "C" fn add_one_body(s: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus {
    let ctx = unsafe { &*user.cast::<AddOne>() };
    unsafe { ordo_pdl_chain(s, ctx.x, ctx.x, ctx.ones, bucket.min(256), 1, 0) }
}

/// Copies the chunk (device to device) on the stream ordo gives; `user` is an `AtomicI32`
/// countdown: the call that takes it from 0 to -1 fails with cudaErrorInvalidValue.
pub(crate) unsafe extern "C" fn copy_compute(
    s: sys::cudaStream_t,
    input: *const f32,
    output: *mut f32,
    n: usize,
    user: *mut c_void,
) -> OrdoStatus {
    if !user.is_null() {
        let left = unsafe { &*user.cast::<AtomicI32>() };
        if left.fetch_sub(1, Ordering::Relaxed) == 0 {
            return CUDA_INVALID_VALUE;
        }
    }
    let code = unsafe {
        sys::cudaMemcpyAsync(output.cast(), input.cast(), n * 4, sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice, s)
    };
    code.0 as OrdoStatus
}

/// What [`element_compute`] gets as `user`: the element size, and a countdown as in
/// [`copy_compute`].
pub(crate) struct ElementCompute {
    pub(crate) element_size: usize,
    pub(crate) countdown: AtomicI32,
}

/// Copies the chunk's `n` elements (device to device) on the stream ordo gives; `user` is an
/// [`ElementCompute`].
pub(crate) unsafe extern "C" fn element_compute(
    s: sys::cudaStream_t,
    input: *const c_void,
    output: *mut c_void,
    n: usize,
    user: *mut c_void,
) -> OrdoStatus {
    let ctx = unsafe { &*user.cast::<ElementCompute>() };
    if ctx.countdown.fetch_sub(1, Ordering::Relaxed) == 0 {
        return CUDA_INVALID_VALUE;
    }
    let bytes = n * ctx.element_size;
    let code = unsafe { sys::cudaMemcpyAsync(output, input, bytes, sys::cudaMemcpyKind::cudaMemcpyDeviceToDevice, s) };
    code.0 as OrdoStatus
}

/// What [`stencil_compute`] is told: the output row size and when to fail.
pub(crate) struct StencilCompute {
    pub(crate) out_row_bytes: usize,
    pub(crate) countdown: AtomicI32,
}

/// Fills the chunk's output rows (a memset on the stream ordo gives); `user` is a
/// [`StencilCompute`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn stencil_compute(
    s: sys::cudaStream_t,
    _input: *const c_void,
    output: *mut c_void,
    _first_row: usize,
    rows: usize,
    _before: usize,
    _after: usize,
    user: *mut c_void,
) -> OrdoStatus {
    let ctx = unsafe { &*user.cast::<StencilCompute>() };
    if ctx.countdown.fetch_sub(1, Ordering::Relaxed) == 0 {
        return CUDA_INVALID_VALUE;
    }
    let code = unsafe { sys::cudaMemsetAsync(output, 0x3f, rows * ctx.out_row_bytes, s) };
    code.0 as OrdoStatus
}

// ---- Buffers of the GPU tests ------------------------------------------------------------------

pub(crate) fn upload<T: Copy>(data: &[T]) -> *mut T {
    let mut d = null_mut();
    let bytes = core::mem::size_of_val(data).max(1);
    cuda(raw(|| unsafe { sys::cudaMalloc(&mut d, bytes) }), "cudaMalloc");
    cuda(
        raw(|| unsafe { sys::cudaMemcpy(d, data.as_ptr().cast(), bytes, sys::cudaMemcpyKind::cudaMemcpyHostToDevice) }),
        "upload",
    );
    d.cast()
}

pub(crate) fn download<T: Copy + Default>(d: *const T, n: usize, s: sys::cudaStream_t) -> Vec<T> {
    let mut out = vec![T::default(); n];
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    let bytes = n * core::mem::size_of::<T>();
    cuda(
        raw(|| unsafe {
            sys::cudaMemcpy(out.as_mut_ptr().cast(), d.cast(), bytes, sys::cudaMemcpyKind::cudaMemcpyDeviceToHost)
        }),
        "download",
    );
    out
}

pub(crate) fn reset<T: Copy>(d: *mut T, data: &[T]) {
    let bytes = core::mem::size_of_val(data);
    cuda(
        raw(|| unsafe {
            sys::cudaMemcpy(d.cast(), data.as_ptr().cast(), bytes, sys::cudaMemcpyKind::cudaMemcpyHostToDevice)
        }),
        "reset",
    );
}

pub(crate) fn pinned(n: usize) -> *mut f32 {
    let mut h = null_mut();
    cuda(raw(|| unsafe { sys::cudaHostAlloc(&mut h, n * 4, 0) }), "cudaHostAlloc");
    h.cast()
}

pub(crate) fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{what}[{i}]: {g} vs {w}");
    }
}

pub(crate) fn own_stream() -> sys::cudaStream_t {
    let mut s = null_mut();
    cuda(raw(|| unsafe { sys::cudaStreamCreateWithFlags(&mut s, sys::cudaStreamNonBlocking) }), "cudaStreamCreate");
    s
}

/// A host function that holds its stream until `*user` (an `AtomicBool`) is set: keeps the work
/// enqueued after it in flight for as long as a test needs.
pub(crate) unsafe extern "C" fn hold_stream(user: *mut c_void) {
    let go = unsafe { &*user.cast::<std::sync::atomic::AtomicBool>() };
    while !go.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
}

pub(crate) fn hold(s: sys::cudaStream_t, go: &'static std::sync::atomic::AtomicBool) {
    let user = (go as *const std::sync::atomic::AtomicBool).cast_mut().cast();
    cuda(raw(|| unsafe { sys::cudaLaunchHostFunc(s, Some(hold_stream), user) }), "cudaLaunchHostFunc");
}
