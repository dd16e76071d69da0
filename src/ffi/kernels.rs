//! ordo's kernels on the caller's stream: `ordo_gemv_normalize`, `ordo_frame_filter`,
//! `ordo_pdl_chain`. Each enqueues kernel launches only, so each may be captured in any mode.

use super::check::{byte_len, non_null, require_device_on, stream_device, stream_ref};
use super::status::{guard, invalid, OrdoStatus};
use core::ffi::c_int;
use ordo_core::{sys, DeviceSlice, DeviceSliceMut};
use ordo_kernels::{ChainPlan, PdlMode};

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
    guard("ordo_gemv_normalize", || {
        let s = stream_ref(stream)?;
        non_null(a, "null a")?;
        non_null(x, "null x")?;
        non_null(y, "null y")?;
        let cells = rows.checked_mul(cols).ok_or_else(|| invalid("rows * cols overflows"))?;
        byte_len::<f32>(cells)?;
        // The kernels' limits (32-bit indexing), before anything reaches CUDA.
        ordo_kernels::check_gemv_shape("ordo_gemv_normalize", rows, cols)?;
        let device = stream_device(s)?;
        for p in [a, x, y.cast_const()] {
            require_device_on(p.cast(), device)?;
        }
        // SAFETY: the C contract: device buffers of the stated sizes, live until the work completes.
        unsafe {
            ordo_kernels::gemv_normalize(
                s,
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
    guard("ordo_frame_filter", || {
        let s = stream_ref(stream)?;
        non_null(rgb, "null rgb")?;
        non_null(out, "null out")?;
        let pixels = width.checked_mul(height).ok_or_else(|| invalid("width * height overflows"))?;
        let rgb_len = pixels.checked_mul(3).ok_or_else(|| invalid("width * height * 3 overflows"))?;
        byte_len::<u8>(rgb_len)?;
        let device = stream_device(s)?;
        require_device_on(rgb.cast(), device)?;
        require_device_on(out.cast_const().cast(), device)?;
        // SAFETY: the C contract.
        unsafe {
            ordo_kernels::frame_filter(
                s,
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
/// [`ordo_kernels::chain::check_chain`], made before anything reaches CUDA).
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
        ordo_kernels::chain::check_chain(a.cast_const(), b.cast_const(), scale, n, steps)?;
        let device = stream_device(s)?;
        for p in [a.cast_const(), b.cast_const(), scale] {
            require_device_on(p.cast(), device)?;
        }
        let plan = ChainPlan::new(device, n, mode)?;
        // SAFETY: the C contract.
        unsafe {
            ordo_kernels::chain(
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
