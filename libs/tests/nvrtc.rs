//! CUDA C compiled at run time with NVRTC and loaded as a `Library`. Where NVRTC cannot be loaded
//! the tests say so and pass without checking anything; compiling needs no GPU, launching does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nvrtc")]

use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::library::Library;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_libs::nvrtc::Nvrtc;

mod common;
use common::{gpu_lock, Rng};

const SAXPY: &str = r#"
extern "C" __global__ void ordo_saxpy(float a, const float* x, float* y, int n) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < (unsigned)n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
"#;

fn nvrtc(test: &str) -> Option<Nvrtc> {
    match Nvrtc::load() {
        Ok(n) => Some(n),
        Err(e) => {
            println!("{test}: skipped, NVRTC not loadable: {e}");
            None
        }
    }
}

/// Source to PTX: the kernel's entry is in the text; a source with an error gives NVRTC's
/// compilation status and a log that names the error; a NUL in the source is a usage error.
#[test]
fn source_compiles_to_ptx_and_errors_come_with_the_log() {
    let Some(nvrtc) = nvrtc("source_compiles_to_ptx_and_errors_come_with_the_log") else { return };
    let (major, minor) = nvrtc.version().unwrap();
    println!("NVRTC {major}.{minor}");
    assert!(major >= 11);
    let ptx = nvrtc.compile_ptx(SAXPY, "saxpy.cu", &["--gpu-architecture=compute_80", "-DUNUSED=1"]).unwrap();
    assert!(ptx.text().contains(".entry ordo_saxpy"), "{}", ptx.text());
    assert!(ptx.text().contains(".target sm_80"), "the architecture option reached NVRTC");

    let e = nvrtc.compile_ptx("extern \"C\" __global__ void k() { undeclared = 1; }", "bad.cu", &[]).unwrap_err();
    println!("{e}");
    assert!(matches!(e.error, Error::Library(ref l) if l.library == "NVRTC" && l.status == 6), "{e}");
    assert!(e.log.contains("undeclared") && e.log.contains("bad.cu"), "the log says where: {}", e.log);
    let e = nvrtc.compile_ptx(SAXPY, "saxpy.cu", &["--no-such-option"]).unwrap_err();
    assert!(matches!(e.error, Error::Library(ref l) if l.status == 5), "NVRTC_ERROR_INVALID_OPTION: {e}");
    let e = nvrtc.compile_ptx("a\0b", "nul.cu", &[]).unwrap_err();
    assert!(matches!(e.error, Error::Usage(_)), "{e}");
}

/// Compiled for this device, loaded, launched over a grid smaller than the work (the body is a
/// grid-stride loop), checked against the CPU.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn compiled_source_launches_and_matches_the_cpu() {
    let Some(nvrtc) = nvrtc("compiled_source_launches_and_matches_the_cpu") else { return };
    let _gpu = gpu_lock::shared();
    let device = Device::current().unwrap();
    let (major, minor) = device.compute_capability().unwrap();
    let arch = format!("--gpu-architecture=compute_{major}{minor}");
    let ptx = nvrtc.compile_ptx(SAXPY, "saxpy.cu", &[&arch]).unwrap();
    let library = Library::from_ptx(ptx.text()).unwrap();
    // SAFETY: ordo_saxpy takes (float, const float*, float*, int).
    let saxpy = unsafe { library.kernel::<(f32, *const f32, *mut f32, i32)>(c"ordo_saxpy") }.unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let n = 1_000_003;
    let mut rng = Rng(0x5a5a_1234_9876_0001);
    let (x, y) = (rng.f32s(n, -3.0, 3.0), rng.f32s(n, -3.0, 3.0));
    let mut dx = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
    let mut dy = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
    copy::h2d_blocking(dx.as_mut_slice(), &x, s).unwrap();
    copy::h2d_blocking(dy.as_mut_slice(), &y, s).unwrap();
    // SAFETY: both buffers hold n floats on this device and outlive the synchronise below.
    unsafe { saxpy.launch(s, &LaunchConfig::new(1000, 256), (2.5, dx.as_ptr(), dy.as_mut_ptr(), n as i32)) }.unwrap();
    let mut got = vec![0f32; n];
    copy::d2h_blocking(&mut got, dy.as_slice(), s).unwrap();
    let expect: Vec<f32> = x.iter().zip(&y).map(|(&x, &y)| 2.5f32.mul_add(x, y)).collect();
    let plain: Vec<f32> = x.iter().zip(&y).map(|(&x, &y)| 2.5 * x + y).collect();
    // NVRTC contracts a * x + y into one FMA by default, as nvcc does; either rounding is right.
    let ok = got.iter().zip(expect.iter().zip(&plain)).all(|(g, (f, p))| g == f || g == p);
    assert!(ok, "saxpy against the CPU");
    drop((dx, dy));
    stream.synchronize().unwrap();
}
