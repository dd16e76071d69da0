//! A device buffer read by a copy in flight cannot be written (borrowed exclusively) until the
//! copy's future is done.
use ordo_cuda_core::{future, HostAllocFlags, PinnedBuffer, Stream};

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut dev = ordo_cuda_core::DeviceBuffer::<u32>::alloc_async(256, s)?;
    let out = PinnedBuffer::<u32>::zeroed(256, HostAllocFlags::empty())?;
    let read = future::copy::d2h(out, dev.as_slice(), s)?;
    let write = future::copy::memset(dev.as_mut_slice(), 0, s)?;
    drop((read, write));
    Ok(())
}
