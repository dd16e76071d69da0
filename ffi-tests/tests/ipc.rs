//! The IPC exports (ordo.h's IPC section) between two processes: this binary runs itself again as
//! the consumer (`core/tests/support/child.rs`). The producer makes `cudaMalloc` memory and an
//! allocation of an exportable pool, fills both on its stream and records an IPC event after the
//! fills; the consumer opens the event, maps the memory, imports the pool through a descriptor
//! passed with `ordo_ipc_send_fd`, imports the allocation, waits on the event on its own stream and
//! reads both back. Only C exports and CUDA's own calls, as a C program makes them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::ptr::null_mut;

#[path = "../../core/tests/support/child.rs"]
mod child;

const BYTES: usize = 4 << 20;
const MAPPED_FILL: u8 = 0x5a;
const POOLED_FILL: u8 = 0xa5;

/// Asserts success, with the thread's last error in the message.
fn ok(status: OrdoStatus) {
    let mut message = [0u8; 512];
    // SAFETY: 512 writable bytes.
    unsafe { ordo_last_error_message(message.as_mut_ptr().cast(), message.len()) };
    let end = message.iter().position(|&b| b == 0).unwrap_or(message.len());
    assert_eq!(status, ORDO_SUCCESS, "{}", String::from_utf8_lossy(&message[..end]));
}

fn cuda(code: sys::cudaError_t) {
    assert_eq!(code, sys::cudaError::cudaSuccess);
}

/// The test the child runs (see `support/child.rs`): nothing in an ordinary run.
#[test]
fn child_process_entry() {
    let Some((role, mut socket)) = child::role() else { return };
    assert_eq!(role, "c-consumer");
    consume(&mut socket);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_c_exports_share_memory_an_event_and_a_pool_with_another_process() {
    let (process, mut socket) = child::spawn("child_process_entry", "c-consumer", &[]);
    let mut wire = [0u8; ORDO_IPC_HANDLE_BYTES];
    // SAFETY: a C program's calls: its own stream, memory and handles, each pointer valid for its call.
    unsafe {
        let mut stream: sys::cudaStream_t = null_mut();
        cuda(sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking));
        let mut mapped: *mut c_void = null_mut();
        cuda(sys::cudaMalloc(&mut mapped, BYTES));
        cuda(sys::cudaMemsetAsync(mapped, i32::from(MAPPED_FILL), BYTES, stream));
        let mut pool: *mut OrdoIpcPool = null_mut();
        ok(ordo_ipc_pool_create(0, &mut pool));
        let mut raw_pool: sys::cudaMemPool_t = null_mut();
        ok(ordo_ipc_pool_handle(pool, &mut raw_pool));
        let mut pooled: *mut c_void = null_mut();
        cuda(sys::cudaMallocFromPoolAsync(&mut pooled, BYTES, raw_pool, stream));
        cuda(sys::cudaMemsetAsync(pooled, i32::from(POOLED_FILL), BYTES, stream));
        // The consumer's stream waits on this record: the allocation and both fills come first.
        let mut event: *mut OrdoIpcEvent = null_mut();
        ok(ordo_ipc_event_create(&mut event));
        ok(ordo_ipc_event_record(event, stream));
        ok(ordo_ipc_event_export(event, wire.as_mut_ptr(), wire.len()));
        child::send(&mut socket, &wire);
        ok(ordo_ipc_mem_export(mapped, BYTES, wire.as_mut_ptr(), wire.len()));
        child::send(&mut socket, &wire);
        let mut fd = -1;
        ok(ordo_ipc_pool_export_fd(pool, &mut fd));
        ok(ordo_ipc_send_fd(socket.as_raw_fd(), fd, b"pool".as_ptr(), 4));
        drop(OwnedFd::from_raw_fd(fd));
        ok(ordo_ipc_pool_export_pointer(pooled, BYTES, wire.as_mut_ptr(), wire.len()));
        child::send(&mut socket, &wire);
        // The consumer has closed its mapping, freed its import (waiting for the free) and
        // destroyed its event handle: this process may free now.
        child::expect(&mut socket, b"done");
        cuda(sys::cudaFreeAsync(pooled, stream));
        cuda(sys::cudaStreamSynchronize(stream));
        cuda(sys::cudaFree(mapped));
        ordo_ipc_pool_destroy(pool);
        ordo_ipc_event_destroy(event);
        cuda(sys::cudaStreamDestroy(stream));
    }
    child::wait_ok(process, std::time::Duration::from_secs(120));
}

fn consume(socket: &mut UnixStream) {
    let event_wire = child::recv(socket);
    let mapped_wire = child::recv(socket);
    let mut host = vec![0u8; BYTES];
    // SAFETY: as the producer's: a C program's calls, each pointer valid for its call.
    unsafe {
        let mut stream: sys::cudaStream_t = null_mut();
        cuda(sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking));
        let mut event: *mut OrdoIpcEvent = null_mut();
        ok(ordo_ipc_event_open(event_wire.as_ptr(), event_wire.len(), &mut event));
        let mut mapping: *mut OrdoIpcMapping = null_mut();
        ok(ordo_ipc_mem_open(mapped_wire.as_ptr(), mapped_wire.len(), stream, &mut mapping));
        let mut tag = [0u8; 4];
        let (mut received, mut fd) = (0usize, -1);
        ok(ordo_ipc_recv_fd(socket.as_raw_fd(), tag.as_mut_ptr(), tag.len(), &mut received, &mut fd));
        assert_eq!((received, &tag), (4, b"pool"));
        assert!(fd >= 0, "no descriptor came");
        let mut pool: *mut OrdoIpcPool = null_mut();
        ok(ordo_ipc_pool_import_fd(fd, 0, &mut pool));
        drop(OwnedFd::from_raw_fd(fd));
        let pointer_wire = child::recv(socket);
        let mut imported: *mut OrdoIpcImport = null_mut();
        ok(ordo_ipc_pool_import_pointer(pool, pointer_wire.as_ptr(), pointer_wire.len(), stream, &mut imported));
        ok(ordo_ipc_event_wait(event, stream));
        for (what, get, fill) in [("mapped", 0, MAPPED_FILL), ("pooled", 1, POOLED_FILL)] {
            let (mut ptr, mut bytes): (*mut c_void, usize) = (null_mut(), 0);
            if get == 0 {
                ok(ordo_ipc_mapping_get(mapping, &mut ptr, &mut bytes));
            } else {
                ok(ordo_ipc_import_get(imported, &mut ptr, &mut bytes));
            }
            assert_eq!(bytes, BYTES, "{what}");
            host.fill(0);
            cuda(sys::cudaMemcpyAsync(
                host.as_mut_ptr().cast(),
                ptr,
                BYTES,
                sys::cudaMemcpyKind::cudaMemcpyDeviceToHost,
                stream,
            ));
            cuda(sys::cudaStreamSynchronize(stream));
            let wrong = host.iter().filter(|&&b| b != fill).count();
            assert_eq!(wrong, 0, "{what}: {wrong} of {BYTES} bytes differ from {fill:#x}");
        }
        assert_eq!(ordo_ipc_event_query(event), ORDO_SUCCESS);
        ordo_ipc_mapping_close(mapping);
        ordo_ipc_import_free(imported);
        ordo_ipc_pool_destroy(pool);
        ordo_ipc_event_destroy(event);
        cuda(sys::cudaStreamDestroy(stream));
    }
    child::send(socket, b"done");
}
