//! GPU-side gaps between kernels, from `%globaltimer` stamps the kernels write themselves: back to
//! back (the launches queued behind a spinning kernel, so the gap is the GPU's and not the host's
//! submit rate), and in the PDL chains (entry, release from the PDL wait, and end of every block,
//! reduced to each kernel's first entry, first release and last end).

use crate::Report;
use ordo_benches::kernels::{bl_chain_step_stamped, bl_chain_step_stamped_pdl, bl_spin, bl_stamp};

/// Long enough for the host to queue every launch of a measurement behind it.
const SPIN_NS: u64 = 3_000_000;
use ordo_benches::{cpp, median};
use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
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

/// The smallest step between distinct stamps: the timer's resolution as seen here.
fn resolution_ns(stamps: &[u64]) -> u64 {
    let mut v: Vec<u64> = stamps.iter().copied().filter(|&t| t != 0).collect();
    v.sort_unstable();
    v.dedup();
    v.windows(2).map(|w| w[1] - w[0]).min().unwrap_or(0)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
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
    let mut host = vec![0u64; 2 * COUNT];
    let spin = Kernel::new(bl_spin as unsafe extern "C" fn(u64));
    let stamp = Kernel::new(bl_stamp as unsafe extern "C" fn(*mut u64, i32));
    let (one, warp) = (LaunchConfig::new(1, 1), LaunchConfig::new(1, 32));
    // SAFETY (all launches here): the stamp kernels write st[0 .. 2 COUNT], which outlives them.
    let ordo_launches =
        |cs: StreamRef<'_>| (0..COUNT as i32).try_for_each(|i| unsafe { stamp.launch(cs, &warp, (stp, i)) });
    // SAFETY: `st` is declared before `graph`, so it outlives it, and is freed on `s` after every
    // replay enqueued there; nothing else uses `s` during the capture (one thread).
    let graph = unsafe { capture(s, CaptureMode::Global, ordo_launches) }?.instantiate(InstantiateFlags::empty())?;
    graph.upload(s)?;
    let mut gaps: [Vec<f64>; 3] = Default::default();
    let mut all_gaps: [Vec<f64>; 3] = Default::default();
    let mut resolution = u64::MAX;
    for round in 0..rounds + 1 {
        for k in 0..3 {
            let v = if round % 2 == 0 { k } else { 2 - k };
            match v {
                0 => {
                    unsafe { spin.launch(s, &one, (SPIN_NS,))? };
                    ordo_launches(s)?;
                }
                1 => unsafe { cpp::bl_stamp_run(s.as_raw(), stp, COUNT as i32, SPIN_NS) },
                _ => graph.launch(s)?,
            }
            copy::d2h_blocking(&mut host, st.as_slice(), s)?;
            resolution = resolution.min(resolution_ns(&host));
            let g: Vec<f64> = (0..COUNT - 1).map(|i| (host[2 * i + 2] as f64 - host[2 * i + 1] as f64) / 1e3).collect();
            if round > 0 {
                gaps[v].push(mean(&g));
                all_gaps[v].extend(g);
            }
        }
    }
    let note = |v: usize, all: &mut [Vec<f64>; 3]| {
        format!("median of all gaps {:.3} us; %globaltimer step {resolution} ns", median(&mut all[v]))
    };
    let (n0, n2) = (note(0, &mut all_gaps), note(2, &mut all_gaps));
    r.add(
        "gaps",
        "GPU gap, back-to-back kernels, eager: ordo vs <<<>>>",
        "us",
        median(&mut gaps[0]),
        Some(median(&mut gaps[1])),
        n0,
    );
    r.add("gaps", "GPU gap, back-to-back kernels, graph (ordo)", "us", median(&mut gaps[2]), None, n2);
    Ok(())
}

/// Per kernel of a chain: (first entry, first release from the PDL wait, last end), nanoseconds.
fn reduce(st: &[u64], steps: usize, blocks: usize) -> Vec<(u64, u64, u64)> {
    (0..steps)
        .map(|k| {
            let b = &st[3 * k * blocks..3 * (k + 1) * blocks];
            let min = |o: usize| b.iter().skip(o).step_by(3).copied().min().unwrap_or(0);
            let max = |o: usize| b.iter().skip(o).step_by(3).copied().max().unwrap_or(0);
            (min(0), min(1), max(2))
        })
        .collect()
}

/// The chains of the PDL group (100 dependent kernels at 4096, 128K and 4M elements) with stamps:
/// the gap from a kernel's last block ending to the next kernel's first block starting (negative:
/// they overlap, which is what PDL is for), and to its first block leaving the PDL wait. Eager
/// chains are queued behind a spinning kernel, so that the gaps are the GPU's and not the host's
/// launch rate (a 4096-element kernel runs in a fraction of a launch's host time).
fn pdl_chains(r: &mut Report, rounds: usize) -> Result<()> {
    const STEPS: usize = 100;
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
        const V: usize = 6;
        let mut host = vec![0u64; 3 * blocks * STEPS];
        let mut gap: [Vec<f64>; V] = Default::default();
        let mut release: [Vec<f64>; V] = Default::default();
        let mut duration: [Vec<f64>; V] = Default::default();
        let mut lanes: [Vec<(f64, f64, f64)>; V] = Default::default();
        for round in 0..rounds + 1 {
            for k in 0..V {
                let v = if round % 2 == 0 { k } else { V - 1 - k };
                let spin_then = |plan: &ChainPlan| -> Result<()> {
                    // SAFETY: spins and touches nothing.
                    unsafe { spin.launch(s, &LaunchConfig::new(1, 1), (SPIN_NS,))? };
                    launches(s, plan)
                };
                match v {
                    0 => spin_then(&off)?,
                    1 => spin_then(&auto)?,
                    2 => graphs[0].launch(s)?,
                    3 => graphs[1].launch(s)?,
                    4 => unsafe {
                        cpp::bl_chain_stamped(
                            s.as_raw(),
                            ap,
                            bp,
                            sp,
                            n32,
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
                            n32,
                            STEPS as i32,
                            1,
                            auto.blocks() as i32,
                            stp,
                            SPIN_NS,
                        )
                    },
                }
                copy::d2h_blocking(&mut host, st.as_slice(), s)?;
                let grid = if v % 2 == 0 { off.blocks() } else { auto.blocks() } as usize;
                let kernels = reduce(&host[..3 * grid * STEPS], STEPS, grid);
                if round == 0 {
                    continue;
                }
                let ns = |a: u64, b: u64| (a as f64 - b as f64) / 1e3;
                let mut g: Vec<f64> = kernels.windows(2).map(|w| ns(w[1].0, w[0].2)).collect();
                let mut rel: Vec<f64> = kernels.windows(2).map(|w| ns(w[1].1, w[0].2)).collect();
                let mut dur: Vec<f64> = kernels.iter().map(|k| ns(k.2, k.0)).collect();
                gap[v].push(median(&mut g));
                release[v].push(median(&mut rel));
                duration[v].push(median(&mut dur));
                if lanes[v].is_empty() {
                    let t0 = kernels[0].0;
                    lanes[v] = kernels.iter().take(8).map(|k| (ns(k.0, t0), ns(k.1, t0), ns(k.2, t0))).collect();
                }
            }
        }
        let m = |v: &mut [Vec<f64>; V], i: usize| median(&mut v[i]);
        let (g, rel, dur) = (
            [0, 1, 2, 3, 4, 5].map(|i| m(&mut gap, i)),
            [0, 1, 2, 3, 4, 5].map(|i| m(&mut release, i)),
            [0, 1, 2, 3, 4, 5].map(|i| m(&mut duration, i)),
        );
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
