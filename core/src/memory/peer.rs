//! Peer access for the memory of two devices in one call: [`Device::enable_peer_access_with_pools`],
//! here beside the pools it grants (the device module knows no pool).

use crate::device::Device;
use crate::error::Result;

impl Device {
    /// The common case of two devices working on each other's memory, in one call: enables peer
    /// access both ways ([`enable_peer_access`](Device::enable_peer_access) on each), and grants
    /// each device read-write access to the other's current pool (the one `cudaMallocAsync`
    /// allocates from; [`MemPoolRef::set_access`](crate::MemPoolRef::set_access)), to its
    /// default pool where that is another one, and to ordo's pool for temporaries where one exists
    /// (one made later copies the current pool's grants). Without the pool grant, peer copies of
    /// stream-ordered memory ([`DeviceBuffer::alloc_async`](crate::DeviceBuffer::alloc_async)) take
    /// the staged path, about ten times slower than NVLink, and kernels cannot read it at all.
    /// Pools made with [`MemPool::new`](crate::MemPool::new) are the caller's to grant. Calling it
    /// again is harmless. Not for use while a stream captures (peer access is not stream work).
    pub fn enable_peer_access_with_pools(self, peer: Device) -> Result<()> {
        self.enable_peer_access(peer)?;
        peer.enable_peer_access(self)?;
        for (owner, user) in [(self, peer), (peer, self)] {
            let current = crate::MemPool::device_current_raw(owner)?;
            let default = crate::MemPool::device_default(owner)?;
            // SAFETY: the device's current pool is live for this call (CUDA keeps it while it is
            // the current pool; a pool set by other code is that code's to keep meanwhile).
            if let Some(current) = unsafe { crate::MemPoolRef::from_raw(current) } {
                current.set_access(user, crate::PoolAccess::ReadWrite)?;
            }
            if default.as_raw() != current {
                default.set_access(user, crate::PoolAccess::ReadWrite)?;
            }
            #[cfg(feature = "std")]
            if let Some(temporaries) = crate::memory::temporaries::existing(owner)? {
                temporaries.set_access(user, crate::PoolAccess::ReadWrite)?;
            }
        }
        Ok(())
    }
}
