//! A device buffer borrowed by a copy in flight cannot be moved away (to another thread, which
//! could free it) while the copy's future lives.
use ordo_cuda_core::{future, HostAllocFlags, PinnedBuffer, SharedStreamBuffer, Stream};
use std::sync::Arc;

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Arc::new(Stream::new()?);
    let dev = SharedStreamBuffer::<u32>::alloc_async(256, &stream)?;
    let out = PinnedBuffer::<u32>::zeroed(256, HostAllocFlags::empty())?;
    let copy = future::copy::d2h(out, dev.as_slice(), stream.as_stream())?;
    std::thread::spawn(move || drop(dev));
    drop(copy);
    Ok(())
}
