//! Launching through the driver's `cuLaunchKernelEx`: the entry point resolved once through the
//! runtime (`cudaGetDriverEntryPointByVersion`, so nothing links to `libcuda`), and the kernel's
//! `CUfunction` looked up once for a device (`cudaGetFuncBySymbol`) instead of by the runtime at
//! every launch. The same typed arguments and stack-held attributes as [`Kernel::launch`].
//! Built against CUDA 12.8 or later headers (`cudaGetDriverEntryPointByVersion` came in 12.5).
//!
//! Whether it is faster than the runtime's launch is measured by `ordo-bench` (group `launch`),
//! side by side with `cudaLaunchKernelEx` and cudarc; see BENCHMARKS.md.

use super::{check_co_resident, write_attributes, Attributes, Kernel, KernelArgs, LaunchConfig, MAX_ATTRIBUTES};
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use crate::Device;
use core::ffi::{c_int, c_uint, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;

/// `CUlaunchConfig` (cuda.h), which the runtime's headers do not declare.
#[repr(C)]
struct CuLaunchConfig {
    grid: [c_uint; 3],
    block: [c_uint; 3],
    shared_mem_bytes: c_uint,
    stream: sys::cudaStream_t,
    // `CUlaunchAttribute` has the layout of the runtime's `cudaLaunchAttribute` (same ids, same
    // value union): cuda.h and driver_types.h declare both.
    attrs: *mut sys::cudaLaunchAttribute,
    num_attrs: c_uint,
}

#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(core::mem::size_of::<CuLaunchConfig>() == 56);
    assert!(core::mem::offset_of!(CuLaunchConfig, stream) == 32);
    assert!(core::mem::offset_of!(CuLaunchConfig, num_attrs) == 48);
};

/// `cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void** params, void** extra)`.
type LaunchFn =
    unsafe extern "C" fn(*const CuLaunchConfig, sys::cudaFunction_t, *mut *mut c_void, *mut *mut c_void) -> c_int;

/// `cuLaunchKernelEx`, resolved on first use.
static ENTRY: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

/// The driver's `cuLaunchKernelEx` (CUDA 12.0 and later drivers): the runtime's error when the
/// query fails, a usage error where the driver lacks it.
fn entry() -> Result<LaunchFn> {
    const CALL: &str = "cudaGetDriverEntryPointByVersion";
    let mut p = ENTRY.load(Ordering::Acquire);
    if p.is_null() {
        let (code, found) = crate::driver_calls::query(c"cuLaunchKernelEx");
        crate::error::check(code, CALL)?;
        p = found.ok_or(Error::usage(crate::UsageKind::NotSupported, CALL, "the driver has no cuLaunchKernelEx"))?;
        ENTRY.store(p, Ordering::Release);
    }
    // SAFETY: the address of `cuLaunchKernelEx` as of CUDA 12.0, whose signature `LaunchFn` is.
    Ok(unsafe { core::mem::transmute::<*mut c_void, LaunchFn>(p) })
}

/// A kernel resolved for one device's driver launch: its `CUfunction` in that device's primary
/// context, and `cuLaunchKernelEx`. Made by [`Kernel::for_driver`]; `Copy`, owns nothing.
pub struct DriverKernel<Args> {
    kernel: Kernel<Args>,
    func: NonNull<sys::CUfunc_st>,
    launch: LaunchFn,
    device: Device,
    _args: PhantomData<fn(Args)>,
}

impl<Args> Clone for DriverKernel<Args> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Args> Copy for DriverKernel<Args> {}

impl<Args> core::fmt::Debug for DriverKernel<Args> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DriverKernel").field("func", &self.func).field("device", &self.device).finish()
    }
}

// SAFETY: a function handle and a function pointer, usable from any thread (CUDA's handles are
// thread-safe); nothing is tied to the thread that made it.
unsafe impl<Args> Send for DriverKernel<Args> {}
// SAFETY: as above.
unsafe impl<Args> Sync for DriverKernel<Args> {}

impl<Args: KernelArgs> Kernel<Args> {
    /// This kernel resolved for the driver launch on `device` (`cudaGetFuncBySymbol` with `device`
    /// current, and `cuLaunchKernelEx` from the driver): a few calls, made once, not per launch.
    pub fn for_driver(self, device: Device) -> Result<DriverKernel<Args>> {
        let launch = entry()?;
        let mut func: sys::cudaFunction_t = core::ptr::null_mut();
        // SAFETY: `func` writable; the stub of a kernel of this program (Kernel's invariant).
        device.with_current(|| cuda_call!(unsafe { sys::cudaGetFuncBySymbol(&mut func, self.as_raw()) }))?;
        let func = NonNull::new(func).ok_or(Error::invalid("cudaGetFuncBySymbol", "CUDA returned no function"))?;
        Ok(DriverKernel { kernel: self, func, launch, device, _args: PhantomData })
    }
}

impl<Args: KernelArgs> DriverKernel<Args> {
    /// The device it was resolved for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The kernel.
    pub fn kernel(&self) -> Kernel<Args> {
        self.kernel
    }

    /// Launches on `stream` with `cuLaunchKernelEx`: the configuration checked as for
    /// [`Kernel::launch`], the same attributes. Where the driver refuses the launch, it is made
    /// again through the runtime ([`Kernel::launch`]), so that the error reported is the
    /// runtime's, with its code and name (the driver's codes are not the runtime's), or the
    /// launch happens there (a stream of another device, which the runtime routes itself).
    ///
    /// # Safety
    /// As [`Kernel::launch`].
    #[inline]
    pub unsafe fn launch(&self, stream: StreamRef<'_>, config: &LaunchConfig, mut args: Args) -> Result<()> {
        config.validate()?;
        if config.cooperative {
            check_co_resident(self.kernel.as_raw(), stream, config)?;
        }
        let mut attrs: Attributes = [core::mem::MaybeUninit::uninit(); MAX_ATTRIBUTES];
        let n = write_attributes(config, &mut attrs);
        let raw = CuLaunchConfig {
            grid: [config.grid.x, config.grid.y, config.grid.z],
            block: [config.block.x, config.block.y, config.block.z],
            shared_mem_bytes: config.shared_mem_bytes,
            stream: stream.as_raw(),
            attrs: if n == 0 { core::ptr::null_mut() } else { attrs.as_mut_ptr().cast::<sys::cudaLaunchAttribute>() },
            num_attrs: n as c_uint,
        };
        let mut ptrs = args.arg_ptrs();
        let ptrs = ptrs.as_mut();
        let params = if ptrs.is_empty() { core::ptr::null_mut() } else { ptrs.as_mut_ptr() };
        // SAFETY: `raw`, the attributes and the argument addresses live across the call; the
        // function and the arguments' validity are the caller's contract.
        let code = unsafe { (self.launch)(&raw, self.func.as_ptr(), params, core::ptr::null_mut()) };
        if code == 0 {
            return Ok(());
        }
        // SAFETY: nothing was enqueued; the caller's contract covers the runtime's launch too.
        unsafe { self.kernel.launch(stream, config, args) }
    }
}
