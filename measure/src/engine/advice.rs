//! The advice for edges proven safe ([`Engine::advise`]): the gap measure's graph rows without
//! and with PDL, B's grid in waves, and the recommendation of [`crate::check::advice`].

use super::module::{self, Module};
use super::race::{shown_point, Edge};
use super::Engine;
use crate::check::advice::{recommend, Advice, Figure, Recommendation};
use crate::cli::RunSpec;
use crate::report::Row;
use ordo_cuda_core::{sys, Result};

impl Engine {
    /// The advice for each of `edges` of `spec` at `point`: the kernels' gap sequence (A B A B,
    /// or A A for one kernel; `module` loaded with stamped copies, [`module::to_instrument`]),
    /// its graph rows without and with PDL, and B's waves.
    pub fn advise(
        &mut self,
        module: &Module,
        spec: &RunSpec,
        edges: &[Edge],
        point: &[(String, i64)],
    ) -> Result<Vec<Advice>> {
        let shown = shown_point(&spec.axes, point);
        let (mut subjects, buffers) = module::subjects(self, module, spec, point)?;
        let rows = {
            let (a, rest) = subjects.split_at_mut(1);
            match a.first_mut() {
                Some(a) => self.gaps(a, rest.first_mut())?,
                None => Vec::new(),
            }
        };
        let two = subjects.len() == 2;
        let sms = f64::from(self.header.device.sms.max(1));
        let mut out = Vec::new();
        for edge in edges {
            let (gap, release) = match (two, edge.a_index) {
                (false, _) => ("gap", "release"),
                (true, 0) => ("gap A->B", "release A->B"),
                (true, _) => ("gap B->A", "release B->A"),
            };
            let find = |metric: &str, variant: &str| -> Option<Figure> {
                rows.iter()
                    .find(|r: &&Row| r.metric == metric && r.variant == variant)
                    .map(|r| Figure { seconds: r.summary.median, noise: r.summary.noise })
            };
            let (plain, pdl) = ("graph, no PDL, ordo", "graph, PDL, ordo");
            let waves = subjects.get(edge.b_index).and_then(|s| {
                let target = &s.forms[s.pdl.unwrap_or(s.plain)];
                let c = target.config();
                // SAFETY: the target's kernel handle, kept alive by the target.
                let per_sm =
                    self.device.with_current(|| unsafe { blocks_per_sm(target.func().as_runtime(), c) }).ok()?;
                (per_sm > 0).then(|| target.blocks() as f64 / (sms * f64::from(per_sm)))
            });
            let (period_plain, period_pdl) = (find("period", plain), find("period", pdl));
            let (recommendation, mut why) = recommend(period_plain, period_pdl, waves);
            if recommendation == Recommendation::NotMeasured {
                if let Some(note) = rows.first().map(|r| r.note.as_str()).and_then(|n| {
                    n.split("; ").find(|part| part.starts_with("no PDL variant") || part.starts_with("no stamps"))
                }) {
                    why = format!("{why}: {note}");
                }
            }
            out.push(Advice {
                edge: format!("{} -> {}", edge.a, edge.b),
                point: shown.clone(),
                gap_plain: find(gap, plain),
                gap_pdl: find(gap, pdl),
                release: find(release, pdl),
                period_plain,
                period_pdl,
                waves,
                recommendation,
                why,
            });
        }
        drop(subjects);
        drop(buffers);
        self.stream.synchronize()?;
        Ok(out)
    }
}

/// The blocks of `config`'s shape one SM holds at once (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`),
/// on the current device.
///
/// # Safety
/// `func` is a kernel handle the runtime takes (a stub or a `cudaKernel_t`), alive during the call.
unsafe fn blocks_per_sm(func: *const core::ffi::c_void, config: ordo_cuda_core::launch::LaunchConfig) -> Result<u32> {
    let threads = i32::try_from(config.block.volume()).unwrap_or(i32::MAX);
    let mut n = 0;
    // SAFETY: the caller's contract; `n` writable.
    let code = unsafe {
        sys::cudaOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, func, threads, config.shared_mem_bytes as usize)
    };
    if code != sys::cudaError::cudaSuccess && !ordo_cuda_core::error::is_sticky_code(code) {
        // SAFETY: no arguments; clears the refusal from the thread's last-error slot.
        unsafe { sys::cudaGetLastError() };
    }
    ordo_cuda_core::error::check(code, "cudaOccupancyMaxActiveBlocksPerMultiprocessor")?;
    Ok(u32::try_from(n).unwrap_or(0))
}
