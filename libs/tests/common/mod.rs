//! Helpers shared by the GPU test binaries of this crate: deterministic random data and the lock
//! that keeps global-mode captures apart from the other GPU tests of a binary ([`gpu_lock`]).
#![allow(dead_code)]

#[path = "../../../core/tests/support/gpu_lock.rs"]
pub mod gpu_lock;

/// A xorshift generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Uniform in [lo, hi).
    pub fn f32s(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| lo + (hi - lo) * ((self.next() >> 40) as f32 / (1u64 << 24) as f32)).collect()
    }
}
