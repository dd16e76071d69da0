//! A kernel's PTX as the check reads it: its parameters, and its body as a list of instructions,
//! each with its line in the module, the labels that name it, its guard, opcode and operands.
//! Directives inside the body (`.reg`, `.local`, `.pragma`) are left out; scope braces are
//! ignored. Built on the same comment blanking and statement splitting as [`crate::ptx`], so the
//! line numbers are those of the text as given.

use crate::ptx::{self, blank_comments, entries, find_entry, guard_and_opcode, is_ident_byte, statements};
use crate::spec::SpecError;

/// A kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name in the PTX (`k_param_0`).
    pub name: String,
    /// Its size in bytes, where the declaration says (`.u64`: 8; `.align 8 .b8 p[16]`: 16).
    pub bytes: Option<usize>,
}

/// An instruction's guard: `@%p` or `@!%p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    /// The predicate register.
    pub pred: String,
    /// `@!`.
    pub negated: bool,
}

/// One instruction of a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inst {
    /// Its line in the module (1-based).
    pub line: usize,
    /// The labels just before it.
    pub labels: Vec<String>,
    /// Its guard, if any.
    pub guard: Option<Guard>,
    /// The opcode with its qualifiers: `ld.global.nc.f32`.
    pub opcode: String,
    /// The operands, split at top-level commas: `%f1`, `[%rd4+8]`, `{%r1, %r2}`.
    pub operands: Vec<String>,
    /// The instruction as written, whitespace collapsed (for reports).
    pub text: String,
}

impl Inst {
    /// The opcode's first part: `ld` of `ld.global.f32`.
    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Whether the opcode has the qualifier `q` (`global` in `ld.global.f32`).
    pub fn has(&self, q: &str) -> bool {
        self.opcode.split('.').skip(1).any(|p| p == q)
    }

    /// `griddepcontrol.wait`.
    pub fn is_wait(&self) -> bool {
        self.opcode == "griddepcontrol.wait"
    }

    /// `griddepcontrol.launch_dependents`.
    pub fn is_trigger(&self) -> bool {
        self.opcode == "griddepcontrol.launch_dependents"
    }
}

/// A kernel of a PTX module, read for the check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelBody {
    /// Its name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// Its instructions, in order.
    pub insts: Vec<Inst>,
    /// Labels that name no instruction (at the end of the body): branching there leaves the kernel.
    pub end_labels: Vec<String>,
    /// Module-scope variables and their state space (`.global`, `.shared`, `.const`, `.local`).
    pub symbols: Vec<(String, String)>,
    /// The module's `.target` (`sm_90` gives 90), if it says.
    pub target_sm: Option<u32>,
    /// The module's `.version`.
    pub version: Option<(u32, u32)>,
}

impl KernelBody {
    /// Kernel `kernel` of module `ptx`.
    pub fn parse(ptx: &str, kernel: &str) -> Result<KernelBody, SpecError> {
        let masked = blank_comments(ptx);
        let all = entries(&masked)?;
        let e = find_entry(&all, kernel)?;
        let params = parse_params(&masked[e.params_start..e.params_end]);
        let body_start = e.body_open + 1;
        let body = &masked[body_start..e.body_close];
        let line_at = line_index(&masked);
        let mut insts = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        for st in statements(body) {
            pending.extend(labels_of(st.prefix));
            let (guard, opcode_and_operands) = guard_and_opcode(st.instruction);
            let t = opcode_and_operands.trim();
            if t.is_empty() || t.starts_with('.') {
                continue;
            }
            if !st.terminated {
                return Err(SpecError::new(format!(
                    "PTX: kernel {kernel}: an instruction without its ';' at line {}",
                    line_at(body_start + st.offset + st.prefix.len())
                )));
            }
            let split = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
            let (opcode, rest) = (&t[..split], t[split..].trim());
            let lead = st.instruction.len() - st.instruction.trim_start().len();
            let line = line_at(body_start + st.offset + st.prefix.len() + lead);
            insts.push(Inst {
                line,
                labels: std::mem::take(&mut pending),
                guard: parse_guard(guard),
                opcode: opcode.to_owned(),
                operands: split_top(rest),
                text: st.instruction.split_whitespace().collect::<Vec<_>>().join(" "),
            });
        }
        let target_sm = masked.find(".target").and_then(|at| {
            let rest = masked[at + 7..].trim_start();
            let digits: String = rest.strip_prefix("sm_")?.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        Ok(KernelBody {
            name: kernel.to_owned(),
            params,
            insts,
            end_labels: pending,
            symbols: module_symbols(&masked, &all),
            target_sm,
            version: ptx::version(&masked),
        })
    }

    /// The index of parameter `name`.
    pub fn param_index(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// The state space of module variable `name`.
    pub fn symbol_space(&self, name: &str) -> Option<&str> {
        self.symbols.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_str())
    }
}

/// `line_at(byte)`: the 1-based line of a byte offset of `text`.
fn line_index(text: &str) -> impl Fn(usize) -> usize + '_ {
    let starts: Vec<usize> =
        core::iter::once(0).chain(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1)).collect();
    move |at| starts.partition_point(|&s| s <= at)
}

/// The labels of a statement's prefix (`$L__BB0_2:`), scope braces and whitespace skipped.
fn labels_of(prefix: &str) -> Vec<String> {
    prefix
        .split(':')
        .filter_map(|part| {
            let name = part.trim_matches(|c: char| c.is_ascii_whitespace() || c == '{' || c == '}');
            (!name.is_empty() && name.bytes().all(is_ident_byte)).then(|| name.to_owned())
        })
        .collect()
}

fn parse_guard(guard: &str) -> Option<Guard> {
    let g = guard.strip_prefix('@')?;
    let (negated, pred) = match g.strip_prefix('!') {
        Some(p) => (true, p),
        None => (false, g),
    };
    Some(Guard { pred: pred.to_owned(), negated })
}

/// `text` split at commas outside `[]`, `{}` and `()`, each part trimmed.
pub(crate) fn split_top(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(text[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = text[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last.to_owned());
    }
    out
}

/// The parameters of a parameter list (`.param .u64 a, .param .align 8 .b8 s[16]`).
fn parse_params(list: &str) -> Vec<Param> {
    split_top(list)
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            let words: Vec<&str> = p.split_whitespace().collect();
            let last = words.last().copied().unwrap_or("");
            let (name, count) = match last.split_once('[') {
                Some((n, c)) => (n, c.trim_end_matches(']').trim().parse::<usize>().ok()),
                None => (last, Some(1)),
            };
            let width = words.iter().find_map(|w| type_bytes(w));
            Param { name: name.to_owned(), bytes: width.zip(count).map(|(w, c)| w * c) }
        })
        .collect()
}

/// The size of a PTX fundamental type (`.u64`: 8).
fn type_bytes(word: &str) -> Option<usize> {
    let t = word.strip_prefix('.')?;
    let bits: usize = t.get(1..)?.parse().ok()?;
    matches!(t.as_bytes().first(), Some(b'u' | b's' | b'b' | b'f')).then_some(bits / 8)
}

/// Module-scope variables (outside every entry and function body) and their state spaces.
fn module_symbols(masked: &str, entries: &[ptx::Entry]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // Module scope: the text outside entry bodies (function bodies have no module variables,
    // and a `.func` body's `.local` declarations are not looked for here).
    let mut from = 0;
    let mut spans = Vec::new();
    for e in entries {
        spans.push(&masked[from..e.body_open.min(masked.len())]);
        from = (e.body_close + 1).min(masked.len());
    }
    spans.push(&masked[from..]);
    for span in spans {
        for decl in span.split(';') {
            let words: Vec<&str> = decl.split_whitespace().collect();
            let Some(space) =
                words.iter().find(|w| matches!(**w, ".global" | ".shared" | ".const" | ".local")).copied()
            else {
                continue;
            };
            if words.iter().any(|w| w.starts_with(".entry") || w.starts_with(".func")) {
                continue;
            }
            if let Some(last) = words.last() {
                let name: String = last.chars().take_while(|c| c.is_ascii() && is_ident_byte(*c as u8)).collect();
                if !name.is_empty() {
                    out.push((name, space.trim_start_matches('.').to_owned()));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 8.0
.target sm_90
.address_size 64
.global .align 4 .b8 table[64];
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .align 8 .b8 k_param_1[16],
\t.param .u32 k_param_2
)
{
\t.reg .pred %p<2>;
\tld.param.u64 %rd1, [k_param_0]; // a comment; with a semicolon
$L__BB0_1:
\t@!%p1 bra $L__BB0_2;
\tst.global.v2.f32 [%rd1+8], {%f1, %f2};
$L__BB0_2:
}
";

    #[test]
    fn reads_params_lines_labels_guards_and_operands() {
        let k = KernelBody::parse(PTX, "k").unwrap();
        assert_eq!(k.params.len(), 3);
        assert_eq!((k.params[0].name.as_str(), k.params[0].bytes), ("k_param_0", Some(8)));
        assert_eq!((k.params[1].name.as_str(), k.params[1].bytes), ("k_param_1", Some(16)));
        assert_eq!(k.params[2].bytes, Some(4));
        assert_eq!(k.insts.len(), 3);
        assert_eq!((k.insts[0].line, k.insts[0].opcode.as_str()), (12, "ld.param.u64"));
        assert_eq!(k.insts[1].labels, vec!["$L__BB0_1"]);
        assert_eq!(k.insts[1].guard, Some(Guard { pred: "%p1".into(), negated: true }));
        assert_eq!(k.insts[2].operands, vec!["[%rd1+8]", "{%f1, %f2}"]);
        assert_eq!(k.insts[2].line, 15);
        assert_eq!(k.end_labels, vec!["$L__BB0_2"]);
        assert_eq!(k.symbols, vec![("table".to_owned(), "global".to_owned())]);
        assert_eq!((k.target_sm, k.version), (Some(90), Some((8, 0))));
        assert!(KernelBody::parse(PTX, "nope").unwrap_err().to_string().contains("the module has k"));
    }
}
