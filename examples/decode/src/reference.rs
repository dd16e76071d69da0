//! A straightforward CPU implementation of the decode step (fp32 arithmetic), for checking the
//! GPU's at small shapes. Where the GPU stores an fp16 value (every activation, the caches, the
//! residual), the reference rounds to fp16 too, so that the two differ by the order of fp32 sums
//! and the last bits of `exp` and `rsqrt`, not by the storage format.

use crate::config::{rope_table, ModelConfig, FORMULA_POSITIONS};
use crate::formula::{final_norm_formula, input_formula, layer_formula, Formula, Tensor};
use half::f16;
use ordo_cuda::{Error, Result};

/// `x` rounded to fp16 and back.
pub fn round16(x: f32) -> f32 {
    f16::from_f32(x).to_f32()
}

fn values(formula: &Formula, n: usize) -> Vec<f32> {
    (0..n as u32).map(|i| formula.value(i).to_f32()).collect()
}

/// One layer's weights as f32 (row-major `[out][in]` matrices).
struct Weights {
    attn_norm: Vec<f32>,
    qkv: Vec<f32>,
    o: Vec<f32>,
    ffn_norm: Vec<f32>,
    gate_up: Vec<f32>,
    down: Vec<f32>,
}

/// The reference model: the formula's weights, and caches of `max_batch x max_ctx` positions
/// (`[b][g][p][d]`, f32 holding fp16 values).
pub struct Reference {
    config: ModelConfig,
    max_ctx: usize,
    max_batch: usize,
    layers: Vec<Weights>,
    final_norm: Vec<f32>,
    k: Vec<Vec<f32>>,
    v: Vec<Vec<f32>>,
    rope: Vec<[f32; 2]>,
}

impl Reference {
    /// The model of `config` with room for `max_batch` sequences of `max_ctx` positions, caches zero.
    pub fn new(config: ModelConfig, max_batch: usize, max_ctx: usize) -> Reference {
        let c = config;
        let layers = (0..c.layers)
            .map(|l| {
                let f = |t| layer_formula(&c, l, t);
                Weights {
                    attn_norm: values(&f(Tensor::AttnNorm), c.hidden),
                    qkv: values(&f(Tensor::Qkv), c.qkv_dim() * c.hidden),
                    o: values(&f(Tensor::O), c.hidden * c.hidden),
                    ffn_norm: values(&f(Tensor::FfnNorm), c.hidden),
                    gate_up: values(&f(Tensor::GateUp), 2 * c.ffn * c.hidden),
                    down: values(&f(Tensor::Down), c.hidden * c.ffn),
                }
            })
            .collect();
        let cache = max_batch * c.kv_heads * max_ctx * c.head_dim;
        Reference {
            config,
            max_ctx,
            max_batch,
            layers,
            final_norm: values(&final_norm_formula(), c.hidden),
            k: vec![vec![0.0; cache]; c.layers],
            v: vec![vec![0.0; cache]; c.layers],
            rope: rope_table(&config, max_ctx),
        }
    }

    /// The formula's cache values at positions `0..context` of sequences `0..batch`, as
    /// [`Decoder::prefill`](crate::Decoder::prefill) writes them.
    pub fn prefill(&mut self, batch: usize, context: usize) {
        let (kv, hd) = (self.config.kv_heads, self.config.head_dim);
        for l in 0..self.config.layers {
            let (fk, fv) =
                (layer_formula(&self.config, l, Tensor::KCache), layer_formula(&self.config, l, Tensor::VCache));
            for r in 0..batch * kv {
                for p in 0..context {
                    for d in 0..hd {
                        let i = ((r * FORMULA_POSITIONS + p) * hd + d) as u32;
                        let at = (r * self.max_ctx + p) * hd + d;
                        self.k[l][at] = fk.value(i).to_f32();
                        self.v[l][at] = fv.value(i).to_f32();
                    }
                }
            }
        }
    }

    /// The formula's input hidden states of `batch` sequences.
    pub fn input(&self, batch: usize) -> Vec<f32> {
        values(&input_formula(), batch * self.config.hidden)
    }

    /// Layer `layer`'s caches (`[max_batch][kv_heads][max_ctx][head_dim]`).
    pub fn cache(&self, layer: usize) -> (&[f32], &[f32]) {
        (&self.k[layer], &self.v[layer])
    }

    /// One decode step of `x` (`[batch][hidden]`) at `positions` through the first `layers`
    /// layers and the final norm: the output `[batch][hidden]`; appends K and V to the caches. A
    /// usage error for shapes past the model's or a position outside the cache.
    pub fn step(&mut self, x: &[f32], positions: &[usize], layers: usize) -> Result<Vec<f32>> {
        let c = self.config;
        let batch = positions.len();
        if batch > self.max_batch || x.len() != batch * c.hidden || layers > c.layers {
            return Err(Error::invalid("Reference::step", "a batch, input or layer count past the model's"));
        }
        if positions.iter().any(|&p| p >= self.max_ctx) {
            return Err(Error::invalid("Reference::step", "a position outside the cache"));
        }
        let mut out = Vec::with_capacity(x.len());
        for (b, &p) in positions.iter().enumerate() {
            let mut h = x[b * c.hidden..(b + 1) * c.hidden].to_vec();
            for l in 0..layers {
                self.layer(l, b, p, &mut h);
            }
            out.extend(rmsnorm(&h, &self.final_norm, c.eps));
        }
        Ok(out)
    }

    fn layer(&mut self, l: usize, b: usize, p: usize, h: &mut [f32]) {
        let c = self.config;
        let (hd, half, group) = (c.head_dim, c.head_dim / 2, c.group());
        let w = &self.layers[l];
        let xn = rmsnorm(h, &w.attn_norm, c.eps);
        let mut qkv = matvec(&w.qkv, &xn);
        let (cos_sin, kv_off, v_off) =
            (&self.rope[p * half..(p + 1) * half], c.heads * hd, (c.heads + c.kv_heads) * hd);
        for head in 0..c.heads + c.kv_heads {
            let x = &mut qkv[head * hd..(head + 1) * hd];
            for (i, cs) in cos_sin.iter().enumerate() {
                let (x1, x2) = (x[i], x[i + half]);
                x[i] = round16(x1 * cs[0] - x2 * cs[1]);
                x[i + half] = round16(x2 * cs[0] + x1 * cs[1]);
            }
        }
        for g in 0..c.kv_heads {
            let at = ((b * c.kv_heads + g) * self.max_ctx + p) * hd;
            self.k[l][at..at + hd].copy_from_slice(&qkv[kv_off + g * hd..kv_off + (g + 1) * hd]);
            self.v[l][at..at + hd].copy_from_slice(&qkv[v_off + g * hd..v_off + (g + 1) * hd]);
        }
        let scale = (1.0 / (hd as f64).sqrt()) as f32;
        let mut attn = vec![0.0f32; c.hidden];
        for head in 0..c.heads {
            let g = head / group;
            let q = &qkv[head * hd..(head + 1) * hd];
            let row = |cache: &Vec<f32>, j: usize| -> Vec<f32> {
                let at = ((b * c.kv_heads + g) * self.max_ctx + j) * hd;
                cache[at..at + hd].to_vec()
            };
            let scores: Vec<f32> =
                (0..=p).map(|j| row(&self.k[l], j).iter().zip(q).map(|(k, q)| k * q).sum::<f32>() * scale).collect();
            let m = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
            let e: Vec<f32> = scores.iter().map(|s| (s - m).exp()).collect();
            let sum: f32 = e.iter().sum();
            for (j, ej) in e.iter().enumerate() {
                for (o, v) in attn[head * hd..(head + 1) * hd].iter_mut().zip(row(&self.v[l], j)) {
                    *o += ej * v;
                }
            }
            for o in &mut attn[head * hd..(head + 1) * hd] {
                *o = round16(*o / sum);
            }
        }
        for (h, o) in h.iter_mut().zip(matvec(&w.o, &attn)) {
            *h = round16(*h + o);
        }
        let xn = rmsnorm(h, &w.ffn_norm, c.eps);
        let gu = matvec(&w.gate_up, &xn);
        let act: Vec<f32> = (0..c.ffn).map(|i| round16(gu[i] / (1.0 + (-gu[i]).exp()) * gu[c.ffn + i])).collect();
        for (h, d) in h.iter_mut().zip(matvec(&w.down, &act)) {
            *h = round16(*h + d);
        }
    }
}

/// `round16(x / sqrt(mean(x^2) + eps) * w)`.
fn rmsnorm(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (ms + eps).sqrt();
    x.iter().zip(w).map(|(v, w)| round16(v * r * w)).collect()
}

/// `round16(W x)` for row-major `W` of `x.len()` columns.
fn matvec(w: &[f32], x: &[f32]) -> Vec<f32> {
    w.chunks_exact(x.len()).map(|row| round16(row.iter().zip(x).map(|(a, b)| a * b).sum())).collect()
}
