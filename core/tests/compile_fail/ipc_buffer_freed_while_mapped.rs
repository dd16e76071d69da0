// In the exporting process, an IPC buffer cannot be freed while a mapping opened from its handle
// lives: the handle borrows the buffer, the mapping the handle.
use ordo_cuda_core::ipc::{IpcBuffer, IpcMapping};
use ordo_cuda_core::Stream;

fn main() {
    let stream = Stream::new().unwrap();
    let buffer = IpcBuffer::<u32>::alloc(4, stream.as_stream()).unwrap();
    let handle = buffer.export().unwrap();
    let mapping = IpcMapping::<u32>::open(&handle, stream.as_stream()).unwrap();
    drop(buffer);
    drop(mapping);
}
