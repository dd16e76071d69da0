//! PDL against the best plain form: chains of 100 dependent kernels `out = prev * scale + 1` at
//! 4096, 128K, 1M, 4M and 16M elements, eager and graph (GPU time a kernel, from events; the
//! GPU-side gaps are in `gaps`).
//!
//! The baseline is what a user writes without ordo and without PDL: the step compiled with no
//! `griddepcontrol` instruction, launched one element a thread, or as a one-wave grid-stride grid
//! where that is faster; the faster of the two is "the best plain form". Eager, it is plain CUDA
//! C++ (`bl_chain_ms`); in a graph, the same C++ kernels captured through ordo (a graph replays the
//! same nodes whoever captured them). Every variant of a size runs interleaved with the others.

use crate::{interleave, ms_between, Report};
use ordo_benches::cpp;
use ordo_benches::kernels::{bl_chain_step_plain, bl_chain_step_plain_stride};
use ordo_cuda_core::graph::{capture, CaptureMode, GraphExec, InstantiateFlags};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_kernels::{ChainPlan, PdlMode};

const STEPS: usize = 100;

/// ordo's modes, measured in this order (eager and graph).
const MODES: [PdlMode; 4] = [PdlMode::Plain, PdlMode::PdlFullGrid, PdlMode::PdlOneWave, PdlMode::Auto];

pub(crate) fn pdl_group(r: &mut Report, rounds: usize) -> Result<()> {
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    type Step = unsafe extern "C" fn(*const f32, *mut f32, *const f32, i32);
    let plain = Kernel::new(bl_chain_step_plain as Step);
    let plain_stride = Kernel::new(bl_chain_step_plain_stride as Step);
    for n in [4096usize, 128 << 10, 1 << 20, 4 << 20, 16 << 20] {
        r.progress(&format!("PDL chains, n = {n}"));
        let mut a = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let mut b = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
        let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
        copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
        let plans = MODES.map(|m| ChainPlan::new(device, n, m));
        let plans: Vec<ChainPlan> = plans.into_iter().collect::<Result<_>>()?;
        let wave = plans[0].one_wave_blocks();
        let full = plans[0].launch_plan().full_blocks();
        let (ap, bp, sp) = (a.as_mut_ptr(), b.as_mut_ptr(), scale.as_ptr());
        let n32 = n as i32;
        // The user's plain kernels in a graph: one element a thread, and grid-stride over one wave.
        let user_chain = |cs: StreamRef<'_>, stride: bool| -> Result<()> {
            let (kernel, config) = if stride {
                (plain_stride, LaunchConfig::new(wave.min(full), ordo_cuda_kernels::BLOCK))
            } else {
                (plain, LaunchConfig::new(full, ordo_cuda_kernels::BLOCK))
            };
            (0..STEPS).try_for_each(|k| {
                let (prev, out) = if k % 2 == 0 { (ap, bp) } else { (bp, ap) };
                // SAFETY: every buffer holds n floats, which the grid covers; they outlive the kernels.
                unsafe { kernel.launch(cs, &config, (prev.cast_const(), out, sp, n32)) }
            })
        };
        let mut execs: Vec<GraphExec> = Vec::new();
        for stride in [false, true] {
            // SAFETY: the buffers are declared before `execs`, so they outlive every executable
            // graph, and are freed on `s` after its replays; nothing else uses `s` meanwhile.
            let e = unsafe { capture(s, CaptureMode::Global, |cs| user_chain(cs, stride)) }?
                .instantiate(InstantiateFlags::empty())?;
            e.upload(s)?;
            execs.push(e);
        }
        for plan in &plans {
            // SAFETY: as above.
            let g = unsafe {
                capture(s, CaptureMode::Global, |cs| {
                    ordo_cuda_kernels::chain(cs, a.as_mut_slice(), b.as_mut_slice(), scale.as_slice(), STEPS, plan)
                })
            }?;
            let e = g.instantiate(InstantiateFlags::empty())?;
            e.upload(s)?;
            execs.push(e);
        }
        let run_chain = |plan: &ChainPlan| {
            // SAFETY: the views are the buffers above, alive until the end of this iteration.
            ms_between(s, &start, &end, || unsafe {
                ordo_cuda_kernels::chain(
                    s,
                    DeviceSliceMut::from_raw_parts(ap, n),
                    DeviceSliceMut::from_raw_parts(bp, n),
                    DeviceSlice::from_raw_parts(sp, n),
                    STEPS,
                    plan,
                )
            })
        };
        let cpp_chain = |form: i32| -> Result<f64> {
            // SAFETY: the buffers hold n floats each and outlive the call, which waits for its work.
            Ok(unsafe { cpp::bl_chain_ms(s.as_raw(), ap, bp, sp, n32, STEPS as i32, form, wave.min(full) as i32) })
        };
        let graph = |i: usize| ms_between(s, &start, &end, || execs[i].launch(s));
        // Eager: C++ plain, C++ plain one wave, C++ source PDL, then ordo's modes; graph: the
        // user's plain kernel (full, one wave), then ordo's modes.
        let m = interleave(
            rounds,
            &mut [
                &mut || cpp_chain(0),
                &mut || cpp_chain(1),
                &mut || cpp_chain(2),
                &mut || run_chain(&plans[0]),
                &mut || run_chain(&plans[1]),
                &mut || run_chain(&plans[2]),
                &mut || run_chain(&plans[3]),
                &mut || graph(0),
                &mut || graph(1),
                &mut || graph(2),
                &mut || graph(3),
                &mut || graph(4),
                &mut || graph(5),
            ],
        )?;
        let per = |ms: f64| ms * 1e3 / STEPS as f64;
        let m: Vec<f64> = m.into_iter().map(per).collect();
        let auto = &plans[3];
        let choice = if auto.pdl() {
            format!("ordo's choice: PDL form over {} of {} blocks ({} a wave)", auto.blocks(), full, wave)
        } else {
            format!("ordo's choice: plain form over {} of {} blocks ({} a wave)", auto.blocks(), full, wave)
        };
        for (what, plain_full, plain_wave, ordo_plain, pdl_full, pdl_wave, ordo_auto) in
            [("eager", m[0], m[1], m[3], m[4], m[5], m[6]), ("graph", m[7], m[8], m[9], m[10], m[11], m[12])]
        {
            let best = plain_full.min(plain_wave);
            let best_name = if plain_full <= plain_wave { "one element a thread" } else { "one-wave grid-stride" };
            r.add(
                "pdl",
                format!("chain n={n}, {what}: ordo's choice vs the best plain form (C++, no griddepcontrol)"),
                "us",
                ordo_auto,
                Some(best),
                format!(
                    "{choice}; best plain: {best_name}; plain {plain_full:.3}, plain one wave {plain_wave:.3}, PDL one wave {pdl_wave:.3} us"
                ),
            );
            r.add(
                "pdl",
                format!("chain n={n}, {what}: PDL form over the full grid vs the best plain form"),
                "us",
                pdl_full,
                Some(best),
                "the kernel that contains the wait, in every grid: its cost beyond one wave",
            );
            r.add(
                "pdl",
                format!("chain n={n}, {what}: ordo's plain form vs the C++ plain kernel"),
                "us",
                ordo_plain,
                Some(plain_full),
                "one element a thread, no PDL: ordo adds nothing",
            );
        }
        r.add(
            "pdl",
            format!("chain n={n}, eager: C++ source PDL (wait+trigger at start) vs the best plain form"),
            "us",
            m[2],
            Some(m[0].min(m[1])),
            "the source material's placement, one element a thread",
        );
        // The source's kernel shape: in place, wait then trigger at the start, against the same
        // step compiled without griddepcontrol.
        let m = interleave(
            rounds,
            &mut [
                // SAFETY: `a` holds n floats and outlives the calls, which wait for their work.
                &mut || Ok::<f64, Error>(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n32, STEPS as i32, 1) }),
                &mut || Ok(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n32, STEPS as i32, 0) }),
            ],
        )?;
        r.add(
            "pdl",
            format!("in-place chain n={n}: C++ source PDL (wait+trigger at start) vs plain (no griddepcontrol)"),
            "us",
            per(m[0]),
            Some(per(m[1])),
            "",
        );
    }
    Ok(())
}
