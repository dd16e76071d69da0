//! Managed (unified) memory: [`ManagedBuffer`], with prefetch and advice at a [`Location`] that
//! means the same over CUDA 12 and 13.

use super::{byte_len, DeviceCopy};
use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::stream::{Stream, StreamRef};
use core::ffi::c_uint;
use core::ops::RangeBounds;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

bitflags::bitflags! {
    /// `cudaMallocManaged` flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct ManagedFlags: c_uint {
        /// `cudaMemAttachGlobal`: accessible from any stream on any device (the default).
        const ATTACH_GLOBAL = sys::cudaMemAttachGlobal;
        /// `cudaMemAttachHost`: host-only until attached to a stream.
        const ATTACH_HOST = sys::cudaMemAttachHost;
    }
}

/// Where managed memory should live or be read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A device's memory.
    Device(Device),
    /// Host memory.
    Host,
    /// Host memory on a NUMA node (CUDA 12.2 and later).
    HostNuma(i32),
}

impl Location {
    /// The CUDA form (`cudaMemLocation`). On CUDA 12 and 13 the host is `{Host, 0}`; the wrappers in
    /// `ordo-cuda-sys` map it to `cudaCpuDeviceId` for toolkits older than 12.2 and refuse NUMA there.
    pub fn to_raw(self) -> sys::cudaMemLocation {
        use sys::cudaMemLocationType as T;
        match self {
            Location::Device(d) => sys::mem_location(T::cudaMemLocationTypeDevice, d.ordinal()),
            Location::Host => sys::mem_location(T::cudaMemLocationTypeHost, 0),
            Location::HostNuma(node) => sys::mem_location(T::cudaMemLocationTypeHostNuma, node),
        }
    }
}

/// `len` elements of managed memory (`cudaMallocManaged`), zeroed, freed with `cudaFree` on drop.
///
/// `cudaFree` of managed memory synchronises the device: drop managed buffers outside hot loops.
/// A failure of that free is kept for [`take_drop_errors`](crate::error::take_drop_errors).
/// The CPU may read and write the memory through [`as_host_slice`](Self::as_host_slice) only while no
/// kernel is using it.
#[derive(Debug)]
pub struct ManagedBuffer<T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: owned memory, usable from any thread.
unsafe impl<T: DeviceCopy + Send> Send for ManagedBuffer<T> {}
// SAFETY: as above.
unsafe impl<T: DeviceCopy + Sync> Sync for ManagedBuffer<T> {}

impl<T: DeviceCopy> ManagedBuffer<T> {
    /// `len` zeroed elements (`cudaMallocManaged` on the current device, then zeroed). Zero `len`,
    /// a zero-sized `T` or a byte size that overflows is a usage error, before CUDA is called.
    ///
    /// Where the CPU may touch managed memory while kernels run (the current device has
    /// `concurrentManagedAccess`, or `flags` has [`ManagedFlags::ATTACH_HOST`]), the CPU zeroes it.
    /// Elsewhere CUDA forbids any CPU access to managed memory while a kernel runs on the device,
    /// which this call cannot know: the device zeroes it instead (`cudaMemsetAsync` on a private
    /// stream), and the call **blocks** until that memset has completed.
    pub fn zeroed(len: usize, flags: ManagedFlags) -> Result<Self> {
        let bytes = byte_len::<T>(len, "ManagedBuffer::zeroed")?;
        let cpu_may_write =
            flags.contains(ManagedFlags::ATTACH_HOST) || Device::current()?.concurrent_managed_access()?;
        let mut raw: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaMallocManaged(&mut raw, bytes, flags.bits()) })?;
        let ptr = NonNull::new(raw.cast::<T>()).ok_or_else(|| crate::error::null_handle("cudaMallocManaged"))?;
        // Owned from here: an error below frees it.
        let buf = ManagedBuffer { ptr, len };
        if cpu_may_write {
            // SAFETY: fresh managed memory no kernel can see yet, which the CPU may access while
            // kernels run; zero is a valid `T`.
            unsafe { core::ptr::write_bytes(ptr.as_ptr().cast::<u8>(), 0, bytes) };
        } else {
            let stream = Stream::new()?;
            // SAFETY: `bytes` of our managed allocation; the stream is live until it is
            // synchronised below.
            cuda_call!(unsafe { sys::cudaMemsetAsync(raw, 0, bytes, stream.as_raw()) })?;
            stream.synchronize()?; // blocking, as documented: the memory must be zero before it is handed out
        }
        Ok(buf)
    }

    super::accessors::ptr_methods!("The address, valid on host and device.", "The address, valid on host and device.");

    super::accessors::len_methods!(is_empty: "Always false.");

    /// The memory as a host slice.
    ///
    /// # Safety
    /// No kernel or copy that writes this memory may be running or queued to run while the slice
    /// lives (synchronise the streams that use it first). On a device without
    /// `concurrentManagedAccess` ([`Device::concurrent_managed_access`]), unless the memory is
    /// attached to the host, no kernel at all may run on the device while the slice lives: CUDA
    /// forbids CPU access to managed memory while the device is busy there.
    pub unsafe fn as_host_slice(&self) -> &[T] {
        // SAFETY: the caller owes the absence of concurrent device writes.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The memory as a mutable host slice.
    ///
    /// # Safety
    /// No kernel or copy that uses this memory may be running or queued to run while the slice
    /// lives; and without `concurrentManagedAccess`, as for [`as_host_slice`](Self::as_host_slice),
    /// no kernel at all on the device.
    pub unsafe fn as_host_slice_mut(&mut self) -> &mut [T] {
        // SAFETY: the caller owes the absence of concurrent device use.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    fn byte_range(&self, range: impl RangeBounds<usize>, call: &'static str) -> Result<(*const T, usize)> {
        let (start, len) = super::slice::resolve(range, self.len, call)?;
        if len == 0 {
            return Err(Error::invalid(call, "empty range"));
        }
        // Inside an allocation of `self.len * size_of::<T>()` bytes, so it cannot overflow.
        let bytes = len.saturating_mul(core::mem::size_of::<T>());
        // SAFETY: inside the allocation.
        Ok((unsafe { self.ptr.as_ptr().add(start) }, bytes))
    }

    /// Migrates `range` to `location` on `stream` (`cudaMemPrefetchAsync`, one form over CUDA 12
    /// and 13). Prefetching to a device needs `concurrentManagedAccess`: without it this is a usage
    /// error saying so, not a CUDA error later.
    pub fn prefetch_async(
        &self,
        range: impl RangeBounds<usize>,
        location: Location,
        stream: StreamRef<'_>,
    ) -> Result<()> {
        const CALL: &str = "ManagedBuffer::prefetch_async";
        let (ptr, bytes) = self.byte_range(range, CALL)?;
        if let Location::Device(d) = location {
            if !d.concurrent_managed_access()? {
                return Err(Error::usage(
                    UsageKind::NotSupported,
                    CALL,
                    "the device has no concurrentManagedAccess: managed memory cannot be prefetched to it",
                ));
            }
        }
        // SAFETY: a range of our managed allocation; a live stream.
        cuda_call!(unsafe {
            sys::compat::cudaMemPrefetchAsync(ptr.cast(), bytes, location.to_raw(), 0, stream.as_raw())
        })
    }

    /// Gives CUDA `advice` about `range` at `location` (`cudaMemAdvise`, one form over CUDA 12 and 13).
    pub fn advise(
        &self,
        range: impl RangeBounds<usize>,
        advice: sys::cudaMemoryAdvise,
        location: Location,
    ) -> Result<()> {
        let (ptr, bytes) = self.byte_range(range, "ManagedBuffer::advise")?;
        // SAFETY: a range of our managed allocation.
        cuda_call!(unsafe { sys::compat::cudaMemAdvise(ptr.cast(), bytes, advice, location.to_raw()) })
    }
}

impl<T: DeviceCopy> Drop for ManagedBuffer<T> {
    fn drop(&mut self) {
        // SAFETY: our allocation. cudaFree of managed memory synchronises (documented above).
        let code = unsafe { sys::cudaFree(self.ptr.as_ptr().cast()) }; // sync: managed memory has no async free
        crate::error::record_drop_error(code, "cudaFree");
    }
}
