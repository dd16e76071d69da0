//! The calling thread's capture mode while an export runs. CUDA refuses "potentially unsafe"
//! calls (allocations, frees, instantiating or destroying executable graphs, synchronising or
//! querying other streams and events) on a thread while that thread captures, or while any thread
//! captures in global mode, and the refusal invalidates the capture. ordo's own calls of that kind
//! have nothing to do with the caller's capture, so every export runs with the calling thread's
//! capture mode exchanged to relaxed ([`RelaxedCaptureMode`], as CCCL does;
//! `cudaThreadExchangeStreamCaptureMode`), restored on the way out; the caller's callbacks run in
//! the caller's own mode again ([`in_caller_mode`]). See [`check`](crate::check) for the checks
//! that are capture-aware.

use core::cell::Cell;
use ordo_cuda_core::sys;

thread_local! {
    /// The capture mode the calling thread had when the outermost running export entered, while
    /// the export runs with it relaxed; `None` outside exports (or when the exchange failed).
    static CALLER_MODE: Cell<Option<sys::cudaStreamCaptureMode>> = const { Cell::new(None) };
}

/// Exchanges the thread's capture mode (`cudaThreadExchangeStreamCaptureMode`): sets `mode` and
/// returns the previous one, or `None` if CUDA refused (then nothing changed).
fn exchange(mode: sys::cudaStreamCaptureMode) -> Option<sys::cudaStreamCaptureMode> {
    let mut m = mode;
    // SAFETY: `m` is writable; the call only swaps a per-thread setting.
    let code = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut m) };
    (code == sys::cudaError::cudaSuccess).then_some(m)
}

/// The calling thread's capture mode relaxed for the scope's lifetime, restored when it drops
/// (also during a panic's unwinding). Without a driver the exchange fails: nothing is changed then,
/// and the export's first real CUDA call returns CUDA's status as usual.
pub(crate) struct RelaxedCaptureMode {
    previous: Option<sys::cudaStreamCaptureMode>,
    outer: Option<sys::cudaStreamCaptureMode>,
}

impl RelaxedCaptureMode {
    pub(crate) fn enter() -> RelaxedCaptureMode {
        let previous = exchange(sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed);
        let outer = CALLER_MODE.with(|c| c.replace(previous));
        RelaxedCaptureMode { previous, outer }
    }
}

impl Drop for RelaxedCaptureMode {
    fn drop(&mut self) {
        if let Some(mode) = self.previous {
            let _ = exchange(mode);
        }
        CALLER_MODE.with(|c| c.set(self.outer));
    }
}

/// Runs a caller's callback with the capture mode the caller had when it called ordo (relaxed
/// again afterwards), so that CUDA refuses in the callback what it would refuse in the caller.
pub(crate) fn in_caller_mode<R>(f: impl FnOnce() -> R) -> R {
    struct BackToRelaxed(bool);
    impl Drop for BackToRelaxed {
        fn drop(&mut self) {
            if self.0 {
                let _ = exchange(sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed);
            }
        }
    }
    let restored = match CALLER_MODE.with(Cell::get) {
        Some(mode) => exchange(mode).is_some(),
        None => false,
    };
    let _back = BackToRelaxed(restored);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callbacks_run_in_the_callers_mode_and_the_scope_restores_it() {
        // Without a driver the exchange fails and nothing is recorded; with one, the scope records
        // the caller's mode and restores it. Either way the thread's state after equals before.
        let before = CALLER_MODE.with(Cell::get);
        {
            let _scope = RelaxedCaptureMode::enter();
            let inner = CALLER_MODE.with(Cell::get);
            in_caller_mode(|| {
                let _nested = RelaxedCaptureMode::enter();
            });
            assert_eq!(CALLER_MODE.with(Cell::get), inner);
        }
        assert_eq!(CALLER_MODE.with(Cell::get), before);
    }
}
