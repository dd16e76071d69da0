// A partition's stream is destroyed on drop, so a buffer freed on it cannot outlive it.
use ordo_cuda_core::partition::SmSplit;
use ordo_cuda_core::{Device, DeviceBuffer};

fn main() {
    let (decode, _rest) = SmSplit::new(Device::from_ordinal(0), 16).unwrap().one_and_rest().unwrap();
    let buffer;
    {
        let stream = decode.stream().unwrap();
        buffer = DeviceBuffer::<f32>::alloc_async(4, stream.as_stream()).unwrap();
    }
    drop(buffer);
}
