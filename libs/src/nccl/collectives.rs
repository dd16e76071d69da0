//! The collectives and point-to-point calls, each one NCCL call enqueued on the caller's stream.
//!
//! Their contract: [`crate::nccl`], "Contract of the collectives".

use super::error::Success;
use super::{Communicator, NcclType, ReduceOp};
use crate::function::call;
use core::ffi::c_int;
use ordo_cuda_core::{DeviceSlice, DeviceSliceMut, Error, Result, StreamRef};

impl Communicator {
    /// A root or peer rank as NCCL's int, checked against the number of ranks.
    #[inline]
    fn rank_arg(&self, call: &'static str, rank: usize) -> Result<c_int> {
        if rank >= self.ranks() {
            return Err(Error::invalid(call, "the root or peer rank must be below the number of ranks"));
        }
        Ok(rank as c_int) // below `ranks`, which NCCL gave as an int
    }

    /// `recv = op over the ranks of send`, element by element (`ncclAllReduce`). `send` and
    /// `recv` have one length, the same on every rank.
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives): buffers live until the work completes, every rank matches.
    pub unsafe fn all_reduce<T: NcclType>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        if send.len() != recv.len() {
            return Err(Error::invalid("Communicator::all_reduce", "send and receive buffers differ in length"));
        }
        // SAFETY: lengths checked; lifetimes and the other ranks' calls owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.all_reduce(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    send.len(),
                    T::DATA_TYPE.raw(),
                    op.raw(),
                    comm,
                    stream.as_raw(),
                )
            })
        })
    }

    /// [`all_reduce`](Self::all_reduce) in place: `buf = op over the ranks of buf`.
    ///
    /// # Safety
    /// As for [`all_reduce`](Self::all_reduce).
    pub unsafe fn all_reduce_in_place<T: NcclType>(
        &self,
        buf: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        let p = buf.as_mut_ptr();
        // SAFETY: in place, as NCCL allows (send == recv); the rest owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.all_reduce(
                    p.cast_const().cast(),
                    p.cast(),
                    buf.len(),
                    T::DATA_TYPE.raw(),
                    op.raw(),
                    comm,
                    stream.as_raw(),
                )
            })
        })
    }

    /// Copies `root`'s buffer to every rank's `recv` (`ncclBroadcast`). On the root, `send` is
    /// the source (`None`: `recv` itself, in place); elsewhere it is ignored (pass `None`).
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives).
    pub unsafe fn broadcast<T: NcclType>(
        &self,
        send: Option<DeviceSlice<'_, T>>,
        recv: DeviceSliceMut<'_, T>,
        root: usize,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        const CALL: &str = "Communicator::broadcast";
        let root = self.rank_arg(CALL, root)?;
        if send.is_some_and(|s| s.len() != recv.len()) {
            return Err(Error::invalid(CALL, "send and receive buffers differ in length"));
        }
        let dst = recv.as_mut_ptr();
        let src = send.map_or(dst.cast_const(), |s| s.as_ptr());
        // SAFETY: lengths and root checked; the rest owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.broadcast(src.cast(), dst.cast(), recv.len(), T::DATA_TYPE.raw(), root, comm, stream.as_raw())
            })
        })
    }

    /// Reduces every rank's `send` into `root`'s `recv` (`ncclReduce`). `recv` is needed on the
    /// root only (`None` elsewhere).
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives).
    pub unsafe fn reduce<T: NcclType>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: Option<DeviceSliceMut<'_, T>>,
        op: ReduceOp,
        root: usize,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        const CALL: &str = "Communicator::reduce";
        let root_arg = self.rank_arg(CALL, root)?;
        if recv.is_none() && root == self.rank() {
            return Err(Error::invalid(CALL, "the root needs a receive buffer"));
        }
        if recv.as_ref().is_some_and(|r| r.len() != send.len()) {
            return Err(Error::invalid(CALL, "send and receive buffers differ in length"));
        }
        let dst = recv.map_or(core::ptr::null_mut(), |r| r.as_mut_ptr());
        // SAFETY: lengths and root checked; the rest owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.reduce(
                    send.as_ptr().cast(),
                    dst.cast(),
                    send.len(),
                    T::DATA_TYPE.raw(),
                    op.raw(),
                    root_arg,
                    comm,
                    stream.as_raw(),
                )
            })
        })
    }

    /// Gathers every rank's `send` into every rank's `recv`, rank `i`'s at `i * send.len()`
    /// (`ncclAllGather`): `recv.len() == ranks * send.len()`.
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives).
    pub unsafe fn all_gather<T: NcclType>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        if send.len().checked_mul(self.ranks()) != Some(recv.len()) {
            return Err(Error::invalid("Communicator::all_gather", "the receive buffer must hold ranks x send length"));
        }
        // SAFETY: lengths checked; the rest owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.all_gather(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    send.len(),
                    T::DATA_TYPE.raw(),
                    comm,
                    stream.as_raw(),
                )
            })
        })
    }

    /// Reduces every rank's `send` and leaves block `i` of the result in rank `i`'s `recv`
    /// (`ncclReduceScatter`): `send.len() == ranks * recv.len()`.
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives).
    pub unsafe fn reduce_scatter<T: NcclType>(
        &self,
        send: DeviceSlice<'_, T>,
        recv: DeviceSliceMut<'_, T>,
        op: ReduceOp,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        if recv.len().checked_mul(self.ranks()) != Some(send.len()) {
            return Err(Error::invalid(
                "Communicator::reduce_scatter",
                "the send buffer must hold ranks x receive length",
            ));
        }
        // SAFETY: lengths checked; the rest owed by the caller.
        self.locked(Success::Started, |api, comm| {
            call!(unsafe {
                api.reduce_scatter(
                    send.as_ptr().cast(),
                    recv.as_mut_ptr().cast(),
                    recv.len(),
                    T::DATA_TYPE.raw(),
                    op.raw(),
                    comm,
                    stream.as_raw(),
                )
            })
        })
    }

    /// Sends `buf` to rank `peer` (`ncclSend`, NCCL 2.7 and later), which receives it with
    /// [`recv`](Self::recv). Make the pair of calls inside a [`Group`](super::Group) where one
    /// rank both sends and receives, or they wait for each other forever.
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives): `peer` makes the matching `recv` of the same length and type.
    pub unsafe fn send<T: NcclType>(&self, buf: DeviceSlice<'_, T>, peer: usize, stream: StreamRef<'_>) -> Result<()> {
        let peer = self.rank_arg("Communicator::send", peer)?;
        let send = self.nccl_library().api().send.get("Communicator::send")?;
        // SAFETY: peer checked; the rest owed by the caller.
        self.locked(Success::Started, |_, comm| {
            call!(unsafe { send(buf.as_ptr().cast(), buf.len(), T::DATA_TYPE.raw(), peer, comm, stream.as_raw()) })
        })
    }

    /// Receives into `buf` what rank `peer` sends (`ncclRecv`); see [`send`](Self::send).
    ///
    /// # Safety
    /// See [the contract of the collectives](crate::nccl#contract-of-the-collectives).
    pub unsafe fn recv<T: NcclType>(
        &self,
        buf: DeviceSliceMut<'_, T>,
        peer: usize,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        let peer = self.rank_arg("Communicator::recv", peer)?;
        let recv = self.nccl_library().api().recv.get("Communicator::recv")?;
        // SAFETY: peer checked; the rest owed by the caller.
        self.locked(Success::Started, |_, comm| {
            call!(unsafe { recv(buf.as_mut_ptr().cast(), buf.len(), T::DATA_TYPE.raw(), peer, comm, stream.as_raw()) })
        })
    }
}
