//! The shape of the generated bindings, read from their text: which fields a struct has, and the
//! sizes, alignments and field offsets bindgen's layout tests state. The build script emits a cfg
//! for each shape the hand-written constructors (`src/structs.rs`) choose between, refuses a shape
//! they do not know, and compares the layouts of the structs ordo hands to CUDA between the
//! bindings generated from the headers and the checked-in snapshot of the same major.
//!
//! Shared by the build script and by its tests (`tests/shape.rs`), so it takes text and never panics.

use std::collections::BTreeMap;

/// One `pub struct` or `pub union` of the bindings: its fields as `(name, type)`, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub is_union: bool,
    pub fields: Vec<(String, String)>,
}

impl Item {
    /// The type of field `name`, when the item has it.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, t)| t.as_str())
    }
}

/// The item `name` (`pub struct name {` or `pub union name {` at the start of a line).
pub fn item(text: &str, name: &str) -> Option<Item> {
    for (keyword, is_union) in [("pub struct ", false), ("pub union ", true)] {
        let head = format!("{keyword}{name} {{");
        let Some(start) = text.lines().position(|l| l == head) else { continue };
        let mut body = String::new();
        for line in text.lines().skip(start + 1) {
            if line == "}" {
                return Some(Item { is_union, fields: split_fields(&body) });
            }
            body.push_str(line.trim());
            body.push(' ');
        }
    }
    None
}

/// `pub a: T, pub b: U<V, W>,` into `[(a, T), (b, U<V, W>)]`: commas inside `<>`, `()` or `[]`
/// belong to a type.
fn split_fields(body: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes = body.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' => depth += 1,
            // `->` is not a closing bracket.
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 => {
                push_field(&body[start..i], &mut fields);
                start = i + 1;
            }
            _ => {}
        }
    }
    push_field(&body[start..], &mut fields);
    fields
}

fn push_field(decl: &str, fields: &mut Vec<(String, String)>) {
    let decl = decl.trim();
    let Some(decl) = decl.strip_prefix("pub ") else { return };
    if let Some((name, ty)) = decl.split_once(':') {
        fields.push((name.trim().to_string(), ty.trim().to_string()));
    }
}

/// What bindgen's layout tests say of one type: size, alignment, and the offsets of its named fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub size: Option<u64>,
    pub align: Option<u64>,
    pub offsets: BTreeMap<String, u64>,
}

/// Every layout stated in `text`, by type name. bindgen writes each fact as
/// `["Size of T"][::core::mem::size_of::<T>() - 8usize];` (likewise `Alignment of T` and
/// `Offset of field: T::f`), which the formatter may break across lines.
pub fn layouts(text: &str) -> BTreeMap<String, Layout> {
    let mut out: BTreeMap<String, Layout> = BTreeMap::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"") {
        rest = &rest[at + 1..];
        let Some(end) = rest.find('"') else { break };
        let what = &rest[..end];
        rest = &rest[end + 1..];
        let fact = what
            .strip_prefix("Size of ")
            .map(|n| (n, None))
            .or_else(|| what.strip_prefix("Alignment of ").map(|n| (n, Some(None))))
            .or_else(|| {
                let (n, f) = what.strip_prefix("Offset of field: ")?.split_once("::")?;
                Some((n, Some(Some(f))))
            });
        let Some((name, kind)) = fact else { continue };
        let Some(value) = stated_value(rest) else { continue };
        let layout = out.entry(name.to_string()).or_default();
        match kind {
            None => layout.size = Some(value),
            Some(None) => layout.align = Some(value),
            Some(Some(field)) => {
                layout.offsets.insert(field.to_string(), value);
            }
        }
    }
    out
}

/// The `N` of the `- Nusize]` that closes the assertion `rest` is inside of.
fn stated_value(rest: &str) -> Option<u64> {
    let close = rest.find("usize]")?;
    let expr = &rest[..close];
    if expr.contains(';') || expr.contains('"') {
        return None; // not an assertion: the statement ended, or another string began, first
    }
    let digits = expr.rsplit("- ").next()?.trim();
    digits.parse().ok()
}

/// The shape cfgs the constructors in `src/structs.rs` choose between.
pub const SHAPE_CFGS: &[&str] = &["mem_location_id_in_union"];

/// The shape cfgs `text` calls for, or why the bindings have a shape the constructors do not know.
pub fn shape_cfgs(text: &str) -> Result<Vec<&'static str>, String> {
    let mut cfgs = Vec::new();
    // cudaMemLocation: `{ type_, id }` up to CUDA 13.2; from 13.3 `id` is a member of an anonymous
    // union (13.4 adds `localized { deviceId, localityDomainId }` beside it).
    let loc = item(text, "cudaMemLocation").ok_or("the bindings have no struct cudaMemLocation")?;
    require(&loc, "cudaMemLocation", &["type_"])?;
    if loc.field("id").is_none() {
        let union_ty = loc.field("__bindgen_anon_1").unwrap_or_default();
        let in_union = union_ty == "cudaMemLocation__bindgen_ty_1"
            && item(text, union_ty).is_some_and(|u| u.is_union && u.field("id").is_some());
        if !in_union {
            return Err(unknown_shape(
                "cudaMemLocation",
                &loc,
                "a field `id`, or `id` in the anonymous union cudaMemLocation__bindgen_ty_1",
            ));
        }
        cfgs.push("mem_location_id_in_union");
    }
    // The conditional member of cudaGraphNodeParams' anonymous union (one shape in every release
    // so far: checked so that a new one is reported here, not as a type error in src/structs.rs).
    let params = item(text, "cudaGraphNodeParams").ok_or("the bindings have no struct cudaGraphNodeParams")?;
    require(&params, "cudaGraphNodeParams", &["type_"])?;
    let union_ok = params.field("__bindgen_anon_1") == Some("cudaGraphNodeParams__bindgen_ty_1")
        && item(text, "cudaGraphNodeParams__bindgen_ty_1")
            .is_some_and(|u| u.is_union && u.field("conditional") == Some("cudaConditionalNodeParams"));
    if !union_ok {
        return Err(unknown_shape(
            "cudaGraphNodeParams",
            &params,
            "`__bindgen_anon_1: cudaGraphNodeParams__bindgen_ty_1`, a union with `conditional: cudaConditionalNodeParams`",
        ));
    }
    let cond =
        item(text, "cudaConditionalNodeParams").ok_or("the bindings have no struct cudaConditionalNodeParams")?;
    require(&cond, "cudaConditionalNodeParams", &["handle", "type_", "size", "phGraph_out"])?;
    let props = item(text, "cudaMemPoolProps").ok_or("the bindings have no struct cudaMemPoolProps")?;
    require(&props, "cudaMemPoolProps", &["allocType", "handleTypes", "location"])?;
    Ok(cfgs)
}

fn require(item: &Item, name: &str, fields: &[&str]) -> Result<(), String> {
    match fields.iter().find(|f| item.field(f).is_none()) {
        None => Ok(()),
        Some(f) => Err(unknown_shape(name, item, &format!("a field `{f}`"))),
    }
}

fn unknown_shape(name: &str, item: &Item, expected: &str) -> String {
    let fields: Vec<&str> = item.fields.iter().map(|(n, _)| n.as_str()).collect();
    format!(
        "{name} has a shape ordo-cuda-sys does not know (fields: {}); expected {expected}. \
         src/structs.rs and build/shape.rs need a form for it.",
        fields.join(", ")
    )
}

/// The structs ordo hands to CUDA by value or pointer: a snapshot of a major serves another release
/// of it only if each has the same size, alignment and offsets there.
pub const PASSED_TO_CUDA: &[&str] = &[
    "cudaMemLocation",
    "cudaMemAccessDesc",
    "cudaMemPoolProps",
    "cudaLaunchAttribute_st",
    "cudaLaunchAttributeValue",
    "cudaLaunchConfig_st",
    "dim3",
    "cudaGraphNodeParams",
    "cudaKernelNodeParams",
    "cudaMemsetParams",
    "cudaMemcpy3DParms",
    "cudaPitchedPtr",
    "cudaPos",
    "cudaExtent",
    "cudaGraphEdgeData_st",
    "cudaGraphInstantiateParams_st",
    "cudaGraphExecUpdateResultInfo_st",
    "cudaDeviceProp",
    "cudaFuncAttributes",
    "cudaPointerAttributes",
    "cudaMemcpyAttributes",
];

/// Structs ordo writes inside `cudaGraphNodeParams`' fixed-size union: they may grow at their end
/// between releases (CUDA 13.1 added an execution context), so only their common fields' offsets
/// must agree.
pub const INSIDE_NODE_PARAMS: &[&str] = &["cudaConditionalNodeParams"];

/// Where the layouts of the structs ordo hands to CUDA differ between `here` (the bindings of the
/// headers being built against) and `snapshot`, one sentence each. Fields named `reserved*` or
/// `pad*` are padding and not compared; a type or field that only one side has is not compared.
pub fn layout_differences(here: &str, snapshot: &str) -> Vec<String> {
    let (a, b) = (layouts(here), layouts(snapshot));
    let mut out = Vec::new();
    for (name, whole) in PASSED_TO_CUDA.iter().map(|n| (n, true)).chain(INSIDE_NODE_PARAMS.iter().map(|n| (n, false))) {
        let (Some(x), Some(y)) = (a.get(*name), b.get(*name)) else { continue };
        if whole && (x.size != y.size || x.align != y.align) {
            out.push(format!(
                "{name}: size/align {}/{} here, {}/{} in the snapshot",
                show(x.size),
                show(x.align),
                show(y.size),
                show(y.align)
            ));
        }
        for (field, off) in &x.offsets {
            if field.starts_with("reserved") || field.starts_with("pad") {
                continue;
            }
            if let Some(other) = y.offsets.get(field) {
                if other != off {
                    out.push(format!("{name}::{field}: offset {off} here, {other} in the snapshot"));
                }
            }
        }
    }
    out
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "?".to_string(), |v| v.to_string())
}

/// The `CUDART_VERSION` a snapshot states in its header line (`... (CUDART_VERSION 13050) ...`).
pub fn snapshot_version(text: &str) -> Option<u32> {
    let at = text.find("(CUDART_VERSION ")? + "(CUDART_VERSION ".len();
    let digits: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
