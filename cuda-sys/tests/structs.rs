#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The constructors of the structs whose shape differs between releases (`src/structs.rs`), built
//! and read back through the generated layout, whichever shape these bindings have.

use core::mem::{offset_of, size_of};
use ordo_cuda_sys::*;

#[test]
fn a_memory_location_holds_its_kind_and_id() {
    use cudaMemLocationType as T;
    for (kind, id) in
        [(T::cudaMemLocationTypeDevice, 3), (T::cudaMemLocationTypeHost, 0), (T::cudaMemLocationTypeHostNuma, -7)]
    {
        let loc = mem_location(kind, id);
        assert_eq!(loc.type_, kind);
        // SAFETY: made by `mem_location`.
        assert_eq!(unsafe { mem_location_id(&loc) }, id);
        // The C layout, { int type; int id; } in every release (a union of the id from 13.3):
        // the id's bytes follow the kind's.
        assert_eq!(size_of::<cudaMemLocation>(), 8);
        let bytes: [u8; 8] = unsafe { core::mem::transmute(loc) };
        assert_eq!(bytes[4..8], id.to_ne_bytes());
        assert_eq!(bytes[0..4], kind.0.to_ne_bytes());
    }
    // Usable in constants.
    const HOST: cudaMemLocation = mem_location(cudaMemLocationType::cudaMemLocationTypeHost, 0);
    assert_eq!(HOST.type_, cudaMemLocationType::cudaMemLocationTypeHost);
}

#[test]
fn pool_properties_hold_what_was_given_and_zeros() {
    let loc = mem_location(cudaMemLocationType::cudaMemLocationTypeDevice, 1);
    let props = mem_pool_props(
        cudaMemAllocationType::cudaMemAllocationTypePinned,
        cudaMemAllocationHandleType::cudaMemHandleTypePosixFileDescriptor,
        loc,
    );
    assert_eq!(props.allocType, cudaMemAllocationType::cudaMemAllocationTypePinned);
    assert_eq!(props.handleTypes, cudaMemAllocationHandleType::cudaMemHandleTypePosixFileDescriptor);
    assert_eq!(props.location.type_, loc.type_);
    // SAFETY: made by `mem_location`.
    assert_eq!(unsafe { mem_location_id(&props.location) }, 1);
    assert!(props.win32SecurityAttributes.is_null());
    assert_eq!(props.maxSize, 0);
    // Everything after `maxSize` (usage hints and reserved bytes, whatever the release calls them)
    // is zero, as cudaMemPoolCreate requires.
    let bytes: [u8; size_of::<cudaMemPoolProps>()] = unsafe { core::mem::transmute(props) };
    let tail = offset_of!(cudaMemPoolProps, maxSize) + size_of::<usize>();
    assert!(bytes[tail..].iter().all(|&b| b == 0));
    assert_eq!(size_of::<cudaMemPoolProps>(), 88);
}

#[test]
fn conditional_node_parameters_hold_what_was_given_and_the_bodies_cuda_writes() {
    let params = conditional_node_params(0x1234_5678_9abc, cudaGraphConditionalNodeType::cudaGraphCondTypeWhile, 1);
    assert_eq!(params.type_, cudaGraphNodeType::cudaGraphNodeTypeConditional);
    // SAFETY: the member `conditional_node_params` wrote.
    let c = unsafe { params.__bindgen_anon_1.conditional };
    assert_eq!(
        (c.handle, c.type_, c.size),
        (0x1234_5678_9abc, cudaGraphConditionalNodeType::cudaGraphCondTypeWhile, 1)
    );
    // SAFETY: made by `conditional_node_params`.
    assert!(unsafe { conditional_node_bodies(&params) }.is_null(), "no bodies before cudaGraphAddNode");
    // Every byte of the union beyond the fields given is zero (the execution context of 13.1 on).
    let bytes: [u8; size_of::<cudaGraphNodeParams>()] = unsafe { core::mem::transmute(params) };
    let start = offset_of!(cudaGraphNodeParams, __bindgen_anon_1);
    let given = offset_of!(cudaConditionalNodeParams, phGraph_out);
    assert!(bytes[start + given..].iter().all(|&b| b == 0));
    // What cudaGraphAddNode does: the array's address into phGraph_out.
    let mut bodies: [cudaGraph_t; 1] = [core::ptr::null_mut()];
    let mut written = params;
    written.__bindgen_anon_1.conditional.phGraph_out = bodies.as_mut_ptr();
    // SAFETY: made by `conditional_node_params`.
    assert_eq!(unsafe { conditional_node_bodies(&written) }, bodies.as_mut_ptr());
}

#[test]
fn the_shape_cfgs_follow_the_bindings() {
    // The bindings this crate compiled against, and the cfg the build read from them.
    let text = include_str!(concat!(env!("OUT_DIR"), "/bindings.rs"));
    let has_id_field = text.contains("pub struct cudaMemLocation {\n    pub type_: cudaMemLocationType,\n    pub id:");
    assert_eq!(cfg!(mem_location_id_in_union), !has_id_field);
    if BINDINGS_GENERATED {
        // Generated from these headers: the id sits in a union exactly where the headers say so.
        let header = include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h"));
        let body = header.split("struct __device_builtin__ cudaMemLocation {").nth(1).unwrap();
        let body = &body[..body.find("};").unwrap()];
        assert_eq!(cfg!(mem_location_id_in_union), body.contains("union"), "{body}");
    }
}
