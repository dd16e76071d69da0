//! Helpers shared by the GPU test binaries: deterministic random data, blocking transfers to and
//! from device buffers (never all-zero data; outputs can be poisoned with NaN), and the lock that
//! keeps global-mode captures apart from the other GPU tests of a binary ([`gpu_lock`]).
#![allow(dead_code, clippy::unwrap_used)]

#[path = "../../../core/tests/support/gpu_lock.rs"]
pub mod gpu_lock;

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{DeviceBuffer, DeviceCopy, StreamRef};

/// A xorshift generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [lo, hi).
    pub fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)).collect()
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 56) as u8).collect()
    }
}

/// `n` floats uniform in [-1, 1) from `seed`.
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    Rng(seed | 1).f32s(n, -1.0, 1.0)
}

/// The 64-step loop of `ordok_heavy`, on the CPU (the same fused multiply-adds, bit for bit).
pub fn heavy_cpu(v: f32) -> f32 {
    (0..64).fold(v, |v, _| v.mul_add(0.999, 0.001))
}

pub const POISON: f32 = f32::NAN;

/// A device copy of `data` (blocking).
pub fn upload<'s, T: DeviceCopy>(data: &[T], s: StreamRef<'s>) -> DeviceBuffer<'s, T> {
    let mut d = DeviceBuffer::alloc_async(data.len(), s).unwrap();
    copy::h2d_blocking(d.as_mut_slice(), data, s).unwrap();
    d
}

/// A host copy of `d` (blocking).
pub fn download<T: DeviceCopy + Default>(d: &DeviceBuffer<'_, T>, s: StreamRef<'_>) -> Vec<T> {
    let mut out = vec![T::default(); d.len()];
    copy::d2h_blocking(&mut out, d.as_slice(), s).unwrap();
    out
}

/// `n` NaNs on the device: an output a kernel must overwrite.
pub fn poisoned<'s>(n: usize, s: StreamRef<'s>) -> DeviceBuffer<'s, f32> {
    upload(&vec![POISON; n], s)
}

/// The frame filter on the CPU, in the kernels' arithmetic: grayscale (0.299 r + 0.587 g +
/// 0.114 b, fused as the device does), then the 5x5 binomial blur (clamped edges), / 256, rounded
/// to nearest even.
pub fn frame_filter_cpu(rgb: &[u8], w: usize, h: usize) -> Vec<u8> {
    let gray: Vec<f32> = (0..w * h)
        .map(|p| {
            let (r, g, b) = (rgb[3 * p] as f32, rgb[3 * p + 1] as f32, rgb[3 * p + 2] as f32);
            0.114f32.mul_add(b, 0.587f32.mul_add(g, 0.299 * r))
        })
        .collect();
    let wt = [1.0f32, 4.0, 6.0, 4.0, 1.0];
    let mut out = vec![0u8; w * h];
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let mut acc = 0f32;
            for dy in -2..=2i64 {
                let yy = (y + dy).clamp(0, h as i64 - 1) as usize;
                let mut row = 0f32;
                for dx in -2..=2i64 {
                    let xx = (x + dx).clamp(0, w as i64 - 1) as usize;
                    row = wt[(dx + 2) as usize].mul_add(gray[yy * w + xx], row);
                }
                acc = wt[(dy + 2) as usize].mul_add(row, acc);
            }
            let v = acc * (1.0 / 256.0);
            out[y as usize * w + x as usize] = v.round_ties_even().clamp(0.0, 255.0) as u8;
        }
    }
    out
}

/// A hash of `(row, col)`: non-zero-friendly, non-uniform test data for stencils.
pub fn hash2(row: usize, col: usize) -> u32 {
    let mut x = (row as u32).wrapping_mul(0x9e37_79b1) ^ (col as u32).wrapping_mul(0x85eb_ca77) ^ 0x2545_f491;
    x ^= x >> 15;
    x = x.wrapping_mul(0x2c1b_3c6d);
    x ^= x >> 12;
    x
}

/// `ordo_cuda_kernels::blur_rows_downsample` over a whole frame of `height` rows of `width` values, on
/// the CPU in the kernel's arithmetic (each sum and product rounded on its own, in the same
/// order): out[r][c] = mean over dr in -radius..=radius of (in[rr][2c] + in[rr][2c + 1]) / 2, rr
/// clamped to the frame.
pub fn blur_rows_downsample_cpu<T: Copy + Into<f32>>(
    input: &[T],
    width: usize,
    height: usize,
    radius: usize,
) -> Vec<f32> {
    let half = width / 2;
    let mut out = vec![0f32; height * half];
    for r in 0..height {
        for c in 0..half {
            let mut acc = 0f32;
            for dr in -(radius as i64)..=radius as i64 {
                let rr = (r as i64 + dr).clamp(0, height as i64 - 1) as usize;
                let (a, b): (f32, f32) = (input[rr * width + 2 * c].into(), input[rr * width + 2 * c + 1].into());
                acc += (a + b) * 0.5;
            }
            out[r * half + c] = acc / (2 * radius + 1) as f32;
        }
    }
    out
}
