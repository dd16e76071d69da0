//! The five collective exports, on one path: a `Collective` trait and `collective`, which holds
//! the handle lookup and its lock, the type dispatch, and the checks of every buffer (null and
//! alignment, sizes, and the DEVICE POINTERS rule: device memory of the communicator's device, or
//! managed memory, so that NCCL never gets a host pointer to fault on); each collective states
//! only its lengths, which buffer may be NULL, and its Rust call.

use super::OrdoNcclComm;
use crate::status::OrdoStatus;
use core::ffi::{c_int, c_void};
use ordo_cuda_core::sys;

/// `recv = op over the ranks of send`, `count` elements (`ncclAllReduce`); `send == recv` in
/// place. Enqueued on `stream`; capturable.
///
/// # Safety
/// The C contract (ordo.h, NCCL): device buffers of `count` elements, live until the work
/// completes; every rank makes the matching call.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_all_reduce(
    comm: *mut OrdoNcclComm,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    with_nccl!("ordo_nccl_all_reduce", (comm, send, recv, count, dtype, op, stream), {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: the C contract, forwarded; `collective` checks handles, pointers, sizes.
        unsafe { imp::collective(call, || Ok(imp::AllReduce { op: imp::op_of(op)? })) }
    })
}

/// Copies `root`'s `count` elements to every rank's `recv` (`ncclBroadcast`); `send` is read on
/// the root only (NULL there: in place from `recv`; ignored elsewhere, may be NULL).
///
/// # Safety
/// As for ordo_nccl_all_reduce.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_broadcast(
    comm: *mut OrdoNcclComm,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    root: usize,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    with_nccl!("ordo_nccl_broadcast", (comm, send, recv, count, dtype, root, stream), {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::Broadcast { root })) }
    })
}

/// Reduces every rank's `count` elements into `root`'s `recv` (`ncclReduce`); `recv` may be
/// NULL except on the root.
///
/// # Safety
/// As for ordo_nccl_all_reduce.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_reduce(
    comm: *mut OrdoNcclComm,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dtype: c_int,
    op: c_int,
    root: usize,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    with_nccl!("ordo_nccl_reduce", (comm, send, recv, count, dtype, op, root, stream), {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::Reduce { op: imp::op_of(op)?, root })) }
    })
}

/// Gathers every rank's `send_count` elements into every rank's `recv` (`nranks * send_count`
/// elements, rank i's at i * send_count; `ncclAllGather`).
///
/// # Safety
/// As for ordo_nccl_all_reduce.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_all_gather(
    comm: *mut OrdoNcclComm,
    send: *const c_void,
    recv: *mut c_void,
    send_count: usize,
    dtype: c_int,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    with_nccl!("ordo_nccl_all_gather", (comm, send, recv, send_count, dtype, stream), {
        let call = imp::Call { comm, send, recv, count: send_count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::AllGather)) }
    })
}

/// Reduces every rank's `nranks * recv_count` elements and leaves block i of the result in rank
/// i's `recv` (`recv_count` elements; `ncclReduceScatter`).
///
/// # Safety
/// As for ordo_nccl_all_reduce.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_reduce_scatter(
    comm: *mut OrdoNcclComm,
    send: *const c_void,
    recv: *mut c_void,
    recv_count: usize,
    dtype: c_int,
    op: c_int,
    stream: sys::cudaStream_t,
) -> OrdoStatus {
    with_nccl!("ordo_nccl_reduce_scatter", (comm, send, recv, recv_count, dtype, op, stream), {
        let call = imp::Call { comm, send, recv, count: recv_count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::ReduceScatter { op: imp::op_of(op)? })) }
    })
}

/// The exports' bodies, with NCCL.
#[cfg(feature = "nccl")]
pub(super) mod imp {

    use crate::check::{byte_len, non_null, require_device_on, stream_device, stream_ref};

    use crate::nccl::OrdoNcclComm;
    use crate::status::{guard, invalid, OrdoStatus, Outcome};
    use core::ffi::{c_int, c_void};

    use ordo_cuda_core::{sys, DeviceSlice, DeviceSliceMut, StreamRef};
    use ordo_cuda_libs::nccl::{Communicator, DataType, ForEachType, NcclType, ReduceOp};

    use crate::nccl::communicator::imp::with_comm;

    /// The reduction of NCCL's value `op`, or `ORDO_ERROR_INVALID_ARGUMENT`.
    pub(in crate::nccl) fn op_of(op: c_int) -> Outcome<ReduceOp> {
        ReduceOp::from_raw(op).ok_or_else(|| invalid("op", "unknown reduction (ORDO_NCCL_SUM .. ORDO_NCCL_AVG)"))
    }

    /// One collective's C export: its name, its buffers' lengths and which of them may be NULL,
    /// and its Rust call; everything else is [`collective`]'s.
    pub(super) trait Collective {
        /// The export, as the last error names it.
        const NAME: &'static str;
        /// Whether `send` may be NULL (on this rank).
        const SEND_MAY_BE_NULL: bool = false;
        /// Whether `recv` may be NULL (on this rank).
        const RECV_MAY_BE_NULL: bool = false;
        /// (send, recv) lengths in elements for the export's `count` on `ranks` ranks; `None` when
        /// they overflow.
        fn lens(&self, count: usize, ranks: usize) -> Option<(usize, usize)>;
        /// Enqueues the collective on `s`.
        ///
        /// # Safety
        /// The export's C contract, forwarded by [`collective`], which has checked the buffers:
        /// [`Buffers::send`] and [`Buffers::recv`] are non-null unless `SEND_MAY_BE_NULL` or
        /// `RECV_MAY_BE_NULL` says otherwise (use [`Buffers::send_or_none`] and
        /// [`Buffers::recv_or_none`] for those).
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()>;
    }

    /// A collective's buffers, checked by [`collective`]: aligned for `T`, their byte counts
    /// within `isize::MAX`, device memory of the communicator's device (or managed), and non-null
    /// unless the collective allows NULL.
    pub(super) struct Buffers<T> {
        send: *const T,
        recv: *mut T,
        send_len: usize,
        recv_len: usize,
    }

    impl<T: NcclType> Buffers<T> {
        /// The send buffer.
        ///
        /// # Safety
        /// A buffer the collective does not allow to be NULL (so [`collective`] checked it
        /// non-null), of `send_len` elements live for `'a` (the C contract).
        pub(super) unsafe fn send<'a>(&self) -> DeviceSlice<'a, T> {
            // SAFETY: the caller's contract, above.
            unsafe { DeviceSlice::from_raw_parts(self.send, self.send_len) }
        }

        /// The receive buffer.
        ///
        /// # Safety
        /// As [`send`](Self::send).
        pub(super) unsafe fn recv<'a>(&self) -> DeviceSliceMut<'a, T> {
            // SAFETY: the caller's contract, above.
            unsafe { DeviceSliceMut::from_raw_parts(self.recv, self.recv_len) }
        }

        /// The send buffer, `None` when NULL.
        ///
        /// # Safety
        /// When not NULL, `send_len` elements live for `'a` (the C contract).
        pub(super) unsafe fn send_or_none<'a>(&self) -> Option<DeviceSlice<'a, T>> {
            // SAFETY: non-null here; the rest is the caller's contract.
            (!self.send.is_null()).then(|| unsafe { self.send() })
        }

        /// The receive buffer, `None` when NULL.
        ///
        /// # Safety
        /// As [`send_or_none`](Self::send_or_none).
        pub(super) unsafe fn recv_or_none<'a>(&self) -> Option<DeviceSliceMut<'a, T>> {
            // SAFETY: non-null here; the rest is the caller's contract.
            (!self.recv.is_null()).then(|| unsafe { self.recv() })
        }
    }

    /// A collective export's arguments, as the caller gave them.
    pub(super) struct Call {
        pub(super) comm: *mut OrdoNcclComm,
        pub(super) send: *const c_void,
        pub(super) recv: *mut c_void,
        pub(super) count: usize,
        pub(super) dtype: c_int,
        pub(super) stream: sys::cudaStream_t,
    }

    /// The shared path of the collective exports: the guard, the stream, the collective's own
    /// arguments (`make`: the operation, the root), the element type, the communicator (looked
    /// up and locked for the NCCL call), then the typed checks and the call ([`Typed`]).
    ///
    /// # Safety
    /// The export's C contract (ordo.h): buffers of the stated element counts, live until the work
    /// completes; every rank makes the matching call.
    pub(super) unsafe fn collective<C: Collective>(call: Call, make: impl FnOnce() -> Outcome<C>) -> OrdoStatus {
        guard(C::NAME, || {
            let s = stream_ref(call.stream)?;
            let coll = make()?;
            let dtype = DataType::from_raw(call.dtype)
                .ok_or_else(|| invalid("dtype", "unknown element type (ORDO_NCCL_INT8 .. ORDO_NCCL_BFLOAT16)"))?;
            with_comm(call.comm, |c| dtype.dispatch(Typed { coll, c, s, call: &call }))
        })
    }

    /// One collective call for the element type `dtype` named, run by [`DataType::dispatch`].
    struct Typed<'a, C> {
        coll: C,
        c: &'a Communicator,
        s: StreamRef<'a>,
        call: &'a Call,
    }

    impl<C: Collective> ForEachType for Typed<'_, C> {
        type Output = Outcome;

        fn run<T: NcclType>(self) -> Outcome {
            let Typed { coll, c, s, call } = self;
            let (send, recv) = (call.send.cast::<T>(), call.recv.cast::<T>());
            if !(send.is_null() && C::SEND_MAY_BE_NULL) {
                non_null(send, "send")?;
            }
            if !(recv.is_null() && C::RECV_MAY_BE_NULL) {
                non_null(recv.cast_const(), "recv")?;
            }
            if call.count == 0 {
                return Err(invalid("count", "zero count"));
            }
            let (send_len, recv_len) =
                coll.lens(call.count, c.ranks()).ok_or_else(|| invalid("count", "count * nranks overflows"))?;
            byte_len::<T>(send_len, "count")?;
            byte_len::<T>(recv_len, "count")?;
            // The stream and the buffers on the communicator's device (DEVICE POINTERS, ordo.h):
            // NCCL's kernels would fault on anything else, a sticky error.
            if stream_device(s)? != c.device() {
                return Err(invalid("stream", "a stream of another device than the communicator's"));
            }
            if !send.is_null() {
                require_device_on(send.cast(), c.device(), "send")?;
            }
            if !recv.is_null() {
                require_device_on(recv.cast_const().cast(), c.device(), "recv")?;
            }
            let buffers = Buffers { send, recv, send_len, recv_len };
            // SAFETY: the export's C contract, forwarded by `collective`; the buffers checked as
            // `Collective::enqueue` asks.
            Ok(unsafe { coll.enqueue(c, s, buffers) }?)
        }
    }

    pub(super) struct AllReduce {
        pub(super) op: ReduceOp,
    }

    impl Collective for AllReduce {
        const NAME: &'static str = "ordo_nccl_all_reduce";
        fn lens(&self, count: usize, _: usize) -> Option<(usize, usize)> {
            Some((count, count))
        }
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()> {
            // SAFETY: the C contract, forwarded; both buffers required (checked non-null).
            unsafe { c.all_reduce(b.send(), b.recv(), self.op, s) }
        }
    }

    pub(super) struct Broadcast {
        pub(super) root: usize,
    }

    impl Collective for Broadcast {
        const NAME: &'static str = "ordo_nccl_broadcast";
        const SEND_MAY_BE_NULL: bool = true;
        fn lens(&self, count: usize, _: usize) -> Option<(usize, usize)> {
            Some((count, count))
        }
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()> {
            // SAFETY: the C contract, forwarded; `send` may be NULL (in place), `recv` required.
            unsafe { c.broadcast(b.send_or_none(), b.recv(), self.root, s) }
        }
    }

    pub(super) struct Reduce {
        pub(super) op: ReduceOp,
        pub(super) root: usize,
    }

    impl Collective for Reduce {
        const NAME: &'static str = "ordo_nccl_reduce";
        const RECV_MAY_BE_NULL: bool = true;
        fn lens(&self, count: usize, _: usize) -> Option<(usize, usize)> {
            Some((count, count))
        }
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()> {
            // SAFETY: the C contract, forwarded; `recv` may be NULL off the root (the Rust call
            // refuses it on the root), `send` required.
            unsafe { c.reduce(b.send(), b.recv_or_none(), self.op, self.root, s) }
        }
    }

    pub(super) struct AllGather;

    impl Collective for AllGather {
        const NAME: &'static str = "ordo_nccl_all_gather";
        /// Every rank's block lands in `recv`.
        fn lens(&self, send_count: usize, ranks: usize) -> Option<(usize, usize)> {
            Some((send_count, send_count.checked_mul(ranks)?))
        }
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()> {
            // SAFETY: the C contract, forwarded; both buffers required.
            unsafe { c.all_gather(b.send(), b.recv(), s) }
        }
    }

    pub(super) struct ReduceScatter {
        pub(super) op: ReduceOp,
    }

    impl Collective for ReduceScatter {
        const NAME: &'static str = "ordo_nccl_reduce_scatter";
        /// Every rank's block is reduced from `send`.
        fn lens(&self, recv_count: usize, ranks: usize) -> Option<(usize, usize)> {
            Some((recv_count.checked_mul(ranks)?, recv_count))
        }
        unsafe fn enqueue<T: NcclType>(
            &self,
            c: &Communicator,
            s: StreamRef<'_>,
            b: Buffers<T>,
        ) -> ordo_cuda_core::Result<()> {
            // SAFETY: the C contract, forwarded; both buffers required.
            unsafe { c.reduce_scatter(b.send(), b.recv(), self.op, s) }
        }
    }
}
