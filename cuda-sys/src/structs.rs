//! Constructors and accessors of the generated structs whose shape differs between CUDA releases,
//! so that code above this crate never names a field that some release lacks, or a name bindgen
//! makes up (`__bindgen_anon_1`).
//!
//! Each body is chosen by a cfg the build script derives from the generated bindings themselves
//! (`build/shape.rs` reads their text), never from a version number: the same source builds
//! against bindings generated from any release's headers, and against a snapshot of another release.
//! A shape none of these bodies knows stops the build with a message naming the struct.
//!
//! | struct | differs how |
//! | --- | --- |
//! | `cudaMemLocation` | `id` a field up to CUDA 13.2; from 13.3 a member of an anonymous union (13.4 adds `localized` beside it) |
//! | `cudaMemPoolProps` | `usage` from 12.6, the reserved bytes shrink with it and again in 13.5 |
//! | `cudaGraphNodeParams` | its parameters sit in an anonymous union; `cudaConditionalNodeParams` gained `ctx` in 13.1 |

use crate::bindings::*;
use core::ffi::{c_int, c_uint};

/// A `cudaMemLocation` of `kind` with `id` (a device ordinal, a NUMA node; 0 for the host).
#[inline]
pub const fn mem_location(kind: cudaMemLocationType, id: c_int) -> cudaMemLocation {
    #[cfg(not(mem_location_id_in_union))]
    return cudaMemLocation { type_: kind, id };
    #[cfg(mem_location_id_in_union)]
    return cudaMemLocation { type_: kind, __bindgen_anon_1: cudaMemLocation__bindgen_ty_1 { id } };
}

/// The `id` of a location.
///
/// # Safety
/// The location's id is initialised: it was made by [`mem_location`], or written by CUDA (from
/// CUDA 13.4 a location written as `localized { deviceId, localityDomainId }` leaves half of the
/// id's bytes uninitialised).
#[inline]
pub const unsafe fn mem_location_id(location: &cudaMemLocation) -> c_int {
    #[cfg(not(mem_location_id_in_union))]
    return location.id;
    // SAFETY: the caller's promise; every member of the union is plain data.
    #[cfg(mem_location_id_in_union)]
    return unsafe { location.__bindgen_anon_1.id };
}

/// The properties of a new pool (`cudaMemPoolCreate`): `alloc_type`, `handle_types` and `location`,
/// everything else zero (no maximum size, no usage hints, the reserved bytes CUDA requires zeroed).
#[inline]
pub fn mem_pool_props(
    alloc_type: cudaMemAllocationType,
    handle_types: cudaMemAllocationHandleType,
    location: cudaMemLocation,
) -> cudaMemPoolProps {
    cudaMemPoolProps { allocType: alloc_type, handleTypes: handle_types, location, ..Default::default() }
}

/// The parameters of a conditional node for `cudaGraphAddNode`: a node of `type_` on `handle` with
/// `size` bodies, every other byte zero (so the execution context newer headers add is the current
/// one). CUDA writes the address of its array of bodies into them
/// ([`conditional_node_bodies`]).
#[inline]
#[allow(clippy::field_reassign_with_default)] // the fields every release has; the others stay zero
pub fn conditional_node_params(
    handle: cudaGraphConditionalHandle,
    type_: cudaGraphConditionalNodeType,
    size: c_uint,
) -> cudaGraphNodeParams {
    let mut conditional = cudaConditionalNodeParams::default();
    conditional.handle = handle;
    conditional.type_ = type_;
    conditional.size = size;
    let mut params =
        cudaGraphNodeParams { type_: cudaGraphNodeType::cudaGraphNodeTypeConditional, ..Default::default() };
    params.__bindgen_anon_1.conditional = conditional;
    params
}

/// The array of bodies (`phGraph_out`) CUDA wrote into conditional-node parameters; null before it did.
///
/// # Safety
/// `params` was made by [`conditional_node_params`] (and since passed to `cudaGraphAddNode`, or not):
/// its conditional member is the one written.
#[inline]
pub unsafe fn conditional_node_bodies(params: &cudaGraphNodeParams) -> *mut cudaGraph_t {
    // SAFETY: the caller's promise: the conditional member is initialised.
    unsafe { params.__bindgen_anon_1.conditional.phGraph_out }
}
