//! Stream-ordered pinned host memory: a pool of page-locked host memory ([`HostPool`],
//! `cudaMemPoolCreate` with a host location, CUDA 13.0 headers and driver) and buffers allocated
//! and freed on a stream from it ([`HostPoolBuffer`], `cudaMallocFromPoolAsync` /
//! `cudaFreeAsync`), where `cudaHostAlloc` takes milliseconds and `cudaFreeHost` synchronises
//! the device.
//!
//! # Device access
//! A host pool's memory is reachable from the CPU only until the pool grants a device access
//! (`cudaMemPoolSetAccess`; CUDA's documentation of `cudaMemPoolCreate`, and CCCL's pinned pool,
//! which grants every device). Without the grant a copy from it does not run at the pinned rate
//! (a sixth of it: `docs/cuda-behaviours.md`, CB-14). [`HostPool::new`]
//! grants the device read and write access; [`HostPoolOptions`] chooses the location (any host
//! memory, or a NUMA node) and the access.
//!
//! # Views and the CPU
//! The buffer's [`pinned`](HostPoolBuffer::pinned) views go wherever ordo takes pinned memory (the
//! asynchronous copies, batches, the pipeline): its free is stream-ordered, so a copy enqueued on
//! the buffer's own stream may be followed by the drop at once (unlike `cudaFreeHost`). The CPU is
//! not stream-ordered: the memory is ready for it only once the stream has reached the allocation
//! (it may be memory of a buffer freed earlier on the stream, still read by a copy queued before
//! that free). So the CPU reaches the elements through [`host_blocking`](HostPoolBuffer::host_blocking)
//! and [`host_mut_blocking`](HostPoolBuffer::host_mut_blocking), which synchronise the buffer's
//! stream first (blocking, by name) and refuse a capturing stream. The contents start as the
//! pool's memory was (zeros from the OS, or a freed buffer's bytes): [`DeviceCopy`] types have no
//! invalid bit patterns; [`zeroed_async`](HostPoolBuffer::zeroed_async) zeroes them on the stream.

use super::{byte_len, DeviceCopy, MemPoolRef, PoolAccess};
use crate::device::Device;
use crate::error::{Error, Result, UsageKind};
use crate::stream::StreamRef;
use core::ffi::c_void;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// Where a host pool's memory lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostLocation {
    /// Any host memory (`cudaMemLocationTypeHost`; CUDA 13.0 and later).
    Any,
    /// The host NUMA node of this id (`cudaMemLocationTypeHostNuma`).
    Numa(i32),
    /// The host NUMA node nearest the device (`cudaMemLocationTypeHostNuma` with the device's
    /// `cudaDevAttrHostNumaId`).
    NearDevice,
}

/// How a [`HostPool`] is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostPoolOptions {
    /// Where the memory lives.
    pub location: HostLocation,
    /// The access the pool's device gets (`cudaMemPoolSetAccess`); [`PoolAccess::None`] leaves
    /// CUDA's default for host pools, CPU access only.
    pub device_access: PoolAccess,
    /// Bytes kept reserved across synchronisations (`cudaMemPoolAttrReleaseThreshold`): by
    /// default everything, since giving pinned memory back and pinning it again costs
    /// milliseconds.
    pub release_threshold: u64,
    /// The pool's largest size in bytes (`cudaMemPoolProps::maxSize`); 0 for CUDA's default.
    pub max_size: usize,
}

impl Default for HostPoolOptions {
    /// Any host memory, read and write access for the device, everything kept.
    fn default() -> HostPoolOptions {
        HostPoolOptions {
            location: HostLocation::Any,
            device_access: PoolAccess::ReadWrite,
            release_threshold: u64::MAX,
            max_size: 0,
        }
    }
}

/// An owned pool of page-locked host memory, destroyed on drop (`cudaMemPoolDestroy`; CUDA defers
/// it until every buffer of the pool is freed; a failure is kept for
/// [`take_drop_errors`](crate::error::take_drop_errors)).
#[derive(Debug)]
pub struct HostPool {
    /// Owned: destroyed in `Drop`; only borrowed out, for as long as `self` is.
    pool: MemPoolRef<'static>,
}

impl HostPool {
    /// A pool of any host memory whose copies run on `device` ([`HostPoolOptions::default`]).
    pub fn new(device: Device) -> Result<HostPool> {
        HostPool::with_options(device, HostPoolOptions::default())
    }

    /// A pool made as `options` say, its memory reachable from `device` as they say.
    /// [`HostLocation::Any`] needs CUDA 13.0 headers and driver (NotSupported otherwise).
    pub fn with_options(device: Device, options: HostPoolOptions) -> Result<HostPool> {
        const CALL: &str = "HostPool::with_options";
        let location = match options.location {
            HostLocation::Any => {
                // A driver of 0 is no driver at all: CUDA's own error says so below.
                let driver = crate::device::driver_version()?;
                if sys::CUDA_VERSION < 13000 || (driver != 0 && driver < 13000) {
                    return Err(Error::usage_static(
                        UsageKind::NotSupported,
                        CALL,
                        "a pool of any host memory needs CUDA 13.0 headers and driver (HostLocation::Numa works from 12.6)",
                    ));
                }
                host_location(sys::cudaMemLocationType::cudaMemLocationTypeHost, 0)
            }
            HostLocation::Numa(node) => host_location(sys::cudaMemLocationType::cudaMemLocationTypeHostNuma, node),
            HostLocation::NearDevice => {
                let node = device.attribute(sys::cudaDeviceAttr::cudaDevAttrHostNumaId)?;
                if node < 0 {
                    return Err(Error::usage_static(
                        UsageKind::NotSupported,
                        CALL,
                        "the device reports no host NUMA node (cudaDevAttrHostNumaId < 0): use HostLocation::Any",
                    ));
                }
                host_location(sys::cudaMemLocationType::cudaMemLocationTypeHostNuma, node)
            }
        };
        let mut props = sys::mem_pool_props(
            sys::cudaMemAllocationType::cudaMemAllocationTypePinned,
            sys::cudaMemAllocationHandleType::cudaMemHandleTypeNone,
            location,
        );
        props.maxSize = options.max_size;
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `props` is initialised; `raw` is writable.
        cuda_call!(unsafe { sys::cudaMemPoolCreate(&mut raw, &props) })?;
        // SAFETY: a pool just made, owned by the value returned, which destroys it on drop.
        let pool =
            unsafe { MemPoolRef::from_raw(raw) }.ok_or_else(|| crate::error::null_handle("cudaMemPoolCreate"))?;
        // Owned from here: an error below destroys it.
        let pool = HostPool { pool };
        pool.as_pool().set_release_threshold(options.release_threshold)?;
        if options.device_access != PoolAccess::None {
            pool.as_pool().set_access(device, options.device_access)?;
        }
        Ok(pool)
    }

    /// The borrowed handle: attributes, usage, access for more devices ([`MemPoolRef::set_access`]).
    #[inline(always)]
    pub fn as_pool(&self) -> MemPoolRef<'_> {
        self.pool
    }

    /// The raw handle, still owned by this value.
    #[inline(always)]
    pub fn as_raw(&self) -> sys::cudaMemPool_t {
        self.pool.as_raw()
    }
}

impl Drop for HostPool {
    fn drop(&mut self) {
        // SAFETY: our pool, destroyed once, here; CUDA defers the release until its buffers are
        // freed.
        let code = unsafe { sys::cudaMemPoolDestroy(self.pool.as_raw()) };
        crate::error::record_drop_error(code, "cudaMemPoolDestroy");
    }
}

fn host_location(type_: sys::cudaMemLocationType, id: i32) -> sys::cudaMemLocation {
    sys::mem_location(type_, id)
}

/// `len` elements of page-locked host memory from a [`HostPool`], allocated on a stream
/// (`cudaMallocFromPoolAsync`) and freed on it when dropped (`cudaFreeAsync`, after the work
/// queued there). Borrows its stream (`'s`). See the [module documentation](self) for the CPU's
/// access.
#[derive(Debug)]
pub struct HostPoolBuffer<'s, T: DeviceCopy> {
    ptr: NonNull<T>,
    len: usize,
    stream: StreamRef<'s>,
}

// SAFETY: owned host memory, like Vec<T>; the stream handle is Send + Sync.
unsafe impl<T: DeviceCopy + Send> Send for HostPoolBuffer<'_, T> {}
// SAFETY: `&HostPoolBuffer` hands out shared views and (after a synchronise) `&[T]` only.
unsafe impl<T: DeviceCopy + Sync> Sync for HostPoolBuffer<'_, T> {}

impl<'s, T: DeviceCopy> HostPoolBuffer<'s, T> {
    /// `len` elements from `pool`, on `stream` (`cudaMallocFromPoolAsync`): one driver call, no
    /// heap allocation, no lock. Zero `len` or a byte size that overflows is a usage error.
    /// Capture as for [`DeviceBuffer::alloc_async`](super::DeviceBuffer::alloc_async).
    #[inline]
    pub fn alloc_async(len: usize, pool: &HostPool, stream: StreamRef<'s>) -> Result<Self> {
        let bytes = byte_len::<T>(len, "HostPoolBuffer::alloc_async")?;
        let mut ptr: *mut c_void = core::ptr::null_mut();
        // SAFETY: `ptr` is writable; pool and stream are live.
        cuda_call!(unsafe { sys::cudaMallocFromPoolAsync(&mut ptr, bytes, pool.as_raw(), stream.as_raw()) })?;
        NonNull::new(ptr.cast::<T>())
            .map(|ptr| HostPoolBuffer { ptr, len, stream })
            .ok_or_else(|| crate::error::null_handle("cudaMallocFromPoolAsync"))
    }

    /// `len` zeroed elements: [`alloc_async`](Self::alloc_async), then `cudaMemsetAsync` on
    /// `stream`. The device writes the zeros, so the pool must grant the stream's device read and
    /// write access (a usage error otherwise, before anything is allocated).
    pub fn zeroed_async(len: usize, pool: &HostPool, stream: StreamRef<'s>) -> Result<Self> {
        let device = stream.device_or_current()?;
        if pool.as_pool().access(device)? != PoolAccess::ReadWrite {
            return Err(Error::invalid(
                "HostPoolBuffer::zeroed_async",
                "the pool does not grant the stream's device read-write access (HostPoolOptions::device_access)",
            ));
        }
        let buf = Self::alloc_async(len, pool, stream)?;
        // SAFETY: our allocation, ordered after it on its stream; the device may write it.
        cuda_call!(unsafe { sys::cudaMemsetAsync(buf.ptr.as_ptr().cast(), 0, buf.byte_len(), stream.as_raw()) })?;
        Ok(buf)
    }

    super::accessors::len_methods!(
        is_empty: "Always false: a buffer has at least one element.",
        byte_len: "Size in bytes."
    );

    /// The stream the buffer was allocated on and is freed on.
    #[inline(always)]
    pub fn stream(&self) -> StreamRef<'s> {
        self.stream
    }

    /// The host address, for code that calls CUDA itself.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// The elements for the CPU, once the buffer's stream has finished its queued work
    /// (`cudaStreamSynchronize`: blocking, by name), so that no queued copy writes them and the
    /// allocation has happened. A capturing stream is refused with a usage error, before
    /// anything is waited for.
    pub fn host_blocking(&self) -> Result<&[T]> {
        self.ready_for_host("HostPoolBuffer::host_blocking")?;
        // SAFETY: `len` elements of our allocation, reached by the stream (synchronised); shared
        // for the borrow (views that write need `&mut self`).
        Ok(unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) })
    }

    /// The elements for the CPU to write, as [`host_blocking`](Self::host_blocking).
    pub fn host_mut_blocking(&mut self) -> Result<&mut [T]> {
        self.ready_for_host("HostPoolBuffer::host_mut_blocking")?;
        // SAFETY: as above, borrowed exclusively.
        Ok(unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) })
    }

    fn ready_for_host(&self, call: &'static str) -> Result<()> {
        if self.stream.is_capturing()? {
            return Err(Error::invalid(
                call,
                "the stream is capturing: the allocation exists only inside the graph being captured",
            ));
        }
        self.stream.synchronize()
    }

    /// Frees the buffer on its stream, reporting the result (`Drop` keeps it for
    /// [`take_drop_errors`](crate::error::take_drop_errors) instead).
    pub fn free_async(self) -> Result<()> {
        let (ptr, stream) = (self.ptr.as_ptr(), self.stream);
        core::mem::forget(self);
        // SAFETY: our allocation, given up here; freed in the order of its stream.
        cuda_call!(unsafe { sys::cudaFreeAsync(ptr.cast(), stream.as_raw()) })
    }

    super::accessors::pinned_views!();
}

impl<T: DeviceCopy> Drop for HostPoolBuffer<'_, T> {
    fn drop(&mut self) {
        // SAFETY: our allocation; the free is ordered after the stream's work.
        let code = unsafe { sys::cudaFreeAsync(self.ptr.as_ptr().cast(), self.stream.as_raw()) };
        crate::error::record_drop_error(code, "cudaFreeAsync");
    }
}
