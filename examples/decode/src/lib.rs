//! # ordo-decode
//!
//! A Llama-style decode loop on ordo, to measure against PyTorch on the same GPU
//! (`torch_decode.py` beside this crate computes the same model from the same formula).
//!
//! The model: Llama-3-8B's layer shapes ([`ModelConfig::llama3_8b`]: hidden 4096, 32 query heads
//! and 8 KV heads of 128, FFN 14336, RMSNorm eps 1e-5, rotary base 500000, SiLU-gated MLP), fp16
//! weights and caches, fp32 arithmetic; no vocabulary: a step starts from hidden states and ends at
//! the final RMSNorm. Weights, the pre-filled cache and the inputs come from a hash formula
//! ([`formula`]) that the GPU, the CPU and PyTorch compute bit for bit.
//!
//! A layer of a step ([`Decoder::step`]) is four cuBLAS GEMMs (fused QKV, output, fused gate and
//! up, down; fp16 with fp32 compute under cuBLAS's default math mode, as PyTorch calls them; the
//! residual added by the output and down GEMMs' `beta = 1`) and six of ordo's kernels
//! (`kernels`, compiled from `cuda/decoder.cu` by the build script): RMSNorm, rotary embedding with the KV-cache write, attention
//! over chunks of the cache and their combination, RMSNorm, the SiLU gate. ordo's kernels are
//! launched by ordo's PDL plan. The positions live on the device, so one graph a batch size
//! serves every context: the bucket graph cache replays them ([`ordo_cuda::graph_cache`]).
//!
//! | module | what |
//! | --- | --- |
//! | [`config`] | the shapes, the limits, the GEMM list, the buffer sizes, the rotary table (no GPU) |
//! | [`cublas_path`] | which cuBLAS to load: PyTorch's where it can be found |
//! | [`formula`] | the weight formula (no GPU) |
//! | [`model`] | the decoder on the GPU |
//! | [`reference`](mod@reference) | a CPU implementation of the step, for tests at small shapes |
//!
//! The binary `ordo-decode` runs the measurement (its `--help` says how).

pub mod config;
pub mod cublas_path;
pub mod formula;
pub mod kernels;
pub mod model;
pub mod reference;

pub use config::{GemmShape, Limits, ModelConfig};
pub use model::{Decoder, Op};
