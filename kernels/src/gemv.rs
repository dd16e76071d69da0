//! `gemv_normalize`: y = normalize(A x), stream-correct; the checks and the normalisation are
//! shared with the cuBLAS variant.

use crate::{count_i32, kernel, BLOCK};
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, MemPoolRef, Result, StreamRef};

/// The most rows [`gemv_normalize`] takes: the gemv kernel gives each row a warp, and its thread
/// index (`blockIdx.x * blockDim.x + threadIdx.x`, an `int`) must stay below 2^31, so at most
/// 2^31 / 32 rows.
pub const GEMV_MAX_ROWS: usize = 1 << 26;

/// The most columns [`gemv_normalize`] takes: the kernel's column loop (`int j; j += 32`) must not
/// overflow past `cols`.
pub const GEMV_MAX_COLS: usize = (1 << 31) - 32;

/// Checks the shape of a `rows x cols` gemv against the kernels' 32-bit indexing (zero,
/// over [`GEMV_MAX_ROWS`] rows or over [`GEMV_MAX_COLS`] columns: a usage error) and returns
/// `(rows, cols)` as the kernels' `int`s. Made by [`gemv_normalize`] and by the C ABI before
/// anything reaches CUDA.
pub fn check_gemv_shape(call: &'static str, rows: usize, cols: usize) -> Result<(i32, i32)> {
    if rows > GEMV_MAX_ROWS {
        return Err(Error::invalid(
            call,
            "more than GEMV_MAX_ROWS (2^26) rows: the kernel's int thread index would overflow",
        ));
    }
    if cols > GEMV_MAX_COLS {
        return Err(Error::invalid(
            call,
            "more than GEMV_MAX_COLS (2^31 - 32) columns: the kernel's int column index would overflow",
        ));
    }
    Ok((count_i32(rows, call)?, count_i32(cols, call)?))
}

/// Checks the lengths of a `rows x cols` gemv and its shape ([`check_gemv_shape`]) and returns
/// `(rows, cols)` as the kernels' `int`s.
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
    check_gemv_shape(call, rows, cols)
}

/// The most rows [`gemv_normalize`] normalises in one block, with no temporary
/// (`ordok_normalize_block`: one element a thread, the sum in shared memory): one kernel, where
/// more rows take a 4-byte temporary, a memset and two kernels. A decode step's batch, a
/// classifier's logits.
///
/// The two paths give graphs of different shapes (up to the limit one kernel node; beyond, an
/// allocation node, a memset, two kernels and a free node), so a graph captured on one side of
/// the limit cannot be updated (`GraphExec::update`) from a capture on the other; their results
/// may differ in the last bits (one block's sum against per-block sums added atomically).
pub const NORMALIZE_ONE_BLOCK_MAX: usize = 1024;

/// `y /= |y|` on `stream`. Up to [`NORMALIZE_ONE_BLOCK_MAX`] elements: one block, no temporary
/// (`pool` unused). More: a sum of squares into a temporary from `pool` (`None`: ordo's pool,
/// [`temporaries`]) on `stream`, then the scaling; the temporary is freed with `cudaFreeAsync` on
/// `stream`.
///
/// # Safety
/// `y` holds `n` elements and stays allocated until the kernels complete.
pub(crate) unsafe fn normalize_in_place(
    stream: StreamRef<'_>,
    y: &DeviceSliceMut<'_, f32>,
    n: i32,
    pool: Option<MemPoolRef<'_>>,
) -> Result<()> {
    let rows = n as usize;
    if rows <= NORMALIZE_ONE_BLOCK_MAX {
        // A whole number of warps, at least one: the kernel's reduction reads every warp's sum.
        let threads = rows.div_ceil(32).max(1) * 32;
        let config = LaunchConfig::new(1, threads as u32);
        // SAFETY: `y` holds n <= 1024 elements (the caller's contract), one thread each.
        return unsafe { kernel::normalize_block().launch(stream, &config, (y.as_mut_ptr(), n)) };
    }
    let sum_config = LaunchConfig::new(rows.div_ceil(BLOCK as usize).min(1024) as u32, BLOCK);
    let scale_config = LaunchConfig::for_elements(rows, BLOCK)?;
    let mut sum_sq = DeviceBuffer::<f32>::zeroed_in_async(1, temporaries::pool_for(pool, stream)?, stream)?;
    // SAFETY: `y` holds n elements (the caller's contract); `sum_sq` is freed on `stream` after the kernels.
    unsafe {
        kernel::sum_squares().launch(stream, &sum_config, (y.as_mut_ptr() as *const f32, sum_sq.as_mut_ptr(), n))?;
        kernel::normalize().launch(stream, &scale_config, (y.as_mut_ptr(), sum_sq.as_ptr(), n))?;
    }
    sum_sq.free_async()
}

/// `y = A x / |A x|` for row-major `a` (`rows x cols`), on `stream`: the gemv kernel (one warp a
/// row), then the normalisation: up to [`NORMALIZE_ONE_BLOCK_MAX`] rows in one block with no
/// temporary; more rows through a sum of squares into a 4-byte temporary allocated on `stream`
/// from ordo's pool (which keeps its memory mapped across synchronisations: [`temporaries`]) and
/// the scaling, the temporary freed with `cudaFreeAsync` on `stream`. Nothing synchronises. `y`
/// is left as `A x` when that is all zeros. At most [`GEMV_MAX_ROWS`] rows and
/// [`GEMV_MAX_COLS`] columns (the kernels index in 32 bits): a usage error beyond.
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
    // SAFETY: the caller's contract, passed on.
    unsafe { gemv_normalize_in(stream, None, a, x, y, rows, cols) }
}

/// As [`gemv_normalize`], its temporary (4 bytes, over [`NORMALIZE_ONE_BLOCK_MAX`] rows) from
/// `pool` (`None`: ordo's pool, as [`gemv_normalize`]).
///
/// # Safety
/// As [`gemv_normalize`].
pub unsafe fn gemv_normalize_in(
    stream: StreamRef<'_>,
    pool: Option<MemPoolRef<'_>>,
    a: DeviceSlice<'_, f32>,
    x: DeviceSlice<'_, f32>,
    y: DeviceSliceMut<'_, f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (rows_i, cols_i) = check_gemv("ordo_cuda_kernels::gemv_normalize", &a, &x, &y, rows, cols)?;
    let warps_per_block = (BLOCK / 32) as usize;
    let gemv_config = LaunchConfig::for_elements(rows.div_ceil(warps_per_block) * BLOCK as usize, BLOCK)?;
    // SAFETY: sizes checked above; the caller owes the lifetimes of a, x, y.
    unsafe {
        kernel::gemv().launch(stream, &gemv_config, (a.as_ptr(), x.as_ptr(), y.as_mut_ptr(), rows_i, cols_i))?;
        normalize_in_place(stream, &y, rows_i, pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_past_the_kernels_int_indexing_are_refused() {
        const CALL: &str = "test";
        assert_eq!(check_gemv_shape(CALL, GEMV_MAX_ROWS, 1).unwrap(), (1 << 26, 1));
        assert_eq!(check_gemv_shape(CALL, 1, GEMV_MAX_COLS).unwrap(), (1, i32::MAX - 31));
        // 2^26 + 1 rows: the last warp's thread index passes 2^31 and wraps negative in the kernel.
        for (rows, cols) in
            [(GEMV_MAX_ROWS + 1, 1), (1 << 27, 1), (1, GEMV_MAX_COLS + 1), (0, 1), (1, 0), (usize::MAX, 1)]
        {
            let e = check_gemv_shape(CALL, rows, cols).unwrap_err();
            assert!(matches!(e, Error::Usage(_)), "{rows} x {cols}: {e:?}");
        }
        // The launch arithmetic of `gemv_normalize` at the limit: the grid's threads reach 2^31 and
        // no further, so the largest thread index fits the kernel's int.
        let warps_per_block = (BLOCK / 32) as usize;
        let threads = GEMV_MAX_ROWS.div_ceil(warps_per_block) * BLOCK as usize;
        assert_eq!(threads, 1 << 31);
        let over = (GEMV_MAX_ROWS + 1).div_ceil(warps_per_block) * BLOCK as usize;
        assert!(over > 1 << 31);
    }
}
