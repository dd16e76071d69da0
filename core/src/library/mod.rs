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
//! first launch rather than at the load, as CUDA's error either way (`docs/cuda-behaviours.md`,
//! CB-11).
//!
//! CUDA reads an image as far as the image itself says. So every image is checked by its kind
//! before CUDA sees it: PTX is text up to a NUL inside the bytes given, with no magic
//! of another format; a cubin's and a fatbin's declared sizes (headers, header tables, sections,
//! entries) lie inside the bytes given; a fatbin wrapper and Tile IR are refused. PTX is then
//! read only up to its NUL, so [`Library::from_ptx`] is safe. What lies inside a cubin's sections
//! or a fatbin's payloads is read by CUDA as the image's maker wrote it, which nothing here can
//! check: loading a cubin or fatbin is `unsafe` ([`Library::from_image`]).
//!
//! CUDA C source compiles to PTX at run time with NVRTC (`ordo_cuda_libs::nvrtc`).

mod image;

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

impl Library {
    /// Loads PTX text (`cudaLibraryLoadData`): the driver compiles it for each device at the
    /// first launch there (or here, for a device already in use). CUDA is given ordo's copy of
    /// the text with a terminating NUL. A usage error, before CUDA sees anything, for text with a
    /// NUL inside it or a control character (every binary image, a cubin's, a fatbin's, Tile
    /// IR's, begins with one: load those with [`from_image`](Self::from_image)); CUDA's error
    /// (`cudaErrorInvalidPtx`, `cudaErrorUnsupportedPtxVersion`, ...) for PTX it refuses.
    pub fn from_ptx(ptx: &str) -> Result<Library> {
        const CALL: &str = "Library::from_ptx";
        let bytes = ptx.as_bytes();
        let body = bytes.strip_suffix(b"\0").unwrap_or(bytes);
        image::check_ptx_text(body).map_err(|why| Error::invalid(CALL, why))?;
        let mut text = Vec::new();
        text.try_reserve_exact(body.len().saturating_add(1)).map_err(|_| {
            Error::Cuda(crate::CudaError::new(ordo_cuda_sys::cudaError::cudaErrorMemoryAllocation, CALL))
        })?;
        text.extend_from_slice(body);
        text.push(0);
        // SAFETY: checked PTX text, NUL-terminated inside `text`: CUDA reads it up to that NUL,
        // during the call.
        unsafe { Library::load(text.as_ptr().cast()) }
    }

    /// Loads a cubin, a fatbin, or NUL-terminated PTX (`cudaLibraryLoadData`), after ordo's checks
    /// of the image's kind, declared sizes and table indices (see the [module docs](self)): a usage
    /// error, before CUDA reads anything, for an image whose header, header tables, sections,
    /// entries or NUL lie past the bytes given, or whose tables index past one another, and for a
    /// fatbin wrapper, Tile IR, LLVM bitcode or an ELF that is no cubin. An image that is not
    /// 8-byte aligned is copied first (CUDA reads its headers in place). The image need not
    /// outlive the call.
    ///
    /// # Safety
    /// - What lies inside the image's sections and payloads (code, CUDA's attribute records, a
    ///   note's descriptor, where a relocation patches, compressed streams) is as nvcc, nvlink,
    ///   fatbinary, NVRTC or nvJitLink write it: CUDA reads it as they do, which ordo cannot check.
    pub unsafe fn from_image(image: &[u8]) -> Result<Library> {
        const CALL: &str = "Library::from_image";
        let kind = image::check(image).map_err(|why| Error::invalid(CALL, why))?;
        if kind == image::Kind::Ptx || image.as_ptr().align_offset(8) == 0 {
            // SAFETY: checked: CUDA reads no further than the bytes given; their contents are
            // the caller's contract.
            return unsafe { Library::load(image.as_ptr().cast()) };
        }
        let mut aligned: Vec<u64> = Vec::new();
        aligned.try_reserve_exact(image.len().div_ceil(8)).map_err(|_| {
            Error::Cuda(crate::CudaError::new(ordo_cuda_sys::cudaError::cudaErrorMemoryAllocation, CALL))
        })?;
        aligned.resize(image.len().div_ceil(8), 0);
        // SAFETY: `aligned` holds at least `image.len()` bytes; the two do not overlap.
        unsafe { core::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr().cast::<u8>(), image.len()) };
        // SAFETY: the same checked bytes, 8-byte aligned; contents the caller's contract.
        unsafe { Library::load(aligned.as_ptr().cast()) }
    }

    /// # Safety
    /// - `code` points to an image that passed [`image::check`], whose bytes stay readable
    ///   during the call.
    /// - Its contents are as [`from_image`](Self::from_image) requires.
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
        let raw = self.kernel_handle(name)?;
        // SAFETY: a `cudaKernel_t` is accepted wherever the runtime takes a kernel's address
        // (`cudaLaunchKernelExC`, occupancy and attribute queries); `Args` is the caller's promise.
        let kernel = unsafe { Kernel::from_raw(raw.cast_const().cast()) }
            .ok_or(Error::invalid("cudaLibraryGetKernel", "CUDA returned no kernel"))?;
        Ok(LibraryKernel { kernel, library: self.clone() })
    }

    /// The kernel `name`'s `cudaKernel_t` (`cudaLibraryGetKernel`), for launches whose arguments
    /// are known only at run time ([`launch_raw`](crate::launch::launch_raw)); entered, as
    /// [`kernel`](Self::kernel)'s are, for ordo's driver launch path, so that its launches ask the
    /// runtime nothing. Valid while this library (or a clone of it) is loaded.
    pub fn kernel_handle(&self, name: &CStr) -> Result<sys::cudaKernel_t> {
        let mut raw: sys::cudaKernel_t = core::ptr::null_mut();
        // SAFETY: a loaded library; a NUL-terminated name; `raw` writable.
        cuda_call!(unsafe { sys::cudaLibraryGetKernel(&mut raw, self.as_raw(), name.as_ptr()) })?;
        let handle = core::ptr::NonNull::new(raw.cast::<core::ffi::c_void>())
            .ok_or(Error::invalid("cudaLibraryGetKernel", "CUDA returned no kernel"))?;
        crate::launch::remember_library_kernel(handle);
        Ok(raw)
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

    /// Launches it on `stream`, as [`Kernel::launch`] does (through the driver, with the
    /// kernel's own handle, by default).
    ///
    /// # Safety
    /// - Everything [`Kernel::launch`] requires.
    /// - The library stays loaded until the kernel completes (at every replay, if captured): keep
    ///   this `LibraryKernel`, or a clone of its [`Library`], alive until then.
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
        assert!(usage(Library::from_ptx("\u{7f}TileIR\0")), "Tile IR's magic, NUL-terminated");
        assert!(usage(Library::from_ptx("\u{7f}TileIR")), "Tile IR's magic");
        // SAFETY: an empty image is refused before CUDA reads anything.
        assert!(usage(unsafe { Library::from_image(&[]) }));
    }
}
