//! CUDA's calls whose prototype or presence differs between the releases bound against, under
//! CUDA's own names, each with one prototype on every release: the 13.x one.
//!
//! CUDA 13.0 gave the plain names the prototypes of 12.x's `_v2`/`_v3` names and removed the
//! suffixed ones; the prototypes are identical, only the symbol differs. One macro,
//! `renamed_in_13!`, writes each such call once: on 13.x it calls the plain name, on 12.x the suffixed one. A call added in
//! a later release ([`cudaStreamGetDevice`], 12.8) answers `cudaErrorNotSupported` below it. Two
//! calls differ in more than the symbol and are written by hand, each saying how
//! ([`cudaMemcpyBatchAsync`], [`cudaGetDriverEntryPointByVersion`]).
//!
//! Because each wrapper has CUDA's name, `ordo-cuda-core`'s `cuda_call!` names the failing call
//! from it, as for any other binding: `cuda_call!(unsafe { sys::compat::cudaStreamGetCaptureInfo(..) })`.
//! The names are not re-exported at the crate root, where they would collide with the bindings'
//! own (the plain names with their 12.x prototypes): a call through `compat::` is the 13.x form.
//!
//! The oldest toolkit supported is CUDA 12.3, the first with graph edge data (the build refuses
//! older ones, and the test command builds and tests against 12.3, 12.9, 13.0 and the newest 13.x):
//! no branch here is untested. Each wrapper is `#[inline]` and a single call: nothing is added to
//! the raw call.
//!
//! # Safety
//! Every function here is the raw CUDA call: the caller owes what the CUDA documentation of that
//! call asks (valid pointers of the stated lengths, live handles).
#![allow(non_snake_case)]

#[allow(unused_imports)]
use crate::bindings::*;
use core::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};

/// Declares CUDA calls that 13.0 renamed: `GROUP fn cudaX(args) = cudaX_v2;` makes `cudaX` with
/// the prototype given (the 13.x one), calling `cudaX` on 13.x and `cudaX_v2` on 12.x. `GROUP` is
/// the call's page of the CUDA runtime documentation (`STREAM` for `group__CUDART__STREAM`).
/// `GROUP fn cudaX(args) from cfg;` makes a call present from the release `cfg` names
/// (`cuda_12_8`), answering `cudaErrorNotSupported` below it.
macro_rules! renamed_in_13 {
    () => {};
    (
        $(#[$doc:meta])*
        $group:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?) = $v12:ident;
        $($rest:tt)*
    ) => {
        #[doc = concat!(
            "[`", stringify!($name), "`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__",
            stringify!($group), ".html) in its 13.x form; `", stringify!($v12), "` on 12.x."
        )]
        ///
        $(#[$doc])*
        #[inline]
        pub unsafe fn $name($($arg: $ty),*) -> cudaError_t {
            #[cfg(cuda_13)]
            // SAFETY: the caller's contract, forwarded to the same call.
            return unsafe { crate::bindings::$name($($arg),*) };
            #[cfg(not(cuda_13))]
            // SAFETY: the caller's contract, forwarded; the 12.x name has the 13.x prototype.
            return unsafe { crate::bindings::$v12($($arg),*) };
        }
        renamed_in_13!($($rest)*);
    };
    (
        $(#[$doc:meta])*
        $group:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?) from $since:ident;
        $($rest:tt)*
    ) => {
        #[doc = concat!(
            "[`", stringify!($name), "`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__",
            stringify!($group), ".html); `cudaErrorNotSupported` against headers older than `",
            stringify!($since), "`, which lack it."
        )]
        ///
        $(#[$doc])*
        #[inline]
        pub unsafe fn $name($($arg: $ty),*) -> cudaError_t {
            #[cfg($since)]
            // SAFETY: the caller's contract, forwarded to the same call.
            return unsafe { crate::bindings::$name($($arg),*) };
            #[cfg(not($since))]
            {
                let _ = ($($arg,)*);
                cudaError::cudaErrorNotSupported
            }
        }
        renamed_in_13!($($rest)*);
    };
}

renamed_in_13! {
    /// Prefetches managed memory to `location` on `stream`.
    ///
    /// # Safety
    /// As the CUDA call: `devPtr..devPtr+count` is managed memory (or memory the call accepts).
    MEMORY fn cudaMemPrefetchAsync(
        devPtr: *const c_void,
        count: usize,
        location: cudaMemLocation,
        flags: c_uint,
        stream: cudaStream_t,
    ) = cudaMemPrefetchAsync_v2;

    /// Advises about the use of managed memory at `location`.
    ///
    /// # Safety
    /// As the CUDA call: `devPtr..devPtr+count` is managed memory.
    MEMORY fn cudaMemAdvise(
        devPtr: *const c_void,
        count: usize,
        advice: cudaMemoryAdvise,
        location: cudaMemLocation,
    ) = cudaMemAdvise_v2;

    /// The capture state of `stream`, with the edge data of its dependencies.
    ///
    /// # Safety
    /// As the CUDA call: `stream` is live; every non-null out-pointer is writable.
    STREAM fn cudaStreamGetCaptureInfo(
        stream: cudaStream_t,
        captureStatus_out: *mut cudaStreamCaptureStatus,
        id_out: *mut c_ulonglong,
        graph_out: *mut cudaGraph_t,
        dependencies_out: *mut *const cudaGraphNode_t,
        edgeData_out: *mut *const cudaGraphEdgeData,
        numDependencies_out: *mut usize,
    ) = cudaStreamGetCaptureInfo_v3;

    /// Replaces (or adds to) the dependencies of the capture of `stream`.
    ///
    /// # Safety
    /// As the CUDA call: `dependencies` (and `dependencyData`, when not null) hold `numDependencies`
    /// elements, nodes of the capture's graph.
    STREAM fn cudaStreamUpdateCaptureDependencies(
        stream: cudaStream_t,
        dependencies: *mut cudaGraphNode_t,
        dependencyData: *const cudaGraphEdgeData,
        numDependencies: usize,
        flags: c_uint,
    ) = cudaStreamUpdateCaptureDependencies_v2;

    /// Adds a node of any kind to `graph`, after `numDependencies` dependencies with their edge data.
    ///
    /// # Safety
    /// As the CUDA call: `graph` is live; `dependencies` (and `dependencyData`, when not null) hold
    /// `numDependencies` elements, nodes of `graph`; `nodeParams` is valid for its kind.
    GRAPH fn cudaGraphAddNode(
        pGraphNode: *mut cudaGraphNode_t,
        graph: cudaGraph_t,
        dependencies: *const cudaGraphNode_t,
        dependencyData: *const cudaGraphEdgeData,
        numDependencies: usize,
        nodeParams: *mut cudaGraphNodeParams,
    ) = cudaGraphAddNode_v2;

    /// The edges of `graph`, with their data.
    ///
    /// # Safety
    /// As the CUDA call: `graph` is live; the arrays hold `*numEdges` elements on entry (or are all
    /// null, to ask for the count).
    GRAPH fn cudaGraphGetEdges(
        graph: cudaGraph_t,
        from: *mut cudaGraphNode_t,
        to: *mut cudaGraphNode_t,
        edgeData: *mut cudaGraphEdgeData,
        numEdges: *mut usize,
    ) = cudaGraphGetEdges_v2;

    /// The nodes `node` depends on, with the edges' data.
    ///
    /// # Safety
    /// As the CUDA call: `node` is live; the arrays hold `*pNumDependencies` elements on entry (or
    /// are null, to ask for the count).
    GRAPH fn cudaGraphNodeGetDependencies(
        node: cudaGraphNode_t,
        pDependencies: *mut cudaGraphNode_t,
        edgeData: *mut cudaGraphEdgeData,
        pNumDependencies: *mut usize,
    ) = cudaGraphNodeGetDependencies_v2;

    /// The nodes that depend on `node`, with the edges' data.
    ///
    /// # Safety
    /// As the CUDA call: `node` is live; the arrays hold `*pNumDependentNodes` elements on entry
    /// (or are null, to ask for the count).
    GRAPH fn cudaGraphNodeGetDependentNodes(
        node: cudaGraphNode_t,
        pDependentNodes: *mut cudaGraphNode_t,
        edgeData: *mut cudaGraphEdgeData,
        pNumDependentNodes: *mut usize,
    ) = cudaGraphNodeGetDependentNodes_v2;

    /// Adds `numDependencies` edges `from[i] -> to[i]` to `graph`.
    ///
    /// # Safety
    /// As the CUDA call: `graph` is live; `from`, `to` (and `edgeData`, when not null) hold
    /// `numDependencies` elements, nodes of `graph`.
    GRAPH fn cudaGraphAddDependencies(
        graph: cudaGraph_t,
        from: *const cudaGraphNode_t,
        to: *const cudaGraphNode_t,
        edgeData: *const cudaGraphEdgeData,
        numDependencies: usize,
    ) = cudaGraphAddDependencies_v2;

    /// Removes `numDependencies` edges `from[i] -> to[i]` from `graph`.
    ///
    /// # Safety
    /// As the CUDA call: `graph` is live; `from`, `to` (and `edgeData`, when not null) hold
    /// `numDependencies` elements, nodes of `graph`.
    GRAPH fn cudaGraphRemoveDependencies(
        graph: cudaGraph_t,
        from: *const cudaGraphNode_t,
        to: *const cudaGraphNode_t,
        edgeData: *const cudaGraphEdgeData,
        numDependencies: usize,
    ) = cudaGraphRemoveDependencies_v2;

    /// The properties of `device`. `cudaDeviceProp` is laid out differently in 12.x and 13.x
    /// (bindgen generates the layout of the headers found). Prefer `cudaDeviceGetAttribute`, which
    /// has one form in both, for anything it can answer.
    ///
    /// # Safety
    /// `prop` is writable.
    DEVICE fn cudaGetDeviceProperties(prop: *mut cudaDeviceProp, device: c_int) = cudaGetDeviceProperties_v2;

    /// The device `stream` belongs to.
    ///
    /// # Safety
    /// `device` is writable; `stream` is a live stream.
    STREAM fn cudaStreamGetDevice(stream: cudaStream_t, device: *mut c_int) from cuda_12_8;
}

/// [`cudaGetDriverEntryPointByVersion`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html):
/// the address of the driver function `symbol` in its form of CUDA `cudaVersion` (e.g. 12000).
/// Against headers older than 12.5, which lack it, it calls `cudaGetDriverEntryPoint` (no version
/// argument), which gives the form of the runtime's own version: the same, for a function whose
/// prototype has not changed since `cudaVersion`.
///
/// # Safety
/// As the CUDA call: `symbol` is NUL-terminated; `funcPtr` and `driverStatus` are writable.
#[inline]
pub unsafe fn cudaGetDriverEntryPointByVersion(
    symbol: *const c_char,
    funcPtr: *mut *mut c_void,
    cudaVersion: c_uint,
    flags: c_ulonglong,
    driverStatus: *mut cudaDriverEntryPointQueryResult,
) -> cudaError_t {
    #[cfg(cuda_12_5)]
    // SAFETY: the caller's contract, forwarded to the same call.
    return unsafe {
        crate::bindings::cudaGetDriverEntryPointByVersion(symbol, funcPtr, cudaVersion, flags, driverStatus)
    };
    #[cfg(not(cuda_12_5))]
    {
        let _ = cudaVersion;
        // SAFETY: the caller's contract, forwarded; the same arguments less the version.
        unsafe { cudaGetDriverEntryPoint(symbol, funcPtr, flags, driverStatus) }
    }
}

/// [`cudaMemcpyBatchAsync`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html)
/// in its 13.x form (no `failIdx`): `count` copies on `stream`, `numAttrs` attribute sets, set
/// `k` applying from copy `attrsIdxs[k]` on. On 12.8 and 12.9 it calls the form with `failIdx`
/// (the index of the copy that failed, which the 13.x form dropped) and discards it. Headers
/// before 12.8 have neither the call nor `cudaMemcpyAttributes`: the wrapper is absent there.
///
/// # Safety
/// As the CUDA call: `dsts`, `srcs` and `sizes` hold `count` elements, `attrs` and `attrsIdxs`
/// hold `numAttrs`; every copy's memory is valid for it until it completes.
#[cfg(cuda_12_8)]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn cudaMemcpyBatchAsync(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut cudaMemcpyAttributes,
    attrsIdxs: *mut usize,
    numAttrs: usize,
    stream: cudaStream_t,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: the caller's contract, forwarded to the same call.
    return unsafe {
        crate::bindings::cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, stream)
    };
    #[cfg(not(cuda_13))]
    {
        let mut fail_idx = 0usize;
        // SAFETY: the caller's contract, forwarded; the 12.x prototype takes the arrays as
        // `void**` and `size_t*` but does not write them; `fail_idx` is writable.
        return unsafe {
            crate::bindings::cudaMemcpyBatchAsync(
                dsts.cast_mut(),
                srcs.cast_mut().cast(),
                sizes.cast_mut(),
                count,
                attrs,
                attrsIdxs,
                numAttrs,
                &mut fail_idx,
                stream,
            )
        };
    }
}
