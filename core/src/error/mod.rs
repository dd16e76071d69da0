//! Errors: CUDA's own, kept with their code and the call that returned them, and ordo's checks made
//! before calling CUDA.
//!
//! # Two waves of errors
//! CUDA reports a problem with a launch in two waves:
//! 1. **Launch-configuration errors** (a zero grid, too many threads a block, too much shared memory,
//!    a bad attribute) come back from the launch call itself. ordo checks the common ones before
//!    calling CUDA and returns [`Error::Usage`]; the rest come back as [`Error::Cuda`] from `launch`.
//! 2. **Execution errors** (an illegal address, a trap, a timeout) happen on the device after the
//!    launch call has returned `Ok`. They surface at the next call that waits on or asks about the
//!    work: [`Stream::query`](crate::stream::StreamRef::query), `synchronize`, an event query, or any
//!    later call at all for the sticky ones. Set `CUDA_LAUNCH_BLOCKING=1` in the environment to make
//!    every launch synchronous while debugging, so the error surfaces at the launch that caused it.
//!
//! # Sticky errors
//! Some execution errors leave the CUDA context unusable ([`CudaError::is_sticky`]): every later
//! call in the process returns the same error, and the only way on is a new process.
//!
//! # The driver's own words
//! Many CUDA codes are generic ("invalid argument"). From the CUDA 12.9 driver on, the driver
//! logs why a call failed; with `std`, an error made by [`check`] (through which ordo's CUDA calls
//! report) or by [`CudaError::from_failed_call`] carries the lines the driver logged for it, read
//! only after the failure ([`CudaError::driver_log`], shown by `Display`). Only that failure's
//! lines: those ending in the driver's `Returning` line with the failure's code, from an entry
//! point the failing call may have called, written on the failing thread since it last read the
//! log (or, for a thread that has not read it, since a thread that had its POSIX handle exited).
//! A call the runtime refuses on its own carries none. The success path is unchanged: one compare.
//!
//! # Errors met in `Drop`
//! `Drop` cannot return an error, and ordo's handles free on drop (`cudaFreeAsync`,
//! `cudaStreamDestroy`, ...). A failure there (a lost context; a free inside a capture that
//! invalidated it) is kept, not discarded: with `std`, in a process-wide queue that
//! [`take_drop_errors`] empties (oldest first; at most [`DROP_ERROR_CAPACITY`] are kept, the
//! oldest, and the ones that did not fit are counted by [`lost_drop_error_count`]). Every build
//! counts them ([`drop_error_count`]). Libraries built on ordo report their own `Drop` failures
//! the same way with [`record_drop_error`] and [`record_drop_error_value`].
//!
//! One concept a file: the error types and the check here, the call macro [`cuda_call!`](crate::cuda_call)
//! (`call.rs`), the words of an error in [`Text`] (`text.rs`), the driver's log (`driver_log.rs`), the
//! drop-error queue (`drop_queue.rs`).

#[macro_use]
mod call;
#[cfg(feature = "std")]
mod driver_log;
mod drop_queue;
mod text;

pub use call::check_answers;
#[cfg(feature = "std")]
pub use drop_queue::take_drop_errors;
pub use drop_queue::{
    drop_error_count, lost_drop_error_count, record_drop_error, record_drop_error_value, DROP_ERROR_CAPACITY,
};
pub use text::Text;

use core::ffi::CStr;
use core::fmt;
use ordo_cuda_sys as sys;

/// `Result` with ordo's [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// An error returned by a CUDA runtime call, optionally with ordo's hint about its likely cause
/// and the driver's log lines for it (both shown by `Display`; the code, name and call stay
/// CUDA's). Plain data (`Copy`, 40 bytes): the log lines live in a process-wide store and the
/// error holds their number ([`driver_log`](Self::driver_log)).
#[derive(Clone, Copy)]
pub struct CudaError {
    code: sys::cudaError_t,
    /// The number of the driver's log lines kept for this failure, when there are any.
    log: Option<core::num::NonZeroU32>,
    call: &'static str,
    hint: Option<&'static str>,
}

#[cfg(target_pointer_width = "64")]
static_assertions::const_assert!(core::mem::size_of::<CudaError>() <= 40);

/// The codes whose documentation in `driver_types.h` says the process is left in an inconsistent
/// state and must be restarted ("sticky": the context is lost). A test checks this list against the
/// header the build used.
const STICKY: &[u32] = &[
    226, // cudaErrorContained
    700, // cudaErrorIllegalAddress
    702, // cudaErrorLaunchTimeout
    710, // cudaErrorAssert
    714, // cudaErrorHardwareStackError
    715, // cudaErrorIllegalInstruction
    716, // cudaErrorMisalignedAddress
    717, // cudaErrorInvalidAddressSpace
    718, // cudaErrorInvalidPc
    719, // cudaErrorLaunchFailure
    721, // cudaErrorTensorMemoryLeak
    810, // cudaErrorMpsClientTerminated
    911, // cudaErrorExternalDevice
];

impl CudaError {
    /// An error for `code` returned by `call` (the CUDA function's name).
    #[inline]
    pub const fn new(code: sys::cudaError_t, call: &'static str) -> CudaError {
        CudaError { code, log: None, call, hint: None }
    }

    /// The error for `code`, just returned by the failed `call`, as [`check`] makes it: with the
    /// driver's log lines for the failure (when the driver logs, with `std`), and the hint that
    /// tells a missing driver from an old one. For code that calls CUDA itself and must not lose
    /// the driver's words; call it right after the failure, on the failing thread.
    #[cold]
    #[inline(never)]
    pub fn from_failed_call(code: sys::cudaError_t, call: &'static str) -> CudaError {
        failure(code, call)
    }

    /// The same error with ordo's `hint` about its likely cause, e.g. which ordo call would avoid
    /// it. The code, name and call are unchanged.
    #[inline]
    pub const fn with_hint(self, hint: &'static str) -> CudaError {
        CudaError { hint: Some(hint), ..self }
    }

    /// ordo's hint about the likely cause, when it has one.
    #[inline]
    pub const fn hint(&self) -> Option<&'static str> {
        self.hint
    }

    /// The CUDA error code.
    #[inline]
    pub const fn code(&self) -> sys::cudaError_t {
        self.code
    }

    /// The CUDA function that returned it, e.g. `"cudaStreamSynchronize"`.
    #[inline]
    pub const fn call(&self) -> &'static str {
        self.call
    }

    /// The code's name, e.g. `cudaErrorIllegalAddress` (from `cudaGetErrorName`; needs no driver,
    /// allocates nothing).
    pub fn name(&self) -> &'static CStr {
        // SAFETY: cudaGetErrorName returns a pointer to a static, NUL-terminated string for every
        // value, "unrecognized error code" for unknown ones.
        unsafe { CStr::from_ptr(sys::cudaGetErrorName(self.code)) }
    }

    /// CUDA's description of the code (from `cudaGetErrorString`).
    pub fn description(&self) -> &'static CStr {
        // SAFETY: as for `name`.
        unsafe { CStr::from_ptr(sys::cudaGetErrorString(self.code)) }
    }

    /// Whether the error is sticky: the context is lost and every later CUDA call in this process
    /// fails; only a new process can use the device again.
    #[inline]
    pub fn is_sticky(&self) -> bool {
        is_sticky_code(self.code)
    }

    /// The device has no driver (or one too old for this runtime).
    #[inline]
    pub fn is_no_driver(&self) -> bool {
        self.code == sys::cudaError::cudaErrorInsufficientDriver || self.code == sys::cudaError::cudaErrorNoDevice
    }

    /// The lines the driver logged on the failing thread for this failure (CUDA 12.9 and later
    /// drivers), `; `-separated, each as `[severity] message`, the last `[E] Returning N (NAME)
    /// from cuEntryPoint`: the reason behind a generic code. `None` when the driver logged nothing
    /// for it (a call the runtime refused without calling the driver), has no log, or the error
    /// was not made at a failure ([`CudaError::new`]); never another failure's lines. The last
    /// 256 failures' lines are kept; an older error has lost them.
    #[cfg(feature = "std")]
    pub fn driver_log(&self) -> Option<Text> {
        driver_log::lookup(self.log?)
    }
}

/// Equality is CUDA's: code, call and hint. The driver's log lines are context, not identity.
impl PartialEq for CudaError {
    fn eq(&self, other: &CudaError) -> bool {
        self.code == other.code && self.call == other.call && self.hint == other.hint
    }
}

impl Eq for CudaError {}

/// Whether `code` is one of the sticky errors.
#[inline]
pub fn is_sticky_code(code: sys::cudaError_t) -> bool {
    STICKY.contains(&code.0)
}

impl fmt::Debug for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaError")
            .field("code", &self.code.0)
            .field("name", &self.name())
            .field("call", &self.call)
            .field("sticky", &self.is_sticky())
            .field("hint", &self.hint)
            .field("driver_log", &self.log)
            .finish()
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {} ({}): {}",
            self.call,
            self.name().to_str().unwrap_or("?"),
            self.code.0,
            self.description().to_str().unwrap_or("?")
        )?;
        if self.is_sticky() {
            f.write_str(" [sticky: the CUDA context is lost; restart the process]")?;
        }
        if let Some(hint) = self.hint {
            write!(f, " (hint: {hint})")?;
        }
        #[cfg(feature = "std")]
        if let Some(log) = self.driver_log() {
            write!(f, " (driver: {log})")?;
        }
        Ok(())
    }
}

/// What kind of mistake ordo caught before calling CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum UsageKind {
    /// An argument CUDA would reject or misread: a zero size, a size that overflows, a null
    /// pointer, mismatched lengths, a value out of range.
    InvalidArgument,
    /// Pageable host memory where pinned or registered memory is required.
    PageableMemory,
    /// The CUDA version ordo was built against, or the device, cannot do this.
    NotSupported,
    /// A Rust panic was caught at an FFI boundary (host function, C ABI).
    Panicked,
}

/// A mistake ordo (or a library built on it) caught before calling CUDA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    /// What kind of mistake.
    pub kind: UsageKind,
    /// The function that refused, e.g. `"Stream::with_priority"`.
    pub call: &'static str,
    /// What was wrong, in words (ordo's own are static; a caller's may be made at run time).
    pub what: Text,
}

/// A call into another CUDA library (cuBLAS, NCCL) that reports its own status codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryError {
    /// The library, e.g. `"cuBLAS"`.
    pub library: &'static str,
    /// The function that failed, e.g. `"cublasSgemv_v2"`.
    pub call: &'static str,
    /// The library's status code.
    pub status: i32,
    /// The library's own words about the failure, when it has them (NCCL's `ncclGetLastError`,
    /// kept whole as an owned text).
    pub detail: Option<Text>,
}

impl LibraryError {
    /// An error of `library` with `status` from `call`, without detail.
    #[inline]
    pub const fn new(library: &'static str, call: &'static str, status: i32) -> LibraryError {
        LibraryError { library, call, status, detail: None }
    }
}

/// ordo's error: from CUDA, from another CUDA library, or from ordo's own checks. `Clone`, not
/// `Copy`: a usage error's words or a library's detail may be an owned [`Text`]. That costs no
/// size: an `Error` is 64 bytes on 64-bit targets, as when its texts were all `&'static str`
/// (asserted below).
#[derive(Clone, PartialEq, Eq)]
pub enum Error {
    /// A CUDA call failed.
    Cuda(CudaError),
    /// ordo refused the call before reaching CUDA.
    Usage(UsageError),
    /// A call into another CUDA library failed.
    Library(LibraryError),
}

#[cfg(target_pointer_width = "64")]
static_assertions::const_assert!(core::mem::size_of::<Error>() <= 64);

impl Error {
    /// A usage error: `kind` of mistake, the function that refused (`call`), and `what` was wrong,
    /// static words or (with `alloc`) words made at run time:
    /// `Error::usage(UsageKind::InvalidArgument, "frame", format!("{rows} rows, at most {max}"))`.
    #[inline]
    pub fn usage(kind: UsageKind, call: &'static str, what: impl Into<Text>) -> Error {
        Error::Usage(UsageError { kind, call, what: what.into() })
    }

    /// An invalid-argument usage error, with static words or (with `alloc`) words made at run
    /// time: `Error::invalid("frame", format!("{rows} rows, at most {max}"))`.
    #[inline]
    pub fn invalid(call: &'static str, what: impl Into<Text>) -> Error {
        Error::usage(UsageKind::InvalidArgument, call, what)
    }

    /// [`usage`](Self::usage) with static words, usable in a `const`.
    #[inline]
    pub const fn usage_static(kind: UsageKind, call: &'static str, what: &'static str) -> Error {
        Error::Usage(UsageError { kind, call, what: Text::from_static(what) })
    }

    /// The CUDA error, when it is one.
    #[inline]
    pub fn cuda(&self) -> Option<CudaError> {
        match self {
            Error::Cuda(e) => Some(*e),
            Error::Usage(_) | Error::Library(_) => None,
        }
    }

    /// The CUDA code, when it is a CUDA error.
    #[inline]
    pub fn cuda_code(&self) -> Option<sys::cudaError_t> {
        self.cuda().map(|e| e.code)
    }

    /// Whether the error is a sticky CUDA error (the context is lost).
    #[inline]
    pub fn is_sticky(&self) -> bool {
        self.cuda().is_some_and(|e| e.is_sticky())
    }

    /// The function that failed (CUDA's or ordo's).
    #[inline]
    pub fn call(&self) -> &'static str {
        match self {
            Error::Cuda(e) => e.call,
            Error::Usage(u) => u.call,
            Error::Library(l) => l.call,
        }
    }
}

impl From<CudaError> for Error {
    #[inline]
    fn from(e: CudaError) -> Error {
        Error::Cuda(e)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cuda(e) => fmt::Debug::fmt(e, f),
            Error::Usage(u) => fmt::Debug::fmt(u, f),
            Error::Library(l) => fmt::Debug::fmt(l, f),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cuda(e) => fmt::Display::fmt(e, f),
            Error::Usage(u) => write!(f, "{}: {:?}: {}", u.call, u.kind, u.what),
            Error::Library(l) => {
                write!(f, "{} failed: {} status {}", l.call, l.library, l.status)?;
                match &l.detail {
                    Some(d) => write!(f, ": {d}"),
                    None => Ok(()),
                }
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for CudaError {}
#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// Turns a CUDA status into a `Result`, naming the call. Inlined: one compare on the success path.
#[inline(always)]
pub fn check(code: sys::cudaError_t, call: &'static str) -> Result<()> {
    if code == sys::cudaError::cudaSuccess {
        Ok(())
    } else {
        Err(Error::Cuda(failure(code, call)))
    }
}

/// The error for a failed call. `cudaErrorInsufficientDriver` is CUDA's answer both for a driver
/// too old and for no driver at all; `cudaDriverGetVersion` tells them apart (it answers 0 with
/// no driver), and the error then says so. Any other failure carries the driver's log lines for
/// it, when the driver logged some for this code and call (read here, after the failure: nothing
/// on the success path), except `cudaErrorNotReady`, the answer "not yet" of a poll, which the
/// driver does not explain.
#[cold]
#[inline(never)]
fn failure(code: sys::cudaError_t, call: &'static str) -> CudaError {
    #[allow(unused_mut)]
    let mut err = CudaError::new(code, call);
    if code != sys::cudaError::cudaErrorInsufficientDriver {
        #[cfg(feature = "std")]
        if code != sys::cudaError::cudaErrorNotReady {
            err.log = driver_log::capture(code.0, call);
        }
        return err;
    }
    let mut version: core::ffi::c_int = -1;
    // SAFETY: `version` is writable; the call needs no driver.
    let asked = unsafe { sys::cudaDriverGetVersion(&mut version) };
    if asked == sys::cudaError::cudaSuccess && version == 0 {
        err.with_hint("no NVIDIA driver is installed (libcuda.so.1 was not found)")
    } else {
        err.with_hint("the NVIDIA driver is older than this CUDA runtime: update the driver")
    }
}

/// Clears the runtime's last-error slot and returns what was in it (`cudaGetLastError`). A sticky
/// error is not cleared: it stays for every later call.
pub fn take_last_error() -> Result<()> {
    // SAFETY: no arguments.
    cuda_call!(unsafe { sys::cudaGetLastError() })
}

/// The runtime's last error without clearing it (`cudaPeekAtLastError`).
pub fn peek_last_error() -> Result<()> {
    // SAFETY: no arguments.
    cuda_call!(unsafe { sys::cudaPeekAtLastError() })
}

/// The error for a call that reported success but returned a null handle or a value CUDA does
/// not define (`cudaErrorUnknown`, naming the call).
#[cold]
pub(crate) fn null_handle(call: &'static str) -> Error {
    Error::Cuda(CudaError::new(sys::cudaError::cudaErrorUnknown, call))
}
