//! Launch latency: host submit time per launch for ordo's typed launch, plain `cudaLaunchKernelEx`,
//! plain `<<<>>>` and cudarc's `launch_builder`, all launching the same kernels (`bl_empty`, and
//! `bl_ptr_int(float*, int)`) A B C D ..., and the launch + synchronise round trip.

use crate::cudarc_side::Cudarc;
use crate::{interleave, Report};
use ordo_benches::cpp;
use ordo_benches::kernels::{bl_empty, bl_ptr_int};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::*;
use std::time::Instant;

/// Launches a sample.
const ITERS: usize = 2000;

pub(crate) fn launch_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("launch latency");
    let mut cudarc = Cudarc::new(Device::current()?)?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut p = DeviceBuffer::<f32>::zeroed_async(32, s)?;
    let pp = p.as_mut_ptr();
    let empty = Kernel::new(bl_empty as unsafe extern "C" fn());
    let ptr_int = Kernel::new(bl_ptr_int as unsafe extern "C" fn(*mut f32, i32));
    let (one, warp) = (LaunchConfig::new(1, 1), LaunchConfig::new(1, 32));
    let device = Device::current()?;
    let (empty_drv, ptr_int_drv) = (empty.for_driver(device)?, ptr_int.for_driver(device)?);
    let driver_submit = |ptr_kernel: bool| -> Result<f64> {
        s.synchronize()?;
        let t0 = Instant::now();
        for i in 0..ITERS as i32 {
            // SAFETY: as below.
            unsafe {
                if ptr_kernel {
                    ptr_int_drv.launch(s, &warp, (pp, i))?
                } else {
                    empty_drv.launch(s, &one, ())?
                }
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / ITERS as f64;
        s.synchronize()?;
        Ok(us)
    };
    let ordo_submit = |ptr_kernel: bool| -> Result<f64> {
        s.synchronize()?;
        let t0 = Instant::now();
        for i in 0..ITERS as i32 {
            // SAFETY: as for cudarc above: the kernels write nothing for i >= 0.
            unsafe {
                if ptr_kernel {
                    ptr_int.launch(s, &warp, (pp, i))?
                } else {
                    empty.launch(s, &one, ())?
                }
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / ITERS as f64;
        s.synchronize()?;
        Ok(us)
    };
    for (ptr_kernel, label) in [(false, "empty kernel"), (true, "kernel(ptr, int)")] {
        r.progress(&format!("launch latency, {label}"));
        // More rounds than elsewhere: the 2% target is near the host's run-to-run noise.
        let m = interleave(
            rounds * 3,
            &mut [
                &mut || ordo_submit(ptr_kernel),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 1, ptr_kernel as i32, pp, ITERS as i32) }),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 0, ptr_kernel as i32, pp, ITERS as i32) }),
                &mut || cudarc.submit_us(ptr_kernel, ITERS),
                &mut || driver_submit(ptr_kernel),
            ],
        )?;
        r.add(
            "launch",
            format!("host submit, {label}: ordo vs cudaLaunchKernelEx"),
            "us",
            m[0],
            Some(m[1]),
            "target within 2%",
        );
        r.add("launch", format!("host submit, {label}: ordo vs <<<>>>"), "us", m[0], Some(m[2]), "");
        let arg = if ptr_kernel { ", a CudaSlice argument" } else { "" };
        r.add(
            "launch",
            format!("host submit, {label}: ordo vs cudarc launch_builder{arg}"),
            "us",
            m[0],
            Some(m[3]),
            "target at most 0.90x",
        );
        r.add(
            "launch",
            format!("host submit, {label}: ordo's driver path (cuLaunchKernelEx) vs cudaLaunchKernelEx"),
            "us",
            m[4],
            Some(m[1]),
            format!("adopt at most 0.95x; ordo's runtime path {:.3} us", m[0]),
        );
    }
    let rt = interleave(
        rounds * 20,
        &mut [
            &mut || {
                let t0 = Instant::now();
                // SAFETY: touches nothing.
                unsafe { empty.launch(s, &one, ())? };
                s.synchronize()?;
                Ok(t0.elapsed().as_secs_f64() * 1e6)
            },
            &mut || Ok(unsafe { cpp::bl_roundtrip_us(s.as_raw()) }),
        ],
    )?;
    r.add("launch", "launch + synchronize round trip", "us", rt[0], Some(rt[1]), "");
    Ok(())
}
