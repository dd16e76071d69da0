//! Typed kernel launch: a [`Kernel`] handle made from an `extern "C" __global__` function's host
//! stub, a [`LaunchConfig`] with launch attributes (PDL, priority, cluster and preferred cluster
//! dimensions, cooperative launch, memory-synchronisation domain, programmatic and
//! launch-completion events), and a launch with the arguments and attributes on the stack: no
//! heap allocation, no lock, nothing the call does not need beyond integer checks of the
//! configuration.
//!
//! - [`declare_kernels!`](crate::declare_kernels): kernels declared once by their signature, each
//!   with a constructor of its typed [`Kernel`];
//! - [`config`](LaunchConfig): grid, block, shared memory and the attributes' fields, with the
//!   checks that need no device;
//! - [`attributes`]: what each attribute is in CUDA, and whether a graph's kernel node keeps it;
//! - [`KernelArgs`]: argument tuples passed by address from a stack array;
//! - [`Kernel`]: the launch, through the driver's `cuLaunchKernelEx` by default ([`driver`]),
//!   through the runtime's `cudaLaunchKernelExC` where that path is not there
//!   ([`Kernel::launch_runtime`] always);
//! - [`pdl`]: one kernel body in a plain and a PDL form, and the rule that picks.
//!
//! ```no_run
//! use ordo_cuda_core::launch::LaunchConfig;
//! use ordo_cuda_core::{DeviceBuffer, Stream};
//! ordo_cuda_core::declare_kernels! {
//!     unsafe extern "C" {
//!         /// `x[i] += 1` over `n` elements (`extern "C" __global__ void add_one(float*, int)`).
//!         fn add_one(x: *mut f32, n: i32);
//!     }
//! }
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let mut x = DeviceBuffer::<f32>::zeroed_async(1 << 20, stream.as_stream())?;
//! let kernel = add_one(); // a `Kernel<(*mut f32, i32)>`
//! let config = LaunchConfig::for_elements(x.len(), 256)?;
//! // SAFETY: `add_one` stays inside the first n elements; `x` is freed on this stream, after the
//! // kernel.
//! unsafe { kernel.launch(stream.as_stream(), &config, (x.as_mut_ptr(), x.len() as i32))? };
//! # Ok(()) }
//! ```
//!
//! # Programmatic Dependent Launch
//! [`LaunchConfig::with_pdl`] sets `cudaLaunchAttributeProgrammaticStreamSerialization`: the kernel
//! may start before the previous kernel on the stream has finished, once every block of that
//! kernel has called `cudaTriggerProgrammaticLaunchCompletion` (or exited). The dependent kernel
//! must call `cudaGridDependencySynchronize` before it reads anything the previous kernel wrote
//! (`include/ordo/pdl.cuh` wraps both). Captured into a graph, the launch keeps a programmatic
//! edge. A kernel that contains the wait costs more in grids of several waves even without the
//! attribute: [`PdlKernel`] holds a plain form and a PDL form of one body and launches the one
//! [`PdlPlan`]'s rule picks (see [`pdl`]).

mod args;
pub mod attributes;
mod config;
mod declare;
#[cfg(cuda_12_8)]
pub mod driver;
#[cfg(cuda_12_8)]
mod driver_path;
mod kernel;
pub mod pdl;
#[cfg(cuda_12_8)]
mod resolved;

pub use args::{KernelArgs, KernelFn};
pub use attributes::{LaunchEvent, MemSyncDomain, ProgrammaticEvent};
pub use config::{Dim3, LaunchConfig, DEFAULT_MAX_DYNAMIC_SHARED_MEMORY};
#[cfg(cuda_12_8)]
pub use driver::DriverKernel;
pub use kernel::{launch_raw, launch_raw_runtime, Kernel, LaunchPath};
pub use pdl::{BeyondOneWave, PdlKernel, PdlMode, PdlPlan, PDL_MAX_WAVES};

pub(crate) use attributes::Attribute;
pub(crate) use kernel::check_co_resident;

/// The `CUkernel` the driver path launches `func` with (resolving it if it was not yet); `None`
/// where there is none.
#[cfg(all(feature = "alloc", cuda_12_8))]
pub(crate) fn resolved_kernel(func: *const core::ffi::c_void) -> Option<core::ptr::NonNull<core::ffi::c_void>> {
    resolved::kernel_handle(func)
}

/// The driver handle (`cudaKernel_t`) of the kernel at `func` (its host stub, or a handle), for a
/// caller that can ask the CUDA runtime that registered the stub, which may be another copy than
/// ordo's (a program linked with the static CUDA runtime beside a shared ordo): `resolve` is that
/// runtime's `cudaGetKernel` of `func`, `None` where it fails, and `key` names it (the same for
/// every call that passes the same resolver: the address of the function it calls, for one). It
/// is called where ordo's table of kernels holds no handle for `func` (its first launch), not per
/// launch; its handle is entered under `func` and under itself, so that every later launch of
/// either finds it. Where it fails and ordo's runtime says `func` is none of its kernels either,
/// `key` is remembered for `func` (the last key that failed there) and its resolver not asked
/// again, while a call with another key is (another copy of the runtime, which may know the
/// stub); a null `key` is never remembered. `None`:
/// launch `func` as it is (which ordo's runtime then resolves or refuses). Built against CUDA
/// before 12.8 (no table, no driver launch), always `None`, and `resolve` is not called.
///
/// # Safety
/// - What `resolve` returns is the `CUkernel` of the kernel whose stub (or handle) is `func`, and
///   stays valid while that kernel's code stays loaded at `func`: the entry serves every later
///   launch of `func` in the process, [`Kernel::launch`] and [`launch_raw`] included.
#[inline(always)]
pub unsafe fn kernel_handle_with(
    func: *const core::ffi::c_void,
    key: *const core::ffi::c_void,
    resolve: impl FnOnce() -> Option<core::ptr::NonNull<core::ffi::c_void>>,
) -> Option<core::ptr::NonNull<core::ffi::c_void>> {
    #[cfg(cuda_12_8)]
    // SAFETY: the caller's contract.
    return unsafe { resolved::kernel_handle_with(func, key, resolve) };
    #[cfg(not(cuda_12_8))]
    {
        let _ = (func, key, resolve);
        None
    }
}

/// Enters a library's kernel (a `cudaKernel_t`) as its own driver handle, so that its launches
/// through the driver never ask the runtime for it.
#[cfg(all(feature = "alloc", cuda_library_api))]
pub(crate) fn remember_library_kernel(kernel: core::ptr::NonNull<core::ffi::c_void>) {
    #[cfg(cuda_12_8)]
    resolved::remember(kernel);
    #[cfg(not(cuda_12_8))]
    let _ = kernel;
}
