//! Device memory shared between processes with CUDA's IPC memory handles: [`IpcBuffer`] (the
//! exporter's `cudaMalloc` allocation), [`IpcMemHandle`] (what crosses the boundary) and
//! [`IpcMapping`] (the importer's mapping, closed on drop).

use super::handle::{decode, elements, encode, from_c_chars, to_c_chars, HandleKind, CUDA_BYTES, HANDLE_BYTES};
use crate::device::Device;
use crate::error::{null_handle, Error, Result};
use crate::memory::{byte_len, DeviceCopy};
use crate::stream::StreamRef;
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// `cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr dptr)`, its `_v2` form.
type AddressRangeFn = unsafe extern "C" fn(*mut u64, *mut usize, u64) -> c_int;

crate::driver_calls::driver_fns! {
    /// `cuMemGetAddressRange`: the allocation an address lies in.
    fn mem_get_address_range() -> AddressRangeFn = c"cuMemGetAddressRange", 12000, "the driver predates CUDA 12.0";
}

/// The bytes of the allocation that starts at `ptr`, as the driver knows it; `None` where the
/// driver cannot say (then nothing is checked), or `Some(0)` when `ptr` is not its start. Call
/// with the allocation's device current.
pub(crate) fn allocation_bytes(ptr: *const c_void) -> Option<usize> {
    let range = mem_get_address_range().ok()?;
    let (mut base, mut size) = (0u64, 0usize);
    // SAFETY: the driver's cuMemGetAddressRange_v2; both outputs writable; any address may be asked about.
    let code = unsafe { range(&mut base, &mut size, ptr as u64) };
    (code == 0).then_some(if base == ptr as u64 { size } else { 0 })
}

/// Synchronises `stream`, then frees with `free` (on `device`): for memory whose free no stream
/// orders. The free runs once no work queued on `stream` can run any more, also when the
/// synchronise failed (a lost context); the first error is returned.
pub(crate) fn free_after_stream(
    stream: StreamRef<'_>,
    device: Device,
    free: impl FnOnce() -> Result<()>,
) -> Result<()> {
    // A capturing stream cannot be synchronised (nor waited for by queries), so nothing would
    // order the free after the work queued before the capture: the memory is left allocated
    // (leaked) and the refusal returned, rather than freed under that work.
    if !matches!(stream.capture_status(), Ok(crate::graph::CaptureStatus::None)) {
        return Err(crate::error::Error::usage(
            crate::error::UsageKind::InvalidArgument,
            "ipc free",
            "the stream is capturing: the memory is left allocated (freed under queued work otherwise); free it outside captures",
        ));
    }
    let synchronised = stream.synchronize_or_wait_idle();
    let freed = device.with_current(free);
    synchronised.and(freed)
}

/// The shape [`IpcBuffer`] and [`IpcMapping`] share, written once: `len` elements of device
/// memory on `device`, whose views carry `stream` as their origin, released by one CUDA call
/// after a synchronise of `stream` ([`free_after_stream`]): by the method named (which returns
/// the error) or by the drop (which keeps it for
/// [`take_drop_errors`](crate::error::take_drop_errors)).
macro_rules! released_after_stream {
    (
        $(#[$attr:meta])*
        pub struct $name:ident<$s:lifetime>;
        stream: $stream_doc:literal,
        $give_up_doc:literal
        pub fn $give_up:ident by $release:ident;
    ) => {
        $(#[$attr])*
        #[derive(Debug)]
        pub struct $name<$s, T: DeviceCopy> {
            ptr: NonNull<T>,
            len: usize,
            device: Device,
            stream: StreamRef<$s>,
        }

        // SAFETY: device memory may be used from any thread; the value owns its allocation (or
        // mapping).
        unsafe impl<T: DeviceCopy + Send> Send for $name<'_, T> {}
        // SAFETY: a shared reference only hands out shared views (and an `IpcBuffer`'s handles,
        // plain data).
        unsafe impl<T: DeviceCopy + Sync> Sync for $name<'_, T> {}

        impl<$s, T: DeviceCopy> $name<$s, T> {
            crate::memory::accessors::device_memory_methods!();

            #[doc = $stream_doc]
            #[inline(always)]
            pub fn stream(&self) -> StreamRef<$s> {
                self.stream
            }

            #[doc = $give_up_doc]
            pub fn $give_up(self) -> Result<()> {
                // Released here, once: the drop does not run.
                core::mem::ManuallyDrop::new(self).release()
            }

            /// The release, after the stream's work; made once, by the method above or the drop.
            fn release(&self) -> Result<()> {
                let ptr = self.ptr.as_ptr().cast::<c_void>();
                // SAFETY: ours, released once (the method above gives the value up without its
                // drop), after the stream's work.
                free_after_stream(self.stream, self.device, || cuda_call!(unsafe { sys::$release(ptr) }))
            }
        }

        impl<T: DeviceCopy> Drop for $name<'_, T> {
            fn drop(&mut self) {
                if let Err(e) = self.release() {
                    crate::error::record_drop_error_value(e);
                }
            }
        }
    };
}

released_after_stream! {
    /// `len` elements of device memory that other processes may map: `cudaMalloc` on the device of
    /// `stream` (CUDA's IPC memory handles work on `cudaMalloc` memory only, not on pool memory: for
    /// that see [`IpcPool`](super::IpcPool)).
    ///
    /// Its views carry `stream` as their [`origin`](crate::DeviceSlice::origin). `cudaFree` is ordered on no
    /// stream, so the drop **synchronises `stream`** and then frees: work this process queued on
    /// `stream` (or ordered before it) has completed by then. Drop it outside hot loops, and outside
    /// captures of `stream`: there nothing can wait for that work, so the memory is left allocated
    /// and the refusal kept as a drop error. Other
    /// processes' mappings are not this type's to know of: see [what the exporter owes](super#across-processes-what-the-exporter-owes).
    /// A failure in the drop is kept for [`take_drop_errors`](crate::error::take_drop_errors);
    /// [`free`](Self::free) returns it.
    pub struct IpcBuffer<'s>;
        stream: "The stream the drop synchronises before it frees.",
        "Synchronises the buffer's stream and frees the buffer (`cudaFree`), reporting the result."
        pub fn free by cudaFree;
}

impl<'s, T: DeviceCopy> IpcBuffer<'s, T> {
    /// `len` uninitialised elements (`cudaMalloc` with the stream's device current). Zero `len`
    /// or a byte size that overflows is an error.
    pub fn alloc(len: usize, stream: StreamRef<'s>) -> Result<Self> {
        let bytes = byte_len::<T>(len, "IpcBuffer::alloc")?;
        let device = stream.device_or_current()?;
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        device.with_current(|| cuda_call!(unsafe { sys::cudaMalloc(&mut raw, bytes) }))?;
        let ptr = NonNull::new(raw.cast::<T>()).ok_or_else(|| null_handle("cudaMalloc"))?;
        Ok(IpcBuffer { ptr, len, device, stream })
    }

    /// `len` elements zeroed on `stream` (`cudaMalloc`, then `cudaMemsetAsync` on `stream`).
    pub fn zeroed(len: usize, stream: StreamRef<'s>) -> Result<Self> {
        let buffer = Self::alloc(len, stream)?;
        // SAFETY: our allocation of `byte_len` bytes; the memset is ordered on the buffer's stream.
        cuda_call!(unsafe { sys::cudaMemsetAsync(buffer.ptr.as_ptr().cast(), 0, buffer.byte_len(), stream.as_raw()) })?;
        Ok(buffer)
    }

    /// The handle other processes open ([`IpcMapping::open`]) (`cudaIpcGetMemHandle`). It borrows
    /// the buffer: in this process the buffer outlives the handle and everything opened from it.
    pub fn export(&self) -> Result<IpcMemHandle<'_>> {
        let mut raw = sys::cudaIpcMemHandle_t::default();
        // SAFETY: our live `cudaMalloc` allocation; `raw` is writable.
        self.device
            .with_current(|| cuda_call!(unsafe { sys::cudaIpcGetMemHandle(&mut raw, self.ptr.as_ptr().cast()) }))?;
        Ok(IpcMemHandle { data: from_c_chars(&raw.reserved), size: self.byte_len(), _memory: PhantomData })
    }
}

/// What another process needs to map an [`IpcBuffer`] (CUDA's `cudaIpcMemHandle_t` and the
/// allocation's size). Plain data; it borrows the exported memory (`'a`), so that in the exporting
/// process nothing opened from it outlives the memory. [`to_bytes`](Self::to_bytes) is its form on
/// the wire, [`from_bytes`](Self::from_bytes) (`unsafe`) the way back.
#[derive(Clone, Copy)]
pub struct IpcMemHandle<'a> {
    data: [u8; CUDA_BYTES],
    size: usize,
    _memory: PhantomData<&'a ()>,
}

impl core::fmt::Debug for IpcMemHandle<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IpcMemHandle").field("size", &self.size).finish_non_exhaustive()
    }
}

impl IpcMemHandle<'_> {
    /// The allocation's size in bytes.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }

    /// The handle's [`HANDLE_BYTES`] bytes, to send to another process.
    pub fn to_bytes(&self) -> [u8; HANDLE_BYTES] {
        encode(HandleKind::Memory, self.size, &self.data)
    }

    /// The handle whose [`to_bytes`](Self::to_bytes) gave `bytes`. Bytes that are not a memory
    /// handle of this format are refused.
    ///
    /// # Safety
    /// The exporter owes, until every [`IpcMapping`] opened from the returned handle (in any
    /// process) has been dropped:
    /// - the allocation stays allocated (its [`IpcBuffer`] is not dropped);
    /// - the size in `bytes` is the allocation's (an [`IpcMapping`] checks it against the driver's
    ///   record where the driver can tell; it cannot in every case).
    pub unsafe fn from_bytes(bytes: &[u8]) -> Result<IpcMemHandle<'static>> {
        let (size, data) = decode(HandleKind::Memory, bytes, "IpcMemHandle::from_bytes")?;
        Ok(IpcMemHandle { data, size, _memory: PhantomData })
    }

    /// The handle of `size` bytes of `cudaMalloc` memory at `ptr` that this process allocated
    /// itself (`cudaIpcGetMemHandle`), for memory ordo does not own (the C ABI's exports). A size
    /// larger than the allocation is refused where the driver can tell.
    ///
    /// # Safety
    /// `ptr` is the start of a live `cudaMalloc` allocation of at least `size` bytes, on the calling
    /// thread's current device, which stays allocated until every [`IpcMapping`] opened from the
    /// handle (in any process) has been dropped.
    pub unsafe fn export_raw(ptr: *const c_void, size: usize) -> Result<IpcMemHandle<'static>> {
        if ptr.is_null() || size == 0 {
            return Err(Error::invalid("IpcMemHandle::export_raw", "a null pointer or a zero size"));
        }
        if allocation_bytes(ptr).is_some_and(|bytes| bytes < size) {
            return Err(Error::invalid(
                "IpcMemHandle::export_raw",
                "the pointer is not the start of an allocation of at least `size` bytes",
            ));
        }
        let mut raw = sys::cudaIpcMemHandle_t::default();
        // SAFETY: the caller's contract; `raw` is writable.
        cuda_call!(unsafe { sys::cudaIpcGetMemHandle(&mut raw, ptr.cast_mut()) })?;
        Ok(IpcMemHandle { data: from_c_chars(&raw.reserved), size, _memory: PhantomData })
    }
}

released_after_stream! {
    /// Another process's [`IpcBuffer`], mapped into this one (`cudaIpcOpenMemHandle`) on the device of
    /// the stream it was opened with, and unmapped on drop (`cudaIpcCloseMemHandle`).
    ///
    /// Its views carry that stream as their [`origin`](crate::DeviceSlice::origin). The unmap is ordered on no
    /// stream, so the drop **synchronises the stream** and then closes. A failure in the drop is kept
    /// for [`take_drop_errors`](crate::error::take_drop_errors); [`close`](Self::close) returns it.
    /// CUDA does not promise to map a handle of this process's own memory: opening one may fail with
    /// CUDA's error (and where it maps, the handle's borrow keeps the buffer alive).
    pub struct IpcMapping<'a>;
        stream: "The stream the drop synchronises before it unmaps.",
        "Synchronises the mapping's stream and unmaps (`cudaIpcCloseMemHandle`), reporting the result."
        pub fn close by cudaIpcCloseMemHandle;
}

impl<'a, T: DeviceCopy> IpcMapping<'a, T> {
    /// Maps the memory behind `handle` as `handle.size() / size_of::<T>()` elements, with the
    /// device of `stream` current (`cudaIpcOpenMemHandle` with `cudaIpcMemLazyEnablePeerAccess`,
    /// so another device's memory maps too where peer access is possible). A size that is not a
    /// whole number of elements, or that exceeds the mapped allocation, is refused.
    pub fn open(handle: &IpcMemHandle<'a>, stream: StreamRef<'a>) -> Result<Self> {
        let len = elements::<T>(handle.size, "IpcMapping::open")?;
        let device = stream.device_or_current()?;
        let raw = sys::cudaIpcMemHandle_t { reserved: to_c_chars(&handle.data) };
        let mut p: *mut c_void = core::ptr::null_mut();
        device.with_current(|| {
            // SAFETY: `p` is writable; the handle is plain data (CUDA refuses one it does not know).
            cuda_call!(unsafe { sys::cudaIpcOpenMemHandle(&mut p, raw, sys::cudaIpcMemLazyEnablePeerAccess) })
        })?;
        let ptr = NonNull::new(p.cast::<T>()).ok_or_else(|| null_handle("cudaIpcOpenMemHandle"))?;
        // From here a failure closes the mapping (its drop).
        let mapping = IpcMapping { ptr, len, device, stream };
        if (p as usize) % core::mem::align_of::<T>() != 0 {
            return Err(Error::invalid("IpcMapping::open", "the mapped address is not aligned for the element type"));
        }
        let mapped = device.with_current(|| Ok(allocation_bytes(p)))?;
        if mapped.is_some_and(|bytes| bytes != 0 && bytes < handle.size) {
            return Err(Error::invalid(
                "IpcMapping::open",
                "the handle claims more bytes than the exported allocation holds",
            ));
        }
        Ok(mapping)
    }
}
