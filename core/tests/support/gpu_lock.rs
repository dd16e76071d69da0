//! One process-wide reader-writer lock for the GPU tests of a test binary that captures in global
//! mode. The default harness runs tests in parallel threads of one process, and a global-mode
//! capture makes every capture-unsafe call of *any* thread fail (and invalidates the capture):
//! a `cudaMalloc`, a synchronise, a query of a stream. So a test that captures in global mode holds
//! the lock exclusively ([`exclusive`]), and every other GPU test of the same binary holds it
//! shared ([`shared`]) for its whole body: the global captures then run alone, the other tests
//! still in parallel with each other. Shared by `core/tests` and `kernels/tests` (through
//! `kernels/tests/common`).
//!
//! A test that fails while holding the lock poisons it; the others go on (`into_inner`), since the
//! lock guards no data, only the order of the tests.
#![allow(dead_code)]

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static GPU: RwLock<()> = RwLock::new(());

/// Held by a test that captures in global mode (or otherwise needs the process to itself).
#[must_use = "the lock is held only while the guard lives"]
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    GPU.write().unwrap_or_else(|e| e.into_inner())
}

/// Held by every other GPU test of a binary that has global-mode captures.
#[must_use = "the lock is held only while the guard lives"]
pub fn shared() -> RwLockReadGuard<'static, ()> {
    GPU.read().unwrap_or_else(|e| e.into_inner())
}
