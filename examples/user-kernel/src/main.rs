//! Launches a kernel from the user's own `saxpy.cu` through ordo's typed launch, on the user's
//! stream, and checks the result against the CPU.

use ordo::launch::{Kernel, LaunchConfig};
use ordo::memory::copy;
use ordo::{DeviceBuffer, Stream};
use std::process::ExitCode;

extern "C" {
    // The host stub nvcc generated for `extern "C" __global__ void saxpy(float, const float*, float*, int)`.
    fn saxpy(a: f32, x: *const f32, y: *mut f32, n: i32);
}

fn run() -> ordo::Result<bool> {
    let n = 1 << 20;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut dx = DeviceBuffer::<f32>::alloc_async(n, s)?;
    let mut dy = DeviceBuffer::<f32>::alloc_async(n, s)?;
    copy::h2d_blocking(dx.as_mut_slice(), &x, s)?;
    copy::h2d_blocking(dy.as_mut_slice(), &y, s)?;

    let kernel = Kernel::new(saxpy as unsafe extern "C" fn(f32, *const f32, *mut f32, i32));
    let config = LaunchConfig::for_elements(n, 256)?;
    // SAFETY: saxpy reads x and writes y within n elements; both are freed on `s`, after it.
    unsafe { kernel.launch(s, &config, (2.0f32, dx.as_ptr(), dy.as_mut_ptr(), n as i32))? };

    let mut out = vec![0f32; n];
    copy::d2h_blocking(&mut out, dy.as_slice(), s)?;
    let ok = out.iter().zip(x.iter().zip(&y)).all(|(o, (x, y))| *o == 2.0f32.mul_add(*x, *y));
    println!("saxpy over {n} elements from the user's own .cu: {}", if ok { "matches the CPU" } else { "MISMATCH" });
    Ok(ok)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("user-kernel: {e}");
            ExitCode::FAILURE
        }
    }
}
