//! Stamps added to a kernel given as PTX, so that the GPU gaps of a kernel that writes none can be
//! measured: [`instrument`] appends to the module a copy of the kernel, named with
//! [`STAMPED_SUFFIX`], that takes one more parameter, a pointer to its launch's stamp slots, and
//! writes into them what a self-stamping kernel writes (`spec::args`, `stamps`): per block, three
//! `u64` of `%globaltimer` at `slots[3 * block + 0 / 1 / 2]`:
//! - entry: thread (0, 0, 0) of the block, first thing after the kernel's declarations (a store);
//! - release: after each `griddepcontrol.wait`, one lane of each warp (`red.min`); slots left at
//!   their initial `u64::MAX` mean the kernel has no wait. Another warp may pass its wait before
//!   thread 0 stamps entry, so release may precede entry by the warps' start skew;
//! - end: at every `ret` and `exit`, one lane of each warp (`red.max`), so the block's last warp to
//!   leave gives its end.
//!
//! The original kernel is left as it was; the copy computes the same results. What the copy adds
//! is a few dozen instructions at entry and exit, one atomic per warp, and five registers; the
//! slot address is recomputed where it is needed, so no register stays live across the body.
//!
//! The rewriting is textual and deliberately small: comments are blanked, the entry found by
//! name, its parameter list extended, its body's statements split at `;` with their leading labels
//! and scope braces kept, `ret`/`exit` (predicated or not) turned into a branch to one exit block.
//! A wait inside a `.func` the kernel calls is not seen (nvcc inlines `cudaGridDependencySynchronize`).
//! Needs PTX ISA 6.2 (`activemask`) and `sm_32` (64-bit `red.min`/`red.max`).

use crate::spec::SpecError;

/// The stamped copy of kernel `k` is named `k` followed by this.
pub const STAMPED_SUFFIX: &str = "__ordo_stamped";

/// A module with a stamped copy of one of its kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instrumented {
    /// The whole module, the copy appended after the original kernel.
    pub ptx: String,
    /// The copy's name.
    pub stamped_name: String,
    /// Whether the kernel contains `griddepcontrol.wait`.
    pub has_wait: bool,
    /// Whether the kernel contains `griddepcontrol.launch_dependents`.
    pub has_trigger: bool,
}

/// `text` with comments (`// ...`, `/* ... */`) replaced by spaces (line breaks kept), so that byte
/// offsets stay those of `text`; string literals are kept as they are.
pub(crate) fn blank_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                for c in &mut out[i..end] {
                    if *c != b'\n' {
                        *c = b' ';
                    }
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    // Only ASCII bytes were replaced (by spaces), so the text is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

pub(crate) fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'%'
}

/// One `.entry` with a body: byte offsets into the text.
pub(crate) struct Entry {
    pub(crate) name: String,
    /// Just after `(`.
    pub(crate) params_start: usize,
    /// At `)`.
    pub(crate) params_end: usize,
    /// At the body's `{`.
    pub(crate) body_open: usize,
    /// At the body's matching `}`.
    pub(crate) body_close: usize,
}

/// The entries with bodies in `masked` (comment-blanked PTX).
pub(crate) fn entries(masked: &str) -> Result<Vec<Entry>, SpecError> {
    let b = masked.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = masked[from..].find(".entry").map(|p| from + p) {
        from = at + 6;
        let boundary_before = at == 0 || !is_ident_byte(b[at - 1]) && b[at - 1] != b'.';
        let boundary_after = b.get(at + 6).is_some_and(|c| c.is_ascii_whitespace());
        if !boundary_before || !boundary_after {
            continue;
        }
        let mut i = at + 6;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let name_start = i;
        while i < b.len() && is_ident_byte(b[i]) {
            i += 1;
        }
        let name = masked[name_start..i].to_owned();
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if name.is_empty() || b.get(i) != Some(&b'(') {
            return Err(SpecError::new(format!("PTX: a .entry without a parameter list at byte {at}")));
        }
        let params_start = i + 1;
        let params_end = masked[params_start..]
            .find(')')
            .map(|p| params_start + p)
            .ok_or_else(|| SpecError::new(format!("PTX: the parameter list of {name} is not closed")))?;
        // A prototype ends with ';' before any '{'.
        let rest = &masked[params_end..];
        let (Some(open), semi) = (rest.find('{'), rest.find(';')) else {
            continue;
        };
        if semi.is_some_and(|s| s < open) {
            continue;
        }
        let body_open = params_end + open;
        let mut depth = 0usize;
        let mut body_close = None;
        for (k, &c) in b.iter().enumerate().skip(body_open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        body_close = Some(k);
                        break;
                    }
                }
                _ => {}
            }
        }
        let body_close = body_close.ok_or_else(|| SpecError::new(format!("PTX: the body of {name} is not closed")))?;
        from = body_close;
        out.push(Entry { name, params_start, params_end, body_open, body_close });
    }
    Ok(out)
}

/// The entry named `kernel` among `all`; an error naming the module's kernels if there is none.
pub(crate) fn find_entry<'a>(all: &'a [Entry], kernel: &str) -> Result<&'a Entry, SpecError> {
    all.iter().find(|e| e.name == kernel).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
        SpecError::new(format!("PTX: no kernel {kernel:?}; the module has {}", names.join(", ")))
    })
}

/// The names of the kernels (`.entry` with a body) in `ptx`.
pub fn entry_names(ptx: &str) -> Result<Vec<String>, SpecError> {
    Ok(entries(&blank_comments(ptx))?.into_iter().map(|e| e.name).collect())
}

/// The PTX ISA version the module declares (`.version X.Y`), as `(X, Y)`.
pub(crate) fn version(masked: &str) -> Option<(u32, u32)> {
    let at = masked.find(".version")?;
    let rest = masked[at + 8..].trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
    let (major, minor) = rest[..end].split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// One statement of a body: leading labels and scope braces (`prefix`), then the instruction or
/// directive, then its `;` (absent for text after the last one).
pub(crate) struct Statement<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) instruction: &'a str,
    pub(crate) terminated: bool,
    /// Where `prefix` starts in the body.
    pub(crate) offset: usize,
}

/// Splits a (comment-blanked) body into statements.
pub(crate) fn statements(body: &str) -> Vec<Statement<'_>> {
    let mut out = Vec::new();
    let mut rest = body;
    let mut offset = 0;
    while !rest.is_empty() {
        let (raw, terminated, next) = match rest.find(';') {
            Some(p) => (&rest[..p], true, &rest[p + 1..]),
            None => (rest, false, ""),
        };
        // The prefix: whitespace, `{`, `}` and `label:` at the start.
        let bytes = raw.as_bytes();
        let mut i = 0;
        loop {
            while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'{' || bytes[i] == b'}') {
                i += 1;
            }
            let mut j = i;
            while j < bytes.len() && is_ident_byte(bytes[j]) {
                j += 1;
            }
            if j > i && bytes.get(j) == Some(&b':') {
                i = j + 1;
                continue;
            }
            break;
        }
        out.push(Statement { prefix: &raw[..i], instruction: &raw[i..], terminated, offset });
        offset += raw.len() + usize::from(terminated);
        rest = next;
    }
    out
}

/// The optional guard (`@%p`, `@!%p`) and the opcode of an instruction.
pub(crate) fn guard_and_opcode(instruction: &str) -> (&str, &str) {
    let t = instruction.trim();
    if let Some(rest) = t.strip_prefix('@') {
        let end = rest.find(|c: char| c.is_ascii_whitespace()).unwrap_or(rest.len());
        let guard = &t[..end + 1];
        (guard, rest[end..].trim())
    } else {
        ("", t)
    }
}

/// The literal of [`BLOCK_INDEX`], for `concat!`.
macro_rules! block_index {
    () => {
        "
\tmov.u32 \t%__ordo_u, %ctaid.z;
\tmov.u32 \t%__ordo_v, %nctaid.y;
\tmul.wide.u32 \t%__ordo_b, %__ordo_u, %__ordo_v;
\tmov.u32 \t%__ordo_u, %ctaid.y;
\tcvt.u64.u32 \t%__ordo_c, %__ordo_u;
\tadd.u64 \t%__ordo_b, %__ordo_b, %__ordo_c;
\tmov.u32 \t%__ordo_v, %nctaid.x;
\tcvt.u64.u32 \t%__ordo_c, %__ordo_v;
\tmul.lo.u64 \t%__ordo_b, %__ordo_b, %__ordo_c;
\tmov.u32 \t%__ordo_u, %ctaid.x;
\tcvt.u64.u32 \t%__ordo_c, %__ordo_u;
\tadd.u64 \t%__ordo_b, %__ordo_b, %__ordo_c;"
    };
}

/// The linear index of this block (x fastest), into `%__ordo_b` (clobbers `%__ordo_c`,
/// `%__ordo_u`, `%__ordo_v`): the stamps' slot and the dynamic check's delayed blocks.
pub(crate) const BLOCK_INDEX: &str = block_index!();

/// The stamp slot address of this block, into `%__ordo_a` (clobbers `%__ordo_b`, `%__ordo_c`,
/// `%__ordo_u`, `%__ordo_v`).
const SLOT: &str = concat!(
    "
\tld.param.u64 \t%__ordo_a, [__ordo_stamps];
\tcvta.to.global.u64 \t%__ordo_a, %__ordo_a;",
    block_index!(),
    "
\tmul.lo.u64 \t%__ordo_b, %__ordo_b, 24;
\tadd.u64 \t%__ordo_a, %__ordo_a, %__ordo_b;"
);

/// `%__ordo_p` true in the lowest active lane of the warp.
const ELECT: &str = "
\tactivemask.b32 \t%__ordo_u;
\tmov.u32 \t%__ordo_v, %lanemask_lt;
\tand.b32 \t%__ordo_v, %__ordo_v, %__ordo_u;
\tsetp.eq.u32 \t%__ordo_p, %__ordo_v, 0;";

const DECLARATIONS: &str = "
\t.reg .b64 \t%__ordo_t;
\t.reg .b64 \t%__ordo_a;
\t.reg .b64 \t%__ordo_b;
\t.reg .b64 \t%__ordo_c;
\t.reg .b32 \t%__ordo_u;
\t.reg .b32 \t%__ordo_v;
\t.reg .pred \t%__ordo_p;";

fn entry_stamp() -> String {
    format!(
        "\n\t// ordo-measure: entry stamp\n\tmov.u64 \t%__ordo_t, %globaltimer;{SLOT}
\tmov.u32 \t%__ordo_u, %tid.x;
\tmov.u32 \t%__ordo_v, %tid.y;
\tor.b32 \t%__ordo_u, %__ordo_u, %__ordo_v;
\tmov.u32 \t%__ordo_v, %tid.z;
\tor.b32 \t%__ordo_u, %__ordo_u, %__ordo_v;
\tsetp.eq.u32 \t%__ordo_p, %__ordo_u, 0;
\t@%__ordo_p st.global.u64 \t[%__ordo_a], %__ordo_t;\n"
    )
}

fn release_stamp() -> String {
    format!(
        "\n\t// ordo-measure: release stamp\n\tmov.u64 \t%__ordo_t, %globaltimer;{SLOT}{ELECT}
\t@%__ordo_p red.global.min.u64 \t[%__ordo_a+8], %__ordo_t;\n"
    )
}

fn exit_block() -> String {
    format!(
        "\n__ordo_exit:\n\t// ordo-measure: end stamp\n\tmov.u64 \t%__ordo_t, %globaltimer;{SLOT}{ELECT}
\t@%__ordo_p red.global.max.u64 \t[%__ordo_a+16], %__ordo_t;
\tret;\n"
    )
}

/// Whether kernel `kernel` of `ptx` contains `griddepcontrol.wait`.
pub fn contains_wait(ptx: &str, kernel: &str) -> Result<bool, SpecError> {
    Ok(instrument(ptx, kernel)?.has_wait)
}

/// `ptx` with a stamped copy of `kernel` appended (see the [module docs](self)).
pub fn instrument(ptx: &str, kernel: &str) -> Result<Instrumented, SpecError> {
    let masked = blank_comments(ptx);
    let all = entries(&masked)?;
    let e = find_entry(&all, kernel)?;
    if version(&masked).is_some_and(|v| v < (6, 2)) {
        return Err(SpecError::new("PTX: the stamps need PTX ISA 6.2 or later (.version)"));
    }
    let stamped_name = format!("{kernel}{STAMPED_SUFFIX}");
    if all.iter().any(|x| x.name == stamped_name) {
        return Err(SpecError::new(format!("PTX: the module already has a kernel named {stamped_name}")));
    }
    let params = masked[e.params_start..e.params_end].trim_end();
    let params = if params.trim().is_empty() {
        "\n\t.param .u64 __ordo_stamps\n".to_owned()
    } else {
        format!("{params},\n\t.param .u64 __ordo_stamps\n")
    };
    let directives = &masked[e.params_end + 1..e.body_open];
    let body = &masked[e.body_open + 1..e.body_close];

    let mut out_body = String::with_capacity(body.len() + 4096);
    out_body.push_str(DECLARATIONS);
    let (mut has_wait, mut has_trigger, mut entry_done) = (false, false, false);
    for st in statements(body) {
        let (guard, opcode) = guard_and_opcode(st.instruction);
        let directive = opcode.starts_with('.') || opcode.is_empty();
        if !entry_done && !directive {
            out_body.push_str(&entry_stamp());
            entry_done = true;
        }
        out_body.push_str(st.prefix);
        let op_name = opcode.split(|c: char| c.is_ascii_whitespace()).next().unwrap_or("");
        match op_name {
            "ret" | "ret.uni" | "exit" if st.terminated => {
                let pad = &st.instruction[..st.instruction.len() - st.instruction.trim_start().len()];
                out_body.push_str(pad);
                if guard.is_empty() {
                    out_body.push_str("bra.uni \t__ordo_exit;");
                } else {
                    out_body.push_str(&format!("{guard} bra \t__ordo_exit;"));
                }
                continue;
            }
            "griddepcontrol.wait" => has_wait = true,
            "griddepcontrol.launch_dependents" => has_trigger = true,
            _ => {}
        }
        out_body.push_str(st.instruction);
        if st.terminated {
            out_body.push(';');
        }
        if op_name == "griddepcontrol.wait" && st.terminated {
            out_body.push_str(&release_stamp());
        }
    }
    if !entry_done {
        out_body.push_str(&entry_stamp());
    }
    out_body.push_str(&exit_block());

    let copy = format!(
        "\n\n\t// ordo-measure: {kernel} with %globaltimer stamps\n.visible .entry {stamped_name}({params}){directives}{{{out_body}}}\n"
    );
    let mut out = String::with_capacity(ptx.len() + copy.len());
    out.push_str(&ptx[..=e.body_close]);
    out.push_str(&copy);
    out.push_str(&ptx[e.body_close + 1..]);
    Ok(Instrumented { ptx: out, stamped_name, has_wait, has_trigger })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = "
.version 8.0
.target sm_90
.address_size 64
// .entry commented_out(
.visible .entry k(
\t.param .u64 k_param_0 /* a comment with ret; in it */
)
.maxntid 256, 1, 1
{
\t.reg .pred \t%p<2>;
\t.reg .b32 \t%r<4>;
\tmov.u32 \t%r1, %tid.x;
\tsetp.eq.u32 \t%p1, %r1, 0;
\t@%p1 ret;
\t{
\t.reg .b32 %inner;
\tmov.b64 \t{%r2, %r3}, 0;
\t}
$L__BB0_1:
\t@!%p1 exit;
$L__BB0_2: ret;
}
.visible .entry none()
{
\tret;
}
";

    #[test]
    fn finds_entries_and_skips_comments_and_prototypes() {
        let p = format!("{SMALL}\n.extern .entry proto(.param .u64 x);\n");
        assert_eq!(entry_names(&p).unwrap(), vec!["k", "none"]);
        assert!(instrument(SMALL, "missing").unwrap_err().to_string().contains("k, none"));
    }

    #[test]
    fn rewrites_returns_and_adds_the_parameter() {
        let out = instrument(SMALL, "k").unwrap();
        assert_eq!(out.stamped_name, "k__ordo_stamped");
        assert!(!out.has_wait && !out.has_trigger);
        let copy = &out.ptx[out.ptx.find(".entry k__ordo_stamped").unwrap()..];
        assert!(copy.contains("k_param_0,\n\t.param .u64 __ordo_stamps\n)"), "{copy}");
        assert!(copy.contains(".maxntid 256, 1, 1"));
        assert!(copy.contains("@%p1 bra \t__ordo_exit;"));
        assert!(copy.contains("@!%p1 bra \t__ordo_exit;"));
        assert!(copy.contains("$L__BB0_2: bra.uni \t__ordo_exit;"));
        assert!(copy.contains("mov.b64 \t{%r2, %r3}, 0;"), "vector braces untouched");
        // The original stays, byte for byte.
        assert!(out.ptx.starts_with(&SMALL[..SMALL.find(".visible .entry none").unwrap()]));
        // Only the exit block returns.
        let body_rets = copy[..copy.find("__ordo_exit:").unwrap()].matches("\tret;").count();
        assert_eq!(body_rets, 0);
        // The entry stamp comes after the declarations, before the first instruction.
        let stamp = copy.find("entry stamp").unwrap();
        assert!(copy.find(".reg .b32 \t%r<4>").unwrap() < stamp && stamp < copy.find("mov.u32 \t%r1").unwrap());
        let none = instrument(SMALL, "none").unwrap();
        assert!(none.ptx.contains(".entry none__ordo_stamped(\n\t.param .u64 __ordo_stamps\n)"));
    }

    #[test]
    fn refuses_old_ptx_and_a_name_taken() {
        let old = SMALL.replace(".version 8.0", ".version 6.0");
        assert!(instrument(&old, "k").is_err());
        let twice = instrument(SMALL, "k").unwrap().ptx;
        assert!(instrument(&twice, "k").is_err());
    }
}
