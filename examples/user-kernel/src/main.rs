//! Launches a kernel from the user's own `saxpy.cu` through ordo's typed launch, on the user's
//! stream, and checks the result against the CPU: once as a plain kernel, then as a chain of
//! dependent launches in the two forms `ORDO_PDL_KERNELS` compiled, planned by ordo's PDL rule.

use ordo_cuda::launch::{LaunchConfig, PdlKernel, PdlMode};
use ordo_cuda::memory::copy;
use ordo_cuda::{Device, DeviceBuffer, Stream};
use std::process::ExitCode;

// The two forms of saxpy.cu's kernel, by the signature of their host stubs (nvcc generates them):
// each becomes a function returning its `Kernel<(f32, *const f32, *mut f32, i32)>`.
ordo_cuda::declare_kernels! {
    unsafe extern "C" {
        /// `y = a x + y`, the plain form: no `griddepcontrol` instruction.
        fn saxpy(a: f32, x: *const f32, y: *mut f32, n: i32);
        /// The PDL form: reads `y` only after the previous kernel, and lets the next one launch early.
        fn saxpy_pdl(a: f32, x: *const f32, y: *mut f32, n: i32);
    }
}

fn run() -> ordo_cuda::Result<bool> {
    let n = 1 << 20;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let mut dx = DeviceBuffer::<f32>::alloc_async(n, s)?;
    let mut dy = DeviceBuffer::<f32>::alloc_async(n, s)?;
    copy::h2d_blocking(dx.as_mut_slice(), &x, s)?;
    copy::h2d_blocking(dy.as_mut_slice(), &y, s)?;

    // A plain launch of the plain form, one element a thread.
    let kernel = saxpy();
    let config = LaunchConfig::for_elements(n, 256)?;
    // SAFETY: saxpy reads x and writes y within n elements; both are freed on `s`, after it.
    unsafe { kernel.launch(s, &config, (2.0f32, dx.as_ptr(), dy.as_mut_ptr(), n as i32))? };
    let mut once = vec![0f32; n];
    copy::d2h_blocking(&mut once, dy.as_slice(), s)?;
    let expect: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.0f32.mul_add(*x, *y)).collect();
    let ok_once = once == expect;

    // Ten dependent launches planned by ordo's rule: the PDL form within one wave, and larger
    // work (this is 4096 blocks) as a one-wave grid-stride grid. The first launch does not
    // overlap what came before it.
    let both = PdlKernel::new(saxpy(), saxpy_pdl());
    let plan = both.plan(Device::current()?, n, 256, PdlMode::Auto)?;
    for k in 0..10 {
        // SAFETY: as above; every form reads y only after its wait.
        unsafe { both.launch(s, &plan, k > 0, (0.5f32, dx.as_ptr(), dy.as_mut_ptr(), n as i32))? };
    }
    let mut out = vec![0f32; n];
    copy::d2h_blocking(&mut out, dy.as_slice(), s)?;
    let expect: Vec<f32> = expect.iter().zip(&x).map(|(y, x)| (0..10).fold(*y, |y, _| 0.5f32.mul_add(*x, y))).collect();
    let ok_chain = out == expect;
    println!(
        "saxpy over {n} elements from the user's own .cu: {}; 10 dependent launches ({} form over {} of {} blocks): {}",
        if ok_once { "matches the CPU" } else { "MISMATCH" },
        if plan.uses_pdl() { "PDL" } else { "plain" },
        plan.grid(),
        plan.full_blocks(),
        if ok_chain { "match the CPU" } else { "MISMATCH" },
    );
    Ok(ok_once && ok_chain)
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
