// A SharedStreamBuffer keeps its stream alive, but its views borrow the buffer: a view (and the
// stream through its origin) cannot outlive the buffer.
use ordo_cuda_core::{SharedStreamBuffer, Stream};
use std::sync::Arc;

fn main() {
    let stream = Arc::new(Stream::new().unwrap());
    let view;
    {
        let buffer = SharedStreamBuffer::<f32>::alloc_async(4, &stream).unwrap();
        view = buffer.as_slice();
    }
    let _ = view.origin();
}
