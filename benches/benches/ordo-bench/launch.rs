//! Launch latency: host submit time per launch, all launching the same kernels (`bl_empty`, and
//! `bl_ptr_int(float*, int)`) in the same interleaved rounds:
//! - ordo's `Kernel::launch`, the default path (the driver's `cuLaunchKernelEx` with the kernel's
//!   `CUkernel` resolved once, where built with CUDA 12.8 or later headers);
//! - ordo's `Kernel::launch_runtime` (`cudaLaunchKernelExC`), the path the default replaced;
//! - ordo's `DriverKernel` (`Kernel::for_driver`: `cuLaunchKernelEx` with the device's
//!   `CUfunction`), to tell a `CUkernel` launch from a `CUfunction` launch;
//! - plain C++ `cudaLaunchKernelEx` and `<<<>>>`, and cudarc's `launch_builder`;
//! - the driver call ordo makes (`cuLaunchKernelEx` with the kernel's `CUkernel`) from C++, to
//!   tell what ordo adds to it;
//!
//! and the launch + synchronise round trip.

use crate::cudarc_side::Cudarc;
use crate::{interleave, Report};
use ordo_benches::cpp;
use ordo_benches::kernels::{bl_empty, bl_ptr_int};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::*;
use std::time::Instant;

/// Launches a sample.
const ITERS: usize = 2000;

/// Which of ordo's launches a sample times.
#[derive(Clone, Copy)]
enum Path {
    /// `Kernel::launch`.
    Default,
    /// `Kernel::launch_runtime`.
    Runtime,
    /// `DriverKernel::launch`.
    DriverFunction,
}

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
    let default_path = format!("{:?}", empty.launch_path());
    let ordo_submit = |path: Path, ptr_kernel: bool| -> Result<f64> {
        s.synchronize()?;
        let t0 = Instant::now();
        for i in 0..ITERS as i32 {
            // SAFETY: as for cudarc: the kernels write nothing for i >= 0.
            unsafe {
                match (path, ptr_kernel) {
                    (Path::Default, true) => ptr_int.launch(s, &warp, (pp, i))?,
                    (Path::Default, false) => empty.launch(s, &one, ())?,
                    (Path::Runtime, true) => ptr_int.launch_runtime(s, &warp, (pp, i))?,
                    (Path::Runtime, false) => empty.launch_runtime(s, &one, ())?,
                    (Path::DriverFunction, true) => ptr_int_drv.launch(s, &warp, (pp, i))?,
                    (Path::DriverFunction, false) => empty_drv.launch(s, &one, ())?,
                }
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / ITERS as f64;
        s.synchronize()?;
        Ok(us)
    };
    for (ptr_kernel, label) in [(false, "empty kernel"), (true, "kernel(ptr, int)")] {
        r.progress(&format!("launch latency, {label}"));
        // More rounds than elsewhere: the targets are near the host's run-to-run noise.
        let m = interleave(
            rounds * 3,
            &mut [
                &mut || ordo_submit(Path::Default, ptr_kernel),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 1, ptr_kernel as i32, pp, ITERS as i32) }),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 0, ptr_kernel as i32, pp, ITERS as i32) }),
                &mut || cudarc.submit_us(ptr_kernel, ITERS),
                &mut || ordo_submit(Path::Runtime, ptr_kernel),
                &mut || ordo_submit(Path::DriverFunction, ptr_kernel),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 2, ptr_kernel as i32, pp, ITERS as i32) }),
            ],
        )?;
        let (default, launch_ex, chevrons, cudarc_us, runtime, driver_function, raw_driver) =
            (m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
        if raw_driver <= 0.0 {
            return Err(Error::invalid("launch", "the C++ side could not set up cuLaunchKernelEx"));
        }
        r.add(
            "launch",
            format!("host submit, {label}: Kernel::launch ({default_path} path) vs cudaLaunchKernelEx"),
            "us",
            default,
            Some(launch_ex),
            "target at most 0.97x",
        );
        let arg = if ptr_kernel { ", a CudaSlice argument" } else { "" };
        r.add(
            "launch",
            format!("host submit, {label}: Kernel::launch vs cudarc launch_builder{arg}"),
            "us",
            default,
            Some(cudarc_us),
            "target at most 1.00x",
        );
        r.add("launch", format!("host submit, {label}: Kernel::launch vs <<<>>>"), "us", default, Some(chevrons), "");
        r.add(
            "launch",
            format!("host submit, {label}: Kernel::launch vs Kernel::launch_runtime"),
            "us",
            default,
            Some(runtime),
            "the default path against the runtime path it replaced",
        );
        r.add(
            "launch",
            format!("host submit, {label}: Kernel::launch_runtime (cudaLaunchKernelExC) vs cudaLaunchKernelEx"),
            "us",
            runtime,
            Some(launch_ex),
            "target within 2%",
        );
        r.add(
            "launch",
            format!("host submit, {label}: Kernel::launch vs the same cuLaunchKernelEx (CUkernel) from C++"),
            "us",
            default,
            Some(raw_driver),
            format!(
                "what ordo adds to the driver call it makes; that call from C++ is {:.3}x cudaLaunchKernelEx",
                raw_driver / launch_ex
            ),
        );
        r.add(
            "launch",
            format!("host submit, {label}: DriverKernel (CUfunction) vs cudaLaunchKernelEx"),
            "us",
            driver_function,
            Some(launch_ex),
            format!("the CUkernel default is {:.3}x this", default / driver_function),
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
