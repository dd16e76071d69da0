//! Stream-ordered allocation pools (`cudaMemPool_t`): the device's default pool and new pools.
//!
//! A pool keeps freed memory for reuse: after warm-up, `cudaMallocAsync` + `cudaFreeAsync` of a
//! size seen before costs well under a microsecond (a hundredth of `cudaMalloc` + `cudaFree`:
//! `docs/cuda-behaviours.md`, CB-12), because the memory does not go back to the driver.
//!
//! # The release threshold
//! A pool hands the memory it holds beyond its release threshold back to the driver at every
//! synchronisation (a stream, event or device synchronise), and the next allocation maps it
//! again. The device's default pool has threshold 0: it keeps nothing. So a loop of allocate,
//! work, free, synchronise on the default pool remaps its memory at every iteration, a hundred
//! microseconds where a pool whose threshold is `u64::MAX` takes a few (`docs/cuda-behaviours.md`,
//! CB-12). Raise the threshold of a pool you allocate from in such a loop:
//! [`MemPoolRef::set_release_threshold`] on any pool (the default pool belongs to the whole
//! process: change it only in code that owns the process), or make a pool of your own with
//! [`MemPool::builder`]. ordo's own temporaries come from a pool of ordo's with a threshold
//! ([`temporaries`](super::temporaries)); the device's pools are left as they are.
//!
//! # Peer access
//! Memory of a pool is reachable from the pool's own device only, until the pool grants another
//! device access ([`MemPoolRef::set_access`], `cudaMemPoolSetAccess`). `cudaDeviceEnablePeerAccess`
//! does not reach pool memory: a peer copy of `cudaMallocAsync` memory without the grant still
//! works but takes the staged path through the host, about ten times slower than NVLink
//! (`docs/cuda-behaviours.md`, CB-13). [`Device::enable_peer_access_with_pools`]
//! does both for the common case.

use crate::device::Device;
use crate::error::Result;
use core::ffi::c_void;
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// A borrowed pool (the device's default pool, or one owned elsewhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct MemPoolRef<'a> {
    raw: NonNull<sys::CUmemPoolHandle_st>,
    _pool: PhantomData<&'a sys::CUmemPoolHandle_st>,
}

static_assertions::assert_eq_size!(MemPoolRef<'static>, sys::cudaMemPool_t);

// SAFETY: pools are usable from any thread.
unsafe impl Send for MemPoolRef<'_> {}
// SAFETY: as above.
unsafe impl Sync for MemPoolRef<'_> {}

owned_handle! {
    /// An owned pool, destroyed on drop (`cudaMemPoolDestroy`; CUDA defers it until outstanding
    /// allocations are freed; a failure is kept for [`take_drop_errors`](crate::error::take_drop_errors)).
    #[derive(Debug)]
    pub struct MemPool(sys::CUmemPoolHandle_st) = sys::cudaMemPool_t, destroyed by cudaMemPoolDestroy;
}

// SAFETY: pools are usable from any thread.
unsafe impl Send for MemPool {}
// SAFETY: as above.
unsafe impl Sync for MemPool {}

/// What a device may do with a pool's memory (`cudaMemAccessFlags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolAccess {
    /// No access (`cudaMemAccessFlagsProtNone`).
    None,
    /// Read only (`cudaMemAccessFlagsProtRead`; CUDA refuses it for pools of device memory).
    Read,
    /// Read and write (`cudaMemAccessFlagsProtReadWrite`).
    ReadWrite,
}

impl PoolAccess {
    /// CUDA's flags.
    #[inline]
    pub const fn to_raw(self) -> sys::cudaMemAccessFlags {
        match self {
            PoolAccess::None => sys::cudaMemAccessFlags::cudaMemAccessFlagsProtNone,
            PoolAccess::Read => sys::cudaMemAccessFlags::cudaMemAccessFlagsProtRead,
            PoolAccess::ReadWrite => sys::cudaMemAccessFlags::cudaMemAccessFlagsProtReadWrite,
        }
    }

    /// The access CUDA's flags name, `None` for a value CUDA does not define.
    #[inline]
    pub fn from_raw(flags: sys::cudaMemAccessFlags) -> Option<PoolAccess> {
        [PoolAccess::None, PoolAccess::Read, PoolAccess::ReadWrite].into_iter().find(|a| a.to_raw() == flags)
    }
}

fn device_location(device: Device) -> sys::cudaMemLocation {
    sys::mem_location(sys::cudaMemLocationType::cudaMemLocationTypeDevice, device.ordinal())
}

impl MemPool {
    /// The device's current pool, the one `cudaMallocAsync` (and so [`DeviceBuffer::alloc_async`](crate::DeviceBuffer::alloc_async))
    /// allocates from on that device (`cudaDeviceGetMemPool`): the default pool unless
    /// `cudaDeviceSetMemPool` chose another. Only the raw handle: a pool set by other code lives as
    /// long as that code keeps it.
    pub fn device_current_raw(device: Device) -> Result<sys::cudaMemPool_t> {
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaDeviceGetMemPool(&mut raw, device.ordinal()) })?;
        if raw.is_null() {
            return Err(crate::error::null_handle("cudaDeviceGetMemPool"));
        }
        Ok(raw)
    }

    /// The device's default pool, the one plain `cudaMallocAsync` uses (`cudaDeviceGetDefaultMemPool`).
    pub fn device_default(device: Device) -> Result<MemPoolRef<'static>> {
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `raw` is writable.
        cuda_call!(unsafe { sys::cudaDeviceGetDefaultMemPool(&mut raw, device.ordinal()) })?;
        // SAFETY: the default pool lives as long as the device's context.
        unsafe { MemPoolRef::from_raw(raw) }.ok_or_else(|| crate::error::null_handle("cudaDeviceGetDefaultMemPool"))
    }

    /// A new pool of device memory on `device` (`cudaMemPoolCreate`), with CUDA's defaults
    /// (release threshold 0: see [`MemPoolRef::set_release_threshold`]). [`MemPool::builder`]
    /// sets more.
    pub fn new(device: Device) -> Result<MemPool> {
        MemPool::builder(device).build()
    }

    /// A builder for a new pool of device memory on `device`: release threshold, maximum size and
    /// reuse policy set at creation.
    ///
    /// ```no_run
    /// # fn main() -> ordo_cuda_core::Result<()> {
    /// use ordo_cuda_core::{Device, MemPool};
    /// // Keeps up to 1 GiB across synchronisations: allocations of that much in a loop stay mapped.
    /// let pool = MemPool::builder(Device::current()?).release_threshold(1 << 30).build()?;
    /// # Ok(()) }
    /// ```
    pub const fn builder(device: Device) -> MemPoolBuilder {
        MemPoolBuilder { device, release_threshold: None, max_size: 0, internal_dependencies: None }
    }

    /// The borrowed handle.
    #[inline(always)]
    pub fn as_pool(&self) -> MemPoolRef<'_> {
        MemPoolRef { raw: self.raw, _pool: PhantomData }
    }
}

/// How [`MemPool::builder`] makes a pool: `cudaMemPoolCreate` with the builder's properties, then
/// the attributes it sets. Unset, each is CUDA's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemPoolBuilder {
    device: Device,
    release_threshold: Option<u64>,
    max_size: usize,
    internal_dependencies: Option<bool>,
}

impl MemPoolBuilder {
    /// Bytes the pool keeps reserved across synchronisations (`cudaMemPoolAttrReleaseThreshold`;
    /// CUDA's default 0 keeps nothing, `u64::MAX` everything): see
    /// [`MemPoolRef::set_release_threshold`] for what it costs to keep too little.
    pub const fn release_threshold(mut self, bytes: u64) -> MemPoolBuilder {
        self.release_threshold = Some(bytes);
        self
    }

    /// The most bytes the pool may reserve (`cudaMemPoolProps::maxSize`): an allocation that would
    /// take it past this fails with `cudaErrorMemoryAllocation`. 0 (the default): no limit but
    /// the device's.
    pub const fn max_size(mut self, bytes: usize) -> MemPoolBuilder {
        self.max_size = bytes;
        self
    }

    /// Whether an allocation on one stream may make that stream wait for another stream's pending
    /// free in order to reuse its memory (`cudaMemPoolReuseAllowInternalDependencies`; CUDA's
    /// default: allowed). Refused, a pool shared by unrelated streams never adds a wait between
    /// them; it maps more memory instead when the only free memory is still pending elsewhere.
    pub const fn internal_dependencies(mut self, allow: bool) -> MemPoolBuilder {
        self.internal_dependencies = Some(allow);
        self
    }

    /// The device the pool will belong to.
    pub const fn device(&self) -> Device {
        self.device
    }

    /// The properties `cudaMemPoolCreate` gets: pinned device memory of the builder's device, no
    /// export handle type, the maximum size. A capture takes an allocation node's properties from
    /// the pool's; ordo's GPU tests capture allocations from pools made so.
    pub fn props(&self) -> sys::cudaMemPoolProps {
        let mut props = sys::mem_pool_props(
            sys::cudaMemAllocationType::cudaMemAllocationTypePinned,
            sys::cudaMemAllocationHandleType::cudaMemHandleTypeNone,
            device_location(self.device),
        );
        props.maxSize = self.max_size;
        props
    }

    /// Creates the pool (`cudaMemPoolCreate`), then sets the attributes asked for; a failure of
    /// either destroys what was made and is returned.
    pub fn build(self) -> Result<MemPool> {
        let props = self.props();
        let mut raw: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `props` is initialised; `raw` is writable.
        cuda_call!(unsafe { sys::cudaMemPoolCreate(&mut raw, &props) })?;
        let pool = NonNull::new(raw)
            .map(|raw| MemPool { raw })
            .ok_or_else(|| crate::error::null_handle("cudaMemPoolCreate"))?;
        if let Some(bytes) = self.release_threshold {
            pool.as_pool().set_release_threshold(bytes)?;
        }
        if let Some(allow) = self.internal_dependencies {
            pool.as_pool().set_internal_dependencies(allow)?;
        }
        Ok(pool)
    }
}

impl<'a> MemPoolRef<'a> {
    /// Borrows a raw pool.
    ///
    /// # Safety
    /// `raw` is a live pool for `'a`; `None` for null.
    pub unsafe fn from_raw(raw: sys::cudaMemPool_t) -> Option<MemPoolRef<'a>> {
        NonNull::new(raw).map(|raw| MemPoolRef { raw, _pool: PhantomData })
    }

    /// The raw handle.
    #[inline(always)]
    pub fn as_raw(self) -> sys::cudaMemPool_t {
        self.raw.as_ptr()
    }

    fn set_u64(self, attr: sys::cudaMemPoolAttr, mut value: u64) -> Result<()> {
        // SAFETY: a live pool; this attribute takes a cuuint64_t.
        cuda_call!(unsafe {
            sys::cudaMemPoolSetAttribute(self.as_raw(), attr, (&mut value as *mut u64).cast::<c_void>())
        })
    }

    fn get_u64(self, attr: sys::cudaMemPoolAttr) -> Result<u64> {
        let mut value = 0u64;
        // SAFETY: a live pool; this attribute is a cuuint64_t.
        cuda_call!(unsafe {
            sys::cudaMemPoolGetAttribute(self.as_raw(), attr, (&mut value as *mut u64).cast::<c_void>())
        })?;
        Ok(value)
    }

    /// Bytes the pool keeps reserved across synchronisations instead of returning them to the OS
    /// (`cudaMemPoolAttrReleaseThreshold`). `u64::MAX` keeps everything.
    ///
    /// At every synchronisation (of a stream, an event or the device) a pool hands what it holds
    /// beyond this threshold back to the driver, and the next allocation maps it again. The
    /// device's default pool has threshold 0, so a loop of allocate, work, free, synchronise on it
    /// remaps its memory at every iteration, a hundred microseconds where a pool whose threshold is
    /// `u64::MAX` takes a few (`docs/cuda-behaviours.md`, CB-12). The default pool
    /// ([`MemPool::device_default`]) belongs to the whole process: raise its threshold in code that
    /// owns the process, or allocate from a pool of your own ([`MemPool::builder`],
    /// [`DeviceBuffer::alloc_from_pool_async`](crate::DeviceBuffer::alloc_from_pool_async)).
    /// Memory kept is reserved for the pool's allocations only: [`trim_to`](Self::trim_to) returns
    /// it.
    pub fn set_release_threshold(self, bytes: u64) -> Result<()> {
        self.set_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrReleaseThreshold, bytes)
    }

    /// The release threshold.
    pub fn release_threshold(self) -> Result<u64> {
        self.get_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrReleaseThreshold)
    }

    /// Bytes of device memory the pool holds from the driver (`cudaMemPoolAttrReservedMemCurrent`).
    pub fn reserved_bytes(self) -> Result<u64> {
        self.get_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrReservedMemCurrent)
    }

    /// Bytes handed out to allocations now (`cudaMemPoolAttrUsedMemCurrent`).
    pub fn used_bytes(self) -> Result<u64> {
        self.get_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrUsedMemCurrent)
    }

    /// The most bytes the pool has held from the driver since it was made
    /// (`cudaMemPoolAttrReservedMemHigh`).
    pub fn reserved_high_bytes(self) -> Result<u64> {
        self.get_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrReservedMemHigh)
    }

    /// The most bytes handed out at once since the pool was made (`cudaMemPoolAttrUsedMemHigh`).
    pub fn used_high_bytes(self) -> Result<u64> {
        self.get_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrUsedMemHigh)
    }

    /// Resets both high watermarks ([`reserved_high_bytes`](Self::reserved_high_bytes),
    /// [`used_high_bytes`](Self::used_high_bytes)) to the pool's current figures (CUDA takes 0
    /// for this and no other value).
    pub fn reset_high_watermarks(self) -> Result<()> {
        self.set_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrReservedMemHigh, 0)?;
        self.set_u64(sys::cudaMemPoolAttr::cudaMemPoolAttrUsedMemHigh, 0)
    }

    /// Whether an allocation may make its stream wait for another stream's pending free to reuse
    /// its memory (`cudaMemPoolReuseAllowInternalDependencies`; see
    /// [`MemPoolBuilder::internal_dependencies`]).
    pub fn set_internal_dependencies(self, allow: bool) -> Result<()> {
        let mut value = core::ffi::c_int::from(allow);
        // SAFETY: a live pool; this attribute takes an int.
        cuda_call!(unsafe {
            sys::cudaMemPoolSetAttribute(
                self.as_raw(),
                sys::cudaMemPoolAttr::cudaMemPoolReuseAllowInternalDependencies,
                (&mut value as *mut core::ffi::c_int).cast::<c_void>(),
            )
        })
    }

    /// Whether allocations may wait for other streams' pending frees (see
    /// [`set_internal_dependencies`](Self::set_internal_dependencies)).
    pub fn internal_dependencies(self) -> Result<bool> {
        let mut value: core::ffi::c_int = 0;
        // SAFETY: a live pool; this attribute is an int.
        cuda_call!(unsafe {
            sys::cudaMemPoolGetAttribute(
                self.as_raw(),
                sys::cudaMemPoolAttr::cudaMemPoolReuseAllowInternalDependencies,
                (&mut value as *mut core::ffi::c_int).cast::<c_void>(),
            )
        })?;
        Ok(value != 0)
    }

    /// Grants `device` `access` to every allocation of the pool, present and future
    /// (`cudaMemPoolSetAccess`). Grant [`PoolAccess::ReadWrite`] to a peer device so that its
    /// kernels read the pool's memory and peer copies run over NVLink; the devices need peer
    /// capability ([`Device::can_access_peer`]). CUDA refuses [`PoolAccess::Read`] for device
    /// pools, and changes of the pool's own device's access.
    pub fn set_access(self, device: Device, access: PoolAccess) -> Result<()> {
        let desc = sys::cudaMemAccessDesc { location: device_location(device), flags: access.to_raw() };
        // SAFETY: a live pool; one initialised descriptor.
        cuda_call!(unsafe { sys::cudaMemPoolSetAccess(self.as_raw(), &desc, 1) })
    }

    /// The access `device` has to the pool's memory (`cudaMemPoolGetAccess`).
    pub fn access(self, device: Device) -> Result<PoolAccess> {
        let mut flags = sys::cudaMemAccessFlags::cudaMemAccessFlagsProtNone;
        let mut location = device_location(device);
        // SAFETY: a live pool; `flags` and `location` are writable and initialised.
        cuda_call!(unsafe { sys::cudaMemPoolGetAccess(&mut flags, self.as_raw(), &mut location) })?;
        PoolAccess::from_raw(flags).ok_or_else(|| crate::error::null_handle("cudaMemPoolGetAccess"))
    }

    /// Releases unused memory until the pool holds at most `keep_bytes` (`cudaMemPoolTrimTo`).
    pub fn trim_to(self, keep_bytes: usize) -> Result<()> {
        // SAFETY: a live pool.
        cuda_call!(unsafe { sys::cudaMemPoolTrimTo(self.as_raw(), keep_bytes) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_sets_what_cuda_captures_and_the_asked_limits() {
        let b = MemPool::builder(Device::from_ordinal(3));
        assert_eq!(b.device(), Device::from_ordinal(3));
        let p = b.props();
        assert_eq!(p.allocType, sys::cudaMemAllocationType::cudaMemAllocationTypePinned);
        assert_eq!(p.handleTypes, sys::cudaMemAllocationHandleType::cudaMemHandleTypeNone, "no export handle");
        assert_eq!(p.location.type_, sys::cudaMemLocationType::cudaMemLocationTypeDevice);
        // SAFETY: a location made by `sys::mem_location`.
        assert_eq!(unsafe { sys::mem_location_id(&p.location) }, 3);
        assert_eq!(p.maxSize, 0, "no limit unless asked");
        assert!(p.win32SecurityAttributes.is_null());
        let b = b.max_size(1 << 30).release_threshold(u64::MAX).internal_dependencies(false);
        assert_eq!(b.props().maxSize, 1 << 30);
        assert_eq!(b.release_threshold, Some(u64::MAX));
        assert_eq!(b.internal_dependencies, Some(false));
        assert_eq!(MemPool::builder(Device::from_ordinal(0)).release_threshold, None, "CUDA's default unless asked");
    }

    #[test]
    fn without_a_driver_building_fails_with_cudas_error() {
        if crate::device::count().is_ok_and(|n| n > 0) {
            return; // the GPU tests build pools there
        }
        for b in [
            MemPool::builder(Device::from_ordinal(0)),
            MemPool::builder(Device::from_ordinal(0)).release_threshold(1).internal_dependencies(false),
        ] {
            let e = b.build().unwrap_err();
            assert!(e.cuda().is_some_and(|c| c.is_no_driver() && c.call() == "cudaMemPoolCreate"), "{e:?}");
        }
    }
}
