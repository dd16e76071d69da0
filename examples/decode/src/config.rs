//! The model's shapes and the step's plan, with no GPU: the layer shapes, the limits the buffers are
//! sized for, the GEMMs of a step and the buffers it uses.

use crate::kernels::{HEAD_DIM, MAX_CHUNK, MAX_GROUP};
use ordo_cuda::{Error, Result};

/// A Llama-style decoder stack: pre-norm attention with grouped KV heads and rotary embeddings,
/// then a SiLU-gated MLP; no vocabulary (a step starts from hidden states and ends at the final
/// RMSNorm).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelConfig {
    /// The hidden size (`heads * head_dim`).
    pub hidden: usize,
    /// Query heads.
    pub heads: usize,
    /// Key and value heads (each serves `heads / kv_heads` query heads).
    pub kv_heads: usize,
    /// A head's size: [`HEAD_DIM`], the one the kernels take.
    pub head_dim: usize,
    /// The MLP's inner size.
    pub ffn: usize,
    /// Decoder layers.
    pub layers: usize,
    /// RMSNorm's epsilon.
    pub eps: f32,
    /// The rotary embedding's base.
    pub rope_theta: f64,
}

impl ModelConfig {
    /// Llama-3-8B's layer shapes: hidden 4096, 32 query heads and 8 KV heads of 128, FFN 14336,
    /// eps 1e-5, rotary base 500000; `layers` of them (32 in the model).
    pub fn llama3_8b(layers: usize) -> ModelConfig {
        ModelConfig {
            hidden: 4096,
            heads: 32,
            kv_heads: 8,
            head_dim: HEAD_DIM,
            ffn: 14336,
            layers,
            eps: 1e-5,
            rope_theta: 500_000.0,
        }
    }

    /// A small model of the same kind for tests: hidden `heads * 128`, `kv_heads` KV heads, FFN
    /// 1024, two layers.
    pub fn tiny(heads: usize, kv_heads: usize) -> ModelConfig {
        ModelConfig { hidden: heads * HEAD_DIM, heads, kv_heads, ffn: 1024, layers: 2, ..ModelConfig::llama3_8b(2) }
    }

    /// Query heads a KV head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads.max(1)
    }

    /// The fused QKV projection's outputs: `(heads + 2 kv_heads) * head_dim`.
    pub fn qkv_dim(&self) -> usize {
        (self.heads + 2 * self.kv_heads) * self.head_dim
    }

    /// Checks what the kernels and cuBLAS need: head_dim 128, `hidden = heads * 128`, at most
    /// [`MAX_GROUP`] query heads a KV head, sizes a multiple of 8 (16-byte rows), every dimension
    /// an `i32`.
    pub fn validate(&self) -> Result<()> {
        const CALL: &str = "ModelConfig::validate";
        if self.head_dim != HEAD_DIM {
            return Err(Error::invalid(CALL, format!("head_dim {}: the kernels take {HEAD_DIM}", self.head_dim)));
        }
        if self.heads == 0 || self.kv_heads == 0 || self.layers == 0 || self.ffn == 0 {
            return Err(Error::invalid(CALL, "zero heads, KV heads, layers or FFN size"));
        }
        if self.hidden != self.heads * self.head_dim {
            return Err(Error::invalid(CALL, "hidden must be heads * head_dim"));
        }
        if self.heads % self.kv_heads != 0 || self.group() > MAX_GROUP {
            return Err(Error::invalid(
                CALL,
                format!(
                    "{} query heads over {} KV heads: a whole group of at most {MAX_GROUP}",
                    self.heads, self.kv_heads
                ),
            ));
        }
        if self.ffn % 8 != 0 {
            return Err(Error::invalid(CALL, "the FFN size must be a multiple of 8"));
        }
        if !(self.eps > 0.0 && self.rope_theta > 1.0) {
            return Err(Error::invalid(CALL, "eps must be positive and the rotary base above 1"));
        }
        let largest = (2 * self.ffn).max(self.qkv_dim()).saturating_mul(self.hidden.max(self.ffn));
        if largest > u32::MAX as usize || 2 * self.ffn > i32::MAX as usize {
            return Err(Error::invalid(CALL, "a weight matrix past the formula's 32-bit index"));
        }
        Ok(())
    }

    /// The four GEMMs of a layer at `batch` rows, in the step's order.
    pub fn gemms(&self, batch: usize) -> [GemmShape; 4] {
        let g = |name, out, inp, accumulate| GemmShape { name, out, inp, batch, accumulate };
        [
            g("qkv", self.qkv_dim(), self.hidden, false),
            g("o", self.hidden, self.hidden, true),
            g("gate_up", 2 * self.ffn, self.hidden, false),
            g("down", self.hidden, self.ffn, true),
        ]
    }

    /// Parameters of one layer (the four matrices and the two norms).
    pub fn layer_params(&self) -> usize {
        self.gemms(1).iter().map(|g| g.out * g.inp).sum::<usize>() + 2 * self.hidden
    }

    /// Bytes of fp16 weights: every layer and the final norm.
    pub fn weight_bytes(&self) -> usize {
        2 * (self.layers * self.layer_params() + self.hidden)
    }
}

/// One GEMM of the step: `y[batch][out] = x[batch][inp] W[out][inp]^T` (+ `y` where `accumulate`:
/// the residual added by cuBLAS's `beta = 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    /// Which projection.
    pub name: &'static str,
    /// Output features (cuBLAS's `m`).
    pub out: usize,
    /// Input features (`k`).
    pub inp: usize,
    /// Rows (`n`).
    pub batch: usize,
    /// `beta = 1`: accumulate into the output.
    pub accumulate: bool,
}

/// What the buffers are sized for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Sequences a step, at most.
    pub max_batch: usize,
    /// Cache positions a sequence holds (the context and the new token): a multiple of `chunk`.
    pub max_ctx: usize,
    /// Cache positions a work item of the attention takes (1 to [`MAX_CHUNK`]).
    pub chunk: usize,
}

/// The formula's positions a (sequence, KV head) row of the cache: the cache's index in the
/// formula is `((b * kv_heads + g) * FORMULA_POSITIONS + p) * head_dim + d`, whatever `max_ctx`.
pub const FORMULA_POSITIONS: usize = 4096;

impl Limits {
    /// Room for `max_batch` sequences of `context` positions and one new token, in chunks of
    /// `chunk`.
    pub fn new(max_batch: usize, context: usize, chunk: usize) -> Result<Limits> {
        if chunk == 0 || chunk > MAX_CHUNK {
            return Err(Error::invalid("Limits::new", format!("chunk {chunk}: 1 to {MAX_CHUNK}")));
        }
        let positions = context + 1;
        let max_ctx = positions.div_ceil(chunk) * chunk;
        Ok(Limits { max_batch, max_ctx, chunk })
    }

    /// Chunks of a cache row.
    pub fn chunks(&self) -> usize {
        self.max_ctx / self.chunk
    }

    /// Checks the limits against `config`: a batch, a position past the formula's range, sizes
    /// that fit the kernels' `i32`s.
    pub fn validate(&self, config: &ModelConfig) -> Result<()> {
        const CALL: &str = "Limits::validate";
        if self.max_batch == 0 || self.max_ctx == 0 || self.chunk == 0 || self.max_ctx % self.chunk != 0 {
            return Err(Error::invalid(CALL, "zero batch or context, or a context that is not whole chunks"));
        }
        if self.max_ctx > FORMULA_POSITIONS {
            return Err(Error::invalid(CALL, format!("at most {FORMULA_POSITIONS} cache positions")));
        }
        let cache = self.max_batch * config.kv_heads * self.max_ctx * config.head_dim;
        let part = self.max_batch * config.heads * self.chunks() * config.head_dim;
        if cache > i32::MAX as usize || part > i32::MAX as usize || self.max_batch * 2 * config.ffn > i32::MAX as usize
        {
            return Err(Error::invalid(CALL, "buffers past the kernels' 32-bit sizes"));
        }
        Ok(())
    }
}

/// The elements of each buffer of a [`Decoder`](crate::Decoder), for `config` and `limits`: the
/// activations (fp16 unless named), one layer's KV cache, the attention's partial results (fp32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferSizes {
    /// The step's input hidden states, the residual stream, a normalised copy, the output.
    pub hidden: usize,
    /// The fused QKV projection.
    pub qkv: usize,
    /// The attention's output.
    pub attn: usize,
    /// The fused gate and up projection.
    pub gate_up: usize,
    /// The SiLU gate's output.
    pub act: usize,
    /// One layer's K (or V) cache: `[max_batch][kv_heads][max_ctx][head_dim]`.
    pub cache: usize,
    /// The attention's partial outputs (fp32): `[max_batch][heads][chunks][head_dim]`.
    pub part_o: usize,
    /// The attention's partial (max, sum) pairs (fp32): `[max_batch][heads][chunks][2]`.
    pub part_ml: usize,
    /// The rotary table, (cos, sin) pairs: `[max_ctx][head_dim / 2]`.
    pub rope: usize,
}

impl BufferSizes {
    /// The sizes for `config` at `limits`.
    pub fn new(config: &ModelConfig, limits: &Limits) -> BufferSizes {
        let b = limits.max_batch;
        BufferSizes {
            hidden: b * config.hidden,
            qkv: b * config.qkv_dim(),
            attn: b * config.hidden,
            gate_up: b * 2 * config.ffn,
            act: b * config.ffn,
            cache: b * config.kv_heads * limits.max_ctx * config.head_dim,
            part_o: b * config.heads * limits.chunks() * config.head_dim,
            part_ml: b * config.heads * limits.chunks() * 2,
            rope: limits.max_ctx * config.head_dim / 2,
        }
    }

    /// Device bytes of the activations, the caches of `layers` layers and the partial results.
    pub fn bytes(&self, layers: usize) -> usize {
        2 * (4 * self.hidden + self.qkv + self.attn + self.gate_up + self.act)
            + 2 * 2 * self.cache * layers
            + 4 * (self.part_o + self.part_ml)
            + 8 * self.rope
    }
}

/// The rotary table: for position `p` and pair `i` (`i < head_dim / 2`), `(cos, sin)` of
/// `p / theta^(2i / head_dim)`, computed in f64 and rounded to f32 (the PyTorch side computes the
/// same table the same way).
pub fn rope_table(config: &ModelConfig, positions: usize) -> Vec<[f32; 2]> {
    let half = config.head_dim / 2;
    let inv_freq: Vec<f64> =
        (0..half).map(|i| 1.0 / config.rope_theta.powf((2 * i) as f64 / config.head_dim as f64)).collect();
    let mut table = Vec::with_capacity(positions * half);
    for p in 0..positions {
        for f in &inv_freq {
            let angle = p as f64 * f;
            table.push([angle.cos() as f32, angle.sin() as f32]);
        }
    }
    table
}
