//! ordo's kernels on the caller's stream: `ordo_gemv_normalize`, `ordo_frame_filter` (each also
//! `_with` allocation options: the pool its temporary comes from), `ordo_pdl_chain`. Each enqueues
//! kernel launches and stream-ordered allocations only, so each may be captured in any mode.
//! Without a pool of the caller's, temporaries come from ordo's pool of the stream's device
//! (`ordo_temporary_pool`; [`temporaries`]).
//!
//! The kernels are built by nvcc (feature `kernels`, on by default). Without the feature these
//! exports still exist, so that the ABI is the same in every build, and return
//! `ORDO_ERROR_NOT_SUPPORTED` naming the feature.

use super::check::{non_null, write_out};
use super::status::{guard, invalid, OrdoStatus};
use core::ffi::c_int;
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::{sys, Device};

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
        non_null(pool.cast_const(), "pool")?;
        let device = match device {
            -1 => Device::current()?,
            d if d >= 0 => Device::new(d as usize)?,
            _ => return Err(invalid("device", "below -1")),
        };
        write_out(pool, temporaries::pool(device)?.as_raw(), "pool")
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
    guard("ordo_gemv_normalize", || {
        // SAFETY: the caller's contract, passed on; no options.
        unsafe { run::gemv_normalize(core::ptr::null(), stream, a, x, y, rows, cols) }
    })
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
    guard("ordo_gemv_normalize_with", || {
        // SAFETY: the caller's contract, passed on.
        unsafe { run::gemv_normalize(options, stream, a, x, y, rows, cols) }
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
        // SAFETY: the caller's contract, passed on; no options.
        unsafe { run::frame_filter(core::ptr::null(), stream, rgb, out, width, height) }
    })
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
    guard("ordo_frame_filter_with", || {
        // SAFETY: the caller's contract, passed on.
        unsafe { run::frame_filter(options, stream, rgb, out, width, height) }
    })
}

/// `steps` dependent kernels out = prev * scale + 1 ping-ponging between `a` and `b` on `stream`.
/// `pdl`: 0 off (the step compiled without `griddepcontrol`, one element a thread: what a caller
/// writes without PDL), 1 ordo's rule (PDL within one wave; beyond, a one-wave grid-stride grid,
/// with PDL up to four waves of work). `steps` 1 to 2^24; `a` and `b` one buffer or disjoint;
/// `scale` disjoint from both (the Rust API's checks, `ordo_cuda_kernels::chain::check_chain`,
/// made before anything reaches CUDA).
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
        // SAFETY: the caller's contract, passed on.
        unsafe { run::pdl_chain(stream, a, b, scale, n, steps, pdl) }
    })
}

/// The bodies of the exports, with the kernels.
#[cfg(feature = "kernels")]
mod run {
    use super::super::check::{byte_len, non_null, read_options, require_device_on, require_pool_for};
    use super::super::check::{stream_device, stream_ref};
    use super::super::status::{invalid, Outcome};
    use super::OrdoAllocOptions;
    use core::ffi::c_int;
    use ordo_cuda_core::{sys, DeviceSlice, DeviceSliceMut, MemPoolRef};
    use ordo_cuda_kernels::{ChainPlan, PdlMode};

    /// The caller's pool from `options` (NULL options or a NULL pool: `None`), checked: `size`
    /// covers this version's struct.
    ///
    /// # Safety
    /// A non-null `options` points to `options->size` readable bytes; its pool, if any, is live.
    unsafe fn pool_of<'p>(options: *const OrdoAllocOptions) -> Outcome<Option<MemPoolRef<'p>>> {
        // SAFETY: the caller's contract.
        let options = unsafe { read_options(options, "options") }?;
        // SAFETY: the caller's live pool (or NULL).
        Ok(options.and_then(|o| unsafe { MemPoolRef::from_raw(o.pool) }))
    }

    /// # Safety
    /// As `ordo_gemv_normalize_with`.
    pub(super) unsafe fn gemv_normalize(
        options: *const OrdoAllocOptions,
        stream: sys::cudaStream_t,
        a: *const f32,
        x: *const f32,
        y: *mut f32,
        rows: usize,
        cols: usize,
    ) -> Outcome {
        // SAFETY: the caller's contract.
        let pool = unsafe { pool_of(options) }?;
        let s = stream_ref(stream)?;
        non_null(a, "a")?;
        non_null(x, "x")?;
        non_null(y, "y")?;
        let cells = rows.checked_mul(cols).ok_or_else(|| invalid("rows", "rows * cols overflows"))?;
        byte_len::<f32>(cells, "rows")?;
        // The kernels' limits (32-bit indexing), before anything reaches CUDA.
        ordo_cuda_kernels::check_gemv_shape("ordo_gemv_normalize", rows, cols)?;
        let device = stream_device(s)?;
        for (p, arg) in [(a, "a"), (x, "x"), (y.cast_const(), "y")] {
            require_device_on(p.cast(), device, arg)?;
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
    }

    /// # Safety
    /// As `ordo_frame_filter_with`.
    pub(super) unsafe fn frame_filter(
        options: *const OrdoAllocOptions,
        stream: sys::cudaStream_t,
        rgb: *const u8,
        out: *mut u8,
        width: usize,
        height: usize,
    ) -> Outcome {
        // SAFETY: the caller's contract.
        let pool = unsafe { pool_of(options) }?;
        let s = stream_ref(stream)?;
        non_null(rgb, "rgb")?;
        non_null(out, "out")?;
        let pixels = width.checked_mul(height).ok_or_else(|| invalid("width", "width * height overflows"))?;
        let rgb_len = pixels.checked_mul(3).ok_or_else(|| invalid("width", "width * height * 3 overflows"))?;
        byte_len::<u8>(rgb_len, "width")?;
        let device = stream_device(s)?;
        require_device_on(rgb.cast(), device, "rgb")?;
        require_device_on(out.cast_const().cast(), device, "out")?;
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
    }

    /// # Safety
    /// As `ordo_pdl_chain`.
    pub(super) unsafe fn pdl_chain(
        stream: sys::cudaStream_t,
        a: *mut f32,
        b: *mut f32,
        scale: *const f32,
        n: usize,
        steps: usize,
        pdl: c_int,
    ) -> Outcome {
        let s = stream_ref(stream)?;
        non_null(a, "a")?;
        non_null(b, "b")?;
        non_null(scale, "scale")?;
        byte_len::<f32>(n, "n")?;
        let mode = match pdl {
            0 => PdlMode::Plain,
            1 => PdlMode::Auto,
            _ => return Err(invalid("pdl", "must be 0 or 1")),
        };
        ordo_cuda_kernels::chain::check_chain(a.cast_const(), b.cast_const(), scale, n, steps)?;
        let device = stream_device(s)?;
        for (p, arg) in [(a.cast_const(), "a"), (b.cast_const(), "b"), (scale, "scale")] {
            require_device_on(p.cast(), device, arg)?;
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
    }
}

/// The exports' answer without the kernels: `ORDO_ERROR_NOT_SUPPORTED`, naming the feature.
#[cfg(not(feature = "kernels"))]
mod run {
    use super::super::status::{missing_feature, Outcome};
    use super::OrdoAllocOptions;
    use core::ffi::c_int;
    use ordo_cuda_core::sys;

    pub(super) unsafe fn gemv_normalize(
        _: *const OrdoAllocOptions,
        _: sys::cudaStream_t,
        _: *const f32,
        _: *const f32,
        _: *mut f32,
        _: usize,
        _: usize,
    ) -> Outcome {
        Err(missing_feature("kernels"))
    }

    pub(super) unsafe fn frame_filter(
        _: *const OrdoAllocOptions,
        _: sys::cudaStream_t,
        _: *const u8,
        _: *mut u8,
        _: usize,
        _: usize,
    ) -> Outcome {
        Err(missing_feature("kernels"))
    }

    pub(super) unsafe fn pdl_chain(
        _: sys::cudaStream_t,
        _: *mut f32,
        _: *mut f32,
        _: *const f32,
        _: usize,
        _: usize,
        _: c_int,
    ) -> Outcome {
        Err(missing_feature("kernels"))
    }
}

#[cfg(all(test, not(feature = "kernels")))]
mod tests {
    use super::*;
    use crate::status::ORDO_ERROR_NOT_SUPPORTED;

    /// Built without the kernels, every kernel export exists and refuses with the feature's name.
    #[test]
    fn without_the_kernels_feature_the_exports_say_so() {
        let s = sys::cudaStreamPerThread();
        let mut info = crate::last_error::OrdoErrorInfo {
            size: core::mem::size_of::<crate::last_error::OrdoErrorInfo>(),
            status: 0,
            cuda_error: 0,
            library_status: 0,
            sticky: 0,
            call: [0; crate::last_error::ORDO_LAST_ERROR_CALL_LEN],
            message: [0; crate::last_error::ORDO_LAST_ERROR_MESSAGE_LEN],
        };
        let (null, null_mut) = (core::ptr::null::<f32>(), core::ptr::null_mut::<f32>());
        // SAFETY (every call): refused before any pointer would be read.
        let calls: [&dyn Fn() -> OrdoStatus; 5] = [
            &|| unsafe { ordo_gemv_normalize(s, null, null, null_mut, 4, 4) },
            &|| unsafe { ordo_gemv_normalize_with(core::ptr::null(), s, null, null, null_mut, 4, 4) },
            &|| unsafe { ordo_frame_filter(s, core::ptr::null(), core::ptr::null_mut(), 4, 4) },
            &|| unsafe { ordo_frame_filter_with(core::ptr::null(), s, core::ptr::null(), core::ptr::null_mut(), 4, 4) },
            &|| unsafe { ordo_pdl_chain(s, null_mut, null_mut, null, 4, 1, 1) },
        ];
        for call in calls {
            let st = call();
            assert_eq!(st, ORDO_ERROR_NOT_SUPPORTED);
            // SAFETY: a record of this version's size.
            assert_eq!(unsafe { crate::last_error::ordo_last_error(&mut info) }, 0);
            // SAFETY: NUL-terminated by ordo_last_error.
            let message = unsafe { core::ffi::CStr::from_ptr(info.message.as_ptr()) }.to_string_lossy();
            assert!(message.contains("`kernels` feature"), "{message}");
        }
    }
}
