//! What frame `index` holds: word `j` is `seed(index) ^ (j * 0x85EB_CA6B)` (32-bit arithmetic),
//! written on the GPU by the producer's fill kernel (`FILL_PTX`) and checked by the consumer.
//! Two frames of different numbers differ in every word, and no frame's first word is zero, so a
//! consumer that read a slot before its new frame landed (the previous frame, or fresh memory)
//! sees a wrong word.

/// The seed of frame `index`: odd multiplication is a bijection of `u32`, so frames below 2^32 - 1
/// have distinct, non-zero seeds.
pub fn seed(index: u64) -> u32 {
    (index as u32).wrapping_add(1).wrapping_mul(0x9E37_79B1)
}

/// Word `j` of the frame of `seed`.
pub fn word(seed: u32, j: u64) -> u32 {
    seed ^ (j as u32).wrapping_mul(0x85EB_CA6B)
}

/// The fill kernel, `ordo_fill_frame(u32* dst, u64 words, u32 seed)`: a grid-stride loop writing
/// [`word`]`(seed, j)` to `dst[j]`. PTX, JIT-compiled by the driver at its first launch (no nvcc
/// at build time).
pub const FILL_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry ordo_fill_frame(
    .param .u64 ordo_fill_frame_param_0,
    .param .u64 ordo_fill_frame_param_1,
    .param .u32 ordo_fill_frame_param_2
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<9>;
    .reg .b64 %rd<10>;

    ld.param.u64 %rd1, [ordo_fill_frame_param_0];
    ld.param.u64 %rd2, [ordo_fill_frame_param_1];
    ld.param.u32 %r1, [ordo_fill_frame_param_2];
    cvta.to.global.u64 %rd3, %rd1;
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mul.wide.u32 %rd4, %r2, %r3;
    cvt.u64.u32 %rd5, %r4;
    add.s64 %rd6, %rd4, %rd5;
    mov.u32 %r5, %nctaid.x;
    mul.wide.u32 %rd7, %r5, %r3;
    setp.ge.u64 %p1, %rd6, %rd2;
    @%p1 bra $L_done;
$L_loop:
    cvt.u32.u64 %r6, %rd6;
    mul.lo.s32 %r7, %r6, -2048144789;
    xor.b32 %r8, %r7, %r1;
    shl.b64 %rd8, %rd6, 2;
    add.s64 %rd9, %rd3, %rd8;
    st.global.u32 [%rd9], %r8;
    add.s64 %rd6, %rd6, %rd7;
    setp.lt.u64 %p2, %rd6, %rd2;
    @%p2 bra $L_loop;
$L_done:
    ret;
}
";

/// Threads a block of the fill kernel.
pub const FILL_BLOCK: u32 = 256;

/// Blocks of the fill kernel for `words` words: one word a thread up to 4096 blocks, a
/// grid-stride loop past that.
pub fn fill_blocks(words: usize) -> u32 {
    words.div_ceil(FILL_BLOCK as usize).clamp(1, 4096) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_differ_in_every_word_and_start_non_zero() {
        for index in 0..64u64 {
            assert_ne!(word(seed(index), 0), 0);
            for j in [0u64, 1, 1000, (16 << 18) - 1] {
                assert_ne!(word(seed(index), j), word(seed(index + 4), j), "frame {index} word {j}");
            }
        }
        assert_eq!(0x85EB_CA6Bu32 as i32, -2048144789, "the PTX's multiplier");
    }

    #[test]
    fn the_grid_covers_small_frames_and_caps_large_ones() {
        assert_eq!(fill_blocks(1), 1);
        assert_eq!(fill_blocks(257), 2);
        assert_eq!(fill_blocks(1 << 22), 4096);
    }
}
