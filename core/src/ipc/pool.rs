//! Stream-ordered pools shared between processes through a POSIX file descriptor: [`IpcPool`]
//! (made exportable, `cudaMemHandleTypePosixFileDescriptor`), the [`ImportedPool`] another process
//! makes from its descriptor, and single allocations of the pool exported
//! ([`PoolPointerHandle`]) and imported ([`PoolImport`]).
//!
//! The descriptor travels over a Unix-domain socket ([`send_fd`](super::send_fd)); the pointer
//! handles, once the pool is imported, as plain bytes.

use super::handle::{decode, elements, encode, HandleKind, CUDA_BYTES, HANDLE_BYTES};
use super::memory::allocation_bytes;
use crate::device::Device;
use crate::error::{null_handle, Error, Result};
use crate::memory::{order, DeviceBuffer, DeviceCopy, MemPool, MemPoolRef, PoolAccess};
use crate::stream::StreamRef;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

const FD: sys::cudaMemAllocationHandleType = sys::cudaMemAllocationHandleType::cudaMemHandleTypePosixFileDescriptor;

/// A pool of device memory whose descriptor other processes may import (`cudaMemPoolCreate` with
/// `cudaMemHandleTypePosixFileDescriptor`), destroyed on drop (`cudaMemPoolDestroy`, which CUDA
/// defers until the pool's allocations are freed). Allocate from it as from any pool
/// ([`alloc`](Self::alloc), or [`DeviceBuffer::alloc_from_pool_async`] with
/// [`as_pool`](Self::as_pool)); its release threshold and the rest through [`as_pool`](Self::as_pool).
#[derive(Debug)]
pub struct IpcPool {
    pool: MemPool,
}

impl IpcPool {
    /// A new exportable pool of pinned device memory on `device`, with CUDA's defaults otherwise
    /// (release threshold 0: see [`MemPoolRef::set_release_threshold`]).
    pub fn new(device: Device) -> Result<IpcPool> {
        let location = sys::mem_location(sys::cudaMemLocationType::cudaMemLocationTypeDevice, device.ordinal());
        let props = sys::mem_pool_props(sys::cudaMemAllocationType::cudaMemAllocationTypePinned, FD, location);
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `props` is initialised; `raw` is writable.
        cuda_call!(unsafe { sys::cudaMemPoolCreate(&mut raw, &props) })?;
        // SAFETY: a pool CUDA just made for us, destroyed once, by `MemPool`'s drop.
        let pool = unsafe { MemPool::from_raw(raw) }.ok_or_else(|| null_handle("cudaMemPoolCreate"))?;
        Ok(IpcPool { pool })
    }

    /// The borrowed pool: its attributes, access, and allocations from it.
    #[inline(always)]
    pub fn as_pool(&self) -> MemPoolRef<'_> {
        self.pool.as_pool()
    }

    /// `len` elements from the pool on `stream` ([`DeviceBuffer::alloc_from_pool_async`]).
    #[inline]
    pub fn alloc<'s, T: DeviceCopy>(&self, len: usize, stream: StreamRef<'s>) -> Result<DeviceBuffer<'s, T>> {
        DeviceBuffer::alloc_from_pool_async(len, self.as_pool(), stream)
    }

    /// A new descriptor of the pool for another process (`cudaMemPoolExportToShareableHandle`),
    /// owned by the caller: send it ([`send_fd`](super::send_fd)), then drop it.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let mut fd: core::ffi::c_int = -1;
        // SAFETY: a live exportable pool; for a POSIX descriptor CUDA writes an int.
        cuda_call!(unsafe {
            sys::cudaMemPoolExportToShareableHandle(
                (&mut fd as *mut core::ffi::c_int).cast::<c_void>(),
                self.pool.as_raw(),
                FD,
                0,
            )
        })?;
        if fd < 0 {
            return Err(null_handle("cudaMemPoolExportToShareableHandle"));
        }
        // SAFETY: a descriptor CUDA just opened for us; nothing else closes it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The handle another process imports `buffer` with ([`ImportedPool::import_pointer`])
    /// (`cudaMemPoolExportPointer`): `buffer` must come from this pool, or another exportable one
    /// (CUDA refuses others). The handle borrows the buffer, and remembers its stream so that an
    /// import in this process is ordered after the allocation.
    pub fn export_pointer<'b, T: DeviceCopy>(&self, buffer: &'b DeviceBuffer<'_, T>) -> Result<PoolPointerHandle<'b>> {
        let mut data = sys::cudaMemPoolPtrExportData::default();
        // SAFETY: a live allocation (the buffer's); `data` is writable.
        cuda_call!(unsafe { sys::cudaMemPoolExportPointer(&mut data, buffer.as_ptr().cast_mut().cast()) })?;
        Ok(PoolPointerHandle { data: data.reserved, size: buffer.byte_len(), origin: Some(buffer.stream()) })
    }
}

/// Another process's [`IpcPool`], imported from its descriptor
/// (`cudaMemPoolImportFromShareableHandle`). It allocates nothing (CUDA refuses allocations from an
/// imported pool): it maps the allocations the exporter sends handles of
/// ([`import_pointer`](Self::import_pointer)). Cheap to clone (a counted reference); the pool is
/// destroyed (`cudaMemPoolDestroy`) when the last clone and the last [`PoolImport`] are gone.
#[derive(Debug, Clone)]
pub struct ImportedPool {
    pool: Arc<MemPool>,
}

impl ImportedPool {
    /// Imports the pool behind `fd` (a descriptor from [`IpcPool::export_fd`], received with
    /// [`recv_fd`](super::recv_fd); it stays the caller's to close), and grants `device` read and
    /// write access to it where it lacks them (`cudaMemPoolSetAccess`).
    pub fn import_fd(fd: impl AsFd, device: Device) -> Result<ImportedPool> {
        // For a POSIX descriptor CUDA takes the descriptor's value as the handle pointer.
        let handle = fd.as_fd().as_raw_fd() as isize as *mut c_void;
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable; CUDA refuses a descriptor that is not a pool's.
        cuda_call!(unsafe { sys::cudaMemPoolImportFromShareableHandle(&mut raw, handle, FD, 0) })?;
        // SAFETY: a pool CUDA just imported for us, destroyed once, by `MemPool`'s drop.
        let pool =
            unsafe { MemPool::from_raw(raw) }.ok_or_else(|| null_handle("cudaMemPoolImportFromShareableHandle"))?;
        if pool.as_pool().access(device)? != PoolAccess::ReadWrite {
            pool.as_pool().set_access(device, PoolAccess::ReadWrite)?;
        }
        Ok(ImportedPool { pool: Arc::new(pool) })
    }

    /// The borrowed pool.
    #[inline(always)]
    pub fn as_pool(&self) -> MemPoolRef<'_> {
        self.pool.as_pool()
    }

    /// Maps the allocation behind `handle` as `handle.size() / size_of::<T>()` elements, freed on
    /// `stream` when dropped (`cudaMemPoolImportPointer`). A size that is not a whole number of
    /// elements is refused. A handle made in this process ([`IpcPool::export_pointer`]) orders
    /// `stream` after the allocation; one from [`PoolPointerHandle::from_bytes`] leaves that to
    /// the exporter (see its contract).
    pub fn import_pointer<'a, T: DeviceCopy>(
        &self,
        handle: &PoolPointerHandle<'a>,
        stream: StreamRef<'a>,
    ) -> Result<PoolImport<'a, T>> {
        let len = elements::<T>(handle.size, "ImportedPool::import_pointer")?;
        order::after_origin(handle.origin, stream)?;
        let mut data = sys::cudaMemPoolPtrExportData { reserved: handle.data };
        let mut p: *mut c_void = core::ptr::null_mut();
        // SAFETY: a live imported pool; `p` and `data` are valid (CUDA refuses data it does not know).
        cuda_call!(unsafe { sys::cudaMemPoolImportPointer(&mut p, self.pool.as_raw(), &mut data) })?;
        let ptr = NonNull::new(p.cast::<T>()).ok_or_else(|| null_handle("cudaMemPoolImportPointer"))?;
        // From here a failure frees the import (its drop).
        let import = PoolImport { ptr, len, stream, _pool: self.clone(), _handle: PhantomData };
        if (p as usize) % core::mem::align_of::<T>() != 0 {
            return Err(Error::invalid(
                "ImportedPool::import_pointer",
                "the imported address is not aligned for the element type",
            ));
        }
        if allocation_bytes(p).is_some_and(|bytes| bytes != 0 && bytes < handle.size) {
            return Err(Error::invalid(
                "ImportedPool::import_pointer",
                "the handle claims more bytes than the exported allocation holds",
            ));
        }
        Ok(import)
    }
}

/// What another process needs to import one allocation of an [`IpcPool`] (CUDA's
/// `cudaMemPoolPtrExportData` and the allocation's size). Plain data; it borrows the exported
/// buffer (`'a`). [`to_bytes`](Self::to_bytes) is its form on the wire,
/// [`from_bytes`](Self::from_bytes) (`unsafe`) the way back.
#[derive(Clone, Copy)]
pub struct PoolPointerHandle<'a> {
    data: [u8; CUDA_BYTES],
    size: usize,
    /// The exported buffer's stream, for an import in the same process.
    origin: Option<StreamRef<'a>>,
}

impl core::fmt::Debug for PoolPointerHandle<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PoolPointerHandle").field("size", &self.size).finish_non_exhaustive()
    }
}

impl PoolPointerHandle<'_> {
    /// The allocation's size in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The handle's [`HANDLE_BYTES`] bytes, to send to another process.
    pub fn to_bytes(&self) -> [u8; HANDLE_BYTES] {
        encode(HandleKind::PoolPointer, self.size, &self.data)
    }

    /// The handle whose [`to_bytes`](Self::to_bytes) gave `bytes`. Bytes that are not a pool
    /// pointer handle of this format are refused.
    ///
    /// # Safety
    /// The exporter owes:
    /// - the allocation has completed before the importer's first use: the importer's stream
    ///   waits on an [`IpcEvent`](super::IpcEvent) the exporter recorded on the allocating stream
    ///   after the allocation, or the exporter synchronised that stream before sending the handle;
    /// - the allocation stays allocated (its [`DeviceBuffer`] is not dropped) until every
    ///   [`PoolImport`] made from the returned handle (in any process) has been dropped: CUDA
    ///   requires the importers' frees to complete before the exporter's;
    /// - the size in `bytes` is the allocation's.
    pub unsafe fn from_bytes(bytes: &[u8]) -> Result<PoolPointerHandle<'static>> {
        let (size, data) = decode(HandleKind::PoolPointer, bytes, "PoolPointerHandle::from_bytes")?;
        Ok(PoolPointerHandle { data, size, origin: None })
    }

    /// The handle of `size` bytes at `ptr`, an allocation of an exportable pool that this process
    /// made itself (`cudaMemPoolExportPointer`), for memory ordo does not own (the C ABI's exports).
    ///
    /// # Safety
    /// `ptr` is the start of a live allocation of at least `size` bytes from an exportable pool,
    /// and what [`from_bytes`](Self::from_bytes) asks of the exporter holds for it.
    pub unsafe fn export_raw(ptr: *const c_void, size: usize) -> Result<PoolPointerHandle<'static>> {
        if ptr.is_null() || size == 0 {
            return Err(Error::invalid("PoolPointerHandle::export_raw", "a null pointer or a zero size"));
        }
        let mut data = sys::cudaMemPoolPtrExportData::default();
        // SAFETY: the caller's contract; `data` is writable.
        cuda_call!(unsafe { sys::cudaMemPoolExportPointer(&mut data, ptr.cast_mut()) })?;
        Ok(PoolPointerHandle { data: data.reserved, size, origin: None })
    }
}

/// Another process's allocation of an [`IpcPool`], imported into this one
/// ([`ImportedPool::import_pointer`]). Its views carry its stream as their
/// [`origin`](crate::DeviceSlice::origin).
///
/// Dropped, it is freed on its stream (`cudaFreeAsync`) and the drop **synchronises the stream**:
/// CUDA requires an importer's free to have completed before the exporter frees the allocation, so
/// once the drop has returned the exporter may be told so. A failure in the drop is kept for
/// [`take_drop_errors`](crate::error::take_drop_errors); [`free`](Self::free) returns it.
#[derive(Debug)]
pub struct PoolImport<'a, T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    stream: StreamRef<'a>,
    /// The imported pool lives until its imports are freed.
    _pool: ImportedPool,
    _handle: PhantomData<&'a ()>,
}

// SAFETY: imported device memory may be used from any thread; the import owns its mapping.
unsafe impl<T: DeviceCopy + Send> Send for PoolImport<'_, T> {}
// SAFETY: `&PoolImport` only hands out shared views.
unsafe impl<T: DeviceCopy + Sync> Sync for PoolImport<'_, T> {}

impl<'a, T: DeviceCopy> PoolImport<'a, T> {
    crate::memory::accessors::device_memory_methods!();

    /// The stream the import is freed on.
    #[inline(always)]
    pub fn stream(&self) -> StreamRef<'a> {
        self.stream
    }

    /// Frees the import on its stream and waits for the free (`cudaFreeAsync`, then
    /// `cudaStreamSynchronize`), reporting the result.
    pub fn free(self) -> Result<()> {
        let this = core::mem::ManuallyDrop::new(self);
        let freed = this.release();
        // SAFETY: `this` is never dropped; its pool reference is moved out once, and released
        // after the free.
        drop(unsafe { core::ptr::read(&this._pool) });
        freed
    }

    fn release(&self) -> Result<()> {
        // SAFETY: our import, freed once, ordered after the stream's work.
        let freed = cuda_call!(unsafe { sys::cudaFreeAsync(self.ptr.as_ptr().cast(), self.stream.as_raw()) });
        let synchronised = self.stream.synchronize_or_wait_idle();
        freed.and(synchronised)
    }
}

impl<T: DeviceCopy> Drop for PoolImport<'_, T> {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            crate::error::record_drop_error_value(e);
        }
    }
}
