//! PDL you can trust: proves a dependent launch safe before reporting what it saves.
//!
//! Kernel B launched with programmatic stream serialization (PDL) may start before kernel A, the
//! one before it, has finished: whatever B does to global memory before its first
//! `griddepcontrol.wait` (`cudaGridDependencySynchronize`) runs beside A. A read of A's output
//! there, or a write of memory A still reads or writes, is a race that shows up rarely. The check
//! has three parts, each usable alone:
//!
//! - **static**, from PTX, no GPU ([`EdgeReport::check`]): B's control flow built from its labels
//!   and branches; every global access (`ld`/`st`/`atom`/`red` `.global`, generic ones that may be
//!   global, `cp.async` from or to global, texture and surface instructions, calls) placed before
//!   the wait on every path, on some path (with one such path), or certainly after; each one
//!   before the wait followed through registers to the kernel parameter its address comes from,
//!   and judged against what A does to that parameter's memory ([`Knowledge`]: stated by the
//!   user, or derived from both kernels' argument lists and A's own accesses); A's trigger
//!   (`griddepcontrol.launch_dependents`) placement, and how much of A comes after it;
//! - **dynamic**, on the GPU (`Engine::race_check`): A then B with PDL, many times, under
//!   perturbation (A's accesses delayed, an early trigger in A, a load kernel on another stream),
//!   every buffer compared with the runs without PDL ([`dynamic`]);
//! - **advice**, on the GPU, for an edge proven safe (`Engine::advise`): the gap without and with
//!   PDL, the release, and whether PDL pays at this grid size ([`advice`]).
//!
//! ```
//! use ordo_cuda_measure::check::{EdgeReport, Knowledge, KernelAnalysis, Verdict};
//!
//! let ptx = include_str!("../../tests/data/pdl_cases.ptx");
//! let a = KernelAnalysis::new(ptx, "produce_early").map_err(|e| e.to_string())?;
//! let b = KernelAnalysis::new(ptx, "consume_raw").map_err(|e| e.to_string())?;
//! // A writes B's parameter 0 (`prev`): B reads it before its wait.
//! let knowledge = Knowledge::stated(&a, Some([0].into()), Some([].into()));
//! let edge = EdgeReport::check(&a, &b, knowledge);
//! assert_eq!(edge.verdict, Verdict::Race);
//! # Ok::<(), String>(())
//! ```
//!
//! The command: `ordo-measure check` (docs/check.md).

mod access;
pub mod advice;
mod body;
pub mod delay;
pub mod dynamic;
mod edge;
mod flow;
mod render;

pub use access::{Base, Kind, Space};
pub use advice::{Advice, Recommendation};
pub use body::{KernelBody, Param};
pub use dynamic::DynamicReport;
pub use edge::{
    buffer_ids, AccessReport, EdgeReport, Effects, Finding, KernelAnalysis, Knowledge, Placement, TriggerReport,
    Verdict, When,
};

use crate::cli::CheckSpec;
use crate::report::Header;
use crate::spec::SpecError;

/// The guide (`docs/check.md`), whose examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/check.md")]
pub struct Guide;

/// Everything a check found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckReport {
    /// The module checked.
    pub module: String,
    /// The device, when the dynamic check or the advice ran.
    pub header: Option<Header>,
    /// The static check of each edge.
    pub edges: Vec<EdgeReport>,
    /// The dynamic check of each edge it ran on.
    pub dynamic: Vec<DynamicReport>,
    /// The advice, per edge and point.
    pub advice: Vec<Advice>,
    /// What was not done, and why.
    pub notes: Vec<String>,
}

impl CheckReport {
    /// Race if any edge has one or the dynamic check saw one; unproven if an edge is; else safe.
    pub fn verdict(&self) -> Verdict {
        let statically = self.edges.iter().map(|e| e.verdict).max().unwrap_or(Verdict::Safe);
        if self.dynamic.iter().any(|d| d.trials_with_race > 0) {
            Verdict::Race
        } else {
            statically
        }
    }

    /// The command's exit status for this report: 0 safe, 1 race, 3 unproven.
    pub fn exit_code(&self) -> u8 {
        match self.verdict() {
            Verdict::Safe => 0,
            Verdict::Race => 1,
            Verdict::Unproven => 3,
        }
    }

    /// As markdown.
    pub fn to_markdown(&self) -> String {
        render::markdown(self)
    }

    /// As JSON (the fields: docs/check.md).
    pub fn to_json(&self) -> String {
        render::json(self)
    }
}

/// The edges a check looks at, as (A's form, A's index, B's form, B's index) into the spec's
/// kernels: A -> B (A -> A for one kernel), and B -> A too with `chain`. The form is the one a PDL
/// sequence launches: the PDL form where one is named, else the kernel.
pub fn edges(spec: &CheckSpec) -> Vec<(String, usize, String, usize)> {
    let form = |i: usize| {
        spec.run.kernels.get(i).map(|k| k.pdl_form.clone().unwrap_or_else(|| k.name.clone())).unwrap_or_default()
    };
    let mut out = Vec::new();
    if spec.run.kernels.len() < 2 {
        out.push((form(0), 0, form(0), 0));
    } else {
        out.push((form(0), 0, form(1), 1));
        if spec.chain {
            out.push((form(1), 1, form(0), 0));
        }
    }
    out
}

/// The static check of every edge of `spec` in the module `ptx`. What is known of A's effects:
/// `--a-writes`/`--a-reads` where given (the first edge), else derived from the arguments where
/// both kernels have them, else nothing.
pub fn check_static(ptx: &str, spec: &CheckSpec) -> Result<Vec<EdgeReport>, SpecError> {
    let mut out = Vec::new();
    for (n, (a_name, ai, b_name, bi)) in edges(spec).into_iter().enumerate() {
        let a = KernelAnalysis::new(ptx, &a_name)?;
        let b = KernelAnalysis::new(ptx, &b_name)?;
        let args = |i: usize| spec.run.kernels.get(i).map(|k| k.args.as_slice()).unwrap_or_default();
        let stated = n == 0 && (spec.a_writes.is_some() || spec.a_reads.is_some());
        for (flag, set) in [("--a-writes", &spec.a_writes), ("--a-reads", &spec.a_reads)] {
            if let Some(&p) = set.iter().flatten().find(|&&p| p >= b.body.params.len()) {
                return Err(SpecError::new(format!(
                    "{flag}: B ({b_name}) has {} parameters: there is no parameter {p}",
                    b.body.params.len()
                )));
            }
        }
        let knowledge = if stated {
            Knowledge::stated(&a, spec.a_writes.clone(), spec.a_reads.clone())
        } else if !args(ai).is_empty() && !args(bi).is_empty() {
            // Unnamed buffers are the kernel's own: the same memory on an edge from a kernel to itself.
            let ids = |i: usize| buffer_ids(args(i), &format!("kernel {i}"));
            Knowledge::from_buffers(&a, &ids(ai), &b, &ids(bi))
        } else {
            Knowledge::none(&a)
        };
        let mut edge = EdgeReport::check(&a, &b, knowledge);
        edge.edge = match (ai, bi) {
            (0, 0) => "A -> A",
            (0, _) => "A -> B",
            _ => "B -> A",
        }
        .to_owned();
        out.push(edge);
    }
    Ok(out)
}
