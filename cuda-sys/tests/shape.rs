#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The build script's reading of the bindings' shape (`build/shape.rs`), over the text of both
//! snapshots and over made-up shapes: which cfg each shape gets, the refusal of an unknown one, and
//! the layout comparison that tells whether a snapshot serves another release of its major.

#[path = "../build/shape.rs"]
#[allow(dead_code)]
mod shape;

use shape::{item, layout_differences, layouts, shape_cfgs, snapshot_version};

const CUDA12: &str = include_str!("../src/snapshot/cuda12.rs");
const CUDA13: &str = include_str!("../src/snapshot/cuda13.rs");

#[test]
fn each_snapshot_says_which_release_it_is_of() {
    let (v12, v13) = (snapshot_version(CUDA12).unwrap(), snapshot_version(CUDA13).unwrap());
    assert_eq!((v12 / 1000, v13 / 1000), (12, 13));
    // The version is the headers' (lib.rs), not a constant of the snapshot's.
    assert!(!CUDA13.contains("pub const CUDART_VERSION"));
}

#[test]
fn items_are_read_with_their_fields() {
    let loc = item(CUDA12, "cudaMemLocation").unwrap();
    assert!(!loc.is_union);
    assert_eq!(loc.field("type_"), Some("cudaMemLocationType"));
    assert_eq!(loc.field("id"), Some("core::ffi::c_int"));
    let value = item(CUDA13, "cudaLaunchAttributeValue").unwrap();
    assert!(value.is_union);
    assert_eq!(value.field("pad"), Some("[core::ffi::c_char; 64usize]"));
    assert!(item(CUDA13, "cudaNoSuchThing").is_none());
    let sizes = layouts(CUDA13);
    assert_eq!(sizes["cudaLaunchAttributeValue"].size, Some(64));
    assert_eq!(sizes["cudaLaunchConfig_st"].offsets["numAttrs"], 48);
    assert_eq!(sizes["cudaMemLocation"].align, Some(4));
}

#[test]
fn the_memory_location_shape_picks_its_cfg() {
    // 12.x (and 13.0-13.2): `id` a field.
    assert_eq!(shape_cfgs(CUDA12).unwrap(), Vec::<&str>::new());
    // 13.3 on: `id` in an anonymous union.
    assert_eq!(shape_cfgs(CUDA13).unwrap(), vec!["mem_location_id_in_union"]);
}

#[test]
fn an_unknown_shape_is_refused_with_the_structs_name() {
    let renamed = CUDA12.replace("    pub id: core::ffi::c_int,\n}", "    pub ident: core::ffi::c_int,\n}");
    assert_ne!(renamed, CUDA12);
    let e = shape_cfgs(&renamed).unwrap_err();
    assert!(e.contains("cudaMemLocation") && e.contains("ident"), "{e}");
    let e = shape_cfgs(
        &CUDA13.replace("pub conditional: cudaConditionalNodeParams", "pub cond: cudaConditionalNodeParams"),
    )
    .unwrap_err();
    assert!(e.contains("cudaGraphNodeParams"), "{e}");
}

#[test]
fn layouts_of_one_major_agree_and_of_two_majors_do_not() {
    assert!(layout_differences(CUDA13, CUDA13).is_empty());
    // cudaDeviceProp and cudaPointerAttributes changed size at 13.0.
    let d = layout_differences(CUDA12, CUDA13);
    assert!(d.iter().any(|s| s.starts_with("cudaDeviceProp: size/align 1032/8 here, 1008/8")), "{d:?}");
    assert!(d.iter().any(|s| s.starts_with("cudaPointerAttributes: size/align 24/8 here, 88/8")), "{d:?}");
    // A conditional node's parameters may grow inside the node parameters' union; a moved field is
    // a difference.
    let moved = CUDA13.replace(
        "offset_of!(cudaConditionalNodeParams, phGraph_out) - 16usize]",
        "offset_of!(cudaConditionalNodeParams, phGraph_out) - 24usize]",
    );
    assert_ne!(moved, CUDA13, "the layout test's text changed: update this test");
    assert_eq!(
        layout_differences(CUDA13, &moved),
        vec!["cudaConditionalNodeParams::phGraph_out: offset 16 here, 24 in the snapshot".to_string()]
    );
}
