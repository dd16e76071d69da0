//! How the engine launches a kernel: through ordo's launch or a plain CUDA call ([`Path`]), with
//! arguments made for each launch of a sequence ([`LaunchSlot`]), from a kernel linked into the
//! program, taken from a [`Library`], or given only by name and untyped words (the command line).
//!
//! A [`Target`] is a kernel with its launch shape and its arguments. Making one is `unsafe` (the
//! arguments must be the kernel's and valid for what it does); launching it afterwards is the
//! engine's business. The untyped form ([`Target::raw`]) checks the argument count and each
//! argument's size against the kernel's own parameter list (`cudaFuncGetParamInfo`), so that no
//! launch reads past the argument array on the host.

use ordo_cuda_core::launch::{KernelArgs, LaunchConfig};
use ordo_cuda_core::library::{Library, LibraryKernel};
use ordo_cuda_core::{cuda_call, sys, Device, Error, Kernel, Result, StreamRef};
use std::ffi::{c_void, CStr};

/// The call a launch is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// ordo's launch: `Kernel::launch` for a typed target (whichever call ordo's typed path makes),
    /// `launch::launch_raw` for an untyped one (what the C ABI's `ordo_launch_kernel` makes): the
    /// configuration checked, attributes on the stack.
    Ordo,
    /// `cudaLaunchKernelExC` called directly: the baseline.
    LaunchKernelEx,
    /// `cudaLaunchKernel`, which `<<<>>>` compiles to (no launch attributes: never with PDL).
    Chevron,
    /// The driver's `cuLaunchKernelEx`, the function resolved once.
    Driver,
}

impl Path {
    /// Every path, in the order reports list them.
    pub const ALL: [Path; 4] = [Path::Ordo, Path::LaunchKernelEx, Path::Chevron, Path::Driver];

    /// How reports name it.
    pub fn label(self) -> &'static str {
        match self {
            Path::Ordo => "ordo",
            Path::LaunchKernelEx => "cudaLaunchKernelEx",
            Path::Chevron => "<<<>>>",
            Path::Driver => "cuLaunchKernelEx",
        }
    }
}

/// What the engine gives the argument maker of each launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchSlot {
    /// The launch's index in its sequence (0 for a lone launch).
    pub index: u32,
    /// Where this launch may write its stamps: 3 `u64` a block (entry, release, end), valid on the
    /// device until the launch completes. Self-stamping kernels take it as an argument.
    pub stamps: *mut u64,
}

/// A kernel function as the runtime and the driver know it; keeps its library loaded.
#[derive(Debug, Clone)]
pub struct Func {
    /// The stub address or `cudaKernel_t` that runtime calls take.
    runtime: *const c_void,
    /// The `CUfunction` (or `CUkernel`, which `cuLaunchKernelEx` takes cast) for the driver.
    driver: sys::cudaFunction_t,
    library: Option<Library>,
}

impl Func {
    /// A kernel linked into the program, resolved for the driver on `device`
    /// (`cudaGetFuncBySymbol`).
    pub fn linked<A: KernelArgs>(kernel: Kernel<A>, device: Device) -> Result<Func> {
        let mut f: sys::cudaFunction_t = core::ptr::null_mut();
        device.with_current(|| {
            // SAFETY: `f` writable; the stub of a kernel of this program (Kernel's invariant).
            cuda_call!(unsafe { sys::cudaGetFuncBySymbol(&mut f, kernel.as_raw()) })
        })?;
        Ok(Func { runtime: kernel.as_raw(), driver: f, library: None })
    }

    /// A kernel of a loaded library (`cudaKernel_t`): runtime calls take it as it is, and
    /// `cuLaunchKernelEx` takes it cast to `CUfunction` (launched in the stream's context).
    fn library_kernel(raw: sys::cudaKernel_t, library: Library) -> Func {
        Func { runtime: raw.cast_const().cast(), driver: raw.cast(), library: Some(library) }
    }

    /// The kernel `name` of `library` (`cudaLibraryGetKernel`); it keeps the library loaded.
    /// Taken through `Library::kernel_handle`, as a user of ordo would, so that ordo's launch of it
    /// is the one users get (through the driver, the handle entered).
    pub fn from_library(library: &Library, name: &CStr) -> Result<Func> {
        let raw = library.kernel_handle(name)?;
        Ok(Func::library_kernel(raw, library.clone()))
    }

    /// The library it keeps loaded, if it came from one.
    pub fn library(&self) -> Option<&Library> {
        self.library.as_ref()
    }

    /// The runtime's handle (valid while this `Func` is).
    pub fn as_runtime(&self) -> *const c_void {
        self.runtime
    }

    /// The sizes of the kernel's parameters, in order (`cudaFuncGetParamInfo` until it refuses
    /// the index), on the current device.
    pub fn param_sizes(&self) -> Result<Vec<usize>> {
        let mut sizes = Vec::new();
        for i in 0..=4096usize {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: a kernel handle; both outputs writable.
            let code = unsafe { sys::cudaFuncGetParamInfo(self.runtime, i, &mut offset, &mut size) };
            if code != sys::cudaError::cudaSuccess {
                if !ordo_cuda_core::error::is_sticky_code(code) {
                    // SAFETY: no arguments; clears the refusal from the thread's last error.
                    unsafe { sys::cudaGetLastError() };
                }
                if code == sys::cudaError::cudaErrorInvalidValue {
                    return Ok(sizes);
                }
                return ordo_cuda_core::error::check(code, "cudaFuncGetParamInfo").map(|_| sizes);
            }
            sizes.push(size);
        }
        Err(Error::invalid("cudaFuncGetParamInfo", "a kernel of more than 4096 parameters"))
    }
}

/// `cuLaunchKernelEx`'s signature and `CUlaunchConfig`: ordo-cuda-sys declares both (`sys::driver`).
pub(crate) use sys::CuLaunchKernelExFn;

/// `cuLaunchKernelEx` through the runtime's entry-point query (CUDA 12.0 form).
pub(crate) fn driver_launch_fn() -> Result<CuLaunchKernelExFn> {
    let mut p: *mut c_void = core::ptr::null_mut();
    let mut status = sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess;
    // SAFETY: a NUL-terminated name; `p` and `status` writable.
    cuda_call!(unsafe {
        sys::cudaGetDriverEntryPointByVersion(
            c"cuLaunchKernelEx".as_ptr(),
            &mut p,
            12000,
            sys::cudaGetDriverEntryPointFlags::cudaEnableDefault.0 as u64,
            &mut status,
        )
    })?;
    if p.is_null() || status != sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess {
        return Err(Error::invalid("cudaGetDriverEntryPointByVersion", "the driver has no cuLaunchKernelEx"));
    }
    // SAFETY: the address of cuLaunchKernelEx as of CUDA 12.0, whose signature the type is.
    Ok(unsafe { core::mem::transmute::<*mut c_void, CuLaunchKernelExFn>(p) })
}

/// The PDL attribute, when `pdl`.
fn pdl_attribute() -> sys::cudaLaunchAttribute {
    let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
    val.programmaticStreamSerializationAllowed = 1;
    sys::cudaLaunchAttribute {
        id: sys::cudaLaunchAttributeID::cudaLaunchAttributeProgrammaticStreamSerialization,
        pad: [0; 4],
        val,
    }
}

/// A runtime launch status as a `Result`, clearing a non-sticky error from the thread's last-error
/// slot as ordo's launch does.
fn launch_status(code: sys::cudaError_t, call: &'static str) -> Result<()> {
    if code != sys::cudaError::cudaSuccess && !ordo_cuda_core::error::is_sticky_code(code) {
        // SAFETY: no arguments.
        unsafe { sys::cudaGetLastError() };
    }
    ordo_cuda_core::error::check(code, call)
}

/// Launches `func` on `stream` by `path` with argument addresses `args`.
///
/// # Safety
/// `args` holds one pointer to each of the kernel's arguments (of its parameters' sizes, checked
/// by the caller), and the kernel's use of them is valid (as `Kernel::launch`'s contract).
pub(crate) unsafe fn launch_path(
    func: &Func,
    driver: Option<CuLaunchKernelExFn>,
    path: Path,
    stream: StreamRef<'_>,
    config: &LaunchConfig,
    args: *mut *mut c_void,
) -> Result<()> {
    let mut attr = [pdl_attribute()];
    let n_attrs = u32::from(config.pdl);
    match path {
        // SAFETY: the caller's contract.
        Path::Ordo => unsafe { ordo_cuda_core::launch::launch_raw(func.runtime, stream, config, args) },
        Path::LaunchKernelEx => {
            let raw = sys::cudaLaunchConfig_t {
                gridDim: sys::dim3 { x: config.grid.x, y: config.grid.y, z: config.grid.z },
                blockDim: sys::dim3 { x: config.block.x, y: config.block.y, z: config.block.z },
                dynamicSmemBytes: config.shared_mem_bytes as usize,
                stream: stream.as_raw(),
                attrs: attr.as_mut_ptr(),
                numAttrs: n_attrs,
            };
            // SAFETY: `raw` and `attr` live across the call; the rest is the caller's contract.
            launch_status(unsafe { sys::cudaLaunchKernelExC(&raw, func.runtime, args) }, "cudaLaunchKernelExC")
        }
        Path::Chevron => {
            if config.pdl {
                return Err(Error::invalid("cudaLaunchKernel", "<<<>>> takes no launch attributes: no PDL"));
            }
            let grid = sys::dim3 { x: config.grid.x, y: config.grid.y, z: config.grid.z };
            let block = sys::dim3 { x: config.block.x, y: config.block.y, z: config.block.z };
            // SAFETY: the caller's contract.
            let code = unsafe {
                sys::cudaLaunchKernel(
                    func.runtime,
                    grid,
                    block,
                    args,
                    config.shared_mem_bytes as usize,
                    stream.as_raw(),
                )
            };
            launch_status(code, "cudaLaunchKernel")
        }
        Path::Driver => {
            let launch = driver.ok_or_else(|| Error::invalid("cuLaunchKernelEx", "not resolved"))?;
            let raw = sys::CuLaunchConfig {
                grid: [config.grid.x, config.grid.y, config.grid.z],
                block: [config.block.x, config.block.y, config.block.z],
                shared_mem_bytes: config.shared_mem_bytes,
                stream: stream.as_raw(),
                attrs: attr.as_mut_ptr(),
                num_attrs: n_attrs,
            };
            // SAFETY: `raw`, `attr` and the argument array live across the call; the rest is the
            // caller's contract.
            let code = unsafe { launch(&raw, func.driver, args, core::ptr::null_mut()) };
            if code == 0 {
                Ok(())
            } else {
                Err(Error::invalid("cuLaunchKernelEx", format!("the driver refused the launch (CUresult {code})")))
            }
        }
    }
}

/// One argument of an untyped launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawArg {
    /// These bytes (the low `size` bytes of the word, little-endian): a scalar, or a pointer.
    Bytes {
        /// The value.
        word: u64,
        /// How many bytes of it the kernel takes (1..=8).
        size: usize,
    },
    /// The launch's stamp pointer ([`LaunchSlot::stamps`]).
    Stamps,
    /// The launch's index as an `i32` ([`LaunchSlot::index`]).
    Launch,
}

impl RawArg {
    fn size(self) -> usize {
        match self {
            RawArg::Bytes { size, .. } => size,
            RawArg::Stamps => 8,
            RawArg::Launch => 4,
        }
    }
}

/// Launches with the argument addresses it is given.
type Launch<'a> = dyn FnMut(*mut *mut c_void) -> Result<()> + 'a;

/// Makes a launch's arguments and calls the launch with their addresses.
/// For [`Path::Ordo`] it launches the typed kernel itself (`Kernel::launch`, ordo's typed path,
/// whatever call that makes) and the closure goes unused.
type Maker = Box<dyn FnMut(LaunchSlot, Path, StreamRef<'_>, &LaunchConfig, &mut Launch<'_>) -> Result<()>>;

/// How a target makes its arguments.
enum Args {
    /// Words, one an argument, patched per launch where the argument is the slot's.
    Raw { args: Vec<RawArg>, words: Vec<u64>, ptrs: Vec<*mut c_void> },
    /// A typed maker: makes the launch's tuple and calls the launch with its addresses.
    Typed(Maker),
}

impl Args {
    /// # Safety
    /// The tuples `args` makes are valid for `kernel` (the typed constructors' contract).
    unsafe fn typed<A, F>(kernel: Kernel<A>, mut args: F) -> Args
    where
        A: KernelArgs + 'static,
        F: FnMut(LaunchSlot) -> A + 'static,
    {
        Args::Typed(Box::new(
            move |slot: LaunchSlot,
                  path: Path,
                  stream: StreamRef<'_>,
                  config: &LaunchConfig,
                  launch: &mut Launch<'_>| {
                let mut a = args(slot);
                if path == Path::Ordo {
                    // SAFETY: the constructor's contract.
                    return unsafe { kernel.launch(stream, config, a) };
                }
                let mut ptrs = a.arg_ptrs();
                let ptrs = ptrs.as_mut();
                launch(if ptrs.is_empty() { core::ptr::null_mut() } else { ptrs.as_mut_ptr() })
            },
        ))
    }
}

/// A kernel with its launch shape and arguments, ready for the engine.
pub struct Target {
    name: String,
    func: Func,
    config: LaunchConfig,
    args: Args,
}

impl core::fmt::Debug for Target {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Target").field("name", &self.name).field("config", &self.config).finish()
    }
}

impl Target {
    /// A typed kernel linked into the program, resolved for the driver on `device`, with
    /// arguments made for each launch by `args` (which may put [`LaunchSlot::stamps`] and the
    /// launch index among them). `config`'s PDL flag is ignored: the engine sets it per variant.
    ///
    /// # Safety
    /// Every tuple `args` returns is valid for the kernel as `Kernel::launch`'s contract says, at
    /// every launch the engine makes: it launches at any time until the target is dropped, and
    /// replays graphs of the launches it captured itself before it returns.
    pub unsafe fn typed<A, F>(
        name: impl Into<String>,
        kernel: Kernel<A>,
        device: Device,
        config: LaunchConfig,
        args: F,
    ) -> Result<Target>
    where
        A: KernelArgs + 'static,
        F: FnMut(LaunchSlot) -> A + 'static,
    {
        let func = Func::linked(kernel, device)?;
        // SAFETY: forwarded.
        Ok(Target { name: name.into(), func, config, args: unsafe { Args::typed(kernel, args) } })
    }

    /// A typed kernel of a [`Library`], as [`typed`](Self::typed); the target keeps the library
    /// loaded.
    ///
    /// # Safety
    /// As [`typed`](Self::typed).
    pub unsafe fn from_library_kernel<A, F>(
        name: impl Into<String>,
        kernel: &LibraryKernel<A>,
        config: LaunchConfig,
        args: F,
    ) -> Target
    where
        A: KernelArgs + 'static,
        F: FnMut(LaunchSlot) -> A + 'static,
    {
        // A library kernel's `Kernel` holds its `cudaKernel_t` (`Library::kernel`).
        let func = Func::library_kernel(kernel.as_kernel().as_raw().cast_mut().cast(), kernel.library().clone());
        // SAFETY: forwarded.
        Target { name: name.into(), func, config, args: unsafe { Args::typed(kernel.as_kernel(), args) } }
    }

    /// An untyped kernel: `args` in parameter order, checked against the kernel's parameters
    /// (their count, and each one's size) on the current device.
    ///
    /// # Safety
    /// - every pointer among `args` is valid for what the kernel does with it on the device it is
    ///   launched on, until the target is dropped (the engine launches it at any time until then).
    pub unsafe fn raw(name: impl Into<String>, func: Func, config: LaunchConfig, args: Vec<RawArg>) -> Result<Target> {
        let name = name.into();
        let sizes = func.param_sizes()?;
        if sizes.len() != args.len() {
            return Err(Error::invalid(
                crate::cli::PROGRAM,
                format!("kernel {name} takes {} parameters, {} arguments given", sizes.len(), args.len()),
            ));
        }
        for (i, (a, &s)) in args.iter().zip(&sizes).enumerate() {
            if a.size() != s {
                return Err(Error::invalid(
                    crate::cli::PROGRAM,
                    format!("kernel {name}: parameter {i} is {s} bytes, the argument given is {}", a.size()),
                ));
            }
        }
        let words: Vec<u64> = args
            .iter()
            .map(|a| match a {
                RawArg::Bytes { word, .. } => *word,
                _ => 0,
            })
            .collect();
        let ptrs = vec![core::ptr::null_mut(); args.len()];
        Ok(Target { name, func, config, args: Args::Raw { args, words, ptrs } })
    }

    /// The kernel's name as reports show it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets untyped argument `i` to `word` (its size unchanged), for the launches that follow;
    /// an error for a typed target or an argument that is not given as bytes.
    pub(crate) fn set_word(&mut self, i: usize, word: u64) -> Result<()> {
        match &mut self.args {
            Args::Raw { args, words, .. } if matches!(args.get(i), Some(RawArg::Bytes { .. })) => {
                words[i] = word;
                Ok(())
            }
            _ => {
                Err(Error::invalid(crate::cli::PROGRAM, format!("kernel {}: argument {i} is not raw bytes", self.name)))
            }
        }
    }

    /// Its launch shape (PDL off).
    pub fn config(&self) -> LaunchConfig {
        self.config
    }

    /// Blocks a launch.
    pub fn blocks(&self) -> u64 {
        u64::try_from(self.config.grid.volume()).unwrap_or(u64::MAX)
    }

    /// Its function.
    pub fn func(&self) -> &Func {
        &self.func
    }

    /// Launches it once by `path` on `stream`, with PDL if `pdl`.
    ///
    /// # Safety
    /// `slot.stamps` points to at least `3 * blocks()` writable `u64` on the stream's device that
    /// stay allocated until the launch completes (self-stamping kernels write there).
    pub(crate) unsafe fn launch(
        &mut self,
        driver: Option<CuLaunchKernelExFn>,
        path: Path,
        stream: StreamRef<'_>,
        pdl: bool,
        slot: LaunchSlot,
    ) -> Result<()> {
        let config = self.config.with_pdl(pdl);
        let func = &self.func;
        match &mut self.args {
            Args::Raw { args, words, ptrs } => {
                // The addresses are taken afresh from one pointer to the words, after the slot's
                // values are written, so that nothing else borrows the words meanwhile.
                let base = words.as_mut_ptr();
                for (i, (a, p)) in args.iter().zip(ptrs.iter_mut()).enumerate() {
                    // SAFETY: `i` is within `words` (one word an argument).
                    let w = unsafe { base.add(i) };
                    match a {
                        // SAFETY: as above.
                        RawArg::Stamps => unsafe { *w = slot.stamps as u64 },
                        // SAFETY: as above; the index as an i32's bits.
                        RawArg::Launch => unsafe { *w = u64::from(slot.index as i32 as u32) },
                        RawArg::Bytes { .. } => {}
                    }
                    *p = w.cast::<c_void>();
                }
                let p = if ptrs.is_empty() { core::ptr::null_mut() } else { ptrs.as_mut_ptr() };
                // SAFETY: one pointer an argument, each to a word of the parameter's size (checked
                // at construction); the words' validity is the constructor's contract.
                unsafe { launch_path(func, driver, path, stream, &config, p) }
            }
            // SAFETY: the typed maker gives the kernel's own argument tuple (the constructor's
            // contract).
            Args::Typed(make) => make(slot, path, stream, &config, &mut |p| unsafe {
                launch_path(func, driver, path, stream, &config, p)
            }),
        }
    }
}
