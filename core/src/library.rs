//! Kernels loaded at run time: a [`Library`] from a PTX, cubin or fatbin image
//! (`cudaLibraryLoadData`, CUDA 12.8 and later headers), and its kernels by name
//! (`cudaLibraryGetKernel`) with the same typed launch as a kernel linked into the program.
//!
//! A library is context-independent: its kernels launch on any device's stream (the driver loads
//! the image into a device's context at the first launch there; PTX is compiled for that device
//! then). The library is unloaded (`cudaLibraryUnload`) when the last [`Library`] handle and the
//! last [`LibraryKernel`] of it are dropped.
//!
//! CUDA may load an image lazily (`CUDA_MODULE_LOADING=LAZY`, the default since CUDA 12.2): an
//! error in it (PTX that does not compile, say) may then show at the kernel's lookup or at its
//! first launch rather than at the load, as CUDA's error either way.
//!
//! PTX is text read up to its NUL, so [`Library::from_ptx`] is safe. A cubin or fatbin carries its
//! own length in its header, which CUDA trusts: loading one is `unsafe`
//! ([`Library::from_image`]).
//!
//! CUDA C source compiles to PTX at run time with NVRTC (`ordo_kernels::nvrtc`).

use crate::error::{Error, Result};
use crate::launch::{Kernel, KernelArgs, LaunchConfig};
use crate::stream::StreamRef;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::{c_void, CStr};
use core::ptr::NonNull;
use ordo_cuda_sys as sys;

/// The loaded image; unloaded on drop.
#[derive(Debug)]
struct Loaded {
    raw: NonNull<sys::CUlib_st>,
}

// SAFETY: a library handle may be used and unloaded from any thread (CUDA's handles are
// thread-safe); nothing here is tied to a thread.
unsafe impl Send for Loaded {}
// SAFETY: as above; `&Loaded` only reads the handle.
unsafe impl Sync for Loaded {}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: our handle, unloaded once (the last reference is being dropped).
        let code = unsafe { sys::cudaLibraryUnload(self.raw.as_ptr()) };
        crate::error::record_drop_error(code, "cudaLibraryUnload");
    }
}

/// A loaded image (`cudaLibrary_t`). Clones share it; it is unloaded when the last clone and the
/// last kernel taken from it are dropped.
#[derive(Debug, Clone)]
pub struct Library {
    inner: Arc<Loaded>,
}

/// The first bytes of an ELF cubin (a fatbin's are not UTF-8, so no `&str` starts with them).
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];

impl Library {
    /// Loads PTX text (`cudaLibraryLoadData`): the driver compiles it for each device at the
    /// first launch there (or here, for a device already in use). A copy with a terminating NUL
    /// is made when `ptx` has none. A usage error for text with a NUL inside it; CUDA's error
    /// (`cudaErrorInvalidPtx`, `cudaErrorUnsupportedPtxVersion`, ...) for PTX it refuses.
    pub fn from_ptx(ptx: &str) -> Result<Library> {
        const CALL: &str = "Library::from_ptx";
        let bytes = ptx.as_bytes();
        let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
        if body.contains(&0) {
            return Err(Error::invalid(CALL, "PTX text with a NUL before its end"));
        }
        if body.starts_with(&ELF_MAGIC) {
            return Err(Error::invalid(CALL, "a cubin or fatbin, not PTX: load it with Library::from_image"));
        }
        let mut text = Vec::with_capacity(body.len() + 1);
        text.extend_from_slice(body);
        text.push(0);
        // SAFETY: NUL-terminated text, read up to its NUL during the call.
        unsafe { Library::load(text.as_ptr().cast()) }
    }

    /// Loads a cubin or fatbin image (`cudaLibraryLoadData`); PTX too, NUL-terminated.
    ///
    /// # Safety
    /// `image` is a complete cubin (ELF) or fatbin made by nvcc, nvlink or NVRTC, or NUL-terminated
    /// PTX: CUDA reads as many bytes as the image's own header says, which nothing here can check.
    /// The image need not outlive the call.
    pub unsafe fn from_image(image: &[u8]) -> Result<Library> {
        if image.is_empty() {
            return Err(Error::invalid("Library::from_image", "an empty image"));
        }
        // SAFETY: the caller's contract.
        unsafe { Library::load(image.as_ptr().cast()) }
    }

    /// # Safety
    /// `code` is an image as [`from_image`](Self::from_image) requires.
    unsafe fn load(code: *const c_void) -> Result<Library> {
        let mut raw: sys::cudaLibrary_t = core::ptr::null_mut();
        use core::ptr::null_mut as none;
        // SAFETY: `raw` is writable; no JIT or library options; the image is the caller's.
        cuda_call!(unsafe { sys::cudaLibraryLoadData(&mut raw, code, none(), none(), 0, none(), none(), 0) })?;
        let raw = NonNull::new(raw).ok_or(Error::invalid("cudaLibraryLoadData", "CUDA returned no library"))?;
        Ok(Library { inner: Arc::new(Loaded { raw }) })
    }

    /// The raw handle (valid while this library is).
    pub fn as_raw(&self) -> sys::cudaLibrary_t {
        self.inner.raw.as_ptr()
    }

    /// The kernel `name` (an `extern "C"` name, or the mangled one) with argument tuple `Args`
    /// (`cudaLibraryGetKernel`). CUDA's `cudaErrorSymbolNotFound` when the image has no such
    /// kernel. The kernel keeps the library loaded.
    ///
    /// # Safety
    /// The kernel's parameters are exactly `Args`, in order (as [`Kernel::from_raw`]).
    pub unsafe fn kernel<Args: KernelArgs>(&self, name: &CStr) -> Result<LibraryKernel<Args>> {
        let mut raw: sys::cudaKernel_t = core::ptr::null_mut();
        // SAFETY: a loaded library; a NUL-terminated name; `raw` writable.
        cuda_call!(unsafe { sys::cudaLibraryGetKernel(&mut raw, self.as_raw(), name.as_ptr()) })?;
        // SAFETY: a `cudaKernel_t` is accepted wherever the runtime takes a kernel's address
        // (`cudaLaunchKernelExC`, occupancy and attribute queries); `Args` is the caller's promise.
        let kernel = unsafe { Kernel::from_raw(raw.cast_const().cast()) }
            .ok_or(Error::invalid("cudaLibraryGetKernel", "CUDA returned no kernel"))?;
        Ok(LibraryKernel { kernel, library: self.clone() })
    }
}

/// A kernel of a [`Library`], keeping it loaded.
#[derive(Debug, Clone)]
pub struct LibraryKernel<Args> {
    kernel: Kernel<Args>,
    library: Library,
}

impl<Args: KernelArgs> LibraryKernel<Args> {
    /// The kernel as a [`Kernel`] (for occupancy and attribute queries, or a
    /// [`PdlKernel`](crate::launch::PdlKernel)). Valid while this `LibraryKernel` or a clone of
    /// its library is alive: a launch of it after that is a launch of an unloaded kernel.
    pub fn as_kernel(&self) -> Kernel<Args> {
        self.kernel
    }

    /// The library it came from.
    pub fn library(&self) -> &Library {
        &self.library
    }

    /// Launches it on `stream`, as [`Kernel::launch`] does.
    ///
    /// # Safety
    /// As [`Kernel::launch`]; and the library stays loaded until the kernel completes (at every
    /// replay, if captured): keep this `LibraryKernel`, or a clone of its [`Library`], alive
    /// until then.
    #[inline]
    pub unsafe fn launch(&self, stream: StreamRef<'_>, config: &LaunchConfig, args: Args) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.kernel.launch(stream, config, args) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_is_not_ptx_is_refused_before_cuda() {
        let usage = |r: Result<Library>| matches!(r, Err(Error::Usage(_)));
        assert!(usage(Library::from_ptx("ab\0cd")), "a NUL inside");
        assert!(usage(Library::from_ptx("\u{7f}ELF and so on")), "a cubin");
        // SAFETY: an empty image is refused before CUDA reads anything.
        assert!(usage(unsafe { Library::from_image(&[]) }));
    }
}
