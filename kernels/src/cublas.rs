//! `gemv_normalize` with cuBLAS's `cublasSgemv` for the product (feature `cublas`): cuBLAS itself
//! is loaded at run time by ordo-cuda-libs ([`Cublas`]).

use crate::gemv::{check_gemv, normalize_in_place};
use ordo_cuda_core::{DeviceSlice, DeviceSliceMut, Result, StreamRef};
use ordo_cuda_libs::cublas::Cublas;

/// `y = A x / |A x|` for row-major `a` (`rows x cols`) on `stream`: `cublasSgemv` (after
/// `cublasSetStream` to `stream`), then ordo's normalisation as [`crate::gemv_normalize`] does it
/// (one block up to [`crate::NORMALIZE_ONE_BLOCK_MAX`] rows; beyond, the sum-of-squares and
/// scaling kernels with a temporary from ordo's pool on `stream`). Capturable into a graph.
///
/// # Safety
/// `a`, `x` and `y` stay allocated until the work completes (see the [crate docs](crate#safety)).
pub unsafe fn gemv_normalize(
    blas: &mut Cublas,
    stream: StreamRef<'_>,
    a: DeviceSlice<'_, f32>,
    x: DeviceSlice<'_, f32>,
    y: DeviceSliceMut<'_, f32>,
    rows: usize,
    cols: usize,
) -> Result<()> {
    let (rows_i, cols_i) = check_gemv("cublas::gemv_normalize", &a, &x, &y, rows, cols)?;
    // Row-major A (rows x cols) is column-major A^T (cols x rows): y = (A^T)^T x.
    // SAFETY: sizes checked against the views; the views' memory is the caller's contract.
    unsafe { blas.sgemv(stream, true, cols_i, rows_i, 1.0, a.as_ptr(), cols_i, x.as_ptr(), 0.0, y.as_mut_ptr())? };
    // SAFETY: as in `crate::gemv_normalize`.
    unsafe { normalize_in_place(stream, &y, rows_i, None) }
}
