//! `gaps`: GPU gaps, release, span and period of launch sequences, eager, queued and replayed
//! from a graph, without and with PDL.

use super::{to_rows, Bench, VariantInfo};
use crate::engine::launch::{LaunchSlot, Path};
use crate::engine::{invalid, no_pdl_note, Engine, PdlSupport, Subject};
use crate::report::Row;
use crate::runner::{self, Measure, Sample, Series};
use crate::stamps::{self, KernelTimes, Sequence};
use ordo_cuda_core::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{cuda_call, sys, Result, SharedStreamBuffer, StreamRef};

/// How a gap sequence is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Eager,
    Queued,
    Graph,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Eager => "eager",
            Mode::Queued => "queued",
            Mode::Graph => "graph",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct GapVariant {
    mode: Mode,
    pdl: bool,
    path: Path,
}

impl GapVariant {
    fn name(self) -> String {
        format!("{}, {}, {}", self.mode.label(), if self.pdl { "PDL" } else { "no PDL" }, self.path.label())
    }
}

/// A sequence's layout: which subject and form each launch uses, and where its stamps go.
struct Layout {
    /// (subject: 0 = A, 1 = B; form index) a launch.
    forms: Vec<(usize, usize)>,
    /// Blocks a launch.
    blocks: Vec<usize>,
    /// First block slot a launch.
    offsets: Vec<usize>,
    /// Whether every form writes stamps.
    stamped: bool,
}

struct Gaps<'a> {
    b: Bench<'a>,
    subjects: Vec<&'a mut Subject>,
    variants: Vec<GapVariant>,
    layouts: [Option<Layout>; 2],
    stamps: SharedStreamBuffer<u64>,
    host: Vec<u64>,
    graphs: [Option<GraphExec>; 2],
    /// Whether the PDL forms record releases (A, B).
    releases: Vec<bool>,
}

impl Gaps<'_> {
    fn slot(&mut self, layout: usize, k: usize) -> LaunchSlot {
        let offset = self.layouts[layout].as_ref().map_or(0, |l| l.offsets[k]);
        LaunchSlot { index: k as u32, stamps: self.stamps.as_mut_ptr().wrapping_add(3 * offset) }
    }

    /// Enqueues the sequence's launches by `path` on `stream`.
    fn launch_all(&mut self, path: Path, stream: StreamRef<'_>, pdl: bool) -> Result<()> {
        let l = usize::from(pdl);
        let n = self.layouts[l].as_ref().map_or(0, |x| x.forms.len());
        for k in 0..n {
            let (s, f) = self.layouts[l].as_ref().map_or((0, 0), |x| x.forms[k]);
            let slot = self.slot(l, k);
            let driver = self.b.driver;
            // SAFETY: the slot is this launch's 3 u64 a block in `stamps`, alive as long as the
            // measure (graphs included: they are dropped with it, and replayed only by it).
            unsafe { self.subjects[s].forms[f].launch(driver, path, stream, pdl && k > 0, slot)? };
        }
        Ok(())
    }

    /// The stamps back to their initial values (entry and end 0, release `u64::MAX`).
    fn reset(&mut self, pdl: bool) -> Result<()> {
        let Some(l) = self.layouts[usize::from(pdl)].as_ref() else { return Ok(()) };
        if !l.stamped {
            return Ok(());
        }
        let blocks: usize = l.blocks.iter().sum();
        let s = self.b.stream;
        let slice = self.stamps.slice_mut(..3 * blocks)?;
        // SAFETY: the stamp buffer, alive until the engine synchronises after the sample.
        unsafe { copy::memset_async(slice, 0, s)? };
        let release = self.stamps.as_mut_ptr().wrapping_add(1);
        // SAFETY: every third word from the second: `blocks` rows of 8 bytes at a 24-byte pitch,
        // within the buffer.
        cuda_call!(unsafe { sys::cudaMemset2DAsync(release.cast(), 24, 0xff, 8, blocks, s.as_raw()) })
    }

    /// The metrics a variant gives, in order.
    fn metrics(&self, v: GapVariant) -> Vec<String> {
        let stamped = self.layouts[usize::from(v.pdl)].as_ref().is_some_and(|l| l.stamped);
        let mut m = Vec::new();
        if stamped {
            let two = self.subjects.len() == 2;
            if two {
                m.extend(["gap A->B", "gap B->A"].map(String::from));
                if v.pdl && self.releases[1] {
                    m.push("release A->B".into());
                }
                if v.pdl && self.releases[0] {
                    m.push("release B->A".into());
                }
                m.extend(["span A", "span B"].map(String::from));
            } else {
                m.push("gap".into());
                if v.pdl && self.releases[0] {
                    m.push("release".into());
                }
                m.push("span".into());
            }
        }
        m.push("period".into());
        m
    }

    fn figures(&self, v: GapVariant, kernels: &[KernelTimes]) -> Result<Vec<f64>> {
        let ns = |x: f64| x / 1e9;
        let median = |v: &[f64]| ns(stamps::median(v));
        let mut out = Vec::new();
        // With PDL, where subject `waiter` waits in `s`: the median of its releases, which must exist.
        let push_release = |out: &mut Vec<f64>, s: &Sequence, waiter: usize, what: &str| {
            if !(v.pdl && self.releases[waiter]) {
                return Ok(());
            }
            if s.releases.is_empty() {
                return Err(invalid(format!("a PDL sequence recorded no {what}: the kernel's wait did not run")));
            }
            out.push(median(&s.releases));
            Ok(())
        };
        if self.subjects.len() == 2 {
            let (ab, ba) = (Sequence::every(kernels, 2, 0), Sequence::every(kernels, 2, 1));
            out.push(median(&ab.gaps));
            out.push(median(&ba.gaps));
            push_release(&mut out, &ab, 1, "release of B")?;
            push_release(&mut out, &ba, 0, "release of A")?;
            out.push(median(&ab.spans));
            out.push(median(&ba.spans));
        } else {
            let s = Sequence::of(kernels);
            out.push(median(&s.gaps));
            push_release(&mut out, &s, 0, "release")?;
            out.push(median(&s.spans));
        }
        Ok(out)
    }
}

impl Measure for Gaps<'_> {
    fn variants(&self) -> usize {
        self.variants.len()
    }

    fn sample(&mut self, i: usize) -> Result<Sample> {
        let (b, v) = (self.b, self.variants[i]);
        let l = usize::from(v.pdl);
        let (n, stamped, total) = match &self.layouts[l] {
            Some(x) => (x.forms.len(), x.stamped, x.blocks.iter().sum::<usize>()),
            None => return Err(invalid("a gap variant without a sequence")),
        };
        b.stream.synchronize()?;
        self.reset(v.pdl)?;
        b.inst.reset_clock();
        let blocked = if v.mode == Mode::Queued { Some(b.inst.block(b.stream)?) } else { None };
        b.inst.clock_start(b.stream)?;
        b.start.record(b.stream)?;
        match v.mode {
            Mode::Graph => match &self.graphs[l] {
                Some(g) => g.launch(b.stream)?,
                None => return Err(invalid("a graph variant without its graph")),
            },
            Mode::Eager | Mode::Queued => self.launch_all(v.path, b.stream, v.pdl)?,
        }
        b.stop.record(b.stream)?;
        b.inst.clock_stop(b.stream)?;
        drop(blocked);
        b.stream.synchronize()?;
        b.inst.check_block()?;
        let gpu = b.event_seconds()?;
        let mut values = Vec::new();
        if stamped {
            let host = &mut self.host[..3 * total];
            copy::d2h_blocking(host, self.stamps.slice(..3 * total)?, b.stream)?;
            let blocks = self.layouts[l].as_ref().map(|x| x.blocks.clone()).unwrap_or_default();
            let kernels = stamps::reduce(host, &blocks).map_err(invalid)?;
            values = self.figures(v, &kernels)?;
        }
        values.push(gpu / n as f64);
        Ok(Sample { values, elapsed: gpu, clock: b.inst.clock_reading() })
    }
}

impl Engine {
    /// GPU gaps of sequences of `a` after itself, or of `a` then `b` (A B A B ...): eager, queued
    /// and in a graph, without and with PDL where both kernels can; ordo's launch against
    /// `cudaLaunchKernelEx` (graphs: ordo's capture only, the nodes are the same).
    pub fn gaps(&mut self, a: &mut Subject, b: Option<&mut Subject>) -> Result<Vec<Row>> {
        let device = self.device;
        device.with_current(|| self.gaps_here(a, b))
    }

    fn gaps_here(&mut self, a: &mut Subject, b: Option<&mut Subject>) -> Result<Vec<Row>> {
        let (settings, hz, k) = (self.options.settings, self.default_hz, self.options.launches.max(2));
        let two = b.is_some();
        let kernel = match &b {
            Some(b) => format!("{} -> {}", a.name(), b.name()),
            None => a.name().to_owned(),
        };
        let mut subjects: Vec<&mut Subject> = vec![a];
        subjects.extend(b);
        // A PDL sequence launches every kernel after the first with PDL: all must wait or have a
        // PDL form (`no_pdl_note` says which does not).
        let pdl_possible = subjects.iter().all(|s| s.has_pdl());
        let mut layouts: [Option<Layout>; 2] = [None, None];
        let mut notes = Vec::new();
        // Stamps for at most 2^20 blocks a sequence (24 MiB read back a sample): fewer launches
        // for large grids.
        const MAX_SLOTS: usize = 1 << 20;
        for pdl in [false, true] {
            if pdl && !pdl_possible {
                continue;
            }
            let mut forms = Vec::new();
            let mut stamped = true;
            for i in 0..k {
                let s = if two { i % 2 } else { 0 };
                let (f, st) = subjects[s].form(pdl).ok_or_else(|| invalid("no form to launch"))?;
                stamped &= st;
                forms.push((s, f));
            }
            let blocks: Vec<usize> = forms
                .iter()
                .map(|&(s, f)| usize::try_from(subjects[s].forms[f].blocks()).unwrap_or(usize::MAX))
                .collect();
            let mut n = forms.len();
            if stamped {
                let mut total = 0usize;
                for (i, &bl) in blocks.iter().enumerate() {
                    total = total.saturating_add(bl);
                    if total > MAX_SLOTS {
                        n = i.max(2);
                        break;
                    }
                }
                if n < forms.len() {
                    notes.push(format!(
                        "{n} launches a sequence: the stamps of {k} would not fit in {MAX_SLOTS} blocks"
                    ));
                }
            }
            forms.truncate(n);
            let blocks = blocks[..n].to_vec();
            let mut offsets = Vec::with_capacity(n);
            let mut at = 0usize;
            for &bl in &blocks {
                offsets.push(at);
                at = at.saturating_add(bl);
            }
            layouts[usize::from(pdl)] = Some(Layout { forms, blocks, offsets, stamped });
        }
        let slots = layouts.iter().flatten().map(|l| l.blocks.iter().sum::<usize>()).max().unwrap_or(1);
        let words = slots.checked_mul(3).ok_or_else(|| invalid("a sequence too large"))?.max(3);
        let stamps = SharedStreamBuffer::<u64>::zeroed_async(words, &self.stream)?;
        let releases: Vec<bool> = subjects.iter().map(|s| s.releases).collect();
        if !layouts[0].as_ref().is_some_and(|l| l.stamped) {
            notes.push(
                "no stamps (give the kernel a `stamps` argument, or PTX or CUDA C to instrument): period only".into(),
            );
        }
        let support: Vec<(&str, PdlSupport)> = subjects.iter().map(|s| (s.name(), s.pdl_support())).collect();
        let support: Vec<(&str, &PdlSupport)> = support.iter().map(|(n, s)| (*n, s)).collect();
        notes.extend(no_pdl_note(&support));
        let mut env = std::mem::take(&mut self.env);
        let bench = self.bench();
        let mut variants = Vec::new();
        for mode in [Mode::Eager, Mode::Queued, Mode::Graph] {
            for pdl in [false, true] {
                if layouts[usize::from(pdl)].is_none() {
                    continue;
                }
                let paths: &[Path] =
                    if mode == Mode::Graph { &[Path::Ordo] } else { &[Path::Ordo, Path::LaunchKernelEx] };
                variants.extend(paths.iter().map(|&path| GapVariant { mode, pdl, path }));
            }
        }
        let mut m = Gaps {
            b: bench,
            subjects,
            variants,
            layouts,
            host: vec![0; words],
            stamps,
            graphs: [None, None],
            releases,
        };
        let result = (|| -> Result<Vec<Series>> {
            // Every form once outside the measurement (loads lazily loaded modules, checks the
            // launches), then the graphs.
            for pdl in [false, true] {
                if m.layouts[usize::from(pdl)].is_some() {
                    m.launch_all(Path::Ordo, bench.stream, pdl)?;
                    bench.stream.synchronize()?;
                }
            }
            for pdl in [false, true] {
                if m.layouts[usize::from(pdl)].is_none() {
                    continue;
                }
                let stream = bench.stream;
                // SAFETY: the captured launches use the stamp buffer and the subjects' arguments,
                // which outlive the graph (dropped with `m`, replayed only by `m.sample`); nothing
                // else uses the engine's stream meanwhile (the engine is borrowed mutably).
                let graph =
                    unsafe { capture(stream, CaptureMode::ThreadLocal, |cs| m.launch_all(Path::Ordo, cs, pdl)) }?;
                let exec = graph.instantiate(InstantiateFlags::empty())?;
                exec.upload(stream)?;
                m.graphs[usize::from(pdl)] = Some(exec);
            }
            bench.stream.synchronize()?;
            runner::run(&mut m, &settings, hz, &mut env)
        })();
        let infos: Vec<VariantInfo> = m
            .variants
            .iter()
            .map(|&v| VariantInfo {
                name: v.name(),
                baseline: (v.path == Path::Ordo && v.mode != Mode::Graph)
                    .then(|| GapVariant { path: Path::LaunchKernelEx, ..v }.name()),
                metrics: m.metrics(v),
            })
            .collect();
        let n = m.layouts[0].as_ref().map_or(k, |l| l.forms.len());
        drop(m);
        self.env = env;
        let series = result?;
        notes.insert(0, format!("sequences of {n} launches; gap, release and span: the median over a sequence's boundaries, from %globaltimer stamps; period: the sequence's GPU time (events) over its launches"));
        Ok(to_rows(&kernel, "gaps", &infos, &series, &notes.join("; ")))
    }
}
