//! A device buffer borrowed by a copy in flight cannot be dropped (freed) while the copy's future lives.
use ordo_cuda_core::{future, DeviceBuffer, PinnedBuffer, Stream};

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Stream::new()?;
    let mut dev = DeviceBuffer::<u32>::alloc_async(256, stream.as_stream())?;
    let host = PinnedBuffer::from_slice(&[1u32; 256])?;
    let copy = future::copy::h2d(dev.as_mut_slice(), host, stream.as_stream())?;
    drop(dev);
    drop(copy);
    Ok(())
}
