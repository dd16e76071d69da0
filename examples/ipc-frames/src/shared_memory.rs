//! Host memory both processes map: a `memfd_create` file mapped `MAP_SHARED`, its descriptor
//! passed to the consumer over the socket (`SCM_RIGHTS`).

use crate::failure::{fail, Context, Result};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// A shared mapping of `len` words; unmapped on drop (the descriptor is closed then too).
pub struct SharedMemory {
    ptr: *mut u32,
    words: usize,
    fd: OwnedFd,
}

impl SharedMemory {
    /// A new file of `bytes` bytes (zeroed), mapped.
    pub fn create(bytes: usize) -> Result<SharedMemory> {
        // SAFETY: a NUL-terminated name; the descriptor returned is ours.
        let raw = unsafe { libc::memfd_create(c"ordo-ipc-frames".as_ptr(), libc::MFD_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error()).context("memfd_create");
        }
        // SAFETY: a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let len = libc::off_t::try_from(bytes).map_err(|_| fail("the shared memory's size does not fit off_t"))?;
        // SAFETY: our descriptor.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len) } != 0 {
            return Err(std::io::Error::last_os_error()).context("ftruncate of the shared memory");
        }
        SharedMemory::map(fd, bytes)
    }

    /// Maps `bytes` bytes of the file `fd` (the producer's, received over the socket); refused when
    /// the file is smaller.
    pub fn map(fd: OwnedFd, bytes: usize) -> Result<SharedMemory> {
        if bytes == 0 || bytes % 4 != 0 {
            return Err(fail("the shared memory's size is not a whole, non-zero number of words"));
        }
        // SAFETY: `stat` is plain data; fstat fills it.
        let mut stat: libc::stat = unsafe { core::mem::zeroed() };
        // SAFETY: our descriptor; `stat` is writable.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(std::io::Error::last_os_error()).context("fstat of the shared memory");
        }
        if usize::try_from(stat.st_size).map_or(true, |size| size < bytes) {
            return Err(fail("the shared memory file is smaller than the frames it should hold"));
        }
        // SAFETY: a fresh mapping of our descriptor's file, at an address the kernel picks.
        let ptr = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap of the shared memory");
        }
        Ok(SharedMemory { ptr: ptr.cast(), words: bytes / 4, fd })
    }

    /// The mapping as words, to register with CUDA (`RegisteredHost`).
    pub fn words_mut(&mut self) -> &mut [u32] {
        // SAFETY: a live mapping of `words` words (page-aligned), borrowed exclusively. The other
        // process writes or reads it only through device copies that the protocol orders against
        // this process's own copies; neither CPU reads or writes it.
        unsafe { core::slice::from_raw_parts_mut(self.ptr, self.words) }
    }
}

impl AsFd for SharedMemory {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: our mapping, unmapped once; nothing borrows it any more (`words_mut` borrows `self`).
        unsafe { libc::munmap(self.ptr.cast(), self.words * 4) };
    }
}
