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
    /// finds; `call` names the caller in errors, `missing` says that none was found.
    ///
    /// `env` set to an empty value counts as unset (as for `CUDA_HOME`). A path it names that
    /// cannot be opened is an error naming the variable, the path and the loader's reason: the
    /// caller asked for that file, and another one found by the default search would be a
    /// surprise.
    pub(crate) fn open(env: &str, names: &[&CStr], call: &'static str, missing: &'static str) -> Result<Library> {
        if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
            return Library::open_explicit(env, path, call);
        }
        names.iter().find_map(|name| Library::open_path(name, call)).ok_or(Error::usage(
            UsageKind::NotSupported,
            call,
            missing,
        ))
    }

    /// Opens the path `env` names, or says why not.
    fn open_explicit(env: &str, path: std::ffi::OsString, call: &'static str) -> Result<Library> {
        let shown = path.to_string_lossy().into_owned();
        let refused = |why: String| {
            let what =
                format!("{shown} not found by dlopen ({env} names it; unset {env} to search the loader's path): {why}");
            Error::usage(UsageKind::NotSupported, call, what)
        };
        // SAFETY: loading runs the library's initialisers, as any load of a CUDA library does.
        match unsafe { Loaded::open(Some(&path), RTLD_NOW | RTLD_LOCAL) } {
            Ok(lib) => Ok(Library { lib, call }),
            Err(e) => Err(refused(e.to_string())),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each case has a variable of its own, so that the tests of this binary, which run in
    /// parallel threads of one process, never see each other's environment.
    fn open(env: &str, value: Option<&str>) -> Result<Library> {
        match value {
            Some(v) => std::env::set_var(env, v),
            None => std::env::remove_var(env),
        }
        let r = Library::open(env, &[c"libc.so.6"], "test", "libc.so.6 not found");
        std::env::remove_var(env);
        r
    }

    #[test]
    fn an_empty_variable_is_unset() {
        // Before the fix the empty value was a path: dlopen("") opens the main program.
        let lib = open("ORDO_TEST_DL_EMPTY", Some("")).expect("the default search");
        let main_program = Loaded::this().into_raw();
        assert_ne!(lib.lib.into_raw(), main_program, "the main program was opened, not libc.so.6");
        let unset = open("ORDO_TEST_DL_UNSET", None).expect("the default search");
        assert_ne!(unset.lib.into_raw(), main_program);
    }

    #[test]
    fn an_explicit_path_that_cannot_be_opened_is_an_error_naming_it() {
        // Before the fix this fell back to the default search and succeeded.
        let e = open("ORDO_TEST_DL_MISSING", Some("/nonexistent/libc.so.6")).err().expect("no fallback");
        let text = e.to_string();
        assert!(text.contains("/nonexistent/libc.so.6"), "{text}");
        assert!(text.contains("ORDO_TEST_DL_MISSING"), "{text}");
        assert!(matches!(e, Error::Usage(ref u) if u.kind == UsageKind::NotSupported), "{text}");
        assert!(open("ORDO_TEST_DL_GIVEN", Some("libc.so.6")).is_ok(), "an explicit path that opens");
    }
}
