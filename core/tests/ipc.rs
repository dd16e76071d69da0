//! Memory and events shared between processes (`ordo_cuda_core::ipc`). The GPU tests run this
//! binary a second time as a child process (`support/child.rs`): the parent produces frames into
//! shared memory, the child consumes them, each side ordering its stream after the other's with
//! IPC events only (no host synchronisation between them), and the child checks every frame
//! against the CPU's reference. Each side queues a spinning kernel (PTX, loaded at run time) ahead
//! of its copies, so that a read not ordered after the write, or a write not ordered after the
//! read, would be seen. Once through `cudaIpcGetMemHandle` memory ([`IpcBuffer`]), once through a
//! pool exported as a POSIX descriptor and passed over the socket with `SCM_RIGHTS` ([`IpcPool`]).
//! The CPU tests check the wire format's refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::ipc::{self, HandleKind, IpcEventHandle, IpcMemHandle, PoolPointerHandle, HANDLE_BYTES};
use ordo_cuda_core::*;

#[path = "support/child.rs"]
mod child;

/// The test a child process runs (see `support/child.rs`): nothing in an ordinary run.
#[test]
fn child_process_entry() {
    let Some((role, mut socket)) = child::role() else { return };
    if role == "echo" {
        let message = child::recv(&mut socket);
        child::send(&mut socket, &message);
        return;
    }
    #[cfg(cuda_library_api)]
    match role.as_str() {
        "consumer" => frames::consume(socket, frames::Memory::Mapped),
        "pool-consumer" => frames::consume(socket, frames::Memory::Pool),
        other => panic!("unknown child role {other:?}"),
    }
    #[cfg(not(cuda_library_api))]
    panic!("role {role:?}: this build has no spin kernel (CUDA 12.8 headers or later) {socket:?}");
}

/// The child-process harness itself: a child runs, answers over its socket, and exits cleanly.
#[test]
fn a_child_process_answers_over_its_socket() {
    let (process, mut socket) = child::spawn("child_process_entry", "echo", &[]);
    child::send(&mut socket, b"ping");
    child::expect(&mut socket, b"ping");
    child::wait_ok(process, std::time::Duration::from_secs(60));
}

#[test]
fn bytes_that_are_not_a_handle_of_the_kind_are_refused() {
    let junk = [7u8; HANDLE_BYTES];
    assert_eq!(HandleKind::of(&junk), None);
    // SAFETY: refused before any handle is made.
    unsafe {
        for bytes in [&junk[..], &junk[..10], &[][..]] {
            assert!(matches!(IpcMemHandle::from_bytes(bytes), Err(Error::Usage(_))));
            assert!(matches!(IpcEventHandle::from_bytes(bytes), Err(Error::Usage(_))));
            assert!(matches!(PoolPointerHandle::from_bytes(bytes), Err(Error::Usage(_))));
        }
    }
}

#[test]
fn a_handle_of_one_kind_is_refused_as_another() {
    let mut wire = [0u8; HANDLE_BYTES];
    wire[..4].copy_from_slice(b"ordo");
    wire[4] = HandleKind::Event as u8;
    wire[5] = 1;
    assert_eq!(HandleKind::of(&wire), Some(HandleKind::Event));
    // SAFETY: refused, or a handle that is never opened.
    unsafe {
        assert!(IpcEventHandle::from_bytes(&wire).is_ok());
        let e = IpcMemHandle::from_bytes(&wire).unwrap_err();
        assert!(e.to_string().contains("another kind"), "{e}");
        assert!(PoolPointerHandle::from_bytes(&wire).is_err());
    }
    wire[4] = HandleKind::Memory as u8;
    wire[8..16].copy_from_slice(&6u64.to_le_bytes());
    // SAFETY: a handle that is only checked against the element size, never opened.
    let handle = unsafe { IpcMemHandle::from_bytes(&wire) }.unwrap();
    assert_eq!(handle.size(), 6);
    assert_eq!(handle.to_bytes(), wire, "the wire form round-trips");
}

#[test]
fn without_a_driver_exporting_fails_with_cudas_error() {
    if device::count().is_ok_and(|n| n > 0) {
        return; // the GPU tests export there
    }
    let e = ipc::IpcEvent::new().unwrap_err();
    assert!(e.cuda().is_some_and(|c| c.is_no_driver()), "{e:?}");
    let e = ipc::IpcPool::new(Device::from_ordinal(0)).unwrap_err();
    assert!(e.cuda().is_some_and(|c| c.is_no_driver() && c.call() == "cudaMemPoolCreate"), "{e:?}");
}

#[cfg(cuda_library_api)]
#[path = "support/spin.rs"]
mod spin;

#[cfg(cuda_library_api)]
mod frames {
    use super::child;
    use super::spin::spin_kernel;
    use ordo_cuda_core::ipc::*;
    use ordo_cuda_core::launch::LaunchConfig;
    use ordo_cuda_core::memory::copy;
    use ordo_cuda_core::*;
    use std::os::unix::net::UnixStream;

    /// Elements of a frame (4 MiB of u32).
    pub const FRAME: usize = 1 << 20;
    /// Slots of shared memory the frames cycle through.
    pub const SLOTS: usize = 3;
    /// Frames sent.
    pub const FRAMES: usize = 10;
    /// About 20 ms of spinning at H200 clocks: longer than a 4 MiB copy by far.
    const SPIN_CYCLES: u64 = 40_000_000;

    /// How the shared memory is made.
    #[derive(Clone, Copy, Debug)]
    pub enum Memory {
        /// `cudaMalloc` memory through `cudaIpcGetMemHandle`.
        Mapped,
        /// Allocations of a pool exported as a POSIX descriptor.
        Pool,
    }

    /// Frame `k`'s element `i`: never zero, different in every frame and slot.
    pub fn value(k: usize, i: usize) -> u32 {
        ((k as u32 + 1) << 24) ^ (i as u32).wrapping_mul(2_654_435_761) | 1
    }

    fn spin(s: StreamRef<'_>) {
        // SAFETY: the kernel takes one u64 and touches no memory.
        unsafe { spin_kernel().launch(s, &LaunchConfig::new(1, 1), (SPIN_CYCLES,)) }.unwrap();
    }

    /// The parent: writes `FRAMES` frames into `SLOTS` shared slots, each after the child's
    /// `consumed` event of the slot's previous frame, and records `filled` after each write.
    pub fn produce(memory: Memory) {
        let (child_process, mut socket) = child::spawn(
            "child_process_entry",
            match memory {
                Memory::Mapped => "consumer",
                Memory::Pool => "pool-consumer",
            },
            &[],
        );
        let stream = Stream::new().unwrap();
        let s = stream.as_stream();
        // Every frame's data, on the device: the producer's write is one async copy from here.
        let mut source = DeviceBuffer::<u32>::alloc_async(FRAME * FRAMES, s).unwrap();
        let host: Vec<u32> = (0..FRAMES).flat_map(|k| (0..FRAME).map(move |i| value(k, i))).collect();
        copy::h2d_blocking(source.as_mut_slice(), &host, s).unwrap();
        let filled: Vec<IpcEvent> = (0..SLOTS).map(|_| IpcEvent::new().unwrap()).collect();
        for e in &filled {
            child::send(&mut socket, &e.export().unwrap().to_bytes());
        }
        let pool = match memory {
            Memory::Pool => Some(IpcPool::new(Device::current().unwrap()).unwrap()),
            Memory::Mapped => None,
        };
        let mut mapped: Vec<IpcBuffer<'_, u32>> = Vec::new();
        let mut pooled: Vec<DeviceBuffer<'_, u32>> = Vec::new();
        match &pool {
            None => {
                for _ in 0..SLOTS {
                    mapped.push(IpcBuffer::zeroed(FRAME, s).unwrap());
                }
                for b in &mapped {
                    child::send(&mut socket, &b.export().unwrap().to_bytes());
                }
            }
            Some(pool) => {
                ipc::send_fd(&socket, pool.export_fd().unwrap(), b"pool").unwrap();
                for _ in 0..SLOTS {
                    pooled.push(DeviceBuffer::zeroed_in_async(FRAME, Some(pool.as_pool()), s).unwrap());
                }
                // The importer may touch an allocation only once it has completed.
                s.synchronize().unwrap();
                for b in &pooled {
                    child::send(&mut socket, &pool.export_pointer(b).unwrap().to_bytes());
                }
            }
        }
        // The child's events, opened here.
        let consumed_bytes: Vec<Vec<u8>> = (0..SLOTS).map(|_| child::recv(&mut socket)).collect();
        // SAFETY: the child keeps its events alive until this process says "released".
        let consumed_handles: Vec<IpcEventHandle<'static>> =
            consumed_bytes.iter().map(|b| unsafe { IpcEventHandle::from_bytes(b) }.unwrap()).collect();
        let consumed: Vec<ImportedEvent<'_>> =
            consumed_handles.iter().map(|h| ImportedEvent::open(h).unwrap()).collect();
        {
            let mut slots: Vec<DeviceSliceMut<'_, u32>> = match memory {
                Memory::Mapped => mapped.iter_mut().map(|b| b.as_mut_slice()).collect(),
                Memory::Pool => pooled.iter_mut().map(|b| b.as_mut_slice()).collect(),
            };
            for k in 0..FRAMES {
                let slot = k % SLOTS;
                if k >= SLOTS {
                    child::expect(&mut socket, format!("consumed {}", k - SLOTS).as_bytes());
                    s.wait_event(&consumed[slot]).unwrap();
                }
                spin(s);
                let frame = source.slice(k * FRAME..(k + 1) * FRAME).unwrap();
                // SAFETY: both buffers outlive the copy (the stream is synchronised before they drop).
                unsafe { copy::d2d_async(slots[slot].reborrow(), frame, s) }.unwrap();
                filled[slot].record(s).unwrap();
                child::send(&mut socket, format!("filled {k}").as_bytes());
            }
        }
        for k in FRAMES.saturating_sub(SLOTS)..FRAMES {
            child::expect(&mut socket, format!("consumed {k}").as_bytes());
        }
        // The child has dropped its mappings (or imports) and its copies of the filled events.
        child::expect(&mut socket, b"done");
        drop(consumed);
        child::send(&mut socket, b"released");
        child::wait_ok(child_process, std::time::Duration::from_secs(120));
        stream.synchronize().unwrap();
    }

    /// The child: opens the slots and the parent's events, and for each frame waits on `filled`,
    /// copies the slot out after a spin, records `consumed`, and checks the copy.
    pub fn consume(mut socket: UnixStream, memory: Memory) {
        let stream = Stream::new().unwrap();
        let s = stream.as_stream();
        let filled_bytes: Vec<Vec<u8>> = (0..SLOTS).map(|_| child::recv(&mut socket)).collect();
        // SAFETY: the parent keeps its events and slots until this process says "done".
        let filled_handles: Vec<IpcEventHandle<'static>> =
            filled_bytes.iter().map(|b| unsafe { IpcEventHandle::from_bytes(b) }.unwrap()).collect();
        let filled: Vec<ImportedEvent<'_>> = filled_handles.iter().map(|h| ImportedEvent::open(h).unwrap()).collect();
        let pool = match memory {
            Memory::Mapped => None,
            Memory::Pool => {
                let mut tag = [0u8; 4];
                let (n, fd) = ipc::recv_fd(&socket, &mut tag).unwrap();
                assert_eq!((n, &tag), (4, b"pool"));
                Some(ImportedPool::import_fd(fd.expect("no descriptor came"), Device::current().unwrap()).unwrap())
            }
        };
        let slot_bytes: Vec<Vec<u8>> = (0..SLOTS).map(|_| child::recv(&mut socket)).collect();
        let mut mappings: Vec<IpcMapping<'_, u32>> = Vec::new();
        let mut imports: Vec<PoolImport<'_, u32>> = Vec::new();
        match &pool {
            None => {
                for b in &slot_bytes {
                    // SAFETY: the parent keeps the slot allocated until this process says "done";
                    // the size is the parent's.
                    let handle = unsafe { IpcMemHandle::from_bytes(b) }.unwrap();
                    mappings.push(IpcMapping::open(&handle, s).unwrap());
                }
            }
            Some(pool) => {
                for b in &slot_bytes {
                    // SAFETY: the parent synchronised its stream after allocating, and keeps the
                    // allocation until this process says "done"; the size is the parent's.
                    let handle = unsafe { PoolPointerHandle::from_bytes(b) }.unwrap();
                    imports.push(pool.import_pointer(&handle, s).unwrap());
                }
            }
        }
        let slots: Vec<DeviceSlice<'_, u32>> = match memory {
            Memory::Mapped => mappings.iter().map(|m| m.as_slice()).collect(),
            Memory::Pool => imports.iter().map(|m| m.as_slice()).collect(),
        };
        assert!(slots.iter().all(|sl| sl.len() == FRAME));
        let consumed: Vec<IpcEvent> = (0..SLOTS).map(|_| IpcEvent::new().unwrap()).collect();
        for e in &consumed {
            child::send(&mut socket, &e.export().unwrap().to_bytes());
        }
        let mut copy_out = DeviceBuffer::<u32>::alloc_async(FRAME, s).unwrap();
        let mut host = vec![0u32; FRAME];
        for k in 0..FRAMES {
            let slot = k % SLOTS;
            child::expect(&mut socket, format!("filled {k}").as_bytes());
            s.wait_event(&filled[slot]).unwrap();
            spin(s);
            // SAFETY: both outlive the copy (the stream is synchronised below, and before they drop).
            unsafe { copy::d2d_async(copy_out.as_mut_slice(), slots[slot], s) }.unwrap();
            consumed[slot].record(s).unwrap();
            child::send(&mut socket, format!("consumed {k}").as_bytes());
            copy::d2h_blocking(&mut host, copy_out.as_slice(), s).unwrap();
            let wrong = (0..FRAME).filter(|&i| host[i] != value(k, i)).count();
            assert_eq!(wrong, 0, "frame {k} (slot {slot}): {wrong} of {FRAME} elements differ from the reference");
        }
        drop(slots);
        // Each drop synchronises `s`, then unmaps (or frees, and waits for the free).
        for m in mappings {
            m.close().unwrap();
        }
        for i in imports {
            i.free().unwrap();
        }
        drop(filled);
        drop(pool);
        child::send(&mut socket, b"done");
        child::expect(&mut socket, b"released");
        drop(consumed);
        assert!(error::take_drop_errors().is_empty());
    }
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn frames_cross_processes_in_mapped_memory_ordered_by_ipc_events() {
    frames::produce(frames::Memory::Mapped);
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn frames_cross_processes_in_a_pool_shared_by_descriptor() {
    frames::produce(frames::Memory::Pool);
}

/// In one process a handle borrows what it was exported from. CUDA maps no handle of the calling
/// process's own memory (`cudaIpcOpenMemHandle` refuses it); if a driver does map it, the mapping
/// must show the buffer's data.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn in_one_process_a_handle_opens_or_is_refused_cleanly() {
    use ordo_cuda_core::ipc::*;
    use ordo_cuda_core::memory::copy;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut buffer = IpcBuffer::<u32>::alloc(1024, s).unwrap();
    let data: Vec<u32> = (0..1024).map(|i| i * 3 + 1).collect();
    copy::h2d_blocking(buffer.as_mut_slice(), &data, s).unwrap();
    let handle = buffer.export().unwrap();
    assert_eq!(handle.size(), 4096);
    assert_eq!(HandleKind::of(&handle.to_bytes()), Some(HandleKind::Memory));
    match IpcMapping::<u32>::open(&handle, s) {
        Err(e) => assert!(e.cuda().is_some(), "CUDA's refusal: {e:?}"),
        Ok(mapping) => {
            let mut out = vec![0u32; 1024];
            copy::d2h_blocking(&mut out, mapping.as_slice(), s).unwrap();
            assert_eq!(out, data);
        }
    }
    // A size that is not whole elements of the type is refused before CUDA is asked.
    let e = IpcMapping::<[u8; 3]>::open(&handle, s).unwrap_err();
    assert!(matches!(e, Error::Usage(_)), "{e:?}");
    let event = IpcEvent::new().unwrap();
    let handle = event.export().unwrap();
    if let Ok(imported) = ImportedEvent::open(&handle) {
        event.record(s).unwrap();
        s.wait_event(&imported).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(imported.query().unwrap(), EventStatus::Complete);
    }
    buffer.free().unwrap();
    let pool = IpcPool::new(Device::current().unwrap()).unwrap();
    pool.as_pool().set_release_threshold(u64::MAX).unwrap();
    let fd = pool.export_fd().unwrap();
    assert!(std::os::fd::AsRawFd::as_raw_fd(&fd) >= 0);
    let b = pool.alloc::<u32>(256, s).unwrap();
    let h = pool.export_pointer(&b).unwrap();
    assert_eq!((h.size(), HandleKind::of(&h.to_bytes())), (1024, Some(HandleKind::PoolPointer)));
    drop(b);
    stream.synchronize().unwrap();
}
