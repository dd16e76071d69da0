//! The decoder's shapes, plan and formula, and the CPU reference against PyTorch's model code, with
//! no GPU. The expected values were computed by `torch_decode.py`'s functions (PyTorch 2.11 on the
//! CPU: the formula with int64 tensor ops, the model in fp16).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// PyTorch's outputs below are fp16 values written out exactly.
#![allow(clippy::excessive_precision)]

use ordo_decode::config::{rope_table, BufferSizes, FORMULA_POSITIONS};
use ordo_decode::formula::{
    final_norm_formula, hash32, input_formula, layer_formula, seed, Formula, Tensor, FINAL_NORM_LAYER,
};
use ordo_decode::reference::Reference;
use ordo_decode::{Limits, ModelConfig};

#[test]
fn hash32_is_lowbias32() {
    assert_eq!(hash32(0), 0);
    assert_eq!(hash32(1), 0x6889_90c0);
    assert_eq!(hash32(12345), 0x912e_fcf7);
    assert_eq!(hash32(1 << 31), 0xcc4b_4124);
    assert_eq!(hash32(u32::MAX), 0x6768_824a);
    assert_eq!(hash32(117_440_511), 0x7c8a_96f7);
    assert_eq!(seed(0, Tensor::AttnNorm), 0x6889_90c0);
    assert_eq!(seed(31, Tensor::Down), 0xdd5f_c171);
}

/// fp16 bit patterns PyTorch's integer tensor ops gave for the same tensors.
#[test]
fn the_formula_gives_pytorchs_values_bit_for_bit() {
    let config = ModelConfig::llama3_8b(32);
    assert_eq!(layer_formula(&config, 0, Tensor::Qkv).bits(6), [0xa09b, 0xa2dc, 0x231d, 0x9dd2, 0x1980, 0xa1a6]);
    assert_eq!(layer_formula(&config, 3, Tensor::Down).bits(6), [0x9a96, 0x9e85, 0x98f9, 0x1d42, 0x9875, 0x9e5d]);
    assert_eq!(final_norm_formula().bits(6), [0x3bd2, 0x3a58, 0x3ce6, 0x3c35, 0x3cd2, 0x3c0e]);
    assert_eq!(input_formula().bits(6), [0x3bbd, 0xba12, 0xb5f3, 0xb494, 0x3745, 0x39e9]);
    let gate_up = layer_formula(&config, 7, Tensor::GateUp);
    let at: Vec<u16> =
        [0u32, 1, 12345, 1 << 31, u32::MAX, 117_440_511].iter().map(|&i| gate_up.value(i).to_bits()).collect();
    assert_eq!(at, [0x9d37, 0xa1ea, 0x9873, 0x210d, 0x13a5, 0x23f4]);
    // The V cache of layer 2, sequence 3, KV head 5, position 100, dimension 17.
    let i = ((3 * 8 + 5) * FORMULA_POSITIONS + 100) * 128 + 17;
    assert_eq!(layer_formula(&config, 2, Tensor::VCache).value(i as u32).to_bits(), 0xba1c);
    // The final norm has one seed whatever the depth; norms sit in [0.75, 1.25), projections in
    // [-1, 1) / sqrt(fan in).
    assert_eq!(final_norm_formula(), Formula::norm(FINAL_NORM_LAYER, Tensor::AttnNorm));
    let norm = layer_formula(&config, 5, Tensor::FfnNorm);
    assert!((0..4096).map(|i| norm.value(i).to_f32()).all(|v| (0.75..=1.25).contains(&v)));
    let down = layer_formula(&config, 5, Tensor::Down);
    let bound = 1.0 / (14336f32).sqrt();
    assert!((0..100_000).map(|i| down.value(i).to_f32().abs()).all(|v| v <= bound * 1.001));
}

/// f32 bit patterns of PyTorch's table (Python's math in f64, rounded to f32).
#[test]
fn the_rotary_table_is_pytorchs() {
    let table = rope_table(&ModelConfig::llama3_8b(1), 2049);
    assert_eq!(table.len(), 2049 * 64);
    let bits = |p: usize, i: usize| table[p * 64 + i].map(f32::to_bits);
    assert_eq!(bits(2048, 0), [0x3f73_21ca, 0xbea0_4902]);
    assert_eq!(bits(2048, 1), [0xbf7d_1c38, 0xbe19_6ceb]);
    assert_eq!(bits(2048, 63), [0x3f7f_ff2c, 0x3ba4_c2d2]);
    assert_eq!(bits(7, 5)[0], 0xbf4e_c84f);
    assert_eq!(bits(0, 9), [1.0f32.to_bits(), 0]);
}

#[test]
fn llama3_8b_shapes_and_gemms() {
    let c = ModelConfig::llama3_8b(32);
    c.validate().unwrap();
    assert_eq!((c.hidden, c.heads, c.kv_heads, c.head_dim, c.ffn, c.group()), (4096, 32, 8, 128, 14336, 4));
    assert_eq!((c.eps, c.rope_theta), (1e-5, 500_000.0));
    assert_eq!(c.qkv_dim(), 6144);
    let gemms: Vec<(&str, usize, usize, usize, bool)> =
        c.gemms(8).iter().map(|g| (g.name, g.out, g.inp, g.batch, g.accumulate)).collect();
    assert_eq!(
        gemms,
        [
            ("qkv", 6144, 4096, 8, false),
            ("o", 4096, 4096, 8, true),
            ("gate_up", 28672, 4096, 8, false),
            ("down", 4096, 14336, 8, true),
        ]
    );
    assert_eq!(c.layer_params(), 218_112_000);
    // 32 layers of fp16 weights and the final norm: about 14 GB.
    assert_eq!(c.weight_bytes(), 13_959_176_192);
}

#[test]
fn limits_and_buffer_sizes() {
    let c = ModelConfig::llama3_8b(32);
    let l = Limits::new(32, 2048, 128).unwrap();
    assert_eq!((l.max_ctx, l.chunks()), (2176, 17), "2049 positions in whole chunks");
    l.validate(&c).unwrap();
    let s = BufferSizes::new(&c, &l);
    assert_eq!(s.hidden, 32 * 4096);
    assert_eq!(s.qkv, 32 * 6144);
    assert_eq!(s.gate_up, 32 * 28672);
    assert_eq!(s.act, 32 * 14336);
    assert_eq!(s.cache, 32 * 8 * 2176 * 128);
    assert_eq!(s.part_o, 32 * 32 * 17 * 128);
    assert_eq!(s.part_ml, 32 * 32 * 17 * 2);
    assert_eq!(s.rope, 2176 * 64);
    // The caches of 32 layers: 2 x 32 x 71 MB of fp16, about 9.1 GB.
    assert!((9.0e9..9.2e9).contains(&(s.bytes(32) as f64)), "{}", s.bytes(32));
    assert_eq!(Limits::new(1, 512, 256).unwrap().max_ctx, 768);
    assert!(Limits::new(1, 512, 0).is_err());
    assert!(Limits::new(1, 512, 257).is_err());
    assert!(Limits::new(1, 4096, 128).unwrap().validate(&c).is_err(), "past the formula's positions");
}

#[test]
fn shapes_the_kernels_cannot_take_are_refused() {
    let ok = ModelConfig::llama3_8b(2);
    let refused = |c: ModelConfig| c.validate().unwrap_err().to_string();
    assert!(refused(ModelConfig { head_dim: 64, ..ok }).contains("head_dim"));
    assert!(refused(ModelConfig { kv_heads: 4, ..ok }).contains("group"), "8 query heads a KV head");
    assert!(refused(ModelConfig { kv_heads: 5, ..ok }).contains("group"));
    assert!(refused(ModelConfig { ffn: 14337, ..ok }).contains("multiple of 8"));
    assert!(refused(ModelConfig { hidden: 4000, ..ok }).contains("heads * head_dim"));
    assert!(refused(ModelConfig { layers: 0, ..ok }).contains("zero"));
    ModelConfig::tiny(4, 2).validate().unwrap();
    ModelConfig::tiny(4, 1).validate().unwrap();
}

/// The CPU reference computes what PyTorch's model code computes: outputs of a 2-layer step
/// (batch 2, 37 cached tokens) that `torch_decode.py`'s `Decoder` gave in fp16 on the CPU, to
/// fp16 rounding.
#[test]
fn the_reference_agrees_with_pytorchs_model() {
    type Expected = (usize, usize, [(usize, f32); 9]);
    let expected: [Expected; 2] = [
        (
            4,
            2,
            [
                (0, 1.3525390625),
                (1, -0.771484375),
                (2, -0.63720703125),
                (3, -0.58984375),
                (255, -1.2841796875),
                (511, -2.015625),
                (512, 0.646484375),
                (700, -0.6640625),
                (1023, 0.3076171875),
            ],
        ),
        (
            4,
            1,
            [
                (0, 1.3994140625),
                (1, -0.72900390625),
                (2, -0.84130859375),
                (3, -0.67578125),
                (255, -1.4521484375),
                (511, -1.810546875),
                (512, 0.54931640625),
                (700, -0.66259765625),
                (1023, 0.1824951171875),
            ],
        ),
    ];
    for (heads, kv, values) in expected {
        let config = ModelConfig::tiny(heads, kv);
        let mut r = Reference::new(config, 2, 48);
        r.prefill(2, 37);
        let x = r.input(2);
        let out = r.step(&x, &[37, 37], 2).unwrap();
        for (i, want) in values {
            assert!(
                (out[i] - want).abs() <= 1e-2 + 1e-2 * want.abs(),
                "{heads}/{kv} [{i}]: {} vs PyTorch {want}",
                out[i]
            );
        }
        // The new token's K and V went to position 37 of both sequences.
        let (k, v) = r.cache(0);
        let at = |b: usize, g: usize, p: usize| ((b * kv + g) * 48 + p) * 128;
        assert!(k[at(1, kv - 1, 37)..at(1, kv - 1, 38)].iter().any(|&x| x != 0.0));
        assert!(v[at(0, 0, 37)..at(0, 0, 38)].iter().any(|&x| x != 0.0));
        assert!(k[at(0, 0, 38)..at(0, 0, 39)].iter().all(|&x| x == 0.0), "nothing past the new position");
    }
}

#[test]
fn the_reference_refuses_shapes_past_its_model() {
    let mut r = Reference::new(ModelConfig::tiny(4, 2), 2, 48);
    let x = r.input(2);
    assert!(r.step(&x, &[1, 2, 3], 2).is_err(), "three positions for two rows");
    assert!(r.step(&x, &[1, 48], 2).is_err(), "a position outside the cache");
    assert!(r.step(&x, &[1, 2], 3).is_err(), "more layers than the model");
}
