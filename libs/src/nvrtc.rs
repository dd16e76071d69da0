//! CUDA C source compiled to PTX at run time with NVRTC, loaded with `dlopen` like cuBLAS and
//! NCCL (no NVRTC is needed to build): the file `ORDO_NVRTC` names, else `libnvrtc.so.13`,
//! `libnvrtc.so.12` or `libnvrtc.so` as the loader finds them, else the same names under
//! `$CUDA_HOME/lib64`, `$CUDA_HOME/lib` and `/usr/local/cuda/lib64`.
//!
//! The PTX loads as an [`ordo_cuda_core::library::Library`], whose kernels launch like the kernels
//! linked into the program:
//!
//! ```no_run
//! use ordo_cuda_core::library::Library;
//! use ordo_cuda_libs::nvrtc::Nvrtc;
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let nvrtc = Nvrtc::load()?;
//! let src = r#"extern "C" __global__ void twice(float* x, int n) {
//!     int i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < n) x[i] *= 2.0f;
//! }"#;
//! let ptx = nvrtc.compile_ptx(src, "twice.cu", &["--gpu-architecture=compute_90"])?;
//! let library = Library::from_ptx(ptx.text())?;
//! // SAFETY: `twice` takes (float*, int).
//! let twice = unsafe { library.kernel::<(*mut f32, i32)>(c"twice")? };
//! # let _ = twice; Ok(()) }
//! ```

use crate::dl::Library as DlLibrary;
use crate::function::{call, Function, Returned};
use core::ffi::{c_char, c_int, c_void, CStr};
use ordo_cuda_core::error::LibraryError;
use ordo_cuda_core::{Error, Result};
use std::ffi::CString;
use std::sync::Arc;

type Program = *mut c_void;
type Status = c_int;
const SUCCESS: Status = 0;

/// `nvrtcGetPTXSize`, `nvrtcGetProgramLogSize`: the size of one of a program's texts.
type SizeFn = unsafe extern "C" fn(Program, *mut usize) -> Status;
/// `nvrtcGetPTX`, `nvrtcGetProgramLog`: one of a program's texts.
type TextFn = unsafe extern "C" fn(Program, *mut c_char) -> Status;

/// NVRTC's functions (the ones every release since CUDA 11 has), each with its C name (see
/// [`call!`](crate::function::call)).
struct Api {
    version: Function<unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status>,
    error_string: Function<unsafe extern "C" fn(Status) -> *const c_char>,
    create: Function<
        unsafe extern "C" fn(
            *mut Program,
            *const c_char,
            *const c_char,
            c_int,
            *const *const c_char,
            *const *const c_char,
        ) -> Status,
    >,
    destroy: Function<unsafe extern "C" fn(*mut Program) -> Status>,
    compile: Function<unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status>,
    ptx_size: Function<SizeFn>,
    ptx: Function<TextFn>,
    log_size: Function<SizeFn>,
    log: Function<TextFn>,
}

struct Loaded {
    api: Api,
    // Dropped after `api` (fields drop in order): the functions stay loaded while callable.
    _lib: DlLibrary,
    // NVRTC opens `libnvrtc-builtins.so.MAJOR.MINOR` by name when it compiles: loaded here first
    // from NVRTC's own folder, so that a NVRTC found outside the loader's search path works.
    _builtins: Option<DlLibrary>,
    // One compilation at a time: NVRTC's thread safety is not relied on (compiling is far from
    // any hot path).
    compiling: std::sync::Mutex<()>,
}

// SAFETY: the function table is plain data; the dlopen handles are closed only on drop; calls
// into NVRTC that touch a program are serialised by `compiling`, and the others (version, error
// strings) read static data.
unsafe impl Send for Loaded {}
// SAFETY: as above.
unsafe impl Sync for Loaded {}

/// NVRTC, loaded ([`Nvrtc::load`]: a usage error of kind
/// [`NotSupported`](ordo_cuda_core::UsageKind::NotSupported) where there is none). Clones share the
/// loaded library. Any thread may compile; compilations run one at a time.
#[derive(Clone)]
pub struct Nvrtc {
    inner: Arc<Loaded>,
}

impl core::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Nvrtc").field("version", &self.version().ok()).finish()
    }
}

/// Compiled PTX, and NVRTC's log (warnings) for it.
#[derive(Debug, Clone)]
pub struct Ptx {
    text: String,
    log: String,
}

impl Ptx {
    /// The PTX text (without its terminating NUL).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// NVRTC's log: warnings, or empty.
    pub fn log(&self) -> &str {
        &self.log
    }
}

/// A failed compilation: the error (NVRTC's status, `NVRTC_ERROR_COMPILATION` for errors in the
/// source) and NVRTC's log, which says where and why.
#[derive(Debug, Clone)]
pub struct CompileError {
    /// The error.
    pub error: Error,
    /// NVRTC's log (empty when the failure came before compiling).
    pub log: String,
}

impl core::fmt::Display for CompileError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.log.is_empty() {
            write!(f, "{}", self.error)
        } else {
            write!(f, "{}\n{}", self.error, self.log.trim_end())
        }
    }
}

impl std::error::Error for CompileError {}

impl From<Error> for CompileError {
    fn from(error: Error) -> CompileError {
        CompileError { error, log: String::new() }
    }
}

impl From<CompileError> for Error {
    /// The error, without the log.
    fn from(e: CompileError) -> Error {
        e.error
    }
}

/// Destroys the program on every path out of a compilation.
struct ProgramGuard<'a> {
    api: &'a Api,
    program: Program,
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        let api = self.api;
        // SAFETY: a program NVRTC made, destroyed once. Nothing is left to do on a failure.
        let _destroyed = call!(unsafe { api.destroy(&mut self.program) });
    }
}

/// The candidate paths under the toolkit folders, for when the loader does not find NVRTC by name.
fn candidates() -> Vec<CString> {
    let names = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var) {
            let home = std::path::PathBuf::from(home);
            dirs.push(home.join("lib64"));
            dirs.push(home.join("lib"));
        }
    }
    dirs.push("/usr/local/cuda/lib64".into());
    let mut out: Vec<CString> = names.iter().filter_map(|n| CString::new(*n).ok()).collect();
    for d in dirs {
        for n in names {
            if let Ok(c) = CString::new(d.join(n).into_os_string().into_encoded_bytes()) {
                out.push(c);
            }
        }
    }
    out
}

impl Nvrtc {
    /// Loads NVRTC (see the [module docs](self) for where it looks). A usage error
    /// ([`UsageKind::NotSupported`](ordo_cuda_core::UsageKind::NotSupported)) when none is found or the library lacks NVRTC's functions.
    pub fn load() -> Result<Nvrtc> {
        let names = candidates();
        let names: Vec<&CStr> = names.iter().map(CString::as_c_str).collect();
        let lib = DlLibrary::open(
            "ORDO_NVRTC",
            &names,
            "Nvrtc::load",
            "libnvrtc.so not found by dlopen (set ORDO_NVRTC to its path)",
        )?;
        // SAFETY: each function is loaded as its C signature in nvrtc.h.
        let api = unsafe {
            Api {
                version: Function::load(&lib, c"nvrtcVersion")?,
                error_string: Function::load(&lib, c"nvrtcGetErrorString")?,
                create: Function::load(&lib, c"nvrtcCreateProgram")?,
                destroy: Function::load(&lib, c"nvrtcDestroyProgram")?,
                compile: Function::load(&lib, c"nvrtcCompileProgram")?,
                ptx_size: Function::load(&lib, c"nvrtcGetPTXSize")?,
                ptx: Function::load(&lib, c"nvrtcGetPTX")?,
                log_size: Function::load(&lib, c"nvrtcGetProgramLogSize")?,
                log: Function::load(&lib, c"nvrtcGetProgramLog")?,
            }
        };
        let mut nvrtc =
            Nvrtc { inner: Arc::new(Loaded { api, _lib: lib, _builtins: None, compiling: std::sync::Mutex::new(()) }) };
        let builtins = nvrtc.version().ok().and_then(|(major, minor)| {
            let dir = DlLibrary::file_of(nvrtc.api().version.f as *const c_void)?.parent()?.to_path_buf();
            let path = dir.join(format!("libnvrtc-builtins.so.{major}.{minor}"));
            let path = CString::new(path.into_os_string().into_encoded_bytes()).ok()?;
            DlLibrary::open_path(&path, "Nvrtc::load")
        });
        if let Some(inner) = Arc::get_mut(&mut nvrtc.inner) {
            inner._builtins = builtins;
        }
        Ok(nvrtc)
    }

    fn api(&self) -> &Api {
        &self.inner.api
    }

    /// `Ok` for `NVRTC_SUCCESS`, else the error of the call `r` ([`error`](Self::error)).
    #[inline]
    fn check(&self, r: Returned) -> Result<()> {
        if r.status == SUCCESS {
            Ok(())
        } else {
            Err(self.error(r))
        }
    }

    /// The error of the failed call `r`, with NVRTC's name for its status.
    #[cold]
    fn error(&self, r: Returned) -> Error {
        let (call, status) = (r.call, r.status);
        // SAFETY: NVRTC returns a static string for any status (or null).
        let text = unsafe { (self.api().error_string.f)(status) };
        let detail = if text.is_null() {
            None
        } else {
            // SAFETY: non-null: a static NUL-terminated string of NVRTC's.
            let s = unsafe { CStr::from_ptr(text) };
            // NVRTC's strings live as long as the library, which `self` keeps loaded; an
            // `Error` may outlive it, so the error owns a copy (a static name when it is one).
            let owned = s.to_string_lossy();
            Some(match static_name(&owned) {
                Some(name) => name.into(),
                None => owned.into_owned().into(),
            })
        };
        Error::Library(LibraryError { library: "NVRTC", call, status, detail })
    }

    /// NVRTC's version, `(major, minor)`.
    pub fn version(&self) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        let api = self.api();
        // SAFETY: both writable.
        self.check(call!(unsafe { api.version(&mut major, &mut minor) }))?;
        Ok((major, minor))
    }

    /// Compiles `source` (CUDA C++; name it `name` in messages) to PTX with `options` as nvcc
    /// would take them (`--gpu-architecture=compute_90`, `-DN=4`, `--use_fast_math`, ...;
    /// NVRTC's default architecture otherwise). Kernels to be found by name in the
    /// [`Library`](ordo_cuda_core::library::Library) are declared `extern "C"`. A usage error for a
    /// NUL inside the source, name or an option, or more options than an `int` counts; NVRTC's
    /// status and log otherwise.
    pub fn compile_ptx(&self, source: &str, name: &str, options: &[&str]) -> core::result::Result<Ptx, CompileError> {
        const CALL: &str = "Nvrtc::compile_ptx";
        let nul = |_| Error::invalid(CALL, "a NUL inside the source, its name or an option");
        let source = CString::new(source).map_err(nul)?;
        let name = CString::new(name).map_err(nul)?;
        let options: Vec<CString> = options.iter().map(|o| CString::new(*o).map_err(nul)).collect::<Result<_>>()?;
        let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        let count = c_int::try_from(option_ptrs.len()).map_err(|_| Error::invalid(CALL, "too many options"))?;
        let api = self.api();
        let _one_at_a_time = ordo_cuda_core::sync::lock(&self.inner.compiling);
        let mut program: Program = core::ptr::null_mut();
        // SAFETY: NUL-terminated source and name; no headers.
        let created = call!(unsafe {
            api.create(&mut program, source.as_ptr(), name.as_ptr(), 0, core::ptr::null(), core::ptr::null())
        });
        self.check(created)?;
        let guard = ProgramGuard { api, program };
        let options = if count == 0 { core::ptr::null() } else { option_ptrs.as_ptr() };
        // SAFETY: a live program; `count` NUL-terminated options (null array for none).
        let compiled = call!(unsafe { api.compile(guard.program, count, options) });
        let log = self.read(&guard, api.log_size, api.log)?;
        if let Err(error) = self.check(compiled) {
            return Err(CompileError { error, log });
        }
        let text = self.read(&guard, api.ptx_size, api.ptx)?;
        Ok(Ptx { text, log })
    }

    /// Reads a NUL-terminated text of the program (`get`) whose size (NUL included) `size` gives.
    fn read(&self, guard: &ProgramGuard<'_>, size: Function<SizeFn>, get: Function<TextFn>) -> Result<String> {
        let mut n = 0usize;
        // SAFETY: a live program; `n` writable.
        self.check(call!(unsafe { size(guard.program, &mut n) }))?;
        let mut buf = vec![0u8; n.max(1)];
        // SAFETY: `buf` holds the `n` bytes NVRTC said it writes (at least one).
        self.check(call!(unsafe { get(guard.program, buf.as_mut_ptr().cast()) }))?;
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(end);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}

/// NVRTC's result names (`nvrtcGetErrorString`'s texts), as static strings.
fn static_name(text: &str) -> Option<&'static str> {
    const NAMES: [&str; 13] = [
        "NVRTC_SUCCESS",
        "NVRTC_ERROR_OUT_OF_MEMORY",
        "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        "NVRTC_ERROR_INVALID_INPUT",
        "NVRTC_ERROR_INVALID_PROGRAM",
        "NVRTC_ERROR_INVALID_OPTION",
        "NVRTC_ERROR_COMPILATION",
        "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION",
        "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID",
        "NVRTC_ERROR_INTERNAL_ERROR",
        "NVRTC_ERROR_TIME_FILE_WRITE_FAILED",
    ];
    NAMES.iter().copied().find(|n| *n == text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nvrtcs() {
        assert_eq!(static_name("NVRTC_ERROR_COMPILATION"), Some("NVRTC_ERROR_COMPILATION"));
        assert_eq!(static_name("something else"), None);
        assert!(!candidates().is_empty());
    }
}
