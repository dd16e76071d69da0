//! The driver's forms of the hottest stream calls, `cuEventRecord`, `cuStreamWaitEvent` and
//! `cuGraphLaunch`, reached through the runtime's entry-point query
//! (`cudaGetDriverEntryPointByVersion`, so nothing links to `libcuda`) and used by
//! [`Event::record`](crate::Event::record), [`StreamRef::wait_event`](crate::StreamRef::wait_event)
//! and [`GraphExec::launch`](crate::GraphExec::launch) in place of the runtime's calls (built
//! against CUDA 12.8 or later headers); and `cuGraphNodeGetType`, which knows the node kinds of the
//! driver in use where an older runtime does not ([`Node::kind`](crate::graph::Node::kind)).
//! Measured on an H200 (CUDA 13.0, `ordo-bench` group `events`, C++ runtime calls as the
//! baseline): `cuEventRecord` 0.90x `cudaEventRecord`, record + wait 0.82x; the numbers of each
//! run are in BENCHMARKS.md; graph launch is measured by the group `graph` (ordo's launch against
//! C++ `cudaGraphLaunch`).
//!
//! Each entry is resolved once, on first use, with the calling thread's capture mode relaxed for
//! the query (so that a first use inside another thread's global-mode capture cannot disturb it),
//! and kept in an atomic: the hot path is one atomic load and the driver call. Where the driver
//! refuses a call (its codes are not the runtime's, and it does not make a context current as
//! the runtime does), the caller makes the runtime call instead, which either succeeds or reports
//! the runtime's error with its code and name.

use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, Ordering};
use ordo_cuda_sys as sys;

/// `cuEventRecord(CUevent, CUstream)`.
#[cfg(cuda_12_8)]
pub(crate) type RecordFn = unsafe extern "C" fn(sys::cudaEvent_t, sys::cudaStream_t) -> i32;
/// `cuStreamWaitEvent(CUstream, CUevent, unsigned int flags)`.
#[cfg(cuda_12_8)]
pub(crate) type WaitFn = unsafe extern "C" fn(sys::cudaStream_t, sys::cudaEvent_t, u32) -> i32;
/// `cuGraphLaunch(CUgraphExec, CUstream)`.
#[cfg(cuda_12_8)]
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

#[cfg(cuda_12_8)]
static RECORD: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
#[cfg(cuda_12_8)]
static WAIT: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
#[cfg(cuda_12_8)]
static GRAPH_LAUNCH: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);
static NODE_TYPE: AtomicPtr<c_void> = AtomicPtr::new(UNRESOLVED);

/// Asks the runtime for the driver function `name` (its CUDA 12.0 form; against headers older than
/// 12.5, the form of the runtime's version, the same for the functions asked for here), with the
/// calling thread's capture mode relaxed for the query: the query's code, and the address where the
/// driver has it. A failed query's error is not left as the thread's last runtime error.
#[cold]
#[inline(never)]
pub(crate) fn query(name: &core::ffi::CStr) -> (sys::cudaError_t, Option<*mut c_void>) {
    let mut mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeRelaxed;
    // SAFETY: `mode` is writable; restored below.
    let relaxed = unsafe { sys::cudaThreadExchangeStreamCaptureMode(&mut mode) } == sys::cudaError::cudaSuccess;
    let mut p: *mut c_void = core::ptr::null_mut();
    let mut status = sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess;
    // SAFETY: a NUL-terminated name; `p` and `status` writable.
    let code = unsafe {
        sys::get_driver_entry_point_by_version(
            name.as_ptr(),
            &mut p,
            12000,
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
fn resolve(slot: &AtomicPtr<c_void>, name: &core::ffi::CStr) -> *mut c_void {
    let p = query(name).1.unwrap_or_else(absent);
    slot.store(p, Ordering::Release);
    p
}

#[inline(always)]
fn entry(slot: &AtomicPtr<c_void>, name: &core::ffi::CStr) -> Option<*mut c_void> {
    let mut p = slot.load(Ordering::Acquire);
    if p == UNRESOLVED {
        p = resolve(slot, name);
    }
    (p != absent()).then_some(p)
}

/// `cuEventRecord`, where the driver has it.
#[cfg(cuda_12_8)]
#[inline(always)]
pub(crate) fn event_record() -> Option<RecordFn> {
    // SAFETY: the address of `cuEventRecord` (CUDA 12.0 form), whose signature `RecordFn` is.
    entry(&RECORD, c"cuEventRecord").map(|p| unsafe { core::mem::transmute::<*mut c_void, RecordFn>(p) })
}

/// `cuStreamWaitEvent`, where the driver has it.
#[cfg(cuda_12_8)]
#[inline(always)]
pub(crate) fn stream_wait_event() -> Option<WaitFn> {
    // SAFETY: the address of `cuStreamWaitEvent` (CUDA 12.0 form), whose signature `WaitFn` is.
    entry(&WAIT, c"cuStreamWaitEvent").map(|p| unsafe { core::mem::transmute::<*mut c_void, WaitFn>(p) })
}

/// `cuGraphLaunch`, where the driver has it.
#[cfg(cuda_12_8)]
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
