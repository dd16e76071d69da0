//! Memory: device buffers from stream-ordered pools, pinned and registered host memory, managed
//! memory, the typed views that copies take, and the pool ordo's own temporaries come from
//! ([`temporaries`]).
//!
//! The views say by type where memory lives: [`DeviceSlice`]/[`DeviceSliceMut`] for device
//! memory, [`PinnedSlice`]/[`PinnedSliceMut`] for page-locked host memory (only made from a
//! [`PinnedBuffer`], [`RegisteredHost`] or [`HostPoolBuffer`]). Asynchronous copies (one at a
//! time in [`copy`], or batched with [`CopyBatch`]) take pinned views, so pageable memory cannot
//! reach them: `cudaMemcpyAsync` from pageable memory is not asynchronous (it returns only after
//! the copy: `docs/cuda-behaviours.md`, CB-15). Pageable copies have their own, plainly named,
//! blocking functions in [`copy`].

pub(crate) mod accessors;
#[cfg(cuda_12_8)]
pub mod batch;
pub mod copy;
mod device_buffer;
pub mod host_pool;
mod managed;
pub mod order;
mod peer;
mod pinned;
mod pool;
#[cfg(feature = "alloc")]
mod shared_buffer;
mod slice;
#[cfg(feature = "std")]
pub mod temporaries;

#[cfg(cuda_12_8)]
pub use batch::{CopyAttributes, CopyBatch, SourceOrder};
pub use device_buffer::DeviceBuffer;
pub use host_pool::{HostLocation, HostPool, HostPoolBuffer, HostPoolOptions};
pub use managed::{Location, ManagedBuffer, ManagedFlags};
pub use pinned::{HostAllocFlags, HostRegisterFlags, PinnedBuffer, RegisteredHost};
pub use pool::{MemPool, MemPoolBuilder, MemPoolRef, PoolAccess};
#[cfg(feature = "alloc")]
pub use shared_buffer::SharedStreamBuffer;
pub use slice::{DeviceSlice, DeviceSliceMut, PinnedSlice, PinnedSliceMut};

use crate::error::{Error, Result};

/// Plain data that may be copied to and from a device byte for byte: every bit pattern is a valid
/// value and the type holds no pointers the device could not follow.
///
/// # Safety
/// Implement only for `Copy` (and thread-safe) types with no padding-dependent invariants, for which any bit pattern
/// is a valid value (integers, floats, `#[repr(C)]` structs of them, arrays of them).
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: every bit pattern is a valid value.
        unsafe impl DeviceCopy for $t {}
    )* };
}
device_copy!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: arrays of plain data are plain data.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// `len * size_of::<T>()`, refusing zero lengths and overflow with a clear error naming `call`.
#[inline]
pub(crate) fn byte_len<T>(len: usize, call: &'static str) -> Result<usize> {
    if len == 0 {
        return Err(Error::invalid(call, "zero length: CUDA allocations and copies need at least one element"));
    }
    if core::mem::size_of::<T>() == 0 {
        return Err(Error::invalid(call, "zero-sized element type"));
    }
    len.checked_mul(core::mem::size_of::<T>()).ok_or(Error::invalid(call, "length times element size overflows usize"))
}
