// A DeviceBuffer is freed on its stream when dropped, so it cannot outlive that stream.
use ordo_cuda_core::{DeviceBuffer, Stream};

fn main() {
    let buffer;
    {
        let stream = Stream::new().unwrap();
        buffer = DeviceBuffer::<f32>::alloc_async(4, stream.as_stream()).unwrap();
    }
    drop(buffer);
}
