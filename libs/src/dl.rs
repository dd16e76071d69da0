//! Loading a CUDA library (cuBLAS, NCCL, NVRTC) at run time, so that building needs none:
//! `libloading`'s `dlopen`/`dlsym`, with the library kept open by the value that owns it.
//!
//! The callers copy the symbols they need out as function pointers into a table that sits beside
//! the [`Library`] in one struct, declared before it: Rust drops fields in declaration order, so
//! the table goes before the library closes, and nothing calls through a dropped table.

use core::ffi::{c_void, CStr};
use libloading::os::unix::{Library as Loaded, RTLD_LOCAL, RTLD_NOW};
use ordo_cuda_core::{Error, Result, UsageKind};

/// A library opened with `dlopen`, closed on drop.
pub(crate) struct Library {
    lib: Loaded,
    call: &'static str,
}

impl Library {
    /// Opens the file the environment variable `env` names, else the first of `names` the loader
    /// finds; `call` names the caller in errors.
    pub(crate) fn open(env: &str, names: &[&CStr], call: &'static str, missing: &'static str) -> Result<Library> {
        let explicit = std::env::var_os(env).and_then(|p| std::ffi::CString::new(p.into_encoded_bytes()).ok());
        explicit
            .as_deref()
            .into_iter()
            .chain(names.iter().copied())
            .find_map(|name| Library::open_path(name, call))
            .ok_or(Error::usage(UsageKind::NotSupported, call, missing))
    }

    /// Opens `path` (a file name the loader searches for, or a path), or `None`.
    pub(crate) fn open_path(path: &CStr, call: &'static str) -> Option<Library> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::OsStr::from_bytes(path.to_bytes());
        // SAFETY: loading runs the library's initialisers, as any load of a CUDA library does.
        let lib = unsafe { Loaded::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.ok()?;
        Some(Library { lib, call })
    }

    /// The address of `name`.
    pub(crate) fn symbol(&self, name: &CStr) -> Result<*mut c_void> {
        // SAFETY: the symbol is read as an address only; what it is called as is the caller's
        // promise (its C signature).
        let address = unsafe { self.lib.get::<*mut c_void>(name.to_bytes_with_nul()) }.map(|s| s.into_raw());
        match address {
            Ok(p) if !p.is_null() => Ok(p),
            _ => Err(Error::usage(UsageKind::NotSupported, self.call, "a symbol is missing from the loaded library")),
        }
    }

    /// The file the loaded library holding `symbol` came from (`dladdr`).
    #[cfg(feature = "nvrtc")]
    pub(crate) fn file_of(symbol: *const c_void) -> Option<std::path::PathBuf> {
        let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: `info` is writable; dladdr only reads the loader's tables.
        if unsafe { libc::dladdr(symbol, info.as_mut_ptr()) } == 0 {
            return None;
        }
        // SAFETY: dladdr filled it (non-zero return).
        let info = unsafe { info.assume_init() };
        if info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated path of the loader's, read now.
        let name = unsafe { CStr::from_ptr(info.dli_fname) };
        use std::os::unix::ffi::OsStrExt;
        Some(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes())))
    }
}
