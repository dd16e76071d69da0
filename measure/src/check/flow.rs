//! A body's control flow, one node an instruction: edges from labels and branches (`bra`, `brx.idx`
//! to every label, `ret`/`exit`/`trap` leaving unless guarded), and for a set of marker
//! instructions (the waits of B, the triggers of A) whether each instruction comes after one on
//! every path from the entry (`must`) or on some path (`may`). An unguarded marker counts on
//! both; a guarded one (`@%p griddepcontrol.wait`) only on `may`, since the path that skips it
//! runs on unwaited.

use super::body::{Inst, KernelBody};
use std::collections::{HashMap, VecDeque};

/// The successors of each instruction (an index past the last is the kernel's exit, left out).
#[derive(Debug, Clone)]
pub struct Cfg {
    succ: Vec<Vec<usize>>,
}

impl Cfg {
    /// The flow graph of `k`.
    pub fn of(k: &KernelBody) -> Cfg {
        let n = k.insts.len();
        let mut labels: HashMap<&str, usize> = HashMap::new();
        for (i, inst) in k.insts.iter().enumerate() {
            for l in &inst.labels {
                labels.insert(l.as_str(), i);
            }
        }
        for l in &k.end_labels {
            labels.insert(l.as_str(), n);
        }
        let all_labels: Vec<usize> = {
            let mut v: Vec<usize> = labels.values().copied().collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let mut succ = Vec::with_capacity(n);
        for (i, inst) in k.insts.iter().enumerate() {
            let next = i + 1;
            let guarded = inst.guard.is_some();
            let mut s = Vec::new();
            match inst.base() {
                "bra" => {
                    let target = inst.operands.first().and_then(|t| labels.get(t.as_str())).copied();
                    if guarded || target.is_none() {
                        s.push(next);
                    }
                    // A branch to a label the body lacks leaves the analysis nothing to follow:
                    // treat it as going on (the conservative choice for "reached before a wait").
                    s.extend(target);
                }
                "brx" => {
                    s.extend(all_labels.iter().copied());
                    if guarded {
                        s.push(next);
                    }
                }
                "ret" | "exit" | "trap" => {
                    if guarded {
                        s.push(next);
                    }
                }
                _ => s.push(next),
            }
            s.retain(|&x| x < n);
            s.sort_unstable();
            s.dedup();
            succ.push(s);
        }
        Cfg { succ }
    }

    /// The predecessors of every instruction.
    fn predecessors(&self) -> Vec<Vec<usize>> {
        let mut pred = vec![Vec::new(); self.succ.len()];
        for (i, s) in self.succ.iter().enumerate() {
            for &j in s {
                pred[j].push(i);
            }
        }
        pred
    }

    /// Whether each instruction can be reached from the entry.
    pub fn reachable(&self) -> Vec<bool> {
        let mut seen = vec![false; self.succ.len()];
        let mut work: Vec<usize> = if self.succ.is_empty() { Vec::new() } else { vec![0] };
        while let Some(i) = work.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            work.extend(self.succ[i].iter().copied().filter(|&j| !seen[j]));
        }
        seen
    }

    /// For each instruction, whether a marker (`is_marker`) has run before it on every path from
    /// the entry (`must`) and on some path (`may`); the state on entering the instruction.
    pub fn after_markers(&self, insts: &[Inst], is_marker: impl Fn(&Inst) -> bool) -> Marks {
        let n = self.succ.len();
        let pred = self.predecessors();
        let out = |i: usize, state_in: bool, must: bool| {
            let m = is_marker(&insts[i]);
            let unguarded = insts[i].guard.is_none();
            state_in || (m && (unguarded || !must))
        };
        // must: greatest fixpoint (start from true, the entry false).
        let mut must = vec![true; n];
        let mut may = vec![false; n];
        if n > 0 {
            must[0] = false;
        }
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                let (m_in, y_in) = if i == 0 {
                    // The entry may also be a loop head: its state joins its predecessors'.
                    (false, pred[0].iter().any(|&p| out(p, may[p], false)))
                } else {
                    (
                        !pred[i].is_empty() && pred[i].iter().all(|&p| out(p, must[p], true)),
                        pred[i].iter().any(|&p| out(p, may[p], false)),
                    )
                };
                if m_in != must[i] || y_in != may[i] {
                    must[i] = m_in;
                    may[i] = y_in;
                    changed = true;
                }
            }
        }
        // Unreachable instructions stay "after" on `must` (no path reaches them unmarked); give
        // them `false` on `may` too, so that they count nowhere.
        let reach = self.reachable();
        for i in 0..n {
            if !reach[i] {
                must[i] = true;
                may[i] = false;
            }
        }
        Marks { must, may, reachable: reach }
    }

    /// A shortest path from the entry to `target` that passes no unguarded marker, as the
    /// instruction indices it visits, if there is one.
    pub fn path_avoiding(
        &self,
        insts: &[Inst],
        target: usize,
        is_marker: impl Fn(&Inst) -> bool,
    ) -> Option<Vec<usize>> {
        let n = self.succ.len();
        if target >= n {
            return None;
        }
        let blocks = |i: usize| is_marker(&insts[i]) && insts[i].guard.is_none();
        let mut from = vec![usize::MAX; n];
        let mut queue = VecDeque::new();
        if n > 0 {
            from[0] = 0;
            queue.push_back(0);
        }
        while let Some(i) = queue.pop_front() {
            if i == target {
                let mut path = vec![i];
                let mut at = i;
                while at != 0 {
                    at = from[at];
                    path.push(at);
                }
                path.reverse();
                return Some(path);
            }
            if blocks(i) {
                continue;
            }
            for &j in &self.succ[i] {
                if from[j] == usize::MAX {
                    from[j] = i;
                    queue.push_back(j);
                }
            }
        }
        None
    }
}

/// The state before each instruction: after a marker on every path, on some path.
#[derive(Debug, Clone)]
pub struct Marks {
    /// A marker ran before it on every path from the entry (true for unreachable instructions).
    pub must: Vec<bool>,
    /// A marker ran before it on some path.
    pub may: Vec<bool>,
    /// It can be reached from the entry.
    pub reachable: Vec<bool>,
}

/// A path as the report says it: the branches it takes or passes (`line 23: @%p3 bra $L__BB6_2
/// (taken)`), up to the target.
pub fn describe_path(insts: &[Inst], path: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    for w in path.windows(2) {
        let (i, j) = (w[0], w[1]);
        let inst = &insts[i];
        let branch = matches!(inst.base(), "bra" | "brx");
        let guarded_exit = matches!(inst.base(), "ret" | "exit") && inst.guard.is_some();
        if branch || guarded_exit {
            let how = if j == i + 1 { "not taken" } else { "taken" };
            if inst.guard.is_some() || j != i + 1 {
                out.push(format!("line {}: {} ({how})", inst.line, inst.text));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> KernelBody {
        let ptx = format!(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n{text}\n}}\n");
        KernelBody::parse(&ptx, "k").unwrap()
    }

    #[test]
    fn a_wait_on_one_branch_covers_only_that_branch() {
        let k = body(
            "\t@%p1 bra SKIP;\n\tgriddepcontrol.wait;\nSKIP:\n\tld.global.f32 %f1, [%rd1];\n\tgriddepcontrol.wait;\n\tld.global.f32 %f2, [%rd1];\n\tret;",
        );
        let cfg = Cfg::of(&k);
        let m = cfg.after_markers(&k.insts, Inst::is_wait);
        // The first load: waited on one path only.
        assert!(!m.must[2] && m.may[2]);
        // The second: after the unconditional wait.
        assert!(m.must[4] && m.may[4]);
        let path = cfg.path_avoiding(&k.insts, 2, Inst::is_wait).unwrap();
        assert_eq!(path, vec![0, 2]);
        assert_eq!(describe_path(&k.insts, &path), vec!["line 6: @%p1 bra SKIP; (taken)".replace(';', "")]);
        assert!(cfg.path_avoiding(&k.insts, 4, Inst::is_wait).is_none());
    }

    #[test]
    fn loops_guarded_markers_and_unreachable_code() {
        let k = body(
            "LOOP:\n\tld.global.f32 %f1, [%rd1];\n\t@%p2 griddepcontrol.wait;\n\t@%p1 bra LOOP;\n\tret;\n\tst.global.f32 [%rd1], %f1;",
        );
        let m = Cfg::of(&k).after_markers(&k.insts, Inst::is_wait);
        // The load is at the loop head: unwaited on the first iteration; a guarded wait may run.
        assert!(!m.must[0] && m.may[0]);
        assert!(!m.must[3] && m.may[3]);
        // The store after `ret` is never reached: counted nowhere.
        assert!(m.must[4] && !m.may[4] && !m.reachable[4]);
    }
}
