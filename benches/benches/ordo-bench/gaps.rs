//! GPU-side gaps between kernels, from `%globaltimer` stamps the kernels write themselves: back to
//! back (the launches queued behind a spinning kernel, so the gap is the GPU's and not the host's
//! submit rate), and in the PDL chains (entry, release from the PDL wait, and end of every block,
//! reduced to each kernel's first entry, first release and last end). Sampled in interleaved
//! rounds by ordo-cuda-measure's runner; the chains' stamps reduced by its `stamps` module, as the
//! `ordo-measure` command reduces a user kernel's.

use crate::{measure_rounds, median, Report};
use ordo_benches::kernels::{bl_chain_step_stamped, bl_chain_step_stamped_pdl, bl_spin, bl_stamp};
use ordo_cuda_measure::stamps::{self, Sequence};
use ordo_cuda_measure::{Measure, Sample};

/// Long enough for the host to queue every launch of a measurement behind it.
const SPIN_NS: u64 = 3_000_000;
/// Kernels a PDL chain.
const STEPS: usize = 100;
use ordo_benches::cpp;
use ordo_cuda_core::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
use ordo_cuda_core::launch::PdlKernel;
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_kernels::{ChainPlan, PdlMode};

/// One chain's first kernels for the SVG: (entry, release, end) a kernel, microseconds from the
/// first kernel's entry.
pub(crate) struct KernelLane {
    pub(crate) label: String,
    pub(crate) kernels: Vec<(f64, f64, f64)>,
}

pub(crate) fn gaps_group(r: &mut Report, rounds: usize) -> Result<()> {
    back_to_back(r, rounds)?;
    pdl_chains(r, rounds)
}

/// Back-to-back launches of a one-block kernel: the gap from one kernel's end to the next one's
/// start, for ordo's launch, C++ `<<<>>>`, and a graph of the same launches.
fn back_to_back(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("GPU gaps between back-to-back kernels");
    const COUNT: usize = 200;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut st = DeviceBuffer::<u64>::zeroed_async(2 * COUNT, s)?;
    let stp = st.as_mut_ptr();
    let spin = Kernel::new(bl_spin as unsafe extern "C" fn(u64));
    let stamp = Kernel::new(bl_stamp as unsafe extern "C" fn(*mut u64, i32));
    let warp = LaunchConfig::new(1, 32);
    // SAFETY (all launches here): the stamp kernels write st[0 .. 2 COUNT], which outlives them.
    let ordo_launches =
        |cs: StreamRef<'_>| (0..COUNT as i32).try_for_each(|i| unsafe { stamp.launch(cs, &warp, (stp, i)) });
    // SAFETY: `st` is declared before `graph`, so it outlives it, and is freed on `s` after every
    // replay enqueued there; nothing else uses `s` during the capture (one thread).
    let graph = unsafe { capture(s, CaptureMode::Global, ordo_launches) }?.instantiate(InstantiateFlags::empty())?;
    graph.upload(s)?;
    let mut m = BackToBack {
        s,
        spin,
        launches: &ordo_launches,
        graph: &graph,
        st: &st,
        stp,
        host: vec![0u64; 2 * COUNT],
        all_gaps: Default::default(),
        calls: [0; 3],
        resolution: u64::MAX,
    };
    let series = measure_rounds(rounds, &mut m)?;
    let resolution = m.resolution;
    let note =
        |v: usize| format!("median of all gaps {:.3} us; %globaltimer step {resolution} ns", median(&m.all_gaps[v]));
    let gap = |v: usize| series[v].summary(0).median;
    r.add("gaps", "GPU gap, back-to-back kernels, eager: ordo vs <<<>>>", "us", gap(0), Some(gap(1)), note(0));
    r.add("gaps", "GPU gap, back-to-back kernels, graph (ordo)", "us", gap(2), None, note(2));
    Ok(())
}

/// The back-to-back variants: ordo's launches behind a spin, C++ `<<<>>>` behind a spin, the
/// graph; a sample is the mean gap of one run of `COUNT` kernels.
struct BackToBack<'a, L> {
    s: StreamRef<'a>,
    spin: Kernel<(u64,)>,
    launches: &'a L,
    graph: &'a GraphExec,
    st: &'a DeviceBuffer<'a, u64>,
    stp: *mut u64,
    host: Vec<u64>,
    /// Every gap of every recorded run, a variant.
    all_gaps: [Vec<f64>; 3],
    calls: [usize; 3],
    resolution: u64,
}

impl<L: Fn(StreamRef<'_>) -> Result<()>> Measure for BackToBack<'_, L> {
    fn variants(&self) -> usize {
        3
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let s = self.s;
        let count = self.host.len() / 2;
        match v {
            0 => {
                // SAFETY: spins and touches nothing.
                unsafe { self.spin.launch(s, &LaunchConfig::new(1, 1), (SPIN_NS,))? };
                (self.launches)(s)?;
            }
            // SAFETY: the C++ run writes st[0 .. 2 COUNT] and waits for nothing; `st` outlives it.
            1 => unsafe { cpp::bl_stamp_run(s.as_raw(), self.stp, count as i32, SPIN_NS) },
            _ => self.graph.launch(s)?,
        }
        copy::d2h_blocking(&mut self.host, self.st.as_slice(), s)?;
        self.resolution = self.resolution.min(stamps::resolution_ns(&self.host).unwrap_or(u64::MAX));
        let h = &self.host;
        let g: Vec<f64> = (0..count - 1).map(|i| (h[2 * i + 2] as f64 - h[2 * i + 1] as f64) / 1e3).collect();
        self.calls[v] += 1;
        // The first call of each variant is the runner's warm-up round.
        if self.calls[v] > 1 {
            self.all_gaps[v].extend_from_slice(&g);
        }
        Ok(Sample::duration(g.iter().sum::<f64>() / g.len().max(1) as f64))
    }
}

/// The chains of the PDL group (100 dependent kernels at 4096, 128K and 4M elements) with stamps:
/// the gap from a kernel's last block ending to the next kernel's first block starting (negative:
/// they overlap, which is what PDL is for), and to its first block leaving the PDL wait. Eager
/// chains are queued behind a spinning kernel, so that the gaps are the GPU's and not the host's
/// launch rate (a 4096-element kernel runs in a fraction of a launch's host time).
fn pdl_chains(r: &mut Report, rounds: usize) -> Result<()> {
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let spin = Kernel::new(bl_spin as unsafe extern "C" fn(u64));
    type Stamped = unsafe extern "C" fn(*const f32, *mut f32, *const f32, i32, *mut u64, i32);
    let step = PdlKernel::new(
        Kernel::new(bl_chain_step_stamped as Stamped),
        Kernel::new(bl_chain_step_stamped_pdl as Stamped),
    );
    for n in [4096usize, 128 << 10, 4 << 20] {
        r.progress(&format!("GPU gaps in PDL chains, n = {n}"));
        let off = ChainPlan::new(device, n, PdlMode::Plain)?;
        let auto = ChainPlan::new(device, n, PdlMode::Auto)?;
        // The stamp buffer holds the larger grid's blocks.
        let blocks = off.blocks().max(auto.blocks()) as usize;
        let mut a = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let mut b = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
        let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
        copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
        let mut st = DeviceBuffer::<u64>::zeroed_async(3 * blocks * STEPS, s)?;
        let (ap, bp, sp, stp) = (a.as_mut_ptr(), b.as_mut_ptr(), scale.as_ptr(), st.as_mut_ptr());
        let n32 = n as i32;
        let launches = |cs: StreamRef<'_>, plan: &ChainPlan| -> Result<()> {
            (0..STEPS).try_for_each(|k| {
                let (prev, out) = if k % 2 == 0 { (ap, bp) } else { (bp, ap) };
                // SAFETY: every buffer holds what the grid touches and outlives the kernels; the
                // first step is launched without the PDL attribute, as ordo_cuda_kernels::chain does.
                unsafe { step.launch(cs, plan.launch_plan(), k > 0, (prev.cast_const(), out, sp, n32, stp, k as i32)) }
            })
        };
        let mut graphs = Vec::new();
        for plan in [&off, &auto] {
            // SAFETY: the buffers the launches use are declared before `graphs`, so they outlive
            // every executable graph, and are freed on `s` after its replays; nothing else uses
            // `s` during the capture.
            let g = unsafe { capture(s, CaptureMode::Global, |cs| launches(cs, plan)) }?
                .instantiate(InstantiateFlags::empty())?;
            g.upload(s)?;
            graphs.push(g);
        }
        // Variants: ordo eager plain / rule, graph plain / rule, C++ eager plain / rule (same kernels, same grids).
        let mut m = Chains {
            s,
            spin,
            launches: &launches,
            plans: [&off, &auto],
            graphs: &graphs,
            st: &st,
            bufs: (ap, bp, sp, stp),
            n: n32,
            host: vec![0u64; 3 * blocks * STEPS],
            lanes: Default::default(),
            calls: [0; 6],
        };
        let series = measure_rounds(rounds, &mut m)?;
        let mut lanes = std::mem::take(&mut m.lanes);
        let fig = |metric: usize| -> [f64; 6] { core::array::from_fn(|v| series[v].summary(metric).median) };
        let (g, rel, dur) = (fig(0), fig(1), fig(2));
        let tr = format!("PDL form over {} blocks", auto.blocks());
        r.add(
            "gaps",
            format!("chain n={n}, eager (queued), PDL off: end -> next start, ordo vs C++"),
            "us",
            g[0],
            Some(g[4]),
            format!("kernel {:.2} us", dur[0]),
        );
        r.add(
            "gaps",
            format!("chain n={n}, eager (queued), PDL: end -> next start, ordo vs C++"),
            "us",
            g[1],
            Some(g[5]),
            format!("negative would be overlap; {tr}; kernel {:.2} us", dur[1]),
        );
        r.add(
            "gaps",
            format!("chain n={n}, graph, PDL off: end -> next start"),
            "us",
            g[2],
            None,
            format!("kernel {:.2} us", dur[2]),
        );
        r.add(
            "gaps",
            format!("chain n={n}, graph, PDL: end -> next start"),
            "us",
            g[3],
            None,
            format!("kernel {:.2} us (first entry to last end)", dur[3]),
        );
        r.add(
            "gaps",
            format!("chain n={n}, PDL: end -> release from the wait, eager (queued) / graph"),
            "us",
            rel[1],
            None,
            format!("graph {:.3} us; C++ eager {:.3} us", rel[3], rel[5]),
        );
        for (v, what) in [(2, "graph, PDL off"), (3, "graph, PDL")] {
            r.kernel_lanes.push(KernelLane { label: format!("n={n} {what}"), kernels: std::mem::take(&mut lanes[v]) });
        }
    }
    Ok(())
}

/// The chain variants (ordo eager plain / rule, graph plain / rule, C++ eager plain / rule); a
/// sample is one chain's median gap, median release and median kernel span, microseconds.
struct Chains<'a, L> {
    s: StreamRef<'a>,
    spin: Kernel<(u64,)>,
    launches: &'a L,
    /// PDL off, ordo's rule.
    plans: [&'a ChainPlan; 2],
    graphs: &'a [GraphExec],
    st: &'a DeviceBuffer<'a, u64>,
    bufs: (*mut f32, *mut f32, *const f32, *mut u64),
    n: i32,
    host: Vec<u64>,
    /// The first recorded run's first kernels, a variant, for the SVG.
    lanes: [Vec<(f64, f64, f64)>; 6],
    calls: [usize; 6],
}

impl<L: Fn(StreamRef<'_>, &ChainPlan) -> Result<()>> Measure for Chains<'_, L> {
    fn variants(&self) -> usize {
        6
    }

    fn sample(&mut self, v: usize) -> Result<Sample> {
        let s = self.s;
        let (ap, bp, sp, stp) = self.bufs;
        let spin_then = |plan: &ChainPlan| -> Result<()> {
            // SAFETY: spins and touches nothing.
            unsafe { self.spin.launch(s, &LaunchConfig::new(1, 1), (SPIN_NS,))? };
            (self.launches)(s, plan)
        };
        let [off, auto] = self.plans;
        match v {
            0 => spin_then(off)?,
            1 => spin_then(auto)?,
            2 => self.graphs[0].launch(s)?,
            3 => self.graphs[1].launch(s)?,
            // SAFETY (C++): every buffer holds what the grid touches and outlives the calls.
            4 => unsafe {
                cpp::bl_chain_stamped(
                    s.as_raw(),
                    ap,
                    bp,
                    sp,
                    self.n,
                    STEPS as i32,
                    0,
                    off.blocks() as i32,
                    stp,
                    SPIN_NS,
                )
            },
            _ => unsafe {
                cpp::bl_chain_stamped(
                    s.as_raw(),
                    ap,
                    bp,
                    sp,
                    self.n,
                    STEPS as i32,
                    1,
                    auto.blocks() as i32,
                    stp,
                    SPIN_NS,
                )
            },
        }
        copy::d2h_blocking(&mut self.host, self.st.as_slice(), s)?;
        let grid = if v % 2 == 0 { off.blocks() } else { auto.blocks() } as usize;
        let kernels = stamps::reduce(&self.host[..3 * grid * STEPS], &[grid; STEPS])
            .map_err(|e| Error::invalid("ordo-bench gaps", e))?;
        let seq = Sequence::of(&kernels);
        self.calls[v] += 1;
        // The first call of each variant is the runner's warm-up round.
        if self.calls[v] > 1 && self.lanes[v].is_empty() {
            let t0 = kernels[0].entry;
            let us = |a: u64| (a as f64 - t0 as f64) / 1e3;
            self.lanes[v] =
                kernels.iter().take(8).map(|k| (us(k.entry), us(k.release.unwrap_or(k.entry)), us(k.end))).collect();
        }
        let us = |v: &[f64]| median(v) / 1e3;
        Ok(Sample { values: vec![us(&seq.gaps), us(&seq.releases), us(&seq.spans)], elapsed: 0.0, clock: None })
    }
}
