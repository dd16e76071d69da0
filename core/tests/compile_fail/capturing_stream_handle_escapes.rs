// Nor can the capturing handle itself leave the closure (to enqueue on, or end, the capture later).
use ordo_cuda_core::graph::{capture, CaptureMode};
use ordo_cuda_core::Stream;

fn main() {
    let stream = Stream::new().unwrap();
    let mut escaped = None;
    let _ = unsafe {
        capture(stream.as_stream(), CaptureMode::Global, |cs| {
            escaped = Some(cs);
            Ok(())
        })
    };
    drop(escaped);
}
