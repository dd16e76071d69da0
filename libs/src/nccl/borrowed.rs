//! A communicator ordo borrows from its owner (PyTorch, vLLM, TensorRT-LLM, C++ code of your
//! own): every collective and wait of a [`Communicator`], none of its ends.
//!
//! The shape is rustix's `OwnedFd` / `BorrowedFd<'a>`: [`Communicator`] owns its NCCL
//! communicator (dropping it destroys it, [`abort`](Communicator::abort) aborts it);
//! [`BorrowedCommunicator<'a>`] only lends the owner's for `'a`. It dereferences to
//! `&Communicator`, so every call that takes `&self` (the collectives, [`wait`](Communicator::wait),
//! [`state`](Communicator::state), [`split`](Communicator::split), ...) works on it unchanged,
//! while the two ends cannot be reached: `abort` takes a `Communicator` by value, which a shared
//! reference cannot give, and dropping a `BorrowedCommunicator` releases ordo's view only. So
//! destroying or aborting a borrowed communicator is not refused at run time: it does not
//! compile (`tests/compile_fail/`).

use super::api::{QueryFn, INTERNAL_ERROR, IN_PROGRESS};
use super::comm::device_lock;
use super::error::{check, nccl_error, Success};
use super::{Communicator, Nccl};
use crate::function::{call, Function};
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use ordo_cuda_core::{Device, Error, Result};

/// A NCCL communicator made and owned outside ordo, used by ordo for `'a`.
///
/// Dereferences to [`Communicator`]: collectives, waits, health, rank queries and splits (a split
/// makes a new communicator that ordo owns). Never destroys or aborts the owner's communicator:
/// after a failed [`wait`](Communicator::wait) (a peer gone), end the borrow and let the owner
/// abort it.
///
/// `Send` but not `Sync`, like [`Communicator`].
pub struct BorrowedCommunicator<'a> {
    comm: ManuallyDrop<Communicator>,
    _owner: PhantomData<&'a ()>,
}

impl<'a> BorrowedCommunicator<'a> {
    const CALL: &'static str = "BorrowedCommunicator::borrow_raw";

    /// Borrows the NCCL communicator `raw` (an `ncclComm_t`) for `'a`. Its device, rank and number
    /// of ranks are asked of NCCL (`ncclCommCuDevice`, `ncclCommUserRank`, `ncclCommCount`). A
    /// null `raw` is a usage error; a non-blocking communicator still being made is NCCL's
    /// `ncclInProgress` error (borrow it once its owner has seen it ready).
    ///
    /// # Safety
    /// - `raw` is a live communicator made by the same loaded NCCL library as `nccl` (a process
    ///   that loaded `libnccl.so.2` once: [`Nccl::load`] finds the already-loaded library by its
    ///   name, unless `ORDO_NCCL` names another file).
    /// - It stays alive for all of `'a`: its owner does not destroy, finalize, abort, shrink or
    ///   revoke it until the borrow has ended and the work ordo enqueued on it has completed.
    /// - No other thread calls NCCL on it, or on another communicator of its device, while a call
    ///   of ordo's on it runs (NCCL's rule; ordo's own calls take a per-device lock that the
    ///   owner's calls do not).
    /// - The collectives' contract ([`crate::nccl`], "Contract of the collectives") covers the
    ///   owner's calls too: every rank makes the owner's and ordo's calls on the communicator in
    ///   the same order, and the streams passed to ordo belong to the communicator's device.
    pub unsafe fn borrow_raw(nccl: &Nccl, raw: *mut c_void) -> Result<BorrowedCommunicator<'a>> {
        if raw.is_null() {
            return Err(Error::invalid(Self::CALL, "a null ncclComm_t"));
        }
        let api = nccl.api();
        let query = |query: Function<QueryFn>| -> Result<usize> {
            let mut v: c_int = 0;
            // SAFETY: a live communicator (the caller's promise); `v` writable.
            let returned = call!(unsafe { query(raw, &mut v) });
            if returned.status == IN_PROGRESS {
                return Err(Error::invalid(
                    Self::CALL,
                    "the communicator is still being made (ncclInProgress): borrow it once it is ready",
                ));
            }
            check(api, raw, returned, Success::Done)?;
            usize::try_from(v).map_err(|_| nccl_error(api, raw, query.name, INTERNAL_ERROR))
        };
        // The device is not known before this query, so it runs without the device lock; it reads
        // what NCCL stored when the communicator was made.
        let ordinal = query(api.cu_device)?;
        let device = Device::from_ordinal(c_int::try_from(ordinal).map_err(|_| Error::invalid(Self::CALL, "device"))?);
        let (ranks, rank) = {
            let _lock = device_lock(device);
            (query(api.count)?, query(api.user_rank)?)
        };
        if ranks == 0 || rank >= ranks {
            return Err(nccl_error(api, raw, api.user_rank.name, INTERNAL_ERROR));
        }
        let comm = Communicator::from_raw(raw, nccl.clone(), device, rank, ranks)
            .ok_or_else(|| Error::invalid(Self::CALL, "a null ncclComm_t"))?;
        Ok(BorrowedCommunicator { comm: ManuallyDrop::new(comm), _owner: PhantomData })
    }
}

impl core::ops::Deref for BorrowedCommunicator<'_> {
    type Target = Communicator;

    #[inline(always)]
    fn deref(&self) -> &Communicator {
        &self.comm
    }
}

impl core::fmt::Debug for BorrowedCommunicator<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("BorrowedCommunicator").field(&*self.comm).finish()
    }
}

impl Drop for BorrowedCommunicator<'_> {
    /// Ends the borrow: no NCCL call; the communicator stays its owner's.
    fn drop(&mut self) {
        // SAFETY: taken once, here; `self.comm` is not used again.
        let comm = unsafe { ManuallyDrop::take(&mut self.comm) };
        comm.forget_handle();
    }
}
