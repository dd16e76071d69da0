// An asynchronous copy takes pinned host memory by type: pageable memory (a Vec) is refused.
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{DeviceBuffer, Stream};

fn main() {
    let stream = Stream::new().unwrap();
    let mut dev = DeviceBuffer::<f32>::alloc_async(4, stream.as_stream()).unwrap();
    let host = vec![1.0f32; 4];
    let _ = unsafe { copy::h2d_async(dev.as_mut_slice(), &host[..], stream.as_stream()) };
}
