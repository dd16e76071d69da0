//! The CUDA context an object's handles belong to, by the context's unique id (`cuCtxGetId`,
//! through `cudaGetDriverEntryPoint`), to tell whether `cudaDeviceReset` has destroyed it since.
//!
//! `cudaDeviceReset` destroys the device's context and with it every stream, event, graph and
//! allocation made in it. Their handles dangle, and CUDA does not promise an error for a dangling
//! handle: it may crash. An object that must outlive such a reset safely (the staging ring's
//! deferred frees, the C ABI's handles) keeps the [`ContextTag`] it was made in and, once the
//! context is gone, forgets its handles instead of freeing them.

use crate::device::Device;
use crate::error::Result;
use core::ffi::{c_int, c_ulonglong, c_void, CStr};
use core::ptr::null_mut;
use ordo_cuda_sys as sys;
use std::sync::OnceLock;

type CtxGetCurrent = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type CtxGetId = unsafe extern "C" fn(*mut c_void, *mut c_ulonglong) -> c_int;

/// The two driver functions, or `None` where the driver cannot give them (no driver; one older
/// than CUDA 12.0, without `cuCtxGetId`): every context then counts as alive.
///
/// They are asked for in their CUDA 12.0 form (`cudaGetDriverEntryPointByVersion`). The
/// unversioned query asks for the form of the runtime's own version, which a driver older than the
/// runtime (a CUDA 13.5 runtime on a 13.0 driver, which CUDA's minor-version compatibility allows)
/// cannot give: the lookup then failed, every context counted as alive, and handles of a context
/// destroyed by `cudaDeviceReset` were used again.
fn driver() -> Option<(CtxGetCurrent, CtxGetId)> {
    static DRIVER: OnceLock<Option<(CtxGetCurrent, CtxGetId)>> = OnceLock::new();
    fn entry(name: &CStr) -> Option<*mut c_void> {
        let mut f: *mut c_void = null_mut();
        let mut found = sys::cudaDriverEntryPointQueryResult(0);
        // SAFETY: `name` is NUL-terminated; `f` and `found` are writable.
        let code = unsafe {
            sys::compat::cudaGetDriverEntryPointByVersion(
                name.as_ptr(),
                &mut f,
                12000,
                sys::cudaGetDriverEntryPointFlags::cudaEnableDefault.0.into(),
                &mut found,
            )
        };
        let ok = code == sys::cudaError::cudaSuccess
            && found == sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess
            && !f.is_null();
        if code != sys::cudaError::cudaSuccess {
            // SAFETY: no arguments; a failed query is not left as the thread's last error.
            unsafe { sys::cudaGetLastError() };
        }
        ok.then_some(f)
    }
    *DRIVER.get_or_init(|| {
        let (current, id) = (entry(c"cuCtxGetCurrent")?, entry(c"cuCtxGetId")?);
        // SAFETY: the driver's `cuCtxGetCurrent(CUcontext*)` and `cuCtxGetId(CUcontext,
        // unsigned long long*)`, whose prototypes these types spell (CUresult is an int enum).
        Some(unsafe {
            (
                core::mem::transmute::<*mut c_void, CtxGetCurrent>(current),
                core::mem::transmute::<*mut c_void, CtxGetId>(id),
            )
        })
    })
}

/// The unique id of the context current on the calling thread; `None` when there is none.
fn current_id() -> Option<u64> {
    let (get_current, get_id) = driver()?;
    let mut ctx: *mut c_void = null_mut();
    // SAFETY: `ctx` is writable.
    if unsafe { get_current(&mut ctx) } != 0 || ctx.is_null() {
        return None;
    }
    let mut id: c_ulonglong = 0;
    // SAFETY: the current context, live on this thread; `id` is writable.
    (unsafe { get_id(ctx, &mut id) } == 0).then_some(id)
}

/// A device and the context current on it when the tag was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextTag {
    pub(crate) device: Device,
    /// `None` when the driver cannot tell contexts apart: then always alive.
    pub(crate) id: Option<u64>,
}

impl ContextTag {
    /// The calling thread's current device and context. Call it after the object's CUDA objects
    /// were made (which made the context current).
    pub fn current() -> Result<ContextTag> {
        Ok(ContextTag { device: Device::current()?, id: current_id() })
    }

    /// Whether the context still exists: it is still the device's current context.
    ///
    /// A thread that has not used CUDA yet has no current context until the runtime makes the
    /// device's primary context current: then `cudaSetDevice` does (CUDA 12 and later make it
    /// current at once), and the question is asked again.
    pub fn alive(&self) -> bool {
        let Some(id) = self.id else { return true };
        let now = self.device.with_current(|| match current_id() {
            Some(now) => Ok(Some(now)),
            None => {
                self.device.set_current()?;
                Ok(current_id())
            }
        });
        now.ok().flatten() == Some(id)
    }

    /// `device` and its current context (made current for the question).
    pub fn of(device: Device) -> Result<ContextTag> {
        device.with_current(ContextTag::current)
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }
}
