//! The formula every weight, cache entry and input comes from, computed the same way on the GPU
//! (`ordok_dec_fill`), on the CPU here and by `torch_decode.py` with integer tensor ops, so that
//! both sides hold bit-identical fp16 values.
//!
//! Element `i` (its row-major index in the tensor, below 2^32) of a tensor with seed `s` is
//! `fp16(fp32(k) * c + offset)`, each operation rounded to nearest even, with
//! `k = (hash32(i ^ s) >> 8) - 2^23` (so `k * 2^-23` is uniform in [-1, 1)) and `hash32` Chris
//! Wellons' lowbias32. The seed is `hash32(layer * 16 + tensor + 1)`.

use half::f16;

/// lowbias32: `x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16` (wrapping).
pub fn hash32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// The tensors the formula names, with their ids in the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tensor {
    /// The attention's RMSNorm weight.
    AttnNorm = 0,
    /// The fused Q, K, V projection `[q | k | v][hidden]`.
    Qkv = 1,
    /// The attention's output projection.
    O = 2,
    /// The MLP's RMSNorm weight.
    FfnNorm = 3,
    /// The fused gate and up projection `[gate | up][hidden]`.
    GateUp = 4,
    /// The MLP's down projection.
    Down = 5,
    /// The K cache's pre-filled positions.
    KCache = 6,
    /// The V cache's pre-filled positions.
    VCache = 7,
}

/// The layer number of the final RMSNorm's weight in the seed (any model depth has the same one).
pub const FINAL_NORM_LAYER: u32 = 1000;
/// The layer number of the step's input hidden states in the seed.
pub const INPUT_LAYER: u32 = 1001;

/// `2^-23`: `k * 2^-23` is in [-1, 1).
const UNIT: f32 = 1.0 / 8_388_608.0;

/// One tensor's formula: its seed, factor and offset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Formula {
    /// `hash32(layer * 16 + tensor + 1)`.
    pub seed: u32,
    /// The factor of `k` (a power of two times the tensor's scale, so that `k * c` is rounded once).
    pub c: f32,
    /// Added after the product.
    pub offset: f32,
}

/// The seed of `tensor` of `layer`.
pub fn seed(layer: u32, tensor: Tensor) -> u32 {
    hash32(layer.wrapping_mul(16).wrapping_add(tensor as u32 + 1))
}

/// `1 / sqrt(fan_in)` computed in f64, rounded to f32.
pub fn linear_scale(fan_in: usize) -> f32 {
    (1.0 / (fan_in as f64).sqrt()) as f32
}

impl Formula {
    /// A projection with `fan_in` inputs: uniform in [-1, 1) / sqrt(fan_in).
    pub fn linear(layer: u32, tensor: Tensor, fan_in: usize) -> Formula {
        Formula { seed: seed(layer, tensor), c: linear_scale(fan_in) * UNIT, offset: 0.0 }
    }

    /// An RMSNorm weight: uniform in [0.75, 1.25).
    pub fn norm(layer: u32, tensor: Tensor) -> Formula {
        Formula { seed: seed(layer, tensor), c: 0.25 * UNIT, offset: 1.0 }
    }

    /// Uniform in [-1, 1): the cache's pre-filled entries and the input hidden states.
    pub fn unit(layer: u32, tensor: Tensor) -> Formula {
        Formula { seed: seed(layer, tensor), c: UNIT, offset: 0.0 }
    }

    /// Element `i`.
    pub fn value(&self, i: u32) -> f16 {
        let k = (hash32(i ^ self.seed) >> 8) as i32 - 8_388_608;
        f16::from_f32(k as f32 * self.c + self.offset)
    }

    /// Elements `0..n`, as fp16 bit patterns.
    pub fn bits(&self, n: usize) -> Vec<u16> {
        (0..n as u32).map(|i| self.value(i).to_bits()).collect()
    }
}

/// The formula of layer `layer`'s `tensor` in `config`'s model.
pub fn layer_formula(config: &crate::ModelConfig, layer: usize, tensor: Tensor) -> Formula {
    let l = layer as u32;
    match tensor {
        Tensor::AttnNorm | Tensor::FfnNorm => Formula::norm(l, tensor),
        Tensor::Qkv | Tensor::O | Tensor::GateUp => Formula::linear(l, tensor, config.hidden),
        Tensor::Down => Formula::linear(l, tensor, config.ffn),
        Tensor::KCache | Tensor::VCache => Formula::unit(l, tensor),
    }
}

/// The final RMSNorm's weight.
pub fn final_norm_formula() -> Formula {
    Formula::norm(FINAL_NORM_LAYER, Tensor::AttnNorm)
}

/// The step's input hidden states (`[batch][hidden]`, the index `b * hidden + i`).
pub fn input_formula() -> Formula {
    Formula::unit(INPUT_LAYER, Tensor::AttnNorm)
}
