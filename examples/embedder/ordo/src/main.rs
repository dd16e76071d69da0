//! An engine's use of the CUDA runtime through ordo-cuda-core alone: a stream, device and pinned
//! buffers, an asynchronous copy, the app's own kernel captured into a graph and replayed, an event,
//! and the result checked against the CPU.
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{
    capture, CaptureMode, DeviceBuffer, Event, HostAllocFlags, InstantiateFlags, PinnedBuffer, Stream,
};
use std::process::ExitCode;

extern "C" {
    /// The host stub of `scale_add` (../scale.cu).
    fn scale_add(a: f32, x: *const f32, y: *mut f32, n: i32);
}

const N: usize = 1 << 20;
const REPLAYS: usize = 3;

fn run() -> ordo_cuda_core::Result<bool> {
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let host_x = PinnedBuffer::from_fn(N, HostAllocFlags::empty(), |i| (i % 1000) as f32 * 0.25)?;
    let mut host_y = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut x = DeviceBuffer::<f32>::alloc_async(N, s)?;
    let mut y = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    // SAFETY: the pinned buffers outlive the copies: the event below is waited on before they drop.
    unsafe { copy::h2d_async(x.as_mut_slice(), host_x.pinned(), s)? };

    let kernel = Kernel::new(scale_add as unsafe extern "C" fn(f32, *const f32, *mut f32, i32));
    let config = LaunchConfig::for_elements(N, 256)?;
    let (px, py) = (x.as_ptr(), y.as_mut_ptr());
    // SAFETY: the captured kernel reads `x` and writes `y` within N elements; both buffers outlive
    // every replay (the executable graph is dropped first, and they are freed on `s` after it).
    let graph =
        unsafe { capture(s, CaptureMode::ThreadLocal, |c| kernel.launch(c, &config, (2.0f32, px, py, N as i32)))? };
    let exec = graph.instantiate(InstantiateFlags::empty())?;
    for _ in 0..REPLAYS {
        exec.launch(s)?;
    }
    // SAFETY: as for the first copy.
    unsafe { copy::d2h_async(host_y.pinned_mut(), y.as_slice(), s)? };
    let done = Event::new()?;
    done.record(s)?;
    done.synchronize()?;

    let wrong = host_x.iter().zip(host_y.iter()).filter(|(x, y)| **y != REPLAYS as f32 * 2.0 * **x).count();
    println!("embedder-ordo: {REPLAYS} graph replays of scale_add over {N} elements: {wrong} wrong");
    Ok(wrong == 0)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("embedder-ordo: {e}");
            ExitCode::FAILURE
        }
    }
}
