//! ordo's decode step at small shapes (2 layers, hidden 512, 4 query heads over 2 KV heads, then
//! over 1) against the CPU reference, eager with and without PDL and replayed from the bucket graph
//! cache; the decoder's refusals; and `cublasGemmStridedBatchedEx`. One test function, so that
//! cuBLAS is chosen (an environment variable) before anything else runs in the process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use half::f16;
use ordo_cuda::cublas::{ComputeType, Cublas, DataType, GemmAlgo, GemmEx, MathMode, Operand, Operation, StridedBatch};
use ordo_cuda::graph_cache::{GraphCache, Overflow};
use ordo_cuda::Stream;
use ordo_decode::reference::Reference;
use ordo_decode::{cublas_path, Decoder, Limits, ModelConfig};

const ATOL: f32 = 2e-2;
const RTOL: f32 = 2e-2;

fn f32s(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| f16::from_bits(b).to_f32()).collect()
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let mut worst = (0usize, 0f32);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        assert!(d <= ATOL + RTOL * w.abs(), "{what}: [{i}] ordo {g} vs reference {w}");
        if d > worst.1 {
            worst = (i, d);
        }
    }
    eprintln!("{what}: max |ordo - reference| = {:.3e} at {}", worst.1, worst.0);
}

/// `cublasGemmStridedBatchedEx` (fp16 in and out, fp32 compute), three 4x6 by 6x5 products with
/// `beta = 1`, against the CPU.
fn strided_batched_gemm_matches_the_cpu(s: ordo_cuda::StreamRef<'_>) {
    let (m, n, k, count) = (4usize, 5usize, 6usize, 3usize);
    let value = |i: usize, scale: f32| f16::from_f32(((i * 37 % 23) as f32 - 11.0) * scale);
    let a: Vec<f16> = (0..count * m * k).map(|i| value(i, 0.125)).collect();
    let b: Vec<f16> = (0..count * k * n).map(|i| value(i + 5, 0.0625)).collect();
    let c0: Vec<f16> = (0..count * m * n).map(|i| value(i + 9, 0.5)).collect();
    let bits = |v: &[f16]| v.iter().map(|x| x.to_bits()).collect::<Vec<u16>>();
    let mut da = ordo_cuda::DeviceBuffer::<u16>::alloc_async(a.len(), s).unwrap();
    let mut db = ordo_cuda::DeviceBuffer::<u16>::alloc_async(b.len(), s).unwrap();
    let mut dc = ordo_cuda::DeviceBuffer::<u16>::alloc_async(c0.len(), s).unwrap();
    ordo_cuda::memory::copy::h2d_blocking(da.as_mut_slice(), &bits(&a), s).unwrap();
    ordo_cuda::memory::copy::h2d_blocking(db.as_mut_slice(), &bits(&b), s).unwrap();
    ordo_cuda::memory::copy::h2d_blocking(dc.as_mut_slice(), &bits(&c0), s).unwrap();
    let mut blas = Cublas::new().unwrap();
    blas.set_math_mode(MathMode::Default, false).unwrap();
    let g = GemmEx {
        transa: Operation::None,
        transb: Operation::None,
        m: m as i32,
        n: n as i32,
        k: k as i32,
        alpha: 1.0,
        a: Operand { ptr: da.as_ptr().cast(), ty: DataType::F16, ld: m as i32 },
        b: Operand { ptr: db.as_ptr().cast(), ty: DataType::F16, ld: k as i32 },
        beta: 1.0,
        c: Operand { ptr: dc.as_mut_ptr().cast(), ty: DataType::F16, ld: m as i32 },
        compute: ComputeType::F32,
        algo: GemmAlgo::DefaultTensorOp,
    };
    let batch = StridedBatch { stride_a: (m * k) as i64, stride_b: (k * n) as i64, stride_c: (m * n) as i64, count: 3 };
    // SAFETY: the three buffers hold `count` column-major matrices of the shapes `g` names, on
    // `s`'s device, and are freed on `s` after the GEMM (the copy below synchronises first).
    unsafe { blas.gemm_strided_batched_ex(s, &g, batch).unwrap() };
    let mut got = vec![0u16; c0.len()];
    ordo_cuda::memory::copy::d2h_blocking(&mut got, dc.as_slice(), s).unwrap();
    let mut want = Vec::with_capacity(c0.len());
    for i in 0..count {
        for col in 0..n {
            for row in 0..m {
                let dot: f32 =
                    (0..k).map(|p| a[i * m * k + p * m + row].to_f32() * b[i * k * n + col * k + p].to_f32()).sum();
                want.push(dot + c0[i * m * n + col * m + row].to_f32());
            }
        }
    }
    assert_close(&f32s(&got), &want, "cublasGemmStridedBatchedEx");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_decode_step_matches_the_cpu_reference() {
    let choice = cublas_path::choose().unwrap();
    eprintln!("{}", choice.note);
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    strided_batched_gemm_matches_the_cpu(s);
    // Positions 37, 0 and 20 (different lengths in one step), chunks of 16: 3 chunks a row, the
    // last one partial, one sequence with the new token alone.
    let positions = [37usize, 0, 20];
    let batch = positions.len();
    for (heads, kv) in [(4, 2), (4, 1)] {
        let config = ModelConfig::tiny(heads, kv);
        let limits = Limits::new(4, 40, 16).unwrap();
        assert_eq!(limits.max_ctx, 48);
        let mut reference = Reference::new(config, limits.max_batch, limits.max_ctx);
        reference.prefill(batch, 37);
        let x = reference.input(batch);
        let want = reference.step(&x, &positions, 2).unwrap();
        for pdl in [true, false] {
            let mut dec = Decoder::new(s, config, limits, pdl).unwrap();
            dec.prefill(batch, 37).unwrap();
            dec.set_positions(&positions.map(|p| p as i32)).unwrap();
            dec.fill_input(batch).unwrap();
            dec.step(s, batch, 2).unwrap();
            let eager = dec.read_output(batch).unwrap();
            assert_close(&f32s(&eager), &want, &format!("{heads}/{kv} heads, PDL {pdl}, eager"));
            // The new tokens' K and V, in the caches at their positions.
            for layer in 0..2 {
                let (k, v) = dec.read_cache(layer).unwrap();
                let (rk, rv) = reference.cache(layer);
                for (b, &p) in positions.iter().enumerate() {
                    for g in 0..kv {
                        let at = ((b * kv + g) * limits.max_ctx + p) * 128;
                        let what = format!("{heads}/{kv} heads, layer {layer}, sequence {b}, KV head {g}");
                        assert_close(&f32s(&k[at..at + 128]), &rk[at..at + 128], &format!("{what}: K"));
                        assert_close(&f32s(&v[at..at + 128]), &rv[at..at + 128], &format!("{what}: V"));
                    }
                }
            }
            // Replayed from the bucket graph cache: the same bits (the same kernels and GEMMs).
            let dec = std::cell::RefCell::new(dec);
            // SAFETY: the body enqueues the decoder's step on the capturing stream over the
            // decoder's buffers; `dec` outlives the cache (dropped after it, below); nothing else
            // uses `s` while it captures.
            let mut graphs =
                unsafe { GraphCache::new(vec![1, 3, 4], Overflow::Error, |cs, b| dec.borrow_mut().step(cs, b, 2)) }
                    .unwrap();
            assert_eq!(graphs.run(s, batch).unwrap(), 3, "a bucket of its own: cuBLAS may pick another kernel at 4");
            let replayed = dec.borrow().read_output(batch).unwrap();
            assert_eq!(replayed, eager, "{heads}/{kv} heads, PDL {pdl}: replayed");
            drop(graphs);
            let mut dec = dec.into_inner();
            // Refusals: usage errors, nothing enqueued.
            assert!(dec.step(s, 0, 2).is_err());
            assert!(dec.step(s, 5, 2).is_err(), "past the batch the buffers hold");
            assert!(dec.step(s, 1, 3).is_err(), "past the model's layers");
            assert!(dec.set_positions(&[48]).is_err(), "a position outside the cache");
            assert!(dec.set_positions(&[-1]).is_err());
            assert!(dec.prefill(1, 48).is_err(), "no room for the new token");
            s.synchronize().unwrap();
        }
    }
}
