//! The pool ordo's temporaries come from: one pool of ordo's per device (and CUDA context), made
//! on first use, that keeps its memory mapped across synchronisations up to a cap.
//!
//! ordo's stream-correct functions allocate their temporaries on the caller's stream (a sum of
//! squares in `gemv_normalize` over 1024 rows, a grayscale frame in the frame filter, a
//! [`Pipeline`](crate::pipeline::Pipeline)'s device buffers when the caller gives none) and free
//! them on it. From the device's default pool that costs a remap at every call: its release
//! threshold is 0, so each synchronise hands its memory back to the driver and the next
//! allocation maps it again: a small call and its synchronise take five times as long as from a
//! pool that keeps its memory (`docs/cuda-behaviours.md`, CB-12). The default pool belongs to the user's
//! process, so ordo does not change it: its temporaries come from a pool of its own instead
//! (as RAPIDS' `cuda_async_memory_resource` makes one), unless the caller names a pool
//! ([`RunOptions::pool`](crate::pipeline::RunOptions::pool), the `_in` forms of the kernels, the
//! C ABI's `_with` forms).
//!
//! # The pool
//! - **Stream-ordered and capturable.** Temporaries are allocated with `cudaMallocFromPoolAsync`
//!   on the caller's stream and freed with `cudaFreeAsync` on it. While the stream captures, CUDA
//!   makes them allocation and free nodes of the caller's graph, served by the device's graph
//!   memory pool whichever pool is named (the nodes take their properties from the pool's:
//!   device memory, no export handle type, as the default pool's). There `gemv_normalize` and
//!   the frame filter name none ([`pool_for`]), as before; a pipeline names its device's pool.
//! - **Capped.** The pool keeps up to an eighth of the device's memory ([`default_keep`], set as
//!   its release threshold) mapped across synchronisations: what ordo's functions needed at
//!   most, up to that cap. Beyond it, the excess is released at the next synchronisation.
//!   Memory the pool keeps serves ordo's temporaries only: [`MemPoolRef::trim_to`] on
//!   [`pool`]`(device)` returns it to the driver, and
//!   [`MemPoolRef::set_release_threshold`] changes the cap (0 keeps nothing, as the default pool).
//! - **No hidden waits between streams.** The pool refuses internal dependencies
//!   ([`MemPoolBuilder::internal_dependencies`](super::MemPoolBuilder::internal_dependencies)):
//!   an allocation on one stream never waits for another stream's pending free. In steady state
//!   each stream reuses what it freed itself (stream order), and what other streams freed once
//!   their frees have completed.
//! - **Peers.** A new pool grants read-write access to every device the device's current pool
//!   grants it to (as [`Device::enable_peer_access_with_pools`] does), so that peer copies of a
//!   temporary (a pipeline's device buffer, say) take the NVLink path as before;
//!   `enable_peer_access_with_pools` also grants it when the pool exists already.
//! - **Made once, looked up without a lock.** The pools live in a list that only grows, one
//!   entry per device and CUDA context, each made under a lock the first time it is asked for
//!   (with the calling thread's capture mode relaxed, so that a first use inside a global-mode
//!   capture neither fails nor invalidates any capture: CUDA refuses a pool's attribute calls
//!   while the thread captures, or while any thread captures in global mode, and invalidates the
//!   capture; the creation is treated alike). Later calls read the list with atomic loads: the
//!   calling thread's current device and context (`cudaGetDevice`, `cuCtxGetCurrent`,
//!   `cuCtxGetId`), then the entry; no heap allocation, no lock.
//! - **After `cudaDeviceReset`.** A reset destroys the device's context; ordo's pool of it may be
//!   gone with it, and its handle must never reach CUDA again. Each entry keeps the unique id of
//!   the context it was made in ([`ContextTag`]), and a call in a new context makes a new pool. The old handle is never touched again (if CUDA kept the pool
//!   through the reset, its memory stays reserved: at most the cap, once per reset).
//!
//! [`Device::enable_peer_access_with_pools`]: crate::Device::enable_peer_access_with_pools

use super::{MemPool, MemPoolRef, PoolAccess};
use crate::capture_state::CaptureStatus;
use crate::context::ContextTag;
use crate::device::Device;
use crate::error::Result;
use crate::stream::StreamRef;
use alloc::boxed::Box;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;
use std::sync::Mutex;

/// The default cap of ordo's pool on a device, as a divisor of the device's memory: an eighth.
pub const KEEP_DIVISOR: u64 = 8;

/// The bytes ordo's pool keeps across synchronisations on a device of `total_bytes` (its release
/// threshold when made): [`KEEP_DIVISOR`]th of the device's memory.
pub const fn default_keep(total_bytes: u64) -> u64 {
    total_bytes / KEEP_DIVISOR
}

/// One pool of ordo's: the device and context it was made in, and its handle. Entries are never
/// freed (nor their pools destroyed), so a reference to one stays valid for the process.
struct Entry {
    context: ContextTag,
    pool: NonNull<sys::CUmemPoolHandle_st>,
    /// The entry pushed before this one; set before the entry is published, never changed.
    next: *const Entry,
}

/// The newest entry. Written only under [`MAKING`]; read without a lock.
static HEAD: AtomicPtr<Entry> = AtomicPtr::new(core::ptr::null_mut());

/// Held while a pool is made and pushed, so that one device and context get one pool.
static MAKING: Mutex<()> = Mutex::new(());

/// The pool made for `context`, if any.
fn find(context: &ContextTag) -> Option<MemPoolRef<'static>> {
    let mut at = HEAD.load(Ordering::Acquire).cast_const();
    // SAFETY: entries are leaked boxes, never freed; `next` was written before the entry was
    // published with a release store, which the acquire load above orders before these reads.
    while let Some(entry) = unsafe { at.as_ref() } {
        if entry.context == *context {
            // SAFETY: a pool of ordo's, never destroyed by ordo (CUDA destroys it only with its
            // context, after which no lookup matches this entry).
            return unsafe { MemPoolRef::from_raw(entry.pool.as_ptr()) };
        }
        at = entry.next;
    }
    None
}

/// The calling thread's context on `device`: its current one when `device` is current, else the
/// one `device` has (made current for the question).
fn context_of(device: Device) -> Result<ContextTag> {
    let here = ContextTag::current()?;
    if here.device == device {
        Ok(here)
    } else {
        ContextTag::of(device)
    }
}

/// ordo's pool for temporaries on `device`, in the device's current context: made on first use
/// (with its release threshold at [`default_keep`] of the device's memory, internal dependencies
/// refused, and the peer access of the device's current pool), then found without a lock. A
/// `cudaDeviceReset` of the device makes the next call make a new one.
///
/// The pool is ordo's: set its release threshold, trim it, grant peers access to it, but do not
/// destroy it (nor make it a device's current pool, which would hand it to every
/// `cudaMallocAsync` of the process). The handle is valid until a `cudaDeviceReset` of the
/// device, as the device's default pool's is ([`MemPool::device_default`]); ask again after one.
pub fn pool(device: Device) -> Result<MemPoolRef<'static>> {
    let context = context_of(device)?;
    match find(&context) {
        Some(pool) => Ok(pool),
        None => make(device),
    }
}

/// The pool a temporary on `stream` comes from, for
/// [`DeviceBuffer::alloc_in_async`](super::DeviceBuffer::alloc_in_async): `given`; else ordo's
/// pool ([`pool`]) of the stream's device; else `None` (`cudaMallocAsync`, which takes the
/// current pool of the stream's device) in the two cases where ordo's pool cannot serve better:
/// - while `stream` captures: the allocation is then a node of the caller's graph, served by the
///   graph memory pool whichever pool is named, and CUDA cannot be asked the stream's device
///   without invalidating the capture (`cudaMallocAsync` finds it);
/// - where the toolkit cannot tell a stream's device (`cudaStreamGetDevice`, CUDA 12.8 and
///   later): a kernel launched on a stream of another device than the current one runs on the
///   stream's device, so the current device's pool could be the wrong one.
///
/// Costs one `cudaStreamGetCaptureInfo` and one `cudaStreamGetDevice` before the lookup of
/// [`pool`].
pub fn pool_for<'p>(given: Option<MemPoolRef<'p>>, stream: StreamRef<'_>) -> Result<Option<MemPoolRef<'p>>> {
    if given.is_some() {
        return Ok(given);
    }
    if stream.capture_status()? != CaptureStatus::None {
        return Ok(None);
    }
    let mut device: core::ffi::c_int = 0;
    // SAFETY: a live stream, not capturing (a query of a capturing stream would invalidate its
    // capture); `device` is writable.
    let status = cuda_call!(
        unsafe { sys::compat::cudaStreamGetDevice(stream.as_raw(), &mut device) },
        answers: cudaErrorNotSupported
    )?;
    if status == sys::cudaError::cudaErrorNotSupported {
        return Ok(None);
    }
    pool(Device::from_ordinal(device)).map(Some)
}

/// ordo's pool of `device` if one was made in its current context (`None` otherwise: nothing is
/// made).
pub fn existing(device: Device) -> Result<Option<MemPoolRef<'static>>> {
    Ok(find(&context_of(device)?))
}

/// Makes (or, when another thread was first, finds) the pool of `device` in its current context.
#[cold]
#[inline(never)]
fn make(device: Device) -> Result<MemPoolRef<'static>> {
    let _relaxed = RelaxedCaptureMode::enter();
    device.with_current(|| {
        let mut context = ContextTag::current()?;
        if context.id.is_none() {
            // A thread that has not used CUDA yet has no current context until the runtime binds
            // the device's primary context, which `cudaSetDevice` does (CUDA 12 and later). Where
            // the driver cannot tell contexts apart, the id stays `None`.
            device.set_current()?;
            context = ContextTag::current()?;
        }
        let _making = crate::sync::lock(&MAKING);
        if let Some(pool) = find(&context) {
            return Ok(pool);
        }
        let pool = new_pool(device)?;
        let raw = pool.into_raw();
        let pool = NonNull::new(raw).ok_or_else(|| crate::error::null_handle("cudaMemPoolCreate"))?;
        let entry = Box::new(Entry { context, pool, next: HEAD.load(Ordering::Acquire) });
        HEAD.store(Box::into_raw(entry), Ordering::Release);
        // SAFETY: the pool just made, kept for the process (see `Entry`).
        unsafe { MemPoolRef::from_raw(raw) }.ok_or_else(|| crate::error::null_handle("cudaMemPoolCreate"))
    })
}

/// A new pool of ordo's on `device` (current): capped at [`default_keep`] of its memory, internal
/// dependencies refused, peers granted as the device's current pool grants them.
fn new_pool(device: Device) -> Result<MemPool> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both are writable; the device is current.
    cuda_call!(unsafe { sys::cudaMemGetInfo(&mut free, &mut total) })?;
    let pool =
        MemPool::builder(device).release_threshold(default_keep(total as u64)).internal_dependencies(false).build()?;
    let current = MemPool::device_current_raw(device)?;
    // SAFETY: the device's current pool is live for this call (CUDA keeps it while it is current;
    // one set by other code is that code's to keep meanwhile).
    if let Some(current) = unsafe { MemPoolRef::from_raw(current) } {
        for peer in 0..crate::device::count()? {
            let peer = Device::from_ordinal(peer as core::ffi::c_int);
            if peer != device && device.can_access_peer(peer)? && current.access(peer)? == PoolAccess::ReadWrite {
                pool.as_pool().set_access(peer, PoolAccess::ReadWrite)?;
            }
        }
    }
    Ok(pool)
}

/// The calling thread's stream-capture mode relaxed while the guard lives
/// (`cudaThreadExchangeStreamCaptureMode`), restored when it drops: CUDA then lets this thread
/// make capture-unsafe calls (a pool's creation and attributes) while any stream captures,
/// without failing them or invalidating the capture. Where the exchange fails (no driver) nothing
/// is changed.
struct RelaxedCaptureMode(Option<sys::cudaStreamCaptureMode>);

impl RelaxedCaptureMode {
    fn enter() -> RelaxedCaptureMode {
        let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
        // SAFETY: `mode` is writable; the call swaps a per-thread setting.
        let code = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
        RelaxedCaptureMode((code == sys::cudaError::cudaSuccess).then_some(mode))
    }
}

impl Drop for RelaxedCaptureMode {
    fn drop(&mut self) {
        if let Some(mut mode) = self.0 {
            // SAFETY: puts back the mode the exchange returned.
            let code = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
            crate::error::record_drop_error(code, "cudaThreadExchangeStreamCaptureMode");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver_present() -> bool {
        crate::device::count().is_ok_and(|n| n > 0)
    }

    #[test]
    fn the_default_cap_is_an_eighth_of_the_device() {
        assert_eq!(default_keep(141 << 30), (141u64 << 30) / 8);
        assert_eq!(default_keep(8 << 30), 1 << 30);
        assert_eq!(default_keep(7), 0);
        assert_eq!(default_keep(u64::MAX), u64::MAX / 8);
    }

    #[test]
    fn without_a_driver_no_pool_is_made_or_kept() {
        if driver_present() {
            return; // the GPU tests make and check pools there
        }
        for _ in 0..2 {
            let e = pool(Device::from_ordinal(0)).unwrap_err();
            let c = e.cuda().unwrap_or_else(|| panic!("expected a CUDA error, got {e:?}"));
            assert!(c.is_no_driver(), "{c:?}");
            let e = existing(Device::from_ordinal(0)).unwrap_err();
            assert!(e.cuda().is_some_and(|c| c.is_no_driver()), "{e:?}");
        }
        // SAFETY: used on this thread only, with the current device unchanged; the call fails
        // before anything is enqueued.
        let s = unsafe { StreamRef::per_thread_default() };
        assert!(pool_for(None, s).unwrap_err().cuda().is_some_and(|c| c.is_no_driver()));
        assert!(HEAD.load(Ordering::Acquire).is_null(), "a failed first use leaves no entry behind");
    }

    #[test]
    fn a_given_pool_is_used_as_it_is() {
        let mut fake = 0u64;
        // SAFETY: a non-null address standing for a pool; `pool_for` only passes it back.
        let given = unsafe { MemPoolRef::from_raw((&mut fake as *mut u64).cast()) }.unwrap();
        // SAFETY: used on this thread only; nothing is enqueued.
        let s = unsafe { StreamRef::per_thread_default() };
        assert_eq!(pool_for(Some(given), s).unwrap(), Some(given), "no CUDA call for a given pool");
    }

    #[test]
    fn the_capture_mode_guard_restores_what_it_changed() {
        let guard = RelaxedCaptureMode::enter();
        assert_eq!(guard.0.is_some(), driver_present(), "the exchange works exactly where a driver is");
        drop(guard);
        let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
        // SAFETY: `mode` is writable.
        let code = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
        if code == sys::cudaError::cudaSuccess {
            assert_eq!(mode, sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal, "the thread's default");
            // SAFETY: as above: puts the thread's mode back.
            unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
        }
    }
}
