//! A kernel declared once (`declare_kernels!`) is launched with its parameter types: an argument
//! of another type does not compile (`u32` for `int n`, and `x` and `y` swapped).
use ordo_cuda_core::{DeviceBuffer, LaunchConfig, Stream};

ordo_cuda_core::declare_kernels! {
    unsafe extern "C" {
        /// `y = a x + y` over `n` elements.
        fn saxpy(y: *mut f32, x: *const f32, a: f32, n: i32);
    }
}

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
    let y = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
    let n: u32 = 4096;
    let config = LaunchConfig::for_elements(4096, 256)?;
    unsafe { saxpy().launch(s, &config, (y.as_ptr(), x.as_mut_ptr(), 2.0, n)) }
}
