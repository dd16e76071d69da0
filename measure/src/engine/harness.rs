//! The engine's instruments: the helper kernels ([`crate::helpers`]) loaded from PTX, a page of
//! mapped host memory that the blocking kernel polls and the timestamps kernel writes into, the
//! blocking kernel with a guard that releases it on every path out, the SM-clock stamps around a
//! sample, and the L2 flush.

use super::launch::Func;
use crate::throttle::ClockReading;
use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::library::Library;
use ordo_cuda_core::{sys, Error, Result, StreamRef};
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

/// Words of the mapped page: the blocking kernel's flag, its timed-out flag, then the start and
/// stop stamps (`%globaltimer`, `%clock64`).
const FLAG: usize = 0;
const TIMED_OUT: usize = 1;
const START: usize = 2;
const STOP: usize = 4;
const WORDS: usize = 6;

/// The helper kernels.
pub(crate) struct Helpers {
    timestamps: Func,
    block: Func,
    spin: Func,
}

impl Helpers {
    pub(crate) fn load() -> Result<Helpers> {
        let library = Library::from_ptx(crate::helpers::PTX)?;
        Ok(Helpers {
            timestamps: Func::from_library(&library, crate::helpers::TIMESTAMPS)?,
            block: Func::from_library(&library, crate::helpers::BLOCK)?,
            spin: Func::from_library(&library, crate::helpers::SPIN)?,
        })
    }

    /// Launches `spin(ns)` on `stream`: a kernel of `ns` nanoseconds.
    pub(crate) fn spin(&self, stream: StreamRef<'_>, ns: u64) -> Result<()> {
        self.spin_grid(stream, ns, LaunchConfig::new(1, 1))
    }

    /// Launches `spin(ns)` on `stream` over `config`: every thread spins `ns` nanoseconds (a load
    /// that holds SMs).
    pub(crate) fn spin_grid(&self, stream: StreamRef<'_>, ns: u64, config: LaunchConfig) -> Result<()> {
        let mut ns = ns;
        let mut args = [(&mut ns as *mut u64).cast::<c_void>()];
        // SAFETY: the spin kernel takes one u64 and touches no memory.
        unsafe { ordo_cuda_core::launch::launch_raw(self.spin.as_runtime(), stream, &config, args.as_mut_ptr()) }
    }
}

/// A page of mapped, pinned host memory (`cudaHostAlloc` with `cudaHostAllocMapped`), read and
/// written by the host with volatile accesses and by the helper kernels through its device address.
pub(crate) struct MappedHost {
    host: NonNull<u64>,
    device: *mut u64,
}

impl MappedHost {
    pub(crate) fn new() -> Result<MappedHost> {
        let mut p: *mut c_void = core::ptr::null_mut();
        let bytes = WORDS * core::mem::size_of::<u64>();
        // SAFETY: `p` writable; mapped and portable pinned memory of `bytes`.
        ordo_cuda_core::error::check(
            unsafe { sys::cudaHostAlloc(&mut p, bytes, sys::cudaHostAllocMapped | sys::cudaHostAllocPortable) },
            "cudaHostAlloc",
        )?;
        let host = NonNull::new(p.cast::<u64>()).ok_or(Error::invalid("cudaHostAlloc", "CUDA returned no memory"))?;
        // Owned from here: freed on the error path below too.
        let mut page = MappedHost { host, device: core::ptr::null_mut() };
        let mut d: *mut c_void = core::ptr::null_mut();
        // SAFETY: `d` writable; memory from cudaHostAlloc with the mapped flag.
        ordo_cuda_core::error::check(
            unsafe { sys::cudaHostGetDevicePointer(&mut d, p, 0) },
            "cudaHostGetDevicePointer",
        )?;
        page.device = d.cast();
        for i in 0..WORDS {
            page.write(i, 0);
        }
        Ok(page)
    }

    fn write(&self, i: usize, v: u64) {
        debug_assert!(i < WORDS);
        // SAFETY: `i < WORDS`, within the allocation; aligned (cudaHostAlloc is page-aligned).
        unsafe { core::ptr::write_volatile(self.host.as_ptr().add(i), v) };
    }

    fn read(&self, i: usize) -> u64 {
        debug_assert!(i < WORDS);
        // SAFETY: as in `write`.
        unsafe { core::ptr::read_volatile(self.host.as_ptr().add(i)) }
    }

    fn device_word(&self, i: usize) -> *mut u64 {
        self.device.wrapping_add(i)
    }
}

impl Drop for MappedHost {
    fn drop(&mut self) {
        // SAFETY: our allocation, freed once. The kernels that use it have completed: every user
        // synchronises the stream before it returns, and the blocking kernel exits on its flag or
        // timeout.
        let code = unsafe { sys::cudaFreeHost(self.host.as_ptr().cast()) };
        ordo_cuda_core::error::record_drop_error(code, "cudaFreeHost");
    }
}

/// The blocking kernel and the clock stamps, on one page.
pub(crate) struct Instruments {
    pub(crate) helpers: Helpers,
    page: MappedHost,
    sms: u32,
    timeout_ns: u64,
}

/// A blocked stream; released when dropped (so an error between blocking and releasing cannot
/// leave the GPU spinning until the timeout).
pub(crate) struct Blocked<'a> {
    page: &'a MappedHost,
}

impl Blocked<'_> {
    /// Releases the blocking kernel.
    pub(crate) fn release(self) {}
}

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        fence(Ordering::SeqCst);
        self.page.write(FLAG, 1);
        fence(Ordering::SeqCst);
    }
}

impl Instruments {
    pub(crate) fn new(sms: u32, blocking_timeout_s: f64) -> Result<Instruments> {
        let timeout_ns = (blocking_timeout_s * 1e9).clamp(1e6, 3.6e12) as u64;
        Ok(Instruments { helpers: Helpers::load()?, page: MappedHost::new()?, sms: sms.max(1), timeout_ns })
    }

    /// Enqueues the blocking kernel on `stream`: what is enqueued after it waits until the guard
    /// is released or dropped.
    pub(crate) fn block(&self, stream: StreamRef<'_>) -> Result<Blocked<'_>> {
        self.page.write(FLAG, 0);
        self.page.write(TIMED_OUT, 0);
        fence(Ordering::SeqCst);
        let (mut flag, mut timed_out, mut ns) =
            (self.page.device_word(FLAG), self.page.device_word(TIMED_OUT), self.timeout_ns);
        let mut args = [
            (&mut flag as *mut *mut u64).cast::<c_void>(),
            (&mut timed_out as *mut *mut u64).cast::<c_void>(),
            (&mut ns as *mut u64).cast::<c_void>(),
        ];
        // SAFETY: the blocking kernel takes (u32*, u32*, u64): two words of the mapped page, which
        // outlives every kernel (see MappedHost's drop).
        unsafe {
            ordo_cuda_core::launch::launch_raw(
                self.helpers.block.as_runtime(),
                stream,
                &LaunchConfig::new(1, 1),
                args.as_mut_ptr(),
            )?
        };
        Ok(Blocked { page: &self.page })
    }

    /// Launches each helper kernel once and waits: CUDA loads a module's kernels lazily, at their
    /// first launch, and a first launch made while the blocking kernel spins could wait on it
    /// (`docs/cuda-behaviours.md`, CB-11; nvbench loads its blocking kernel during warm-up for the
    /// same reason).
    pub(crate) fn warm_up(&self, stream: StreamRef<'_>) -> Result<()> {
        self.block(stream)?.release();
        self.reset_clock();
        self.clock_start(stream)?;
        self.clock_stop(stream)?;
        self.helpers.spin(stream, 0)?;
        stream.synchronize()?;
        self.check_block()
    }

    /// After the stream has been synchronised: an error if the blocking kernel gave up waiting.
    pub(crate) fn check_block(&self) -> Result<()> {
        if self.page.read(TIMED_OUT) != 0 {
            return Err(Error::invalid(
                crate::cli::PROGRAM,
                format!(
                    "the blocking kernel timed out after {:.1} s: the launches behind it did not all fit in the launch queue (use fewer a sample), one of them waited for the stream, or another thread of the process waited for the device meanwhile (measure with the device to yourself)",
                    self.timeout_ns as f64 / 1e9
                ),
            ));
        }
        Ok(())
    }

    /// Clears both stamps, before a sample.
    pub(crate) fn reset_clock(&self) {
        for i in START..STOP + 2 {
            self.page.write(i, u64::MAX);
        }
        fence(Ordering::SeqCst);
    }

    fn stamp(&self, stream: StreamRef<'_>, at: usize) -> Result<()> {
        let mut out = self.page.device_word(at);
        let mut args = [(&mut out as *mut *mut u64).cast::<c_void>()];
        // SAFETY: the timestamps kernel takes a u64* and writes two words there: within the page.
        unsafe {
            ordo_cuda_core::launch::launch_raw(
                self.helpers.timestamps.as_runtime(),
                stream,
                &LaunchConfig::new(self.sms, 1),
                args.as_mut_ptr(),
            )
        }
    }

    /// The start stamp (nvbench's `gpu_frequency_start`).
    pub(crate) fn clock_start(&self, stream: StreamRef<'_>) -> Result<()> {
        self.stamp(stream, START)
    }

    /// The stop stamp.
    pub(crate) fn clock_stop(&self, stream: StreamRef<'_>) -> Result<()> {
        self.stamp(stream, STOP)
    }

    /// After the stream has been synchronised: the reading between the stamps, if both were
    /// written (by a block on SM 0).
    pub(crate) fn clock_reading(&self) -> Option<ClockReading> {
        fence(Ordering::SeqCst);
        let s = (self.page.read(START), self.page.read(START + 1));
        let e = (self.page.read(STOP), self.page.read(STOP + 1));
        if [s.0, s.1, e.0, e.1].contains(&u64::MAX) {
            return None;
        }
        ClockReading::between(s, e)
    }
}
