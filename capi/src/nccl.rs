//! NCCL through the C ABI: a communicator handle made from a unique id, the collectives on the
//! caller's stream. The checks one call can make happen here (handles, pointers, sizes with
//! checked arithmetic, enum values); the logic is the Rust API's (`ordo_cuda_libs::nccl`). Element
//! types and operations are NCCL's own values (`ORDO_NCCL_*` in ordo.h), read through the Rust
//! API's one table (`DataType::from_raw`, `ReduceOp::from_raw`, `DataType::dispatch`).
//!
//! The five collectives share one path, a `Collective` trait and `collective`: the handle lookup and
//! its lock, the type dispatch, and the checks of every buffer (null and alignment, sizes, and the
//! DEVICE POINTERS rule: device memory of the communicator's device, or managed memory, so that
//! NCCL never gets a host pointer to fault on); each collective states only its lengths, which
//! buffer may be NULL, and its Rust call.
//!
//! NCCL is reached through the feature `nccl` (on by default). Without it these exports still
//! exist, so that the ABI is the same in every build, and return `ORDO_ERROR_NOT_SUPPORTED` naming
//! the feature.

use super::status::OrdoStatus;
use core::ffi::{c_int, c_void};
use ordo_cuda_core::sys;

/// The C handle type of a communicator: opaque, never dereferenced (see [`super::handles`]).
#[repr(C)]
pub struct OrdoNcclComm {
    _opaque: [u8; 0],
}

/// Element types, NCCL's own values (`ncclDataType_t`); the header's `ORDO_NCCL_*`.
pub const ORDO_NCCL_INT8: c_int = 0;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT8: c_int = 1;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_INT32: c_int = 2;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT32: c_int = 3;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_INT64: c_int = 4;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_UINT64: c_int = 5;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT16: c_int = 6;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT32: c_int = 7;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_FLOAT64: c_int = 8;
/// See [`ORDO_NCCL_INT8`].
pub const ORDO_NCCL_BFLOAT16: c_int = 9;
/// Reductions, NCCL's own values (`ncclRedOp_t`).
pub const ORDO_NCCL_SUM: c_int = 0;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_PROD: c_int = 1;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_MAX: c_int = 2;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_MIN: c_int = 3;
/// See [`ORDO_NCCL_SUM`].
pub const ORDO_NCCL_AVG: c_int = 4;
/// Bytes of a unique id.
pub const ORDO_NCCL_UNIQUE_ID_BYTES: usize = 128;

/// Writes a new unique id (`ncclGetUniqueId`) to `id_out`: `id_bytes_len` must be 128. Call it on
/// rank 0's process, and carry the bytes to the other ranks.
///
/// # Safety
/// The C contract: `id_out` holds `id_bytes_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_get_unique_id(id_out: *mut u8, id_bytes_len: usize) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::get_unique_id(id_out, id_bytes_len) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (id_out, id_bytes_len);
        unavailable("ordo_nccl_get_unique_id")
    }
}

/// Makes rank `rank` of `nranks` on CUDA device `device` from the unique id's 128 bytes
/// (`ncclCommInitRank`); blocks until every rank has joined.
///
/// # Safety
/// The C contract: `id` holds `id_bytes_len` readable bytes; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_comm_init_rank(
    device: c_int,
    nranks: usize,
    id: *const u8,
    id_bytes_len: usize,
    rank: usize,
    out: *mut *mut OrdoNcclComm,
) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::comm_init_rank(device, nranks, id, id_bytes_len, rank, out) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (device, nranks, id, id_bytes_len, rank, out);
        unavailable("ordo_nccl_comm_init_rank")
    }
}

/// Destroys a communicator (`ncclCommDestroy`: waits for its queued collectives on every rank;
/// use ordo_nccl_comm_abort when a peer may be gone). NULL, destroyed, aborted and unknown
/// handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_destroy(comm: *mut OrdoNcclComm) {
    #[cfg(feature = "nccl")]
    imp::comm_destroy(comm);
    #[cfg(not(feature = "nccl"))]
    let _ = comm;
}

/// Aborts a communicator (`ncclCommAbort`: stops its work on the device, frees it without
/// waiting for the other ranks) and ends the handle. ORDO_ERROR_INVALID_HANDLE for a handle that
/// is not a live communicator.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_abort(comm: *mut OrdoNcclComm) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        imp::comm_abort(comm)
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = comm;
        unavailable("ordo_nccl_comm_abort")
    }
}

/// Wraps a communicator made outside ordo (an engine's `ncclComm_t`, as `void*`) in a handle
/// without taking it over: its device, rank and number of ranks are asked of NCCL, and every
/// `ordo_nccl_*` call works on the handle; destroy and abort refuse it, release ends it.
///
/// # Safety
/// The C contract (ordo.h): `nccl_comm` is a live communicator of the NCCL library ordo loads,
/// alive until `ordo_nccl_comm_release` has returned and the work enqueued through the handle has
/// completed, with no NCCL call of its owner on it (or on another communicator of its device)
/// while an ordo call on the handle runs; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_comm_borrow(nccl_comm: *mut c_void, out: *mut *mut OrdoNcclComm) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::comm_borrow(nccl_comm, out) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (nccl_comm, out);
        unavailable("ordo_nccl_comm_borrow")
    }
}

/// Ends a handle made by `ordo_nccl_comm_borrow` (no NCCL call: the communicator stays its
/// owner's). ORDO_ERROR_INVALID_ARGUMENT for a communicator ordo made (destroy or abort it),
/// ORDO_ERROR_INVALID_HANDLE for a handle that is not a live communicator.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_release(comm: *mut OrdoNcclComm) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        imp::comm_release(comm)
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = comm;
        unavailable("ordo_nccl_comm_release")
    }
}

/// Waits on the host, at most `timeout_ms` milliseconds, until the work enqueued so far on
/// `stream` completes, polling the communicator's health: ORDO_SUCCESS when done,
/// ORDO_ERROR_LIBRARY when the communicator broke (a peer gone) or the time passed; then abort it.
///
/// # Safety
/// The C contract: `stream` is a live stream of the communicator's device.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_comm_wait(
    comm: *mut OrdoNcclComm,
    stream: sys::cudaStream_t,
    timeout_ms: u32,
) -> OrdoStatus {
    #[cfg(feature = "nccl")]
    {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::comm_wait(comm, stream, timeout_ms) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, stream, timeout_ms);
        unavailable("ordo_nccl_comm_wait")
    }
}

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
    #[cfg(feature = "nccl")]
    {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: the C contract, forwarded; `collective` checks handles, pointers, sizes.
        unsafe { imp::collective(call, || Ok(imp::AllReduce { op: imp::op_of(op)? })) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, send, recv, count, dtype, op, stream);
        unavailable("ordo_nccl_all_reduce")
    }
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
    #[cfg(feature = "nccl")]
    {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::Broadcast { root })) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, send, recv, count, dtype, root, stream);
        unavailable("ordo_nccl_broadcast")
    }
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
    #[cfg(feature = "nccl")]
    {
        let call = imp::Call { comm, send, recv, count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::Reduce { op: imp::op_of(op)?, root })) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, send, recv, count, dtype, op, root, stream);
        unavailable("ordo_nccl_reduce")
    }
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
    #[cfg(feature = "nccl")]
    {
        let call = imp::Call { comm, send, recv, count: send_count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::AllGather)) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, send, recv, send_count, dtype, stream);
        unavailable("ordo_nccl_all_gather")
    }
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
    #[cfg(feature = "nccl")]
    {
        let call = imp::Call { comm, send, recv, count: recv_count, dtype, stream };
        // SAFETY: as above.
        unsafe { imp::collective(call, || Ok(imp::ReduceScatter { op: imp::op_of(op)? })) }
    }
    #[cfg(not(feature = "nccl"))]
    {
        let _ = (comm, send, recv, recv_count, dtype, op, stream);
        unavailable("ordo_nccl_reduce_scatter")
    }
}

/// An export's answer in a build without NCCL: `ORDO_ERROR_NOT_SUPPORTED`, naming the feature.
#[cfg(not(feature = "nccl"))]
fn unavailable(export: &'static str) -> OrdoStatus {
    super::status::guard(export, || Err(super::status::missing_feature("nccl")))
}

/// The exports' bodies, with NCCL.
#[cfg(feature = "nccl")]
mod imp {
    use super::super::check::write_out;
    use super::super::check::{byte_len, capturing, non_null, require_device_on, stream_device, stream_ref};
    use super::super::handles::{self, locked};
    use super::super::status::{
        guard, invalid, Failure, OrdoStatus, Outcome, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_STREAM_CAPTURING,
    };
    use super::OrdoNcclComm;
    use core::ffi::{c_int, c_void};
    use core::time::Duration;
    use ordo_cuda_core::{sys, Device, DeviceSlice, DeviceSliceMut, StreamRef};
    use ordo_cuda_libs::nccl::{
        is_timeout, poll_with_backoff, BorrowedCommunicator, Communicator, DataType, ForEachType, Nccl, NcclType,
        ReduceOp, UniqueId,
    };
    use std::sync::Mutex;

    /// What a handle holds: ordo's own communicator (`ordo_nccl_comm_init_rank`) or one borrowed
    /// from the caller (`ordo_nccl_comm_borrow`), which ordo never destroys or aborts.
    enum Held {
        Owned(Communicator),
        Borrowed(BorrowedCommunicator<'static>),
    }

    impl core::ops::Deref for Held {
        type Target = Communicator;
        fn deref(&self) -> &Communicator {
            match self {
                Held::Owned(c) => c,
                Held::Borrowed(b) => b,
            }
        }
    }

    /// A communicator behind a handle: `None` once aborted or released (a call still in flight on
    /// another thread then finds it gone). The lock is held for one NCCL call (one thread at a
    /// time, as NCCL asks).
    type CommObject = Mutex<Option<Held>>;

    /// `ORDO_ERROR_INVALID_ARGUMENT` when `comm` holds a borrowed communicator (which only
    /// `ordo_nccl_comm_release` ends); the handle stays valid.
    fn refuse_borrowed(comm: *mut OrdoNcclComm, what: &'static str) -> Outcome {
        if let Ok(c) = handles::get::<CommObject, _>(comm) {
            if matches!(locked(&c).as_ref(), Some(Held::Borrowed(_))) {
                return Err(invalid("comm", what));
            }
        }
        Ok(())
    }

    /// Runs `f` on the live communicator behind `comm`, under its lock: the lookup, the lock and
    /// the check that it was not aborted, written once. `ORDO_ERROR_INVALID_HANDLE` for a handle
    /// that is not a live communicator, or one aborted meanwhile.
    fn with_comm<R>(comm: *mut OrdoNcclComm, f: impl FnOnce(&Communicator) -> Outcome<R>) -> Outcome<R> {
        let c = handles::get::<CommObject, _>(comm)?;
        let held = locked(&c);
        let comm = held.as_deref().ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
        f(comm)
    }

    fn id_bytes(len: usize) -> Outcome {
        if len != UniqueId::BYTES {
            return Err(invalid("id_bytes_len", "a unique id is ORDO_NCCL_UNIQUE_ID_BYTES (128) bytes"));
        }
        Ok(())
    }

    /// # Safety
    /// As `ordo_nccl_get_unique_id`.
    pub(super) unsafe fn get_unique_id(id_out: *mut u8, id_bytes_len: usize) -> OrdoStatus {
        guard("ordo_nccl_get_unique_id", || {
            non_null(id_out.cast_const(), "id_out")?;
            id_bytes(id_bytes_len)?;
            let id = Nccl::load()?.unique_id()?;
            let bytes = id.to_bytes();
            // SAFETY: the C contract: 128 writable bytes (checked length), not overlapping ours.
            unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), id_out, bytes.len()) };
            Ok(())
        })
    }

    /// # Safety
    /// As `ordo_nccl_comm_init_rank`.
    pub(super) unsafe fn comm_init_rank(
        device: c_int,
        nranks: usize,
        id: *const u8,
        id_bytes_len: usize,
        rank: usize,
        out: *mut *mut OrdoNcclComm,
    ) -> OrdoStatus {
        guard("ordo_nccl_comm_init_rank", || {
            non_null(out.cast_const(), "out")?;
            non_null(id, "id")?;
            id_bytes(id_bytes_len)?;
            if device < 0 {
                return Err(invalid("device", "negative device ordinal"));
            }
            if nranks == 0 {
                return Err(invalid("nranks", "nranks must be at least 1"));
            }
            if rank >= nranks {
                return Err(invalid("rank", "rank must be below nranks"));
            }
            // SAFETY: the C contract: 128 readable bytes (checked length).
            let bytes = unsafe { core::slice::from_raw_parts(id, id_bytes_len) };
            let id = UniqueId::from_bytes(bytes)?;
            let nccl = Nccl::load()?;
            let comm = Communicator::init_rank(&nccl, Device::from_ordinal(device), nranks, &id, rank)?;
            let object: CommObject = Mutex::new(Some(Held::Owned(comm)));
            write_out(out, handles::register(object)?, "out")
        })
    }

    /// # Safety
    /// As `ordo_nccl_comm_borrow`.
    pub(super) unsafe fn comm_borrow(nccl_comm: *mut c_void, out: *mut *mut OrdoNcclComm) -> OrdoStatus {
        guard("ordo_nccl_comm_borrow", || {
            non_null(out.cast_const(), "out")?;
            non_null(nccl_comm.cast_const(), "nccl_comm")?;
            let nccl = Nccl::load()?;
            // SAFETY: the C contract, forwarded: `BorrowedCommunicator::borrow_raw`'s obligations,
            // for as long as the handle lives ('static here; the caller ends it with release).
            let comm = unsafe { BorrowedCommunicator::borrow_raw(&nccl, nccl_comm) }?;
            let object: CommObject = Mutex::new(Some(Held::Borrowed(comm)));
            write_out(out, handles::register(object)?, "out")
        })
    }

    pub(super) fn comm_release(comm: *mut OrdoNcclComm) -> OrdoStatus {
        guard("ordo_nccl_comm_release", || {
            let c = handles::get::<CommObject, _>(comm)?;
            if !matches!(locked(&c).as_ref(), Some(Held::Borrowed(_))) {
                return Err(invalid("comm", "not a borrowed communicator: destroy or abort it"));
            }
            let c = handles::remove::<CommObject, _>(comm).ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
            let taken = locked(&c).take();
            drop(taken);
            Ok(())
        })
    }

    pub(super) fn comm_destroy(comm: *mut OrdoNcclComm) {
        // The status is dropped (the export returns nothing); a refusal is the thread's last error.
        let _ = guard("ordo_nccl_comm_destroy", || {
            refuse_borrowed(comm, "a borrowed communicator: release it with ordo_nccl_comm_release")?;
            if let Some(c) = handles::remove::<CommObject, _>(comm) {
                let taken = locked(&c).take();
                drop(taken);
            }
            Ok(())
        });
    }

    pub(super) fn comm_abort(comm: *mut OrdoNcclComm) -> OrdoStatus {
        guard("ordo_nccl_comm_abort", || {
            refuse_borrowed(comm, "a borrowed communicator: release it with ordo_nccl_comm_release")?;
            let c = handles::remove::<CommObject, _>(comm).ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
            let taken = locked(&c).take();
            match taken {
                Some(Held::Owned(comm)) => Ok(comm.abort()?),
                Some(Held::Borrowed(_)) | None => Err(Failure(ORDO_ERROR_INVALID_HANDLE)),
            }
        })
    }

    /// # Safety
    /// As `ordo_nccl_comm_wait`.
    pub(super) unsafe fn comm_wait(comm: *mut OrdoNcclComm, stream: sys::cudaStream_t, timeout_ms: u32) -> OrdoStatus {
        guard("ordo_nccl_comm_wait", || {
            let s = stream_ref(stream)?;
            handles::get::<CommObject, _>(comm)?;
            // A host wait is no work for a capture, and querying the stream would end it: refused
            // before anything touches the stream (the capture-status query is the one legal there).
            if capturing(s)? {
                return Err(Failure(ORDO_ERROR_STREAM_CAPTURING));
            }
            // The handle's lock is taken per poll, not for the whole wait: an ordo_nccl_comm_abort
            // from another thread (a watchdog) gets in between two polls, and this wait then ends
            // with ORDO_ERROR_INVALID_HANDLE. One poll: the communicator's health, then the stream
            // (a zero timeout); only "not yet" goes round again, a broken communicator or a CUDA
            // error of the stream (a sticky one too) is returned at once.
            let timeout = Duration::from_millis(u64::from(timeout_ms));
            poll_with_backoff(timeout, "ordo_nccl_comm_wait", || {
                with_comm(comm, |c| match c.wait(s, Duration::ZERO) {
                    Ok(()) => Ok(Some(())),
                    Err(e) if is_timeout(&e) => Ok(None),
                    Err(e) => Err(e.into()),
                })
            })
        })
    }

    /// The reduction of NCCL's value `op`, or `ORDO_ERROR_INVALID_ARGUMENT`.
    pub(super) fn op_of(op: c_int) -> Outcome<ReduceOp> {
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

#[cfg(all(test, feature = "nccl"))]
mod tests {
    use super::*;
    use ordo_cuda_libs::nccl::{DataType, ReduceOp, UniqueId};

    /// The header's `ORDO_NCCL_*` values are NCCL's, as the Rust API has them.
    #[test]
    fn header_values_are_nccls() {
        let header = include_str!("../include/ordo.h");
        let value = |name: &str| -> i64 {
            let line = header
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name) && l.starts_with("#define"))
                .unwrap_or_else(|| panic!("{name} not in ordo.h"));
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        let types = [
            ("ORDO_NCCL_INT8", DataType::I8),
            ("ORDO_NCCL_UINT8", DataType::U8),
            ("ORDO_NCCL_INT32", DataType::I32),
            ("ORDO_NCCL_UINT32", DataType::U32),
            ("ORDO_NCCL_INT64", DataType::I64),
            ("ORDO_NCCL_UINT64", DataType::U64),
            ("ORDO_NCCL_FLOAT16", DataType::F16),
            ("ORDO_NCCL_FLOAT32", DataType::F32),
            ("ORDO_NCCL_FLOAT64", DataType::F64),
            ("ORDO_NCCL_BFLOAT16", DataType::Bf16),
        ];
        for (name, t) in types {
            assert_eq!(value(name), i64::from(t.raw()), "{name}");
        }
        let ops = [
            ("ORDO_NCCL_SUM", ReduceOp::Sum),
            ("ORDO_NCCL_PROD", ReduceOp::Prod),
            ("ORDO_NCCL_MAX", ReduceOp::Max),
            ("ORDO_NCCL_MIN", ReduceOp::Min),
            ("ORDO_NCCL_AVG", ReduceOp::Avg),
        ];
        for (name, op) in ops {
            assert_eq!(value(name), i64::from(op.raw()), "{name}");
            assert_eq!(imp::op_of(op.raw()).unwrap(), op);
        }
        assert_eq!(value("ORDO_NCCL_UNIQUE_ID_BYTES"), UniqueId::BYTES as i64);
        assert_eq!(ORDO_NCCL_UNIQUE_ID_BYTES, UniqueId::BYTES);
        assert!(imp::op_of(5).is_err() && imp::op_of(-1).is_err());
    }
}

#[cfg(all(test, not(feature = "nccl")))]
mod tests {
    use super::*;
    use crate::status::ORDO_ERROR_NOT_SUPPORTED;

    /// Built without NCCL, every NCCL export exists and refuses with the feature's name.
    #[test]
    fn without_the_nccl_feature_the_exports_say_so() {
        let s = sys::cudaStreamPerThread();
        let (p, q) = (core::ptr::null::<c_void>(), core::ptr::null_mut::<c_void>());
        let mut id = [0u8; ORDO_NCCL_UNIQUE_ID_BYTES];
        let mut comm = core::ptr::null_mut();
        let h = core::ptr::null_mut::<OrdoNcclComm>();
        // SAFETY (every call): refused before any pointer would be used.
        let mut borrowed = core::ptr::null_mut();
        let calls: [&mut dyn FnMut() -> OrdoStatus; 11] = [
            &mut || unsafe { ordo_nccl_get_unique_id(id.as_mut_ptr(), id.len()) },
            &mut || unsafe { ordo_nccl_comm_init_rank(0, 1, [0u8; 128].as_ptr(), 128, 0, &mut comm) },
            &mut || ordo_nccl_comm_abort(h),
            &mut || unsafe { ordo_nccl_comm_borrow(q, &mut borrowed) },
            &mut || ordo_nccl_comm_release(h),
            &mut || unsafe { ordo_nccl_comm_wait(h, s, 1) },
            &mut || unsafe { ordo_nccl_all_reduce(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, s) },
            &mut || unsafe { ordo_nccl_broadcast(h, p, q, 4, ORDO_NCCL_FLOAT32, 0, s) },
            &mut || unsafe { ordo_nccl_reduce(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, 0, s) },
            &mut || unsafe { ordo_nccl_all_gather(h, p, q, 4, ORDO_NCCL_FLOAT32, s) },
            &mut || unsafe { ordo_nccl_reduce_scatter(h, p, q, 4, ORDO_NCCL_FLOAT32, ORDO_NCCL_SUM, s) },
        ];
        for call in calls {
            assert_eq!(call(), ORDO_ERROR_NOT_SUPPORTED);
            let mut buf = [0 as core::ffi::c_char; 256];
            // SAFETY: a buffer of its length.
            unsafe { crate::last_error::ordo_last_error_message(buf.as_mut_ptr(), buf.len()) };
            // SAFETY: NUL-terminated.
            let message = unsafe { core::ffi::CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
            assert!(message.contains("`nccl` feature"), "{message}");
        }
        ordo_nccl_comm_destroy(h);
    }
}
