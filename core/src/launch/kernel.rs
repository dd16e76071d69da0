//! [`Kernel`]: a typed handle of a kernel's host stub, and the launch: the configuration checked
//! ([`LaunchConfig::validate`], and for a cooperative launch the grid against what the device
//! holds at once), the attributes and argument addresses on the stack, then one driver call
//! (`cuLaunchKernelEx`, see [`driver`](super::driver)) or, where that path is not there or the
//! driver refuses, one runtime call (`cudaLaunchKernelExC`).

use super::attributes::Attributes;
use super::config::{LaunchConfig, DEFAULT_MAX_DYNAMIC_SHARED_MEMORY};
use super::KernelArgs;
use super::KernelFn;
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use crate::Device;
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// A kernel with argument tuple `Args`: the address of the host stub of an `extern "C"
/// __global__` function linked into the program. Copy it freely; it owns nothing.
#[derive(Debug)]
#[repr(transparent)]
pub struct Kernel<Args> {
    pub(super) func: NonNull<c_void>,
    _args: PhantomData<fn(Args)>,
}

static_assertions::assert_eq_size!(Kernel<(i32,)>, *const c_void);

impl<Args> Clone for Kernel<Args> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Args> Copy for Kernel<Args> {}

// SAFETY: a function address; launching from any thread is allowed.
unsafe impl<Args> Send for Kernel<Args> {}
// SAFETY: as above.
unsafe impl<Args> Sync for Kernel<Args> {}

/// Which call launches a kernel: [`Kernel::launch_path`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaunchPath {
    /// The driver's `cuLaunchKernelEx`, with the kernel's handle resolved once (CUDA 12.8 or
    /// later headers, a driver that has it).
    Driver,
    /// The runtime's `cudaLaunchKernelExC`.
    Runtime,
}

impl<Args: KernelArgs> Kernel<Args> {
    /// The kernel whose host stub is `f`, typed by `f`'s parameters:
    /// `Kernel::new(add_one as unsafe extern "C" fn(*mut f32, i32))` for an `extern "C"`
    /// declaration of `add_one` (the function item itself is not a [`KernelFn`]: cast it).
    /// [`declare_kernels!`](crate::declare_kernels) writes the declaration and this call once, as
    /// a constructor `add_one()`. A function that is not a registered kernel fails at launch with
    /// `cudaErrorInvalidDeviceFunction`.
    #[inline(always)]
    pub fn new<F: KernelFn<Args = Args>>(f: F) -> Kernel<Args> {
        let func = NonNull::new(f.addr().cast_mut()).unwrap_or(NonNull::dangling());
        Kernel { func, _args: PhantomData }
    }

    /// A kernel from a raw stub address with the argument tuple the caller states.
    ///
    /// # Safety
    /// - `func` is the host stub of a kernel, or a `cudaKernel_t` (a library's kernel).
    /// - The kernel's parameters are exactly `Args`, in order.
    ///
    /// `None` for null.
    pub unsafe fn from_raw(func: *const c_void) -> Option<Kernel<Args>> {
        NonNull::new(func.cast_mut()).map(|func| Kernel { func, _args: PhantomData })
    }

    /// The stub's address.
    #[inline(always)]
    pub fn as_raw(self) -> *const c_void {
        self.func.as_ptr()
    }

    /// Launches on `stream`. The configuration is checked first (a clear usage error for a zero
    /// grid, a block over 1024 threads, a cooperative grid larger than the device holds at once,
    /// ...); then one call: the driver's `cuLaunchKernelEx` with the kernel's handle resolved
    /// once for the process (see [`driver`](super::driver)), or the runtime's
    /// `cudaLaunchKernelExC` where the driver path is not there or the driver refuses the
    /// launch ([`launch_path`](Self::launch_path) tells which). CUDA's launch-configuration errors
    /// come back here, as the runtime's codes; execution errors at the next query or synchronise
    /// of `stream`. No heap allocation, no lock.
    ///
    /// The kernel runs on the stream's device, whatever the calling thread's current device is
    /// (`docs/cuda-behaviours.md`, CB-16). ordo adds no check on this hot path.
    ///
    /// A launch with more than 48 KiB of dynamic shared memory that CUDA refuses keeps CUDA's
    /// error (code, name, call) and adds ordo's hint to allow it with
    /// [`set_max_dynamic_shared_memory`](Self::set_max_dynamic_shared_memory).
    ///
    /// # Safety
    /// - The kernel's parameters are exactly `Args`, in order and in size: the declaration that
    ///   named the kernel states them (the block of [`declare_kernels!`](crate::declare_kernels),
    ///   or an `extern "C"` declaration cast to a function type), and ordo cannot check it against
    ///   the device code.
    /// - Every pointer in `args` is valid on the stream's device for what the kernel does with
    ///   it, until the kernel completes.
    /// - Memory of another device is reachable there: `cudaMalloc` memory once peer access is
    ///   enabled ([`Device::enable_peer_access`]); pool memory (every [`DeviceBuffer`]) once the
    ///   pool grants this device access (`cudaMemPoolSetAccess`), which peer access alone does
    ///   not do. Otherwise the kernel faults (`cudaErrorIllegalAddress`, a sticky error).
    /// - A [`DeviceBuffer`] used on another stream than its own is ordered after its allocation
    ///   and before its free ([`order`](crate::memory::order)).
    /// - The events named by `config` ([`LaunchConfig::programmatic_event`],
    ///   [`LaunchConfig::launch_completion_event`]) are alive at the launch (the configuration
    ///   keeps their handles, not the events) and belong to the stream's device.
    /// - The kernel's code stays loaded at its address for the life of the process: a shared
    ///   library holding a kernel launched here is not unloaded (`dlclose`) while a kernel at the
    ///   same address may be launched later (ordo keeps each kernel's driver handle by its
    ///   address; [`launch_runtime`](Self::launch_runtime) keeps none). Kernels linked into the
    ///   program, and a [`LibraryKernel`](crate::library::LibraryKernel)'s while its library is
    ///   loaded, meet this.
    /// - Captured: all of the above hold at every replay of every executable graph made from the
    ///   capture's graph, not at this call ([`capture`](crate::graph::capture)).
    ///
    /// [`Device::enable_peer_access`]: crate::Device::enable_peer_access
    /// [`DeviceBuffer`]: crate::memory::DeviceBuffer
    #[inline]
    pub unsafe fn launch(self, stream: StreamRef<'_>, config: &LaunchConfig, mut args: Args) -> Result<()> {
        let mut ptrs = args.arg_ptrs();
        // SAFETY: the stub of a kernel whose parameters are `Args` (by construction), their
        // addresses in order (`KernelArgs`), alive across the call; the rest is the caller's.
        unsafe { launch_raw(self.as_raw(), stream, config, ptrs.as_mut().as_mut_ptr()) }
    }

    /// As [`launch`](Self::launch), always through the runtime's `cudaLaunchKernelExC`: the
    /// same checks, the same attributes, no driver handle kept. For measuring the two paths side
    /// by side, and for kernels of shared libraries that are unloaded and loaded again.
    ///
    /// # Safety
    /// - Everything [`launch`](Self::launch) requires, except its obligation on the kernel's code
    ///   staying loaded at its address after the kernel completes (this path keeps no handle).
    #[inline]
    pub unsafe fn launch_runtime(self, stream: StreamRef<'_>, config: &LaunchConfig, mut args: Args) -> Result<()> {
        let mut ptrs = args.arg_ptrs();
        // SAFETY: as in `launch`.
        unsafe { launch_raw_runtime(self.as_raw(), stream, config, ptrs.as_mut().as_mut_ptr()) }
    }

    /// Which call [`launch`](Self::launch) makes for this kernel now: the driver's where the
    /// driver path is there and the kernel resolves (resolving it, once, if it was not yet),
    /// else the runtime's. A launch the driver refuses is still made through the runtime.
    pub fn launch_path(self) -> LaunchPath {
        path_for(self.as_raw())
    }

    /// Allows up to `bytes` of dynamic shared memory a block (`cudaFuncSetAttribute` with
    /// `cudaFuncAttributeMaxDynamicSharedMemorySize`), checked against the device's opt-in limit
    /// with a clear error.
    ///
    /// The attribute belongs to the kernel *on the calling thread's current device* only: a launch
    /// on a stream of another device still gets the 48 KiB default there. Use
    /// [`set_max_dynamic_shared_memory_on`](Self::set_max_dynamic_shared_memory_on) to name the
    /// device.
    pub fn set_max_dynamic_shared_memory(self, bytes: u32) -> Result<()> {
        self.set_max_dynamic_shared_memory_here(crate::Device::current()?, bytes)
    }

    /// As [`set_max_dynamic_shared_memory`](Self::set_max_dynamic_shared_memory), for the kernel
    /// on `device` (made current for the call, then restored).
    pub fn set_max_dynamic_shared_memory_on(self, device: crate::Device, bytes: u32) -> Result<()> {
        device.with_current(|| self.set_max_dynamic_shared_memory_here(device, bytes))
    }

    /// The body of both setters; `device` is the current device.
    fn set_max_dynamic_shared_memory_here(self, device: crate::Device, bytes: u32) -> Result<()> {
        const CALL: &str = "Kernel::set_max_dynamic_shared_memory";
        let limit = device.max_shared_memory_per_block_optin()?;
        let static_bytes = u64::try_from(self.attributes()?.sharedSizeBytes).unwrap_or(u64::MAX);
        if u64::from(bytes).saturating_add(static_bytes) > u64::from(limit) {
            return Err(Error::invalid(
                CALL,
                "dynamic plus static shared memory over the device's opt-in limit (cudaDevAttrMaxSharedMemoryPerBlockOptin)",
            ));
        }
        let bytes =
            c_int::try_from(bytes).map_err(|_| Error::invalid(CALL, "shared memory size over i32::MAX bytes"))?;
        // SAFETY: a kernel stub; plain values.
        cuda_call!(unsafe {
            sys::cudaFuncSetAttribute(
                self.as_raw(),
                sys::cudaFuncAttribute::cudaFuncAttributeMaxDynamicSharedMemorySize,
                bytes,
            )
        })
    }

    /// The kernel's attributes (`cudaFuncGetAttributes`): registers, static shared memory, the
    /// binary and PTX versions it was loaded from.
    pub fn attributes(self) -> Result<sys::cudaFuncAttributes> {
        let mut attrs = sys::cudaFuncAttributes::default();
        // SAFETY: `attrs` is writable; a kernel stub.
        cuda_call!(unsafe { sys::cudaFuncGetAttributes(&mut attrs, self.as_raw()) })?;
        Ok(attrs)
    }

    /// How many blocks of `block_threads` threads with `shared_mem_bytes` dynamic shared memory fit
    /// on one SM at once (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`).
    pub fn max_active_blocks_per_sm(self, block_threads: u32, shared_mem_bytes: u32) -> Result<u32> {
        max_active_blocks_raw(self.as_raw(), block_threads, shared_mem_bytes)
    }
}

/// Launches the kernel whose host stub is `func` on `stream` with the argument addresses `args`,
/// as [`Kernel::launch`] does for a typed kernel (the same checks, the same attributes on the
/// stack, the driver path by default): for callers that hold a kernel only as an address, the C
/// ABI's `ordo_launch_kernel`.
///
/// # Safety
/// - `func` is the host stub of a kernel (or a `cudaKernel_t`).
/// - `args` points to one pointer to each of the kernel's arguments, in order, each pointing to
///   a value of that parameter's type (null for a kernel without parameters).
/// - Everything [`Kernel::launch`] requires.
#[inline]
pub unsafe fn launch_raw(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> Result<()> {
    // The fast path: a configuration `validate` accepts, with no attribute and not cooperative,
    // goes to the driver with no attribute array (comparisons, the table's lookup, the call).
    #[cfg(cuda_12_8)]
    if config.is_plain() {
        debug_assert!(
            config.validate().is_ok() && Attributes::of(config).len() == 0 && !config.cooperative,
            "is_plain takes only what validate accepts with no attribute"
        );
        // SAFETY: `config` is one `validate` accepts, with no attributes and not cooperative; the
        // caller's contract.
        if unsafe { super::driver_path::try_launch_plain(func, stream, config, args) } {
            return Ok(());
        }
        // SAFETY: as above; nothing was launched.
        return unsafe { runtime_fallback(func, stream, config, &mut Attributes::of(config), args) };
    }
    // SAFETY: the caller's contract.
    unsafe { launch_raw_general(func, stream, config, args) }
}

/// [`launch_raw`] for configurations with attributes, cooperative ones, and those `validate`
/// refuses: checked, then launched with their attributes. Out of line, so that the fast path
/// inlines into its callers.
///
/// # Safety
/// As [`launch_raw`].
#[inline(never)]
unsafe fn launch_raw_general(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> Result<()> {
    check(func, stream, config)?;
    let mut attrs = Attributes::of(config);
    #[cfg(cuda_12_8)]
    {
        // SAFETY: checked above; `attrs` are `config`'s; the caller's contract.
        if unsafe { super::driver_path::try_launch(func, stream, config, &mut attrs, args) } {
            return Ok(());
        }
        // SAFETY: as above; nothing was launched.
        unsafe { runtime_fallback(func, stream, config, &mut attrs, args) }
    }
    #[cfg(not(cuda_12_8))]
    // SAFETY: checked above; `attrs` are `config`'s; the caller's contract.
    unsafe {
        launch_runtime_checked(func, stream, config, &mut attrs, args)
    }
}

/// The runtime launch after the driver path could not launch, out of line.
///
/// # Safety
/// As [`launch_runtime_checked`].
#[cfg(cuda_12_8)]
#[cold]
#[inline(never)]
unsafe fn runtime_fallback(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    attrs: &mut Attributes,
    args: *mut *mut c_void,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { launch_runtime_checked(func, stream, config, attrs, args) }
}

/// As [`launch_raw`], always through the runtime's `cudaLaunchKernelExC` (see
/// [`Kernel::launch_runtime`]).
///
/// # Safety
/// - Everything [`launch_raw`] requires, except its obligation on the kernel's code staying
///   loaded at its address after the kernel completes (this path keeps no handle).
#[inline]
pub unsafe fn launch_raw_runtime(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> Result<()> {
    check(func, stream, config)?;
    let mut attrs = Attributes::of(config);
    // SAFETY: checked above; `attrs` are `config`'s; the caller's contract.
    unsafe { launch_runtime_checked(func, stream, config, &mut attrs, args) }
}

/// Which call a launch of `func` makes now.
pub(super) fn path_for(func: *const c_void) -> LaunchPath {
    #[cfg(cuda_12_8)]
    if super::driver_path::available_for(func) {
        return LaunchPath::Driver;
    }
    let _ = func;
    LaunchPath::Runtime
}

/// The checks before any launch: the configuration, and for a cooperative launch the grid
/// against what the stream's device holds at once.
#[inline(always)]
fn check(func: *const c_void, stream: StreamRef<'_>, config: &LaunchConfig) -> Result<()> {
    config.validate()?;
    if config.cooperative {
        check_co_resident(func, stream.device_or_current()?, config)?;
    }
    Ok(())
}

/// `cudaLaunchKernelExC` of `func` with `config` and its attributes `attrs`.
///
/// # Safety
/// - `config` was checked ([`LaunchConfig::validate`], and the cooperative check);
/// - `attrs` are `config`'s attributes;
/// - `func` and `args` are as [`launch_raw`] requires, and the rest of its contract holds.
#[inline(always)]
pub(super) unsafe fn launch_runtime_checked(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    attrs: &mut Attributes,
    args: *mut *mut c_void,
) -> Result<()> {
    let raw = sys::cudaLaunchConfig_t {
        gridDim: config.grid.to_raw(),
        blockDim: config.block.to_raw(),
        dynamicSmemBytes: config.shared_mem_bytes as usize,
        stream: stream.as_raw(),
        attrs: attrs.as_mut_ptr(),
        numAttrs: attrs.len(),
    };
    // SAFETY: `raw` and the attribute array live across the call; the caller owes `func`, `args`
    // and the validity of what the arguments point to.
    let code = unsafe { sys::cudaLaunchKernelExC(&raw, func, args) };
    if code == sys::cudaError::cudaSuccess {
        return Ok(());
    }
    launch_error(code, config)
}

/// Blocks of `threads` threads with `shared_mem_bytes` of dynamic shared memory that fit on one SM
/// at once for the kernel `func` on the current device (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`).
fn max_active_blocks_raw(func: *const c_void, threads: u32, shared_mem_bytes: u32) -> Result<u32> {
    let mut n: c_int = 0;
    let threads = c_int::try_from(threads).unwrap_or(c_int::MAX);
    // SAFETY: `n` is writable; `func` is a kernel stub (the callers' contract).
    cuda_call!(unsafe {
        sys::cudaOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, func, threads, shared_mem_bytes as usize)
    })?;
    Ok(n.max(0) as u32)
}

/// For a cooperative launch on `device` (or a cooperative kernel node that runs there): the
/// device supports it (`cudaDevAttrCooperativeLaunch`) and the whole grid fits on it at once
/// (resident blocks a SM x SMs), else a clear error before CUDA is asked. Out of the hot path:
/// only cooperative launches come here.
#[cold]
pub(crate) fn check_co_resident(func: *const c_void, device: Device, config: &LaunchConfig) -> Result<()> {
    const CALL: &str = "Kernel::launch (cooperative)";
    device.with_current(|| {
        if device.attribute(sys::cudaDeviceAttr::cudaDevAttrCooperativeLaunch)? == 0 {
            return Err(Error::usage(crate::UsageKind::NotSupported, CALL, "the device has no cooperative launch"));
        }
        let threads = u32::try_from(config.block.volume()).unwrap_or(u32::MAX);
        let per_sm = max_active_blocks_raw(func, threads, config.shared_mem_bytes)?;
        let at_once = u128::from(per_sm) * u128::from(device.sm_count()?);
        if config.grid.volume() > at_once {
            return Err(Error::invalid(
                CALL,
                "a cooperative grid larger than the device holds at once (resident blocks a SM x SMs)",
            ));
        }
        Ok(())
    })
}

/// The error path of a launch, out of line: clears a non-sticky launch error from the runtime's
/// last-error slot so it is not reported twice, and adds ordo's hint to a shared-memory refusal
/// while keeping CUDA's code.
#[cold]
#[inline(never)]
fn launch_error(code: sys::cudaError_t, config: &LaunchConfig) -> Result<()> {
    let mut err = crate::error::CudaError::from_failed_call(code, "cudaLaunchKernelExC");
    if !err.is_sticky() {
        // SAFETY: no arguments.
        unsafe { sys::cudaGetLastError() };
    }
    if config.shared_mem_bytes > DEFAULT_MAX_DYNAMIC_SHARED_MEMORY
        && (code == sys::cudaError::cudaErrorInvalidValue || code == sys::cudaError::cudaErrorInvalidConfiguration)
    {
        err = err.with_hint(
            "dynamic shared memory over 48 KiB needs Kernel::set_max_dynamic_shared_memory first, on the stream's device (or is over the device's limit)",
        );
    }
    Err(Error::Cuda(err))
}
