//! Devices: count, current device, attributes (through `cudaDeviceGetAttribute`, which has one form
//! in CUDA 12 and 13), versions, and peer access.

use crate::error::{Error, Result, UsageKind};
use core::ffi::c_int;
use ordo_cuda_sys as sys;
use sys::cudaDeviceAttr as Attr;

/// A CUDA device, by ordinal. Plain data: making one does not touch the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Device(c_int);

static_assertions::assert_eq_size!(Device, c_int);

/// How many CUDA devices this process sees (`cudaGetDeviceCount`). With no driver this is
/// `Err` with `cudaErrorInsufficientDriver` (or `cudaErrorNoDevice`).
pub fn count() -> Result<usize> {
    let mut n: c_int = 0;
    // SAFETY: `n` is writable.
    cuda_call!(unsafe { sys::cudaGetDeviceCount(&mut n) })?;
    Ok(n.max(0) as usize)
}

/// The CUDA runtime version this program runs with (`cudaRuntimeGetVersion`), e.g. 13000.
pub fn runtime_version() -> Result<u32> {
    let mut v: c_int = 0;
    // SAFETY: `v` is writable.
    cuda_call!(unsafe { sys::cudaRuntimeGetVersion(&mut v) })?;
    Ok(v as u32)
}

/// The newest CUDA version the installed driver supports (`cudaDriverGetVersion`); 0 when there is
/// no driver.
pub fn driver_version() -> Result<u32> {
    let mut v: c_int = 0;
    // SAFETY: `v` is writable.
    cuda_call!(unsafe { sys::cudaDriverGetVersion(&mut v) })?;
    Ok(v as u32)
}

/// A device's name, held inline (no allocation).
#[derive(Clone, Copy)]
pub struct DeviceName {
    bytes: [u8; 256],
}

impl DeviceName {
    /// The name as text (up to the first NUL; lossy bytes become "?").
    pub fn as_str(&self) -> &str {
        let end = self.bytes.iter().position(|&b| b == 0).unwrap_or(self.bytes.len());
        core::str::from_utf8(&self.bytes[..end]).unwrap_or("?")
    }
}

impl core::fmt::Debug for DeviceName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl core::fmt::Display for DeviceName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Device {
    /// Device `ordinal`, checked against [`count`].
    pub fn new(ordinal: usize) -> Result<Device> {
        let n = count()?;
        if ordinal >= n {
            return Err(Error::invalid("Device::new", "device ordinal is not below the device count"));
        }
        Ok(Device(ordinal as c_int))
    }

    /// Device `ordinal`, unchecked: a bad ordinal fails at the first call that uses it
    /// (`cudaErrorInvalidDevice`), which is safe.
    #[inline]
    pub const fn from_ordinal(ordinal: c_int) -> Device {
        Device(ordinal)
    }

    /// The ordinal.
    #[inline]
    pub const fn ordinal(self) -> c_int {
        self.0
    }

    /// The calling thread's current device (`cudaGetDevice`).
    pub fn current() -> Result<Device> {
        let mut d: c_int = 0;
        // SAFETY: `d` is writable.
        cuda_call!(unsafe { sys::cudaGetDevice(&mut d) })?;
        Ok(Device(d))
    }

    /// Makes this the calling thread's current device (`cudaSetDevice`). Streams, events and
    /// allocations made afterwards on this thread belong to it.
    pub fn set_current(self) -> Result<()> {
        // SAFETY: plain value.
        cuda_call!(unsafe { sys::cudaSetDevice(self.0) })
    }

    /// Runs `f` with this device current, then restores the previous current device, on every
    /// path out: a return, an error, or a panic unwinding through `f` (a guard restores it; a
    /// failure to restore while unwinding is kept for
    /// [`take_drop_errors`](crate::error::take_drop_errors)). Does not call `cudaSetDevice` when
    /// this device is already current. A failure to restore after `f` returned is this call's
    /// error, ahead of `f`'s.
    pub fn with_current<R>(self, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let previous = Device::current()?;
        if previous == self {
            return f();
        }
        self.set_current()?;
        let guard = RestoreDevice(previous);
        let r = f();
        core::mem::forget(guard);
        previous.set_current()?;
        r
    }

    /// An attribute (`cudaDeviceGetAttribute`).
    pub fn attribute(self, attr: sys::cudaDeviceAttr) -> Result<i32> {
        let mut v: c_int = 0;
        // SAFETY: `v` is writable.
        cuda_call!(unsafe { sys::cudaDeviceGetAttribute(&mut v, attr, self.0) })?;
        Ok(v)
    }

    /// The device's name (`cudaGetDeviceProperties`).
    pub fn name(self) -> Result<DeviceName> {
        let mut prop = sys::cudaDeviceProp::default();
        // SAFETY: `prop` is writable and of the layout of the headers bound against.
        cuda_call!(unsafe { sys::compat::cudaGetDeviceProperties(&mut prop, self.0) })?;
        let mut bytes = [0u8; 256];
        for (b, c) in bytes.iter_mut().zip(prop.name.iter()) {
            *b = *c as u8;
        }
        Ok(DeviceName { bytes })
    }

    /// `(major, minor)` compute capability, e.g. (9, 0) for Hopper.
    pub fn compute_capability(self) -> Result<(u32, u32)> {
        let major = self.attribute(Attr::cudaDevAttrComputeCapabilityMajor)?;
        let minor = self.attribute(Attr::cudaDevAttrComputeCapabilityMinor)?;
        Ok((major as u32, minor as u32))
    }

    /// The device memory that graph allocations (captured `cudaMallocAsync`, memory nodes) hold on
    /// this device (`cudaDeviceGetGraphMemAttribute`): in use and reserved, now and at the high
    /// watermark since the last [`reset_graph_mem_high`](Self::reset_graph_mem_high).
    pub fn graph_mem_usage(self) -> Result<GraphMemUsage> {
        type A = sys::cudaGraphMemAttributeType;
        let get = |attr: A| -> Result<u64> {
            let mut v: u64 = 0;
            // SAFETY: these four attributes are 64-bit values; `v` is writable.
            cuda_call!(unsafe {
                sys::cudaDeviceGetGraphMemAttribute(self.0, attr, core::ptr::addr_of_mut!(v).cast())
            })?;
            Ok(v)
        };
        Ok(GraphMemUsage {
            used: get(A::cudaGraphMemAttrUsedMemCurrent)?,
            used_high: get(A::cudaGraphMemAttrUsedMemHigh)?,
            reserved: get(A::cudaGraphMemAttrReservedMemCurrent)?,
            reserved_high: get(A::cudaGraphMemAttrReservedMemHigh)?,
        })
    }

    /// Resets the high watermarks of [`graph_mem_usage`](Self::graph_mem_usage) to the current
    /// values (`cudaDeviceSetGraphMemAttribute` with 0).
    pub fn reset_graph_mem_high(self) -> Result<()> {
        type A = sys::cudaGraphMemAttributeType;
        for attr in [A::cudaGraphMemAttrUsedMemHigh, A::cudaGraphMemAttrReservedMemHigh] {
            let mut zero: u64 = 0;
            // SAFETY: 64-bit attributes that accept 0 (a reset); `zero` is readable.
            cuda_call!(unsafe {
                sys::cudaDeviceSetGraphMemAttribute(self.0, attr, core::ptr::addr_of_mut!(zero).cast())
            })?;
        }
        Ok(())
    }

    /// Returns the memory that graph allocations reserved but do not use to the OS
    /// (`cudaDeviceGraphMemTrim`).
    pub fn trim_graph_mem(self) -> Result<()> {
        // SAFETY: a device ordinal.
        cuda_call!(unsafe { sys::cudaDeviceGraphMemTrim(self.0) })
    }

    /// Number of streaming multiprocessors.
    pub fn sm_count(self) -> Result<u32> {
        Ok(self.attribute(Attr::cudaDevAttrMultiProcessorCount)? as u32)
    }

    /// Number of asynchronous copy engines (`asyncEngineCount`): 1 means copies in one direction
    /// at a time overlap with compute; 2 or more means a host-to-device and a device-to-host copy
    /// can run at the same time as each other and as compute.
    pub fn async_engine_count(self) -> Result<u32> {
        Ok(self.attribute(Attr::cudaDevAttrAsyncEngineCount)? as u32)
    }

    /// Whether the device can access managed memory concurrently with the CPU
    /// (`concurrentManagedAccess`); prefetching managed memory to the device needs it.
    pub fn concurrent_managed_access(self) -> Result<bool> {
        Ok(self.attribute(Attr::cudaDevAttrConcurrentManagedAccess)? != 0)
    }

    /// Whether the device supports stream-ordered allocation pools (`cudaMallocAsync`).
    pub fn memory_pools_supported(self) -> Result<bool> {
        Ok(self.attribute(Attr::cudaDevAttrMemoryPoolsSupported)? != 0)
    }

    /// Largest dynamic shared memory a block may opt in to (`cudaDevAttrMaxSharedMemoryPerBlockOptin`).
    pub fn max_shared_memory_per_block_optin(self) -> Result<u32> {
        Ok(self.attribute(Attr::cudaDevAttrMaxSharedMemoryPerBlockOptin)? as u32)
    }

    /// The stream priority range `(least, greatest)` (`cudaDeviceGetStreamPriorityRange`). Lower
    /// numbers are higher priorities: on an H200 it is `(0, -5)`.
    pub fn stream_priority_range(self) -> Result<(i32, i32)> {
        self.with_current(|| {
            let (mut least, mut greatest) = (0, 0);
            // SAFETY: both are writable.
            cuda_call!(unsafe { sys::cudaDeviceGetStreamPriorityRange(&mut least, &mut greatest) })?;
            Ok((least, greatest))
        })
    }

    /// Whether this device can access `peer`'s memory directly (`cudaDeviceCanAccessPeer`).
    pub fn can_access_peer(self, peer: Device) -> Result<bool> {
        let mut v: c_int = 0;
        // SAFETY: `v` is writable.
        cuda_call!(unsafe { sys::cudaDeviceCanAccessPeer(&mut v, self.0, peer.0) })?;
        Ok(v != 0)
    }

    /// Lets kernels on this device access `peer`'s memory (`cudaDeviceEnablePeerAccess`). A clear
    /// error where it is not possible (same device, or no peer path); already enabled is `Ok`.
    pub fn enable_peer_access(self, peer: Device) -> Result<()> {
        if self == peer {
            return Err(Error::invalid("Device::enable_peer_access", "a device is not its own peer"));
        }
        if !self.can_access_peer(peer)? {
            return Err(Error::usage(
                UsageKind::NotSupported,
                "Device::enable_peer_access",
                "cudaDeviceCanAccessPeer says these devices cannot access each other's memory",
            ));
        }
        self.with_current(|| {
            // SAFETY: plain values.
            let status = cuda_call!(
                unsafe { sys::cudaDeviceEnablePeerAccess(peer.0, 0) },
                answers: cudaErrorPeerAccessAlreadyEnabled
            )?;
            if status == sys::cudaError::cudaErrorPeerAccessAlreadyEnabled {
                // Clear the error the runtime also keeps in its last-error slot.
                // SAFETY: no arguments.
                unsafe { sys::cudaGetLastError() };
            }
            Ok(())
        })
    }
}

/// Makes its device current again when dropped: [`Device::with_current`]'s restore on unwind.
struct RestoreDevice(Device);

impl Drop for RestoreDevice {
    fn drop(&mut self) {
        // SAFETY: plain value.
        let code = unsafe { sys::cudaSetDevice(self.0 .0) };
        crate::error::record_drop_error(code, "cudaSetDevice");
    }
}

/// What [`Device::graph_mem_usage`] reports, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GraphMemUsage {
    /// In use by graph allocations now.
    pub used: u64,
    /// The most in use since the last reset.
    pub used_high: u64,
    /// Reserved for graph allocations now (in use or cached).
    pub reserved: u64,
    /// The most reserved since the last reset.
    pub reserved_high: u64,
}
