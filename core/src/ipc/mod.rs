//! Memory and events shared between processes on one machine (`std`, Unix): the CUDA IPC calls as
//! owning types, and stream-ordered pools exported as POSIX file descriptors.
//!
//! | what | exporter | importer |
//! | --- | --- | --- |
//! | device memory (`cudaIpcGetMemHandle`) | [`IpcBuffer`] (`cudaMalloc`), [`IpcBuffer::export`] | [`IpcMapping::open`] (`cudaIpcOpenMemHandle`, closed on drop) |
//! | events (`cudaIpcGetEventHandle`) | [`IpcEvent`] (interprocess, timing off), [`IpcEvent::export`] | [`ImportedEvent::open`] |
//! | a pool (`cudaMemPoolExportToShareableHandle`) | [`IpcPool`], [`IpcPool::export_fd`] | [`ImportedPool::import_fd`] |
//! | an allocation of that pool (`cudaMemPoolExportPointer`) | [`IpcPool::export_pointer`] | [`ImportedPool::import_pointer`] ([`PoolImport`], freed on drop) |
//! | the pool's descriptor | [`send_fd`] (`SCM_RIGHTS`) | [`recv_fd`] |
//!
//! A handle crosses the process boundary as [`HANDLE_BYTES`] bytes (`to_bytes`): CUDA's 64 bytes,
//! the allocation's size, and a tag saying which kind of handle it is, so that an event's handle
//! given where a memory handle belongs is refused with a clear error rather than handed to CUDA.
//!
//! # Within one process: lifetimes
//! A handle borrows what it was exported from ([`IpcMemHandle<'a>`](IpcMemHandle) borrows the
//! [`IpcBuffer`], [`IpcEventHandle<'a>`](IpcEventHandle) the [`IpcEvent`],
//! [`PoolPointerHandle<'a>`](PoolPointerHandle) the [`DeviceBuffer`](crate::DeviceBuffer)), and
//! what is opened from a handle borrows the handle. So in the exporting process an exported buffer
//! or event cannot be freed while anything opened from its handle is alive: the compiler refuses
//! it, at no run-time cost. A pool pointer's handle also remembers the buffer's stream, so that an
//! import in the same process is ordered after the allocation.
//!
//! # Across processes: what the exporter owes
//! The lifetime ends where the bytes leave the process. Turning bytes back into a handle
//! (`from_bytes`) is therefore `unsafe`: the caller promises, for the exporter, what the compiler
//! can no longer check. Each `from_bytes` lists it; in short, the exporting process
//! - keeps the exported allocation (the [`IpcBuffer`], the pool's [`DeviceBuffer`](crate::DeviceBuffer))
//!   allocated until every importer has dropped what it opened from the handle ([`IpcMapping`],
//!   [`PoolImport`]): CUDA calls a free before the importers' close undefined behaviour. A
//!   [`PoolImport`]'s drop returns only once its free has completed, so "dropped" is the message
//!   the importer sends back;
//! - keeps the exported [`IpcEvent`] alive until every importer has dropped its [`ImportedEvent`];
//! - makes a pool allocation complete before the importer touches it: the importer's stream waits
//!   on an [`IpcEvent`] the exporter recorded after the allocation, or the exporter synchronised
//!   its stream before sending the handle;
//! - orders its own writes against the importer's reads with IPC events (record, send a message,
//!   wait on the other side): nothing else orders work of two processes.
//!
//! Opening and closing are checked where CUDA can tell: a handle of another kind, a size that does
//! not divide into whole elements, and (for an [`IpcMapping`]) a size larger than the mapped
//! allocation are errors, not undefined behaviour.
//!
//! # Freeing
//! [`IpcBuffer`] and [`IpcMapping`] are freed with calls that no stream orders (`cudaFree`,
//! `cudaIpcCloseMemHandle`), and a [`PoolImport`]'s free must complete before the exporter's: so
//! their drops **synchronise their stream** first, as their documentation says. Their views carry
//! that stream as their [`origin`](crate::DeviceSlice::origin), so ordo's safe functions that use
//! them on another stream order themselves before it.
//!
//! ```no_run
//! use ordo_cuda_core::ipc::{IpcBuffer, IpcEvent, IpcMapping, ImportedEvent, IpcMemHandle, IpcEventHandle};
//! use ordo_cuda_core::Stream;
//! # fn send(_: &[u8]) {}
//! # fn receive() -> Vec<u8> { vec![] }
//! # fn main() -> ordo_cuda_core::Result<()> {
//! // The producer: a buffer and an event, their handles sent to the consumer.
//! let stream = Stream::new()?;
//! let frame = IpcBuffer::<f32>::zeroed(1 << 20, stream.as_stream())?;
//! let ready = IpcEvent::new()?;
//! send(&frame.export()?.to_bytes());
//! send(&ready.export()?.to_bytes());
//! // ... fill `frame` on `stream`, then:
//! ready.record(stream.as_stream())?;
//! send(b"frame 0");
//!
//! // The consumer, in another process.
//! let stream = Stream::new()?;
//! // SAFETY: the producer keeps `frame` and `ready` alive until this process says it is done.
//! let (frame_handle, ready_handle) =
//!     unsafe { (IpcMemHandle::from_bytes(&receive())?, IpcEventHandle::from_bytes(&receive())?) };
//! let frame = IpcMapping::<f32>::open(&frame_handle, stream.as_stream())?;
//! let ready = ImportedEvent::open(&ready_handle)?;
//! receive(); // "frame 0": the record has been made
//! stream.wait_event(&ready)?; // work enqueued after this sees the frame filled
//! # Ok(()) }
//! ```

mod event;
mod fd;
mod handle;
mod memory;
mod pool;

pub use event::{ImportedEvent, IpcEvent, IpcEventHandle};
pub use fd::{recv_fd, send_fd};
pub use handle::{HandleKind, HANDLE_BYTES};
pub use memory::{IpcBuffer, IpcMapping, IpcMemHandle};
pub use pool::{ImportedPool, IpcPool, PoolImport, PoolPointerHandle};
