//! [`DeviceBuffer`]: device memory allocated on a stream and freed on a stream.

use super::{byte_len, DeviceCopy, DeviceSlice, DeviceSliceMut, MemPoolRef};
use crate::error::Result;
use crate::stream::StreamRef;
use core::ffi::c_void;
use core::ops::RangeBounds;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// `len` elements of device memory from a stream-ordered pool (`cudaMallocAsync`), freed with
/// `cudaFreeAsync` on the same stream when dropped: the free is ordered after all work enqueued on
/// that stream, so dropping a buffer while a kernel that uses it is still queued on its stream is
/// safe, and `Drop` never synchronises.
///
/// The buffer borrows its stream (`'s`), so it cannot outlive it. Its views know that stream
/// ([`DeviceSlice::origin`]): ordo's safe functions that enqueue on another stream order their
/// work after it (and the free after their work) with [`order`](super::order). Work the caller
/// enqueues on another stream through `unsafe` calls (a kernel, an async copy) is the caller's to
/// order: after the allocation (an event recorded on the buffer's stream), and before the free
/// (an event recorded on the other stream, waited on by the buffer's stream), for example with
/// [`order::after_origin`](super::order::after_origin) and
/// [`order::origin_after`](super::order::origin_after).
///
/// A failure of the free in `Drop` is kept for [`take_drop_errors`](crate::error::take_drop_errors).
///
/// The contents start uninitialised on the device; [`DeviceCopy`] types have no invalid bit
/// patterns, so reading them back is defined, if meaningless.
#[derive(Debug)]
pub struct DeviceBuffer<'s, T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    stream: StreamRef<'s>,
}

// SAFETY: device memory may be used from any thread; the buffer owns its allocation.
unsafe impl<T: DeviceCopy + Send> Send for DeviceBuffer<'_, T> {}
// SAFETY: `&DeviceBuffer` only hands out shared views.
unsafe impl<T: DeviceCopy + Sync> Sync for DeviceBuffer<'_, T> {}

impl<'s, T: DeviceCopy> DeviceBuffer<'s, T> {
    /// `len` elements from the current device's current pool, on `stream` (`cudaMallocAsync`).
    /// The memory may be used by work enqueued on `stream` after this call. No heap allocation,
    /// no lock: one driver call. Zero `len` or a byte size that overflows is an error.
    ///
    /// In a loop that allocates, frees and synchronises, mind the pool's release threshold: the
    /// device's default pool keeps nothing across a synchronise, so each iteration maps its memory
    /// again (a hundred microseconds against a few from a pool that keeps its memory:
    /// `docs/cuda-behaviours.md`, CB-12). Raise the threshold
    /// ([`MemPoolRef::set_release_threshold`]) or allocate from a pool of your own
    /// ([`MemPool::builder`](super::MemPool::builder), [`alloc_from_pool_async`](Self::alloc_from_pool_async)).
    ///
    /// On a stream that is capturing, the allocation is not made now: CUDA adds an allocation
    /// node to the capture graph, and the address is valid only for work captured into the same
    /// graph, while its executable graph runs (and the buffer's drop adds the matching free
    /// node). Using it outside that graph is covered by the contract of the (`unsafe`) capture,
    /// which promises that nothing else uses the stream while it captures; ordo adds no check
    /// here, to keep this one driver call.
    #[inline]
    pub fn alloc_async(len: usize, stream: StreamRef<'s>) -> Result<Self> {
        let bytes = byte_len::<T>(len, "DeviceBuffer::alloc_async")?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is writable; `stream` is live for 's.
        cuda_call!(unsafe { sys::cudaMallocAsync(&mut ptr, bytes, stream.as_raw()) })?;
        Self::from_allocated(ptr, len, stream, "cudaMallocAsync")
    }

    /// `len` elements from `pool`, on `stream` (`cudaMallocFromPoolAsync`). Capture as for
    /// [`alloc_async`](Self::alloc_async).
    #[inline]
    pub fn alloc_from_pool_async(len: usize, pool: MemPoolRef<'_>, stream: StreamRef<'s>) -> Result<Self> {
        let bytes = byte_len::<T>(len, "DeviceBuffer::alloc_from_pool_async")?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is writable; pool and stream are live.
        cuda_call!(unsafe { sys::cudaMallocFromPoolAsync(&mut ptr, bytes, pool.as_raw(), stream.as_raw()) })?;
        Self::from_allocated(ptr, len, stream, "cudaMallocFromPoolAsync")
    }

    /// `len` elements on `stream` from `pool` ([`alloc_from_pool_async`](Self::alloc_from_pool_async)),
    /// or, with `None`, from the device's current pool ([`alloc_async`](Self::alloc_async)): for
    /// functions whose caller may name the pool their temporaries come from.
    #[inline]
    pub fn alloc_in_async(len: usize, pool: Option<MemPoolRef<'_>>, stream: StreamRef<'s>) -> Result<Self> {
        match pool {
            Some(pool) => Self::alloc_from_pool_async(len, pool, stream),
            None => Self::alloc_async(len, stream),
        }
    }

    /// `len` zeroed elements (`cudaMallocAsync` then `cudaMemsetAsync`, both on `stream`).
    pub fn zeroed_async(len: usize, stream: StreamRef<'s>) -> Result<Self> {
        Self::zeroed_in_async(len, None, stream)
    }

    /// `len` zeroed elements from `pool` or the device's current pool (see
    /// [`alloc_in_async`](Self::alloc_in_async)), then `cudaMemsetAsync`, all on `stream`.
    pub fn zeroed_in_async(len: usize, pool: Option<MemPoolRef<'_>>, stream: StreamRef<'s>) -> Result<Self> {
        let mut buf = Self::alloc_in_async(len, pool, stream)?;
        // SAFETY: the buffer is ours and the memset is ordered on its stream.
        cuda_call!(unsafe { sys::cudaMemsetAsync(buf.as_mut_ptr().cast(), 0, buf.byte_len(), stream.as_raw()) })?;
        Ok(buf)
    }

    fn from_allocated(ptr: *mut c_void, len: usize, stream: StreamRef<'s>, call: &'static str) -> Result<Self> {
        NonNull::new(ptr.cast::<T>())
            .map(|ptr| DeviceBuffer { ptr, len, stream })
            .ok_or_else(|| crate::error::null_handle(call))
    }

    /// Takes ownership of `len` elements at `ptr`, to be freed with `cudaFreeAsync` on `stream`.
    ///
    /// # Safety
    /// `ptr` came from `cudaMallocAsync`/`cudaMallocFromPoolAsync` (or `cudaMalloc`) with room for
    /// `len` elements, and nothing else frees it.
    pub unsafe fn from_raw_parts(ptr: NonNull<T>, len: usize, stream: StreamRef<'s>) -> Self {
        DeviceBuffer { ptr, len, stream }
    }

    super::accessors::device_memory_methods!();

    /// The stream the buffer will be freed on.
    #[inline(always)]
    pub fn stream(&self) -> StreamRef<'s> {
        self.stream
    }

    /// A shared view of `range`, with a clear error when it does not fit.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_slice().slice(range)
    }

    /// An exclusive view of `range`, with a clear error when it does not fit.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.as_mut_slice().slice_mut(range)
    }

    /// Frees the buffer on `stream` instead of its own (`cudaFreeAsync`), reporting the result.
    /// Use it when the last work on the buffer is on another stream.
    ///
    /// When `stream` is not the buffer's own stream, the free is ordered after the work queued on
    /// both: `stream` first waits for an event recorded on the buffer's stream (see
    /// [`order`](super::order)), then frees. If that ordering fails, the memory is not freed (it
    /// leaks, which is safe; freeing it unordered is not) and the error is returned.
    pub fn free_on(self, stream: StreamRef<'_>) -> Result<()> {
        let (ptr, own) = (self.ptr.as_ptr(), self.stream);
        core::mem::forget(self);
        super::order::after_origin(Some(own), stream)?;
        // SAFETY: our allocation, given up here; the free is ordered after the buffer's stream.
        cuda_call!(unsafe { sys::cudaFreeAsync(ptr.cast(), stream.as_raw()) })
    }

    /// Frees the buffer on its own stream, reporting the result (`Drop` keeps it for
    /// [`take_drop_errors`](crate::error::take_drop_errors) instead).
    pub fn free_async(self) -> Result<()> {
        let stream = self.stream;
        self.free_on(stream)
    }

    /// Gives up ownership: the caller frees the memory.
    pub fn into_raw_parts(self) -> (NonNull<T>, usize) {
        let parts = (self.ptr, self.len);
        core::mem::forget(self);
        parts
    }
}

impl<T: DeviceCopy> Drop for DeviceBuffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: our allocation; the free is ordered after the stream's work. An error here (a
        // lost context; a free of memory from outside a capture, inside it) is kept for
        // `take_drop_errors`; `free_async` returns it instead.
        let code = unsafe { sys::cudaFreeAsync(self.ptr.as_ptr().cast(), self.stream.as_raw()) };
        crate::error::record_drop_error(code, "cudaFreeAsync");
    }
}
