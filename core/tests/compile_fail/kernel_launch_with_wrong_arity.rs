//! A kernel declared once (`declare_kernels!`) is launched with all of its parameters: a tuple
//! with one missing does not compile.
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
    let x = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
    let mut y = DeviceBuffer::<f32>::zeroed_async(4096, s)?;
    let config = LaunchConfig::for_elements(4096, 256)?;
    unsafe { saxpy().launch(s, &config, (y.as_mut_ptr(), x.as_ptr(), 2.0)) }
}
