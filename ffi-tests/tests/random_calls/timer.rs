//! The timer exports: `ordo_timer_create`, `_start`, `_stop`, `_elapsed_ms` and `_destroy`.

use crate::fuzz::*;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

impl Fuzz<'_> {
    /// `ordo_timer_create`, with a null out now and then.
    pub(crate) fn timer_create(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let gpu = self.gpu;
        let mut out: *mut OrdoTimer = null_mut();
        let null_out = self.rng.chance(8);
        let st =
            self.record(unsafe { ordo_timer_create(if null_out { null_mut() } else { &mut out }) }, "timer_create");
        if null_out {
            assert_eq!(st, ia);
        } else if gpu {
            assert_eq!(st, ORDO_SUCCESS);
        }
        if st == ORDO_SUCCESS {
            self.add(out as usize, Kind::Timer);
        }
    }

    /// `ordo_timer_start` (`start`) or `ordo_timer_stop` on a random handle.
    pub(crate) fn timer_record(&mut self, start: bool, stream: sys::cudaStream_t) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Timer);
        let t = h as *mut OrdoTimer;
        let st = if start { unsafe { ordo_timer_start(t, stream) } } else { unsafe { ordo_timer_stop(t, stream) } };
        let st = self.record(st, "timer_record");
        if !live {
            assert_eq!(st, ih);
        } else if stream.is_null() {
            assert!(st == ia || st == ih);
        }
    }

    /// `ordo_timer_elapsed_ms` of a random handle.
    pub(crate) fn timer_elapsed(&mut self) {
        let ih = ORDO_ERROR_INVALID_HANDLE;
        let (h, live) = self.handle(Kind::Timer);
        let mut ms = -1f32;
        let st = self.record(unsafe { ordo_timer_elapsed_ms(h as *mut OrdoTimer, &mut ms) }, "timer_elapsed");
        if !live {
            assert_eq!(st, ih);
        } else if st == ORDO_SUCCESS {
            assert!(ms >= 0.0 || ms.is_nan() || ms < 0.0, "any float is a value");
        }
    }

    /// `ordo_timer_destroy` of a random handle.
    pub(crate) fn timer_destroy(&mut self) {
        let (h, _) = self.handle(Kind::Timer);
        ordo_timer_destroy(h as *mut OrdoTimer);
        self.forget(h, Kind::Timer);
    }
}
