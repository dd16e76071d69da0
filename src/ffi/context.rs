//! The CUDA context an object's CUDA handles belong to.
//!
//! `cudaDeviceReset` destroys the device's context and with it every stream, event, graph and
//! allocation made in it. Their handles dangle, and CUDA does not promise an error for a dangling
//! handle: it may crash. So every object behind a C handle (and every pooled pipeline) remembers
//! the context it was made in, by the context's unique id (`cuCtxGetId`, through
//! `cudaGetDriverEntryPoint`), and checks it before it touches CUDA: an object whose context is
//! gone is never touched again. Calls on it return `cudaErrorContextIsDestroyed`, and destroying it
//! forgets its CUDA handles instead of freeing them (CUDA freed them with the context).

use super::status::{Failure, Outcome};
use core::ffi::{c_int, c_ulonglong, c_void, CStr};
use core::mem::ManuallyDrop;
use core::ptr::null_mut;
use ordo_core::{sys, Device, Error};
use std::sync::OnceLock;

type CtxGetCurrent = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type CtxGetId = unsafe extern "C" fn(*mut c_void, *mut c_ulonglong) -> c_int;

/// The two driver functions, or `None` where the driver cannot give them (no driver; a driver
/// older than CUDA 12.0, without `cuCtxGetId`): then every context counts as alive, as before.
fn driver() -> Option<(CtxGetCurrent, CtxGetId)> {
    static DRIVER: OnceLock<Option<(CtxGetCurrent, CtxGetId)>> = OnceLock::new();
    fn entry(name: &CStr) -> Option<*mut c_void> {
        let mut f: *mut c_void = null_mut();
        let mut found = sys::cudaDriverEntryPointQueryResult(0);
        // SAFETY: `name` is NUL-terminated; `f` and `found` are writable.
        let code = unsafe { sys::cudaGetDriverEntryPoint(name.as_ptr(), &mut f, sys::cudaGetDriverEntryPointFlags::cudaEnableDefault.0.into(), &mut found) };
        (code == sys::cudaError::cudaSuccess && !f.is_null()).then_some(f)
    }
    *DRIVER.get_or_init(|| {
        let (current, id) = (entry(c"cuCtxGetCurrent")?, entry(c"cuCtxGetId")?);
        // SAFETY: the driver's `cuCtxGetCurrent(CUcontext*)` and `cuCtxGetId(CUcontext,
        // unsigned long long*)`, whose prototypes these types spell (CUresult is an int enum).
        Some(unsafe { (core::mem::transmute::<*mut c_void, CtxGetCurrent>(current), core::mem::transmute::<*mut c_void, CtxGetId>(id)) })
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

/// A device and the context its objects were made in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context {
    device: Device,
    /// `None` when the driver cannot tell contexts apart: the context then counts as alive.
    id: Option<u64>,
}

impl Context {
    /// The calling thread's current device and its context. Call it after the object's CUDA
    /// objects were made (which made the context current).
    pub(crate) fn current() -> Result<Context, Error> {
        let device = Device::current()?;
        Ok(Context { device, id: driver().and(current_id()) })
    }

    /// `device` and its current context (made current for the question).
    pub(crate) fn of(device: Device) -> Result<Context, Error> {
        device.with_current(Context::current)
    }

    /// The device.
    pub(crate) fn device(&self) -> Device {
        self.device
    }

    /// Whether the context still exists: it is still the device's current context.
    pub(crate) fn alive(&self) -> bool {
        let Some(id) = self.id else { return true };
        self.device.with_current(|| Ok(current_id())).ok().flatten() == Some(id)
    }

    /// `cudaErrorContextIsDestroyed` when the context is gone.
    pub(crate) fn check(&self) -> Outcome {
        if self.alive() {
            Ok(())
        } else {
            let e = Error::Cuda(ordo_core::CudaError::new(sys::cudaError::cudaErrorContextIsDestroyed, "ordo C ABI (a cudaDeviceReset destroyed the handle's context)"));
            Err(Failure::from(e))
        }
    }
}

/// A value holding CUDA handles of one context: dropped normally while the context lives,
/// forgotten (its handles not freed, CUDA having freed them) once it is gone.
pub(crate) struct InContext<T> {
    context: Context,
    value: ManuallyDrop<T>,
}

impl<T> InContext<T> {
    /// `value`, made in the calling thread's current context.
    pub(crate) fn new(value: T) -> Result<InContext<T>, Error> {
        Ok(InContext::made_in(Context::current()?, value))
    }

    /// `value`, made in `context`.
    pub(crate) fn made_in(context: Context, value: T) -> InContext<T> {
        InContext { context, value: ManuallyDrop::new(value) }
    }

    /// The value, after checking that its context still exists (`cudaErrorContextIsDestroyed`
    /// otherwise).
    pub(crate) fn get(&self) -> Outcome<&T> {
        self.context.check()?;
        Ok(&self.value)
    }

    /// The value without checking its context, for calls that make no CUDA call (bookkeeping
    /// such as closing a staging ring, which is safe in a destroyed context too).
    pub(crate) fn unchecked(&self) -> &T {
        &self.value
    }

    /// The value's context.
    pub(crate) fn context(&self) -> Context {
        self.context
    }

    /// The value, for a caller that has just checked its context.
    pub(crate) fn checked_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T> Drop for InContext<T> {
    fn drop(&mut self) {
        if self.context.alive() {
            // SAFETY: dropped once, here.
            unsafe { ManuallyDrop::drop(&mut self.value) };
        }
    }
}
