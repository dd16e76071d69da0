//! Page-locked host memory: [`PinnedBuffer`] (allocated by CUDA) and [`RegisteredHost`] (existing
//! memory registered with CUDA for as long as it is borrowed).

use super::{byte_len, DeviceCopy, PinnedSlice, PinnedSliceMut};
use crate::error::Result;
use core::ffi::c_uint;
use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

bitflags::bitflags! {
    /// `cudaHostAlloc` flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct HostAllocFlags: c_uint {
        /// `cudaHostAllocPortable`: pinned for every CUDA context, not only the current one.
        const PORTABLE = sys::cudaHostAllocPortable;
        /// `cudaHostAllocMapped`: also mapped into the device's address space.
        const MAPPED = sys::cudaHostAllocMapped;
        /// `cudaHostAllocWriteCombined`: faster for the device to read, very slow for the CPU to
        /// read. For buffers the CPU only writes.
        const WRITE_COMBINED = sys::cudaHostAllocWriteCombined;
    }
}

bitflags::bitflags! {
    /// `cudaHostRegister` flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct HostRegisterFlags: c_uint {
        /// `cudaHostRegisterPortable`.
        const PORTABLE = sys::cudaHostRegisterPortable;
        /// `cudaHostRegisterMapped`.
        const MAPPED = sys::cudaHostRegisterMapped;
        /// `cudaHostRegisterReadOnly`: the device only reads the memory.
        const READ_ONLY = sys::cudaHostRegisterReadOnly;
    }
}

/// `len` elements of page-locked host memory from `cudaHostAlloc`, zeroed, freed with
/// `cudaFreeHost` on drop (a failure is kept for
/// [`take_drop_errors`](crate::error::take_drop_errors)). Derefs to `[T]` for the CPU.
///
/// `cudaFreeHost` is not stream-ordered: the memory must not be dropped while a copy that uses it
/// may still be in flight. The asynchronous copies are `unsafe` for that reason (see
/// [`copy`](super::copy)).
#[derive(Debug)]
pub struct PinnedBuffer<T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: owned host memory, like Vec<T>.
unsafe impl<T: DeviceCopy + Send> Send for PinnedBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy + Sync> Sync for PinnedBuffer<T> {}

impl<T: DeviceCopy> PinnedBuffer<T> {
    /// `len` zeroed elements (`cudaHostAlloc` with `flags`, then zeroed by the CPU). Zero `len`, a
    /// zero-sized `T` or a byte size that overflows is a usage error, before CUDA is called.
    pub fn zeroed(len: usize, flags: HostAllocFlags) -> Result<Self> {
        let raw = RawPinned::<T>::alloc(len, flags, "PinnedBuffer::zeroed")?;
        // SAFETY: `raw.bytes` of fresh host memory; zero is a valid `T` (DeviceCopy).
        unsafe { core::ptr::write_bytes(raw.ptr.as_ptr().cast::<u8>(), 0, raw.bytes) };
        Ok(raw.into_buffer(len))
    }

    /// A pinned copy of `data` (default flags), copied once: no zeroing first.
    pub fn from_slice(data: &[T]) -> Result<Self> {
        let raw = RawPinned::<T>::alloc(data.len(), HostAllocFlags::empty(), "PinnedBuffer::from_slice")?;
        // SAFETY: `data.len()` fresh elements, not overlapping `data`.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), raw.ptr.as_ptr(), data.len()) };
        Ok(raw.into_buffer(data.len()))
    }

    /// `len` elements, element `i` being `f(i)`, written once: no zeroing first (filling gigabytes
    /// of pinned frames costs one pass, not two). A panic in `f` frees the memory and propagates.
    /// Errors as [`zeroed`](Self::zeroed).
    pub fn from_fn(len: usize, flags: HostAllocFlags, mut f: impl FnMut(usize) -> T) -> Result<Self> {
        let raw = RawPinned::<T>::alloc(len, flags, "PinnedBuffer::from_fn")?;
        for i in 0..len {
            // SAFETY: `i < len`, inside the fresh allocation; T is Copy (no drop to skip).
            unsafe { raw.ptr.as_ptr().add(i).write(f(i)) };
        }
        Ok(raw.into_buffer(len))
    }

    super::accessors::pinned_views!();
}

impl<T: DeviceCopy> Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: DeviceCopy> DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: `len` initialised elements, borrowed exclusively.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// A fresh `cudaHostAlloc` allocation not yet a [`PinnedBuffer`] (its elements not yet written):
/// freed on drop, also when a fill panics.
struct RawPinned<T> {
    ptr: NonNull<T>,
    bytes: usize,
}

impl<T: DeviceCopy> RawPinned<T> {
    fn alloc(len: usize, flags: HostAllocFlags, call: &'static str) -> Result<Self> {
        let bytes = byte_len::<T>(len, call)?;
        let mut ptr: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is writable.
        cuda_call!(unsafe { sys::cudaHostAlloc(&mut ptr, bytes, flags.bits()) })?;
        let ptr = NonNull::new(ptr.cast::<T>()).ok_or_else(|| crate::error::null_handle("cudaHostAlloc"))?;
        Ok(RawPinned { ptr, bytes })
    }

    /// The buffer, once its `len` elements are written.
    fn into_buffer(self, len: usize) -> PinnedBuffer<T> {
        let ptr = self.ptr;
        core::mem::forget(self);
        PinnedBuffer { ptr, len }
    }
}

impl<T> Drop for RawPinned<T> {
    fn drop(&mut self) {
        // SAFETY: our allocation, never handed out.
        let code = unsafe { sys::cudaFreeHost(self.ptr.as_ptr().cast()) };
        crate::error::record_drop_error(code, "cudaFreeHost");
    }
}

impl<T: DeviceCopy> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: our allocation.
        let code = unsafe { sys::cudaFreeHost(self.ptr.as_ptr().cast()) };
        crate::error::record_drop_error(code, "cudaFreeHost");
    }
}

/// Existing host memory page-locked with `cudaHostRegister` while this value lives (unregistered on
/// drop; a failure is kept for [`take_drop_errors`](crate::error::take_drop_errors)). Borrows the
/// memory exclusively, so it cannot be freed or moved meanwhile.
#[derive(Debug)]
pub struct RegisteredHost<'a, T: DeviceCopy> {
    data: &'a mut [T],
}

impl<'a, T: DeviceCopy> RegisteredHost<'a, T> {
    /// Registers `data` (`cudaHostRegister`). Registration costs about as much as pinning fresh
    /// memory: register long-lived buffers once, not per copy. An empty slice or a zero-sized `T`
    /// is a usage error, before CUDA is called.
    pub fn new(data: &'a mut [T], flags: HostRegisterFlags) -> Result<Self> {
        let bytes = byte_len::<T>(data.len(), "RegisteredHost::new")?;
        // SAFETY: `data` is live host memory of `bytes` bytes, borrowed for as long as it stays registered.
        cuda_call!(unsafe { sys::cudaHostRegister(data.as_mut_ptr().cast(), bytes, flags.bits()) })?;
        Ok(RegisteredHost { data })
    }

    /// A view for asynchronous copies.
    #[inline(always)]
    pub fn pinned(&self) -> PinnedSlice<'_, T> {
        // SAFETY: registered memory, shared for the borrow.
        unsafe { PinnedSlice::from_raw_parts(self.data.as_ptr(), self.data.len()) }
    }

    /// An exclusive view for asynchronous copies into this memory.
    #[inline(always)]
    pub fn pinned_mut(&mut self) -> PinnedSliceMut<'_, T> {
        // SAFETY: registered memory, borrowed exclusively.
        unsafe { PinnedSliceMut::from_raw_parts(self.data.as_mut_ptr(), self.data.len()) }
    }
}

impl<T: DeviceCopy> Deref for RegisteredHost<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.data
    }
}

impl<T: DeviceCopy> DerefMut for RegisteredHost<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.data
    }
}

impl<T: DeviceCopy> Drop for RegisteredHost<'_, T> {
    fn drop(&mut self) {
        // SAFETY: registered by `new`.
        let code = unsafe { sys::cudaHostUnregister(self.data.as_mut_ptr().cast()) };
        crate::error::record_drop_error(code, "cudaHostUnregister");
    }
}
