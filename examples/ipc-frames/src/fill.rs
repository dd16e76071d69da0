//! The producer's fill kernel (`pattern::FILL_PTX`), loaded at run time from PTX.

use crate::failure::Result;
use ordo_cuda::StreamRef;

/// The loaded fill kernel (never made without `cudaLibraryLoadData`: [`Fill::load`] says why).
#[cfg_attr(not(cuda_12_8), allow(dead_code))]
pub struct Fill {
    #[cfg(cuda_12_8)]
    kernel: ordo_cuda::library::LibraryKernel<(*mut u32, u64, u32)>,
}

impl Fill {
    /// Loads the PTX (`cudaLibraryLoadData`) and looks the kernel up.
    #[cfg(cuda_12_8)]
    pub fn load() -> Result<Fill> {
        use crate::failure::Context;
        let library = ordo_cuda::library::Library::from_ptx(ordo_ipc_frames::pattern::FILL_PTX)
            .context("loading the fill kernel's PTX")?;
        // SAFETY: the PTX's entry takes (u64 pointer, u64, u32), which is (*mut u32, u64, u32).
        let kernel = unsafe { library.kernel(c"ordo_fill_frame") }.context("looking up the fill kernel")?;
        Ok(Fill { kernel })
    }

    /// Without `cudaLibraryLoadData` (headers older than CUDA 12.8) there is no fill kernel.
    #[cfg(not(cuda_12_8))]
    pub fn load() -> Result<Fill> {
        Err(crate::failure::fail(
            "built against CUDA headers older than 12.8: no cudaLibraryLoadData to load the fill kernel",
        ))
    }

    /// Writes frame `index` (`pattern::word`) into the `words` words at `dst` on `stream`.
    ///
    /// # Safety
    /// - `dst` is device memory of the stream's device, valid for `words` `u32` writes until the
    ///   kernel completes.
    pub unsafe fn launch(&self, stream: StreamRef<'_>, dst: *mut u32, words: usize, index: u64) -> Result<()> {
        #[cfg(cuda_12_8)]
        {
            use ordo_ipc_frames::pattern::{fill_blocks, seed, FILL_BLOCK};
            let config = ordo_cuda::LaunchConfig::new(fill_blocks(words), FILL_BLOCK);
            // SAFETY: the kernel writes `words` words at `dst` (the caller's contract) and keeps
            // its library loaded through `self`, which the caller keeps until the stream is done.
            unsafe { self.kernel.launch(stream, &config, (dst, words as u64, seed(index))) }?;
            Ok(())
        }
        #[cfg(not(cuda_12_8))]
        {
            let _ = (stream, dst, words, index);
            Err(crate::failure::fail("no fill kernel in this build"))
        }
    }
}
