//! One signature over CUDA 12 and 13 for the calls whose prototypes differ between them.
//!
//! CUDA 13.0 gave the plain names the prototypes of 12.x's `_v2`/`_v3` names and removed the
//! suffixed ones. These wrappers take the 13.x form everywhere and call:
//! - on 13.x, the plain name;
//! - from 12.2 (memory location) or 12.3 (graph edge data) up to 12.9, the suffixed name, whose
//!   prototype is the same;
//! - below that, the old form, mapping what it can say and returning `cudaErrorNotSupported` for
//!   what it cannot (a host NUMA location, prefetch flags, non-default edge data).
//!
//! Each is `#[inline]` and a single call on 12.2+ and 13.x: nothing is added to the raw call.
//!
//! # Safety
//! Every function here is the raw CUDA call: the caller owes what the CUDA documentation of that
//! call asks (valid pointers of the stated lengths, live handles).

#[allow(unused_imports)]
use crate::bindings::*;
use core::ffi::{c_uint, c_ulonglong, c_void};

/// Maps a location to the int device form of the CUDA < 12.2 API.
#[cfg(not(cuda_12_2))]
fn location_to_int(location: cudaMemLocation) -> Result<core::ffi::c_int, cudaError_t> {
    if location.type_ == cudaMemLocationType::cudaMemLocationTypeDevice {
        Ok(location.id)
    } else if location.type_ == cudaMemLocationType::cudaMemLocationTypeHost {
        Ok(crate::consts::cudaCpuDeviceId)
    } else {
        Err(cudaError::cudaErrorNotSupported)
    }
}

/// Whether every element of an optional edge-data array is the default (all zero).
#[cfg(not(cuda_12_3))]
unsafe fn edges_are_default(edge_data: *const cudaGraphEdgeData, n: usize) -> bool {
    if edge_data.is_null() {
        return true;
    }
    // SAFETY: the caller passes `n` elements at `edge_data`, as the CUDA call requires.
    let edges = unsafe { core::slice::from_raw_parts(edge_data, n) };
    edges.iter().all(|e| e.type_ == 0 && e.from_port == 0 && e.to_port == 0)
}

/// Writes `n` default edges where the caller asked for edge data that the old API cannot report.
#[cfg(not(cuda_12_3))]
unsafe fn fill_default_edges(edge_data: *mut cudaGraphEdgeData, n: *const usize) {
    if !edge_data.is_null() && !n.is_null() {
        // SAFETY: the caller passes room for `*n` elements, as the CUDA call requires.
        unsafe { core::ptr::write_bytes(edge_data, 0, *n) };
    }
}

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
    #[cfg(all(cuda_12_2, not(cuda_13)))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaMemPrefetchAsync_v2(dev_ptr, count, location, flags, stream) };
    #[cfg(not(cuda_12_2))]
    {
        if flags != 0 {
            return cudaError::cudaErrorNotSupported;
        }
        match location_to_int(location) {
            // SAFETY: forwarded contract.
            Ok(device) => unsafe { cudaMemPrefetchAsync(dev_ptr, count, device, stream) },
            Err(e) => e,
        }
    }
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
    #[cfg(all(cuda_12_2, not(cuda_13)))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaMemAdvise_v2(dev_ptr, count, advice, location) };
    #[cfg(not(cuda_12_2))]
    match location_to_int(location) {
        // SAFETY: forwarded contract.
        Ok(device) => unsafe { cudaMemAdvise(dev_ptr, count, advice, device) },
        Err(e) => e,
    }
}

/// [`cudaStreamGetCaptureInfo`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html)
/// in its 13.x form (with edge data). Below 12.3 edges carry no data: `*edge_data_out` is set to
/// null, which the 13.x API also uses for "all edges default".
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
    #[cfg(all(cuda_12_3, not(cuda_13)))]
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
    #[cfg(not(cuda_12_3))]
    {
        if !edge_data_out.is_null() {
            // SAFETY: the caller passes a writable pointer.
            unsafe { *edge_data_out = core::ptr::null() };
        }
        // SAFETY: forwarded contract.
        unsafe {
            cudaStreamGetCaptureInfo_v2(
                stream,
                capture_status_out,
                id_out,
                graph_out,
                dependencies_out,
                num_dependencies_out,
            )
        }
    }
}

/// [`cudaStreamUpdateCaptureDependencies`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html)
/// in its 13.x form. Below 12.3, non-default edge data gives `cudaErrorNotSupported`.
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
    #[cfg(all(cuda_12_3, not(cuda_13)))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaStreamUpdateCaptureDependencies_v2(stream, dependencies, dependency_data, n, flags) };
    #[cfg(not(cuda_12_3))]
    {
        // SAFETY: forwarded contract.
        if !unsafe { edges_are_default(dependency_data, n) } {
            return cudaError::cudaErrorNotSupported;
        }
        // SAFETY: forwarded contract.
        unsafe { cudaStreamUpdateCaptureDependencies(stream, dependencies, n, flags) }
    }
}

/// [`cudaGraphAddNode`](https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__GRAPH.html)
/// in its 13.x form (with edge data). Needs CUDA 12.2 (`cudaErrorNotSupported` below); on 12.2,
/// non-default edge data gives `cudaErrorNotSupported`.
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
    #[cfg(all(cuda_12_3, not(cuda_13)))]
    // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
    return unsafe { cudaGraphAddNode_v2(node_out, graph, dependencies, dependency_data, n, params) };
    #[cfg(all(cuda_12_2, not(cuda_12_3)))]
    {
        // SAFETY: forwarded contract.
        if !unsafe { edges_are_default(dependency_data, n) } {
            return cudaError::cudaErrorNotSupported;
        }
        // SAFETY: forwarded contract.
        unsafe { cudaGraphAddNode(node_out, graph, dependencies, n, params) }
    }
    #[cfg(not(cuda_12_2))]
    {
        let _ = (node_out, graph, dependencies, dependency_data, n, params);
        cudaError::cudaErrorNotSupported
    }
}

/// Declares a wrapper for a graph-edge query in its 13.x form (`edge_data` before the count). Below
/// 12.3, edge data requested by the caller is filled with default edges (there were no others).
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
            #[cfg(all(cuda_12_3, not(cuda_13)))]
            // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
            return unsafe { $v2($($arg,)* $edge, $count) };
            #[cfg(not(cuda_12_3))]
            {
                // SAFETY: forwarded contract.
                let status = unsafe { $plain($($arg,)* $count) };
                if status == cudaError::cudaSuccess {
                    // SAFETY: forwarded contract.
                    unsafe { fill_default_edges($edge, $count) };
                }
                status
            }
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

/// Declares a wrapper for adding or removing graph edges in the 13.x form. Below 12.3, non-default
/// edge data gives `cudaErrorNotSupported`.
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
            #[cfg(all(cuda_12_3, not(cuda_13)))]
            // SAFETY: forwarded contract; the 12.x `_v2` prototype is the 13.x one.
            return unsafe { $v2(graph, from, to, edge_data, n) };
            #[cfg(not(cuda_12_3))]
            {
                // SAFETY: forwarded contract.
                if !unsafe { edges_are_default(edge_data, n) } {
                    return cudaError::cudaErrorNotSupported;
                }
                // SAFETY: forwarded contract.
                unsafe { $plain(graph, from, to, n) }
            }
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
/// capture into an existing graph (CUDA 12.3 and later; `cudaErrorNotSupported` below).
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
    #[cfg(cuda_12_3)]
    // SAFETY: forwarded contract.
    return unsafe { cudaStreamBeginCaptureToGraph(stream, graph, dependencies, dependency_data, n, mode) };
    #[cfg(not(cuda_12_3))]
    {
        let _ = (stream, graph, dependencies, dependency_data, n, mode);
        cudaError::cudaErrorNotSupported
    }
}
