//! ordo's kernels on the caller's stream: `ordo_gemv_normalize`, `ordo_frame_filter` (each also
//! `_with` allocation options: the pool its temporary comes from), `ordo_pdl_chain`. Each enqueues
//! kernel launches and stream-ordered allocations only, so each may be captured in any mode.
//! Without a pool of the caller's, temporaries come from ordo's pool of the stream's device
//! (`ordo_temporary_pool`; [`temporaries`]).

use super::check::{byte_len, non_null, require_device_on, require_pool_for, stream_device, stream_ref, write_out};
use super::status::{guard, invalid, OrdoStatus, Outcome};
use core::ffi::c_int;
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::{sys, Device, DeviceSlice, DeviceSliceMut, MemPoolRef};
use ordo_cuda_kernels::{ChainPlan, PdlMode};

/// Allocation options of the exports that allocate a temporary (`ordo_alloc_options` in ordo.h):
/// the caller sets `size` to `sizeof(ordo_alloc_options)`, so that later versions can add fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OrdoAllocOptions {
    /// `sizeof(ordo_alloc_options)`, set by the caller.
    pub size: usize,
    /// The pool temporaries come from (NULL: ordo's pool of the device, `ordo_temporary_pool`).
    pub pool: sys::cudaMemPool_t,
}

/// The caller's pool from `options` (NULL options or a NULL pool: `None`), checked: `size`
/// covers this version's struct.
///
/// # Safety
/// A non-null `options` points to `options->size` readable bytes; its pool, if any, is live.
unsafe fn pool_of<'p>(options: *const OrdoAllocOptions) -> Outcome<Option<MemPoolRef<'p>>> {
    if options.is_null() {
        return Ok(None);
    }
    non_null(options, "options")?;
    // SAFETY: checked non-null and aligned; the caller owes `size` readable bytes, so the size
    // field first, then (when it covers this version's struct) the whole.
    if unsafe { options.cast::<usize>().read() } < core::mem::size_of::<OrdoAllocOptions>() {
        return Err(invalid("options.size below this version's sizeof(ordo_alloc_options)"));
    }
    // SAFETY: as above; the pool is the caller's live pool (or NULL).
    Ok(unsafe { MemPoolRef::from_raw(options.read().pool) })
}

/// ordo's pool for the temporaries of the exports that allocate one (`ordo_gemv_normalize`,
/// `ordo_frame_filter` and the pipelines' NULL device buffers, when no pool of the caller's is
/// named) on `device` (-1: the calling thread's current device), made if needed: for setting its
/// release threshold (the cap on what it keeps across synchronisations), trimming it
/// (`cudaMemPoolTrimTo`) or granting peers access. Not to be destroyed.
///
/// # Safety
/// The C contract: `pool` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_temporary_pool(device: c_int, pool: *mut sys::cudaMemPool_t) -> OrdoStatus {
    guard("ordo_temporary_pool", || {
        non_null(pool.cast_const(), "null pool")?;
        let device = match device {
            -1 => Device::current()?,
            d if d >= 0 => Device::new(d as usize)?,
            _ => return Err(invalid("device below -1")),
        };
        write_out(pool, temporaries::pool(device)?.as_raw(), "null pool")
    })
}

/// y = normalize(A x) on `stream`; `a` row-major rows x cols, all device memory; rows 1 to 2^26,
/// cols 1 to 2^31 - 32 (the kernels index in 32 bits).
///
/// # Safety
/// The C contract (ordo.h): `a`, `x` and `y` hold `rows * cols`, `cols` and `rows` floats of
/// device memory that stays allocated until the work completes (at every replay, if captured).
#[no_mangle]
pub unsafe extern "C" fn ordo_gemv_normalize(
    stream: sys::cudaStream_t,
    a: *const f32,
    x: *const f32,
    y: *mut f32,
    rows: usize,
    cols: usize,
) -> OrdoStatus {
    // SAFETY: the caller's contract, passed on; no options.
    unsafe { gemv_normalize_export("ordo_gemv_normalize", core::ptr::null(), stream, a, x, y, rows, cols) }
}

/// As [`ordo_gemv_normalize`], its temporary from `options->pool`.
///
/// # Safety
/// As [`ordo_gemv_normalize`]; a non-null `options` points to `options->size` readable bytes, and
/// its pool, if any, is live until the work completes.
#[no_mangle]
pub unsafe extern "C" fn ordo_gemv_normalize_with(
    options: *const OrdoAllocOptions,
    stream: sys::cudaStream_t,
    a: *const f32,
    x: *const f32,
    y: *mut f32,
    rows: usize,
    cols: usize,
) -> OrdoStatus {
    // SAFETY: the caller's contract, passed on.
    unsafe { gemv_normalize_export("ordo_gemv_normalize_with", options, stream, a, x, y, rows, cols) }
}

/// The body of both gemv exports.
///
/// # Safety
/// As [`ordo_gemv_normalize_with`].
#[allow(clippy::too_many_arguments)]
unsafe fn gemv_normalize_export(
    export: &'static str,
    options: *const OrdoAllocOptions,
    stream: sys::cudaStream_t,
    a: *const f32,
    x: *const f32,
    y: *mut f32,
    rows: usize,
    cols: usize,
) -> OrdoStatus {
    guard(export, || {
        // SAFETY: the caller's contract.
        let pool = unsafe { pool_of(options) }?;
        let s = stream_ref(stream)?;
        non_null(a, "null a")?;
        non_null(x, "null x")?;
        non_null(y, "null y")?;
        let cells = rows.checked_mul(cols).ok_or_else(|| invalid("rows * cols overflows"))?;
        byte_len::<f32>(cells)?;
        // The kernels' limits (32-bit indexing), before anything reaches CUDA.
        ordo_cuda_kernels::check_gemv_shape("ordo_gemv_normalize", rows, cols)?;
        let device = stream_device(s)?;
        for p in [a, x, y.cast_const()] {
            require_device_on(p.cast(), device)?;
        }
        require_pool_for(pool, device)?;
        // SAFETY: the C contract: device buffers of the stated sizes, live until the work completes.
        unsafe {
            ordo_cuda_kernels::gemv_normalize_in(
                s,
                pool,
                DeviceSlice::from_raw_parts(a, cells),
                DeviceSlice::from_raw_parts(x, cols),
                DeviceSliceMut::from_raw_parts(y, rows),
                rows,
                cols,
            )
        }?;
        Ok(())
    })
}

/// Grayscale + 5x5 Gaussian blur of one interleaved-RGB frame on `stream` (device memory).
///
/// # Safety
/// The C contract: `rgb` holds `width * height * 3` bytes and `out` `width * height` bytes of
/// device memory, allocated until the work completes.
#[no_mangle]
pub unsafe extern "C" fn ordo_frame_filter(
    stream: sys::cudaStream_t,
    rgb: *const u8,
    out: *mut u8,
    width: usize,
    height: usize,
) -> OrdoStatus {
    // SAFETY: the caller's contract, passed on; no options.
    unsafe { frame_filter_export("ordo_frame_filter", core::ptr::null(), stream, rgb, out, width, height) }
}

/// As [`ordo_frame_filter`], its intermediate from `options->pool`.
///
/// # Safety
/// As [`ordo_frame_filter`]; a non-null `options` points to `options->size` readable bytes, and
/// its pool, if any, is live until the work completes.
#[no_mangle]
pub unsafe extern "C" fn ordo_frame_filter_with(
    options: *const OrdoAllocOptions,
    stream: sys::cudaStream_t,
    rgb: *const u8,
    out: *mut u8,
    width: usize,
    height: usize,
) -> OrdoStatus {
    // SAFETY: the caller's contract, passed on.
    unsafe { frame_filter_export("ordo_frame_filter_with", options, stream, rgb, out, width, height) }
}

/// The body of both frame-filter exports.
///
/// # Safety
/// As [`ordo_frame_filter_with`].
unsafe fn frame_filter_export(
    export: &'static str,
    options: *const OrdoAllocOptions,
    stream: sys::cudaStream_t,
    rgb: *const u8,
    out: *mut u8,
    width: usize,
    height: usize,
) -> OrdoStatus {
    guard(export, || {
        // SAFETY: the caller's contract.
        let pool = unsafe { pool_of(options) }?;
        let s = stream_ref(stream)?;
        non_null(rgb, "null rgb")?;
        non_null(out, "null out")?;
        let pixels = width.checked_mul(height).ok_or_else(|| invalid("width * height overflows"))?;
        let rgb_len = pixels.checked_mul(3).ok_or_else(|| invalid("width * height * 3 overflows"))?;
        byte_len::<u8>(rgb_len)?;
        let device = stream_device(s)?;
        require_device_on(rgb.cast(), device)?;
        require_device_on(out.cast_const().cast(), device)?;
        require_pool_for(pool, device)?;
        // SAFETY: the C contract.
        unsafe {
            ordo_cuda_kernels::frame_filter_in(
                s,
                pool,
                DeviceSlice::from_raw_parts(rgb, rgb_len),
                DeviceSliceMut::from_raw_parts(out, pixels),
                width,
                height,
            )
        }?;
        Ok(())
    })
}

/// `steps` dependent kernels out = prev * scale + 1 ping-ponging between `a` and `b` on `stream`.
/// `pdl`: 0 off (the step compiled without `griddepcontrol`, one element a thread: what a caller
/// writes without PDL), 1 ordo's rule (PDL within one wave; beyond, a one-wave grid-stride grid, with PDL up to four
/// waves of work). `steps` 1 to 2^24;
/// `a` and `b` one buffer or disjoint; `scale` disjoint from both (the Rust API's checks,
/// [`ordo_cuda_kernels::chain::check_chain`], made before anything reaches CUDA).
///
/// # Safety
/// The C contract: `a`, `b` and `scale` hold `n` floats of device memory, allocated until the
/// work completes.
#[no_mangle]
pub unsafe extern "C" fn ordo_pdl_chain(
    stream: sys::cudaStream_t,
    a: *mut f32,
    b: *mut f32,
    scale: *const f32,
    n: usize,
    steps: usize,
    pdl: c_int,
) -> OrdoStatus {
    guard("ordo_pdl_chain", || {
        let s = stream_ref(stream)?;
        non_null(a, "null a")?;
        non_null(b, "null b")?;
        non_null(scale, "null scale")?;
        byte_len::<f32>(n)?;
        let mode = match pdl {
            0 => PdlMode::Plain,
            1 => PdlMode::Auto,
            _ => return Err(invalid("pdl must be 0 or 1")),
        };
        ordo_cuda_kernels::chain::check_chain(a.cast_const(), b.cast_const(), scale, n, steps)?;
        let device = stream_device(s)?;
        for p in [a.cast_const(), b.cast_const(), scale] {
            require_device_on(p.cast(), device)?;
        }
        let plan = ChainPlan::new(device, n, mode)?;
        // SAFETY: the C contract.
        unsafe {
            ordo_cuda_kernels::chain(
                s,
                DeviceSliceMut::from_raw_parts(a, n),
                DeviceSliceMut::from_raw_parts(b, n),
                DeviceSlice::from_raw_parts(scale, n),
                steps,
                &plan,
            )
        }?;
        Ok(())
    })
}
