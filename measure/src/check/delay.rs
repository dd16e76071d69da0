//! The perturbed copy of kernel A that the dynamic check launches in place of A: [`delayed`]
//! appends to the module a copy named with [`DELAYED_SUFFIX`] that takes three more parameters,
//!
//! - `__ordo_delay_ns` (`u64`): each thread of a delayed block spins this many nanoseconds of
//!   `%globaltimer` before its first global memory access (load, store, atomic or call), so that
//!   all of its accesses come late;
//! - `__ordo_delay_from` (`u32`): the blocks whose linear index is at least this are delayed
//!   (0: all; the grid's size less one: the last block only);
//! - `__ordo_trigger` (`u32`): when not 0, the copy runs `griddepcontrol.launch_dependents` first
//!   thing, so that B's blocks may start as early as PDL allows. A trigger orders no memory, so a
//!   B that waits before touching A's memory stays correct whatever A's trigger placement; a B
//!   that does not is exposed at once. Only where the module targets `sm_90` or later with PTX
//!   ISA 7.8 or later; elsewhere the parameter is taken and ignored.
//!
//! The copy computes what A computes: the delay changes when, not what.

use super::access;
use super::body::KernelBody;
use crate::ptx::{blank_comments, entries, find_entry, guard_and_opcode, statements, BLOCK_INDEX};
use crate::spec::SpecError;

/// The delayed copy of kernel `k` is named `k` followed by this.
pub const DELAYED_SUFFIX: &str = "__ordo_delayed";

/// A module with a delayed copy of one of its kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delayed {
    /// The whole module, the copy appended after the original kernel.
    pub ptx: String,
    /// The copy's name.
    pub name: String,
    /// How many access sites got a delay.
    pub sites: usize,
    /// Whether `__ordo_trigger` has an effect (the module targets sm_90+, PTX ISA 7.8+).
    pub can_trigger: bool,
}

const DECLARATIONS: &str = "
\t.reg .b64 \t%__ordo_dl;
\t.reg .b64 \t%__ordo_t;
\t.reg .b64 \t%__ordo_x;
\t.reg .b64 \t%__ordo_b;
\t.reg .b64 \t%__ordo_c;
\t.reg .b32 \t%__ordo_u;
\t.reg .b32 \t%__ordo_v;
\t.reg .pred \t%__ordo_dp;
\t.reg .pred \t%__ordo_q;";

/// At entry: `%__ordo_dp` true where this block delays, `%__ordo_dl` the delay; the trigger.
fn entry(can_trigger: bool) -> String {
    let trigger = if can_trigger {
        "
\tld.param.u32 \t%__ordo_u, [__ordo_trigger];
\tsetp.eq.u32 \t%__ordo_q, %__ordo_u, 0;
\t@%__ordo_q bra \t__ordo_no_trigger;
\tgriddepcontrol.launch_dependents;
__ordo_no_trigger:"
    } else {
        ""
    };
    format!(
        "
\t// ordo-measure check: which blocks delay, and the early trigger
\tld.param.u64 \t%__ordo_dl, [__ordo_delay_ns];{BLOCK_INDEX}
\tld.param.u32 \t%__ordo_u, [__ordo_delay_from];
\tcvt.u64.u32 \t%__ordo_c, %__ordo_u;
\tsetp.ge.u64 \t%__ordo_dp, %__ordo_b, %__ordo_c;
\tsetp.ne.u64 \t%__ordo_q, %__ordo_dl, 0;
\tand.pred \t%__ordo_dp, %__ordo_dp, %__ordo_q;{trigger}
"
    )
}

/// Before an access: a thread that still owes its delay spins it, once.
fn site(n: usize) -> String {
    format!(
        "
\t@!%__ordo_dp bra \t__ordo_go_{n};
\tmov.u64 \t%__ordo_t, %globaltimer;
__ordo_spin_{n}:
\tmov.u64 \t%__ordo_x, %globaltimer;
\tsub.u64 \t%__ordo_x, %__ordo_x, %__ordo_t;
\tsetp.lt.u64 \t%__ordo_q, %__ordo_x, %__ordo_dl;
\t@%__ordo_q bra \t__ordo_spin_{n};
\tmov.pred \t%__ordo_dp, %__ordo_q;
__ordo_go_{n}:
\t"
    )
}

/// `ptx` with a delayed copy of `kernel` appended (see the [module docs](self)).
pub fn delayed(ptx: &str, kernel: &str) -> Result<Delayed, SpecError> {
    let k = KernelBody::parse(ptx, kernel)?;
    if k.version.is_some_and(|v| v < (4, 0)) {
        return Err(SpecError::new("PTX: the delayed copy needs PTX ISA 4.0 or later (%globaltimer)"));
    }
    let can_trigger = k.target_sm.is_some_and(|sm| sm >= 90) && k.version.is_some_and(|v| v >= (7, 8));
    let sites: std::collections::BTreeSet<usize> = access::accesses(&k).into_iter().map(|a| a.index).collect();
    let masked = blank_comments(ptx);
    let all = entries(&masked)?;
    let name = format!("{kernel}{DELAYED_SUFFIX}");
    if all.iter().any(|x| x.name == name) {
        return Err(SpecError::new(format!("PTX: the module already has a kernel named {name}")));
    }
    let e = find_entry(&all, kernel)?;
    let params = masked[e.params_start..e.params_end].trim_end();
    let extra = "\n\t.param .u64 __ordo_delay_ns,\n\t.param .u32 __ordo_delay_from,\n\t.param .u32 __ordo_trigger\n";
    let params = if params.trim().is_empty() { extra.to_owned() } else { format!("{params},{extra}") };
    let directives = &masked[e.params_end + 1..e.body_open];
    let body = &masked[e.body_open + 1..e.body_close];
    let mut out = String::with_capacity(body.len() + 4096);
    out.push_str(DECLARATIONS);
    let (mut index, mut entry_done) = (0usize, false);
    for st in statements(body) {
        let (_, opcode) = guard_and_opcode(st.instruction);
        let t = opcode.trim();
        let instruction = !(t.is_empty() || t.starts_with('.'));
        if instruction && !entry_done {
            out.push_str(&entry(can_trigger));
            entry_done = true;
        }
        out.push_str(st.prefix);
        if instruction {
            if sites.contains(&index) {
                out.push_str(&site(index));
            }
            index += 1;
        }
        out.push_str(st.instruction);
        if st.terminated {
            out.push(';');
        }
    }
    if !entry_done {
        out.push_str(&entry(can_trigger));
    }
    let copy = format!(
        "\n\n\t// ordo-measure check: {kernel} with a delay before its first global access\n.visible .entry {name}({params}){directives}{{{out}}}\n"
    );
    let mut text = String::with_capacity(ptx.len() + copy.len());
    text.push_str(&ptx[..=e.body_close]);
    text.push_str(&copy);
    text.push_str(&ptx[e.body_close + 1..]);
    Ok(Delayed { ptx: text, name, sites: sites.len(), can_trigger })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [k_param_0];
\tcvta.to.global.u64 %rd2, %rd1;
L1:\tst.global.u32 [%rd2], 1;
\tret;
}
";

    #[test]
    fn delays_before_each_access_keeping_labels_in_front() {
        let d = delayed(PTX, "k").unwrap();
        assert_eq!((d.name.as_str(), d.sites, d.can_trigger), ("k__ordo_delayed", 1, true));
        let copy = &d.ptx[d.ptx.find(".entry k__ordo_delayed").unwrap()..];
        assert!(copy.contains("k_param_0,\n\t.param .u64 __ordo_delay_ns,"), "{copy}");
        // The label stays before the delay, so that a branch to it is delayed too.
        let label = copy.find("L1:").unwrap();
        assert!(
            label < copy.find("__ordo_go_2:").unwrap()
                && copy.find("__ordo_go_2:").unwrap() < copy.find("st.global.u32").unwrap()
        );
        assert!(copy.find("griddepcontrol.launch_dependents").unwrap() < copy.find("ld.param.u64 %rd1").unwrap());
        // The original is untouched.
        assert!(d.ptx.starts_with(&PTX[..PTX.find("\n}\n").unwrap()]));
        let old = PTX.replace(".target sm_90", ".target sm_80");
        assert!(!delayed(&old, "k").unwrap().ptx.contains("griddepcontrol"));
        assert!(delayed(&d.ptx, "k").is_err(), "a name taken");
    }
}
