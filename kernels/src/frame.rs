//! The frame filter: RGB to grayscale, then a 5x5 Gaussian blur, stream-correct; and a vertical
//! blur with a horizontal 2x downsample over one chunk of a stencil pipeline.

use crate::{count_i32, kernel};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::temporaries;
use ordo_cuda_core::pipeline::StencilChunk;
use ordo_cuda_core::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut, Error, MemPoolRef, Result, StreamRef};

/// Grayscale (0.299 R + 0.587 G + 0.114 B) and a 5x5 binomial blur with clamped edges of one
/// interleaved-RGB frame, on `stream`. The grayscale intermediate (4 bytes a pixel) is allocated
/// on `stream` from ordo's pool ([`temporaries`]) and freed
/// on it. Nothing synchronises.
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

/// As [`frame_filter`], its grayscale intermediate (4 bytes a pixel) from `pool` (`None`: ordo's
/// pool, as [`frame_filter`]).
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
    const CALL: &str = "ordo_cuda_kernels::frame_filter";
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
    let mut gray = DeviceBuffer::<f32>::alloc_in_async(pixels, temporaries::pool_for(pool, stream)?, stream)?;
    // SAFETY: sizes checked above; the caller owes the lifetimes of rgb and out; `gray` is freed
    // on `stream` after the kernels.
    unsafe {
        kernel::grayscale().launch(stream, &config, (rgb.as_ptr(), gray.as_mut_ptr(), w, h))?;
        kernel::blur5().launch(stream, &config, (gray.as_ptr(), out.as_mut_ptr(), w, h))?;
    }
    gray.free_async()
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u8 {}
}

/// The input values [`blur_rows_downsample`] takes: `f32` and `u8`.
pub trait BlurInput: DeviceCopy + sealed::Sealed {
    /// The kernel over this input type.
    fn blur_kernel() -> Kernel<(*const Self, *mut f32, i32, i32, i32, i32, i32)>;
}

impl BlurInput for f32 {
    fn blur_kernel() -> Kernel<(*const f32, *mut f32, i32, i32, i32, i32, i32)> {
        kernel::blur_rows_downsample_f32()
    }
}

impl BlurInput for u8 {
    fn blur_kernel() -> Kernel<(*const u8, *mut f32, i32, i32, i32, i32, i32)> {
        kernel::blur_rows_downsample_u8()
    }
}

/// The most `radius` [`blur_rows_downsample`] takes: `2 * radius + 1` rows a mean fit in an `int`.
pub const BLUR_MAX_RADIUS: usize = (i32::MAX as usize - 1) / 2;

/// A vertical box blur of `radius` rows, then a horizontal 2x downsample, over one chunk of a
/// [stencil pipeline](ordo_cuda_core::pipeline::Pipeline::run_stencil) whose input rows hold `width`
/// values and whose output rows hold `width / 2` floats, on `stream`:
/// `out[r][c]` is the mean over `dr` in `-radius..=radius` of
/// `(in[r + dr][2c] + in[r + dr][2c + 1]) / 2`, the row `r + dr` clamped to the rows of
/// `chunk.input` (`chunk.before` rows exist before the first output row, `chunk.after` after it).
/// Run with a halo of at least `radius`, the pipeline clamps the halo at the frame's edges, so the
/// result is the whole frame's blur clamped at its edges, whatever the chunks. Each sum and
/// product is rounded on its own (no fused multiply-add): a CPU reference of the same operations
/// in the same order matches bit for bit.
///
/// Refused before anything is enqueued: a `width` below 2, an `input` that does not hold
/// `before + rows + after` rows of `width` values, an `output` that does not hold `rows` rows of
/// `width / 2`, counts past `i32::MAX`, a `radius` over [`BLUR_MAX_RADIUS`], and more than 524280
/// rows (one grid).
///
/// # Safety
/// The chunk's views stay allocated until the kernel completes (see the [crate docs](crate#safety));
/// the pipeline's views are, for the run.
pub unsafe fn blur_rows_downsample<T: BlurInput>(
    stream: StreamRef<'_>,
    chunk: StencilChunk<'_, T, f32>,
    width: usize,
    radius: usize,
) -> Result<()> {
    const CALL: &str = "ordo_cuda_kernels::blur_rows_downsample";
    if width < 2 {
        return Err(Error::invalid(CALL, "width below 2: no output column"));
    }
    let half = width / 2;
    let view_rows = chunk
        .before
        .checked_add(chunk.rows)
        .and_then(|r| r.checked_add(chunk.after))
        .ok_or(Error::invalid(CALL, "before + rows + after overflows"))?;
    let in_len = view_rows.checked_mul(width).ok_or(Error::invalid(CALL, "input rows * width overflows"))?;
    let out_len = chunk.rows.checked_mul(half).ok_or(Error::invalid(CALL, "rows * width / 2 overflows"))?;
    if chunk.input.len() != in_len || chunk.output.len() != out_len {
        return Err(Error::invalid(
            CALL,
            "lengths must be input: (before + rows + after) * width, output: rows * (width / 2)",
        ));
    }
    if radius > BLUR_MAX_RADIUS {
        return Err(Error::invalid(CALL, "radius over BLUR_MAX_RADIUS"));
    }
    let (w, rows) = (count_i32(width, CALL)?, count_i32(chunk.rows, CALL)?);
    let before = i32::try_from(chunk.before).map_err(|_| Error::invalid(CALL, "before over i32::MAX rows"))?;
    let after = i32::try_from(chunk.after).map_err(|_| Error::invalid(CALL, "after over i32::MAX rows"))?;
    // Checked against BLUR_MAX_RADIUS above.
    let radius = radius as i32;
    let grid = (half.div_ceil(32) as u32, chunk.rows.div_ceil(8) as u32);
    if grid.1 > 65535 {
        return Err(Error::invalid(CALL, "chunk too tall for one grid (over 524280 rows)"));
    }
    let config = LaunchConfig::new(grid, (32u32, 8u32));
    // SAFETY: sizes checked above: the kernel reads rows 0..view_rows of `width` values and writes
    // `rows` rows of `half`; the caller owes the lifetimes.
    unsafe {
        T::blur_kernel().launch(
            stream,
            &config,
            (chunk.input.as_ptr(), chunk.output.as_mut_ptr(), w, rows, before, after, radius),
        )
    }
}
