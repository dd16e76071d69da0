//! NCCL through the C ABI: a communicator handle made from a unique id, the collectives on the
//! caller's stream. The checks one call can make happen here (handles, pointers, sizes with
//! checked arithmetic, enum values); the logic is the Rust API's ([`ordo_cuda_libs::nccl`]).
//! Element types and operations are NCCL's own values (`ORDO_NCCL_*` in ordo.h).

use super::check::{byte_len, capturing, non_null, stream_ref, write_out};
use super::handles;
use super::status::{
    guard, guard_void, invalid, Failure, OrdoStatus, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_STREAM_CAPTURING,
};
use core::ffi::{c_int, c_void};
use core::time::Duration;
use ordo_cuda_core::{sys, Device, DeviceSlice, DeviceSliceMut, StreamRef};
use ordo_cuda_libs::nccl::{Bf16, Communicator, Nccl, NcclType, ReduceOp, UniqueId, F16};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The C handle type of a communicator: opaque, never dereferenced (see [`handles`]).
#[repr(C)]
pub struct OrdoNcclComm {
    _opaque: [u8; 0],
}

/// A communicator behind a handle: `None` once aborted (a call still in flight on another thread
/// then finds it gone). The lock is held for one NCCL call (one thread at a time, as NCCL asks).
type CommObject = Mutex<Option<Communicator>>;

fn lock(c: &CommObject) -> MutexGuard<'_, Option<Communicator>> {
    c.lock().unwrap_or_else(PoisonError::into_inner)
}

fn id_bytes(len: usize) -> Result<(), Failure> {
    if len != UniqueId::BYTES {
        return Err(invalid("a unique id is ORDO_NCCL_UNIQUE_ID_BYTES (128) bytes"));
    }
    Ok(())
}

/// Writes a new unique id (`ncclGetUniqueId`) to `id_out`: `id_bytes` must be 128. Call it on
/// rank 0's process, and carry the bytes to the other ranks.
///
/// # Safety
/// The C contract: `id_out` holds `id_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_nccl_get_unique_id(id_out: *mut u8, id_bytes_len: usize) -> OrdoStatus {
    guard("ordo_nccl_get_unique_id", || {
        non_null(id_out.cast_const(), "null id_out")?;
        id_bytes(id_bytes_len)?;
        let id = Nccl::load()?.unique_id()?;
        let bytes = id.to_bytes();
        // SAFETY: the C contract: 128 writable bytes (checked length), not overlapping ours.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), id_out, bytes.len()) };
        Ok(())
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
    guard("ordo_nccl_comm_init_rank", || {
        non_null(out.cast_const(), "null out")?;
        non_null(id, "null id")?;
        id_bytes(id_bytes_len)?;
        if device < 0 {
            return Err(invalid("negative device ordinal"));
        }
        if nranks == 0 || rank >= nranks {
            return Err(invalid("rank must be below nranks, nranks at least 1"));
        }
        // SAFETY: the C contract: 128 readable bytes (checked length).
        let bytes = unsafe { core::slice::from_raw_parts(id, id_bytes_len) };
        let id = UniqueId::from_bytes(bytes)?;
        let nccl = Nccl::load()?;
        let comm = Communicator::init_rank(&nccl, Device::from_ordinal(device), nranks, &id, rank)?;
        let object: CommObject = Mutex::new(Some(comm));
        write_out(out, handles::register(object)?, "null out")
    })
}

/// Destroys a communicator (`ncclCommDestroy`: waits for its queued collectives on every rank;
/// use ordo_nccl_comm_abort when a peer may be gone). NULL, destroyed, aborted and unknown
/// handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_destroy(comm: *mut OrdoNcclComm) {
    guard_void("ordo_nccl_comm_destroy", || {
        if let Some(c) = handles::remove::<CommObject, _>(comm) {
            let taken = lock(&c).take();
            drop(taken);
        }
    });
}

/// Aborts a communicator (`ncclCommAbort`: stops its work on the device, frees it without
/// waiting for the other ranks) and ends the handle. ORDO_ERROR_INVALID_HANDLE for a handle that
/// is not a live communicator.
#[no_mangle]
pub extern "C" fn ordo_nccl_comm_abort(comm: *mut OrdoNcclComm) -> OrdoStatus {
    guard("ordo_nccl_comm_abort", || {
        let c = handles::remove::<CommObject, _>(comm).ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
        let taken = lock(&c).take();
        match taken {
            Some(comm) => Ok(comm.abort()?),
            None => Err(Failure(ORDO_ERROR_INVALID_HANDLE)),
        }
    })
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
    guard("ordo_nccl_comm_wait", || {
        let s = stream_ref(stream)?;
        let c = handles::get::<CommObject, _>(comm)?;
        // A host wait is no work for a capture, and querying the stream would end it: refused
        // before anything touches the stream (the capture-status query is the one legal there).
        if capturing(s)? {
            return Err(Failure(ORDO_ERROR_STREAM_CAPTURING));
        }
        // Polled with the handle's lock taken per poll, not for the whole wait: an
        // ordo_nccl_comm_abort from another thread (a watchdog) gets in between two polls, and
        // this wait then ends with ORDO_ERROR_INVALID_HANDLE.
        let deadline = std::time::Instant::now().checked_add(Duration::from_millis(u64::from(timeout_ms)));
        let mut pause = Duration::from_micros(20);
        loop {
            {
                let held = lock(&c);
                let comm = held.as_ref().ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
                // One poll: the communicator's health, then the stream (a zero timeout). Only
                // "not yet" (the zero timeout passing) goes round again: a broken communicator or
                // a CUDA error of the stream (a sticky one too) is returned at once.
                match comm.wait(s, Duration::ZERO) {
                    Ok(()) => return Ok(()),
                    Err(e) if ordo_cuda_libs::nccl::is_timeout(&e) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return Err(Failure::from(ordo_cuda_libs::nccl::timeout_error("ordo_nccl_comm_wait")));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
    })
}

/// The buffers of one call, typed: `T` chosen by the element type.
struct Call {
    send: *const c_void,
    recv: *mut c_void,
    send_len: usize,
    recv_len: usize,
}

/// Checks a call's pointers (alignment for `T`; `send` and `recv` may be null where the call
/// allows) and byte sizes, then runs it with typed views.
fn typed<T: NcclType>(
    call: &Call,
    send_may_be_null: bool,
    recv_may_be_null: bool,
    f: impl FnOnce(Option<DeviceSlice<'_, T>>, Option<DeviceSliceMut<'_, T>>) -> ordo_cuda_core::Result<()>,
) -> Result<(), Failure> {
    let send = call.send.cast::<T>();
    let recv = call.recv.cast::<T>();
    if !(send.is_null() && send_may_be_null) {
        non_null(send, "null or misaligned send buffer")?;
    }
    if !(recv.is_null() && recv_may_be_null) {
        non_null(recv.cast_const(), "null or misaligned receive buffer")?;
    }
    if call.send_len == 0 || call.recv_len == 0 {
        return Err(invalid("zero count"));
    }
    byte_len::<T>(call.send_len)?;
    byte_len::<T>(call.recv_len)?;
    // SAFETY: the C contract: device memory of the stated sizes (checked to fit), live until the
    // work completes; these views last for the call only.
    let (s, r) = unsafe {
        (
            (!send.is_null()).then(|| DeviceSlice::from_raw_parts(send, call.send_len)),
            (!recv.is_null()).then(|| DeviceSliceMut::from_raw_parts(recv, call.recv_len)),
        )
    };
    Ok(f(s, r)?)
}

/// Runs `$body` with `$t` the Rust type of NCCL element type `$dtype` (NCCL's value), or
/// refuses an unknown value.
macro_rules! with_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            ORDO_NCCL_INT8 => {
                type $t = i8;
                $body
            }
            ORDO_NCCL_UINT8 => {
                type $t = u8;
                $body
            }
            ORDO_NCCL_INT32 => {
                type $t = i32;
                $body
            }
            ORDO_NCCL_UINT32 => {
                type $t = u32;
                $body
            }
            ORDO_NCCL_INT64 => {
                type $t = i64;
                $body
            }
            ORDO_NCCL_UINT64 => {
                type $t = u64;
                $body
            }
            ORDO_NCCL_FLOAT16 => {
                type $t = F16;
                $body
            }
            ORDO_NCCL_FLOAT32 => {
                type $t = f32;
                $body
            }
            ORDO_NCCL_FLOAT64 => {
                type $t = f64;
                $body
            }
            ORDO_NCCL_BFLOAT16 => {
                type $t = Bf16;
                $body
            }
            _ => Err(invalid("unknown element type (ORDO_NCCL_INT8 .. ORDO_NCCL_BFLOAT16)")),
        }
    };
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

fn op_of(op: c_int) -> Result<ReduceOp, Failure> {
    Ok(match op {
        ORDO_NCCL_SUM => ReduceOp::Sum,
        ORDO_NCCL_PROD => ReduceOp::Prod,
        ORDO_NCCL_MAX => ReduceOp::Max,
        ORDO_NCCL_MIN => ReduceOp::Min,
        ORDO_NCCL_AVG => ReduceOp::Avg,
        _ => return Err(invalid("unknown reduction (ORDO_NCCL_SUM .. ORDO_NCCL_AVG)")),
    })
}

/// Runs `f` on the live communicator behind `comm`, with the stream checked.
fn on_comm(
    comm: *mut OrdoNcclComm,
    stream: sys::cudaStream_t,
    f: impl FnOnce(&Communicator, StreamRef<'_>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let s = stream_ref(stream)?;
    let c = handles::get::<CommObject, _>(comm)?;
    let held = lock(&c);
    let comm = held.as_ref().ok_or(Failure(ORDO_ERROR_INVALID_HANDLE))?;
    f(comm, s)
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
    guard("ordo_nccl_all_reduce", || {
        let op = op_of(op)?;
        on_comm(comm, stream, |c, s| {
            let call = Call { send, recv, send_len: count, recv_len: count };
            with_type!(dtype, T => typed::<T>(&call, false, false, |sv, rv| match (sv, rv) {
                // SAFETY: the C contract.
                (Some(sv), Some(rv)) => unsafe { c.all_reduce(sv, rv, op, s) },
                _ => Err(ordo_cuda_core::Error::invalid("ordo_nccl_all_reduce", "null buffer")),
            }))
        })
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
    guard("ordo_nccl_broadcast", || {
        on_comm(comm, stream, |c, s| {
            let call = Call { send, recv, send_len: count, recv_len: count };
            with_type!(dtype, T => typed::<T>(&call, true, false, |sv, rv| match rv {
                // SAFETY: the C contract.
                Some(rv) => unsafe { c.broadcast(sv, rv, root, s) },
                None => Err(ordo_cuda_core::Error::invalid("ordo_nccl_broadcast", "null receive buffer")),
            }))
        })
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
    guard("ordo_nccl_reduce", || {
        let op = op_of(op)?;
        on_comm(comm, stream, |c, s| {
            let call = Call { send, recv, send_len: count, recv_len: count };
            with_type!(dtype, T => typed::<T>(&call, false, true, |sv, rv| match sv {
                // SAFETY: the C contract.
                Some(sv) => unsafe { c.reduce(sv, rv, op, root, s) },
                None => Err(ordo_cuda_core::Error::invalid("ordo_nccl_reduce", "null send buffer")),
            }))
        })
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
    guard("ordo_nccl_all_gather", || {
        on_comm(comm, stream, |c, s| {
            let recv_len = send_count.checked_mul(c.ranks()).ok_or_else(|| invalid("nranks * send_count overflows"))?;
            let call = Call { send, recv, send_len: send_count, recv_len };
            with_type!(dtype, T => typed::<T>(&call, false, false, |sv, rv| match (sv, rv) {
                // SAFETY: the C contract.
                (Some(sv), Some(rv)) => unsafe { c.all_gather(sv, rv, s) },
                _ => Err(ordo_cuda_core::Error::invalid("ordo_nccl_all_gather", "null buffer")),
            }))
        })
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
    guard("ordo_nccl_reduce_scatter", || {
        let op = op_of(op)?;
        on_comm(comm, stream, |c, s| {
            let send_len = recv_count.checked_mul(c.ranks()).ok_or_else(|| invalid("nranks * recv_count overflows"))?;
            let call = Call { send, recv, send_len, recv_len: recv_count };
            with_type!(dtype, T => typed::<T>(&call, false, false, |sv, rv| match (sv, rv) {
                // SAFETY: the C contract.
                (Some(sv), Some(rv)) => unsafe { c.reduce_scatter(sv, rv, op, s) },
                _ => Err(ordo_cuda_core::Error::invalid("ordo_nccl_reduce_scatter", "null buffer")),
            }))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ordo_cuda_libs::nccl::DataType;

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
            assert_eq!(op_of(op.raw()).unwrap(), op);
        }
        assert_eq!(value("ORDO_NCCL_UNIQUE_ID_BYTES"), UniqueId::BYTES as i64);
        assert_eq!(ORDO_NCCL_UNIQUE_ID_BYTES, UniqueId::BYTES);
        assert!(op_of(5).is_err() && op_of(-1).is_err());
    }
}
