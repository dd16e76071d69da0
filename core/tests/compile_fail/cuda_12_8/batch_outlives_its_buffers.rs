// A batch of copies borrows the buffers it copies between until it is gone: a destination cannot
// be freed, or written by the CPU, while the batch may still enqueue a copy into it.
use ordo_cuda_core::memory::{CopyAttributes, CopyBatch};
use ordo_cuda_core::{DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};

fn main() {
    let stream = Stream::new().unwrap();
    let dev = DeviceBuffer::<f32>::alloc_async(4, stream.as_stream()).unwrap();
    let mut out = PinnedBuffer::<f32>::zeroed(4, HostAllocFlags::empty()).unwrap();
    let mut batch = CopyBatch::<2>::new(CopyAttributes::default());
    batch.d2h(out.pinned_mut(), dev.as_slice()).unwrap();
    out[0] = 1.0;
    drop(dev);
    unsafe { batch.enqueue(stream.as_stream()) }.unwrap();
}
