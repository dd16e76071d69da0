//! The app's own kernel launched once through the facade on the app's stream, checked against the
//! CPU.
use ordo_cuda::launch::{Kernel, LaunchConfig};
use ordo_cuda::memory::copy;
use ordo_cuda::{DeviceBuffer, Stream};
use std::process::ExitCode;

extern "C" {
    /// The host stub of `scale_add` (../scale.cu).
    fn scale_add(a: f32, x: *const f32, y: *mut f32, n: i32);
}

const N: usize = 1 << 16;

fn run() -> ordo_cuda::Result<bool> {
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let x: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.25).collect();
    let y: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let mut dx = DeviceBuffer::<f32>::alloc_async(N, s)?;
    let mut dy = DeviceBuffer::<f32>::alloc_async(N, s)?;
    copy::h2d_blocking(dx.as_mut_slice(), &x, s)?;
    copy::h2d_blocking(dy.as_mut_slice(), &y, s)?;
    let kernel = Kernel::new(scale_add as unsafe extern "C" fn(f32, *const f32, *mut f32, i32));
    let config = LaunchConfig::for_elements(N, 256)?;
    // SAFETY: scale_add reads `dx` and writes `dy` within N elements; both are freed on `s`, after it.
    unsafe { kernel.launch(s, &config, (2.0f32, dx.as_ptr(), dy.as_mut_ptr(), N as i32))? };
    let mut out = vec![0f32; N];
    copy::d2h_blocking(&mut out, dy.as_slice(), s)?;
    let wrong = (0..N).filter(|&i| out[i] != 2.0f32.mul_add(x[i], y[i])).count();
    println!("embedder-facade: scale_add over {N} elements: {wrong} wrong");
    Ok(wrong == 0)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("embedder-facade: {e}");
            ExitCode::FAILURE
        }
    }
}
