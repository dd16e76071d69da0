//! # ordo-cuda-kernels
//!
//! ordo's CUDA C kernels, their typed [`Kernel`](ordo_cuda_core::Kernel) handles, and stream-correct
//! functions built on them: each takes your stream, enqueues everything on it and never synchronises.
//!
//! ```no_run
//! use ordo_cuda_core::memory::copy;
//! use ordo_cuda_core::{DeviceBuffer, Stream};
//!
//! fn main() -> ordo_cuda_core::Result<()> {
//!     let (rows, cols) = (1024, 512);
//!     let stream = Stream::new()?;
//!     let s = stream.as_stream();
//!     let mut a = DeviceBuffer::<f32>::alloc_async(rows * cols, s)?;
//!     let mut x = DeviceBuffer::<f32>::alloc_async(cols, s)?;
//!     let mut y = DeviceBuffer::<f32>::alloc_async(rows, s)?;
//!     copy::h2d_blocking(a.as_mut_slice(), &vec![0.5; rows * cols], s)?;
//!     copy::h2d_blocking(x.as_mut_slice(), &vec![1.0; cols], s)?;
//!     // y = A x / |A x|: the kernels and their temporaries on `s`, nothing synchronised.
//!     // SAFETY: the buffers are freed on `s`, after the kernels.
//!     unsafe { ordo_cuda_kernels::gemv_normalize(s, a.as_slice(), x.as_slice(), y.as_mut_slice(), rows, cols)? };
//!     let mut out = vec![0.0; rows];
//!     copy::d2h_blocking(&mut out, y.as_slice(), s)?; // waits for `s`
//!     Ok(())
//! }
//! ```
//!
//! ## Modules
//!
//! | module | what |
//! | --- | --- |
//! | the crate root | the stream-correct functions ([`gemv_normalize`], [`frame_filter`], [`chain()`], ...) and their limits |
//! | [`chain`](mod@chain) | a chain of dependent kernels with PDL, planned by ordo's PDL rule |
//! | [`cublas`] | (feature `cublas`) `gemv_normalize` with cuBLAS's sgemv, cuBLAS loaded at run time |
//! | [`kernel`] | the typed [`Kernel`](ordo_cuda_core::Kernel) handle of each kernel, for your own launches and graphs |
//! | [`ffi`] | the raw host stubs nvcc generated |
//! | [`launch`] | `ordo_cuda_core::launch`, re-exported for your own kernels |
//!
//! The kernels (`kernels/cuda/*.cu`) are compiled by nvcc through the `cc` crate for sm_80 and
//! sm_90 machine code plus compute_90 PTX.
//!
//! The device header `ordo/pdl.cuh` (in ordo-cuda-core's `include/`) gives the PDL helpers and
//! `ORDO_PDL_KERNELS`, which compiles one kernel body into a plain form and a PDL form (see
//! [`launch::pdl`] for why and for the rule that picks one).
//!
//! ## Stream-correct functions
//! Each function here takes the caller's stream and enqueues everything on it; it never
//! synchronises; its temporaries are allocated on that stream (`cudaMallocFromPoolAsync`) and
//! freed with `cudaFreeAsync` on it. They come from ordo's pool of the device, which keeps their
//! memory mapped across synchronisations without touching the device's default pool
//! ([`temporaries`](ordo_cuda_core::memory::temporaries)), or from a pool the caller names (the
//! `_in` forms). So each can be captured into a CUDA graph unchanged (a GPU test captures every
//! one in global mode, where a hidden synchronise makes the capture fail).
//!
//! ## Safety
//! The functions that take device views are `unsafe` for the reason the asynchronous copies are:
//! the kernels run after the call returns, and the memory must stay allocated until they complete.
//! That holds without further thought for [`DeviceBuffer`](ordo_cuda_core::DeviceBuffer)s used on the
//! stream they are freed on.
//!
// `cublas` links to itself where its feature is on, and to docs.rs (all features) where it is off.
#![cfg_attr(feature = "cublas", doc = "[`cublas`]: crate::cublas")]
#![cfg_attr(
    not(feature = "cublas"),
    doc = "[`cublas`]: https://docs.rs/ordo-cuda-kernels/latest/ordo_cuda_kernels/cublas/"
)]
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]

pub mod chain;
#[cfg(feature = "cublas")]
#[cfg_attr(ordo_doc_cfg, doc(cfg(feature = "cublas")))]
pub mod cublas;
mod frame;
mod gemv;

#[doc(inline)]
pub use chain::{chain, ChainPlan};
pub use frame::{blur_rows_downsample, frame_filter, frame_filter_in, BlurInput, BLUR_MAX_RADIUS};
pub use gemv::{
    check_gemv_shape, gemv_normalize, gemv_normalize_in, GEMV_MAX_COLS, GEMV_MAX_ROWS, NORMALIZE_ONE_BLOCK_MAX,
};
#[doc(inline)]
pub use ordo_cuda_core::launch::{BeyondOneWave, PdlMode};

use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::{DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

/// The raw host stubs of the kernels in `cuda/kernels.cu`.
pub mod ffi {
    #![allow(missing_docs)]
    extern "C" {
        pub fn ordok_empty();
        pub fn ordok_add_one(x: *mut f32, n: i32);
        pub fn ordok_heavy(x: *mut f32, n: i32);
        pub fn ordok_heavy_into(input: *const f32, out: *mut f32, n: i32);
        pub fn ordok_square(input: *const f32, out: *mut f32, n: i32);
        pub fn ordok_gemv(a: *const f32, x: *const f32, y: *mut f32, rows: i32, cols: i32);
        pub fn ordok_sum_squares(y: *const f32, sum_sq: *mut f32, n: i32);
        pub fn ordok_normalize(y: *mut f32, sum_sq: *const f32, n: i32);
        pub fn ordok_normalize_block(y: *mut f32, n: i32);
        pub fn ordok_grayscale(rgb: *const u8, gray: *mut f32, width: i32, height: i32);
        pub fn ordok_blur5(gray: *const f32, out: *mut u8, width: i32, height: i32);
        pub fn ordok_blur_rows_downsample_f32(
            input: *const f32,
            out: *mut f32,
            width: i32,
            rows: i32,
            before: i32,
            after: i32,
            radius: i32,
        );
        pub fn ordok_blur_rows_downsample_u8(
            input: *const u8,
            out: *mut f32,
            width: i32,
            rows: i32,
            before: i32,
            after: i32,
            radius: i32,
        );
        pub fn ordok_write_at(base: *mut f32, offset: i64);
        pub fn ordok_grid_sum(x: *const f32, partial: *mut f32, out: *mut f32, n: i32);
        pub fn ordok_chain_step(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
        pub fn ordok_chain_step_pdl(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
        pub fn ordok_countdown(condition: ordo_cuda_core::graph::ConditionalHandle, counter: *mut u32);
        pub fn ordok_set_condition_from(condition: ordo_cuda_core::graph::ConditionalHandle, value: *const u32);
        pub fn ordok_scale_add(x: *mut f32, a: f32, b: f32, n: i32);
    }
}

/// Typed handles of the kernels.
pub mod kernel {
    use super::ffi;
    use ordo_cuda_core::graph::ConditionalHandle;
    use ordo_cuda_core::launch::{Kernel, PdlKernel};

    /// `ordok_empty()`: does nothing (launch-latency measurements).
    pub fn empty() -> Kernel<()> {
        Kernel::new(ffi::ordok_empty as unsafe extern "C" fn())
    }
    /// `ordok_add_one(x, n)`: `x[i] += 1`.
    pub fn add_one() -> Kernel<(*mut f32, i32)> {
        Kernel::new(ffi::ordok_add_one as unsafe extern "C" fn(*mut f32, i32))
    }
    /// `ordok_heavy(x, n)`: 64 dependent FMAs an element, `v = fma(v, 0.999, 0.001)`.
    pub fn heavy() -> Kernel<(*mut f32, i32)> {
        Kernel::new(ffi::ordok_heavy as unsafe extern "C" fn(*mut f32, i32))
    }
    /// `ordok_heavy_into(in, out, n)`: the 64-step loop from `in` into `out`.
    pub fn heavy_into() -> Kernel<(*const f32, *mut f32, i32)> {
        Kernel::new(ffi::ordok_heavy_into as unsafe extern "C" fn(*const f32, *mut f32, i32))
    }
    /// `ordok_square(in, out, n)`: `out[i] = in[i]^2`.
    pub fn square() -> Kernel<(*const f32, *mut f32, i32)> {
        Kernel::new(ffi::ordok_square as unsafe extern "C" fn(*const f32, *mut f32, i32))
    }
    /// `ordok_gemv(a, x, y, rows, cols)`: `y = A x`, A row-major, one warp a row.
    pub fn gemv() -> Kernel<(*const f32, *const f32, *mut f32, i32, i32)> {
        Kernel::new(ffi::ordok_gemv as unsafe extern "C" fn(*const f32, *const f32, *mut f32, i32, i32))
    }
    /// `ordok_sum_squares(y, sum_sq, n)`: `*sum_sq += Σ y[i]²` (one atomic a block).
    pub fn sum_squares() -> Kernel<(*const f32, *mut f32, i32)> {
        Kernel::new(ffi::ordok_sum_squares as unsafe extern "C" fn(*const f32, *mut f32, i32))
    }
    /// `ordok_normalize(y, sum_sq, n)`: `y[i] /= sqrt(*sum_sq)`.
    pub fn normalize() -> Kernel<(*mut f32, *const f32, i32)> {
        Kernel::new(ffi::ordok_normalize as unsafe extern "C" fn(*mut f32, *const f32, i32))
    }
    /// `ordok_normalize_block(y, n)`: `y[i] /= |y|`, the sum in shared memory. Launch exactly
    /// one block whose size is a whole number of warps, with `1 <= n <= blockDim.x <= 1024`: the
    /// reduction's shuffles take every lane of a warp, and a second block would scale `y` again.
    pub fn normalize_block() -> Kernel<(*mut f32, i32)> {
        Kernel::new(ffi::ordok_normalize_block as unsafe extern "C" fn(*mut f32, i32))
    }
    /// `ordok_grayscale(rgb, gray, width, height)`.
    pub fn grayscale() -> Kernel<(*const u8, *mut f32, i32, i32)> {
        Kernel::new(ffi::ordok_grayscale as unsafe extern "C" fn(*const u8, *mut f32, i32, i32))
    }
    /// `ordok_blur5(gray, out, width, height)`: 5x5 binomial blur, clamped edges, rounded to bytes.
    pub fn blur5() -> Kernel<(*const f32, *mut u8, i32, i32)> {
        Kernel::new(ffi::ordok_blur5 as unsafe extern "C" fn(*const f32, *mut u8, i32, i32))
    }
    /// `ordok_blur_rows_downsample_f32(in, out, width, rows, before, after, radius)`: a vertical
    /// box blur of `radius` rows clamped to the view's `before + rows + after` rows, then a
    /// horizontal 2x downsample (see [`blur_rows_downsample`](crate::blur_rows_downsample)).
    pub fn blur_rows_downsample_f32() -> Kernel<(*const f32, *mut f32, i32, i32, i32, i32, i32)> {
        type Blur = unsafe extern "C" fn(*const f32, *mut f32, i32, i32, i32, i32, i32);
        Kernel::new(ffi::ordok_blur_rows_downsample_f32 as Blur)
    }
    /// `ordok_blur_rows_downsample_u8(in, out, width, rows, before, after, radius)`: as
    /// [`blur_rows_downsample_f32`], over bytes.
    pub fn blur_rows_downsample_u8() -> Kernel<(*const u8, *mut f32, i32, i32, i32, i32, i32)> {
        type Blur = unsafe extern "C" fn(*const u8, *mut f32, i32, i32, i32, i32, i32);
        Kernel::new(ffi::ordok_blur_rows_downsample_u8 as Blur)
    }
    /// `ordok_grid_sum(x, partial, out, n)`: `*out = Σ x[i]` in one cooperative launch (blocks
    /// of a power-of-two size up to 1024, `partial` one float a block; launch it with
    /// [`LaunchConfig::with_cooperative`](ordo_cuda_core::launch::LaunchConfig::with_cooperative)).
    pub fn grid_sum() -> Kernel<(*const f32, *mut f32, *mut f32, i32)> {
        Kernel::new(ffi::ordok_grid_sum as unsafe extern "C" fn(*const f32, *mut f32, *mut f32, i32))
    }
    /// `ordok_write_at(base, offset)`: writes `base[offset] = 1` (fault injection for tests).
    pub fn write_at() -> Kernel<(*mut f32, i64)> {
        Kernel::new(ffi::ordok_write_at as unsafe extern "C" fn(*mut f32, i64))
    }

    /// One step of a counted WHILE loop in a graph: `*counter -= 1` (staying at 0), and the
    /// condition set to 0 once the counter is 0. Launch it with one thread, in the body of the
    /// WHILE node that `condition` belongs to.
    pub fn countdown() -> Kernel<(ConditionalHandle, *mut u32)> {
        Kernel::new(ffi::ordok_countdown as unsafe extern "C" fn(ConditionalHandle, *mut u32))
    }

    /// `ordok_set_condition_from(condition, value)`: sets the condition to `*value`, for any kind
    /// of conditional node (non-zero or zero for IF, IF/ELSE and WHILE; the case index for
    /// SWITCH). Launch it with one thread, in the graph that `condition` belongs to, where no
    /// other kernel sets the same condition at the same time.
    pub fn set_condition_from() -> Kernel<(ConditionalHandle, *const u32)> {
        Kernel::new(ffi::ordok_set_condition_from as unsafe extern "C" fn(ConditionalHandle, *const u32))
    }

    /// `ordok_scale_add(x, a, b, n)`: `x[i] = fma(x[i], a, b)` (rounded once).
    pub fn scale_add() -> Kernel<(*mut f32, f32, f32, i32)> {
        Kernel::new(ffi::ordok_scale_add as unsafe extern "C" fn(*mut f32, f32, f32, i32))
    }

    /// `ordok_chain_step(prev, out, scale, n)` and its PDL form `ordok_chain_step_pdl`:
    /// `out[i] = prev[i] * scale[i] + 1` as a grid-stride loop. The PDL form triggers at its
    /// start and loads `scale` before its wait (so a PDL launch of it must not overlap a kernel
    /// that writes `scale`: see [`chain`](crate::chain())); the plain form has no `griddepcontrol`
    /// instruction.
    pub fn chain_step() -> PdlKernel<(*const f32, *mut f32, *const f32, i32)> {
        type Step = unsafe extern "C" fn(*const f32, *mut f32, *const f32, i32);
        PdlKernel::new(Kernel::new(ffi::ordok_chain_step as Step), Kernel::new(ffi::ordok_chain_step_pdl as Step))
    }
}

/// Threads a block for the element-wise kernels.
pub const BLOCK: u32 = 256;

/// `n` as the kernels' `int` element count, with a clear error past `i32::MAX`.
pub(crate) fn count_i32(n: usize, call: &'static str) -> Result<i32> {
    if n == 0 {
        return Err(Error::invalid(call, "zero elements"));
    }
    i32::try_from(n).map_err(|_| Error::invalid(call, "more than i32::MAX elements"))
}

/// `x[i] += 1` on `stream`.
///
/// # Safety
/// `x` stays allocated until the kernel completes (see the [crate docs](crate#safety)).
pub unsafe fn add_one(stream: StreamRef<'_>, x: DeviceSliceMut<'_, f32>) -> Result<()> {
    let n = count_i32(x.len(), "ordo_cuda_kernels::add_one")?;
    let config = LaunchConfig::for_elements(x.len(), BLOCK)?;
    // SAFETY: in-bounds by n; lifetime owed by the caller.
    unsafe { kernel::add_one().launch(stream, &config, (x.as_mut_ptr(), n)) }
}

/// The 64-step FMA loop over `x` on `stream`.
///
/// # Safety
/// As [`add_one`].
pub unsafe fn heavy(stream: StreamRef<'_>, x: DeviceSliceMut<'_, f32>) -> Result<()> {
    let n = count_i32(x.len(), "ordo_cuda_kernels::heavy")?;
    let config = LaunchConfig::for_elements(x.len(), BLOCK)?;
    // SAFETY: in-bounds by n; lifetime owed by the caller.
    unsafe { kernel::heavy().launch(stream, &config, (x.as_mut_ptr(), n)) }
}

/// `out[i] = heavy(input[i])` (the 64-step loop) on `stream`.
///
/// # Safety
/// As [`add_one`].
pub unsafe fn heavy_into(
    stream: StreamRef<'_>,
    input: DeviceSlice<'_, f32>,
    out: DeviceSliceMut<'_, f32>,
) -> Result<()> {
    if input.len() != out.len() {
        return Err(Error::invalid("ordo_cuda_kernels::heavy_into", "input and output lengths differ"));
    }
    let n = count_i32(input.len(), "ordo_cuda_kernels::heavy_into")?;
    let config = LaunchConfig::for_elements(input.len(), BLOCK)?;
    // SAFETY: in-bounds by n; lifetime owed by the caller.
    unsafe { kernel::heavy_into().launch(stream, &config, (input.as_ptr(), out.as_mut_ptr(), n)) }
}

/// `out[i] = input[i]^2` on `stream`.
///
/// # Safety
/// As [`add_one`].
pub unsafe fn square(stream: StreamRef<'_>, input: DeviceSlice<'_, f32>, out: DeviceSliceMut<'_, f32>) -> Result<()> {
    if input.len() != out.len() {
        return Err(Error::invalid("ordo_cuda_kernels::square", "input and output lengths differ"));
    }
    let n = count_i32(input.len(), "ordo_cuda_kernels::square")?;
    let config = LaunchConfig::for_elements(input.len(), BLOCK)?;
    // SAFETY: in-bounds by n; lifetime owed by the caller.
    unsafe { kernel::square().launch(stream, &config, (input.as_ptr(), out.as_mut_ptr(), n)) }
}

/// Launches the empty kernel once (for latency measurements).
pub fn empty(stream: StreamRef<'_>) -> Result<()> {
    // SAFETY: the kernel takes no arguments and touches no memory.
    unsafe { kernel::empty().launch(stream, &LaunchConfig::new(1, 1), ()) }
}

/// Re-exported for users' own kernels.
pub use ordo_cuda_core::launch;
