//! Deterministic pseudo-random test data (xorshift64), never all zero: GPU tests check results
//! against data that a zeroed or untouched buffer cannot match.
#![allow(dead_code)]

/// `n` pseudo-random 64-bit words from `seed`.
fn words(n: usize, seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed | 1;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// `n` pseudo-random bytes.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    words(n, seed).map(|x| (x >> 24) as u8).collect()
}

/// `n` pseudo-random 32-bit values.
pub fn random_u32(n: usize, seed: u64) -> Vec<u32> {
    words(n, seed).map(|x| (x >> 16) as u32).collect()
}
