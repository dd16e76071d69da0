//! The communicator exports: a unique id, a communicator made (`ordo_nccl_comm_init_rank`) or
//! borrowed from the caller (`ordo_nccl_comm_borrow`), its end (destroy, abort, release), and the
//! host wait that polls its health (`ordo_nccl_comm_wait`).

use super::OrdoNcclComm;
use crate::status::OrdoStatus;
use core::ffi::{c_int, c_void};
use ordo_cuda_core::sys;

/// Writes a new unique id (`ncclGetUniqueId`) to `id_out`: `id_bytes_len` must be 128. Call it on
/// rank 0's process, and carry the bytes to the other ranks.
///
/// # Safety
/// The C contract: `id_out` holds `id_bytes_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_get_unique_id(id_out: *mut u8, id_bytes_len: usize) -> OrdoStatus {
    with_nccl!("ordo_nccl_get_unique_id", (id_out, id_bytes_len), {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::get_unique_id(id_out, id_bytes_len) }
    })
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
    with_nccl!("ordo_nccl_comm_init_rank", (device, nranks, id, id_bytes_len, rank, out), {
        crate::handles::create("ordo_nccl_comm_init_rank", out, || {
            // SAFETY: the caller's contract: `id` holds `id_bytes_len` readable bytes.
            let id = unsafe { imp::read_id(id, id_bytes_len) }?;
            imp::comm_init_rank(device, nranks, rank, id)
        })
    })
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
    with_nccl!("ordo_nccl_comm_abort", (comm), { imp::comm_abort(comm) })
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
    with_nccl!("ordo_nccl_comm_borrow", (nccl_comm, out), {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::comm_borrow(nccl_comm, out) }
    })
}

/// Ends a handle made by `ordo_nccl_comm_borrow` (no NCCL call: the communicator stays its
/// owner's). ORDO_ERROR_INVALID_ARGUMENT for a communicator ordo made (destroy or abort it),
/// ORDO_ERROR_INVALID_HANDLE for a handle that is not a live communicator.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_release(comm: *mut OrdoNcclComm) -> OrdoStatus {
    with_nccl!("ordo_nccl_comm_release", (comm), { imp::comm_release(comm) })
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
    with_nccl!("ordo_nccl_comm_wait", (comm, stream, timeout_ms), {
        // SAFETY: the caller's contract, passed on.
        unsafe { imp::comm_wait(comm, stream, timeout_ms) }
    })
}

/// The exports' bodies, with NCCL.
#[cfg(feature = "nccl")]
pub(super) mod imp {
    use crate::check::{capturing, non_null, stream_ref};
    use crate::handles;
    use crate::nccl::OrdoNcclComm;
    use crate::status::{
        guard, invalid, Failure, OrdoStatus, Outcome, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_STREAM_CAPTURING,
    };
    use core::ffi::{c_int, c_void};
    use core::time::Duration;
    use ordo_cuda_core::sync::lock;
    use ordo_cuda_core::{sys, Device};
    use ordo_cuda_libs::nccl::{is_timeout, poll_with_backoff, BorrowedCommunicator, Communicator, Nccl, UniqueId};
    use std::sync::Mutex;

    /// What a handle holds: ordo's own communicator (`ordo_nccl_comm_init_rank`) or one borrowed
    /// from the caller (`ordo_nccl_comm_borrow`), which ordo never destroys or aborts.
    pub(super) enum Held {
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
    pub(super) type CommObject = Mutex<Option<Held>>;

    /// `ORDO_ERROR_INVALID_ARGUMENT` when `comm` holds a borrowed communicator (which only
    /// `ordo_nccl_comm_release` ends); the handle stays valid.
    fn refuse_borrowed(comm: *mut OrdoNcclComm, what: &'static str) -> Outcome {
        if let Ok(c) = handles::get::<CommObject, _>(comm) {
            if matches!(lock(&c).as_ref(), Some(Held::Borrowed(_))) {
                return Err(invalid("comm", what));
            }
        }
        Ok(())
    }

    /// Runs `f` on the live communicator behind `comm`, under its lock: the lookup, the lock and
    /// the check that it was not aborted, written once. `ORDO_ERROR_INVALID_HANDLE` for a handle
    /// that is not a live communicator, or one aborted meanwhile.
    pub(in crate::nccl) fn with_comm<R>(
        comm: *mut OrdoNcclComm,
        f: impl FnOnce(&Communicator) -> Outcome<R>,
    ) -> Outcome<R> {
        let c = handles::get::<CommObject, _>(comm)?;
        let held = lock(&c);
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

    /// The caller's unique id: `len` bytes at `id`, refused unless non-null and
    /// ORDO_NCCL_UNIQUE_ID_BYTES long.
    ///
    /// # Safety
    /// The C contract: `id` holds `len` readable bytes, unchanged for `'a`.
    pub(super) unsafe fn read_id<'a>(id: *const u8, len: usize) -> Outcome<&'a [u8]> {
        non_null(id, "id")?;
        id_bytes(len)?;
        // SAFETY: the C contract: 128 readable bytes (checked length).
        Ok(unsafe { core::slice::from_raw_parts(id, len) })
    }

    /// Rank `rank` of `nranks` on CUDA device `device`, from the unique id's bytes (read by
    /// [`read_id`]): what `ordo_nccl_comm_init_rank` registers.
    pub(super) fn comm_init_rank(device: c_int, nranks: usize, rank: usize, id: &[u8]) -> Outcome<CommObject> {
        if device < 0 {
            return Err(invalid("device", "negative device ordinal"));
        }
        if nranks == 0 {
            return Err(invalid("nranks", "nranks must be at least 1"));
        }
        if rank >= nranks {
            return Err(invalid("rank", "rank must be below nranks"));
        }
        let id = UniqueId::from_bytes(id)?;
        let nccl = Nccl::load()?;
        let comm = Communicator::init_rank(&nccl, Device::from_ordinal(device), nranks, &id, rank)?;
        Ok(CommObject::new(Some(Held::Owned(comm))))
    }

    /// # Safety
    /// As `ordo_nccl_comm_borrow`.
    pub(super) unsafe fn comm_borrow(nccl_comm: *mut c_void, out: *mut *mut OrdoNcclComm) -> OrdoStatus {
        handles::create("ordo_nccl_comm_borrow", out, || {
            non_null(nccl_comm.cast_const(), "nccl_comm")?;
            let nccl = Nccl::load()?;
            // SAFETY: the C contract, forwarded: `BorrowedCommunicator::borrow_raw`'s obligations,
            // for as long as the handle lives ('static here; the caller ends it with release).
            let comm = unsafe { BorrowedCommunicator::borrow_raw(&nccl, nccl_comm) }?;
            Ok(CommObject::new(Some(Held::Borrowed(comm))))
        })
    }

    pub(super) fn comm_release(comm: *mut OrdoNcclComm) -> OrdoStatus {
        guard("ordo_nccl_comm_release", || {
            let c = handles::get::<CommObject, _>(comm)?;
            if !matches!(lock(&c).as_ref(), Some(Held::Borrowed(_))) {
                return Err(invalid("comm", "not a borrowed communicator: destroy or abort it"));
            }
            let c = handles::remove::<CommObject, _>(comm).ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
            let taken = lock(&c).take();
            drop(taken);
            Ok(())
        })
    }

    pub(super) fn comm_destroy(comm: *mut OrdoNcclComm) {
        // The status is dropped (the export returns nothing); a refusal is the thread's last error.
        let _ = guard("ordo_nccl_comm_destroy", || {
            refuse_borrowed(comm, "a borrowed communicator: release it with ordo_nccl_comm_release")?;
            if let Some(c) = handles::remove::<CommObject, _>(comm) {
                let taken = lock(&c).take();
                drop(taken);
            }
            Ok(())
        });
    }

    pub(super) fn comm_abort(comm: *mut OrdoNcclComm) -> OrdoStatus {
        guard("ordo_nccl_comm_abort", || {
            refuse_borrowed(comm, "a borrowed communicator: release it with ordo_nccl_comm_release")?;
            let c = handles::remove::<CommObject, _>(comm).ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
            let taken = lock(&c).take();
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
}
