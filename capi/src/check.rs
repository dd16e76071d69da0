//! The checks every export makes before it enqueues anything, capture-aware in one place.
//!
//! # Captures
//! CUDA refuses "potentially unsafe" calls (allocations, frees, instantiating or destroying
//! executable graphs, synchronising or querying other streams and events) on a thread while that
//! thread captures, or while any thread captures in global mode, and the refusal **invalidates the
//! capture** (cudaErrorStreamCaptureUnsupported, then cudaErrorStreamCaptureInvalidated at its
//! end). ordo's own calls of that kind (a ring's pinned
//! allocation, a graph cache's instantiation, an object's destruction) have nothing to do with the
//! caller's capture, so every export runs with the calling thread's capture mode exchanged to
//! relaxed (`RelaxedCaptureMode`, as CCCL does; `cudaThreadExchangeStreamCaptureMode`), restored
//! on the way out. The caller's callbacks run in the caller's own mode again
//! (`in_caller_mode`), so CUDA checks what *they* do as the caller asked. Both are in
//! `capture_mode.rs`.
//!
//! What no mode makes legal is any query of the capturing stream itself: `cudaStreamGetDevice`,
//! `cudaStreamGetFlags` and `cudaStreamGetId` on a capturing stream fail and invalidate the
//! capture in every mode (`docs/cuda-behaviours.md`, CB-05). So while the stream captures, its device is
//! taken to be the calling thread's current device (`stream_device`), and the one query made of
//! the stream is `cudaStreamGetCaptureInfo`, which is the capture's own. `cudaPointerGetAttributes`
//! is legal inside captures (CB-05) and runs in every case.

use super::status::{invalid, refused, Outcome, ORDO_ERROR_PAGEABLE_MEMORY};
use core::ffi::c_void;
use ordo_cuda_core::graph::CaptureStatus;
use ordo_cuda_core::{sys, Device, MemPoolRef, PoolAccess, StreamRef};

/// The caller's stream (the export's argument `stream`). NULL is refused: pass
/// `cudaStreamLegacy` or `cudaStreamPerThread` to mean a default stream, so that it is never used
/// by accident.
pub(crate) fn stream_ref<'a>(raw: sys::cudaStream_t) -> Outcome<StreamRef<'a>> {
    // SAFETY: the C contract: a live stream (or one of CUDA's pseudo-stream handles) that stays
    // valid for the call; null is refused here.
    unsafe { StreamRef::from_raw(raw) }.ok_or_else(|| {
        invalid("stream", "null stream: pass cudaStreamLegacy or cudaStreamPerThread for a default stream")
    })
}

/// As [`stream_ref`], for a stream that ordo keeps past the call (an IPC mapping or import frees
/// on it later, maybe from another thread): `cudaStreamPerThread` is refused, since it names
/// another stream on every thread that uses it.
pub(crate) fn kept_stream_ref<'a>(raw: sys::cudaStream_t) -> Outcome<StreamRef<'a>> {
    if raw == sys::cudaStreamPerThread() {
        return Err(invalid(
            "stream",
            "cudaStreamPerThread is a different stream on each thread, and this stream is kept past the call: pass a stream of your own (or cudaStreamLegacy)",
        ));
    }
    stream_ref(raw)
}

/// Whether `s` is capturing (or holds an invalidated capture not yet ended), asked the one way
/// that is legal during a capture (`cudaStreamGetCaptureInfo`).
pub(crate) fn capturing(s: StreamRef<'_>) -> Outcome<bool> {
    Ok(!matches!(s.capture_status()?, CaptureStatus::None))
}

/// The device work on `s` runs on: the stream's own (`cudaStreamGetDevice`, CUDA 12.8 and later;
/// before that the current device), except while `s` captures, where any query of the stream
/// would invalidate the capture: the calling thread's current device then.
pub(crate) fn stream_device(s: StreamRef<'_>) -> Outcome<Device> {
    if capturing(s)? {
        Ok(Device::current()?)
    } else {
        Ok(s.device_or_current()?)
    }
}

/// Refuses argument `arg` when null, or not aligned for `T` (a misaligned device pointer would
/// fault on the device, a sticky error, instead of failing here).
pub(crate) fn non_null<T>(p: *const T, arg: &'static str) -> Outcome {
    non_null_aligned(p.cast(), core::mem::align_of::<T>(), arg)
}

/// Refuses argument `arg` when null, or not aligned to `align` bytes (a power of two), for
/// elements whose type only the caller knows.
pub(crate) fn non_null_aligned(p: *const c_void, align: usize, arg: &'static str) -> Outcome {
    if p.is_null() {
        Err(invalid(arg, "null pointer"))
    } else if (p as usize) % align.max(1) != 0 {
        Err(invalid(arg, "pointer not aligned for its element type"))
    } else {
        Ok(())
    }
}

/// The bytes of `n` elements of `T` (`arg`: the count's name), refused when that overflows or
/// exceeds `isize::MAX` (no allocation can be that large, and Rust's views may not be).
pub(crate) fn byte_len<T>(n: usize, arg: &'static str) -> Outcome<usize> {
    n.checked_mul(core::mem::size_of::<T>())
        .filter(|&b| isize::try_from(b).is_ok())
        .ok_or_else(|| invalid(arg, "size in bytes overflows"))
}

/// What `cudaPointerGetAttributes` says of `p` (legal inside captures; the export's relaxed
/// capture mode keeps it legal under other threads' captures too).
fn attributes(p: *const c_void) -> Outcome<sys::cudaPointerAttributes> {
    // Its layout differs between CUDA 12 and 13 (13 adds reserved words): default-construct it.
    let mut attrs = sys::cudaPointerAttributes::default();
    // SAFETY: `attrs` is writable; any pointer value may be asked about.
    ordo_cuda_core::error::check(unsafe { sys::cudaPointerGetAttributes(&mut attrs, p) }, "cudaPointerGetAttributes")?;
    Ok(attrs)
}

/// Argument `arg` is pinned (`cudaHostAlloc`) or registered (`cudaHostRegister`) host memory.
pub(crate) fn require_pinned(p: *const c_void, arg: &'static str) -> Outcome {
    if attributes(p)?.type_ != sys::cudaMemoryType::cudaMemoryTypeHost {
        let what = "host memory must be pinned (cudaHostAlloc) or registered (cudaHostRegister)";
        return Err(refused(ORDO_ERROR_PAGEABLE_MEMORY, Some(arg), what));
    }
    Ok(())
}

/// Argument `arg` is device memory of `device`, or managed memory (what a kernel or copy on
/// `device` may touch). Device memory of another device is refused: without peer access the work
/// would fault there, a sticky error that loses that device's context.
pub(crate) fn require_device_on(p: *const c_void, device: Device, arg: &'static str) -> Outcome {
    let a = attributes(p)?;
    match a.type_ {
        sys::cudaMemoryType::cudaMemoryTypeManaged => Ok(()),
        sys::cudaMemoryType::cudaMemoryTypeDevice if a.device == device.ordinal() => Ok(()),
        sys::cudaMemoryType::cudaMemoryTypeDevice => {
            Err(invalid(arg, "device memory of another device than the stream's"))
        }
        _ => Err(invalid(arg, "expected device (or managed) memory")),
    }
}

/// Refuses a pool (`options.pool`) whose memory `device`'s kernels cannot read and write.
pub(crate) fn require_pool_for(pool: Option<MemPoolRef<'_>>, device: Device) -> Outcome {
    match pool {
        Some(pool) if pool.access(device)? != PoolAccess::ReadWrite => {
            Err(invalid("options.pool", "not readable and writable by the device"))
        }
        _ => Ok(()),
    }
}

/// Writes `value` to the caller's out-pointer `arg`, checked first (null, alignment).
pub(crate) fn write_out<T>(out: *mut T, value: T, arg: &'static str) -> Outcome {
    non_null(out.cast_const(), arg)?;
    // SAFETY: checked non-null and aligned; the C contract makes it writable.
    unsafe { out.write(value) };
    Ok(())
}

/// Reads a caller's options struct of this version's type `T`, whose first field is its `size`:
/// NULL gives `None`; a misaligned pointer, or a size below this version's `sizeof(T)`, is refused
/// (nothing read beyond the size field).
///
/// # Safety
/// The C contract: a non-null `options` points to `options->size` readable bytes.
pub(crate) unsafe fn read_options<T: Copy>(options: *const T, arg: &'static str) -> Outcome<Option<T>> {
    if options.is_null() {
        return Ok(None);
    }
    non_null(options, arg)?;
    // SAFETY: checked non-null and aligned; the caller owes `size` readable bytes, so the size
    // field first, then (when it covers this version's struct) the whole.
    if unsafe { options.cast::<usize>().read() } < core::mem::size_of::<T>() {
        return Err(invalid(arg, "size below this version's sizeof of the options struct"));
    }
    // SAFETY: as above: at least this version's struct is readable.
    Ok(Some(unsafe { options.read() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_pointers_are_checked_before_cuda() {
        assert!(byte_len::<f32>(usize::MAX / 4 + 1, "n").is_err());
        assert!(byte_len::<f32>(isize::MAX as usize / 4 + 1, "n").is_err(), "over isize::MAX bytes");
        assert_eq!(byte_len::<f32>(10, "n"), Ok(40));
        let x = [0u32; 2];
        let misaligned = (x.as_ptr() as usize + 1) as *const u32;
        assert!(non_null(misaligned, "x").is_err());
        assert!(non_null(core::ptr::null::<u32>(), "x").is_err());
        assert!(non_null(x.as_ptr(), "x").is_ok());
        assert!(stream_ref(core::ptr::null_mut()).is_err());
    }
}
