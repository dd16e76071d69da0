//! The global-memory accesses of a body, and where their addresses come from.
//!
//! An access is an instruction that reads or writes memory that may be global: `ld`/`ldu`/`st`/
//! `atom`/`red` with `.global`, or with no state space (generic: "may be global" unless its
//! address comes only from a `.shared`/`.local`/`.const` window); `cp.async` copies whose source
//! or destination is `.global` (TMA included); `discard.global`; texture and surface
//! instructions; and calls (what a called function touches is not followed). Not followed:
//! `multimem` and instructions that take no address (`prefetch` is left out: it changes no data).
//!
//! Addresses are followed through registers, flow-insensitively: each register gets the union of
//! what its definitions derive from, to a fixed point. `ld.param` gives the parameter,
//! `cvta.to.global` marks it a global pointer, arithmetic (`add`, `mad`, `mul.wide`, `mov`, `cvt`,
//! ...) unites its operands' origins, a load from memory gives "a pointer loaded from memory", a
//! module variable its name. Scalars mix in (an index from parameter `n`): a report names the
//! parameters that went through `cvta.to.global` where there are any, else the 64-bit ones, else
//! all of them.

use super::body::{Inst, KernelBody};
use std::collections::{BTreeSet, HashMap};

/// What a value derives from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// Kernel parameter `index`; `global` once it went through `cvta.to.global`.
    Param {
        /// The parameter's index.
        index: usize,
        /// Converted to a global address.
        global: bool,
    },
    /// A module variable of a state space (`global`, `shared`, `const`, `local`).
    Symbol {
        /// Its name.
        name: String,
        /// Its state space.
        space: String,
    },
    /// A generic address into a non-global window (`cvta.shared`, `cvta.local`, `cvta.const`).
    Window(String),
    /// A value loaded from memory (a pointer read from a table).
    Loaded,
    /// A call's return value.
    Returned,
}

/// How an access touches memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Reads.
    Load,
    /// Writes.
    Store,
    /// Reads and writes (atomics, reductions, calls).
    Atomic,
}

impl Kind {
    /// Whether it reads.
    pub fn reads(self) -> bool {
        matches!(self, Kind::Load | Kind::Atomic)
    }

    /// Whether it writes.
    pub fn writes(self) -> bool {
        matches!(self, Kind::Store | Kind::Atomic)
    }

    /// `load`, `store`, `atomic`.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Load => "load",
            Kind::Store => "store",
            Kind::Atomic => "atomic",
        }
    }
}

/// Whether the access is to global memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Space {
    /// `.global` (or a generic address known to be global).
    Global,
    /// A generic address that may be global.
    MaybeGlobal,
}

/// Where an address comes from, as a report names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Base {
    /// Kernel parameter `index`.
    Param(usize),
    /// A module variable.
    Symbol(String),
    /// Not followed: why.
    Unknown(String),
}

/// One access.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// The instruction's index in the body.
    pub index: usize,
    /// Reads, writes or both.
    pub kind: Kind,
    /// Global, or may be.
    pub space: Space,
    /// Where its address comes from (one or more).
    pub bases: Vec<Base>,
}

/// The origins of every register of a body.
pub struct Origins(HashMap<String, BTreeSet<Origin>>);

/// Instructions whose first operand is not a destination (an address operand `[...]` never is).
fn writes_no_register(inst: &Inst) -> bool {
    let first_is_address = inst.operands.first().is_some_and(|o| o.starts_with('['));
    first_is_address
        || matches!(
            inst.base(),
            "st" | "red"
                | "bra"
                | "brx"
                | "ret"
                | "exit"
                | "trap"
                | "bar"
                | "barrier"
                | "membar"
                | "fence"
                | "griddepcontrol"
                | "prefetch"
                | "prefetchu"
                | "cp"
                | "nanosleep"
                | "sust"
                | "sured"
                | "discard"
                | "pmevent"
                | "stmatrix"
        )
}

/// The registers named in an operand (`%rd1` of `[%rd1+8]`; both of `{%r1, %r2}`).
fn registers(operand: &str) -> Vec<&str> {
    let b = operand.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let start = i;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(&operand[start..i]);
        } else {
            i += 1;
        }
    }
    out
}

/// The identifiers in an operand that are not registers and not numbers (`table` of `[table+4]`).
fn names(operand: &str) -> Vec<&str> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'))
        .filter(|w| !w.is_empty() && !w.starts_with('%') && !w.as_bytes()[0].is_ascii_digit())
        .collect()
}

/// The state spaces named among an opcode's qualifiers, in order (`shared::cta` as `shared`).
fn spaces(inst: &Inst) -> Vec<&str> {
    inst.opcode
        .split('.')
        .skip(1)
        .map(|q| q.split("::").next().unwrap_or(q))
        .filter(|q| matches!(*q, "global" | "shared" | "local" | "const" | "param" | "tex" | "shared_cluster"))
        .collect()
}

impl Origins {
    /// The origins of the registers of `k`, to a fixed point.
    pub fn of(k: &KernelBody) -> Origins {
        let mut map: HashMap<String, BTreeSet<Origin>> = HashMap::new();
        loop {
            let mut changed = false;
            for inst in &k.insts {
                let Some((dests, value)) = Self::transfer(k, inst, &map) else { continue };
                for d in dests {
                    let entry = map.entry(d.to_owned()).or_default();
                    for o in &value {
                        changed |= entry.insert(o.clone());
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Origins(map)
    }

    /// What an instruction writes to which registers, from the origins known so far.
    fn transfer<'i>(
        k: &KernelBody,
        inst: &'i Inst,
        map: &HashMap<String, BTreeSet<Origin>>,
    ) -> Option<(Vec<&'i str>, BTreeSet<Origin>)> {
        if inst.base() == "call" {
            // call (%ret), f, (%args): the return value is not followed.
            let ret = inst.operands.first().filter(|o| o.starts_with('('))?;
            return Some((registers(ret), BTreeSet::from([Origin::Returned])));
        }
        if writes_no_register(inst) {
            return None;
        }
        let (dest, sources) = inst.operands.split_first()?;
        let dests = registers(dest);
        let of = |reg: &str| map.get(reg).cloned().unwrap_or_default();
        let mut value = BTreeSet::new();
        match inst.base() {
            "ld" | "ldu" if inst.has("param") => {
                for n in sources.iter().flat_map(|s| names(s)) {
                    if let Some(index) = k.param_index(n) {
                        value.insert(Origin::Param { index, global: false });
                    }
                }
            }
            "ld" | "ldu" | "atom" | "tex" | "tld4" | "suld" | "ldmatrix" => {
                value.insert(Origin::Loaded);
            }
            "cvta" => {
                let to_global = inst.has("to") && inst.has("global");
                let window = spaces(inst).into_iter().find(|s| *s != "global");
                for r in sources.iter().flat_map(|s| registers(s)) {
                    for o in of(r) {
                        value.insert(match (o, window) {
                            (_, Some(space)) => Origin::Window(space.to_owned()),
                            (Origin::Param { index, .. }, None) if to_global || inst.has("global") => {
                                Origin::Param { index, global: true }
                            }
                            (o, _) => o,
                        });
                    }
                }
                for n in sources.iter().flat_map(|s| names(s)) {
                    if let Some(space) = k.symbol_space(n) {
                        value.insert(Origin::Symbol { name: n.to_owned(), space: space.to_owned() });
                    }
                }
            }
            _ => {
                for s in sources {
                    for r in registers(s) {
                        value.extend(of(r));
                    }
                    for n in names(s) {
                        if let Some(index) = k.param_index(n) {
                            // `mov.b64 %rd1, k_param_0`: the parameter's address (a tensor map's).
                            value.insert(Origin::Param { index, global: false });
                        } else if let Some(space) = k.symbol_space(n) {
                            value.insert(Origin::Symbol { name: n.to_owned(), space: space.to_owned() });
                        }
                    }
                }
            }
        }
        Some((dests, value))
    }

    /// The origins of an address operand (`[%rd4+8]`, `[table]`).
    pub fn of_address(&self, k: &KernelBody, operand: &str) -> BTreeSet<Origin> {
        let inner = operand.trim().trim_start_matches('[').trim_end_matches(']');
        // A texture or tensor operand `[tmap, {%r1, %r2}]`: its first part.
        let first = inner.split(',').next().unwrap_or(inner);
        let mut out = BTreeSet::new();
        for r in registers(first) {
            out.extend(self.0.get(r).cloned().unwrap_or_default());
        }
        for n in names(first) {
            if let Some(index) = k.param_index(n) {
                out.insert(Origin::Param { index, global: false });
            } else if let Some(space) = k.symbol_space(n) {
                out.insert(Origin::Symbol { name: n.to_owned(), space: space.to_owned() });
            }
        }
        out
    }
}

/// The bases a report names for a set of origins (see the module docs).
fn bases(k: &KernelBody, origins: &BTreeSet<Origin>) -> Vec<Base> {
    let mut params_global = BTreeSet::new();
    let mut params_wide = BTreeSet::new();
    let mut params_any = BTreeSet::new();
    let mut out = Vec::new();
    for o in origins {
        match o {
            Origin::Param { index, global } => {
                params_any.insert(*index);
                if *global {
                    params_global.insert(*index);
                }
                if !matches!(k.params.get(*index).and_then(|p| p.bytes), Some(b) if b < 8) {
                    params_wide.insert(*index);
                }
            }
            Origin::Symbol { name, space } if space == "global" => out.push(Base::Symbol(name.clone())),
            Origin::Symbol { .. } | Origin::Window(_) => {}
            Origin::Loaded => out.push(Base::Unknown("a pointer loaded from memory".into())),
            Origin::Returned => out.push(Base::Unknown("a value a call returned".into())),
        }
    }
    let params = [params_global, params_wide, params_any].into_iter().find(|s| !s.is_empty()).unwrap_or_default();
    let mut all: Vec<Base> = params.into_iter().map(Base::Param).collect();
    all.extend(out);
    all.dedup();
    all
}

/// The space of a generic access from its address's origins: `None` when they are all
/// non-global windows or variables, `Global` when they are all global pointers or variables.
fn generic_space(origins: &BTreeSet<Origin>) -> Option<Space> {
    let non_global = |o: &Origin| match o {
        Origin::Window(_) => true,
        Origin::Symbol { space, .. } => space != "global",
        _ => false,
    };
    let global = |o: &Origin| match o {
        Origin::Param { global, .. } => *global,
        Origin::Symbol { space, .. } => space == "global",
        _ => false,
    };
    if origins.is_empty() {
        Some(Space::MaybeGlobal)
    } else if origins.iter().all(non_global) {
        None
    } else if origins.iter().all(global) {
        Some(Space::Global)
    } else {
        Some(Space::MaybeGlobal)
    }
}

/// The access an instruction makes, if it may touch global memory.
pub fn access_of(k: &KernelBody, origins: &Origins, index: usize) -> Option<Access> {
    let inst = &k.insts[index];
    let sp = spaces(inst);
    let address = |operand: usize| inst.operands.get(operand).map(|o| origins.of_address(k, o)).unwrap_or_default();
    let make = |kind: Kind, space: Space, origins: BTreeSet<Origin>| {
        let mut b = bases(k, &origins);
        if b.is_empty() {
            b.push(Base::Unknown("an address not derived from a parameter".into()));
        }
        Some(Access { index, kind, space, bases: b })
    };
    match inst.base() {
        "ld" | "ldu" | "st" | "atom" | "red" => {
            let kind = match inst.base() {
                "ld" | "ldu" => Kind::Load,
                "st" => Kind::Store,
                _ => Kind::Atomic,
            };
            // The address: `st`/`red` take it first, the others after their destination.
            let at = if matches!(inst.base(), "st" | "red") { 0 } else { 1 };
            let o = address(at);
            match sp.first() {
                Some(&"global") => make(kind, Space::Global, o),
                Some(_) => None,
                None => make(kind, generic_space(&o)?, o),
            }
        }
        "cp" => {
            // cp.async[.bulk][...].DST.SRC: the first space is where it writes, the second where it reads.
            let reduce = inst.opcode.starts_with("cp.reduce");
            match (sp.first(), sp.get(1)) {
                (Some(&"global"), _) => {
                    make(if reduce { Kind::Atomic } else { Kind::Store }, Space::Global, address(0))
                }
                (_, Some(&"global")) => make(Kind::Load, Space::Global, address(1)),
                _ => None,
            }
        }
        "tex" | "tld4" | "suld" => make(Kind::Load, Space::Global, address(1)),
        "sust" => make(Kind::Store, Space::Global, address(0)),
        // `discard.global.L2` leaves the lines' contents undefined: a write.
        "discard" if sp.first() == Some(&"global") => make(Kind::Store, Space::Global, address(0)),
        "sured" => make(Kind::Atomic, Space::Global, address(0)),
        "call" => {
            let callee = inst.operands.iter().find(|o| !o.starts_with('(')).cloned().unwrap_or_default();
            Some(Access {
                index,
                kind: Kind::Atomic,
                space: Space::MaybeGlobal,
                bases: vec![Base::Unknown(format!("a call to {callee}, whose accesses are not followed"))],
            })
        }
        _ => None,
    }
}

/// Every access of `k`, in order.
pub fn accesses(k: &KernelBody) -> Vec<Access> {
    let origins = Origins::of(k);
    (0..k.insts.len()).filter_map(|i| access_of(k, &origins, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accesses of kernel `k` with `params` and the body `text`, in a module with a shared
    /// `sm` and a global `gv`.
    fn accesses_in(params: &str, text: &str) -> Vec<Access> {
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n.shared .align 4 .b8 sm[64];\n.global .align 4 .b8 gv[64];\n.visible .entry k({params})\n{{\n{text}\n}}\n"
        );
        accesses(&KernelBody::parse(&ptx, "k").unwrap())
    }

    #[test]
    fn follows_parameters_through_cvta_and_arithmetic() {
        let a = accesses_in(
            ".param .u64 k_param_0, .param .u32 k_param_1",
            "\tld.param.u64 %rd1, [k_param_0];\n\tld.param.u32 %r1, [k_param_1];\n\tcvta.to.global.u64 %rd2, %rd1;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.nc.f32 %f1, [%rd4];\n\tst.global.f32 [%rd4+4], %f1;\n\tred.global.add.f32 [%rd4], %f1;\n\tld.shared.f32 %f2, [sm];\n\tst.global.u32 [gv+4], %r1;",
        );
        let got: Vec<(usize, Kind, Space, Vec<Base>)> =
            a.iter().map(|x| (x.index, x.kind, x.space, x.bases.clone())).collect();
        assert_eq!(
            got,
            vec![
                (5, Kind::Load, Space::Global, vec![Base::Param(0)]),
                (6, Kind::Store, Space::Global, vec![Base::Param(0)]),
                (7, Kind::Atomic, Space::Global, vec![Base::Param(0)]),
                (9, Kind::Store, Space::Global, vec![Base::Symbol("gv".into())]),
            ]
        );
    }

    #[test]
    fn generic_accesses_loaded_pointers_and_calls() {
        let a = accesses_in(
            ".param .u64 k_param_0",
            "\tld.param.u64 %rd1, [k_param_0];\n\tld.u64 %rd2, [%rd1];\n\tld.f32 %f1, [%rd2];\n\tmov.u64 %rd3, sm;\n\tcvta.shared.u64 %rd4, %rd3;\n\tst.f32 [%rd4], %f1;\n\tcall.uni (%rd5), helper, (%rd1);\n\tst.f32 [%rd5], %f1;",
        );
        assert_eq!(a.len(), 4, "{a:?}");
        assert_eq!((a[0].index, a[0].space, a[0].bases.clone()), (1, Space::MaybeGlobal, vec![Base::Param(0)]));
        assert_eq!(a[1].bases, vec![Base::Unknown("a pointer loaded from memory".into())]);
        // The store through the shared window is not global: left out.
        assert_eq!(a[2].index, 6);
        assert!(matches!(&a[2].bases[0], Base::Unknown(w) if w.contains("a call to helper")));
        assert_eq!(a[3].index, 7);
        assert_eq!(a[3].bases, vec![Base::Unknown("a value a call returned".into())]);
    }

    #[test]
    fn bulk_copies_tensor_maps_and_discards() {
        let a = accesses_in(
            ".param .align 64 .b8 k_param_0[128], .param .u64 k_param_1",
            "\tld.param.u64 %rd3, [k_param_1];\n\tcvta.to.global.u64 %rd2, %rd3;\n\tmov.b64 %rd1, k_param_0;\n\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];\n\tcp.async.ca.shared.global [%r1], [%rd2], 16;\n\tcp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r1], 64;\n\tdiscard.global.L2 [%rd2], 128;\n\tprefetch.global.L2 [%rd2];",
        );
        let got: Vec<(usize, Kind, Vec<Base>)> = a.into_iter().map(|x| (x.index, x.kind, x.bases)).collect();
        assert_eq!(
            got,
            vec![
                (3, Kind::Load, vec![Base::Param(0)]),
                (4, Kind::Load, vec![Base::Param(1)]),
                (5, Kind::Store, vec![Base::Param(1)]),
                (6, Kind::Store, vec![Base::Param(1)]),
            ]
        );
    }
}
