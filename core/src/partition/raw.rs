//! The driver's green-context interface (CUDA 12.4 and later drivers; stream creation 12.5),
//! reached through the entry-point query in the form of the version that introduced each call,
//! and the one owner of a green context.

use crate::context::ContextTag;
use crate::device::Device;
use crate::error::{CudaError, Error, Result};
use crate::event::Event;
use core::ffi::{c_int, c_uint, c_void};
use core::ptr::NonNull;
use ordo_cuda_sys as sys;
use std::sync::{Mutex, MutexGuard};

/// `CU_DEV_RESOURCE_TYPE_SM`.
pub(crate) const RESOURCE_TYPE_SM: c_uint = 1;
/// `CU_GREEN_CTX_DEFAULT_STREAM`: required by `cuGreenCtxCreate` in its CUDA 12.4 form.
const GREEN_CTX_DEFAULT_STREAM: c_uint = 1;
/// `CU_STREAM_NON_BLOCKING`: required by `cuGreenCtxStreamCreate`.
const STREAM_NON_BLOCKING: c_uint = 1;

/// `CUdevSmResource`: the first fields of the resource's union (later drivers add more after
/// them, inside the union's bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SmResource {
    pub(crate) sm_count: c_uint,
    pub(crate) min_sm_partition_size: c_uint,
    pub(crate) sm_coscheduled_alignment: c_uint,
}

/// `CUdevResource`: a type, 92 bytes of the driver's own, and a union of 48 bytes (12.4 to 13.0:
/// `_oversize[48]`; 13.1 and later: 40 bytes and a `nextResource` pointer). 144 bytes either way;
/// aligned for the pointer. Never written by ordo: the driver fills it and reads it back.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub(crate) struct DevResource {
    kind: c_uint,
    internal: [u8; 92],
    pub(crate) sm: SmResource,
    rest: [u8; 36],
}

const _: () = assert!(core::mem::size_of::<DevResource>() == 144);
const _: () = assert!(core::mem::offset_of!(DevResource, sm) == 96);

impl DevResource {
    /// All zeros: what the driver's calls expect to fill.
    pub(crate) const fn empty() -> DevResource {
        DevResource {
            kind: 0,
            internal: [0; 92],
            sm: SmResource { sm_count: 0, min_sm_partition_size: 0, sm_coscheduled_alignment: 0 },
            rest: [0; 36],
        }
    }

    /// Whether it describes SMs (the split fills a remainder only when SMs are left over).
    pub(crate) fn is_sm(&self) -> bool {
        self.kind == RESOURCE_TYPE_SM && self.sm.sm_count > 0
    }
}

type DeviceGetFn = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type DeviceGetDevResourceFn = unsafe extern "C" fn(c_int, *mut DevResource, c_uint) -> c_int;
type SplitByCountFn =
    unsafe extern "C" fn(*mut DevResource, *mut c_uint, *const DevResource, *mut DevResource, c_uint, c_uint) -> c_int;
type GenerateDescFn = unsafe extern "C" fn(*mut *mut c_void, *mut DevResource, c_uint) -> c_int;
type GreenCtxCreateFn = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, c_int, c_uint) -> c_int;
type GreenCtxDestroyFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type GreenCtxGetDevResourceFn = unsafe extern "C" fn(*mut c_void, *mut DevResource, c_uint) -> c_int;
type GreenCtxRecordEventFn = unsafe extern "C" fn(*mut c_void, sys::cudaEvent_t) -> c_int;
type GreenCtxStreamCreateFn = unsafe extern "C" fn(*mut sys::cudaStream_t, *mut c_void, c_uint, c_int) -> c_int;

#[cfg(cuda_12_8)]
crate::driver_calls::driver_fns! {
    /// `cuDeviceGet(CUdevice*, int ordinal)`.
    fn device_get() -> DeviceGetFn = c"cuDeviceGet", 12000, "the driver predates CUDA 12.0";
    /// `cuDeviceGetDevResource(CUdevice, CUdevResource*, CUdevResourceType)`.
    fn device_get_dev_resource() -> DeviceGetDevResourceFn =
        c"cuDeviceGetDevResource", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuDevSmResourceSplitByCount(result, nbGroups, input, remaining, useFlags, minCount)`.
    fn split_by_count() -> SplitByCountFn =
        c"cuDevSmResourceSplitByCount", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuDevResourceGenerateDesc(CUdevResourceDesc*, CUdevResource*, unsigned)`.
    fn generate_desc() -> GenerateDescFn =
        c"cuDevResourceGenerateDesc", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuGreenCtxCreate(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned flags)`.
    fn green_ctx_create() -> GreenCtxCreateFn =
        c"cuGreenCtxCreate", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuGreenCtxDestroy(CUgreenCtx)`.
    fn green_ctx_destroy() -> GreenCtxDestroyFn =
        c"cuGreenCtxDestroy", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuGreenCtxGetDevResource(CUgreenCtx, CUdevResource*, CUdevResourceType)`.
    fn green_ctx_get_dev_resource() -> GreenCtxGetDevResourceFn =
        c"cuGreenCtxGetDevResource", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuGreenCtxRecordEvent(CUgreenCtx, CUevent)`.
    fn green_ctx_record_event() -> GreenCtxRecordEventFn =
        c"cuGreenCtxRecordEvent", 12040, "green contexts need a CUDA 12.4 or later driver";
    /// `cuGreenCtxStreamCreate(CUstream*, CUgreenCtx, unsigned flags, int priority)`.
    fn green_ctx_stream_create() -> GreenCtxStreamCreateFn =
        c"cuGreenCtxStreamCreate", 12050, "streams of a green context need a CUDA 12.5 or later driver";
}

/// Built against headers older than CUDA 12.8 (no `cudaGetDriverEntryPointByVersion` in the form
/// ordo uses): every entry is NotSupported.
#[cfg(not(cuda_12_8))]
mod absent {
    use super::*;
    fn unsupported<T>() -> Result<T> {
        Err(Error::usage_static(
            crate::UsageKind::NotSupported,
            "SmSplit",
            "green contexts: ordo was built against CUDA headers older than 12.8",
        ))
    }
    pub(super) fn device_get() -> Result<DeviceGetFn> {
        unsupported()
    }
    pub(super) fn device_get_dev_resource() -> Result<DeviceGetDevResourceFn> {
        unsupported()
    }
    pub(super) fn split_by_count() -> Result<SplitByCountFn> {
        unsupported()
    }
    pub(super) fn generate_desc() -> Result<GenerateDescFn> {
        unsupported()
    }
    pub(super) fn green_ctx_create() -> Result<GreenCtxCreateFn> {
        unsupported()
    }
    pub(super) fn green_ctx_destroy() -> Result<GreenCtxDestroyFn> {
        unsupported()
    }
    pub(super) fn green_ctx_get_dev_resource() -> Result<GreenCtxGetDevResourceFn> {
        unsupported()
    }
    pub(super) fn green_ctx_record_event() -> Result<GreenCtxRecordEventFn> {
        unsupported()
    }
    pub(super) fn green_ctx_stream_create() -> Result<GreenCtxStreamCreateFn> {
        unsupported()
    }
}
#[cfg(not(cuda_12_8))]
use absent::*;

/// A driver call's status as a `Result` naming it. The driver's codes for these calls have the
/// runtime's values (`CUDA_ERROR_INVALID_VALUE` = `cudaErrorInvalidValue` = 1,
/// `CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION` = `cudaErrorInvalidResourceConfiguration` = 915,
/// ...), so the error's name and description are right.
fn driver(code: c_int, call: &'static str) -> Result<()> {
    if code == 0 {
        return Ok(());
    }
    let code = sys::cudaError(u32::try_from(code).unwrap_or(u32::MAX));
    Err(Error::Cuda(CudaError::from_failed_call(code, call)))
}

/// The driver's handle of `device` (`cuDeviceGet`), after the runtime has initialised the
/// device's primary context (`cudaInitDevice`): a green context retains it, and the driver's
/// calls need the driver initialised.
pub(crate) fn driver_device(device: Device) -> Result<c_int> {
    // SAFETY: plain values; flags 0.
    cuda_call!(unsafe { sys::cudaInitDevice(device.ordinal(), 0, 0) })?;
    let mut dev: c_int = 0;
    // SAFETY: `dev` is writable.
    driver(unsafe { device_get()?(&mut dev, device.ordinal()) }, "cuDeviceGet")?;
    Ok(dev)
}

/// The device's SMs as one resource (`cuDeviceGetDevResource`).
pub(crate) fn device_sms(dev: c_int) -> Result<DevResource> {
    let mut all = DevResource::empty();
    // SAFETY: `all` is a writable resource.
    driver(unsafe { device_get_dev_resource()?(dev, &mut all, RESOURCE_TYPE_SM) }, "cuDeviceGetDevResource")?;
    Ok(all)
}

/// How many groups of at least `min_sms` one split of `all` gives (`cuDevSmResourceSplitByCount`
/// with no result array: the driver's own count).
pub(crate) fn count_groups(all: &DevResource, min_sms: c_uint) -> Result<c_uint> {
    let mut groups: c_uint = 0;
    // SAFETY: a null result asks for the count only; `groups` is writable; `all` is the
    // driver's resource.
    let code = unsafe { split_by_count()?(core::ptr::null_mut(), &mut groups, all, core::ptr::null_mut(), 0, min_sms) };
    driver(code, "cuDevSmResourceSplitByCount")?;
    Ok(groups)
}

/// One split of `all` into `groups.len()` groups of at least `min_sms` SMs and the rest
/// (`cuDevSmResourceSplitByCount`): how many the driver made.
pub(crate) fn split(
    all: &DevResource,
    min_sms: c_uint,
    groups: &mut [DevResource],
    rest: &mut DevResource,
) -> Result<usize> {
    let mut n = c_uint::try_from(groups.len()).map_err(|_| Error::invalid("SmSplit::new", "too many groups"))?;
    // SAFETY: `groups` holds `n` writable resources; `rest` is writable; `all` is the driver's.
    let code = unsafe { split_by_count()?(groups.as_mut_ptr(), &mut n, all, rest, 0, min_sms) };
    driver(code, "cuDevSmResourceSplitByCount")?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX).min(groups.len()))
}

/// One owned green context (`CUgreenCtx`), destroyed when the last [`SmPartition`] and
/// [`PartitionStream`] of it are dropped.
///
/// CUDA lets one thread at a time use a green context's handle: every use here holds `handle`.
///
/// [`SmPartition`]: super::SmPartition
/// [`PartitionStream`]: super::PartitionStream
#[derive(Debug)]
pub(crate) struct GreenCtx {
    handle: Mutex<NonNull<c_void>>,
    pub(crate) device: Device,
    pub(crate) sm_count: u32,
    /// The device's context when the green context was made: a graph's hold on the green context
    /// let go of after that context is gone (`cudaDeviceReset`) is forgotten, not dropped
    /// ([`drop_outside_callbacks`](crate::callback::drop_outside_callbacks)).
    pub(crate) tag: ContextTag,
}

// SAFETY: the handle is used under the mutex only, one thread at a time, as CUDA asks; the rest
// is plain data.
unsafe impl Send for GreenCtx {}
// SAFETY: as above.
unsafe impl Sync for GreenCtx {}

impl GreenCtx {
    /// A green context of `resources` (outputs of one split) on `device` (driver handle `dev`):
    /// `cuDevResourceGenerateDesc`, `cuGreenCtxCreate`, and its SM count read back
    /// (`cuGreenCtxGetDevResource`).
    pub(crate) fn create(device: Device, dev: c_int, resources: &mut [DevResource]) -> Result<GreenCtx> {
        let tag = ContextTag::of(device)?;
        let count = c_uint::try_from(resources.len()).map_err(|_| Error::invalid("SmSplit", "too many resources"))?;
        let mut desc: *mut c_void = core::ptr::null_mut();
        // SAFETY: `resources` holds `count` resources of one split; `desc` is writable.
        driver(unsafe { generate_desc()?(&mut desc, resources.as_mut_ptr(), count) }, "cuDevResourceGenerateDesc")?;
        let mut raw: *mut c_void = core::ptr::null_mut();
        // SAFETY: a descriptor just made; `raw` is writable; the default-stream flag, which the
        // CUDA 12.4 form requires.
        let code = unsafe { green_ctx_create()?(&mut raw, desc, dev, GREEN_CTX_DEFAULT_STREAM) };
        driver(code, "cuGreenCtxCreate")?;
        let raw = NonNull::new(raw).ok_or_else(|| crate::error::null_handle("cuGreenCtxCreate"))?;
        // Owned from here: an error below destroys it.
        let mut ctx = GreenCtx { handle: Mutex::new(raw), device, sm_count: 0, tag };
        let mut own = DevResource::empty();
        // SAFETY: a live green context; `own` is writable.
        let code = unsafe { green_ctx_get_dev_resource()?(raw.as_ptr(), &mut own, RESOURCE_TYPE_SM) };
        driver(code, "cuGreenCtxGetDevResource")?;
        ctx.sm_count = own.sm.sm_count;
        Ok(ctx)
    }

    fn handle(&self) -> MutexGuard<'_, NonNull<c_void>> {
        crate::sync::lock(&self.handle)
    }

    /// A new non-blocking stream of the green context at `priority` (`cuGreenCtxStreamCreate`).
    pub(crate) fn create_stream(&self, priority: c_int) -> Result<NonNull<sys::CUstream_st>> {
        let create = green_ctx_stream_create()?;
        let mut raw: sys::cudaStream_t = core::ptr::null_mut();
        let handle = self.handle();
        // SAFETY: a live green context, used by this thread alone (the guard); `raw` is writable;
        // the non-blocking flag, which the call requires.
        let code = unsafe { create(&mut raw, handle.as_ptr(), STREAM_NON_BLOCKING, priority) };
        drop(handle);
        driver(code, "cuGreenCtxStreamCreate")?;
        NonNull::new(raw).ok_or_else(|| crate::error::null_handle("cuGreenCtxStreamCreate"))
    }

    /// Waits for all work of the green context (an event recorded on it with
    /// `cuGreenCtxRecordEvent`, then synchronised).
    fn wait_idle(&self, handle: NonNull<c_void>) -> Result<()> {
        let record = green_ctx_record_event()?;
        let event = self.device.with_current(Event::new)?;
        // SAFETY: a live green context, used by this thread alone (its last owner is dropping it);
        // an event of the same device's primary context, as the call requires.
        driver(unsafe { record(handle.as_ptr(), event.as_raw()) }, "cuGreenCtxRecordEvent")?;
        event.synchronize()
    }
}

impl Drop for GreenCtx {
    fn drop(&mut self) {
        let handle = *crate::sync::get_mut(&mut self.handle);
        // Work of the partition's streams may still run (destroying a stream does not wait):
        // destroy the context only after it. If that cannot be waited for, the context is leaked,
        // which is safe; destroying it under running work may not be.
        let destroyed = self.wait_idle(handle).and_then(|()| {
            // SAFETY: our green context, destroyed once, here, with no work left and no stream
            // (each holds the `Arc` this is the last of).
            driver(unsafe { green_ctx_destroy()?(handle.as_ptr()) }, "cuGreenCtxDestroy")
        });
        if let Err(e) = destroyed {
            crate::error::record_drop_error_value(e);
        }
    }
}
