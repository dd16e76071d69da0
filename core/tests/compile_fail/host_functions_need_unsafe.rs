// A host function may not call CUDA (nor may its drop); nothing checks that, so launching one
// is `unsafe`.
use ordo_cuda_core::host_fn::launch_host_fn;
use ordo_cuda_core::Stream;

fn main() {
    let stream = Stream::new().unwrap();
    let _ = launch_host_fn(stream.as_stream(), || {});
}
