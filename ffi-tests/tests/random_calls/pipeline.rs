//! The pipeline exports: `ordo_pipeline_run` (a pooled pipeline), `ordo_pipeline_create`,
//! `ordo_pipeline_run_on`, `ordo_pipeline_run_stencil` and `ordo_pipeline_destroy`; their options'
//! checks; the pool's shrinking once captures end.

use crate::fuzz::*;
use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::gpu_lock;
use std::sync::atomic::{AtomicI32, Ordering};

impl Fuzz<'_> {
    /// `ordo_pipeline_run` on random pointers, sizes and chunk counts, with no callback, a copying
    /// one, or one that fails at a random chunk.
    pub(crate) fn pipeline_run(&mut self, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let (k1, k2, k3, k4) = (self.ptr_kind(), self.ptr_kind(), self.ptr_kind(), self.ptr_kind());
        let (hin, din, dout, hout) =
            (self.pinned_ptr(k1), self.device_ptr(k2), self.device_ptr(k3), self.pinned_ptr(k4));
        let n = self.rng.size(CAP);
        let chunks = self.rng.size(16);
        let first = self.rng.below(40) as i32 - 4;
        let countdown = AtomicI32::new(first);
        let (compute, user): (OrdoComputeFn, *mut c_void) = match self.rng.below(3) {
            0 => (None, null_mut()),
            1 => (Some(copy_compute), null_mut()),
            _ => (Some(copy_compute), (&countdown as *const AtomicI32).cast_mut().cast()),
        };
        let st = self
            .record(unsafe { ordo_pipeline_run(stream, hin, din, dout, hout, n, chunks, compute, user) }, "pipeline");
        let bad = [k1, k2, k3, k4].iter().any(|k| matches!(k, Ptr::Null | Ptr::Misaligned))
            || n == 0
            || n > isize::MAX as usize / 4
            || chunks == 0
            || chunks > n
            || chunks > 1 << 16;
        // In and out given as two buffers that share bytes (sizes past an allocation's CAP floats
        // reach the next one) are refused before anything else is looked at, as in place is not.
        let bytes = n.saturating_mul(4);
        let shifted = |a: usize, b: usize| a != b && a < b.saturating_add(bytes) && b < a.saturating_add(bytes);
        let overlapping = shifted(hin as usize, hout as usize) || shifted(din as usize, dout as usize);
        if bad || stream.is_null() || overlapping {
            assert_eq!(st, ia, "pipeline: bad argument, or in and out overlapping without being one buffer");
        } else if gpu && (k1 == Ptr::Pageable || k4 == Ptr::Pageable) {
            let want = ORDO_ERROR_PAGEABLE_MEMORY;
            assert_eq!(legacy_conflict(st, stream, want), want, "pipeline: pageable host memory");
        } else if gpu && (k2 == Ptr::Pageable || k3 == Ptr::Pageable) {
            assert_eq!(legacy_conflict(st, stream, ia), ia, "pipeline: host memory as device memory");
        } else if gpu && n <= CAP {
            // The callback failed when the countdown reached 0 (it stops there, at -1).
            let failed = !user.is_null() && first >= 0 && countdown.load(Ordering::Relaxed) == -1;
            if !failed {
                assert_eq!(
                    legacy_conflict(st, stream, ORDO_SUCCESS),
                    ORDO_SUCCESS,
                    "pipeline valid (n {n}, {chunks} chunks)"
                );
            } else {
                assert_eq!(
                    legacy_conflict(st, stream, CUDA_INVALID_VALUE),
                    CUDA_INVALID_VALUE,
                    "the failing callback's status"
                );
            }
        }
    }

    /// `ordo_pipeline_destroy` of a random handle.
    pub(crate) fn pipeline_destroy(&mut self) {
        let (h, _) = self.handle(Kind::Pipeline);
        ordo_pipeline_destroy(h as *mut OrdoPipeline);
        self.forget(h, Kind::Pipeline);
    }

    /// `ordo_pipeline_create` with random options: sizes too small, misaligned, fields out of
    /// range, an element size whose runs overflow, priorities outside the device's range, the
    /// device's default pool or none.
    pub(crate) fn pipeline_create(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let full = core::mem::size_of::<OrdoPipelineOptions>();
        let mut pool: sys::cudaMemPool_t = null_mut();
        if self.gpu && self.rng.chance(2) {
            cuda(raw(|| unsafe { sys::cudaDeviceGetDefaultMemPool(&mut pool, 0) }), "cudaDeviceGetDefaultMemPool");
        }
        let pick = |rng: &mut Rng, values: &[usize]| values[rng.below(values.len() as u64) as usize];
        // One past the last device: refused.
        let devices = ordo_cuda_core::device::count().unwrap_or(0) as i32;
        // 64 worker streams (the most) only now and then: each thread running a pipeline holds one.
        let most = if self.rng.chance(8) { 64 } else { 8 };
        let o = OrdoPipelineOptions {
            size: pick(&mut self.rng, &[full, full, full, full, full - 8, 0]),
            device: [-1, -1, 0, 0, -2, devices][self.rng.below(6) as usize],
            element_size: pick(&mut self.rng, &[1, 2, 3, 4, 4, 8, 12, 16, 0, usize::MAX]),
            streams: pick(&mut self.rng, &[0, 0, 1, 3, most, 65]),
            priority: [0, 0, 0, -1, 1, -1000][self.rng.below(6) as usize],
            chunks: pick(&mut self.rng, &[0, 0, 1, 2, 5, 16, 1 << 16, (1 << 16) + 1]),
            stage_timing: [0, 0, 1, 2][self.rng.below(4) as usize],
            pool,
        };
        // Options in a buffer with room for a misaligned copy.
        let mut buf = [0u64; 16];
        let (ptr, misaligned): (*const OrdoPipelineOptions, bool) = match self.rng.below(8) {
            0 => (null(), false),
            1 => {
                let p = unsafe { buf.as_mut_ptr().cast::<u8>().add(4) }.cast::<OrdoPipelineOptions>();
                unsafe { p.write_unaligned(o) };
                (p, true)
            }
            _ => (&o, false),
        };
        let null_out = self.rng.chance(10);
        let mut out: *mut OrdoPipeline = null_mut();
        let st = self.record(
            unsafe { ordo_pipeline_create(ptr, if null_out { null_mut() } else { &mut out }) },
            "pipeline_create",
        );
        let defaults = ptr.is_null();
        let bad = null_out
            || misaligned
            || (!defaults
                && (o.size < full
                    || o.element_size == 0
                    || o.streams > 64
                    || o.chunks > 1 << 16
                    || !(0..=1).contains(&o.stage_timing)
                    || o.device < -1));
        if bad {
            assert_eq!(st, ia, "pipeline create: bad options");
            assert!(out.is_null());
        } else if self.gpu && (defaults || (o.device != devices && o.priority >= -1 && o.priority <= 0)) {
            // Priorities 0 and -1 are in every current GPU's range (H200: 0 to -5); 1 and -1000 not.
            assert_eq!(st, ORDO_SUCCESS, "pipeline create");
        } else if self.gpu {
            assert_eq!(st, ia, "pipeline create: device or priority out of range");
        }
        if st == ORDO_SUCCESS {
            assert!(!out.is_null());
            let (e, chunks) = if defaults { (4, 0) } else { (o.element_size, o.chunks) };
            self.handles.lock().unwrap().pipelines.insert(out as usize, (e, chunks));
            self.add(out as usize, Kind::Pipeline);
        }
    }

    /// `ordo_pipeline_run_on` on a random handle: pointers null (device ones: temporaries),
    /// misaligned for the element size or pageable, sizes zero or overflowing with the element
    /// size, chunk counts past the elements, failing callbacks, no callback with elements other
    /// than floats.
    pub(crate) fn pipeline_run_on(&mut self, stream: sys::cudaStream_t) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Pipeline);
        let (element_size, chunks) = self.handles.lock().unwrap().pipelines.get(&h).copied().unwrap_or((4, 0));
        let (k1, k2, k3, k4) = (self.ptr_kind(), self.ptr_kind(), self.ptr_kind(), self.ptr_kind());
        let (hin, din, dout, hout) =
            (self.pinned_ptr(k1), self.device_ptr(k2), self.device_ptr(k3), self.pinned_ptr(k4));
        let mut n = self.rng.size(CAP);
        let bytes = n.checked_mul(element_size).filter(|&b| b <= isize::MAX as usize);
        // Valid pointers are only paired with sizes inside their allocations (CAP floats), from
        // wherever they start in them.
        if self.gpu && bytes.is_some_and(|b| b > ROOM) {
            n = (ROOM / element_size).max(1);
        }
        let bytes = n.checked_mul(element_size).filter(|&b| b <= isize::MAX as usize);
        let first = self.rng.below(40) as i32 - 4;
        let ctx = ElementCompute { element_size, countdown: AtomicI32::new(first) };
        let compute: OrdoPipelineFn = if self.rng.chance(3) { None } else { Some(element_compute) };
        let user = (&ctx as *const ElementCompute).cast_mut().cast::<c_void>();
        let st = self.record(
            unsafe {
                ordo_pipeline_run_on(
                    h as *mut OrdoPipeline,
                    stream,
                    hin.cast(),
                    din.cast(),
                    dout.cast(),
                    hout.cast(),
                    n,
                    compute,
                    user,
                )
            },
            "pipeline_run_on",
        );
        // The alignment ordo asks of the element size: its largest power-of-two divisor, at most 16.
        let align = 1usize << element_size.trailing_zeros().min(4);
        let misaligned = |k: Ptr, offset: usize| k == Ptr::Misaligned && !offset.is_multiple_of(align);
        let bad = (compute.is_none() && element_size != 4)
            || stream.is_null()
            || k1 == Ptr::Null
            || k4 == Ptr::Null
            || misaligned(k1, 1)
            || misaligned(k4, 1)
            || misaligned(k2, 2)
            || misaligned(k3, 2)
            || n == 0
            || bytes.is_none()
            || (chunks != 0 && chunks > n);
        // In and out given as one buffer (in place) or as two disjoint ones are fine; a misaligned
        // pointer the element size accepts (1 or 2 bytes into its allocation) may overlap the
        // other buffer without being it: refused.
        let shifted = |a: usize, b: usize| {
            a != 0
                && b != 0
                && a != b
                && bytes.is_some_and(|len| a < b.saturating_add(len) && b < a.saturating_add(len))
        };
        let overlapping = shifted(hin as usize, hout as usize) || shifted(din as usize, dout as usize);
        if !live {
            assert_eq!(st, ih, "pipeline run: not a live pipeline");
        } else if bad {
            assert!(st == ia || st == ih, "pipeline run: bad argument: {st}");
        } else if overlapping {
            assert!(st == ia || st == ih, "pipeline run: in and out overlap without being one buffer: {st}");
        } else if self.gpu && (k1 == Ptr::Pageable || k4 == Ptr::Pageable) {
            let want = ORDO_ERROR_PAGEABLE_MEMORY;
            let st = legacy_conflict(st, stream, want);
            // Pageable memory is a Vec<f32>: aligned to 4 only, so wider elements may find it
            // misaligned first.
            assert!(st == want || st == ih || (align > 4 && st == ia), "pipeline run: pageable host memory: {st}");
        } else if self.gpu && (k2 == Ptr::Pageable || k3 == Ptr::Pageable) {
            let st = legacy_conflict(st, stream, ia);
            assert!(st == ia || st == ih, "pipeline run: host memory as device memory: {st}");
        } else if self.gpu {
            // The callback failed when the countdown reached 0 (it stops there, at -1).
            let failed = compute.is_some() && first >= 0 && ctx.countdown.load(Ordering::Relaxed) == -1;
            let want = if failed { CUDA_INVALID_VALUE } else { ORDO_SUCCESS };
            let st = legacy_conflict(st, stream, want);
            assert!(st == want || st == ih, "pipeline run (n {n}, element size {element_size}, chunks {chunks}): {st}");
        }
    }

    /// `ordo_pipeline_run_stencil` on a random handle, with random pointers, row sizes, row
    /// count and halo, and a compute that fills its output rows (or fails at a random chunk).
    pub(crate) fn pipeline_run_stencil(&mut self, stream: sys::cudaStream_t) {
        let (ia, ih) = (ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE);
        let (h, live) = self.handle(Kind::Pipeline);
        let (_, chunks) = self.handles.lock().unwrap().pipelines.get(&h).copied().unwrap_or((4, 0));
        let (k1, k2, k3, k4) = (self.ptr_kind(), self.ptr_kind(), self.ptr_kind(), self.ptr_kind());
        let (hin, din, dout, hout) =
            (self.pinned_ptr(k1), self.device_ptr(k2), self.device_ptr(k3), self.pinned_ptr(k4));
        let mut row_bytes = || match self.rng.below(10) {
            0 => 0,
            1 => usize::MAX - self.rng.below(3) as usize,
            _ => 1 + self.rng.below(256) as usize,
        };
        let (in_row, out_row) = (row_bytes(), row_bytes());
        let mut rows = self.rng.size(CAP);
        let bytes = |rows: usize, row: usize| rows.checked_mul(row).filter(|&b| b <= isize::MAX as usize);
        // Valid pointers are only paired with sizes inside their allocations (CAP floats), from
        // wherever they start in them.
        let widest = in_row.max(out_row).max(1);
        if self.gpu && bytes(rows, widest).is_some_and(|b| b > ROOM) {
            rows = (ROOM / widest).max(1);
        }
        let halo = match self.rng.below(6) {
            0 => usize::MAX,
            k => k as usize - 1,
        };
        let first = self.rng.below(40) as i32 - 4;
        let ctx = StencilCompute { out_row_bytes: out_row, countdown: AtomicI32::new(first) };
        let compute: OrdoStencilFn = if self.rng.chance(5) { None } else { Some(stencil_compute) };
        let user = (&ctx as *const StencilCompute).cast_mut().cast::<c_void>();
        let st = self.record(
            unsafe {
                ordo_pipeline_run_stencil(
                    h as *mut OrdoPipeline,
                    stream,
                    hin.cast(),
                    din.cast(),
                    dout.cast(),
                    hout.cast(),
                    rows,
                    in_row,
                    out_row,
                    halo,
                    compute,
                    user,
                )
            },
            "pipeline_run_stencil",
        );
        // The alignment ordo asks of each side: its row size's largest power-of-two divisor, at most 16.
        let align = |row: usize| 1usize << row.trailing_zeros().min(4);
        let misaligned = |k: Ptr, offset: usize, row: usize| k == Ptr::Misaligned && !offset.is_multiple_of(align(row));
        let bad = compute.is_none()
            || stream.is_null()
            || k1 == Ptr::Null
            || k4 == Ptr::Null
            || misaligned(k1, 1, in_row)
            || misaligned(k4, 1, out_row)
            || misaligned(k2, 2, in_row)
            || misaligned(k3, 2, out_row)
            || rows == 0
            || in_row == 0
            || out_row == 0
            || bytes(rows, in_row).is_none()
            || bytes(rows, out_row).is_none()
            || (chunks != 0 && chunks > rows)
            || stencil_overlap([hin as usize, hout as usize], [din as usize, dout as usize], rows, in_row, out_row);
        if !live {
            assert_eq!(st, ih, "stencil run: not a live pipeline");
        } else if bad {
            assert!(st == ia || st == ih, "stencil run: bad argument: {st}");
        } else if self.gpu && (k1 == Ptr::Pageable || k4 == Ptr::Pageable) {
            let want = ORDO_ERROR_PAGEABLE_MEMORY;
            let st = legacy_conflict(st, stream, want);
            // Pageable memory is a Vec<f32>: aligned to 4 only, so wider rows may find it
            // misaligned first.
            let wide = align(in_row) > 4 || align(out_row) > 4;
            assert!(st == want || st == ih || (wide && st == ia), "stencil run: pageable host memory: {st}");
        } else if self.gpu && (k2 == Ptr::Pageable || k3 == Ptr::Pageable) {
            let st = legacy_conflict(st, stream, ia);
            assert!(st == ia || st == ih, "stencil run: host memory as device memory: {st}");
        } else if self.gpu {
            // The callback failed when the countdown reached 0 (it stops there, at -1).
            let failed = first >= 0 && ctx.countdown.load(Ordering::Relaxed) == -1;
            let want = if failed { CUDA_INVALID_VALUE } else { ORDO_SUCCESS };
            let st = legacy_conflict(st, stream, want);
            assert!(st == want || st == ih, "stencil run (rows {rows}, {in_row}/{out_row} bytes, halo {halo}): {st}");
        }
    }
}

/// Whether a stencil run's input overlaps its output, on the host or (both given) on the device:
/// refused with `ORDO_ERROR_INVALID_ARGUMENT` (the random pointers often share an allocation).
pub(crate) fn stencil_overlap(host: [usize; 2], dev: [usize; 2], rows: usize, in_row: usize, out_row: usize) -> bool {
    let (Some(a_len), Some(b_len)) = (rows.checked_mul(in_row), rows.checked_mul(out_row)) else { return false };
    let overlap =
        |a: usize, b: usize| a_len != 0 && b_len != 0 && a < b.saturating_add(b_len) && b < a.saturating_add(a_len);
    (host[0] != 0 && host[1] != 0 && overlap(host[0], host[1]))
        || (dev[0] != 0 && dev[1] != 0 && overlap(dev[0], dev[1]))
}

/// Pipeline options are checked before anything is made, and (on a GPU) a run's arguments
/// before CUDA: no callback for elements other than floats, overflowing sizes, misaligned,
/// null or pageable pointers, a destroyed handle.
#[test]
fn pipeline_options_are_checked_before_anything_is_made() {
    let _gpu = gpu_lock();
    let ia = ORDO_ERROR_INVALID_ARGUMENT;
    let ok = OrdoPipelineOptions {
        size: core::mem::size_of::<OrdoPipelineOptions>(),
        device: -1,
        element_size: 12,
        streams: 0,
        priority: 0,
        chunks: 0,
        stage_timing: 0,
        pool: null_mut(),
    };
    let mut out: *mut OrdoPipeline = null_mut();
    for bad in [
        OrdoPipelineOptions { size: 0, ..ok },
        OrdoPipelineOptions { size: ok.size - 1, ..ok },
        OrdoPipelineOptions { element_size: 0, ..ok },
        OrdoPipelineOptions { streams: 65, ..ok },
        OrdoPipelineOptions { chunks: (1 << 16) + 1, ..ok },
        OrdoPipelineOptions { stage_timing: -1, ..ok },
        OrdoPipelineOptions { device: -5, ..ok },
    ] {
        assert_eq!(unsafe { ordo_pipeline_create(&bad, &mut out) }, ia);
        assert!(out.is_null(), "nothing written on a refusal");
    }
    assert_eq!(unsafe { ordo_pipeline_create(&ok, null_mut()) }, ia, "null out");
    let mut raw = [0u64; 10];
    let misaligned = unsafe { raw.as_mut_ptr().cast::<u8>().add(4) }.cast::<OrdoPipelineOptions>();
    unsafe { misaligned.write_unaligned(ok) };
    assert_eq!(unsafe { ordo_pipeline_create(misaligned, &mut out) }, ia, "misaligned options");
    // Valid options: made on a GPU; without one, CUDA's status.
    let st = unsafe { ordo_pipeline_create(&ok, &mut out) };
    if gpu() {
        assert_eq!(st, ORDO_SUCCESS);
        assert!(!out.is_null());
        // Checks of a run before CUDA: no callback for 12-byte elements, n * 12 overflowing, a
        // pointer aligned to 1 for elements that need 4, a NULL host pointer, a NULL stream.
        let mut host = [0u32; 8];
        let h = host.as_mut_ptr().cast::<c_void>();
        let legacy = sys::cudaStreamLegacy();
        let odd = unsafe { h.cast::<u8>().add(1) }.cast::<c_void>();
        let run = |stream, hin: *const c_void, hout: *mut c_void, n, compute: OrdoPipelineFn| unsafe {
            ordo_pipeline_run_on(out, stream, hin, null_mut(), null_mut(), hout, n, compute, null_mut())
        };
        let copy: OrdoPipelineFn = Some(element_compute);
        assert_eq!(run(legacy, h, h, 2, None), ia, "no callback, 12-byte elements");
        assert_eq!(run(legacy, h, h, usize::MAX / 12 + 1, copy), ia, "n * 12 overflows");
        assert_eq!(run(legacy, h, h, 0, copy), ia, "zero elements");
        assert_eq!(run(legacy, odd, h, 2, copy), ia, "misaligned host_in");
        assert_eq!(run(legacy, null(), h, 2, copy), ia, "null host_in");
        assert_eq!(run(null_mut(), h, h, 2, copy), ia, "null stream");
        assert_eq!(run(legacy, h, h, 2, copy), ORDO_ERROR_PAGEABLE_MEMORY, "pageable host memory");
        ordo_pipeline_destroy(out);
        assert_eq!(run(legacy, h, h, 2, copy), ORDO_ERROR_INVALID_HANDLE, "destroyed");
    } else {
        assert!(st > 0, "CUDA's status without a driver: {st}");
    }
}

/// Pipelines held by an open capture (twenty runs in one capture) go back to the pool's limit
/// (16 idle a device) at the first run after the capture has ended.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_the_pipeline_pool_shrinks_back_once_captures_end() {
    // Twenty runs in one capture hold twenty pipelines; after the capture, the next run trims the
    // pool back to its limit (16 idle a device).
    let _gpu = gpu_lock();
    let s = own_stream();
    let n = 1024;
    let (h_in, h_out) = (pinned(n), pinned(n));
    let (d_in, d_out) = (upload(&vec![0f32; n]), upload(&vec![0f32; n]));
    cuda(
        raw(|| unsafe { sys::cudaStreamBeginCapture(s, sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal) }),
        "begin",
    );
    for _ in 0..20 {
        assert_eq!(unsafe { ordo_pipeline_run(s, h_in, d_in, d_out, h_out, n, 2, None, null_mut()) }, ORDO_SUCCESS);
    }
    assert!(pooled_pipelines() >= 20, "{} pooled while the capture holds 20", pooled_pipelines());
    let mut g = null_mut();
    cuda(raw(|| unsafe { sys::cudaStreamEndCapture(s, &mut g) }), "end capture");
    raw(|| unsafe { sys::cudaGraphDestroy(g) });
    assert_eq!(unsafe { ordo_pipeline_run(s, h_in, d_in, d_out, h_out, n, 2, None, null_mut()) }, ORDO_SUCCESS);
    assert!(pooled_pipelines() <= 16, "{} pooled after the capture ended", pooled_pipelines());
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    raw(|| unsafe {
        sys::cudaFreeHost(h_in.cast());
        sys::cudaFreeHost(h_out.cast());
        sys::cudaFree(d_in.cast());
        sys::cudaFree(d_out.cast());
        sys::cudaStreamDestroy(s);
    });
}
