//! The header and the Rust exports agree: every `#[no_mangle] extern "C" fn` in src/ffi.rs is
//! declared in include/ordo.h with the same parameter and return types, and the header declares
//! nothing else; the status values match.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

const HEADER: &str = include_str!("../../include/ordo.h");
const FFI: &str = include_str!("../../src/ffi.rs");

/// Collapses whitespace and puts `*` against the type.
fn norm(t: &str) -> String {
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    t.replace(" *", "*").replace("* ", "*").trim().to_string()
}

/// name -> (return type, parameter types) from the header's prototypes.
fn header_functions(header: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let text: String = header.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n");
    let mut out = BTreeMap::new();
    for decl in text.split(';') {
        let decl = decl.split("*/").last().unwrap_or(decl).trim();
        let Some(open) = decl.find('(') else { continue };
        if decl.starts_with("typedef") || !decl.contains("ordo_") {
            continue;
        }
        let head = norm(&decl[..open]);
        let Some(name_start) = head.rfind([' ', '*']) else { continue };
        let name = head[name_start + 1..].to_string();
        if !name.starts_with("ordo_") {
            continue;
        }
        let ret = norm(&head[..=name_start]);
        let params = &decl[open + 1..decl.rfind(')').unwrap()];
        let params: Vec<String> = if params.trim() == "void" {
            vec![]
        } else {
            params
                .split(',')
                .map(|p| {
                    let p = norm(p);
                    // Drop the parameter name: the last identifier.
                    let cut = p.rfind([' ', '*']).unwrap();
                    norm(&p[..=cut])
                })
                .collect()
        };
        out.insert(name, (ret, params));
    }
    out
}

/// The C spelling of a Rust type used at the boundary.
fn c_type(rust: &str) -> String {
    let r = rust.split_whitespace().collect::<Vec<_>>().join(" ");
    let t = match r.as_str() {
        "c_int" => "int",
        "OrdoStatus" => "ordo_status",
        "usize" => "size_t",
        "*const f32" => "const float*",
        "*mut f32" => "float*",
        "*mut *mut c_void" => "void**",
        "*const u8" => "const uint8_t*",
        "*mut u8" => "uint8_t*",
        "*mut c_void" => "void*",
        "*const c_char" => "const char*",
        "*mut c_int" => "int*",
        "*mut usize" => "size_t*",
        "*const usize" => "const size_t*",
        "sys::cudaStream_t" => "struct CUstream_st*",
        "OrdoComputeFn" => "ordo_compute_fn",
        "OrdoCaptureFn" => "ordo_capture_fn",
        "*mut OrdoGraphCache" => "ordo_graph_cache*",
        "*mut *mut OrdoGraphCache" => "ordo_graph_cache**",
        "*mut OrdoStagingRing" => "ordo_staging_ring*",
        "*mut *mut OrdoStagingRing" => "ordo_staging_ring**",
        "*mut OrdoTimer" => "ordo_timer*",
        "*mut *mut OrdoTimer" => "ordo_timer**",
        "" => "void",
        other => panic!("no C spelling for the Rust type `{other}`: add it here and to the header"),
    };
    t.to_string()
}

/// name -> (return type, parameter types) from src/ffi.rs, in C spelling.
fn rust_exports() -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for chunk in FFI.split("#[no_mangle]").skip(1) {
        let sig_start = chunk.find("fn ").unwrap();
        let sig = &chunk[sig_start + 3..chunk.find('{').unwrap()];
        let name = sig[..sig.find('(').unwrap()].trim().to_string();
        let close = sig.rfind(')').unwrap();
        let params = &sig[sig.find('(').unwrap() + 1..close];
        let ret = sig[close + 1..].trim().trim_start_matches("->").trim();
        let params: Vec<String> = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_type(p.split_once(':').unwrap().1.trim()))
            .collect();
        let ret = c_type(ret);
        out.insert(name, (norm(&ret), params.iter().map(|p| norm(p)).collect()));
    }
    out
}

#[test]
fn header_declares_exactly_the_exports_with_the_same_signatures() {
    let header = header_functions(HEADER);
    let exports = rust_exports();
    assert!(exports.len() >= 20, "parsed {} exports", exports.len());
    let hnames: Vec<_> = header.keys().collect();
    let rnames: Vec<_> = exports.keys().collect();
    assert_eq!(hnames, rnames, "functions declared in the header vs exported by src/ffi.rs");
    for (name, (ret, params)) in &exports {
        let (hret, hparams) = &header[name];
        let hparams: Vec<String> = hparams.iter().map(|p| norm(p)).collect();
        assert_eq!(norm(hret), *ret, "{name}: return type");
        assert_eq!(hparams, *params, "{name}: parameters");
    }
}

#[test]
fn status_values_agree() {
    use ordo::ffi::*;
    for (name, value) in [
        ("ORDO_SUCCESS", ORDO_SUCCESS),
        ("ORDO_ERROR_INVALID_ARGUMENT", ORDO_ERROR_INVALID_ARGUMENT),
        ("ORDO_ERROR_PAGEABLE_MEMORY", ORDO_ERROR_PAGEABLE_MEMORY),
        ("ORDO_ERROR_NOT_SUPPORTED", ORDO_ERROR_NOT_SUPPORTED),
        ("ORDO_ERROR_PANIC", ORDO_ERROR_PANIC),
        ("ORDO_ERROR_LIBRARY", ORDO_ERROR_LIBRARY),
    ] {
        assert!(HEADER.contains(&format!("#define {name} {value}\n")), "{name} = {value}");
        if value != 0 {
            // ordo's own codes sit where CUDA has none.
            assert!(value > 10000);
        }
    }
}

#[test]
fn the_parser_sees_a_mismatch() {
    // A header with a changed parameter type, or a missing function, must not compare equal.
    let exports = rust_exports();
    let changed = header_functions(&HEADER.replace("size_t rows, size_t cols", "int rows, size_t cols"));
    assert_ne!(changed["ordo_gemv_normalize"].1, exports["ordo_gemv_normalize"].1);
    let missing = header_functions(&HEADER.replace("void ordo_timer_destroy(ordo_timer* timer);", ""));
    assert!(!missing.contains_key("ordo_timer_destroy") && exports.contains_key("ordo_timer_destroy"));
}
