//! Driver functions reached through the runtime's entry-point query
//! (`cudaGetDriverEntryPointByVersion`, so nothing links to `libcuda`):
//! - the driver's forms of the hottest stream calls, `cuEventRecord`, `cuStreamWaitEvent` and
//!   `cuGraphLaunch`, used by [`Event::record`](crate::Event::record),
//!   [`StreamRef::wait_event`](crate::StreamRef::wait_event) and
//!   [`GraphExec::launch`](crate::GraphExec::launch) in place of the runtime's calls;
//! - `cuGraphNodeGetType`, which knows the node kinds of the driver in use where an older runtime
//!   does not ([`Node::kind`](crate::graph::Node::kind));
//! - calls the runtime offers only in a newer form than the driver it runs on, or not at all
//!   (the driver's error log, read after a failure; green contexts), declared with
//!   [`driver_fns!`] in their form of the CUDA version that introduced them, so that a newer
//!   runtime or driver keeps that ABI.
//!
//! The driver's forms of the hot calls measure faster than the runtime's (`ordo-bench` group
//! `events`, against the C++ runtime calls; graph launch in the group `graph`, against C++
//! `cudaGraphLaunch`): BENCHMARKS.md, "Driver paths, graph memory, batched copies".
//!
//! Each entry is resolved once, on first use, with the calling thread's capture mode relaxed for
//! the query (so that a first use inside another thread's global-mode capture cannot disturb it),
//! and kept in an atomic: the hot path is one atomic load and the driver call. Where the driver
//! refuses a call (its codes are not the runtime's, and it does not make a context current as
//! the runtime does), the caller makes the runtime call instead, which either succeeds or reports
//! the runtime's error with its code and name.

#[cfg(feature = "std")]
use core::ffi::{c_char, c_int};
use core::ffi::{c_uint, c_void, CStr};
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;

/// `cuEventRecord(CUevent, CUstream)`.
pub(crate) type RecordFn = unsafe extern "C" fn(sys::cudaEvent_t, sys::cudaStream_t) -> i32;
/// `cuStreamWaitEvent(CUstream, CUevent, unsigned int flags)`.
pub(crate) type WaitFn = unsafe extern "C" fn(sys::cudaStream_t, sys::cudaEvent_t, u32) -> i32;
/// `cuGraphLaunch(CUgraphExec, CUstream)`.
pub(crate) type GraphLaunchFn = unsafe extern "C" fn(sys::cudaGraphExec_t, sys::cudaStream_t) -> i32;
/// `cuGraphNodeGetType(CUgraphNode, CUgraphNodeType*)` (`CUgraphNodeType` is a C enum: an int).
pub(crate) type NodeTypeFn = unsafe extern "C" fn(sys::cudaGraphNode_t, *mut u32) -> i32;

/// Not resolved yet.
const UNRESOLVED: *mut c_void = core::ptr::null_mut();

/// Resolved and absent: the address of this marker, which no driver function has.
static ABSENT_MARK: u8 = 0;

#[inline(always)]
fn absent() -> *mut c_void {
    core::ptr::addr_of!(ABSENT_MARK).cast_mut().cast()
}

static RECORD: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
static WAIT: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
static GRAPH_LAUNCH: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
static NODE_TYPE: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);

/// Asks the runtime for the driver function `name` (its CUDA 12.0 form), with the calling thread's
/// capture mode relaxed for the query: the query's code, and the address where the driver has it.
/// A failed query's error is not left as the thread's last runtime error.
#[cold]
#[inline(never)]
pub(crate) fn query(name: &CStr) -> (sys::cudaError_t, Option<*mut c_void>) {
    query_version(name, 12000)
}

/// [`query`] for the form `name` has in CUDA `version` (1000 * major + 10 * minor).
#[cold]
#[inline(never)]
pub(crate) fn query_version(name: &CStr, version: c_uint) -> (sys::cudaError_t, Option<*mut c_void>) {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable; restored below.
    let relaxed = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } == sys::cudaError::cudaSuccess;
    let mut p: *mut c_void = core::ptr::null_mut();
    let mut status = sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess;
    // SAFETY: a NUL-terminated name; `p` and `status` writable.
    let code = unsafe {
        sys::compat::cudaGetDriverEntryPointByVersion(
            name.as_ptr(),
            &mut p,
            version,
            sys::cudaGetDriverEntryPointFlags::cudaEnableDefault.0 as u64,
            &mut status,
        )
    };
    if relaxed {
        // SAFETY: puts back the mode the exchange above returned.
        unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) };
    }
    if code != sys::cudaError::cudaSuccess {
        // SAFETY: no arguments.
        unsafe { sys::cudaGetLastError() };
    }
    let found = code == sys::cudaError::cudaSuccess
        && status == sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess
        && !p.is_null();
    (code, found.then_some(p))
}

/// The driver function `name`, or the absent sentinel, stored in `slot`.
#[cold]
#[inline(never)]
fn resolve(slot: &AtomicPtr<c_void>, name: &CStr) -> *mut c_void {
    let p = query(name).1.unwrap_or_else(absent);
    slot.store(p, Ordering::Release);
    p
}

#[inline(always)]
fn entry(slot: &AtomicPtr<c_void>, name: &CStr) -> Option<*mut c_void> {
    let mut p = slot.load(Ordering::Acquire);
    if p == UNRESOLVED {
        p = resolve(slot, name);
    }
    (p != absent()).then_some(p)
}

/// `cuEventRecord`, where the driver has it.
#[inline(always)]
pub(crate) fn event_record() -> Option<RecordFn> {
    // SAFETY: the address of `cuEventRecord` (CUDA 12.0 form), whose signature `RecordFn` is.
    entry(&RECORD, c"cuEventRecord").map(|p| unsafe { core::mem::transmute::<*mut c_void, RecordFn>(p) })
}

/// `cuStreamWaitEvent`, where the driver has it.
#[inline(always)]
pub(crate) fn stream_wait_event() -> Option<WaitFn> {
    // SAFETY: the address of `cuStreamWaitEvent` (CUDA 12.0 form), whose signature `WaitFn` is.
    entry(&WAIT, c"cuStreamWaitEvent").map(|p| unsafe { core::mem::transmute::<*mut c_void, WaitFn>(p) })
}

/// `cuGraphLaunch`, where the driver has it.
#[inline(always)]
pub(crate) fn graph_launch() -> Option<GraphLaunchFn> {
    // SAFETY: the address of `cuGraphLaunch` (CUDA 12.0 form), whose signature `GraphLaunchFn` is.
    entry(&GRAPH_LAUNCH, c"cuGraphLaunch").map(|p| unsafe { core::mem::transmute::<*mut c_void, GraphLaunchFn>(p) })
}

/// `cuGraphNodeGetType`, where the driver has it.
pub(crate) fn graph_node_get_type() -> Option<NodeTypeFn> {
    // SAFETY: the address of `cuGraphNodeGetType` (CUDA 12.0 form), whose signature `NodeTypeFn` is.
    entry(&NODE_TYPE, c"cuGraphNodeGetType").map(|p| unsafe { core::mem::transmute::<*mut c_void, NodeTypeFn>(p) })
}

/// A driver function in its form of one CUDA version, resolved on first use and kept (one atomic
/// load after that). Its users (green contexts, the driver's log) need `std`. The driver's answer is kept whether it has the function or not; a failed
/// query (no driver) is not kept, so that it is asked again.
#[cfg(feature = "std")]
pub(crate) struct DriverFn {
    slot: AtomicPtr<c_void>,
    name: &'static CStr,
    version: c_uint,
    /// What the error says when the driver lacks the function, e.g. "CUDA 12.4 added it".
    since: &'static str,
}

#[cfg(feature = "std")]
impl DriverFn {
    pub(crate) const fn new(name: &'static CStr, version: c_uint, since: &'static str) -> DriverFn {
        DriverFn { slot: AtomicPtr::new(UNRESOLVED), name, version, since }
    }

    /// The function's address, or `None` where the query fails or the driver lacks it. Makes no
    /// error: for the error path itself (the driver's log).
    pub(crate) fn quiet(&self) -> Option<*mut c_void> {
        self.lookup().ok().flatten()
    }

    /// The function's address; the query's error (no driver: `cudaErrorInsufficientDriver`), or
    /// `cudaErrorCallRequiresNewerDriver` naming the function where the driver lacks it.
    pub(crate) fn get(&self) -> crate::error::Result<*mut c_void> {
        let name = self.name.to_str().unwrap_or("a driver function");
        match self.lookup() {
            Ok(Some(p)) => Ok(p),
            Ok(None) => Err(crate::error::CudaError::new(sys::cudaError::cudaErrorCallRequiresNewerDriver, name)
                .with_hint(self.since)
                .into()),
            Err(code) => {
                Err(crate::error::CudaError::from_failed_call(code, "cudaGetDriverEntryPointByVersion").into())
            }
        }
    }

    /// `Ok(Some)` found, `Ok(None)` the driver lacks it, `Err` the query failed.
    fn lookup(&self) -> core::result::Result<Option<*mut c_void>, sys::cudaError_t> {
        let p = self.slot.load(Ordering::Acquire);
        if p != UNRESOLVED {
            return Ok((p != absent()).then_some(p));
        }
        let (code, found) = query_version(self.name, self.version);
        if code != sys::cudaError::cudaSuccess {
            return Err(code);
        }
        self.slot.store(found.unwrap_or_else(absent), Ordering::Release);
        Ok(found)
    }
}

/// Declares typed accessors of driver functions: `fn name() -> Result<Type> = c"cuName", version,
/// "what the driver lacks";` Each resolves once ([`DriverFn`]) and is then one atomic load.
#[cfg(feature = "std")]
macro_rules! driver_fns {
    ($($(#[$doc:meta])* $vis:vis fn $get:ident() -> $ty:ty = $name:literal, $version:literal, $since:literal;)*) => {$(
        $(#[$doc])*
        #[inline]
        $vis fn $get() -> $crate::error::Result<$ty> {
            static FN: $crate::driver_calls::DriverFn = $crate::driver_calls::DriverFn::new($name, $version, $since);
            let p = FN.get()?;
            // SAFETY: the driver's function of this name in its form of this CUDA version, whose
            // prototype the type spells (CUresult is an int enum; handles are pointers).
            Ok(unsafe { core::mem::transmute::<*mut core::ffi::c_void, $ty>(p) })
        }
    )*};
}
#[cfg(feature = "std")]
pub(crate) use driver_fns;

/// `cuLogsCurrent(CUlogIterator* iterator_out, unsigned int flags)`.
#[cfg(feature = "std")]
pub(crate) type LogsCurrentFn = unsafe extern "C" fn(*mut c_uint, c_uint) -> c_int;
/// `cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer, size_t* size, unsigned int flags)`.
#[cfg(feature = "std")]
pub(crate) type LogsDumpFn = unsafe extern "C" fn(*mut c_uint, *mut c_char, *mut usize, c_uint) -> c_int;

#[cfg(feature = "std")]
static LOGS_CURRENT: DriverFn = DriverFn::new(c"cuLogsCurrent", 12090, "CUDA 12.9 added the driver's error log");
#[cfg(feature = "std")]
static LOGS_DUMP: DriverFn = DriverFn::new(c"cuLogsDumpToMemory", 12090, "CUDA 12.9 added the driver's error log");

/// `cuLogsCurrent` and `cuLogsDumpToMemory` (CUDA 12.9 and later drivers), or `None`. Makes no
/// error when they are missing: it runs on the error path.
#[cfg(feature = "std")]
pub(crate) fn logs() -> Option<(LogsCurrentFn, LogsDumpFn)> {
    let (current, dump) = (LOGS_CURRENT.quiet()?, LOGS_DUMP.quiet()?);
    // SAFETY: the driver's `cuLogsCurrent` and `cuLogsDumpToMemory` as of CUDA 12.9, whose
    // prototypes these types spell.
    Some(unsafe {
        (
            core::mem::transmute::<*mut c_void, LogsCurrentFn>(current),
            core::mem::transmute::<*mut c_void, LogsDumpFn>(dump),
        )
    })
}
