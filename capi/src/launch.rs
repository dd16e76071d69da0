//! Launching the caller's own kernels with ordo's launch configuration and PDL rule:
//! `ordo_launch_kernel` (grid, block, shared memory, PDL, priority, cluster, cooperative, events,
//! memory-synchronisation domain, preferred cluster, all checked as the Rust API checks them) and
//! `ordo_pdl_plan_launch` (the rule of `ordo_cuda_core::launch::pdl` for a kernel compiled in two
//! forms with `ORDO_PDL_KERNELS`).
//!
//! Each has a `_resolved` form that also takes the caller's `cudaGetKernel`
//! ([`OrdoKernelResolverFn`]), which ordo.h passes in every file that includes the CUDA runtime's
//! header: a program linked with its own copy of the CUDA runtime (nvcc's static one by default)
//! beside the shared ordo registers its kernels there, where ordo's runtime cannot see them. The
//! caller's runtime is asked for a kernel's handle at its first launch, which ordo keeps
//! (`ordo_cuda_core::launch::kernel_handle_with`) and launches from then on; a resolver that
//! fails is not asked again for that kernel, another resolver is (the function pointer is the
//! resolver's key).

use super::check::stream_ref;
use super::status::{guard, invalid, Failure, OrdoStatus, Outcome};
use core::ffi::{c_int, c_uint, c_void};
use core::ptr::{null_mut, NonNull};
use ordo_cuda_core::launch::{
    self, BeyondOneWave, Dim3, Kernel, LaunchConfig, LaunchEvent, MemSyncDomain, PdlKernel, PdlMode, PdlPlan,
    ProgrammaticEvent,
};
use ordo_cuda_core::{sys, Device};

/// How `ordo_launch_kernel` launches (`ordo_launch_config` in ordo.h). The caller sets `size` to
/// `sizeof(ordo_launch_config)` of its header, so that later versions can add fields.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OrdoLaunchConfig {
    /// `sizeof(ordo_launch_config)`, set by the caller.
    pub size: usize,
    /// Blocks in x, y, z (each at least 1).
    pub grid: [c_uint; 3],
    /// Threads a block in x, y, z (each at least 1, at most 1024 in all).
    pub block: [c_uint; 3],
    /// Dynamic shared memory a block, bytes.
    pub shared_mem_bytes: c_uint,
    /// Non-zero: programmatic stream serialization (PDL).
    pub pdl: c_int,
    /// Non-zero: `priority` applies (`cudaLaunchAttributePriority`).
    pub has_priority: c_int,
    /// The launch priority (lower is higher, as for streams).
    pub priority: c_int,
    /// Thread-block cluster dimensions; all 0 for none.
    pub cluster: [c_uint; 3],
    /// Non-zero: a cooperative launch (the grid is checked against what the device holds at once).
    pub cooperative: c_int,
    /// An event the kernel's blocks fire (`cudaLaunchAttributeProgrammaticEvent`); null for none.
    /// Not read when `size` ends before it (the first layout).
    pub programmatic_event: sys::cudaEvent_t,
    /// Non-zero: each block fires `programmatic_event` as it starts.
    pub programmatic_event_at_block_start: c_int,
    /// An event recorded once every block has started
    /// (`cudaLaunchAttributeLaunchCompletionEvent`); null for none.
    pub launch_completion_event: sys::cudaEvent_t,
    /// The memory-synchronisation domain (`cudaLaunchAttributeMemSyncDomain`): 0 for none,
    /// [`ORDO_MEM_SYNC_DOMAIN_DEFAULT`] or [`ORDO_MEM_SYNC_DOMAIN_REMOTE`]; any other value is
    /// refused. Not read when `size` ends before it (the first two layouts).
    pub mem_sync_domain: c_int,
    /// Preferred cluster dimensions (`cudaLaunchAttributePreferredClusterDimension`, CUDA 12.8
    /// headers): a multiple of `cluster`, which must be set too, dividing the grid; all 0 for none.
    pub preferred_cluster: [c_uint; 3],
}

/// The size of the first layout of `ordo_launch_config` (up to and including `cooperative`),
/// which callers built against it still pass.
pub const ORDO_LAUNCH_CONFIG_FIRST_SIZE: usize = core::mem::offset_of!(OrdoLaunchConfig, programmatic_event);

/// The size of the second layout of `ordo_launch_config` (up to and including
/// `launch_completion_event`), which callers built against it still pass.
pub const ORDO_LAUNCH_CONFIG_SECOND_SIZE: usize = core::mem::offset_of!(OrdoLaunchConfig, mem_sync_domain);

/// `mem_sync_domain` of [`OrdoLaunchConfig`]: `cudaLaunchMemSyncDomainDefault`.
pub const ORDO_MEM_SYNC_DOMAIN_DEFAULT: c_int = 1;
/// `mem_sync_domain` of [`OrdoLaunchConfig`]: `cudaLaunchMemSyncDomainRemote` (a kernel whose
/// memory fences need not wait for those of kernels in the default domain, such as a
/// communication kernel's).
pub const ORDO_MEM_SYNC_DOMAIN_REMOTE: c_int = 2;

impl OrdoLaunchConfig {
    /// All zero: no attributes, no events, a zero grid and block (refused until set).
    fn zeroed() -> OrdoLaunchConfig {
        OrdoLaunchConfig {
            size: 0,
            grid: [0; 3],
            block: [0; 3],
            shared_mem_bytes: 0,
            pdl: 0,
            has_priority: 0,
            priority: 0,
            cluster: [0; 3],
            cooperative: 0,
            programmatic_event: core::ptr::null_mut(),
            programmatic_event_at_block_start: 0,
            launch_completion_event: core::ptr::null_mut(),
            mem_sync_domain: 0,
            preferred_cluster: [0; 3],
        }
    }
}

/// Whether `size` is the size of a layout of `ordo_launch_config`, or more (a later header's): a
/// size that ends inside a field would hand CUDA half a pointer.
fn is_layout_size(size: usize) -> bool {
    size == ORDO_LAUNCH_CONFIG_FIRST_SIZE
        || size == ORDO_LAUNCH_CONFIG_SECOND_SIZE
        || size >= core::mem::size_of::<OrdoLaunchConfig>()
}

/// The caller's configuration: as many bytes as its `size` says, at most this version's struct;
/// the fields of later layouts than the caller's stay zero (not set). A size of no layout is
/// refused before anything past the size field is read.
///
/// # Safety
/// `config` is non-null, aligned, and points to `config->size` readable bytes.
unsafe fn read_config(config: *const OrdoLaunchConfig) -> Result<OrdoLaunchConfig, Failure> {
    // SAFETY: the caller's contract; the size field first.
    let size = unsafe { config.cast::<usize>().read() };
    if !is_layout_size(size) {
        return Err(invalid("config", "config->size is not sizeof(ordo_launch_config) of a known layout"));
    }
    let mut copy = OrdoLaunchConfig::zeroed();
    // SAFETY: `size` readable bytes (the caller's contract), of which this version's struct takes
    // at most its own; `copy` is a plain struct of integers and pointers, any bytes valid.
    unsafe {
        core::ptr::copy_nonoverlapping(
            config.cast::<u8>(),
            core::ptr::addr_of_mut!(copy).cast::<u8>(),
            size.min(core::mem::size_of::<OrdoLaunchConfig>()),
        );
    }
    Ok(copy)
}

/// The Rust configuration for C's (read by [`read_config`]; checked by `LaunchConfig::validate`).
/// Events are taken by handle: the C contract says they are alive at the launch.
fn launch_config(c: &OrdoLaunchConfig) -> Result<LaunchConfig, Failure> {
    let dim = |d: [c_uint; 3]| Dim3::new(d[0], d[1], d[2]);
    let mut config = LaunchConfig::new(dim(c.grid), dim(c.block))
        .with_shared_mem(c.shared_mem_bytes)
        .with_pdl(c.pdl != 0)
        .with_cooperative(c.cooperative != 0);
    if c.has_priority != 0 {
        config = config.with_priority(c.priority);
    }
    if c.cluster != [0, 0, 0] {
        config = config.with_cluster(dim(c.cluster));
    }
    // The handles are used at the launch: the C contract says the events are alive then.
    if let Some(event) = LaunchEvent::from_raw(c.programmatic_event) {
        let trigger_at_block_start = c.programmatic_event_at_block_start != 0;
        config.programmatic_event = Some(ProgrammaticEvent { event, trigger_at_block_start });
    }
    config.launch_completion_event = LaunchEvent::from_raw(c.launch_completion_event);
    config = match c.mem_sync_domain {
        0 => config,
        ORDO_MEM_SYNC_DOMAIN_DEFAULT => config.with_mem_sync_domain(MemSyncDomain::Default),
        ORDO_MEM_SYNC_DOMAIN_REMOTE => config.with_mem_sync_domain(MemSyncDomain::Remote),
        _ => return Err(invalid("config.mem_sync_domain", "neither 0, ORDO_MEM_SYNC_DOMAIN_DEFAULT nor _REMOTE")),
    };
    // Checked by `validate`: a multiple of the cluster, dividing the grid, and CUDA 12.8 headers
    // (ORDO_ERROR_NOT_SUPPORTED before).
    if c.preferred_cluster != [0, 0, 0] {
        config = config.with_preferred_cluster(dim(c.preferred_cluster));
    }
    config.validate()?;
    Ok(config)
}

/// The `cudaGetKernel` of the CUDA runtime the caller is linked with (`ordo_kernel_resolver_fn`
/// in ordo.h): writes to `kernel` the `cudaKernel_t` of the kernel whose host stub is `entry` and
/// returns 0 (`cudaSuccess`), or returns CUDA's error. ordo.h's own (`ordo_kernel_resolver_here`)
/// calls the runtime's `cudaGetKernel` and leaves no failure as that runtime's last error.
pub type OrdoKernelResolverFn =
    Option<unsafe extern "C" fn(kernel: *mut sys::cudaKernel_t, entry: *const c_void) -> c_int>;

/// The address ordo launches or queries for `kernel` (non-null): its driver handle, from ordo's
/// table of kernels or, at its first use, from `resolver`; `kernel` itself without a resolver, or
/// where neither the resolver nor ordo's own runtime knows it (ordo's runtime then launches it or
/// reports CUDA's error).
///
/// # Safety
/// `resolver` is `None` or as the C contract of the `_resolved` exports says (ordo.h).
#[inline(always)]
unsafe fn resolved(kernel: *const c_void, resolver: OrdoKernelResolverFn) -> *const c_void {
    let Some(resolver) = resolver else { return kernel };
    let ask = || {
        let mut handle: sys::cudaKernel_t = null_mut();
        // SAFETY: `handle` is writable; the C contract: `resolver` is a CUDA runtime's
        // `cudaGetKernel` (or does what it does), and does not unwind.
        let code = unsafe { resolver(&mut handle, kernel) };
        if code == 0 {
            NonNull::new(handle.cast::<c_void>())
        } else {
            None
        }
    };
    // SAFETY: the C contract: what the resolver writes is the handle of the kernel at `kernel`,
    // whose code stays loaded there. The function is the resolver's key: one that failed for
    // `kernel` is not asked again, another (another file's, another runtime's) is.
    match unsafe { launch::kernel_handle_with(kernel, resolver as *const c_void, ask) } {
        Some(handle) => handle.as_ptr().cast_const(),
        None => kernel,
    }
}

/// Launches `kernel` (a `__global__` function's address, as `cudaLaunchKernel` takes it) on
/// `stream` with `args` (one pointer to each argument, in order, as `cudaLaunchKernel` takes them;
/// NULL for a kernel without parameters) as `config` says. A bad configuration (a zero or
/// oversized grid or block, a grid not a multiple of its cluster, a cooperative grid larger than
/// the device holds at once, a cooperative launch with clusters, an unknown memory-synchronisation
/// domain, preferred cluster dimensions without a cluster, not a multiple of it or not dividing the
/// grid) is `ORDO_ERROR_INVALID_ARGUMENT` before CUDA is called; preferred cluster dimensions in a
/// build against CUDA headers older than 12.8 are `ORDO_ERROR_NOT_SUPPORTED`; CUDA's own launch
/// errors come back as its codes. Capturable.
///
/// Launched through the driver's `cuLaunchKernelEx` with the kernel's handle resolved once for
/// the process, or through the runtime where that path cannot launch (`launch::launch_raw`).
/// ordo.h routes calls from a file that includes the CUDA runtime's header to
/// [`ordo_launch_kernel_resolved`].
///
/// # Safety
/// The C contract: `kernel` is a kernel of this program and `args` matches its parameters, each
/// pointing to a value of that parameter's type; what the arguments point to stays valid until
/// the kernel completes (at every replay, if captured); `config` points to `config->size` bytes;
/// the kernel's code stays loaded at its address (a shared library whose kernels were launched
/// here is not unloaded and replaced by other code at the same address).
#[no_mangle]
pub unsafe extern "C" fn ordo_launch_kernel(
    stream: sys::cudaStream_t,
    kernel: *const c_void,
    args: *mut *mut c_void,
    config: *const OrdoLaunchConfig,
) -> OrdoStatus {
    // SAFETY: the C contract, forwarded; no resolver.
    unsafe { launch_kernel("ordo_launch_kernel", stream, kernel, args, config, None) }
}

/// [`ordo_launch_kernel`], with `resolver` (the caller's `cudaGetKernel`; NULL for none) asked for
/// the kernel's handle where ordo has none yet: at its first launch, not per launch. The handle is
/// kept for the process and launched from then on, also by [`ordo_launch_kernel`]. Where the
/// resolver fails, the kernel is resolved by ordo's runtime, as without it; where that fails too,
/// this resolver is not asked about the kernel again, but another one is (ordo.h says when).
///
/// # Safety
/// The C contract of [`ordo_launch_kernel`], and: `resolver` is NULL or a function that does what
/// a CUDA runtime's `cudaGetKernel` does (ordo.h passes its own, which calls the runtime's): on
/// success it writes the `cudaKernel_t` of the kernel whose stub is `kernel` and returns 0, it does
/// not unwind, and that handle stays valid while the kernel's code stays loaded (the copy of the
/// CUDA runtime that made it is not unloaded).
#[no_mangle]
pub unsafe extern "C" fn ordo_launch_kernel_resolved(
    stream: sys::cudaStream_t,
    kernel: *const c_void,
    args: *mut *mut c_void,
    config: *const OrdoLaunchConfig,
    resolver: OrdoKernelResolverFn,
) -> OrdoStatus {
    // SAFETY: the C contract, forwarded.
    unsafe { launch_kernel("ordo_launch_kernel_resolved", stream, kernel, args, config, resolver) }
}

/// The body of both launch exports.
///
/// # Safety
/// The C contract of [`ordo_launch_kernel_resolved`].
#[inline(always)]
unsafe fn launch_kernel(
    export: &'static str,
    stream: sys::cudaStream_t,
    kernel: *const c_void,
    args: *mut *mut c_void,
    config: *const OrdoLaunchConfig,
    resolver: OrdoKernelResolverFn,
) -> OrdoStatus {
    guard(export, || {
        let s = stream_ref(stream)?;
        if kernel.is_null() {
            return Err(invalid("kernel", "null pointer"));
        }
        if config.is_null() || !config.is_aligned() {
            return Err(invalid("config", "null or misaligned pointer"));
        }
        // SAFETY: checked non-null and aligned; the caller owes `config->size` readable bytes.
        let config = launch_config(&unsafe { read_config(config) }?)?;
        // SAFETY: non-null (checked above); the C contract on `resolver`.
        let kernel = unsafe { resolved(kernel, resolver) };
        // SAFETY: the C contract: a kernel (its stub, or its handle), its arguments, their
        // lifetimes.
        unsafe { launch::launch_raw(kernel, s, &config, args) }?;
        Ok(())
    })
}

/// The plan `ordo_pdl_plan_launch` fills (`ordo_pdl_plan` in ordo.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct OrdoPdlPlan {
    /// `sizeof(ordo_pdl_plan)`, set by the caller.
    pub size: usize,
    /// 1: launch the PDL form (`NAME_pdl`) with `pdl` set in its `ordo_launch_config` (0 for a
    /// chain's first kernel); 0: the plain form (`NAME`) without PDL.
    pub use_pdl_form: c_int,
    /// Blocks to launch (x).
    pub grid: c_uint,
    /// Blocks of the one-element-a-thread grid.
    pub full_blocks: c_uint,
    /// Blocks the device holds at once for the kernel (resident blocks a SM x SMs).
    pub one_wave_blocks: c_uint,
}

/// `mode` of `ordo_pdl_plan_launch`: ordo's rule (PDL within one wave; beyond, a one-wave
/// grid-stride grid, with PDL up to four waves of work and without past them).
pub const ORDO_PDL_AUTO: c_int = 0;
/// The plain form over the full grid, without PDL (the baseline a user writes without PDL).
pub const ORDO_PDL_PLAIN: c_int = 1;
/// The plain form over at most one wave, grid-stride.
pub const ORDO_PDL_PLAIN_ONE_WAVE: c_int = 2;
/// The PDL form over the full grid (pays for the wait in grids of several waves: for measuring).
pub const ORDO_PDL_FULL_GRID: c_int = 3;
/// The PDL form over at most one wave.
pub const ORDO_PDL_ONE_WAVE: c_int = 4;
/// As `ORDO_PDL_AUTO`, but beyond one wave the plain form over the full grid (for a kernel whose
/// own measurement shows its one-element-a-thread grid faster than its grid-stride one).
pub const ORDO_PDL_AUTO_PLAIN_BEYOND_ONE_WAVE: c_int = 5;

/// Plans a launch of a kernel compiled in two forms by `ORDO_PDL_KERNELS` (`plain`, `pdl`: their
/// addresses) over `n` elements in blocks of `block` threads on `device`, by `mode`: fills `out`
/// (whose `size` the caller set). A few attribute queries: call it once per size, not per launch.
/// Not while a capture in global mode runs on another thread (it makes occupancy queries).
/// ordo.h routes calls from a file that includes the CUDA runtime's header to
/// [`ordo_pdl_plan_launch_resolved`].
///
/// # Safety
/// The C contract: `plain` and `pdl` are the two forms of one kernel of this program; `out` points
/// to `out->size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ordo_pdl_plan_launch(
    plain: *const c_void,
    pdl: *const c_void,
    device: c_int,
    n: usize,
    block: c_uint,
    mode: c_int,
    out: *mut OrdoPdlPlan,
) -> OrdoStatus {
    // SAFETY: the C contract, forwarded; no resolver.
    guard("ordo_pdl_plan_launch", || unsafe { plan_launch([plain, pdl], device, n, block, mode, out, None) })
}

/// [`ordo_pdl_plan_launch`], with `resolver` (the caller's `cudaGetKernel`; NULL for none) asked
/// for each form's handle where ordo has none yet, as [`ordo_launch_kernel_resolved`] does; the
/// occupancy queries are made on the handles, and the handles kept for the forms' launches.
///
/// # Safety
/// The C contract of [`ordo_pdl_plan_launch`], and `resolver`'s of
/// [`ordo_launch_kernel_resolved`] (for each form).
#[no_mangle]
pub unsafe extern "C" fn ordo_pdl_plan_launch_resolved(
    plain: *const c_void,
    pdl: *const c_void,
    device: c_int,
    n: usize,
    block: c_uint,
    mode: c_int,
    out: *mut OrdoPdlPlan,
    resolver: OrdoKernelResolverFn,
) -> OrdoStatus {
    guard("ordo_pdl_plan_launch_resolved", || {
        // SAFETY: the C contract, forwarded.
        unsafe { plan_launch([plain, pdl], device, n, block, mode, out, resolver) }
    })
}

/// The body of both plan exports; `forms`: the plain and the PDL form.
///
/// # Safety
/// The C contract of [`ordo_pdl_plan_launch_resolved`].
unsafe fn plan_launch(
    forms: [*const c_void; 2],
    device: c_int,
    n: usize,
    block: c_uint,
    mode: c_int,
    out: *mut OrdoPdlPlan,
    resolver: OrdoKernelResolverFn,
) -> Outcome {
    if out.is_null() || !out.is_aligned() {
        return Err(invalid("out", "null or misaligned pointer"));
    }
    // SAFETY: checked non-null and aligned; the caller owes `size` readable bytes.
    if unsafe { out.cast::<usize>().read() } < core::mem::size_of::<OrdoPdlPlan>() {
        return Err(invalid("out", "out->size below this version's sizeof(ordo_pdl_plan)"));
    }
    let (mode, beyond) = match mode {
        ORDO_PDL_AUTO => (PdlMode::Auto, BeyondOneWave::default()),
        ORDO_PDL_PLAIN => (PdlMode::Plain, BeyondOneWave::default()),
        ORDO_PDL_PLAIN_ONE_WAVE => (PdlMode::PlainOneWave, BeyondOneWave::default()),
        ORDO_PDL_FULL_GRID => (PdlMode::PdlFullGrid, BeyondOneWave::default()),
        ORDO_PDL_ONE_WAVE => (PdlMode::PdlOneWave, BeyondOneWave::default()),
        ORDO_PDL_AUTO_PLAIN_BEYOND_ONE_WAVE => (PdlMode::Auto, BeyondOneWave::Plain),
        _ => return Err(invalid("mode", "unknown PDL mode")),
    };
    let device = usize::try_from(device).map_err(|_| invalid("device", "negative device ordinal"))?;
    // The pure checks first, with a placeholder wave, so that bad sizes never reach CUDA.
    PdlPlan::for_elements(n, block, 1, mode, beyond)?;
    let [plain, pdl] = forms;
    if plain.is_null() {
        return Err(invalid("plain", "null pointer"));
    }
    if pdl.is_null() {
        return Err(invalid("pdl", "null pointer"));
    }
    // SAFETY: non-null (checked above); the C contract on `resolver`.
    let (plain, pdl) = unsafe { (resolved(plain, resolver), resolved(pdl, resolver)) };
    // SAFETY: the C contract: two kernels (stubs, or their handles: CUDA's occupancy queries
    // take either); their parameters are never used here, the plan only asks about occupancy.
    let (plain, pdl) = unsafe { (Kernel::<()>::from_raw(plain), Kernel::<()>::from_raw(pdl)) };
    // Never null: a handle, or the address checked above.
    let (Some(plain), Some(pdl)) = (plain, pdl) else { return Err(invalid("plain", "null pointer")) };
    let kernel = PdlKernel::new(plain, pdl).beyond_one_wave(beyond);
    let plan = kernel.plan(Device::new(device)?, n, block, mode)?;
    let filled = OrdoPdlPlan {
        size: core::mem::size_of::<OrdoPdlPlan>(),
        use_pdl_form: c_int::from(plan.uses_pdl()),
        grid: plan.grid(),
        full_blocks: plan.full_blocks(),
        one_wave_blocks: plan.one_wave_blocks(),
    };
    // SAFETY: checked non-null and aligned; at least this struct's size is writable. Fields
    // a later header may add beyond it are left as they were.
    unsafe { out.write(OrdoPdlPlan { size: out.cast::<usize>().read(), ..filled }) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_NOT_SUPPORTED};

    const FULL: usize = core::mem::size_of::<OrdoLaunchConfig>();

    /// Whether this build has preferred cluster dimensions (CUDA 12.8 or later headers).
    const PREFERRED_CLUSTERS: bool = sys::CUDA_VERSION >= 12080;

    fn config() -> OrdoLaunchConfig {
        OrdoLaunchConfig {
            size: FULL,
            grid: [4, 1, 1],
            block: [256, 1, 1],
            shared_mem_bytes: 0,
            pdl: 1,
            has_priority: 1,
            priority: -1,
            cluster: [0, 0, 0],
            cooperative: 0,
            programmatic_event: core::ptr::null_mut(),
            programmatic_event_at_block_start: 0,
            launch_completion_event: core::ptr::null_mut(),
            mem_sync_domain: 0,
            preferred_cluster: [0, 0, 0],
        }
    }

    /// What `ordo_launch_kernel` makes of `c`: read at its size, then converted and checked.
    fn convert(c: &OrdoLaunchConfig) -> Result<LaunchConfig, Failure> {
        // SAFETY: a whole struct, aligned; no more than its own bytes are read, whatever its size.
        launch_config(&unsafe { read_config(c) }?)
    }

    #[test]
    fn launch_configs_convert_and_are_checked() {
        let c = convert(&config()).unwrap();
        assert!(c.pdl && c.priority == Some(-1) && c.cluster.is_none() && c.grid == Dim3::new(4, 1, 1));
        assert!(c.mem_sync_domain.is_none() && c.preferred_cluster.is_none());
        let with_cluster = convert(&OrdoLaunchConfig { cluster: [2, 1, 1], ..config() }).unwrap();
        assert_eq!(with_cluster.cluster, Some(Dim3::new(2, 1, 1)));
        let forged = 0x1000 as sys::cudaEvent_t;
        let with_events = convert(&OrdoLaunchConfig {
            programmatic_event: forged,
            programmatic_event_at_block_start: 1,
            launch_completion_event: forged,
            ..config()
        })
        .unwrap();
        let p = with_events.programmatic_event.unwrap();
        assert!(p.trigger_at_block_start && p.event.as_raw() == forged);
        assert_eq!(with_events.launch_completion_event.unwrap().as_raw(), forged);
        for bad in [
            OrdoLaunchConfig { grid: [0, 1, 1], ..config() },
            OrdoLaunchConfig { block: [2048, 1, 1], ..config() },
            OrdoLaunchConfig { cluster: [3, 1, 1], ..config() },
            OrdoLaunchConfig { cluster: [2, 1, 1], cooperative: 1, ..config() },
        ] {
            assert_eq!(convert(&bad).err(), Some(Failure(ORDO_ERROR_INVALID_ARGUMENT)), "{bad:?}");
        }
    }

    /// Each layout's size is accepted and its fields read, the later layouts' fields left unset
    /// whatever the bytes past the size hold; every size between the layouts, or below the first,
    /// is refused; a later header's larger size is read as this version's struct.
    #[test]
    fn each_layout_size_reads_its_own_fields_and_no_other_size_is_accepted() {
        assert_eq!(ORDO_LAUNCH_CONFIG_FIRST_SIZE, 64, "the first layout, as callers built against it pass");
        assert_eq!(ORDO_LAUNCH_CONFIG_SECOND_SIZE, 88, "the second layout, as callers built against it pass");
        assert_eq!(FULL, 104);
        // Every field set, the third layout's to values refused if read.
        let forged = 0x1000 as sys::cudaEvent_t;
        let all = OrdoLaunchConfig {
            programmatic_event: forged,
            launch_completion_event: forged,
            mem_sync_domain: 7,
            preferred_cluster: [3, 1, 1],
            ..config()
        };
        let first = convert(&OrdoLaunchConfig { size: ORDO_LAUNCH_CONFIG_FIRST_SIZE, ..all }).unwrap();
        assert!(first.pdl && first.priority == Some(-1), "the first layout's fields are read");
        assert!(first.programmatic_event.is_none() && first.launch_completion_event.is_none());
        assert!(first.mem_sync_domain.is_none() && first.preferred_cluster.is_none());
        let second = convert(&OrdoLaunchConfig { size: ORDO_LAUNCH_CONFIG_SECOND_SIZE, ..all }).unwrap();
        assert!(second.programmatic_event.is_some_and(|p| p.event.as_raw() == forged));
        assert!(second.launch_completion_event.is_some_and(|e| e.as_raw() == forged));
        assert!(second.mem_sync_domain.is_none() && second.preferred_cluster.is_none());
        assert_eq!(convert(&all).err(), Some(Failure(ORDO_ERROR_INVALID_ARGUMENT)), "the third layout is read");
        let third = OrdoLaunchConfig { mem_sync_domain: ORDO_MEM_SYNC_DOMAIN_REMOTE, preferred_cluster: [0; 3], ..all };
        for size in [FULL, FULL + 8, 4096] {
            let c = convert(&OrdoLaunchConfig { size, ..third }).unwrap();
            assert_eq!(c.mem_sync_domain, Some(MemSyncDomain::Remote), "size {size}");
        }
        let (a, b) = (ORDO_LAUNCH_CONFIG_FIRST_SIZE, ORDO_LAUNCH_CONFIG_SECOND_SIZE);
        for size in [0, 8, a - 1, a + 1, a + 8, b - 1, b + 1, b + 4, b + 8, FULL - 1] {
            let c = OrdoLaunchConfig { size, ..config() };
            assert_eq!(convert(&c).err(), Some(Failure(ORDO_ERROR_INVALID_ARGUMENT)), "size {size}");
        }
    }

    /// The third layout's fields: each domain value, the preferred cluster dimensions (or
    /// `ORDO_ERROR_NOT_SUPPORTED` against headers without them), and the values refused.
    #[test]
    fn the_domain_and_the_preferred_cluster_convert_and_bad_values_are_refused() {
        for (value, domain) in [
            (0, None),
            (ORDO_MEM_SYNC_DOMAIN_DEFAULT, Some(MemSyncDomain::Default)),
            (ORDO_MEM_SYNC_DOMAIN_REMOTE, Some(MemSyncDomain::Remote)),
        ] {
            let c = convert(&OrdoLaunchConfig { mem_sync_domain: value, ..config() }).unwrap();
            assert_eq!(c.mem_sync_domain, domain, "{value}");
        }
        for value in [3, -1, c_int::MAX, c_int::MIN] {
            let c = OrdoLaunchConfig { mem_sync_domain: value, ..config() };
            assert_eq!(convert(&c).err(), Some(Failure(ORDO_ERROR_INVALID_ARGUMENT)), "domain {value}");
        }
        let clustered = OrdoLaunchConfig { grid: [16, 1, 1], cluster: [2, 1, 1], ..config() };
        let preferred = convert(&OrdoLaunchConfig { preferred_cluster: [4, 1, 1], ..clustered });
        if PREFERRED_CLUSTERS {
            let c = preferred.unwrap();
            assert_eq!((c.cluster, c.preferred_cluster), (Some(Dim3::new(2, 1, 1)), Some(Dim3::new(4, 1, 1))));
        } else {
            assert_eq!(preferred.err(), Some(Failure(ORDO_ERROR_NOT_SUPPORTED)), "headers before CUDA 12.8");
        }
        let both = OrdoLaunchConfig {
            mem_sync_domain: ORDO_MEM_SYNC_DOMAIN_DEFAULT,
            preferred_cluster: [16, 1, 1],
            ..clustered
        };
        if PREFERRED_CLUSTERS {
            let c = convert(&both).unwrap();
            assert!(
                c.mem_sync_domain == Some(MemSyncDomain::Default) && c.preferred_cluster == Some(Dim3::new(16, 1, 1))
            );
        }
        let refusal = if PREFERRED_CLUSTERS { ORDO_ERROR_INVALID_ARGUMENT } else { ORDO_ERROR_NOT_SUPPORTED };
        for (what, bad) in [
            ("without a cluster", OrdoLaunchConfig { grid: [16, 1, 1], preferred_cluster: [4, 1, 1], ..config() }),
            ("not a multiple of the cluster", OrdoLaunchConfig { preferred_cluster: [3, 1, 1], ..clustered }),
            ("a zero extent", OrdoLaunchConfig { preferred_cluster: [4, 0, 1], ..clustered }),
            ("not dividing the grid", OrdoLaunchConfig { grid: [12, 1, 1], preferred_cluster: [8, 1, 1], ..clustered }),
        ] {
            assert_eq!(convert(&bad).err(), Some(Failure(refusal)), "preferred cluster {what}");
        }
    }
}
