//! Loading a CUDA library (cuBLAS, NCCL) at run time with `dlopen`, so that building needs none.

use core::ffi::{c_void, CStr};
use ordo_core::{Error, Result, UsageKind};

/// A library opened with `dlopen`, closed on drop.
pub(crate) struct Library {
    handle: *mut c_void,
    call: &'static str,
}

// SAFETY: a dlopen handle may be used and closed from any thread.
unsafe impl Send for Library {}

impl Library {
    /// Opens the file the environment variable `env` names, else the first of `names` the loader
    /// finds; `call` names the caller in errors.
    pub(crate) fn open(env: &str, names: &[&CStr], call: &'static str, missing: &'static str) -> Result<Library> {
        let explicit = std::env::var_os(env).and_then(|p| std::ffi::CString::new(p.into_encoded_bytes()).ok());
        let handle = explicit
            .as_deref()
            .into_iter()
            .chain(names.iter().copied())
            // SAFETY: NUL-terminated names; dlopen runs the library's initialisers, as any load does.
            .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
            .find(|h| !h.is_null())
            .ok_or(Error::usage(UsageKind::NotSupported, call, missing))?;
        Ok(Library { handle, call })
    }

    /// Opens the file at `path` (no search, no environment variable), or `None`.
    #[cfg(feature = "nvrtc")]
    pub(crate) fn open_path(path: &CStr, call: &'static str) -> Option<Library> {
        // SAFETY: a NUL-terminated path; dlopen runs the library's initialisers, as any load does.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        (!handle.is_null()).then_some(Library { handle, call })
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

    /// The address of `name`.
    pub(crate) fn symbol(&self, name: &CStr) -> Result<*mut c_void> {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if p.is_null() {
            return Err(Error::usage(
                UsageKind::NotSupported,
                self.call,
                "a symbol is missing from the loaded library",
            ));
        }
        Ok(p)
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        // SAFETY: our handle; whoever used its symbols has finished (the owner drops it last).
        unsafe { libc::dlclose(self.handle) };
    }
}
