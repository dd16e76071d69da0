//! A copy whose future may be dropped takes its host memory by value: a borrowed pinned view,
//! which could be freed once the future is dropped, does not compile.
use ordo_cuda_core::{future, DeviceBuffer, PinnedBuffer, Stream};

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Stream::new()?;
    let mut dev = DeviceBuffer::<u32>::alloc_async(256, stream.as_stream())?;
    let host = PinnedBuffer::from_slice(&[1u32; 256])?;
    let copy = future::copy::h2d(dev.as_mut_slice(), host.pinned(), stream.as_stream())?;
    drop(copy);
    Ok(())
}
