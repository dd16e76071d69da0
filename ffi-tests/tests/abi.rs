//! The header and the Rust exports agree. The Rust side is parsed as Rust (`syn`): every
//! `#[no_mangle] extern "C" fn` under capi/src/ (embedded by build.rs), the callback type aliases
//! and the status constants. The header side is read by a small parser of C declarations. Compared:
//! the set of functions, each one's return and parameter types (in C spelling), the callback
//! typedefs, the handle typedefs, and the status values.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use syn::{Expr, FnArg, GenericArgument, Item, Lit, PathArguments, ReturnType, Type};

include!(concat!(env!("OUT_DIR"), "/ffi_sources.rs"));

const HEADER: &str = include_str!("../../capi/include/ordo.h");

/// Return type and parameter types, in C spelling.
type Signature = (String, Vec<String>);

/// Collapses whitespace and puts `*` against the type.
fn norm(t: &str) -> String {
    let t = t.split_whitespace().collect::<Vec<_>>().join(" ");
    t.replace(" *", "*").replace("* ", "*").trim().to_string()
}

/// `OrdoGraphCache` -> `ordo_graph_cache`: the header's name for a Rust type (handles, callbacks).
fn snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

// ---- The Rust side ------------------------------------------------------------------------------

#[derive(Default, Debug)]
struct RustAbi {
    functions: BTreeMap<String, Signature>,
    /// Callback aliases (`pub type OrdoComputeFn = Option<unsafe extern "C" fn(..) -> ..>`).
    callbacks: BTreeMap<String, Signature>,
    /// Opaque handle structs (`pub struct OrdoTimer`).
    handles: Vec<String>,
    /// The status constants (`ORDO_SUCCESS`, `ORDO_ERROR_*`).
    constants: BTreeMap<String, i64>,
    /// Other `ORDO_*` integer constants (sizes).
    other_constants: BTreeMap<String, i64>,
    /// `#[repr(C)]` structs with fields (`pub struct OrdoErrorInfo { .. }`): their fields, in C.
    records: BTreeMap<String, Vec<(String, String)>>,
    /// Every type alias, for resolving.
    aliases: BTreeMap<String, Type>,
    /// Structs with fields, before their fields are spelled in C.
    pending_records: Vec<(String, Vec<(String, Type)>)>,
}

fn is_no_mangle(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("no_mangle")
            || (a.path().is_ident("unsafe") && a.parse_args::<syn::Path>().is_ok_and(|p| p.is_ident("no_mangle")))
    })
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Path>().is_ok_and(|p| p.is_ident("test")))
}

/// An integer literal, negative ones included.
fn int_value(e: &Expr) -> Option<i64> {
    match e {
        Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse().ok(),
        Expr::Unary(syn::ExprUnary { op: syn::UnOp::Neg(_), expr, .. }) => int_value(expr).map(|v| -v),
        _ => None,
    }
}

fn collect(items: &[Item], abi: &mut RustAbi, fns: &mut Vec<syn::ItemFn>) {
    for item in items {
        match item {
            Item::Fn(f) if is_no_mangle(&f.attrs) => fns.push(f.clone()),
            Item::Type(t) => {
                abi.aliases.insert(t.ident.to_string(), (*t.ty).clone());
            }
            Item::Struct(s)
                if s.ident.to_string().starts_with("Ordo") && matches!(s.vis, syn::Visibility::Public(_)) =>
            {
                // Opaque handles have one private `_opaque` field; records have public fields.
                let opaque = s.fields.iter().all(|f| !matches!(f.vis, syn::Visibility::Public(_)));
                if let (syn::Fields::Named(fields), false) = (&s.fields, opaque) {
                    let fields = fields.named.iter().map(|f| (f.ident.as_ref().unwrap().to_string(), f.ty.clone()));
                    abi.pending_records.push((s.ident.to_string(), fields.collect()));
                } else {
                    abi.handles.push(s.ident.to_string());
                }
            }
            Item::Const(c) if c.ident.to_string().starts_with("ORDO_") => {
                if let Some(value) = int_value(&c.expr) {
                    let name = c.ident.to_string();
                    let status = name == "ORDO_SUCCESS" || name.starts_with("ORDO_ERROR_");
                    let map = if status { &mut abi.constants } else { &mut abi.other_constants };
                    map.insert(name, value);
                }
            }
            Item::Mod(m) if !is_cfg_test(&m.attrs) => {
                if let Some((_, items)) = &m.content {
                    collect(items, abi, fns);
                }
            }
            _ => {}
        }
    }
}

/// The C spelling of a Rust type at the boundary.
fn c_type(ty: &Type, abi: &RustAbi) -> String {
    match ty {
        Type::Ptr(p) => {
            let inner = c_type(&p.elem, abi);
            if p.const_token.is_some() {
                assert!(!matches!(*p.elem, Type::Ptr(_)), "pointer to const pointer: spell it here");
                norm(&format!("const {inner}*"))
            } else {
                norm(&format!("{inner}*"))
            }
        }
        Type::Path(p) => {
            let last = p.path.segments.last().unwrap();
            let name = last.ident.to_string();
            match name.as_str() {
                "c_int" | "i32" => "int".into(),
                "c_uint" => "unsigned int".into(),
                "c_char" => "char".into(),
                "c_void" => "void".into(),
                "usize" => "size_t".into(),
                "f32" => "float".into(),
                "u8" => "uint8_t".into(),
                "u32" => "uint32_t".into(),
                "u64" => "uint64_t".into(),
                "OrdoStatus" => "ordo_status".into(),
                "cudaStream_t" => "struct CUstream_st*".into(),
                "cudaEvent_t" => "struct CUevent_st*".into(),
                "cudaMemPool_t" => "struct CUmemPoolHandle_st*".into(),
                "cudaKernel_t" => "struct CUkern_st*".into(),
                _ if abi.handles.contains(&name) => snake(&name),
                _ if abi.pending_records.iter().any(|(r, _)| *r == name) || abi.records.contains_key(&name) => {
                    snake(&name)
                }
                _ if abi.callbacks.contains_key(&name) => snake(&name),
                other => panic!("no C spelling for the Rust type `{other}`: add it to tests/abi.rs and the header"),
            }
        }
        Type::Tuple(t) if t.elems.is_empty() => "void".into(),
        other => panic!("unexpected type at the C boundary: {other:?}"),
    }
}

/// The C spelling of a struct field's type: an array as `elem[N]`, N a literal or an `ORDO_*`
/// constant.
fn field_type(ty: &Type, abi: &RustAbi) -> String {
    match ty {
        Type::Array(a) => {
            let len = match &a.len {
                Expr::Lit(syn::ExprLit { lit: Lit::Int(i), .. }) => i.base10_parse::<i64>().unwrap(),
                Expr::Path(p) => {
                    let name = p.path.segments.last().unwrap().ident.to_string();
                    *abi.other_constants
                        .get(&name)
                        .unwrap_or_else(|| panic!("array length {name}: not a constant here"))
                }
                other => panic!("array length: {other:?}"),
            };
            format!("{}[{len}]", c_type(&a.elem, abi))
        }
        other => c_type(other, abi),
    }
}

fn signature(inputs: impl Iterator<Item = Type>, output: &ReturnType, abi: &RustAbi) -> Signature {
    let ret = match output {
        ReturnType::Default => "void".to_string(),
        ReturnType::Type(_, t) => c_type(t, abi),
    };
    (ret, inputs.map(|t| c_type(&t, abi)).collect())
}

/// The callback signature of `Option<unsafe extern "C" fn(..) -> ..>`, resolving aliases.
fn callback_signature(ty: &Type, abi: &RustAbi) -> Option<Signature> {
    if let Type::BareFn(f) = ty {
        assert!(
            f.abi.as_ref().and_then(|a| a.name.as_ref()).is_some_and(|n| n.value() == "C"),
            "callback not extern \"C\""
        );
        return Some(signature(f.inputs.iter().map(|a| a.ty.clone()), &f.output, abi));
    }
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident == "Option" {
        let PathArguments::AngleBracketed(args) = &last.arguments else { return None };
        let Some(GenericArgument::Type(inner)) = args.args.first() else { return None };
        return callback_signature(inner, abi);
    }
    callback_signature(abi.aliases.get(&last.ident.to_string())?, abi)
}

fn parse_rust(sources: &[(&str, String)]) -> RustAbi {
    let mut abi = RustAbi::default();
    let mut fns = Vec::new();
    for (path, text) in sources {
        let file = syn::parse_file(text).unwrap_or_else(|e| panic!("capi/src/{path}: {e}"));
        collect(&file.items, &mut abi, &mut fns);
    }
    // Callback aliases: public `Ordo*Fn` types whose target is an optional extern "C" fn.
    let names: Vec<String> =
        abi.aliases.keys().filter(|n| n.starts_with("Ordo") && n.ends_with("Fn")).cloned().collect();
    for name in &names {
        abi.callbacks.insert(name.clone(), (String::new(), Vec::new()));
    }
    for name in names {
        let ty = abi.aliases[&name].clone();
        let sig = callback_signature(&ty, &abi).unwrap_or_else(|| panic!("{name} is not an optional extern \"C\" fn"));
        abi.callbacks.insert(name, sig);
    }
    for (name, fields) in std::mem::take(&mut abi.pending_records) {
        let fields = fields.iter().map(|(field, ty)| (field.clone(), field_type(ty, &abi))).collect();
        abi.records.insert(name, fields);
    }
    for f in fns {
        let name = f.sig.ident.to_string();
        let c_abi = f.sig.abi.as_ref().and_then(|a| a.name.as_ref()).map(|n| n.value());
        assert_eq!(c_abi.as_deref(), Some("C"), "{name}: #[no_mangle] but not extern \"C\"");
        assert!(matches!(f.vis, syn::Visibility::Public(_)), "{name}: not pub");
        let inputs = f.sig.inputs.iter().map(|a| match a {
            FnArg::Typed(t) => (*t.ty).clone(),
            FnArg::Receiver(_) => panic!("{name}: a method"),
        });
        let sig = signature(inputs, &f.sig.output, &abi);
        assert!(abi.functions.insert(name.clone(), sig).is_none(), "{name} exported twice");
    }
    abi
}

fn rust_abi() -> RustAbi {
    parse_rust(&FFI_SOURCES.iter().map(|(p, t)| (*p, t.to_string())).collect::<Vec<_>>())
}

// ---- The header side ----------------------------------------------------------------------------

#[derive(Default, Debug)]
struct HeaderAbi {
    functions: BTreeMap<String, Signature>,
    callbacks: BTreeMap<String, Signature>,
    /// `typedef struct X y;`: y -> X.
    structs: BTreeMap<String, String>,
    /// `typedef struct x { fields } x;`: x -> its fields (name, C type with `[N]`).
    records: BTreeMap<String, Vec<(String, String)>>,
    /// The status `#define`s.
    defines: BTreeMap<String, i64>,
    /// Other integer `#define`s, the version macros aside.
    other_defines: BTreeMap<String, i64>,
}

/// Removes comments; drops preprocessor lines (keeping `#define NAME INT`) and every conditional
/// block but the include guard (`#ifdef __cplusplus`, and the CUDA-runtime-only wrappers).
fn preprocess(header: &str, defines: &mut BTreeMap<String, i64>, other: &mut BTreeMap<String, i64>) -> String {
    let mut text = String::new();
    let mut rest = header;
    while let Some(start) = rest.find("/*") {
        text.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("unterminated comment") + start + 2;
        text.push(' ');
        rest = &rest[end..];
    }
    text.push_str(rest);
    let mut out = String::new();
    // One entry a conditional block open: whether its text is skipped.
    let mut blocks: Vec<bool> = Vec::new();
    for line in text.lines() {
        let line = line.split("//").next().unwrap_or("");
        let t = line.trim();
        let skipping = blocks.iter().any(|&skip| skip);
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim();
            if d.starts_with("if") {
                blocks.push(d != "ifndef ORDO_H");
            } else if d.starts_with("endif") {
                blocks.pop().expect("#endif without #if");
            } else if let (false, Some(def)) = (skipping, d.strip_prefix("define ")) {
                let mut parts = def.split_whitespace();
                if let (Some(name), Some(value)) = (parts.next(), parts.next()) {
                    // The status codes; the version macros are checked on their own.
                    let status = name == "ORDO_SUCCESS" || name.starts_with("ORDO_ERROR_");
                    if let (true, Ok(v)) = (status, value.parse()) {
                        defines.insert(name.to_string(), v);
                    } else if let (false, false, Ok(v)) = (status, name.starts_with("ORDO_VERSION_"), value.parse()) {
                        other.insert(name.to_string(), v);
                    }
                }
            }
            continue;
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(blocks.is_empty(), "#if without #endif");
    out
}

/// Splits `type name` into the type (name dropped): the name is the last identifier.
fn drop_name(decl: &str) -> (String, String) {
    let d = norm(decl);
    let cut = d.rfind([' ', '*']).unwrap_or_else(|| panic!("no name in `{d}`"));
    (norm(&d[..=cut]), d[cut + 1..].to_string())
}

fn params(list: &str) -> Vec<String> {
    let list = list.trim();
    if list == "void" {
        return vec![];
    }
    list.split(',').map(|p| drop_name(p).0).collect()
}

fn parse_header(header: &str) -> HeaderAbi {
    let mut abi = HeaderAbi::default();
    let mut text = preprocess(header, &mut abi.defines, &mut abi.other_defines);
    // The status enum: `enum ordo_status_code { NAME = VALUE, ... };`.
    while let Some(start) = text.find("enum ordo_status_code") {
        let open = text[start..].find('{').unwrap() + start;
        let close = text[open..].find('}').expect("unterminated enum") + open;
        let end = text[close..].find(';').expect("no ; after the enum") + close;
        for entry in text[open + 1..close].split(',').map(norm).filter(|e| !e.is_empty()) {
            let (name, value) = entry.split_once('=').unwrap_or_else(|| panic!("enum entry without a value: {entry}"));
            let (name, value) = (name.trim().to_string(), value.trim().parse::<i64>().unwrap());
            let status = name == "ORDO_SUCCESS" || name.starts_with("ORDO_ERROR_");
            let map = if status { &mut abi.defines } else { &mut abi.other_defines };
            assert!(map.insert(name.clone(), value).is_none(), "{name} twice");
        }
        text.replace_range(start..=end, "");
    }
    // Structs with fields come out first: `typedef struct x { type name; type name[N]; } x;`.
    let with_fields = |text: &str| {
        text.match_indices("typedef struct").map(|(i, _)| i).find(|&i| {
            let rest = &text[i..];
            rest.find('{').is_some_and(|b| rest.find(';').is_none_or(|e| b < e))
        })
    };
    while let Some(start) = with_fields(&text) {
        let open = text[start..].find('{').unwrap() + start;
        let close = text[open..].find('}').expect("unterminated struct") + open;
        let end = text[close..].find(';').expect("no ; after the struct") + close;
        let tag = norm(&text[start + "typedef struct".len()..open]);
        let name = norm(&text[close + 1..end]);
        assert_eq!(tag, name, "typedef struct {tag} {{..}} {name}: the tag and the name differ");
        let fields = text[open + 1..close]
            .split(';')
            .map(norm)
            .filter(|f| !f.is_empty())
            .map(|f| match f.split_once('[') {
                Some((decl, len)) => {
                    let (ty, field) = drop_name(decl);
                    (field, format!("{ty}[{}]", len.trim_end_matches(']').trim()))
                }
                None => {
                    let (ty, field) = drop_name(&f);
                    (field, ty)
                }
            })
            .collect();
        abi.records.insert(name, fields);
        text.replace_range(start..=end, "");
    }
    for decl in text.split(';') {
        let decl = norm(decl);
        // Forward declarations of CUDA's handle structs (`struct CUstream_st;`).
        if decl.is_empty() || decl.strip_prefix("struct CU").is_some_and(|tag| !tag.contains(' ')) {
            continue;
        }
        if let Some(t) = decl.strip_prefix("typedef ") {
            if let Some(open) = t.find("(*") {
                let ret = norm(&t[..open]);
                let close = t[open..].find(')').unwrap() + open;
                let name = t[open + 2..close].trim().to_string();
                let rest = &t[close + 1..];
                let list = &rest[rest.find('(').unwrap() + 1..rest.rfind(')').unwrap()];
                abi.callbacks.insert(name, (ret, params(list)));
            } else if let Some(s) = t.strip_prefix("struct ") {
                let mut parts = s.split_whitespace();
                let (tag, name) = (parts.next().unwrap(), parts.next().unwrap());
                abi.structs.insert(name.to_string(), tag.to_string());
            } else {
                assert_eq!(t, "int32_t ordo_status", "unexpected typedef");
            }
            continue;
        }
        let open = decl.find('(').unwrap_or_else(|| panic!("not a prototype: `{decl}`"));
        let (ret, name) = drop_name(&decl[..open]);
        let list = &decl[open + 1..decl.rfind(')').unwrap()];
        assert!(abi.functions.insert(name.clone(), (ret, params(list))).is_none(), "{name} declared twice");
    }
    abi
}

// ---- The comparison -----------------------------------------------------------------------------

/// Every disagreement between the two sides, in words (empty when they agree).
fn disagreements(rust: &RustAbi, header: &HeaderAbi) -> Vec<String> {
    let mut out = Vec::new();
    for (name, sig) in &rust.functions {
        match header.functions.get(name) {
            None => out.push(format!("{name}: exported, not declared in ordo.h")),
            Some(h) if h != sig => out.push(format!("{name}: Rust {sig:?}, ordo.h {h:?}")),
            Some(_) => {}
        }
    }
    for name in header.functions.keys().filter(|n| !rust.functions.contains_key(*n)) {
        out.push(format!("{name}: declared in ordo.h, not exported"));
    }
    for (name, sig) in &rust.callbacks {
        match header.callbacks.get(&snake(name)) {
            None => out.push(format!("{name}: no typedef {} in ordo.h", snake(name))),
            Some(h) if h != sig => out.push(format!("{name}: Rust {sig:?}, ordo.h {h:?}")),
            Some(_) => {}
        }
    }
    if header.callbacks.len() != rust.callbacks.len() {
        out.push(format!("callback typedefs: ordo.h {:?}, Rust {:?}", header.callbacks.keys(), rust.callbacks.keys()));
    }
    for handle in &rust.handles {
        if header.structs.get(&snake(handle)) != Some(handle) {
            out.push(format!("{handle}: ordo.h lacks `typedef struct {handle} {};`", snake(handle)));
        }
    }
    if header.structs.len() != rust.handles.len() {
        out.push(format!("handle typedefs: ordo.h {:?}, Rust {:?}", header.structs, rust.handles));
    }
    if header.defines != rust.constants {
        out.push(format!("status values: ordo.h {:?}, Rust {:?}", header.defines, rust.constants));
    }
    if header.other_defines != rust.other_constants {
        out.push(format!("other constants: ordo.h {:?}, Rust {:?}", header.other_defines, rust.other_constants));
    }
    let rust_records: BTreeMap<String, &Vec<(String, String)>> =
        rust.records.iter().map(|(name, fields)| (snake(name), fields)).collect();
    let header_records: BTreeMap<String, &Vec<(String, String)>> =
        header.records.iter().map(|(n, f)| (n.clone(), f)).collect();
    if rust_records != header_records {
        out.push(format!("structs: ordo.h {header_records:?}, Rust {rust_records:?}"));
    }
    out
}

#[test]
fn header_declares_exactly_the_exports_with_the_same_signatures() {
    let rust = rust_abi();
    let header = parse_header(HEADER);
    assert!(rust.functions.len() >= 36, "parsed {} exports: {:?}", rust.functions.len(), rust.functions.keys());
    assert_eq!(rust.callbacks.len(), 6, "{:?}", rust.callbacks);
    assert!(rust.handles.len() >= 7, "{:?}", rust.handles);
    let problems = disagreements(&rust, &header);
    assert!(problems.is_empty(), "ordo.h and capi/src disagree:\n{}", problems.join("\n"));
}

#[test]
fn status_values_agree_and_sit_where_cuda_has_none() {
    use ordo_cuda_capi::*;
    let header = parse_header(HEADER);
    let rust = rust_abi();
    assert_eq!(header.defines, rust.constants);
    // ordo's own codes are negative: CUDA's are all non-negative.
    for (name, value) in &header.defines {
        if *value != 0 {
            assert!(*value < 0, "{name}");
        }
    }
    assert_eq!(header.other_defines.get("ORDO_NOT_READY"), Some(&600), "cudaErrorNotReady");
    assert_eq!(ordo_cuda_core::sys::cudaError::cudaErrorNotReady.0, 600);
    // The running library's own table agrees with both.
    assert_eq!(ORDO_STATUSES.len(), header.defines.len());
    for (code, name, _) in ORDO_STATUSES {
        assert_eq!(header.defines.get(name.to_str().unwrap()), Some(&i64::from(code)), "{name:?}");
    }
    assert_eq!(i64::from(ORDO_LAST_CODE), *header.defines.values().min().unwrap());
}

#[test]
fn the_comparison_sees_every_kind_of_mismatch() {
    let rust = rust_abi();
    let clean = parse_header(HEADER);
    assert!(disagreements(&rust, &clean).is_empty());
    // A changed parameter type, a missing function, an extra one, a changed callback, a changed
    // status value: each must be reported.
    for (what, from, to) in [
        ("parameter type", "size_t rows, size_t cols", "int rows, size_t cols"),
        ("missing function", "void ordo_timer_destroy(ordo_timer* timer);", ""),
        (
            "extra function",
            "void ordo_timer_destroy(ordo_timer* timer);",
            "void ordo_timer_destroy(ordo_timer* timer);\nint ordo_extra(void);",
        ),
        ("return type", "int ordo_status_is_sticky(", "ordo_status ordo_status_is_sticky("),
        ("callback", "size_t bucket, void* user)", "int bucket, void* user)"),
        ("status value", "ORDO_ERROR_PANIC = -4,", "ORDO_ERROR_PANIC = -9,"),
        ("not ready", "ORDO_NOT_READY = 600,", "ORDO_NOT_READY = 601,"),
        ("handle typedef", "typedef struct OrdoTimer ordo_timer;", "typedef struct OrdoClock ordo_timer;"),
        ("struct field", "    int library_status;", "    unsigned library_status;"),
        ("struct field order", "    int cuda_error; ", "    int cuda_errors; "),
        ("array length", "char message[512];", "char message[256];"),
        ("size constant", "#define ORDO_LAST_ERROR_CALL_LEN 64", "#define ORDO_LAST_ERROR_CALL_LEN 32"),
    ] {
        assert!(HEADER.contains(from), "{what}: the test's header text moved");
        let changed = parse_header(&HEADER.replace(from, to));
        assert!(!disagreements(&rust, &changed).is_empty(), "{what}: not seen");
    }
    // And from the Rust side: a changed parameter type, a function no longer exported.
    let mut sources: Vec<(&str, String)> = FFI_SOURCES.iter().map(|(p, t)| (*p, t.to_string())).collect();
    let kernels = sources.iter_mut().find(|(p, _)| p.ends_with("kernels.rs")).unwrap();
    assert!(kernels.1.contains("rows: usize,"));
    kernels.1 = kernels.1.replacen("rows: usize,", "rows: u32,", 1);
    let result = std::panic::catch_unwind(|| disagreements(&parse_rust(&sources), &clean));
    assert!(result.map_or(true, |d| !d.is_empty()), "a Rust parameter type change not seen");
    let mut sources: Vec<(&str, String)> = FFI_SOURCES.iter().map(|(p, t)| (*p, t.to_string())).collect();
    let timer = sources.iter_mut().find(|(p, _)| p.ends_with("timer.rs")).unwrap();
    timer.1 = timer.1.replacen(
        "#[no_mangle]\npub extern \"C\" fn ordo_timer_destroy",
        "pub extern \"C\" fn ordo_timer_destroy",
        1,
    );
    assert!(!disagreements(&parse_rust(&sources), &clean).is_empty(), "an export without #[no_mangle] not seen");
}

/// The header's version macros are the crate's version, and agree with the library's number.
#[test]
fn version_macros_are_the_crates() {
    let define = |name: &str| -> i32 {
        let line = HEADER
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("#define {name} ")))
            .unwrap_or_else(|| panic!("ordo.h has no #define {name}"));
        line.split_whitespace().nth(2).unwrap().parse().unwrap()
    };
    let crate_version: Vec<i32> =
        env!("CARGO_PKG_VERSION").split(['.', '-']).take(3).map(|p| p.parse().unwrap()).collect();
    let header = [define("ORDO_VERSION_MAJOR"), define("ORDO_VERSION_MINOR"), define("ORDO_VERSION_PATCH")];
    assert_eq!(header.to_vec(), crate_version, "update the version macros in ordo.h");
    assert_eq!(ordo_cuda_capi::ordo_version_number(), header[0] * 1_000_000 + header[1] * 1_000 + header[2]);
}

/// Each `_resolved` export is its plain export with a resolver last, and ordo.h routes the plain
/// call to it, with the file's own `cudaGetKernel`, where the CUDA runtime's header was included.
#[test]
fn resolved_exports_are_the_plain_ones_with_a_resolver_and_the_header_routes_to_them() {
    let rust = rust_abi();
    let resolved: Vec<&String> = rust.functions.keys().filter(|n| n.ends_with("_resolved")).collect();
    assert_eq!(resolved.len(), 2, "{resolved:?}");
    let block_start = HEADER.find("#if defined(CUDART_VERSION) && !defined(ORDO_NO_KERNEL_RESOLVER)").unwrap();
    let block = &HEADER[block_start..block_start + HEADER[block_start..].find("#endif").unwrap()];
    for name in resolved {
        let plain = name.trim_end_matches("_resolved");
        let (ret, params) = &rust.functions[name];
        let (plain_ret, plain_params) = rust.functions.get(plain).unwrap_or_else(|| panic!("{name}: no {plain}"));
        assert_eq!(ret, plain_ret, "{name}");
        assert_eq!(params.split_last(), Some((&"ordo_kernel_resolver_fn".to_string(), &plain_params[..])), "{name}");
        let route = format!("#define {plain}(...) {name}(__VA_ARGS__, ordo_kernel_resolver_here)");
        assert!(block.contains(&route), "ordo.h lacks `{route}` in its CUDA runtime block");
    }
}
