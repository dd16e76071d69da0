//! The generated bindings against the headers they came from: version, layouts the launch path
//! relies on, constants bindgen cannot see, and flag values.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_sys::*;

/// The header the build bound against, read at compile time (no build-machine path at run time).
const HEADER: &str = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/cuda_runtime_api.h"));

fn header_version() -> u32 {
    HEADER
        .lines()
        .filter_map(|l| l.trim().strip_prefix("#define CUDART_VERSION"))
        .map(|rest| rest.trim().parse::<u32>().unwrap())
        .next()
        .unwrap()
}

#[test]
fn version_constant_equals_the_header() {
    assert_eq!(CUDA_VERSION, header_version());
    assert_eq!(CUDA_VERSION, env!("ORDO_CUDA_VERSION").parse::<u32>().unwrap());
    assert_eq!(CUDA_VERSION_MAJOR_MINOR, (CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
    assert_eq!(IS_CUDA_13, CUDA_VERSION >= 13000);
    const { assert!(CUDA_VERSION >= 12000, "ordo supports CUDA 12.x and 13.x") };
}

#[test]
fn launch_structures_have_the_c_layout() {
    use core::mem::{align_of, offset_of, size_of};
    assert_eq!(size_of::<cudaLaunchAttributeValue>(), 64);
    assert_eq!(size_of::<cudaLaunchAttribute>(), 72);
    assert_eq!(offset_of!(cudaLaunchAttribute, val), 8);
    assert_eq!(size_of::<cudaLaunchConfig_t>(), 56);
    assert_eq!(align_of::<cudaLaunchConfig_t>(), 8);
    assert_eq!(offset_of!(cudaLaunchConfig_t, attrs), 40);
    assert_eq!(offset_of!(cudaLaunchConfig_t, numAttrs), 48);
    assert_eq!(size_of::<cudaMemLocation>(), 8);
    assert_eq!(size_of::<cudaGraphEdgeData>(), 8);
    assert_eq!(size_of::<cudaStream_t>(), size_of::<usize>());
    // The union is not opaque: PDL's field is reachable by name.
    let mut v = cudaLaunchAttributeValue::default();
    v.programmaticStreamSerializationAllowed = 1;
    assert_eq!(unsafe { v.pad[0] }, 1);
}

#[test]
fn device_prop_layout_follows_the_version() {
    let size = core::mem::size_of::<cudaDeviceProp>();
    if IS_CUDA_13 {
        assert_eq!(size, 1008);
    } else if CUDA_VERSION == 12090 {
        assert_eq!(size, 1032);
    }
}

#[test]
fn enum_values_match_the_c_constants() {
    assert_eq!(cudaLaunchAttributeID::cudaLaunchAttributeProgrammaticStreamSerialization.0, 6);
    assert_eq!(cudaLaunchAttributeID::cudaLaunchAttributeProgrammaticEvent.0, 7);
    assert_eq!(cudaLaunchAttributeID::cudaLaunchAttributeLaunchCompletionEvent.0, 12);
    assert_eq!(cudaError::cudaErrorInsufficientDriver.0, 35);
    assert_eq!(cudaError::cudaErrorNoDevice.0, 100);
    assert_eq!(cudaError::cudaErrorIllegalAddress.0, 700);
    assert_eq!(cudaError::cudaErrorNotSupported.0, 801);
    assert_eq!(cudaStreamNonBlocking, 1);
    assert_eq!(cudaEventDisableTiming, 2);
    assert_eq!(cudaHostAllocPortable, 1);
    assert_eq!(cudaHostAllocMapped, 2);
    assert_eq!(cudaHostAllocWriteCombined, 4);
    assert_eq!(cudaMemLocationType::cudaMemLocationTypeDevice.0, 1);
}

#[test]
fn constants_bindgen_cannot_see() {
    assert_eq!(cudaStreamLegacy() as usize, 1);
    assert_eq!(cudaStreamPerThread() as usize, 2);
    assert_eq!(cudaCpuDeviceId, -1);
    assert_eq!(cudaInvalidDeviceId, -2);
    // And they are what the header says.
    let driver_types = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
    assert!(
        driver_types.contains("#define cudaStreamLegacy                    ((cudaStream_t)0x1)")
            || driver_types.contains("((cudaStream_t)0x1)")
    );
    assert!(driver_types.contains("((cudaStream_t)0x2)"));
    assert!(
        driver_types.contains("#define cudaCpuDeviceId               ((int)-1)") || driver_types.contains("((int)-1)")
    );
}

#[test]
fn driver_node_types_have_the_runtimes_values() {
    // `Node::kind` (ordo-cuda-core) reads `cuGraphNodeGetType`'s CUgraphNodeType as a cudaGraphNodeType.
    let cuda_h = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/cuda.h"));
    let driver = |name: &str| -> u32 {
        let line = cuda_h.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap();
        let value = line.split('=').nth(1).unwrap();
        value.trim_start().chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
    };
    use cudaGraphNodeType as T;
    for (name, runtime) in [
        ("CU_GRAPH_NODE_TYPE_KERNEL", T::cudaGraphNodeTypeKernel),
        ("CU_GRAPH_NODE_TYPE_MEMCPY", T::cudaGraphNodeTypeMemcpy),
        ("CU_GRAPH_NODE_TYPE_MEMSET", T::cudaGraphNodeTypeMemset),
        ("CU_GRAPH_NODE_TYPE_HOST", T::cudaGraphNodeTypeHost),
        ("CU_GRAPH_NODE_TYPE_GRAPH", T::cudaGraphNodeTypeGraph),
        ("CU_GRAPH_NODE_TYPE_EMPTY", T::cudaGraphNodeTypeEmpty),
        ("CU_GRAPH_NODE_TYPE_WAIT_EVENT", T::cudaGraphNodeTypeWaitEvent),
        ("CU_GRAPH_NODE_TYPE_EVENT_RECORD", T::cudaGraphNodeTypeEventRecord),
        ("CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL", T::cudaGraphNodeTypeExtSemaphoreSignal),
        ("CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT", T::cudaGraphNodeTypeExtSemaphoreWait),
        ("CU_GRAPH_NODE_TYPE_MEM_ALLOC", T::cudaGraphNodeTypeMemAlloc),
        ("CU_GRAPH_NODE_TYPE_MEM_FREE", T::cudaGraphNodeTypeMemFree),
        ("CU_GRAPH_NODE_TYPE_CONDITIONAL", T::cudaGraphNodeTypeConditional),
    ] {
        assert_eq!(driver(name), runtime.0, "{name}");
    }
}
