//! The non-GEMM kernels of a Llama-style decode step in fp16 (`cuda/decoder.cu`): RMSNorm, rotary
//! embedding fused with the KV-cache write, decode attention over chunks of the cache and the
//! combination of the chunks, the SiLU gate; the fill from the hash formula the decoder example's
//! weights come from; a spin kernel that holds a stream (profiling).
//!
//! The step's kernels come in ordo's two forms ([`PdlKernel`]): each body is a loop over its work
//! items, correct over any grid, that waits (`griddepcontrol.wait`, PDL form only) before its first
//! read of what the previous kernel wrote. fp16 values are `u16` bit patterns here; the arithmetic
//! is fp32. The shapes are the caller's to check (`examples/decode` checks them once, when it
//! plans the step): the kernels index what the arguments say.

use ordo_cuda::launch::PdlKernel;

/// The head dimension the rotary and attention kernels take.
pub const HEAD_DIM: usize = 128;
/// Query heads a KV head, at most, in the attention kernels.
pub const MAX_GROUP: usize = 4;
/// Cache positions one work item of [`attn_partial`] takes, at most.
pub const MAX_CHUNK: usize = 256;
/// The block of [`attn_partial`] and [`attn_combine`], exactly.
pub const ATTN_THREADS: u32 = 128;

/// The attention kernels' shape, passed by value (`struct DecAttnShape` in `cuda/decoder.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnShape {
    /// Sequences.
    pub batch: i32,
    /// Query heads a sequence.
    pub q_heads: i32,
    /// KV heads a sequence (`q_heads / kv_heads` at most [`MAX_GROUP`]).
    pub kv_heads: i32,
    /// Cache positions a (sequence, KV head) row holds: `chunks * chunk`.
    pub max_ctx: i32,
    /// Positions a work item takes (1 to [`MAX_CHUNK`]).
    pub chunk: i32,
    /// `max_ctx / chunk`.
    pub chunks: i32,
    /// The scores' factor (`1 / sqrt(HEAD_DIM)`).
    pub scale: f32,
}

ordo_cuda::declare_kernels! {
    unsafe extern "C" {
        #[link_name = "ordok_dec_rmsnorm"]
        fn rmsnorm_plain(x: *const u16, copy: *mut u16, w: *const u16, out: *mut u16, rows: i32, cols: i32, eps: f32);
        #[link_name = "ordok_dec_rmsnorm_pdl"]
        fn rmsnorm_pdl(x: *const u16, copy: *mut u16, w: *const u16, out: *mut u16, rows: i32, cols: i32, eps: f32);
        #[link_name = "ordok_dec_rope_kv"]
        fn rope_kv_plain(
            qkv: *mut u16, rope: *const [f32; 2], pos: *const i32, k_cache: *mut u16, v_cache: *mut u16,
            batch: i32, q_heads: i32, kv_heads: i32, max_ctx: i32,
        );
        #[link_name = "ordok_dec_rope_kv_pdl"]
        fn rope_kv_pdl(
            qkv: *mut u16, rope: *const [f32; 2], pos: *const i32, k_cache: *mut u16, v_cache: *mut u16,
            batch: i32, q_heads: i32, kv_heads: i32, max_ctx: i32,
        );
        #[link_name = "ordok_dec_attn_partial"]
        fn attn_partial_plain(
            qkv: *const u16, k_cache: *const u16, v_cache: *const u16, pos: *const i32, part_o: *mut f32,
            part_ml: *mut f32, shape: AttnShape,
        );
        #[link_name = "ordok_dec_attn_partial_pdl"]
        fn attn_partial_pdl(
            qkv: *const u16, k_cache: *const u16, v_cache: *const u16, pos: *const i32, part_o: *mut f32,
            part_ml: *mut f32, shape: AttnShape,
        );
        #[link_name = "ordok_dec_attn_combine"]
        fn attn_combine_plain(part_o: *const f32, part_ml: *const f32, pos: *const i32, out: *mut u16, shape: AttnShape);
        #[link_name = "ordok_dec_attn_combine_pdl"]
        fn attn_combine_pdl(part_o: *const f32, part_ml: *const f32, pos: *const i32, out: *mut u16, shape: AttnShape);
        #[link_name = "ordok_dec_silu_mul"]
        fn silu_mul_plain(gu: *const u16, out: *mut u16, batch: i32, ffn: i32);
        #[link_name = "ordok_dec_silu_mul_pdl"]
        fn silu_mul_pdl(gu: *const u16, out: *mut u16, batch: i32, ffn: i32);
        /// `ordok_dec_fill(out, rows, len, dim, dst_len, src_len, seed, c, offset)`: element
        /// `(r, p, d)` of `rows` blocks of `len x dim`, stored at `(r * dst_len + p) * dim + d`, is
        /// `fp16(k * c + offset)` (each step rounded), `k = (hash32(i ^ seed) >> 8) - 2^23`, `i =
        /// (r * src_len + p) * dim + d` (below 2^32). A grid-stride loop: any grid.
        #[link_name = "ordok_dec_fill"]
        pub fn fill(
            out: *mut u16, rows: i32, len: i32, dim: i32, dst_len: i32, src_len: i32, seed: u32, c: f32, offset: f32,
        );
        /// `ordok_dec_spin(ns)`: one thread spins for `ns` nanoseconds of `%globaltimer`.
        #[link_name = "ordok_dec_spin"]
        pub fn spin(ns: i64);
    }
}

/// RMSNorm kernel argument tuple: `(x, copy, w, out, rows, cols, eps)`.
pub type RmsNormArgs = (*const u16, *mut u16, *const u16, *mut u16, i32, i32, f32);
/// Rotary + KV-write kernel argument tuple: `(qkv, rope, pos, k_cache, v_cache, batch, q_heads, kv_heads, max_ctx)`.
pub type RopeKvArgs = (*mut u16, *const [f32; 2], *const i32, *mut u16, *mut u16, i32, i32, i32, i32);
/// Attention-partial kernel argument tuple: `(qkv, k_cache, v_cache, pos, part_o, part_ml, shape)`.
pub type AttnPartialArgs = (*const u16, *const u16, *const u16, *const i32, *mut f32, *mut f32, AttnShape);
/// Attention-combine kernel argument tuple: `(part_o, part_ml, pos, out, shape)`.
pub type AttnCombineArgs = (*const f32, *const f32, *const i32, *mut u16, AttnShape);
/// SiLU-gate kernel argument tuple: `(gu, out, batch, ffn)`.
pub type SiluMulArgs = (*const u16, *mut u16, i32, i32);

/// `out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w` for each of `rows` rows of `cols` halves (`cols`
/// a multiple of 8, 16-byte aligned rows); `copy`, unless null, gets `x[r]` unchanged. A row a
/// block; blocks of a whole number of warps, up to 1024 threads.
pub fn rmsnorm() -> PdlKernel<RmsNormArgs> {
    PdlKernel::new(rmsnorm_plain(), rmsnorm_pdl())
}

/// Rotary embedding (rotate-half pairs `i`, `i + 64`; `rope[p * 64 + i]` = (cos, sin) of position
/// `p`) of the query heads of `qkv` in place and of its key heads into `k_cache` at `pos[b]`, the
/// value heads copied into `v_cache` there. `qkv`: `batch` rows of `[q_heads | kv_heads | kv_heads]
/// x 128`; caches `[batch][kv_heads][max_ctx][128]`; a position outside `[0, max_ctx)` writes no
/// cache. A thread a rotated pair: `batch * (q_heads + kv_heads) * 64` of them.
pub fn rope_kv() -> PdlKernel<RopeKvArgs> {
    PdlKernel::new(rope_kv_plain(), rope_kv_pdl())
}

/// Decode attention over chunks of the caches: a block of exactly [`ATTN_THREADS`] a work item
/// `(b, g, c)`, `batch * kv_heads * chunks` of them, positions `[c * chunk, min((c + 1) * chunk,
/// pos[b] + 1))`. Writes each query head's unnormalised output (`part_o`,
/// `[batch][q_heads][chunks][128]` floats) and (max score, sum of exponentials) (`part_ml`,
/// `[batch][q_heads][chunks][2]`), for [`attn_combine`].
pub fn attn_partial() -> PdlKernel<AttnPartialArgs> {
    PdlKernel::new(attn_partial_plain(), attn_partial_pdl())
}

/// The chunks' results combined into the attention output `out` (`[batch][q_heads * 128]` halves):
/// a block (of [`ATTN_THREADS`]) a work item `(b, h)`, `batch * q_heads` of them.
pub fn attn_combine() -> PdlKernel<AttnCombineArgs> {
    PdlKernel::new(attn_combine_plain(), attn_combine_pdl())
}

/// `out[b][i] = silu(gu[b][i]) * gu[b][ffn + i]` (`ffn` a multiple of 8): a thread eight outputs,
/// `batch * ffn / 8` of them.
pub fn silu_mul() -> PdlKernel<SiluMulArgs> {
    PdlKernel::new(silu_mul_plain(), silu_mul_pdl())
}
