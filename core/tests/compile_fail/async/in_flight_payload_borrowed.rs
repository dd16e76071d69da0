//! What an InFlight keeps until the work completes outlives any scope (it may be released on
//! ordo's poller thread, after the future was dropped): a borrow does not compile.
use ordo_cuda_core::{future::InFlight, Stream};

fn main() -> ordo_cuda_core::Result<()> {
    let stream = Stream::new()?;
    let frame = vec![0u8; 64];
    let in_flight = InFlight::after(stream.as_stream(), &frame).map_err(|(e, _)| e)?;
    drop(in_flight);
    Ok(())
}
