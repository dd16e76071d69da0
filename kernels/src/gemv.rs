//! `gemv_normalize`: y = normalize(A x), stream-correct; the checks and the normalisation are
//! shared with the cuBLAS variant.

use crate::{count_i32, kernel, BLOCK};
use ordo_core::launch::LaunchConfig;
use ordo_core::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

/// Checks the lengths of a `rows x cols` gemv and returns `(rows, cols)` as the kernels' `int`s.
pub(crate) fn check_gemv(
    call: &'static str,
    a: &DeviceSlice<'_, f32>,
    x: &DeviceSlice<'_, f32>,
    y: &DeviceSliceMut<'_, f32>,
    rows: usize,
    cols: usize,
) -> Result<(i32, i32)> {
    let cells = rows.checked_mul(cols).ok_or(Error::invalid(call, "rows * cols overflows"))?;
    if a.len() != cells || x.len() != cols || y.len() != rows {
        return Err(Error::invalid(call, "lengths must be a: rows*cols, x: cols, y: rows"));
    }
    Ok((count_i32(rows, call)?, count_i32(cols, call)?))
}

/// `y /= |y|` on `stream`: a sum of squares into a temporary from `cudaMallocAsync` on `stream`,
/// then the scaling; the temporary is freed with `cudaFreeAsync` on `stream`.
///
/// # Safety
/// `y` holds `n` elements and stays allocated until the kernels complete.
pub(crate) unsafe fn normalize_in_place(stream: StreamRef<'_>, y: &DeviceSliceMut<'_, f32>, n: i32) -> Result<()> {
    let rows = n as usize;
    let sum_config = LaunchConfig::new(rows.div_ceil(BLOCK as usize).min(1024) as u32, BLOCK);
    let scale_config = LaunchConfig::for_elements(rows, BLOCK)?;
    let mut sum_sq = DeviceBuffer::<f32>::zeroed_async(1, stream)?;
    // SAFETY: `y` holds n elements (the caller's contract); `sum_sq` is freed on `stream` after the kernels.
    unsafe {
        kernel::sum_squares().launch(stream, &sum_config, (y.as_mut_ptr() as *const f32, sum_sq.as_mut_ptr(), n))?;
        kernel::normalize().launch(stream, &scale_config, (y.as_mut_ptr(), sum_sq.as_ptr(), n))?;
    }
    sum_sq.free_async()
}

/// `y = A x / |A x|` for row-major `a` (`rows x cols`), on `stream`: the gemv kernel (one warp a
/// row), a sum of squares into a temporary from `cudaMallocAsync` on `stream`, and the scaling; the
/// temporary is freed with `cudaFreeAsync` on `stream`. Nothing synchronises. `y` is left as `A x`
/// when that is all zeros.
///
/// # Safety
/// `a`, `x` and `y` stay allocated until the kernels complete (see the [crate docs](crate#safety)).
pub unsafe fn gemv_normalize(
    stream: StreamRef<'_>,
    a: DeviceSlice<'_, f32>,
    x: DeviceSlice<'_, f32>,
    y: DeviceSliceMut<'_, f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (rows_i, cols_i) = check_gemv("ordo_kernels::gemv_normalize", &a, &x, &y, rows, cols)?;
    let warps_per_block = (BLOCK / 32) as usize;
    let gemv_config = LaunchConfig::for_elements(rows.div_ceil(warps_per_block) * BLOCK as usize, BLOCK)?;
    // SAFETY: sizes checked above; the caller owes the lifetimes of a, x, y.
    unsafe {
        kernel::gemv().launch(stream, &gemv_config, (a.as_ptr(), x.as_ptr(), y.as_mut_ptr(), rows_i, cols_i))?;
        normalize_in_place(stream, &y, rows_i)
    }
}
