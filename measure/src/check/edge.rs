//! One edge A -> B: B launched with PDL after A. Each of B's global accesses is placed against B's
//! waits (before on every path, before on some path, certainly after), each one before a wait is
//! judged against what A does to the memory it touches ([`Knowledge`]), and A's trigger placement
//! is described.

use super::access::{self, Access, Base, Kind, Space};
use super::body::{Inst, KernelBody};
use super::flow::{describe_path, Cfg, Marks};
use crate::spec::args::ArgSpec;
use crate::spec::SpecError;
use std::collections::BTreeSet;

/// A kernel read for the check: its body, its accesses, and where its waits and triggers are.
#[derive(Debug, Clone)]
pub struct KernelAnalysis {
    /// The kernel.
    pub body: KernelBody,
    /// Its global accesses, in order.
    pub accesses: Vec<Access>,
    cfg: Cfg,
    waits: Marks,
    triggers: Marks,
}

/// What a kernel does to memory, by parameter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effects {
    /// Parameters whose memory it reads.
    pub reads: BTreeSet<usize>,
    /// Parameters whose memory it writes.
    pub writes: BTreeSet<usize>,
    /// Module variables it reads.
    pub symbols_read: BTreeSet<String>,
    /// Module variables it writes.
    pub symbols_written: BTreeSet<String>,
    /// Lines of reads whose address is not followed (or calls).
    pub unfollowed_reads: Vec<usize>,
    /// Lines of writes whose address is not followed (or calls).
    pub unfollowed_writes: Vec<usize>,
}

impl KernelAnalysis {
    /// Kernel `kernel` of the PTX module `ptx`.
    pub fn new(ptx: &str, kernel: &str) -> Result<KernelAnalysis, SpecError> {
        let body = KernelBody::parse(ptx, kernel)?;
        let accesses = access::accesses(&body);
        let cfg = Cfg::of(&body);
        let waits = cfg.after_markers(&body.insts, Inst::is_wait);
        let triggers = cfg.after_markers(&body.insts, Inst::is_trigger);
        Ok(KernelAnalysis { body, accesses, cfg, waits, triggers })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.body.name
    }

    /// Lines of its `griddepcontrol.wait`s.
    pub fn wait_lines(&self) -> Vec<usize> {
        self.body.insts.iter().filter(|i| i.is_wait()).map(|i| i.line).collect()
    }

    /// Lines of its `griddepcontrol.launch_dependents`.
    pub fn trigger_lines(&self) -> Vec<usize> {
        self.body.insts.iter().filter(|i| i.is_trigger()).map(|i| i.line).collect()
    }

    /// Whether it contains a wait.
    pub fn waits(&self) -> bool {
        self.body.insts.iter().any(Inst::is_wait)
    }

    /// What it does to memory, every access counted wherever it is.
    pub fn effects(&self) -> Effects {
        let mut e = Effects::default();
        for a in &self.accesses {
            let line = self.body.insts[a.index].line;
            for b in &a.bases {
                match b {
                    Base::Param(p) => {
                        if a.kind.reads() {
                            e.reads.insert(*p);
                        }
                        if a.kind.writes() {
                            e.writes.insert(*p);
                        }
                    }
                    Base::Symbol(s) => {
                        if a.kind.reads() {
                            e.symbols_read.insert(s.clone());
                        }
                        if a.kind.writes() {
                            e.symbols_written.insert(s.clone());
                        }
                    }
                    Base::Unknown(_) => {
                        if a.kind.reads() {
                            e.unfollowed_reads.push(line);
                        }
                        if a.kind.writes() {
                            e.unfollowed_writes.push(line);
                        }
                    }
                }
            }
        }
        e.unfollowed_reads.dedup();
        e.unfollowed_writes.dedup();
        e
    }

    /// Parameter `p` as a report names it: `parameter 1 (consume_param_1)`.
    pub fn param_label(&self, p: usize) -> String {
        match self.body.params.get(p) {
            Some(param) => format!("parameter {p} ({})", param.name),
            None => format!("parameter {p}"),
        }
    }
}

/// What is known of A's effect on the memory of B's parameters: for each, whether A writes it,
/// whether A reads it, or unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knowledge {
    /// B's parameters whose memory A writes, where known: all others are not written by A.
    pub a_writes: Option<BTreeSet<usize>>,
    /// B's parameters whose memory A reads, where known.
    pub a_reads: Option<BTreeSet<usize>>,
    /// Where this comes from, in words.
    pub source: String,
    /// Module variables A writes and reads (A and B come from one module).
    pub a_symbols_written: BTreeSet<String>,
    /// See `a_symbols_written`.
    pub a_symbols_read: BTreeSet<String>,
}

impl Knowledge {
    /// Where it comes from, in two or three words: `as stated`, `from the arguments`.
    pub fn basis(&self) -> &'static str {
        if self.source.starts_with("stated") {
            "as stated"
        } else if self.source.starts_with("derived") {
            "from the arguments"
        } else {
            "not stated"
        }
    }

    /// Nothing stated: every access before the wait through a parameter is safe only if A does
    /// not touch that parameter's memory.
    pub fn none(a: &KernelAnalysis) -> Knowledge {
        let e = a.effects();
        Knowledge {
            a_writes: None,
            a_reads: None,
            source: "not stated (give --a-writes and --a-reads, or the kernels' arguments)".into(),
            a_symbols_written: e.symbols_written,
            a_symbols_read: e.symbols_read,
        }
    }

    /// What the user states: the B parameters whose memory A writes and reads (`None`: not stated).
    pub fn stated(a: &KernelAnalysis, writes: Option<BTreeSet<usize>>, reads: Option<BTreeSet<usize>>) -> Knowledge {
        let mut k = Knowledge::none(a);
        let show = |flag: &str, s: &Option<BTreeSet<usize>>| {
            s.as_ref().map(|s| {
                let v: Vec<String> = s.iter().map(usize::to_string).collect();
                format!("{flag} {}", if v.is_empty() { "none".to_owned() } else { v.join(",") })
            })
        };
        let said: Vec<String> =
            [show("--a-writes", &writes), show("--a-reads", &reads)].into_iter().flatten().collect();
        if !said.is_empty() {
            k.source = format!("stated: {}", said.join(", "));
        }
        k.a_writes = writes;
        k.a_reads = reads;
        k
    }

    /// Derived from the memory each parameter of A and B is given ([`buffer_ids`]): B's parameter k
    /// shares memory with A's j when both name the same buffer. What A writes (reads) is known
    /// when every write (read) of A is followed to a parameter that is given a buffer.
    pub fn from_buffers(
        a: &KernelAnalysis,
        a_ids: &[Option<String>],
        b: &KernelAnalysis,
        b_ids: &[Option<String>],
    ) -> Knowledge {
        let mut k = Knowledge::none(a);
        let e = a.effects();
        let mut notes = Vec::new();
        if a_ids.len() != a.body.params.len() || b_ids.len() != b.body.params.len() {
            k.source = format!(
                "not derived: {} takes {} parameters and {} arguments were given; {} takes {}, {} given",
                a.name(),
                a.body.params.len(),
                a_ids.len(),
                b.name(),
                b.body.params.len(),
                b_ids.len()
            );
            return k;
        }
        let derive = |params: &BTreeSet<usize>, unfollowed: &[usize], what: &str, notes: &mut Vec<String>| {
            if !unfollowed.is_empty() {
                let lines: Vec<String> = unfollowed.iter().map(usize::to_string).collect();
                notes.push(format!(
                    "what A {what} is not known: its accesses at lines {} are not followed",
                    lines.join(", ")
                ));
                return None;
            }
            let mut ids = BTreeSet::new();
            for &j in params {
                match a_ids.get(j).cloned().flatten() {
                    Some(id) => {
                        ids.insert(id);
                    }
                    None => {
                        notes.push(format!(
                            "what A {what} is not known: it {what} through {}, which is given no buffer",
                            a.param_label(j)
                        ));
                        return None;
                    }
                }
            }
            Some(
                b_ids
                    .iter()
                    .enumerate()
                    .filter(|(_, id)| id.as_ref().is_some_and(|id| ids.contains(id)))
                    .map(|(i, _)| i)
                    .collect::<BTreeSet<usize>>(),
            )
        };
        k.a_writes = derive(&e.writes, &e.unfollowed_writes, "writes", &mut notes);
        k.a_reads = derive(&e.reads, &e.unfollowed_reads, "reads", &mut notes);
        let list = |s: &Option<BTreeSet<usize>>| match s {
            Some(s) if s.is_empty() => "none of B's parameters".to_owned(),
            Some(s) => s.iter().map(|p| b.param_label(*p)).collect::<Vec<_>>().join(", "),
            None => "unknown".to_owned(),
        };
        k.source = format!(
            "derived from the arguments: A writes {}; A reads {}{}",
            list(&k.a_writes),
            list(&k.a_reads),
            if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) }
        );
        k
    }
}

/// The memory each argument names: a buffer's name (`x` of `x:f32[n]` and `@x`), a name of its
/// own for an unnamed buffer (`kernel#0`: a separate allocation), `None` for scalars, `stamps`
/// and `launch`.
pub fn buffer_ids(args: &[ArgSpec], kernel: &str) -> Vec<Option<String>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| match a {
            ArgSpec::Buffer { name: Some(n), .. } | ArgSpec::Ref(n) => Some(n.clone()),
            ArgSpec::Buffer { name: None, .. } => Some(format!("{kernel}#{i}")),
            _ => None,
        })
        .collect()
}

/// Where an access of B is, relative to B's waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// No path from the entry to it passes a wait.
    BeforeOnEveryPath,
    /// Some path does not: `path` is one (the branches it takes).
    BeforeOnSomePath {
        /// The branches of a shortest such path.
        path: Vec<String>,
    },
    /// Every path passes a wait first.
    AfterWait,
}

/// What the check finds of an access before the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// A race, given what is known of A: why.
    Race(String),
    /// Safe only if the user confirms the condition.
    SafeIf(String),
    /// Its address is not followed: why.
    Unknown(String),
    /// Safe: why.
    Safe(String),
}

impl Finding {
    fn rank(&self) -> u8 {
        match self {
            Finding::Safe(_) => 0,
            Finding::SafeIf(_) => 1,
            Finding::Unknown(_) => 2,
            Finding::Race(_) => 3,
        }
    }

    /// `race`, `safe if`, `unknown`, `safe`.
    pub fn label(&self) -> &'static str {
        match self {
            Finding::Race(_) => "race",
            Finding::SafeIf(_) => "safe if",
            Finding::Unknown(_) => "unknown",
            Finding::Safe(_) => "safe",
        }
    }

    /// Its words.
    pub fn text(&self) -> &str {
        match self {
            Finding::Race(t) | Finding::SafeIf(t) | Finding::Unknown(t) | Finding::Safe(t) => t,
        }
    }
}

/// One of B's global accesses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReport {
    /// Its line in the module.
    pub line: usize,
    /// The instruction.
    pub instruction: String,
    /// Load, store or atomic.
    pub kind: Kind,
    /// Global, or may be.
    pub space: Space,
    /// Where its address comes from, in words (`parameter 0 (k_param_0)`).
    pub from: Vec<String>,
    /// Where it is relative to the waits.
    pub when: When,
    /// For an access before a wait: what the check finds.
    pub finding: Option<Finding>,
}

/// Where A's trigger is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A never triggers: B's blocks launch as A's blocks exit.
    None,
    /// Every global write of A comes after the trigger on every path (or, without writes, most of
    /// its instructions do).
    Early,
    /// Some of A's writes come after it.
    Middle,
    /// None of A's writes comes after it.
    Late,
}

impl Placement {
    /// `none`, `early`, `middle`, `late`.
    pub fn label(self) -> &'static str {
        match self {
            Placement::None => "none",
            Placement::Early => "early",
            Placement::Middle => "middle",
            Placement::Late => "late",
        }
    }
}

/// A's `griddepcontrol.launch_dependents`: where, and how much of A comes after it. Counts are
/// static (an instruction in a loop counts once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriggerReport {
    /// Lines of the triggers.
    pub lines: Vec<usize>,
    /// Early, middle, late or none.
    pub placement: Placement,
    /// Every way out of A passes a trigger (else the blocks that take the others trigger at exit).
    pub on_every_path: bool,
    /// A's reachable instructions.
    pub instructions: usize,
    /// Of those, after a trigger on some path.
    pub instructions_after_some: usize,
    /// After a trigger on every path.
    pub instructions_after_every: usize,
    /// A's global writes (stores, atomics).
    pub stores: usize,
    /// Of those, after a trigger on some path.
    pub stores_after_some: usize,
    /// After a trigger on every path.
    pub stores_after_every: usize,
    /// In words.
    pub summary: String,
}

impl TriggerReport {
    /// The trigger report of kernel `a`.
    pub fn of(a: &KernelAnalysis) -> TriggerReport {
        let insts = &a.body.insts;
        let m = &a.triggers;
        let reach = &m.reachable;
        let idx: Vec<usize> = (0..insts.len()).filter(|&i| reach[i]).collect();
        let count = |f: &dyn Fn(usize) -> bool| idx.iter().filter(|&&i| f(i)).count();
        let instructions = idx.len();
        let instructions_after_some = count(&|i| m.may[i]);
        let instructions_after_every = count(&|i| m.must[i]);
        let writes: Vec<usize> =
            a.accesses.iter().filter(|x| x.kind.writes() && reach[x.index]).map(|x| x.index).collect();
        let stores = writes.len();
        let stores_after_some = writes.iter().filter(|&&i| m.may[i]).count();
        let stores_after_every = writes.iter().filter(|&&i| m.must[i]).count();
        let lines = a.trigger_lines();
        // Ways out: every reachable ret/exit, and falling off the last instruction.
        let falls_off =
            insts.last().is_some_and(|l| !matches!(l.base(), "ret" | "exit" | "bra" | "trap") || l.guard.is_some());
        let last_after = match insts.len().checked_sub(1) {
            Some(l) if falls_off && reach[l] => m.must[l] || (insts[l].is_trigger() && insts[l].guard.is_none()),
            _ => true,
        };
        let exits_after =
            idx.iter().filter(|&&i| matches!(insts[i].base(), "ret" | "exit")).all(|&i| m.must[i]) && last_after;
        let on_every_path = !lines.is_empty() && exits_after;
        let placement = if lines.is_empty() {
            Placement::None
        } else if stores > 0 {
            if stores_after_every == stores {
                Placement::Early
            } else if stores_after_some == 0 {
                Placement::Late
            } else {
                Placement::Middle
            }
        } else if instructions_after_some == 0 {
            Placement::Late
        } else if 2 * instructions_after_every >= instructions {
            Placement::Early
        } else {
            Placement::Middle
        };
        let at = lines.iter().map(|l| format!("line {l}")).collect::<Vec<_>>().join(", ");
        let paths = if on_every_path {
            "on every path".to_owned()
        } else {
            "not on every path (blocks that miss it trigger as they exit)".to_owned()
        };
        let work = format!(
            "after it on every path: {stores_after_every} of A's {stores} global writes, {instructions_after_every} of its {instructions} instructions (on some path: {stores_after_some} and {instructions_after_some}; static counts, a loop counts once)"
        );
        let summary = match placement {
            Placement::None => "A never triggers (no griddepcontrol.launch_dependents): B's blocks launch as A's blocks exit; a griddepcontrol.wait in B still waits for all of A".to_owned(),
            Placement::Early => format!("early: {at}, {paths}; {work}. B's blocks may start while A still computes and writes: safe (the trigger orders no memory, B's wait still waits for all of A) provided B touches nothing of A's before its wait"),
            Placement::Middle => format!("{at}, {paths}; {work}"),
            Placement::Late => format!("late: {at}, {paths}; {work}: little of A is left to overlap with B's start"),
        };
        TriggerReport {
            lines,
            placement,
            on_every_path,
            instructions,
            instructions_after_some,
            instructions_after_every,
            stores,
            stores_after_some,
            stores_after_every,
            summary,
        }
    }
}

/// The edge's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Every access before a wait is proven safe (or there is none).
    Safe,
    /// Some access before a wait is safe only under a condition the user must confirm, or its
    /// address is not followed.
    Unproven,
    /// A race.
    Race,
}

impl Verdict {
    /// `safe`, `unproven`, `race`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Safe => "safe",
            Verdict::Unproven => "unproven",
            Verdict::Race => "race",
        }
    }
}

/// The static check of one edge A -> B.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeReport {
    /// Which edge of the command's kernels: `A -> B`, `B -> A` (with `--chain`), `A -> A`.
    pub edge: String,
    /// A's name.
    pub a: String,
    /// B's name.
    pub b: String,
    /// Lines of B's waits (empty: B never waits).
    pub waits: Vec<usize>,
    /// Every global access of B, in order.
    pub accesses: Vec<AccessReport>,
    /// A's trigger.
    pub trigger: TriggerReport,
    /// What was known of A's effects on B's memory.
    pub knowledge: Knowledge,
    /// Race, unproven or safe.
    pub verdict: Verdict,
}

impl EdgeReport {
    /// Checks B launched with PDL after A.
    pub fn check(a: &KernelAnalysis, b: &KernelAnalysis, knowledge: Knowledge) -> EdgeReport {
        let insts = &b.body.insts;
        let mut accesses = Vec::new();
        for x in &b.accesses {
            let i = x.index;
            if !b.waits.reachable[i] {
                continue;
            }
            let when = if b.waits.must[i] {
                When::AfterWait
            } else if !b.waits.may[i] {
                When::BeforeOnEveryPath
            } else {
                let path = b.cfg.path_avoiding(insts, i, Inst::is_wait).unwrap_or_default();
                When::BeforeOnSomePath { path: describe_path(insts, &path) }
            };
            let finding = (when != When::AfterWait).then(|| judge(b, x, &knowledge));
            accesses.push(AccessReport {
                line: insts[i].line,
                instruction: insts[i].text.clone(),
                kind: x.kind,
                space: x.space,
                from: x.bases.iter().map(|base| base_label(b, base)).collect(),
                when,
                finding,
            });
        }
        let worst = accesses.iter().filter_map(|a| a.finding.as_ref()).map(Finding::rank).max().unwrap_or(0);
        let verdict = match worst {
            0 => Verdict::Safe,
            3 => Verdict::Race,
            _ => Verdict::Unproven,
        };
        EdgeReport {
            edge: "A -> B".to_owned(),
            a: a.name().to_owned(),
            b: b.name().to_owned(),
            waits: b.wait_lines(),
            accesses,
            trigger: TriggerReport::of(a),
            knowledge,
            verdict,
        }
    }

    /// The accesses before a wait (on every path or on some).
    pub fn before_wait(&self) -> impl Iterator<Item = &AccessReport> {
        self.accesses.iter().filter(|a| a.when != When::AfterWait)
    }
}

fn base_label(b: &KernelAnalysis, base: &Base) -> String {
    match base {
        Base::Param(p) => b.param_label(*p),
        Base::Symbol(s) => format!("module variable {s}"),
        Base::Unknown(why) => why.clone(),
    }
}

/// What one access before the wait comes to, given what is known of A.
fn judge(b: &KernelAnalysis, x: &Access, k: &Knowledge) -> Finding {
    let mut findings = Vec::new();
    for base in &x.bases {
        findings.push(match base {
            Base::Param(p) => judge_param(b, x.kind, *p, k),
            Base::Symbol(s) => {
                let (w, r) = (k.a_symbols_written.contains(s), k.a_symbols_read.contains(s));
                if x.kind.reads() && w {
                    Finding::Race(format!("reads module variable {s}, which A writes (read after write)"))
                } else if x.kind.writes() && (w || r) {
                    Finding::Race(format!(
                        "writes module variable {s}, which A {} (write after {})",
                        if w { "writes" } else { "reads" },
                        if w { "write" } else { "read" }
                    ))
                } else {
                    Finding::Safe(format!("A does not touch module variable {s}"))
                }
            }
            Base::Unknown(why) => Finding::Unknown(format!(
                "{why}: a race unless it never touches memory A {}",
                if x.kind.writes() { "reads or writes" } else { "writes" }
            )),
        });
    }
    let worst = findings.iter().map(Finding::rank).max().unwrap_or(0);
    let same: Vec<&Finding> = findings.iter().filter(|f| f.rank() == worst).collect();
    let text = same.iter().map(|f| f.text()).collect::<Vec<_>>().join("; and ");
    match worst {
        3 => Finding::Race(text),
        2 => Finding::Unknown(text),
        1 => Finding::SafeIf(text),
        _ => Finding::Safe(text),
    }
}

fn judge_param(b: &KernelAnalysis, kind: Kind, p: usize, k: &Knowledge) -> Finding {
    let name = b.param_label(p);
    let writes = k.a_writes.as_ref().map(|s| s.contains(&p));
    let reads = k.a_reads.as_ref().map(|s| s.contains(&p));
    if kind.reads() && writes == Some(true) {
        return Finding::Race(format!("reads {name}'s memory, which A writes (read after write)"));
    }
    if kind.writes() && writes == Some(true) {
        return Finding::Race(format!("writes {name}'s memory, which A writes (write after write)"));
    }
    if kind.writes() && reads == Some(true) {
        return Finding::Race(format!("writes {name}'s memory, which A reads (write after read)"));
    }
    let needed_known = if kind.writes() { writes.is_some() && reads.is_some() } else { writes.is_some() };
    if needed_known {
        let what = if kind.writes() { "neither reads nor writes" } else { "does not write" };
        return Finding::Safe(format!("A {what} {name}'s memory ({})", k.basis()));
    }
    let condition = match (kind.writes(), writes, reads) {
        (false, _, _) => "does not write",
        (true, Some(false), _) => "does not read",
        (true, _, Some(false)) => "does not write",
        (true, _, _) => "neither reads nor writes",
    };
    Finding::SafeIf(format!("A {condition} {name}'s memory"))
}
