//! Typed kernel launch: a [`Kernel`] handle made from an `extern "C" __global__` function's host
//! stub, a [`LaunchConfig`] with launch attributes (PDL, priority, cluster and preferred cluster
//! dimensions, cooperative launch, memory-synchronisation domain), and a launch
//! that calls `cudaLaunchKernelExC` with the arguments and attributes on the stack: no heap
//! allocation, no lock, nothing the raw call does not need beyond integer checks of the
//! configuration.
//!
//! ```no_run
//! use ordo_cuda_core::launch::{Kernel, LaunchConfig};
//! use ordo_cuda_core::{DeviceBuffer, Stream};
//! extern "C" {
//!     // The host stub nvcc generates for `extern "C" __global__ void add_one(float*, int)`.
//!     fn add_one(x: *mut f32, n: i32);
//! }
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let mut x = DeviceBuffer::<f32>::zeroed_async(1 << 20, stream.as_stream())?;
//! let kernel = Kernel::new(add_one as unsafe extern "C" fn(*mut f32, i32));
//! let config = LaunchConfig::for_elements(x.len(), 256)?;
//! // SAFETY: `add_one` takes (float*, int) and stays inside the first n elements; `x` is freed on
//! // this stream, after the kernel.
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

#[cfg(cuda_12_8)]
pub mod driver;
pub mod pdl;
#[cfg(cuda_12_8)]
pub use driver::DriverKernel;
pub use pdl::{BeyondOneWave, PdlKernel, PdlMode, PdlPlan, PDL_MAX_WAVES};

use crate::error::{Error, Result};
use crate::stream::StreamRef;
use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// Grid or block dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    /// x extent.
    pub x: u32,
    /// y extent.
    pub y: u32,
    /// z extent.
    pub z: u32,
}

impl Dim3 {
    /// `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }

    /// `x * y * z`, in u128 so it cannot overflow (three `u32` factors can exceed `u64`).
    pub const fn volume(self) -> u128 {
        self.x as u128 * self.y as u128 * self.z as u128
    }

    #[inline(always)]
    fn to_raw(self) -> sys::dim3 {
        sys::dim3 { x: self.x, y: self.y, z: self.z }
    }
}

impl From<u32> for Dim3 {
    fn from(x: u32) -> Dim3 {
        Dim3::new(x, 1, 1)
    }
}

impl From<(u32, u32)> for Dim3 {
    fn from((x, y): (u32, u32)) -> Dim3 {
        Dim3::new(x, y, 1)
    }
}

impl From<(u32, u32, u32)> for Dim3 {
    fn from((x, y, z): (u32, u32, u32)) -> Dim3 {
        Dim3::new(x, y, z)
    }
}

/// How a kernel is launched: grid, block, dynamic shared memory, and launch attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: Dim3,
    /// Threads in a block (at most 1024 in all).
    pub block: Dim3,
    /// Dynamic shared memory a block, in bytes. Above 48 KiB the kernel must first be allowed it
    /// with [`Kernel::set_max_dynamic_shared_memory`].
    pub shared_mem_bytes: u32,
    /// Programmatic stream serialization (PDL): may start before the previous kernel finishes.
    pub pdl: bool,
    /// Launch priority (`cudaLaunchAttributePriority`), lower is higher, as for streams.
    pub priority: Option<i32>,
    /// Thread-block cluster dimensions (`cudaLaunchAttributeClusterDimension`, sm_90 and later).
    pub cluster: Option<Dim3>,
    /// A cooperative launch (`cudaLaunchAttributeCooperative`): every block is resident at once,
    /// so blocks may synchronise across the grid (`cooperative_groups::this_grid().sync()`). The
    /// grid is checked against what the device holds at once before the launch.
    pub cooperative: bool,
    /// The memory-synchronisation domain (`cudaLaunchAttributeMemSyncDomain`, sm_90 and later).
    pub mem_sync_domain: Option<MemSyncDomain>,
    /// Preferred cluster dimensions (`cudaLaunchAttributePreferredClusterDimension`, CUDA 12.8
    /// headers and sm_90 or later): the hardware uses them where it can, else `cluster`, of which
    /// they must be a multiple.
    pub preferred_cluster: Option<Dim3>,
    /// An event the kernel's blocks fire (`cudaLaunchAttributeProgrammaticEvent`): once every
    /// block has called `cudaTriggerProgrammaticLaunchCompletion()` (or, with
    /// `trigger_at_block_start`, as each block starts). Work on another stream that waits on it
    /// may overlap the kernel; what it reads of the kernel's writes is not ordered by it.
    pub programmatic_event: Option<ProgrammaticEvent>,
    /// An event recorded once every block of the kernel has started
    /// (`cudaLaunchAttributeLaunchCompletionEvent`): work waiting on it may start while the
    /// kernel still runs.
    pub launch_completion_event: Option<LaunchEvent>,
}

/// An event named in a [`LaunchConfig`]: the handle of an [`Event`](crate::Event), taken when
/// the configuration was built. The launch that uses it owes that the event is still alive then
/// and belongs to the stream's device (see [`Kernel::launch`]'s contract).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchEvent {
    raw: sys::cudaEvent_t,
}

// SAFETY: a handle value; nothing is done with it but the launch, which is `unsafe` and owes that
// the event is alive.
unsafe impl Send for LaunchEvent {}
// SAFETY: as above.
unsafe impl Sync for LaunchEvent {}

impl LaunchEvent {
    /// The event `event`.
    pub fn of(event: &crate::Event) -> LaunchEvent {
        LaunchEvent { raw: event.as_raw() }
    }

    /// A raw event handle; `None` for null. Nothing is done with the handle here: the launch that
    /// uses it owes that it is a live event made with `cudaEventDisableTiming` on the stream's
    /// device (see [`Kernel::launch`]).
    pub fn from_raw(raw: sys::cudaEvent_t) -> Option<LaunchEvent> {
        (!raw.is_null()).then_some(LaunchEvent { raw })
    }

    /// The raw handle.
    pub fn as_raw(self) -> sys::cudaEvent_t {
        self.raw
    }
}

/// A [`LaunchConfig::programmatic_event`]: the event, and whether each block fires it as it
/// starts rather than when it calls `cudaTriggerProgrammaticLaunchCompletion()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgrammaticEvent {
    /// The event.
    pub event: LaunchEvent,
    /// Each block triggers the event as it starts.
    pub trigger_at_block_start: bool,
}

/// A memory-synchronisation domain (`cudaLaunchMemSyncDomain`): a kernel's memory fences order
/// only with work of its own domain, so that, say, a communication kernel in `Remote` does not
/// wait for the fences of compute kernels in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemSyncDomain {
    /// `cudaLaunchMemSyncDomainDefault`.
    Default,
    /// `cudaLaunchMemSyncDomainRemote`.
    Remote,
}

impl MemSyncDomain {
    fn to_raw(self) -> sys::cudaLaunchMemSyncDomain {
        match self {
            MemSyncDomain::Default => sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainDefault,
            MemSyncDomain::Remote => sys::cudaLaunchMemSyncDomain::cudaLaunchMemSyncDomainRemote,
        }
    }
}

/// The most attributes one launch sets (PDL, priority, cluster, cooperative, memory-sync domain,
/// preferred cluster, programmatic event, launch-completion event): an array of this many on the
/// stack.
const MAX_ATTRIBUTES: usize = 8;

/// Largest dynamic shared memory a block gets without opting in.
pub const DEFAULT_MAX_DYNAMIC_SHARED_MEMORY: u32 = 48 * 1024;

impl LaunchConfig {
    /// `grid` blocks of `block` threads, no shared memory, no attributes.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> LaunchConfig {
        LaunchConfig {
            grid: grid.into(),
            block: block.into(),
            shared_mem_bytes: 0,
            pdl: false,
            priority: None,
            cluster: None,
            cooperative: false,
            mem_sync_domain: None,
            preferred_cluster: None,
            programmatic_event: None,
            launch_completion_event: None,
        }
    }

    /// A 1-D grid of `block`-thread blocks covering `n` elements (the last block partly idle).
    pub fn for_elements(n: usize, block: u32) -> Result<LaunchConfig> {
        const CALL: &str = "LaunchConfig::for_elements";
        if n == 0 {
            return Err(Error::invalid(CALL, "zero elements: a grid needs at least one block"));
        }
        if block == 0 || block > 1024 {
            return Err(Error::invalid(CALL, "block size must be 1..=1024 threads"));
        }
        let blocks = n.div_ceil(block as usize);
        let grid = u32::try_from(blocks)
            .ok()
            .filter(|&g| g <= i32::MAX as u32)
            .ok_or(Error::invalid(CALL, "too many elements: the grid would exceed 2^31-1 blocks"))?;
        Ok(LaunchConfig::new(grid, block))
    }

    /// A 2-D or 3-D grid of `block` blocks covering `extent` (width, height[, depth]) elements,
    /// each dimension rounded up (the last blocks of a row, column or layer partly idle): for an
    /// image of `(width, height)` pixels with `(16, 16)` blocks, the grid is
    /// `(ceil(width / 16), ceil(height / 16))`. A zero extent or block dimension, a block over
    /// 1024 threads (or z over 64), or a grid over CUDA's limits is a clear error, checked here
    /// as [`validate`](Self::validate) would.
    pub fn for_extent(extent: impl Into<Dim3>, block: impl Into<Dim3>) -> Result<LaunchConfig> {
        const CALL: &str = "LaunchConfig::for_extent";
        let (e, b) = (extent.into(), block.into());
        if e.x == 0 || e.y == 0 || e.z == 0 {
            return Err(Error::invalid(CALL, "zero extent: a grid needs at least one block"));
        }
        if b.x == 0 || b.y == 0 || b.z == 0 {
            return Err(Error::invalid(CALL, "zero block dimension"));
        }
        let config = LaunchConfig::new(Dim3 { x: e.x.div_ceil(b.x), y: e.y.div_ceil(b.y), z: e.z.div_ceil(b.z) }, b);
        config.validate()?;
        Ok(config)
    }

    /// With programmatic stream serialization (PDL) on or off.
    pub fn with_pdl(mut self, on: bool) -> LaunchConfig {
        self.pdl = on;
        self
    }

    /// With `bytes` of dynamic shared memory a block.
    pub fn with_shared_mem(mut self, bytes: u32) -> LaunchConfig {
        self.shared_mem_bytes = bytes;
        self
    }

    /// With a launch priority.
    pub fn with_priority(mut self, priority: i32) -> LaunchConfig {
        self.priority = Some(priority);
        self
    }

    /// With thread-block cluster dimensions.
    pub fn with_cluster(mut self, cluster: impl Into<Dim3>) -> LaunchConfig {
        self.cluster = Some(cluster.into());
        self
    }

    /// As a cooperative launch or not (see [`cooperative`](Self::cooperative)).
    pub fn with_cooperative(mut self, on: bool) -> LaunchConfig {
        self.cooperative = on;
        self
    }

    /// In the memory-synchronisation domain `domain`.
    pub fn with_mem_sync_domain(mut self, domain: MemSyncDomain) -> LaunchConfig {
        self.mem_sync_domain = Some(domain);
        self
    }

    /// With preferred cluster dimensions (a multiple of the cluster dimensions, which must be
    /// set too).
    pub fn with_preferred_cluster(mut self, preferred: impl Into<Dim3>) -> LaunchConfig {
        self.preferred_cluster = Some(preferred.into());
        self
    }

    /// With `event` fired by the kernel's blocks (see [`programmatic_event`](Self::programmatic_event)):
    /// as each block starts when `trigger_at_block_start`, else once every block has called
    /// `cudaTriggerProgrammaticLaunchCompletion()`.
    pub fn with_programmatic_event(mut self, event: &crate::Event, trigger_at_block_start: bool) -> LaunchConfig {
        self.programmatic_event = Some(ProgrammaticEvent { event: LaunchEvent::of(event), trigger_at_block_start });
        self
    }

    /// With `event` recorded once every block has started (see
    /// [`launch_completion_event`](Self::launch_completion_event)).
    pub fn with_launch_completion_event(mut self, event: &crate::Event) -> LaunchConfig {
        self.launch_completion_event = Some(LaunchEvent::of(event));
        self
    }

    /// Checks what can be checked without the device: non-zero dimensions within CUDA's limits,
    /// at most 1024 threads a block, a grid divisible by its cluster.
    pub fn validate(&self) -> Result<()> {
        const CALL: &str = "LaunchConfig::validate";
        let (g, b) = (self.grid, self.block);
        if g.x == 0 || g.y == 0 || g.z == 0 {
            return Err(Error::invalid(CALL, "zero grid dimension"));
        }
        if g.x > i32::MAX as u32 || g.y > 65535 || g.z > 65535 {
            return Err(Error::invalid(CALL, "grid dimension over CUDA's limit (x < 2^31, y and z <= 65535)"));
        }
        if b.x == 0 || b.y == 0 || b.z == 0 {
            return Err(Error::invalid(CALL, "zero block dimension"));
        }
        if b.volume() > 1024 || b.z > 64 {
            return Err(Error::invalid(CALL, "block over 1024 threads (or z over 64)"));
        }
        if let Some(c) = self.cluster {
            if c.x == 0 || c.y == 0 || c.z == 0 {
                return Err(Error::invalid(CALL, "zero cluster dimension"));
            }
            if g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0 {
                return Err(Error::invalid(CALL, "grid not a multiple of the cluster dimensions"));
            }
        }
        if let Some(p) = self.preferred_cluster {
            if !cfg!(cuda_12_8) {
                return Err(Error::usage(
                    crate::UsageKind::NotSupported,
                    CALL,
                    "preferred cluster dimensions need CUDA 12.8 or later headers",
                ));
            }
            let Some(c) = self.cluster else {
                return Err(Error::invalid(CALL, "preferred cluster dimensions without cluster dimensions"));
            };
            if p.x == 0 || p.y == 0 || p.z == 0 || p.x % c.x != 0 || p.y % c.y != 0 || p.z % c.z != 0 {
                return Err(Error::invalid(CALL, "preferred cluster dimensions not a multiple of the cluster's"));
            }
            if g.x % p.x != 0 || g.y % p.y != 0 || g.z % p.z != 0 {
                return Err(Error::invalid(CALL, "grid not a multiple of the preferred cluster dimensions"));
            }
        }
        if self.cooperative && self.cluster.is_some() {
            return Err(Error::invalid(CALL, "a cooperative launch with clusters: CUDA allows only one of the two"));
        }
        Ok(())
    }
}

/// A tuple of kernel arguments, passed by address to `cudaLaunchKernelExC` from a stack array.
///
/// # Safety
/// `arg_ptrs` returns one pointer to each argument, in order.
pub unsafe trait KernelArgs {
    /// The array of argument addresses (`[*mut c_void; N]`).
    type Ptrs: AsMut<[*mut c_void]>;
    /// The address of each argument, in order.
    fn arg_ptrs(&mut self) -> Self::Ptrs;
}

/// A function pointer type that can name a kernel's host stub, and its argument tuple.
pub trait KernelFn: Copy {
    /// The argument tuple.
    type Args: KernelArgs;
    /// The stub's address.
    fn addr(self) -> *const c_void;
}

macro_rules! kernel_args {
    ($n:literal; $($t:ident . $i:tt),*) => {
        // SAFETY: one address a field, in order.
        unsafe impl<$($t: Copy),*> KernelArgs for ($($t,)*) {
            type Ptrs = [*mut c_void; $n];
            #[inline(always)]
            #[allow(clippy::unused_unit)]
            fn arg_ptrs(&mut self) -> [*mut c_void; $n] {
                [$((&mut self.$i as *mut $t).cast::<c_void>()),*]
            }
        }

        impl<$($t: Copy),*> KernelFn for unsafe extern "C" fn($($t),*) {
            type Args = ($($t,)*);
            #[inline(always)]
            fn addr(self) -> *const c_void {
                self as *const c_void
            }
        }
    };
}

kernel_args!(0;);
kernel_args!(1; A.0);
kernel_args!(2; A.0, B.1);
kernel_args!(3; A.0, B.1, C.2);
kernel_args!(4; A.0, B.1, C.2, D.3);
kernel_args!(5; A.0, B.1, C.2, D.3, E.4);
kernel_args!(6; A.0, B.1, C.2, D.3, E.4, F.5);
kernel_args!(7; A.0, B.1, C.2, D.3, E.4, F.5, G.6);
kernel_args!(8; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
kernel_args!(9; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);
kernel_args!(10; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9);
kernel_args!(11; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10);
kernel_args!(12; A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11);

/// A kernel with argument tuple `Args`: the address of the host stub of an `extern "C"
/// __global__` function linked into the program. Copy it freely; it owns nothing.
#[derive(Debug)]
#[repr(transparent)]
pub struct Kernel<Args> {
    func: NonNull<c_void>,
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

impl<Args: KernelArgs> Kernel<Args> {
    /// The kernel whose host stub is `f`, typed by `f`'s parameters:
    /// `Kernel::new(add_one as unsafe extern "C" fn(*mut f32, i32))`. A function that is not a
    /// registered kernel fails at launch with `cudaErrorInvalidDeviceFunction`.
    #[inline(always)]
    pub fn new<F: KernelFn<Args = Args>>(f: F) -> Kernel<Args> {
        let func = NonNull::new(f.addr().cast_mut()).unwrap_or(NonNull::dangling());
        Kernel { func, _args: PhantomData }
    }

    /// A kernel from a raw stub address with the argument tuple the caller states.
    ///
    /// # Safety
    /// `func` is the host stub of a kernel whose parameters are exactly `Args`; `None` for null.
    pub unsafe fn from_raw(func: *const c_void) -> Option<Kernel<Args>> {
        NonNull::new(func.cast_mut()).map(|func| Kernel { func, _args: PhantomData })
    }

    /// The stub's address.
    #[inline(always)]
    pub fn as_raw(self) -> *const c_void {
        self.func.as_ptr()
    }

    /// Launches on `stream` (`cudaLaunchKernelExC`). The configuration is checked first (a clear
    /// usage error for a zero grid, a block over 1024 threads, ...); CUDA's own launch-configuration
    /// errors are returned here, execution errors at the next query or synchronise.
    ///
    /// The kernel runs on the stream's device, whatever the calling thread's current device is
    /// (measured with CUDA 13.0 on two H200s: a launch onto another device's stream is accepted and
    /// runs there). ordo adds no check on this hot path.
    ///
    /// A launch with more than 48 KiB of dynamic shared memory that CUDA refuses keeps CUDA's error
    /// (code, name, call) and adds ordo's hint to allow it with
    /// [`set_max_dynamic_shared_memory`](Self::set_max_dynamic_shared_memory).
    ///
    /// # Safety
    /// The kernel runs with `args` on the stream's device: every pointer in them must be valid
    /// there for what the kernel does with it, and stay allocated until the kernel completes.
    /// Memory of another device is valid there only where that device granted access to it:
    /// `cudaMalloc` memory once peer access is enabled ([`Device::enable_peer_access`]); memory
    /// from a stream-ordered pool (every [`DeviceBuffer`]) only once the pool grants this device
    /// access (`cudaMemPoolSetAccess`), which peer access alone does not do. Otherwise the kernel
    /// faults (`cudaErrorIllegalAddress`, a sticky error). Memory of a [`DeviceBuffer`] used on
    /// another stream than its own must also be ordered after its allocation and before its free
    /// (see [`order`](crate::memory::order)).
    ///
    /// Captured into a graph, the kernel runs at every launch of every executable graph made from
    /// it, not at this call: the capture's contract ([`capture`](crate::graph::capture)) extends the
    /// above to every such launch.
    ///
    /// The events the configuration names ([`LaunchConfig::programmatic_event`],
    /// [`LaunchConfig::launch_completion_event`]) are alive at the launch (not yet destroyed:
    /// the configuration keeps their handles, not the events) and belong to the stream's device.
    ///
    /// [`Device::enable_peer_access`]: crate::Device::enable_peer_access
    /// [`DeviceBuffer`]: crate::memory::DeviceBuffer
    #[inline]
    pub unsafe fn launch(self, stream: StreamRef<'_>, config: &LaunchConfig, mut args: Args) -> Result<()> {
        let mut ptrs = args.arg_ptrs();
        // SAFETY: the stub of a kernel whose parameters are `Args` (by construction), their
        // addresses in order (`KernelArgs`); the rest is the caller's contract.
        unsafe { launch_raw(self.as_raw(), stream, config, ptrs.as_mut().as_mut_ptr()) }
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

/// The launch attributes `config` asks for, written to the front of `attrs`; how many. Only those
/// are written (the rest stay uninitialised): with none, CUDA gets a null array.
#[inline(always)]
pub(crate) fn write_attributes(config: &LaunchConfig, attrs: &mut Attributes) -> usize {
    let mut n = 0;
    let mut push = |id: sys::cudaLaunchAttributeID, val: sys::cudaLaunchAttributeValue| {
        attrs[n].write(sys::cudaLaunchAttribute { id, pad: [0; 4], val });
        n += 1;
    };
    if config.pdl {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.programmaticStreamSerializationAllowed = 1;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeProgrammaticStreamSerialization, val);
    }
    if let Some(priority) = config.priority {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.priority = priority;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributePriority, val);
    }
    if let Some(c) = config.cluster {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.clusterDim.x = c.x;
        val.clusterDim.y = c.y;
        val.clusterDim.z = c.z;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeClusterDimension, val);
    }
    if config.cooperative {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.cooperative = 1;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeCooperative, val);
    }
    if let Some(domain) = config.mem_sync_domain {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.memSyncDomain = domain.to_raw();
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeMemSyncDomain, val);
    }
    #[cfg(cuda_12_8)]
    if let Some(p) = config.preferred_cluster {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.preferredClusterDim.x = p.x;
        val.preferredClusterDim.y = p.y;
        val.preferredClusterDim.z = p.z;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributePreferredClusterDimension, val);
    }
    if let Some(e) = config.programmatic_event {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.programmaticEvent.event = e.event.raw;
        val.programmaticEvent.flags = 0;
        val.programmaticEvent.triggerAtBlockStart = c_int::from(e.trigger_at_block_start);
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeProgrammaticEvent, val);
    }
    if let Some(e) = config.launch_completion_event {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.launchCompletionEvent.event = e.raw;
        val.launchCompletionEvent.flags = 0;
        push(sys::cudaLaunchAttributeID::cudaLaunchAttributeLaunchCompletionEvent, val);
    }
    n
}

/// The stack array [`write_attributes`] fills.
pub(crate) type Attributes = [core::mem::MaybeUninit<sys::cudaLaunchAttribute>; MAX_ATTRIBUTES];

/// Launches the kernel whose host stub is `func` on `stream` with the argument addresses `args`
/// (`cudaLaunchKernelExC`), as [`Kernel::launch`] does for a typed kernel (the same checks of the
/// configuration, the same attributes on the stack): for callers that hold a kernel only as an
/// address, the C ABI's `ordo_launch_kernel`.
///
/// # Safety
/// `func` is the host stub of a kernel (or, as for any runtime launch, a function CUDA can launch)
/// and `args` points to one pointer to each of its arguments, in order, each pointing to a value of
/// that parameter's type (null for a kernel without parameters); the rest as [`Kernel::launch`].
#[inline]
pub unsafe fn launch_raw(
    func: *const c_void,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> Result<()> {
    config.validate()?;
    if config.cooperative {
        check_co_resident(func, stream, config)?;
    }
    let mut attrs: Attributes = [core::mem::MaybeUninit::uninit(); MAX_ATTRIBUTES];
    let n = write_attributes(config, &mut attrs);
    let raw = sys::cudaLaunchConfig_t {
        gridDim: config.grid.to_raw(),
        blockDim: config.block.to_raw(),
        dynamicSmemBytes: config.shared_mem_bytes as usize,
        stream: stream.as_raw(),
        attrs: if n == 0 { core::ptr::null_mut() } else { attrs.as_mut_ptr().cast::<sys::cudaLaunchAttribute>() },
        numAttrs: n as core::ffi::c_uint,
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

/// For a cooperative launch: the device supports it (`cudaDevAttrCooperativeLaunch`) and the whole
/// grid fits on it at once (resident blocks a SM x SMs), else a clear error before CUDA is asked
/// to launch. Out of the hot path: only cooperative launches come here.
#[cold]
fn check_co_resident(func: *const c_void, stream: StreamRef<'_>, config: &LaunchConfig) -> Result<()> {
    const CALL: &str = "Kernel::launch (cooperative)";
    let device = stream.device_or_current()?;
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
    let mut err = crate::error::CudaError::new(code, "cudaLaunchKernelExC");
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
