// Captured work runs at every replay of the graph, long after the capture: what it uses must stay
// valid for all of them, and nothing else may use the stream while it captures. The type system
// cannot carry that, so every way of capturing is unsafe.
use ordo_cuda_core::graph::{capture, capture_into, CaptureMode, Graph};
use ordo_cuda_core::graph_cache::{default_buckets, GraphCache, Overflow};
use ordo_cuda_core::{Result, Stream, StreamRef};

fn main() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let _ = capture(s, CaptureMode::Global, |_cs| Ok(()));
    let mut graph = Graph::new().unwrap();
    let _ = capture_into(&mut graph, s, CaptureMode::Global, |_cs| Ok(()));
    let _ = s.begin_capture(CaptureMode::Global);
    let _ = s.end_capture();
    let _ = GraphCache::new(default_buckets(), Overflow::Error, |_: StreamRef<'_>, _: usize| -> Result<()> { Ok(()) });
}
