//! `gemv_normalize`: y = normalize(A x), stream-correct.

use crate::{count_i32, kernel, BLOCK};
use ordo_core::launch::LaunchConfig;
use ordo_core::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

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
    const CALL: &str = "ordo_kernels::gemv_normalize";
    let cells = rows.checked_mul(cols).ok_or(Error::invalid(CALL, "rows * cols overflows"))?;
    if a.len() != cells || x.len() != cols || y.len() != rows {
        return Err(Error::invalid(CALL, "lengths must be a: rows*cols, x: cols, y: rows"));
    }
    let (rows_i, cols_i) = (count_i32(rows, CALL)?, count_i32(cols, CALL)?);
    let warps_per_block = (BLOCK / 32) as usize;
    let gemv_config = LaunchConfig::for_elements(rows.div_ceil(warps_per_block) * BLOCK as usize, BLOCK)?;
    let sum_blocks = rows.div_ceil(BLOCK as usize).min(1024) as u32;
    let sum_config = LaunchConfig::new(sum_blocks, BLOCK);
    let scale_config = LaunchConfig::for_elements(rows, BLOCK)?;

    let mut sum_sq = DeviceBuffer::<f32>::zeroed_async(1, stream)?;
    // SAFETY: sizes checked above; the caller owes the lifetimes of a, x, y; `sum_sq` is freed on
    // `stream` after the kernels.
    unsafe {
        kernel::gemv().launch(stream, &gemv_config, (a.as_ptr(), x.as_ptr(), y.as_mut_ptr(), rows_i, cols_i))?;
        kernel::sum_squares().launch(stream, &sum_config, (y.as_mut_ptr() as *const f32, sum_sq.as_mut_ptr(), rows_i))?;
        kernel::normalize().launch(stream, &scale_config, (y.as_mut_ptr(), sum_sq.as_ptr(), rows_i))?;
    }
    sum_sq.free_async()
}
