//! The app of ../ordo on cudarc: a stream, device buffers, an asynchronous copy, the app's own kernel
//! (loaded from the fatbin build.rs made) captured into a graph and replayed, an event, and the
//! result checked against the CPU.
use cudarc::driver::{sys, CudaContext, DriverError, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use std::process::ExitCode;

static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/scale.fatbin"));
const N: usize = 1 << 20;
const REPLAYS: usize = 3;

fn run() -> Result<bool, DriverError> {
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let module = ctx.load_module(Ptx::from_binary(FATBIN.to_vec()))?;
    let scale_add = module.load_function("scale_add")?;
    let host_x: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.25).collect();
    let x = stream.clone_htod(&host_x)?;
    let mut y = stream.alloc_zeros::<f32>(N)?;

    let config = LaunchConfig::for_num_elems(N as u32);
    let (a, n) = (2.0f32, N as i32);
    stream.synchronize()?; // the copy and the zeroing are done before the capture begins
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
    // SAFETY: scale_add reads `x` and writes `y` within N elements; both outlive every replay.
    let launched = unsafe { stream.launch_builder(&scale_add).arg(&a).arg(&x).arg(&mut y).arg(&n).launch(config) };
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0))?;
    launched?;
    let Some(graph) = graph else { return Ok(false) };
    for _ in 0..REPLAYS {
        graph.launch()?;
    }
    let done = stream.record_event(None)?;
    done.synchronize()?;
    let host_y = stream.clone_dtoh(&y)?;

    let wrong = host_x.iter().zip(&host_y).filter(|(x, y)| **y != REPLAYS as f32 * 2.0 * **x).count();
    println!("embedder-cudarc: {REPLAYS} graph replays of scale_add over {N} elements: {wrong} wrong");
    Ok(wrong == 0)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("embedder-cudarc: {e:?}");
            ExitCode::FAILURE
        }
    }
}
