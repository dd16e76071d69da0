//! Measures a chain of 100 dependent kernels at 4096, 128K, 1M, 4M and 16M elements, eager and
//! graph, in every launch mode: the plain form (no `griddepcontrol`) over the full grid and over
//! one wave, the PDL form over the full grid and over one wave, and ordo's rule (Auto); µs a
//! kernel, from events. Modes are interleaved (A B C D E A B C D E ...) in one process and medians
//! reported, each with its ratio to the best plain form (the baseline: what a user writes without
//! PDL, in its faster shape). Prints one line and exits non-zero without a GPU.
//!
//!     cargo run --release -p ordo-cuda-kernels --example pdl-chain [-- REPEATS]

use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{Device, DeviceBuffer, Result, Stream, TimingEvent};
use ordo_cuda_kernels::{chain, ChainPlan, PdlMode};
use std::process::ExitCode;

const STEPS: usize = 100;
/// The modes, the two plain baselines first.
const VARIANTS: [PdlMode; 5] =
    [PdlMode::Plain, PdlMode::PlainOneWave, PdlMode::PdlFullGrid, PdlMode::PdlOneWave, PdlMode::Auto];

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn run(repeats: usize) -> Result<()> {
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    println!(
        "{} | {STEPS} dependent kernels | us per kernel, median of {repeats} | ratio to the best plain form",
        device.name()?
    );
    for n in [4096usize, 128 << 10, 1 << 20, 4 << 20, 16 << 20] {
        let init: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.01).collect();
        let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
        let mut a = DeviceBuffer::<f32>::alloc_async(n, s)?;
        let mut b = DeviceBuffer::<f32>::alloc_async(n, s)?;
        let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
        copy::h2d_blocking(a.as_mut_slice(), &init, s)?;
        copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
        let plans: Vec<ChainPlan> = VARIANTS.iter().map(|&p| ChainPlan::new(device, n, p)).collect::<Result<_>>()?;
        let mut execs = Vec::new();
        for plan in &plans {
            // SAFETY: `a`, `b` and `scale` are declared before `execs`, so they outlive every
            // executable graph, and each launch is waited for (`end.synchronize`) before the
            // next round; nothing else uses `s` during the capture (one thread).
            let g = unsafe {
                capture(s, CaptureMode::Global, |cs| {
                    chain(cs, a.as_mut_slice(), b.as_mut_slice(), scale.as_slice(), STEPS, plan)
                })
            }?;
            let exec = g.instantiate(InstantiateFlags::empty())?;
            exec.upload(s)?;
            execs.push(exec);
        }
        let mut eager = vec![Vec::new(); VARIANTS.len()];
        let mut graph = vec![Vec::new(); VARIANTS.len()];
        for rep in 0..repeats + 2 {
            for (v, plan) in plans.iter().enumerate() {
                start.record(s)?;
                unsafe { chain(s, a.as_mut_slice(), b.as_mut_slice(), scale.as_slice(), STEPS, plan)? };
                end.record(s)?;
                end.synchronize()?;
                let e = end.elapsed_ms_since(&start)? as f64 * 1e3 / STEPS as f64;
                start.record(s)?;
                execs[v].launch(s)?;
                end.record(s)?;
                end.synchronize()?;
                let g = end.elapsed_ms_since(&start)? as f64 * 1e3 / STEPS as f64;
                if rep >= 2 {
                    eager[v].push(e);
                    graph[v].push(g);
                }
            }
        }
        let e: Vec<f64> = eager.iter_mut().map(|v| median(v)).collect();
        let g: Vec<f64> = graph.iter_mut().map(|v| median(v)).collect();
        println!(
            "n={n:>8} full grid={:>6} one wave={:>5} | auto: pdl={} blocks={}",
            plans[0].blocks(),
            plans[0].one_wave_blocks(),
            plans[4].pdl(),
            plans[4].blocks()
        );
        for (name, t) in [("eager", &e), ("graph", &g)] {
            let best_plain = t[0].min(t[1]);
            println!(
                "  {name}: plain {:>7.3} | plain one wave {:>7.3} | pdl full grid {:>7.3} ({:.2}x) | pdl one wave {:>7.3} ({:.2}x) | auto {:>7.3} ({:.2}x)",
                t[0], t[1], t[2], t[2] / best_plain, t[3], t[3] / best_plain, t[4], t[4] / best_plain
            );
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let repeats = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(21);
    if let Err(e) = ordo_cuda_core::device::count() {
        eprintln!("pdl-chain: no usable CUDA device: {e}");
        return ExitCode::FAILURE;
    }
    match run(repeats) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pdl-chain: {e}");
            ExitCode::FAILURE
        }
    }
}
