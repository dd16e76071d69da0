//! `ordo_temporary_pool`: ordo's pool for the temporaries of a device, one a device.

use crate::fuzz::*;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;

impl Fuzz<'_> {
    /// `ordo_temporary_pool` of a random device (below -1, -1 for the current one, device 0, one
    /// past the last, `i32::MAX`) into a null, misaligned or good pointer. On a GPU a valid device
    /// gives a pool, the same one for the device every time (-1 is device 0: no fuzz thread changes
    /// its current device).
    pub(crate) fn temporary_pool(&mut self) {
        let ia = ORDO_ERROR_INVALID_ARGUMENT;
        let devices = self.facts.devices;
        let device = match self.rng.below(8) {
            0 => -2,
            1 => i32::MIN,
            2 => devices,
            3 => i32::MAX,
            4 | 5 => -1,
            _ => 0,
        };
        let mut slots: [sys::cudaMemPool_t; 2] = [null_mut(); 2];
        let (out, bad_out) = match self.rng.below(8) {
            0 => (null_mut(), true),
            // SAFETY: one byte into the array: still inside it.
            1 => (unsafe { slots.as_mut_ptr().cast::<u8>().add(1) }.cast::<sys::cudaMemPool_t>(), true),
            _ => (slots.as_mut_ptr(), false),
        };
        let st = self.record(unsafe { ordo_temporary_pool(device, out) }, "temporary_pool");
        if bad_out || device < -1 {
            assert_eq!(st, ia, "temporary_pool: bad out or device {device}");
            assert!(slots.iter().all(|p| p.is_null()), "nothing written on a refusal");
        } else if !self.gpu {
            assert!((1..=999).contains(&st), "temporary_pool without a driver: CUDA's status, got {st}");
        } else if device >= devices {
            assert_eq!(st, ia, "temporary_pool: device {device} of {devices}");
        } else {
            assert_eq!(st, ORDO_SUCCESS, "temporary_pool of device {device}");
            let pool = slots[0] as usize;
            assert_ne!(pool, 0, "a pool");
            let mut h = self.handles.lock().unwrap();
            let known = *h.temporary_pools.entry(device.max(0)).or_insert(pool);
            assert_eq!(known, pool, "one pool a device (device {device})");
        }
    }
}
