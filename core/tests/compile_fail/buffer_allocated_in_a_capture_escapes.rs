// A buffer allocated on the capturing stream inside a capture is an allocation node of the graph:
// the handle `capture` gives its closure lives only for the call, so the buffer cannot leave it.
use ordo_cuda_core::graph::{capture, CaptureMode};
use ordo_cuda_core::{DeviceBuffer, Stream};

fn main() {
    let stream = Stream::new().unwrap();
    let mut escaped = None;
    let _ = unsafe {
        capture(stream.as_stream(), CaptureMode::Global, |cs| {
            escaped = Some(DeviceBuffer::<f32>::alloc_async(4, cs)?);
            Ok(())
        })
    };
    drop(escaped);
}
