//! cudarc's side of the launch comparison (used by the ordo-bench report and the criterion benches):
//! the baselines' kernels loaded into the device's primary context (the runtime's too) from the
//! fatbin build.rs makes of the same source, launched with `launch_builder`.

use ordo_cuda_core::{Device, Error, Result};
use std::time::Instant;

/// The baselines' kernels as a module image, for cudarc (the same source, compiled by nvcc).
static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/baseline.fatbin"));

/// cudarc's side: its context (the device's primary context, the runtime's too), stream, module
/// and a `CudaSlice` argument.
pub struct Cudarc {
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
    empty: cudarc::driver::CudaFunction,
    ptr_int: cudarc::driver::CudaFunction,
    slice: cudarc::driver::CudaSlice<f32>,
}

/// cudarc has its own error type: print it, and stop the group with the call named.
fn rc(what: &'static str, e: impl std::fmt::Debug) -> Error {
    eprintln!("\nordo-bench: cudarc {what}: {e:?}");
    Error::invalid("cudarc", what)
}

impl Cudarc {
    pub fn new(device: Device) -> Result<Cudarc> {
        let ctx = cudarc::driver::CudaContext::new(device.ordinal() as usize).map_err(|e| rc("CudaContext::new", e))?;
        let stream = ctx.new_stream().map_err(|e| rc("new_stream", e))?;
        let module =
            ctx.load_module(cudarc::nvrtc::Ptx::from_binary(FATBIN.to_vec())).map_err(|e| rc("load_module", e))?;
        let empty = module.load_function("bl_empty").map_err(|e| rc("load_function", e))?;
        let ptr_int = module.load_function("bl_ptr_int").map_err(|e| rc("load_function", e))?;
        let slice = stream.alloc_zeros::<f32>(32).map_err(|e| rc("alloc_zeros", e))?;
        Ok(Cudarc { stream, empty, ptr_int, slice })
    }

    /// Host microseconds a launch over `iters` launches. cudarc's builder collects the arguments in
    /// a `Vec`, and with a device slice waits on and records the slice's events (its default
    /// multi-stream tracking): both are part of what a launch costs there.
    pub fn submit_us(&mut self, ptr_kernel: bool, iters: usize) -> Result<f64> {
        use cudarc::driver::{LaunchConfig as RcConfig, PushKernelArg};
        let one = RcConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        let warp = RcConfig { grid_dim: (1, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: 0 };
        self.stream.synchronize().map_err(|e| rc("synchronize", e))?;
        let t0 = Instant::now();
        for i in 0..iters as i32 {
            // SAFETY: bl_empty touches nothing; bl_ptr_int(p, i) writes only for a negative i.
            let launched = unsafe {
                if ptr_kernel {
                    self.stream.launch_builder(&self.ptr_int).arg(&mut self.slice).arg(&i).launch(warp)
                } else {
                    self.stream.launch_builder(&self.empty).launch(one)
                }
            };
            launched.map_err(|e| rc("launch", e))?;
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / iters as f64;
        self.stream.synchronize().map_err(|e| rc("synchronize", e))?;
        Ok(us)
    }
}
