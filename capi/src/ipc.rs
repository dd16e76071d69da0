//! Memory and events shared between processes: the C face of [`ordo_cuda_core::ipc`]. Handles
//! cross the process boundary as [`ORDO_IPC_HANDLE_BYTES`] bytes, which the caller carries (a
//! socket, a pipe, shared memory); a pool's descriptor crosses with [`ordo_ipc_send_fd`] and
//! [`ordo_ipc_recv_fd`]. What the exporting process owes is the Rust API's (ordo.h says it too).

use super::check::{kept_stream_ref, non_null, stream_ref, write_out};
use super::context::InContext;
use super::handles;
use super::status::{guard, guard_void, invalid, Failure, OrdoStatus, Outcome, ORDO_NOT_READY};
use core::ffi::{c_int, c_void};
use ordo_cuda_core::error::{LibraryError, Text};
use ordo_cuda_core::ipc::{
    self, ImportedEvent, ImportedPool, IpcEvent, IpcEventHandle, IpcMapping, IpcMemHandle, IpcPool, PoolImport,
    PoolPointerHandle,
};
use ordo_cuda_core::{sys, Device, Error, Event, EventStatus};
use std::os::fd::{BorrowedFd, IntoRawFd};

/// Bytes of a handle on the wire (`ordo_ipc_*_export`, `*_open`, `*_import_pointer`).
pub const ORDO_IPC_HANDLE_BYTES: usize = 80;
const _: () = assert!(ORDO_IPC_HANDLE_BYTES == ipc::HANDLE_BYTES);

/// The C handle type of another process's memory mapped here: opaque, never dereferenced.
#[repr(C)]
pub struct OrdoIpcMapping {
    _opaque: [u8; 0],
}

/// The C handle type of an interprocess event (made here, or opened from another process's).
#[repr(C)]
pub struct OrdoIpcEvent {
    _opaque: [u8; 0],
}

/// The C handle type of a pool shared by descriptor (made here exportable, or imported).
#[repr(C)]
pub struct OrdoIpcPool {
    _opaque: [u8; 0],
}

/// The C handle type of another process's pool allocation imported here.
#[repr(C)]
pub struct OrdoIpcImport {
    _opaque: [u8; 0],
}

type MappingObject = InContext<IpcMapping<'static, u8>>;
type ImportObject = InContext<PoolImport<'static, u8>>;

enum EventKind {
    Made(IpcEvent),
    Opened(ImportedEvent<'static>),
}

impl EventKind {
    fn event(&self) -> &Event {
        match self {
            EventKind::Made(e) => e,
            EventKind::Opened(e) => e,
        }
    }
}

type EventObject = InContext<EventKind>;

enum PoolKind {
    Made(IpcPool),
    Imported(ImportedPool),
}

type PoolObject = InContext<PoolKind>;

/// The caller's `len` bytes at `bytes` (argument `arg`), which must be a whole handle.
///
/// # Safety
/// The C contract: `bytes` holds `len` readable bytes.
unsafe fn read_handle<'a>(bytes: *const u8, len: usize, arg: &'static str) -> Outcome<&'a [u8]> {
    non_null(bytes, arg)?;
    if len != ORDO_IPC_HANDLE_BYTES {
        return Err(invalid(arg, "a handle is ORDO_IPC_HANDLE_BYTES (80) bytes"));
    }
    // SAFETY: checked non-null; the C contract makes `len` bytes readable.
    Ok(unsafe { core::slice::from_raw_parts(bytes, len) })
}

/// Writes `wire` to the caller's `len` bytes at `out` (argument `handle_out`).
///
/// # Safety
/// The C contract: `out` holds `len` writable bytes.
unsafe fn write_handle(wire: &[u8; ORDO_IPC_HANDLE_BYTES], out: *mut u8, len: usize) -> Outcome {
    non_null(out.cast_const(), "handle_out")?;
    if len < ORDO_IPC_HANDLE_BYTES {
        return Err(invalid("handle_len", "below ORDO_IPC_HANDLE_BYTES (80)"));
    }
    // SAFETY: checked non-null and long enough; the C contract makes it writable, not overlapping ours.
    unsafe { core::ptr::copy_nonoverlapping(wire.as_ptr(), out, wire.len()) };
    Ok(())
}

/// Writes another process's memory seen here (a mapping, an import), `len` bytes at `address`, to
/// the caller's `ptr` and `bytes`.
fn write_span(address: *const u8, len: usize, ptr: *mut *mut c_void, bytes: *mut usize) -> Outcome {
    write_out(ptr, address.cast_mut().cast(), "ptr")?;
    write_out(bytes, len, "bytes")
}

/// The handle of `bytes` bytes of `cudaMalloc` memory at `ptr`, allocated by this process
/// (`cudaIpcGetMemHandle`), written to `handle_out`.
///
/// # Safety
/// The C contract: `ptr` starts a live `cudaMalloc` allocation of at least `bytes` bytes, kept
/// allocated until every mapping of the handle is closed; `handle_out` holds `handle_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_mem_export(
    ptr: *const c_void,
    bytes: usize,
    handle_out: *mut u8,
    handle_len: usize,
) -> OrdoStatus {
    guard("ordo_ipc_mem_export", || {
        non_null(ptr.cast::<u8>(), "ptr")?;
        // SAFETY: the C contract, passed on.
        let handle = unsafe { IpcMemHandle::export_raw(ptr, bytes) }?;
        // SAFETY: the C contract.
        unsafe { write_handle(&handle.to_bytes(), handle_out, handle_len) }
    })
}

/// Maps another process's memory from its handle on the device of `stream`
/// (`cudaIpcOpenMemHandle`); `ordo_ipc_mapping_close` unmaps it.
///
/// # Safety
/// The C contract: `handle` holds `handle_len` readable bytes, from `ordo_ipc_mem_export` (or
/// Rust's `IpcBuffer::export`) of memory the exporter keeps until this mapping is closed; `stream`
/// stays alive until then; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_mem_open(
    handle: *const u8,
    handle_len: usize,
    stream: sys::cudaStream_t,
    out: *mut *mut OrdoIpcMapping,
) -> OrdoStatus {
    handles::create("ordo_ipc_mem_open", out, || {
        let stream = kept_stream_ref(stream)?;
        // SAFETY: the C contract.
        let bytes = unsafe { read_handle(handle, handle_len, "handle") }?;
        // SAFETY: the exporter's obligations are the caller's (the C contract).
        let handle = unsafe { IpcMemHandle::from_bytes(bytes) }?;
        Ok(InContext::new(IpcMapping::<u8>::open(&handle, stream)?)?)
    })
}

/// The mapped address and its size in bytes.
///
/// # Safety
/// The C contract: `ptr` and `bytes` are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_mapping_get(
    mapping: *mut OrdoIpcMapping,
    ptr: *mut *mut c_void,
    bytes: *mut usize,
) -> OrdoStatus {
    guard("ordo_ipc_mapping_get", || {
        handles::with_live(mapping, |m: &IpcMapping<u8>| write_span(m.as_ptr(), m.byte_len(), ptr, bytes))
    })
}

/// Synchronises the mapping's stream, then unmaps (`cudaIpcCloseMemHandle`). NULL, closed and
/// unknown handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_ipc_mapping_close(mapping: *mut OrdoIpcMapping) {
    guard_void("ordo_ipc_mapping_close", || drop(handles::remove::<MappingObject, _>(mapping)));
}

/// A new interprocess event on the current device (`cudaEventInterprocess | cudaEventDisableTiming`).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_create(out: *mut *mut OrdoIpcEvent) -> OrdoStatus {
    handles::create("ordo_ipc_event_create", out, || Ok(InContext::new(EventKind::Made(IpcEvent::new()?))?))
}

/// The handle of an event made by `ordo_ipc_event_create` (`cudaIpcGetEventHandle`), written to
/// `handle_out`. An event opened from another process's handle is refused.
///
/// # Safety
/// The C contract: `handle_out` holds `handle_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_export(
    event: *mut OrdoIpcEvent,
    handle_out: *mut u8,
    handle_len: usize,
) -> OrdoStatus {
    guard("ordo_ipc_event_export", || {
        let e = handles::get::<EventObject, _>(event)?;
        let EventKind::Made(made) = e.get()? else {
            return Err(invalid("event", "an event opened from another process's handle: export the original"));
        };
        let wire = made.export()?.to_bytes();
        // SAFETY: the C contract.
        unsafe { write_handle(&wire, handle_out, handle_len) }
    })
}

/// Opens another process's event from its handle on the current device (`cudaIpcOpenEventHandle`).
///
/// # Safety
/// The C contract: `handle` holds `handle_len` readable bytes, from `ordo_ipc_event_export` of an
/// event the exporter keeps until this handle is destroyed; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_open(
    handle: *const u8,
    handle_len: usize,
    out: *mut *mut OrdoIpcEvent,
) -> OrdoStatus {
    handles::create("ordo_ipc_event_open", out, || {
        // SAFETY: the C contract.
        let bytes = unsafe { read_handle(handle, handle_len, "handle") }?;
        // SAFETY: the exporter's obligations are the caller's (the C contract).
        let handle = unsafe { IpcEventHandle::from_bytes(bytes) }?;
        Ok(InContext::new(EventKind::Opened(ImportedEvent::open(&handle)?))?)
    })
}

/// The event's `cudaEvent_t`, for CUDA's own calls (valid until the handle is destroyed).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_handle(event: *mut OrdoIpcEvent, out: *mut sys::cudaEvent_t) -> OrdoStatus {
    guard("ordo_ipc_event_handle", || {
        handles::with_live(event, |e: &EventKind| write_out(out, e.event().as_raw(), "out"))
    })
}

/// Records the event on `stream` (`cudaEventRecord`).
///
/// # Safety
/// The C contract: `stream` is a live stream of the event's device.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_record(event: *mut OrdoIpcEvent, stream: sys::cudaStream_t) -> OrdoStatus {
    guard("ordo_ipc_event_record", || {
        handles::with_live(event, |e: &EventKind| Ok(e.event().record(stream_ref(stream)?)?))
    })
}

/// Makes `stream` wait for the event's last record, made in either process (`cudaStreamWaitEvent`).
///
/// # Safety
/// The C contract: `stream` is a live stream.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_event_wait(event: *mut OrdoIpcEvent, stream: sys::cudaStream_t) -> OrdoStatus {
    guard("ordo_ipc_event_wait", || {
        // Not `handles::with_live`: that checks the event's context before the closure runs, and
        // this export has always checked `stream` (null) between the lookup and that check.
        let e = handles::get::<EventObject, _>(event)?;
        Ok(stream_ref(stream)?.wait_event(e.get()?.event())?)
    })
}

/// `ORDO_SUCCESS` when the event's last record has completed, `ORDO_NOT_READY` while it has not
/// (`cudaEventQuery`; never blocks).
#[no_mangle]
pub extern "C" fn ordo_ipc_event_query(event: *mut OrdoIpcEvent) -> OrdoStatus {
    guard("ordo_ipc_event_query", || {
        handles::with_live(event, |e: &EventKind| match e.event().query()? {
            EventStatus::Complete => Ok(()),
            EventStatus::Pending => Err(Failure(ORDO_NOT_READY)),
        })
    })
}

/// Destroys an event handle (`cudaEventDestroy`). NULL, destroyed and unknown handles, and
/// handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_ipc_event_destroy(event: *mut OrdoIpcEvent) {
    guard_void("ordo_ipc_event_destroy", || drop(handles::remove::<EventObject, _>(event)));
}

/// A new pool of device memory on `device` that other processes may import by descriptor
/// (`cudaMemPoolCreate`, `cudaMemHandleTypePosixFileDescriptor`). Allocate from it with
/// `cudaMallocFromPoolAsync` on `ordo_ipc_pool_handle`'s pool.
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_create(device: c_int, out: *mut *mut OrdoIpcPool) -> OrdoStatus {
    handles::create("ordo_ipc_pool_create", out, || {
        if device < 0 {
            return Err(invalid("device", "negative device ordinal"));
        }
        Ok(InContext::new(PoolKind::Made(IpcPool::new(Device::from_ordinal(device))?))?)
    })
}

/// A new descriptor of a pool made by `ordo_ipc_pool_create`
/// (`cudaMemPoolExportToShareableHandle`), the caller's to send and close. An imported pool is refused.
///
/// # Safety
/// The C contract: `fd_out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_export_fd(pool: *mut OrdoIpcPool, fd_out: *mut c_int) -> OrdoStatus {
    guard("ordo_ipc_pool_export_fd", || {
        non_null(fd_out.cast_const(), "fd_out")?;
        let p = handles::get::<PoolObject, _>(pool)?;
        let PoolKind::Made(made) = p.get()? else {
            return Err(invalid("pool", "an imported pool: export the original"));
        };
        write_out(fd_out, made.export_fd()?.into_raw_fd(), "fd_out")
    })
}

/// Imports another process's pool from its descriptor (`cudaMemPoolImportFromShareableHandle`;
/// `fd` stays the caller's to close) and grants `device` read and write access to it.
///
/// # Safety
/// The C contract: `fd` is an open descriptor; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_import_fd(fd: c_int, device: c_int, out: *mut *mut OrdoIpcPool) -> OrdoStatus {
    handles::create("ordo_ipc_pool_import_fd", out, || {
        if fd < 0 || device < 0 {
            return Err(invalid(if fd < 0 { "fd" } else { "device" }, "negative"));
        }
        // SAFETY: the C contract: an open descriptor, for the call.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        Ok(InContext::new(PoolKind::Imported(ImportedPool::import_fd(fd, Device::from_ordinal(device))?))?)
    })
}

/// The pool's `cudaMemPool_t` (valid until the handle is destroyed).
///
/// # Safety
/// The C contract: `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_handle(pool: *mut OrdoIpcPool, out: *mut sys::cudaMemPool_t) -> OrdoStatus {
    guard("ordo_ipc_pool_handle", || {
        handles::with_live(pool, |p: &PoolKind| {
            let raw = match p {
                PoolKind::Made(made) => made.as_pool().as_raw(),
                PoolKind::Imported(imported) => imported.as_pool().as_raw(),
            };
            write_out(out, raw, "out")
        })
    })
}

/// The handle of `bytes` bytes at `ptr`, an allocation of an exportable pool made by this process
/// (`cudaMemPoolExportPointer`), written to `handle_out`.
///
/// # Safety
/// The C contract: `ptr` starts a live allocation of at least `bytes` bytes of an exportable pool,
/// completed before the importer uses it, kept until every import of it is freed;
/// `handle_out` holds `handle_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_export_pointer(
    ptr: *const c_void,
    bytes: usize,
    handle_out: *mut u8,
    handle_len: usize,
) -> OrdoStatus {
    guard("ordo_ipc_pool_export_pointer", || {
        non_null(ptr.cast::<u8>(), "ptr")?;
        // SAFETY: the C contract, passed on.
        let handle = unsafe { PoolPointerHandle::export_raw(ptr, bytes) }?;
        // SAFETY: the C contract.
        unsafe { write_handle(&handle.to_bytes(), handle_out, handle_len) }
    })
}

/// Imports another process's allocation into an imported pool (`cudaMemPoolImportPointer`), to be
/// freed on `stream` by `ordo_ipc_import_free`.
///
/// # Safety
/// The C contract: `handle` holds `handle_len` readable bytes, from `ordo_ipc_pool_export_pointer`
/// (or Rust's `IpcPool::export_pointer`) of an allocation completed before this stream uses it and
/// kept until this import is freed; `stream` stays alive until then; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_pool_import_pointer(
    pool: *mut OrdoIpcPool,
    handle: *const u8,
    handle_len: usize,
    stream: sys::cudaStream_t,
    out: *mut *mut OrdoIpcImport,
) -> OrdoStatus {
    handles::create("ordo_ipc_pool_import_pointer", out, || {
        let p = handles::get::<PoolObject, _>(pool)?;
        let PoolKind::Imported(imported) = p.get()? else {
            return Err(invalid(
                "pool",
                "a pool made here: import pointers into a pool imported by ordo_ipc_pool_import_fd",
            ));
        };
        // SAFETY: the C contract.
        let bytes = unsafe { read_handle(handle, handle_len, "handle") }?;
        // SAFETY: the exporter's obligations are the caller's (the C contract).
        let handle = unsafe { PoolPointerHandle::from_bytes(bytes) }?;
        Ok(InContext::new(imported.import_pointer::<u8>(&handle, kept_stream_ref(stream)?)?)?)
    })
}

/// The imported address and its size in bytes.
///
/// # Safety
/// The C contract: `ptr` and `bytes` are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_import_get(
    imported: *mut OrdoIpcImport,
    ptr: *mut *mut c_void,
    bytes: *mut usize,
) -> OrdoStatus {
    guard("ordo_ipc_import_get", || {
        handles::with_live(imported, |i: &PoolImport<u8>| write_span(i.as_ptr(), i.byte_len(), ptr, bytes))
    })
}

/// Frees an import on its stream and waits for the free (`cudaFreeAsync`, then
/// `cudaStreamSynchronize`): once it returns, the exporter may be told. NULL, freed and unknown
/// handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_ipc_import_free(imported: *mut OrdoIpcImport) {
    guard_void("ordo_ipc_import_free", || drop(handles::remove::<ImportObject, _>(imported)));
}

/// Destroys a pool handle (`cudaMemPoolDestroy`, deferred by CUDA until the pool's allocations are
/// freed; an imported pool's handle lives on in its imports). NULL, destroyed and unknown
/// handles, and handles of another kind, are ignored.
#[no_mangle]
pub extern "C" fn ordo_ipc_pool_destroy(pool: *mut OrdoIpcPool) {
    guard_void("ordo_ipc_pool_destroy", || drop(handles::remove::<PoolObject, _>(pool)));
}

/// An OS error of `call` as ordo's error: a library error of "libc" with `errno` as its status,
/// or an invalid argument for ordo's own refusals (which carry no `errno`: an `EINVAL` of the OS
/// stays the OS's, a library error).
fn os_error(e: std::io::Error, call: &'static str) -> Failure {
    if e.raw_os_error().is_none() && e.kind() == std::io::ErrorKind::InvalidInput {
        return invalid("payload_len", "a descriptor needs at least one payload byte");
    }
    let status = e.raw_os_error().unwrap_or(0);
    let mut error = LibraryError::new("libc", call, status);
    error.detail = Some(Text::from(e.to_string()));
    Error::Library(error).into()
}

/// Sends `payload_len` bytes (at least one) and the descriptor `fd` over the connected Unix-domain
/// socket `socket_fd` (`sendmsg` with `SCM_RIGHTS`); `fd` stays open here. An OS failure is
/// `ORDO_ERROR_LIBRARY`, with `errno` as the last error's `library_status`.
///
/// # Safety
/// The C contract: `socket_fd` and `fd` are open descriptors; `payload` holds `payload_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_send_fd(
    socket_fd: c_int,
    fd: c_int,
    payload: *const u8,
    payload_len: usize,
) -> OrdoStatus {
    guard("ordo_ipc_send_fd", || {
        non_null(payload, "payload")?;
        if payload_len == 0 {
            return Err(invalid("payload_len", "zero: a descriptor travels with at least one payload byte"));
        }
        if socket_fd < 0 || fd < 0 {
            return Err(invalid(if socket_fd < 0 { "socket_fd" } else { "fd" }, "negative"));
        }
        // SAFETY: the C contract: open descriptors and readable bytes, for the call.
        let (socket, fd, payload) = unsafe {
            (
                BorrowedFd::borrow_raw(socket_fd),
                BorrowedFd::borrow_raw(fd),
                core::slice::from_raw_parts(payload, payload_len),
            )
        };
        ipc::send_fd(socket, fd, payload).map_err(|e| os_error(e, "sendmsg"))
    })
}

/// Receives into `payload` until it is full or the peer closed the socket, and the descriptor that
/// came with the bytes (`recvmsg`, close-on-exec): `*received` bytes, `*fd_out` the descriptor,
/// the caller's to close, or -1 when none came. More than one descriptor is `ORDO_ERROR_LIBRARY`
/// (each is closed); `payload_len` 0 is `ORDO_ERROR_INVALID_ARGUMENT`, before anything is read.
///
/// # Safety
/// The C contract: `socket_fd` is an open descriptor; `payload` holds `payload_len` writable bytes;
/// `received` and `fd_out` are writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_ipc_recv_fd(
    socket_fd: c_int,
    payload: *mut u8,
    payload_len: usize,
    received: *mut usize,
    fd_out: *mut c_int,
) -> OrdoStatus {
    guard("ordo_ipc_recv_fd", || {
        non_null(payload.cast_const(), "payload")?;
        non_null(received.cast_const(), "received")?;
        non_null(fd_out.cast_const(), "fd_out")?;
        if payload_len == 0 {
            return Err(invalid("payload_len", "zero: a descriptor travels with at least one payload byte"));
        }
        if socket_fd < 0 {
            return Err(invalid("socket_fd", "negative"));
        }
        // SAFETY: the C contract: an open descriptor and writable bytes, for the call.
        let (socket, payload) =
            unsafe { (BorrowedFd::borrow_raw(socket_fd), core::slice::from_raw_parts_mut(payload, payload_len)) };
        let (n, fd) = ipc::recv_fd(socket, payload).map_err(|e| os_error(e, "recvmsg"))?;
        write_out(received, n, "received")?;
        write_out(fd_out, fd.map_or(-1, IntoRawFd::into_raw_fd), "fd_out")
    })
}

#[cfg(test)]
mod tests {
    use super::super::status::{
        ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_INVALID_HANDLE, ORDO_ERROR_LIBRARY, ORDO_SUCCESS,
    };
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn handles_of_the_wrong_length_or_kind_are_refused_before_cuda() {
        let mut out: *mut OrdoIpcMapping = core::ptr::null_mut();
        let s = 0x10 as sys::cudaStream_t;
        let junk = [0u8; ORDO_IPC_HANDLE_BYTES];
        // SAFETY: readable bytes and a writable out-pointer; refused before the stream is used.
        unsafe {
            assert_eq!(ordo_ipc_mem_open(junk.as_ptr(), 79, s, &mut out), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(ordo_ipc_mem_open(core::ptr::null(), 80, s, &mut out), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(ordo_ipc_mem_open(junk.as_ptr(), 80, s, &mut out), ORDO_ERROR_INVALID_ARGUMENT, "no tag");
            let mut event: *mut OrdoIpcEvent = core::ptr::null_mut();
            assert_eq!(ordo_ipc_event_open(junk.as_ptr(), 80, &mut event), ORDO_ERROR_INVALID_ARGUMENT);
            let mut wire = [0u8; 64];
            assert_eq!(ordo_ipc_mem_export(core::ptr::null(), 4, wire.as_mut_ptr(), 64), ORDO_ERROR_INVALID_ARGUMENT);
        }
        assert!(out.is_null());
        // A stream kept past the call: cudaStreamPerThread is refused (another stream on each thread).
        // SAFETY: as above.
        let st = unsafe { ordo_ipc_mem_open(junk.as_ptr(), 80, sys::cudaStreamPerThread(), &mut out) };
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT);
        let mut text = [0u8; 512];
        // SAFETY: a writable buffer of its length.
        let n = unsafe { super::super::last_error::ordo_last_error_message(text.as_mut_ptr().cast(), text.len()) };
        let text = String::from_utf8_lossy(&text[..n.min(text.len())]);
        assert!(text.contains("cudaStreamPerThread"), "{text}");
        assert_eq!(ordo_ipc_event_query(core::ptr::null_mut()), ORDO_ERROR_INVALID_HANDLE);
        ordo_ipc_mapping_close(core::ptr::null_mut());
        ordo_ipc_import_free(0x51b as *mut OrdoIpcImport);
    }

    #[test]
    fn an_os_einval_stays_a_library_error_and_only_ordos_refusal_is_an_invalid_argument() {
        // EINVAL (22 on Linux) from the OS: ORDO_ERROR_LIBRARY, as ordo.h promises for OS failures.
        let os = super::os_error(std::io::Error::from_raw_os_error(22), "sendmsg");
        assert_eq!(os.0, ORDO_ERROR_LIBRARY);
        let own = super::os_error(std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty"), "sendmsg");
        assert_eq!(own.0, ORDO_ERROR_INVALID_ARGUMENT);
    }

    #[test]
    fn a_descriptor_crosses_a_socket_through_the_c_calls() {
        let (a, b) = UnixStream::pair().unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        let (mut received, mut fd) = (0usize, -1);
        let mut payload = [0u8; 3];
        // SAFETY: open descriptors, readable and writable bytes, writable outputs.
        unsafe {
            assert_eq!(ordo_ipc_send_fd(a.as_raw_fd(), file.as_raw_fd(), b"abc".as_ptr(), 3), ORDO_SUCCESS);
            assert_eq!(ordo_ipc_recv_fd(b.as_raw_fd(), payload.as_mut_ptr(), 3, &mut received, &mut fd), ORDO_SUCCESS);
            assert_eq!(ordo_ipc_send_fd(a.as_raw_fd(), file.as_raw_fd(), b"".as_ptr(), 0), ORDO_ERROR_INVALID_ARGUMENT);
            assert_eq!(ordo_ipc_send_fd(-1, file.as_raw_fd(), b"x".as_ptr(), 1), ORDO_ERROR_INVALID_ARGUMENT);
            let st = ordo_ipc_recv_fd(b.as_raw_fd(), payload.as_mut_ptr(), 0, &mut received, &mut fd);
            assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "an empty payload buffer");
        }
        assert_eq!((received, &payload), (3, b"abc"));
        assert!(fd >= 0);
        // SAFETY: the descriptor the call gave us, closed once.
        drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    }
}
