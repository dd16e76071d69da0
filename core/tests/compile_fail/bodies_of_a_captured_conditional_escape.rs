// The bodies of a conditional node added inside a capture belong to the capture's graph, which
// the capture ends (and may destroy): they cannot leave the function that fills them.
use ordo_cuda_core::graph::{capture, CaptureMode, ConditionalKind};
use ordo_cuda_core::Stream;

fn main() {
    let stream = Stream::new().unwrap();
    let mut escaped = None;
    let _ = unsafe {
        capture(stream.as_stream(), CaptureMode::Global, |cs| {
            cs.capture_conditional(ConditionalKind::While, Some(1), |_, bodies| {
                escaped = Some(bodies);
                Ok(())
            })
        })
    };
    drop(escaped);
}
