//! The frame filter: RGB to grayscale, then a 5x5 Gaussian blur, stream-correct.

use crate::{count_i32, kernel};
use ordo_core::launch::LaunchConfig;
use ordo_core::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, MemPoolRef, Result, StreamRef};

/// Grayscale (0.299 R + 0.587 G + 0.114 B) and a 5x5 binomial blur with clamped edges of one
/// interleaved-RGB frame, on `stream`. The grayscale intermediate comes from `cudaMallocAsync` on
/// `stream` and is freed on it. Nothing synchronises.
///
/// # Safety
/// `rgb` and `out` stay allocated until the kernels complete (see the [crate docs](crate#safety)).
pub unsafe fn frame_filter(
    stream: StreamRef<'_>,
    rgb: DeviceSlice<'_, u8>,
    out: DeviceSliceMut<'_, u8>,
    width: usize,
    height: usize,
) -> Result<()> {
    // SAFETY: the caller's contract, passed on.
    unsafe { frame_filter_in(stream, None, rgb, out, width, height) }
}

/// As [`frame_filter`], its grayscale intermediate (4 bytes a pixel) from `pool` (`None`: the
/// device's current pool).
///
/// # Safety
/// As [`frame_filter`].
pub unsafe fn frame_filter_in(
    stream: StreamRef<'_>,
    pool: Option<MemPoolRef<'_>>,
    rgb: DeviceSlice<'_, u8>,
    out: DeviceSliceMut<'_, u8>,
    width: usize,
    height: usize,
) -> Result<()> {
    const CALL: &str = "ordo_kernels::frame_filter";
    let pixels = width.checked_mul(height).ok_or(Error::invalid(CALL, "width * height overflows"))?;
    let rgb_len = pixels.checked_mul(3).ok_or(Error::invalid(CALL, "width * height * 3 overflows"))?;
    if rgb.len() != rgb_len || out.len() != pixels {
        return Err(Error::invalid(CALL, "lengths must be rgb: width*height*3, out: width*height"));
    }
    let (w, h) = (count_i32(width, CALL)?, count_i32(height, CALL)?);
    let block = (32u32, 8u32);
    let grid = (width.div_ceil(32) as u32, height.div_ceil(8) as u32);
    if grid.1 > 65535 {
        return Err(Error::invalid(CALL, "frame too tall for one grid (height over 524280)"));
    }
    let config = LaunchConfig::new(grid, block);
    let mut gray = DeviceBuffer::<f32>::alloc_in_async(pixels, pool, stream)?;
    // SAFETY: sizes checked above; the caller owes the lifetimes of rgb and out; `gray` is freed
    // on `stream` after the kernels.
    unsafe {
        kernel::grayscale().launch(stream, &config, (rgb.as_ptr(), gray.as_mut_ptr(), w, h))?;
        kernel::blur5().launch(stream, &config, (gray.as_ptr(), out.as_mut_ptr(), w, h))?;
    }
    gray.free_async()
}
