//! Launching through the driver's `cuLaunchKernelEx`, reached through the runtime's entry-point
//! query (`cudaGetDriverEntryPointByVersion`, so nothing links to `libcuda`) and resolved once.
//! Built against CUDA 12.8 or later headers (`cudaGetDriverEntryPointByVersion` came in 12.5).
//!
//! - [`Kernel::launch`] and [`launch_raw`](super::launch_raw) launch this way by default
//!   (`launch/driver_path.rs`): the
//!   kernel's `CUkernel`, resolved once for the process (a lock-free table from kernel address to handle), launched
//!   in the context of the stream (one handle serves every device). Where the driver path is not
//!   there (no `cuLaunchKernelEx`, a kernel that cannot be resolved) or the driver refuses the
//!   launch, the launch is made through the runtime (`cudaLaunchKernelExC`) instead: it then
//!   either happens there (a pseudo stream on a thread with no current context, which the
//!   runtime sets up) or fails with the runtime's error, code and name (the driver's codes are
//!   not the runtime's). A refused launch enqueued nothing, so it is never made twice.
//! - [`DriverKernel`] ([`Kernel::for_driver`]) is the older form: the kernel's `CUfunction` in
//!   one device's primary context, looked up beforehand.
//!
//! The configuration and attributes are the runtime launch's: `CUlaunchConfig` holds the same
//! grid, block and shared memory, and `CUlaunchAttribute` has the layout of `cudaLaunchAttribute`
//! (cuda.h and driver_types.h: the same ids, an 8-byte header, the same 64-byte value union), so
//! one attribute array serves both calls.
//!
//! Whether the driver path is faster than the runtime's launch is measured by `ordo-bench` (group
//! `launch`: `Kernel::launch`, `Kernel::launch_runtime`, `cudaLaunchKernelEx` and cudarc in the
//! same interleaved rounds); see BENCHMARKS.md.

use super::attributes::Attributes;
use super::driver_path::{driver_config, entry};
use super::kernel::{check_co_resident, launch_runtime_checked};
use super::{Kernel, KernelArgs, LaunchConfig};
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use crate::Device;
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// A kernel resolved for one device's driver launch: its `CUfunction` in that device's primary
/// context, and `cuLaunchKernelEx`. Made by [`Kernel::for_driver`]; `Copy`, owns nothing.
///
/// [`Kernel::launch`] uses the driver by default already, through a handle that serves every
/// device; this form names the device's function itself.
pub struct DriverKernel<Args> {
    kernel: Kernel<Args>,
    func: NonNull<sys::CUfunc_st>,
    launch: sys::CuLaunchKernelExFn,
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
        const CALL: &str = "cudaGetDriverEntryPointByVersion";
        let launch = match entry() {
            Some(launch) => launch,
            None => {
                let (code, _) = crate::driver_calls::query(c"cuLaunchKernelEx");
                crate::error::check(code, CALL)?;
                return Err(Error::usage(crate::UsageKind::NotSupported, CALL, "the driver has no cuLaunchKernelEx"));
            }
        };
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
    /// again through the runtime, so that the error reported is the runtime's, with its code and
    /// name, or the launch happens there (a stream of another device, which the runtime routes
    /// itself).
    ///
    /// # Safety
    /// - Everything [`Kernel::launch`] requires.
    /// - The device's primary context has not been reset (`cudaDeviceReset`) since this was made:
    ///   the function handle belongs to that context.
    #[inline]
    pub unsafe fn launch(&self, stream: StreamRef<'_>, config: &LaunchConfig, mut args: Args) -> Result<()> {
        let func = self.kernel.as_raw();
        config.validate()?;
        if config.cooperative {
            check_co_resident(func, stream.device_or_current()?, config)?;
        }
        let mut attrs = Attributes::of(config);
        let mut ptrs = args.arg_ptrs();
        let ptrs = ptrs.as_mut();
        let params = if ptrs.is_empty() { core::ptr::null_mut() } else { ptrs.as_mut_ptr() };
        let raw = driver_config(config, stream, attrs.as_mut_ptr(), attrs.len());
        // SAFETY: `raw`, the attributes and the argument addresses live across the call; the
        // function and the arguments' validity are the caller's contract.
        let code = unsafe { (self.launch)(&raw, self.func.as_ptr(), params, core::ptr::null_mut()) };
        if code == 0 {
            return Ok(());
        }
        // SAFETY: nothing was enqueued; the configuration was checked above; the caller's
        // contract covers the runtime's launch too.
        unsafe { launch_runtime_checked(func, stream, config, &mut attrs, params) }
    }
}
