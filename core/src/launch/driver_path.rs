//! The default launch path through the driver's `cuLaunchKernelEx`, reached through the runtime's
//! entry-point query (`cudaGetDriverEntryPointByVersion`, so nothing links to `libcuda`) and
//! resolved once. Built against CUDA 12.8 or later headers.
//!
//! [`Kernel::launch`](super::Kernel::launch) and [`launch_raw`](super::launch_raw) launch this way
//! by default: the kernel's `CUkernel`, resolved once for the process (a lock-free table from
//! kernel address to handle), launched in the context of the stream (one handle serves every
//! device). Where the driver path is not there (no `cuLaunchKernelEx`, a kernel that cannot be
//! resolved) or the driver refuses the launch, the caller launches through the runtime
//! (`cudaLaunchKernelExC`) instead. [`DriverKernel`](super::DriverKernel) (`launch/driver.rs`)
//! shares this file's entry point and configuration.
//!
//! The configuration and attributes are the runtime launch's: `CUlaunchConfig` holds the same
//! grid, block and shared memory, and `CUlaunchAttribute` has the layout of `cudaLaunchAttribute`
//! (cuda.h and driver_types.h: the same ids, an 8-byte header, the same 64-byte value union), so
//! one attribute array serves both calls.

use super::attributes::Attributes;
use super::LaunchConfig;
use crate::stream::StreamRef;
use core::ffi::{c_uint, c_void};
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;

/// `config` on `stream` as the driver's `CUlaunchConfig`, with the attribute array `attrs` of
/// `num_attrs` (null for none; it must outlive the launch).
#[inline(always)]
pub(super) fn driver_config(
    config: &LaunchConfig,
    stream: StreamRef<'_>,
    attrs: *mut sys::cudaLaunchAttribute,
    num_attrs: c_uint,
) -> sys::CuLaunchConfig {
    sys::CuLaunchConfig {
        grid: [config.grid.x, config.grid.y, config.grid.z],
        block: [config.block.x, config.block.y, config.block.z],
        shared_mem_bytes: config.shared_mem_bytes,
        stream: stream.as_raw(),
        attrs,
        num_attrs,
    }
}

/// `cuLaunchKernelEx`, as the entry-point query gives it.
type LaunchFn = sys::CuLaunchKernelExFn;

/// Not resolved yet.
const UNRESOLVED: *mut c_void = core::ptr::null_mut();

/// Resolved and absent: the address of this marker, which no driver function has.
static ABSENT_MARK: u8 = 0;

#[inline(always)]
fn absent() -> *mut c_void {
    core::ptr::addr_of!(ABSENT_MARK).cast_mut().cast()
}

/// `cuLaunchKernelEx`, [`UNRESOLVED`] or [`absent`].
static ENTRY: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);

/// `cuLaunchKernelEx` (CUDA 12.0 and later drivers), where the driver has it.
#[inline(always)]
pub(super) fn entry() -> Option<LaunchFn> {
    let mut p = ENTRY.load(Ordering::Acquire);
    if p == UNRESOLVED {
        p = resolve_entry();
    }
    // SAFETY: the address of `cuLaunchKernelEx` as of CUDA 12.0, whose signature `LaunchFn` is.
    (p != absent()).then(|| unsafe { core::mem::transmute::<*mut c_void, LaunchFn>(p) })
}

#[cold]
#[inline(never)]
fn resolve_entry() -> *mut c_void {
    let p = crate::driver_calls::query(c"cuLaunchKernelEx").1.unwrap_or_else(absent);
    ENTRY.store(p, Ordering::Release);
    p
}

/// Launches `func` on `stream` through the driver, its `CUkernel` from the table; `false` when
/// nothing was launched (no driver entry, no handle for `func`, or the driver refused: the
/// caller launches through the runtime).
///
/// # Safety
/// - `config` was checked ([`LaunchConfig::validate`], and the cooperative check);
/// - `attrs` are `config`'s attributes;
/// - `func` and `args` are as [`launch_raw`](super::launch_raw) requires, and the rest of its
///   contract holds.
#[inline(always)]
pub(super) unsafe fn try_launch(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    attrs: &mut Attributes,
    args: *mut *mut c_void,
) -> bool {
    // SAFETY: the attribute array is `attrs`', which outlives the call; the caller's contract.
    unsafe { launch_with(func, stream, config, attrs.as_mut_ptr(), attrs.len(), args) }
}

/// `cuLaunchKernelEx` of `func`'s `CUkernel` with `config` and the attribute array `attrs`
/// (`num_attrs` of them; null for none); `false` when nothing was launched.
///
/// # Safety
/// - as [`try_launch`]; `attrs` points to `num_attrs` attributes of `config`, alive across the
///   call.
#[inline(always)]
unsafe fn launch_with(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    attrs: *mut sys::cudaLaunchAttribute,
    num_attrs: c_uint,
    args: *mut *mut c_void,
) -> bool {
    let (Some(launch), Some(kernel)) = (entry(), super::resolved::kernel_handle(func)) else {
        return false;
    };
    let raw = driver_config(config, stream, attrs, num_attrs);
    // SAFETY: `raw` and the attribute array it points to live across the call; `kernel` is the
    // `CUkernel` of `func` (a `CUfunction` argument may be a `CUkernel`: cuda.h); the caller owes
    // the arguments and what they point to.
    unsafe { launch(&raw, kernel.as_ptr().cast(), args, core::ptr::null_mut()) == 0 }
}

/// As [`try_launch`] for a plain configuration (no attributes, not cooperative): no attribute
/// array is built or passed.
///
/// # Safety
/// - `config` was checked ([`LaunchConfig::validate`] accepts it) and sets no attribute;
/// - `func` and `args` are as [`launch_raw`](super::launch_raw) requires, and the rest of its
///   contract holds.
#[inline(always)]
pub(super) unsafe fn try_launch_plain(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> bool {
    // SAFETY: no attributes; the caller's contract.
    unsafe { launch_with(func, stream, config, core::ptr::null_mut(), 0, args) }
}

/// Whether a launch of `func` now would go through the driver (its entry present and `func`
/// resolved, resolving it if needed).
pub(super) fn available_for(func: *const c_void) -> bool {
    entry().is_some() && super::resolved::kernel_handle(func).is_some()
}
