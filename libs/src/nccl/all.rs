//! One process driving several devices: a communicator a device from `ncclCommInitAll`.

use super::api::{RawComm, INTERNAL_ERROR};
use super::error::{check, nccl_error, Success};
use super::{Communicator, Nccl, ReduceOp};
use crate::function::call;
use core::ffi::c_int;
use ordo_cuda_core::{Device, DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

/// NCCL communicators for several devices of this process (`ncclCommInitAll`): one
/// [`Communicator`] a device, rank `i` on `devices()[i]`. Each may be used alone, or all
/// together inside one [`Group`](super::Group) (a call on one of them would otherwise wait for
/// the others' forever, the calls all coming from this thread).
///
/// # Drop
/// Dropping them drops each [`Communicator`] in turn (`ncclCommDestroy`, which blocks: see there).
pub struct Communicators {
    comms: Vec<Communicator>,
    devices: Vec<Device>,
    nccl: Nccl,
}

impl Communicators {
    /// Loads NCCL and creates one communicator per device in `devices` (at least two).
    pub fn new(devices: &[Device]) -> Result<Communicators> {
        Communicators::with_library(&Nccl::load()?, devices)
    }

    /// As [`new`](Self::new), with NCCL loaded already.
    pub fn with_library(nccl: &Nccl, devices: &[Device]) -> Result<Communicators> {
        const CALL: &str = "Communicators::new";
        if devices.len() < 2 {
            return Err(Error::invalid(CALL, "a collective needs at least two devices"));
        }
        let n = c_int::try_from(devices.len()).map_err(|_| Error::invalid(CALL, "more devices than an int holds"))?;
        let ordinals: Vec<c_int> = devices.iter().map(|d| d.ordinal()).collect();
        let mut raw: Vec<RawComm> = vec![core::ptr::null_mut(); devices.len()];
        let api = nccl.api();
        // SAFETY: arrays of `devices.len()` elements.
        let returned = call!(unsafe { api.init_all(raw.as_mut_ptr(), n, ordinals.as_ptr()) });
        check(api, core::ptr::null_mut(), returned, Success::Done)?;
        let mut comms = Vec::with_capacity(devices.len());
        for (rank, (&c, &d)) in raw.iter().zip(devices).enumerate() {
            // Every one is wrapped (and so destroyed) even if a later one were null.
            if let Some(c) = Communicator::from_raw(c, nccl.clone(), d, rank, devices.len()) {
                comms.push(c);
            }
        }
        if comms.len() != devices.len() {
            return Err(nccl_error(api, core::ptr::null_mut(), returned.call, INTERNAL_ERROR));
        }
        Ok(Communicators { comms, devices: devices.to_vec(), nccl: nccl.clone() })
    }

    /// NCCL's version code (`ncclGetVersion`), e.g. 22703 for 2.27.3.
    pub fn version(&self) -> Result<i32> {
        self.nccl.version()
    }

    /// The loaded library (for [`Nccl::group`]).
    pub fn library(&self) -> &Nccl {
        &self.nccl
    }

    /// The devices, in communicator order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The communicators, rank `i` at `i`.
    pub fn communicators(&self) -> &[Communicator] {
        &self.comms
    }

    /// Sum-all-reduces `f32` buffers: for each device `i`, `recv[i] = Σ_j send[j]`, enqueued on
    /// `streams[i]` (a stream of device `i`) inside one NCCL group. Returns once enqueued.
    ///
    /// # Safety
    /// Each buffer is device memory of its device, all of one length, allocated until the
    /// collective completes on its stream.
    pub unsafe fn all_reduce_sum_f32(
        &mut self,
        send: &[DeviceSlice<'_, f32>],
        recv: &mut [DeviceSliceMut<'_, f32>],
        streams: &[StreamRef<'_>],
    ) -> Result<()> {
        const CALL: &str = "Communicators::all_reduce_sum_f32";
        let n = self.comms.len();
        if send.len() != n || recv.len() != n || streams.len() != n {
            return Err(Error::invalid(CALL, "one send buffer, receive buffer and stream per device"));
        }
        let count = send[0].len();
        if count == 0 || send.iter().any(|s| s.len() != count) || recv.iter().any(|r| r.len() != count) {
            return Err(Error::invalid(CALL, "buffers must all have one non-zero length"));
        }
        let group = self.nccl.group()?;
        let mut first_error = None;
        for (i, comm) in self.comms.iter().enumerate() {
            // SAFETY: a view of the caller's exclusive view, used for this call only.
            let r = unsafe { DeviceSliceMut::from_raw_parts(recv[i].as_mut_ptr(), count) };
            // SAFETY: sizes checked; lifetimes owed by the caller.
            if let Err(e) = unsafe { comm.all_reduce(send[i], r, ReduceOp::Sum, streams[i]) } {
                first_error.get_or_insert(e);
            }
        }
        // The group is closed also after an error.
        let ended = group.end();
        match first_error {
            Some(e) => Err(e),
            None => ended,
        }
    }
}
