//! The decoder on the GPU: weights generated there from the formula, the KV caches, the step's
//! buffers, and the step itself: per layer four cuBLAS GEMMs and six of ordo's kernels, launched
//! with ordo's PDL plan.

use crate::config::{BufferSizes, GemmShape, Limits, ModelConfig, FORMULA_POSITIONS};
use crate::formula::{final_norm_formula, input_formula, layer_formula, Formula, Tensor};
use crate::kernels::{self as decoder, AttnShape, ATTN_THREADS};
use ordo_cuda::cublas::{ComputeType, Cublas, DataType, GemmAlgo, GemmEx, MathMode, Operand, Operation};
use ordo_cuda::launch::{BeyondOneWave, KernelArgs, LaunchConfig, PdlKernel, PdlMode, PdlPlan};
use ordo_cuda::memory::copy;
use ordo_cuda::{Device, DeviceBuffer, Error, Result, StreamRef};

/// The cuBLAS workspace: what PyTorch gives its handles on Hopper.
pub const CUBLAS_WORKSPACE_BYTES: usize = 32 << 20;
/// Threads a block of the RMSNorm, rotary and SiLU kernels.
const BLOCK: u32 = 256;

/// The operations of a step, in order (a layer's ten, then the final norm).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// RMSNorm before the attention (the first layer's also copies the input into the residual).
    AttnNorm,
    /// The QKV GEMM.
    Qkv,
    /// Rotary embedding of q and k, k and v written to the caches.
    RopeKv,
    /// Attention over chunks of the cache.
    AttnPartial,
    /// The chunks combined.
    AttnCombine,
    /// The output GEMM, added to the residual (`beta = 1`).
    OProj,
    /// RMSNorm before the MLP.
    FfnNorm,
    /// The gate and up GEMM.
    GateUp,
    /// `silu(gate) * up`.
    SiluMul,
    /// The down GEMM, added to the residual.
    Down,
    /// The final RMSNorm.
    FinalNorm,
}

impl Op {
    /// A layer's operations, in order.
    pub const LAYER: [Op; 10] = [
        Op::AttnNorm,
        Op::Qkv,
        Op::RopeKv,
        Op::AttnPartial,
        Op::AttnCombine,
        Op::OProj,
        Op::FfnNorm,
        Op::GateUp,
        Op::SiluMul,
        Op::Down,
    ];

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Op::AttnNorm => "attn_norm",
            Op::Qkv => "qkv_gemm",
            Op::RopeKv => "rope_kv",
            Op::AttnPartial => "attn_partial",
            Op::AttnCombine => "attn_combine",
            Op::OProj => "o_gemm_residual",
            Op::FfnNorm => "ffn_norm",
            Op::GateUp => "gate_up_gemm",
            Op::SiluMul => "silu_mul",
            Op::Down => "down_gemm_residual",
            Op::FinalNorm => "final_norm",
        }
    }

    /// The category both sides report (the PyTorch script's names): the attention's two kernels
    /// are one.
    pub fn category(self) -> &'static str {
        match self {
            Op::AttnPartial | Op::AttnCombine => "attention",
            other => other.name(),
        }
    }
}

/// The categories both sides report, in a step's order.
pub const CATEGORIES: [&str; 10] = [
    "attn_norm",
    "qkv_gemm",
    "rope_kv",
    "attention",
    "o_gemm_residual",
    "ffn_norm",
    "gate_up_gemm",
    "silu_mul",
    "down_gemm_residual",
    "final_norm",
];

/// One layer's weights (fp16 bit patterns).
struct LayerWeights<'s> {
    attn_norm: DeviceBuffer<'s, u16>,
    qkv: DeviceBuffer<'s, u16>,
    o: DeviceBuffer<'s, u16>,
    ffn_norm: DeviceBuffer<'s, u16>,
    gate_up: DeviceBuffer<'s, u16>,
    down: DeviceBuffer<'s, u16>,
}

/// Blocks a wave of each kernel of the step (asked once; the plans are arithmetic on them).
#[derive(Debug, Clone, Copy)]
struct Waves {
    rmsnorm: u32,
    rope_kv: u32,
    attn_partial: u32,
    attn_combine: u32,
    silu_mul: u32,
}

/// A Llama-style decoder on one stream: weights, KV caches and step buffers on the device, sized
/// for [`Limits`]; [`step`](Self::step) enqueues one decode step of `batch` sequences.
///
/// Every buffer lives on the decoder's stream: enqueue steps there (a [`GraphCache`] over
/// [`step`](Self::step) captures on the stream given to its `run`, which must be that stream).
///
/// [`GraphCache`]: ordo_cuda::graph_cache::GraphCache
pub struct Decoder<'s> {
    config: ModelConfig,
    limits: Limits,
    sizes: BufferSizes,
    stream: StreamRef<'s>,
    pdl: bool,
    waves: Waves,
    // Dropped before the workspace it points to (fields drop in order). Its drop synchronises the
    // device (cuBLAS's handle release).
    blas: Cublas,
    _workspace: DeviceBuffer<'s, u8>,
    layers: Vec<LayerWeights<'s>>,
    final_norm: DeviceBuffer<'s, u16>,
    k_cache: Vec<DeviceBuffer<'s, u16>>,
    v_cache: Vec<DeviceBuffer<'s, u16>>,
    rope: DeviceBuffer<'s, [f32; 2]>,
    pos: DeviceBuffer<'s, i32>,
    x_in: DeviceBuffer<'s, u16>,
    h: DeviceBuffer<'s, u16>,
    xn: DeviceBuffer<'s, u16>,
    qkv: DeviceBuffer<'s, u16>,
    attn: DeviceBuffer<'s, u16>,
    gate_up: DeviceBuffer<'s, u16>,
    act: DeviceBuffer<'s, u16>,
    out: DeviceBuffer<'s, u16>,
    part_o: DeviceBuffer<'s, f32>,
    part_ml: DeviceBuffer<'s, f32>,
}

impl<'s> Decoder<'s> {
    /// The decoder of `config` on `stream`, its buffers sized for `limits`, its weights generated
    /// on the device from the formula, its caches zeroed and its positions 0. cuBLAS is loaded
    /// here (`ORDO_CUBLAS`, else the loader's `libcublas.so.13`/`.12`), with PyTorch's settings:
    /// default math (tensor cores), fp32 compute for the fp16 GEMMs, a 32 MiB workspace of the
    /// decoder's. `pdl`: launch ordo's kernels by ordo's PDL plan (else the plain forms, no PDL).
    /// Returns once the weights are written (synchronises `stream`).
    pub fn new(stream: StreamRef<'s>, config: ModelConfig, limits: Limits, pdl: bool) -> Result<Decoder<'s>> {
        config.validate()?;
        limits.validate(&config)?;
        let device = Device::current()?;
        let sizes = BufferSizes::new(&config, &limits);
        let mut blas = Cublas::new()?;
        blas.set_math_mode(MathMode::Default, false)?;
        let mut workspace = DeviceBuffer::<u8>::zeroed_async(CUBLAS_WORKSPACE_BYTES, stream)?;
        // SAFETY: device memory of this device, cudaMallocAsync-aligned, owned by the decoder and
        // dropped after `blas` (field order); the decoder's GEMMs all run on one stream.
        unsafe { blas.set_workspace(workspace.as_mut_ptr().cast(), CUBLAS_WORKSPACE_BYTES)? };
        let waves = Waves {
            rmsnorm: decoder::rmsnorm().one_wave_blocks(device, BLOCK, 0)?,
            rope_kv: decoder::rope_kv().one_wave_blocks(device, BLOCK, 0)?,
            attn_partial: decoder::attn_partial().one_wave_blocks(device, ATTN_THREADS, 0)?,
            attn_combine: decoder::attn_combine().one_wave_blocks(device, ATTN_THREADS, 0)?,
            silu_mul: decoder::silu_mul().one_wave_blocks(device, BLOCK, 0)?,
        };
        // A `rows x cols` tensor of the formula, row-major.
        let tensor = |rows: usize, cols: usize, formula: Formula| -> Result<DeviceBuffer<'s, u16>> {
            let mut buf = DeviceBuffer::<u16>::alloc_async(rows * cols, stream)?;
            fill(stream, &mut buf, &formula, 1, rows, cols, rows, rows)?;
            Ok(buf)
        };
        let mut layers = Vec::with_capacity(config.layers);
        for l in 0..config.layers {
            let f = |t| layer_formula(&config, l, t);
            layers.push(LayerWeights {
                attn_norm: tensor(1, config.hidden, f(Tensor::AttnNorm))?,
                qkv: tensor(config.qkv_dim(), config.hidden, f(Tensor::Qkv))?,
                o: tensor(config.hidden, config.hidden, f(Tensor::O))?,
                ffn_norm: tensor(1, config.hidden, f(Tensor::FfnNorm))?,
                gate_up: tensor(2 * config.ffn, config.hidden, f(Tensor::GateUp))?,
                down: tensor(config.hidden, config.ffn, f(Tensor::Down))?,
            });
        }
        let final_norm = tensor(1, config.hidden, final_norm_formula())?;
        let zeroed = |n: usize| DeviceBuffer::<u16>::zeroed_async(n, stream);
        let mut k_cache = Vec::with_capacity(config.layers);
        let mut v_cache = Vec::with_capacity(config.layers);
        for _ in 0..config.layers {
            k_cache.push(zeroed(sizes.cache)?);
            v_cache.push(zeroed(sizes.cache)?);
        }
        let mut rope = DeviceBuffer::<[f32; 2]>::alloc_async(sizes.rope, stream)?;
        copy::h2d_blocking(rope.as_mut_slice(), &crate::config::rope_table(&config, limits.max_ctx), stream)?;
        let decoder = Decoder {
            config,
            limits,
            sizes,
            stream,
            pdl,
            waves,
            blas,
            _workspace: workspace,
            layers,
            final_norm,
            k_cache,
            v_cache,
            rope,
            pos: DeviceBuffer::zeroed_async(limits.max_batch, stream)?,
            x_in: zeroed(sizes.hidden)?,
            h: zeroed(sizes.hidden)?,
            xn: zeroed(sizes.hidden)?,
            qkv: zeroed(sizes.qkv)?,
            attn: zeroed(sizes.attn)?,
            gate_up: zeroed(sizes.gate_up)?,
            act: zeroed(sizes.act)?,
            out: zeroed(sizes.hidden)?,
            part_o: DeviceBuffer::zeroed_async(sizes.part_o, stream)?,
            part_ml: DeviceBuffer::zeroed_async(sizes.part_ml, stream)?,
        };
        stream.synchronize()?;
        Ok(decoder)
    }

    /// The model.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// What the buffers are sized for.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether ordo's kernels are launched by ordo's PDL plan.
    pub fn pdl(&self) -> bool {
        self.pdl
    }

    /// The loaded cuBLAS's version (`major * 10000 + minor * 100 + patch`).
    pub fn cublas_version(&self) -> Result<i32> {
        self.blas.version()
    }

    /// Device bytes the decoder holds: weights, caches, step buffers, the cuBLAS workspace.
    pub fn device_bytes(&self) -> usize {
        self.config.weight_bytes() + self.sizes.bytes(self.config.layers) + CUBLAS_WORKSPACE_BYTES
    }

    /// Writes the formula's values into every layer's caches at positions `0..context` of
    /// sequences `0..batch` (the pre-filled context); other positions keep what they hold.
    /// Enqueued on the decoder's stream.
    pub fn prefill(&mut self, batch: usize, context: usize) -> Result<()> {
        self.check_batch(batch, "Decoder::prefill")?;
        if context >= self.limits.max_ctx {
            return Err(Error::invalid("Decoder::prefill", "the context leaves no room for the new token"));
        }
        if context == 0 {
            return Ok(());
        }
        let (rows, hd, max_ctx) = (batch * self.config.kv_heads, self.config.head_dim, self.limits.max_ctx);
        for l in 0..self.config.layers {
            let (k, v) =
                (layer_formula(&self.config, l, Tensor::KCache), layer_formula(&self.config, l, Tensor::VCache));
            fill(self.stream, &mut self.k_cache[l], &k, rows, context, hd, max_ctx, FORMULA_POSITIONS)?;
            fill(self.stream, &mut self.v_cache[l], &v, rows, context, hd, max_ctx, FORMULA_POSITIONS)?;
        }
        Ok(())
    }

    /// Each sequence's position: where its new token's K and V go, the number of cached tokens
    /// before it (`0 <= p < max_ctx`). Blocking copy on the decoder's stream.
    pub fn set_positions(&mut self, positions: &[i32]) -> Result<()> {
        self.check_batch(positions.len(), "Decoder::set_positions")?;
        if positions.iter().any(|&p| p < 0 || p as usize >= self.limits.max_ctx) {
            return Err(Error::invalid("Decoder::set_positions", "a position outside the cache"));
        }
        copy::h2d_blocking(self.pos.slice_mut(0..positions.len())?, positions, self.stream)
    }

    /// The step's input hidden states of sequences `0..batch` from the formula (enqueued).
    pub fn fill_input(&mut self, batch: usize) -> Result<()> {
        self.check_batch(batch, "Decoder::fill_input")?;
        fill(self.stream, &mut self.x_in, &input_formula(), 1, batch, self.config.hidden, batch, batch)
    }

    /// The step's input hidden states, `[batch][hidden]` fp16 bit patterns (blocking copy).
    pub fn set_input(&mut self, x: &[u16]) -> Result<()> {
        if x.is_empty() || x.len() % self.config.hidden != 0 {
            return Err(Error::invalid("Decoder::set_input", "not whole rows of the hidden size"));
        }
        self.check_batch(x.len() / self.config.hidden, "Decoder::set_input")?;
        copy::h2d_blocking(self.x_in.slice_mut(0..x.len())?, x, self.stream)
    }

    /// The last step's output (the final RMSNorm) of sequences `0..batch`, `[batch][hidden]` fp16
    /// bit patterns (blocking copy, after the work queued on the decoder's stream).
    pub fn read_output(&self, batch: usize) -> Result<Vec<u16>> {
        self.check_batch(batch, "Decoder::read_output")?;
        let n = batch * self.config.hidden;
        let mut out = vec![0u16; n];
        copy::d2h_blocking(&mut out, self.out.slice(0..n)?, self.stream)?;
        Ok(out)
    }

    /// Layer `layer`'s K and V caches, `[max_batch][kv_heads][max_ctx][head_dim]` (blocking copy).
    pub fn read_cache(&self, layer: usize) -> Result<(Vec<u16>, Vec<u16>)> {
        let (Some(k), Some(v)) = (self.k_cache.get(layer), self.v_cache.get(layer)) else {
            return Err(Error::invalid("Decoder::read_cache", "no such layer"));
        };
        let (mut hk, mut hv) = (vec![0u16; k.len()], vec![0u16; v.len()]);
        copy::d2h_blocking(&mut hk, k.as_slice(), self.stream)?;
        copy::d2h_blocking(&mut hv, v.as_slice(), self.stream)?;
        Ok((hk, hv))
    }

    /// One decode step of sequences `0..batch` through the first `layers` layers and the final
    /// norm, on `s` (the decoder's stream, or a capture of it): no synchronise, no allocation, no
    /// host copy. Reads the input hidden states and positions set before; appends each
    /// sequence's K and V at its position.
    pub fn step(&mut self, s: StreamRef<'_>, batch: usize, layers: usize) -> Result<()> {
        if layers == 0 || layers > self.config.layers {
            return Err(Error::invalid("Decoder::step", "layers must be 1 to the model's"));
        }
        let pdl = self.pdl;
        for l in 0..layers {
            self.layer(s, batch, l, pdl, &mut |_| Ok(()))?;
        }
        self.final_norm(s, batch, pdl, &mut |_| Ok(()))
    }

    /// Layer `l` of a step on `s`, with `mark` called after each operation is enqueued (the
    /// profiling pass records an event there). `pdl`: the decoder's PDL plan (when it has one),
    /// else every kernel in its plain form; the first layer's first kernel never takes the PDL
    /// attribute (what precedes it in the stream need not be a kernel).
    pub fn layer(
        &mut self,
        s: StreamRef<'_>,
        batch: usize,
        l: usize,
        pdl: bool,
        mark: &mut dyn FnMut(Op) -> Result<()>,
    ) -> Result<()> {
        const CALL: &str = "Decoder::layer";
        self.check_batch(batch, CALL)?;
        if l >= self.config.layers {
            return Err(Error::invalid(CALL, "no such layer"));
        }
        let pdl = pdl && self.pdl;
        let c = self.config;
        let b = batch as i32;
        let [qkv_gemm, o_gemm, gate_up_gemm, down_gemm] = c.gemms(batch);
        let shape = self.attn_shape(batch);
        let (attn_items, combine_items) = (batch * c.kv_heads * self.limits.chunks(), batch * c.heads);
        let w = &self.layers[l];
        let (x, copy_to) =
            if l == 0 { (self.x_in.as_ptr(), self.h.as_mut_ptr()) } else { (self.h.as_ptr(), core::ptr::null_mut()) };
        let (xn, hidden, eps) = (self.xn.as_mut_ptr(), c.hidden as i32, c.eps);
        // SAFETY (every launch and GEMM below): each pointer is a buffer of the decoder sized by
        // `BufferSizes` for `max_batch` (checked: batch <= max_batch) or a weight of the shape
        // `config.gemms` gives; the caches hold `max_ctx` positions, which the kernels clamp to;
        // the plans cover the work items with grid-stride bodies; the buffers outlive every step
        // and every graph captured over them (the decoder owns them; a graph cache over `step`
        // is dropped before it); under PDL each kernel waits before reading what the previous
        // one wrote, and the step's first kernel is launched without the attribute.
        unsafe {
            let plan = plan_for(batch as u32, BLOCK, self.waves.rmsnorm)?;
            launch(decoder::rmsnorm(), s, &plan, pdl && l > 0, (x, copy_to, w.attn_norm.as_ptr(), xn, b, hidden, eps))?;
            mark(Op::AttnNorm)?;
            gemm(&mut self.blas, s, &qkv_gemm, w.qkv.as_ptr(), self.xn.as_ptr(), self.qkv.as_mut_ptr())?;
            mark(Op::Qkv)?;
            let pairs = batch * (c.heads + c.kv_heads) * c.head_dim / 2;
            let plan = plan_for(pairs.div_ceil(BLOCK as usize) as u32, BLOCK, self.waves.rope_kv)?;
            let rope = (self.qkv.as_mut_ptr(), self.rope.as_ptr(), self.pos.as_ptr());
            let caches = (self.k_cache[l].as_mut_ptr(), self.v_cache[l].as_mut_ptr());
            let heads = (c.heads as i32, c.kv_heads as i32, self.limits.max_ctx as i32);
            let args = (rope.0, rope.1, rope.2, caches.0, caches.1, b, heads.0, heads.1, heads.2);
            launch(decoder::rope_kv(), s, &plan, pdl, args)?;
            mark(Op::RopeKv)?;
            let plan = plan_for(attn_items as u32, ATTN_THREADS, self.waves.attn_partial)?;
            let parts = (self.part_o.as_mut_ptr(), self.part_ml.as_mut_ptr());
            let kv = (self.k_cache[l].as_ptr(), self.v_cache[l].as_ptr());
            let args = (self.qkv.as_ptr(), kv.0, kv.1, self.pos.as_ptr(), parts.0, parts.1, shape);
            launch(decoder::attn_partial(), s, &plan, pdl, args)?;
            mark(Op::AttnPartial)?;
            let plan = plan_for(combine_items as u32, ATTN_THREADS, self.waves.attn_combine)?;
            let args = (self.part_o.as_ptr(), self.part_ml.as_ptr(), self.pos.as_ptr(), self.attn.as_mut_ptr(), shape);
            launch(decoder::attn_combine(), s, &plan, pdl, args)?;
            mark(Op::AttnCombine)?;
            gemm(&mut self.blas, s, &o_gemm, w.o.as_ptr(), self.attn.as_ptr(), self.h.as_mut_ptr())?;
            mark(Op::OProj)?;
            let plan = plan_for(batch as u32, BLOCK, self.waves.rmsnorm)?;
            let args = (self.h.as_ptr(), core::ptr::null_mut(), w.ffn_norm.as_ptr(), xn, b, hidden, eps);
            launch(decoder::rmsnorm(), s, &plan, pdl, args)?;
            mark(Op::FfnNorm)?;
            gemm(&mut self.blas, s, &gate_up_gemm, w.gate_up.as_ptr(), self.xn.as_ptr(), self.gate_up.as_mut_ptr())?;
            mark(Op::GateUp)?;
            let threads = batch * c.ffn / 8;
            let plan = plan_for(threads.div_ceil(BLOCK as usize) as u32, BLOCK, self.waves.silu_mul)?;
            let args = (self.gate_up.as_ptr(), self.act.as_mut_ptr(), b, c.ffn as i32);
            launch(decoder::silu_mul(), s, &plan, pdl, args)?;
            mark(Op::SiluMul)?;
            gemm(&mut self.blas, s, &down_gemm, w.down.as_ptr(), self.act.as_ptr(), self.h.as_mut_ptr())?;
            mark(Op::Down)
        }
    }

    /// The step's final RMSNorm into the output, on `s`, then `mark(Op::FinalNorm)`.
    pub fn final_norm(
        &mut self,
        s: StreamRef<'_>,
        batch: usize,
        pdl: bool,
        mark: &mut dyn FnMut(Op) -> Result<()>,
    ) -> Result<()> {
        self.check_batch(batch, "Decoder::final_norm")?;
        let c = self.config;
        let plan = plan_for(batch as u32, BLOCK, self.waves.rmsnorm)?;
        let args = (
            self.h.as_ptr(),
            core::ptr::null_mut(),
            self.final_norm.as_ptr(),
            self.out.as_mut_ptr(),
            batch as i32,
            c.hidden as i32,
            c.eps,
        );
        // SAFETY: as in `layer`: decoder buffers of `max_batch` rows, batch checked.
        unsafe { launch(decoder::rmsnorm(), s, &plan, pdl && self.pdl, args)? };
        mark(Op::FinalNorm)
    }

    /// The attention kernels' shape at `batch`.
    fn attn_shape(&self, batch: usize) -> AttnShape {
        AttnShape {
            batch: batch as i32,
            q_heads: self.config.heads as i32,
            kv_heads: self.config.kv_heads as i32,
            max_ctx: self.limits.max_ctx as i32,
            chunk: self.limits.chunk as i32,
            chunks: self.limits.chunks() as i32,
            scale: (1.0 / (self.config.head_dim as f64).sqrt()) as f32,
        }
    }

    fn check_batch(&self, batch: usize, call: &'static str) -> Result<()> {
        if batch == 0 || batch > self.limits.max_batch {
            return Err(Error::invalid(call, format!("batch {batch}: 1 to {}", self.limits.max_batch)));
        }
        Ok(())
    }
}

/// ordo's PDL plan for `items` work items of `block` threads (one wave: `wave` blocks).
fn plan_for(items: u32, block: u32, wave: u32) -> Result<PdlPlan> {
    PdlPlan::new(items.max(1), block, wave, PdlMode::Auto, BeyondOneWave::default())
}

/// Launches `kernel` by `plan`, with the PDL attribute where `programmatic` and the plan's form is
/// the PDL one.
///
/// # Safety
/// [`PdlKernel::launch`]'s.
unsafe fn launch<A: KernelArgs>(
    kernel: PdlKernel<A>,
    s: StreamRef<'_>,
    plan: &PdlPlan,
    programmatic: bool,
    args: A,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { kernel.launch(s, plan, programmatic, args) }
}

/// `y[batch][out] = x[batch][inp] W[out][inp]^T` (+ `y` where the GEMM accumulates) in fp16 with
/// fp32 compute: `cublasGemmEx(T, N, out, batch, inp)`, as PyTorch's `F.linear` calls it.
///
/// # Safety
/// `w`, `x` and `y` hold the shape's matrices on the stream's device, for as long as the GEMM
/// (or a graph that captured it) runs; `y` overlaps neither.
unsafe fn gemm(
    blas: &mut Cublas,
    s: StreamRef<'_>,
    g: &GemmShape,
    w: *const u16,
    x: *const u16,
    y: *mut u16,
) -> Result<()> {
    let (out, inp, batch) = (g.out as i32, g.inp as i32, g.batch as i32);
    let op = GemmEx {
        transa: Operation::Transpose,
        transb: Operation::None,
        m: out,
        n: batch,
        k: inp,
        alpha: 1.0,
        a: Operand { ptr: w.cast(), ty: DataType::F16, ld: inp },
        b: Operand { ptr: x.cast(), ty: DataType::F16, ld: inp },
        beta: if g.accumulate { 1.0 } else { 0.0 },
        c: Operand { ptr: y.cast(), ty: DataType::F16, ld: out },
        compute: ComputeType::F32,
        algo: GemmAlgo::DefaultTensorOp,
    };
    // SAFETY: the caller's contract.
    unsafe { blas.gemm_ex(s, &op) }
}

/// Fills `buf` from `formula` on `s`: `rows` blocks of `len x dim` elements, stored with `dst_len`
/// positions a block, indexed in the formula with `src_len` (see `ordok_dec_fill`). Checks that
/// the elements fit `buf` and the formula's 32-bit index.
#[allow(clippy::too_many_arguments)]
fn fill(
    s: StreamRef<'_>,
    buf: &mut DeviceBuffer<'_, u16>,
    formula: &Formula,
    rows: usize,
    len: usize,
    dim: usize,
    dst_len: usize,
    src_len: usize,
) -> Result<()> {
    const CALL: &str = "decoder fill";
    let stored = rows.checked_mul(dst_len).and_then(|n| n.checked_mul(dim));
    let indexed = rows.checked_mul(src_len).and_then(|n| n.checked_mul(dim));
    let fits = |n: Option<usize>, limit: usize| n.is_some_and(|n| n <= limit);
    if len > dst_len || len > src_len || !fits(stored, buf.len()) || !fits(indexed, u32::MAX as usize) {
        return Err(Error::invalid(CALL, "the elements do not fit the buffer or the formula's index"));
    }
    let as_i32 = |n: usize| i32::try_from(n).map_err(|_| Error::invalid(CALL, "a size past i32"));
    let n = rows * len * dim;
    let blocks = n.div_ceil(256).clamp(1, 132 * 16) as u32;
    let args = (
        buf.as_mut_ptr(),
        as_i32(rows)?,
        as_i32(len)?,
        as_i32(dim)?,
        as_i32(dst_len)?,
        as_i32(src_len)?,
        formula.seed,
        formula.c,
        formula.offset,
    );
    // SAFETY: the kernel writes (r * dst_len + p) * dim + d < rows * dst_len * dim <= buf.len()
    // (checked above) for p < len <= dst_len; `buf` is freed on its stream after the kernel.
    unsafe { decoder::fill().launch(s, &LaunchConfig::new(blocks, 256), args) }
}
