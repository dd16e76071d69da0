//! PDL: chains of 100 dependent kernels at 4096, 128K and 4M elements, eager and graph, PDL off
//! and on (GPU time a kernel, from events; the GPU-side gaps are in `gaps`).

use crate::{ms_between, Report};
use ordo_benches::{cpp, interleave};
use ordo_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_core::memory::copy;
use ordo_core::*;
use ordo_kernels::{ChainPdl, ChainPlan};

pub(crate) fn pdl_group(r: &mut Report, rounds: usize) -> Result<()> {
    const STEPS: usize = 100;
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    for n in [4096usize, 128 << 10, 4 << 20] {
        r.progress(&format!("PDL chains, n = {n}"));
        let mut a = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let mut b = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
        let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
        copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
        let off = ChainPlan::new(device, n, ChainPdl::Off)?;
        let auto = ChainPlan::new(device, n, ChainPdl::Auto)?;
        let mut execs = Vec::new();
        for plan in [&off, &auto] {
            // SAFETY: `a`, `b` and `scale` are declared before `execs`, so they outlive every
            // executable graph, and are freed on `s` after its replays; nothing else uses `s`
            // during the capture.
            let g = unsafe {
                capture(s, CaptureMode::Global, |cs| {
                    ordo_kernels::chain(cs, a.as_mut_slice(), b.as_mut_slice(), scale.as_slice(), STEPS, plan)
                })
            }?;
            let e = g.instantiate(InstantiateFlags::empty())?;
            e.upload(s)?;
            execs.push(e);
        }
        let (ap, bp, sp) = (a.as_mut_ptr(), b.as_mut_ptr(), scale.as_ptr());
        let run_chain = |plan: &ChainPlan| {
            ms_between(s, &start, &end, || unsafe {
                ordo_kernels::chain(
                    s,
                    DeviceSliceMut::from_raw_parts(ap, n),
                    DeviceSliceMut::from_raw_parts(bp, n),
                    DeviceSlice::from_raw_parts(sp, n),
                    STEPS,
                    plan,
                )
            })
        };
        let m = interleave(
            rounds,
            &mut [
                &mut || run_chain(&off),
                &mut || run_chain(&auto),
                &mut || ms_between(s, &start, &end, || execs[0].launch(s)),
                &mut || ms_between(s, &start, &end, || execs[1].launch(s)),
                &mut || Ok(unsafe { cpp::bl_chain_ms(s.as_raw(), ap, bp, sp, n as i32, STEPS as i32, 0) }),
                &mut || Ok(unsafe { cpp::bl_chain_ms(s.as_raw(), ap, bp, sp, n as i32, STEPS as i32, 1) }),
            ],
        )?;
        let per = |ms: f64| ms * 1e3 / STEPS as f64;
        let label = format!("{n}");
        let rule = format!("ordo trigger {:?}", auto.trigger());
        r.add("pdl", format!("chain n={label}: eager, PDL off (ordo vs C++)"), "us", per(m[0]), Some(per(m[4])), "");
        r.add(
            "pdl",
            format!("chain n={label}: eager, ordo PDL vs ordo off"),
            "us",
            per(m[1]),
            Some(per(m[0])),
            rule.clone(),
        );
        r.add(
            "pdl",
            format!("chain n={label}: eager, C++ PDL (wait+trigger at start) vs off"),
            "us",
            per(m[5]),
            Some(per(m[4])),
            "",
        );
        r.add("pdl", format!("chain n={label}: graph, ordo PDL vs graph off"), "us", per(m[3]), Some(per(m[2])), rule);
        // The source's kernel shape: in place, add_one-like, wait then trigger at the start.
        let m = interleave(
            rounds,
            &mut [
                &mut || {
                    Ok::<f64, Error>(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n as i32, STEPS as i32, 1) })
                },
                &mut || Ok(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n as i32, STEPS as i32, 0) }),
            ],
        )?;
        r.add(
            "pdl",
            format!("in-place chain n={label}: C++ PDL (wait+trigger at start) vs off"),
            "us",
            per(m[0]),
            Some(per(m[1])),
            "",
        );
    }
    Ok(())
}
