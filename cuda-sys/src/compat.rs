//! One signature over CUDA 12 and 13 for the calls whose prototypes differ between them.
//!
//! CUDA 13.0 gave the plain names the prototypes of 12.x's `_v2`/`_v3` names and removed the
//! suffixed ones. These wrappers take the 13.x form everywhere and call:
//! - on 13.x, the plain name;
//! - on 12.x, the suffixed name, whose prototype is the same.
//!
//! The oldest toolkit supported is CUDA 12.3, the first with graph edge data (the build refuses
//! older ones, and the test command builds and tests against 12.3, 12.9, 13.0 and the newest 13.x):
//! no branch here is untested.
//! Each is `#[inline]` and a single call: nothing is added to the raw call.
//!
//! # Safety
//! Every function here is the raw CUDA call: the caller owes what the CUDA documentation of that
//! call asks (valid pointers of the stated lengths, live handles).

#[allow(unused_imports)]
use crate::bindings::*;
use core::ffi::{c_char, c_uint, c_ulonglong, c_void};

/// [`cudaMemPrefetchAsync`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html)
/// in its 13.x form: prefetch managed memory to `location` on `stream`.
///
/// # Safety
/// As the CUDA call: `dev_ptr..dev_ptr+count` is managed memory (or memory the call accepts).
#[inline]
pub unsafe fn mem_prefetch_async(
    dev_ptr: *const c_void,
    count: usize,
    location: cudaMemLocation,
    flags: c_uint,
    stream: cudaStream_t,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaMemPrefetchAsync(dev_ptr, count, location, flags, stream) };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaMemPrefetchAsync_v2(dev_ptr, count, location, flags, stream) };
}

/// [`cudaMemAdvise`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html)
/// in its 13.x form: advise about the use of managed memory at `location`.
///
/// # Safety
/// As the CUDA call.
#[inline]
pub unsafe fn mem_advise(
    dev_ptr: *const c_void,
    count: usize,
    advice: cudaMemoryAdvise,
    location: cudaMemLocation,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaMemAdvise(dev_ptr, count, advice, location) };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaMemAdvise_v2(dev_ptr, count, advice, location) };
}

/// [`cudaStreamGetCaptureInfo`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html)
/// in its 13.x form (with edge data).
///
/// # Safety
/// As the CUDA call: every non-null out-pointer is writable.
#[inline]
pub unsafe fn stream_get_capture_info(
    stream: cudaStream_t,
    capture_status_out: *mut cudaStreamCaptureStatus,
    id_out: *mut c_ulonglong,
    graph_out: *mut cudaGraph_t,
    dependencies_out: *mut *const cudaGraphNode_t,
    edge_data_out: *mut *const cudaGraphEdgeData,
    num_dependencies_out: *mut usize,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe {
        cudaStreamGetCaptureInfo(
            stream,
            capture_status_out,
            id_out,
            graph_out,
            dependencies_out,
            edge_data_out,
            num_dependencies_out,
        )
    };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract; the 12.x `_v3` prototype is the 13.x one.
    return unsafe {
        cudaStreamGetCaptureInfo_v3(
            stream,
            capture_status_out,
            id_out,
            graph_out,
            dependencies_out,
            edge_data_out,
            num_dependencies_out,
        )
    };
}

/// [`cudaStreamUpdateCaptureDependencies`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html)
/// in its 13.x form.
///
/// # Safety
/// As the CUDA call: `dependencies` (and `dependency_data`, when not null) hold `n` elements.
#[inline]
pub unsafe fn stream_update_capture_dependencies(
    stream: cudaStream_t,
    dependencies: *mut cudaGraphNode_t,
    dependency_data: *const cudaGraphEdgeData,
    n: usize,
    flags: c_uint,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaStreamUpdateCaptureDependencies(stream, dependencies, dependency_data, n, flags) };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaStreamUpdateCaptureDependencies_v2(stream, dependencies, dependency_data, n, flags) };
}

/// [`cudaGraphAddNode`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
/// in its 13.x form (with edge data).
///
/// # Safety
/// As the CUDA call.
#[inline]
pub unsafe fn graph_add_node(
    node_out: *mut cudaGraphNode_t,
    graph: cudaGraph_t,
    dependencies: *const cudaGraphNode_t,
    dependency_data: *const cudaGraphEdgeData,
    n: usize,
    params: *mut cudaGraphNodeParams,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaGraphAddNode(node_out, graph, dependencies, dependency_data, n, params) };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaGraphAddNode_v2(node_out, graph, dependencies, dependency_data, n, params) };
}

/// Declares a wrapper for a graph-edge query in its 13.x form (`edge_data` before the count).
macro_rules! edge_query {
    ($(#[$doc:meta])* $name:ident, $plain:ident, $v2:ident, ($($arg:ident: $ty:ty),*), $edge:ident, $count:ident) => {
        $(#[$doc])*
        /// # Safety
        /// As the CUDA call: the arrays hold `*count` elements on entry (or are null to query the count).
        #[inline]
        pub unsafe fn $name($($arg: $ty,)* $edge: *mut cudaGraphEdgeData, $count: *mut usize) -> cudaError_t {
            #[cfg(cuda_13)]
            // SAFETY: forwarded contract.
            return unsafe { $plain($($arg,)* $edge, $count) };
            #[cfg(not(cuda_13))]
            // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
            return unsafe { $v2($($arg,)* $edge, $count) };
        }
    };
}

edge_query!(
    /// [`cudaGraphGetEdges`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
    /// in its 13.x form.
    graph_get_edges, cudaGraphGetEdges, cudaGraphGetEdges_v2,
    (graph: cudaGraph_t, from: *mut cudaGraphNode_t, to: *mut cudaGraphNode_t), edge_data, num_edges
);
edge_query!(
    /// [`cudaGraphNodeGetDependencies`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
    /// in its 13.x form.
    graph_node_get_dependencies, cudaGraphNodeGetDependencies, cudaGraphNodeGetDependencies_v2,
    (node: cudaGraphNode_t, dependencies: *mut cudaGraphNode_t), edge_data, num_dependencies
);
edge_query!(
    /// [`cudaGraphNodeGetDependentNodes`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
    /// in its 13.x form.
    graph_node_get_dependent_nodes, cudaGraphNodeGetDependentNodes, cudaGraphNodeGetDependentNodes_v2,
    (node: cudaGraphNode_t, dependents: *mut cudaGraphNode_t), edge_data, num_dependents
);

/// Declares a wrapper for adding or removing graph edges in the 13.x form.
macro_rules! edge_change {
    ($(#[$doc:meta])* $name:ident, $plain:ident, $v2:ident) => {
        $(#[$doc])*
        /// # Safety
        /// As the CUDA call: `from`, `to` (and `edge_data`, when not null) hold `n` elements.
        #[inline]
        pub unsafe fn $name(
            graph: cudaGraph_t,
            from: *const cudaGraphNode_t,
            to: *const cudaGraphNode_t,
            edge_data: *const cudaGraphEdgeData,
            n: usize,
        ) -> cudaError_t {
            #[cfg(cuda_13)]
            // SAFETY: forwarded contract.
            return unsafe { $plain(graph, from, to, edge_data, n) };
            #[cfg(not(cuda_13))]
            // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
            return unsafe { $v2(graph, from, to, edge_data, n) };
        }
    };
}

edge_change!(
    /// [`cudaGraphAddDependencies`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
    /// in its 13.x form.
    graph_add_dependencies, cudaGraphAddDependencies, cudaGraphAddDependencies_v2
);
edge_change!(
    /// [`cudaGraphRemoveDependencies`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
    /// in its 13.x form.
    graph_remove_dependencies, cudaGraphRemoveDependencies, cudaGraphRemoveDependencies_v2
);

/// [`cudaGetDeviceProperties`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html):
/// a macro for `cudaGetDeviceProperties_v2` in 12.x, a function in 13.x; `cudaDeviceProp` is laid out
/// differently in each (bindgen generates the one that matches). Prefer `cudaDeviceGetAttribute`,
/// which has one form in both, for anything it can answer.
///
/// # Safety
/// `prop` is writable.
#[inline]
pub unsafe fn get_device_properties(prop: *mut cudaDeviceProp, device: core::ffi::c_int) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaGetDeviceProperties(prop, device) };
    #[cfg(not(cuda_13))]
    // SAFETY: forwarded contract.
    return unsafe { cudaGetDeviceProperties_v2(prop, device) };
}

/// [`cudaStreamGetDevice`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html)
/// (CUDA 12.8 and later; `cudaErrorNotSupported` below).
///
/// # Safety
/// `device` is writable; `stream` is a live stream.
#[inline]
pub unsafe fn stream_get_device(stream: cudaStream_t, device: *mut core::ffi::c_int) -> cudaError_t {
    #[cfg(cuda_12_8)]
    // SAFETY: forwarded contract.
    return unsafe { cudaStreamGetDevice(stream, device) };
    #[cfg(not(cuda_12_8))]
    {
        let _ = (stream, device);
        cudaError::cudaErrorNotSupported
    }
}

/// [`cudaStreamBeginCaptureToGraph`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html):
/// capture into an existing graph.
///
/// # Safety
/// As the CUDA call: `dependencies` (and `dependency_data`, when not null) hold `n` elements.
#[inline]
pub unsafe fn stream_begin_capture_to_graph(
    stream: cudaStream_t,
    graph: cudaGraph_t,
    dependencies: *const cudaGraphNode_t,
    dependency_data: *const cudaGraphEdgeData,
    n: usize,
    mode: cudaStreamCaptureMode,
) -> cudaError_t {
    // SAFETY: forwarded contract.
    unsafe { cudaStreamBeginCaptureToGraph(stream, graph, dependencies, dependency_data, n, mode) }
}

/// [`cudaGetDriverEntryPointByVersion`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DRIVER__ENTRY__POINT.html):
/// the address of the driver function `symbol` in its form of CUDA `version` (e.g. 12000).
/// Against headers older than 12.5, which lack it, `cudaGetDriverEntryPoint`, which gives the form
/// of the runtime's own version: the same, for a function whose prototype has not changed since
/// `version`.
///
/// # Safety
/// As the CUDA call: `symbol` is NUL-terminated; `func` and `status` are writable.
#[inline]
pub unsafe fn get_driver_entry_point_by_version(
    symbol: *const c_char,
    func: *mut *mut c_void,
    version: c_uint,
    flags: c_ulonglong,
    status: *mut cudaDriverEntryPointQueryResult,
) -> cudaError_t {
    #[cfg(cuda_12_5)]
    // SAFETY: forwarded contract.
    return unsafe { cudaGetDriverEntryPointByVersion(symbol, func, version, flags, status) };
    #[cfg(not(cuda_12_5))]
    {
        let _ = version;
        // SAFETY: forwarded contract.
        unsafe { cudaGetDriverEntryPoint(symbol, func, flags, status) }
    }
}

// ---- Batched copies (added for `ordo_cuda_core::memory::batch`) --------------------------------

/// [`cudaMemcpyBatchAsync`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html)
/// in its 13.x form (no `failIdx`): `count` copies on `stream`, `num_attrs` attribute sets, set
/// `k` applying from copy `attrs_idxs[k]` on. On 12.8 and 12.9 it calls the form with `failIdx`
/// (the index of the copy that failed, which the 13.x form dropped) and discards it. Headers
/// before 12.8 have neither the call nor `cudaMemcpyAttributes`: the wrapper is absent there.
///
/// # Safety
/// As the CUDA call: `dsts`, `srcs` and `sizes` hold `count` elements, `attrs` and `attrs_idxs`
/// hold `num_attrs`; every copy's memory is valid for it until it completes.
#[cfg(cuda_12_8)]
#[inline]
#[allow(clippy::too_many_arguments)]
pub unsafe fn memcpy_batch_async(
    dsts: *const *mut c_void,
    srcs: *const *const c_void,
    sizes: *const usize,
    count: usize,
    attrs: *mut cudaMemcpyAttributes,
    attrs_idxs: *mut usize,
    num_attrs: usize,
    stream: cudaStream_t,
) -> cudaError_t {
    #[cfg(cuda_13)]
    // SAFETY: forwarded contract.
    return unsafe { cudaMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrs_idxs, num_attrs, stream) };
    #[cfg(not(cuda_13))]
    {
        let mut fail_idx = 0usize;
        // SAFETY: forwarded contract; the 12.x prototype takes the arrays as `void**` and
        // `size_t*` but does not write them; `fail_idx` is writable.
        return unsafe {
            cudaMemcpyBatchAsync(
                dsts.cast_mut(),
                srcs.cast_mut().cast(),
                sizes.cast_mut(),
                count,
                attrs,
                attrs_idxs,
                num_attrs,
                &mut fail_idx,
                stream,
            )
        };
    }
}
