// In the exporting process, a pool allocation cannot be freed while an import of its handle
// lives.
use ordo_cuda_core::ipc::{ImportedPool, IpcPool};
use ordo_cuda_core::{Device, Stream};

fn main() {
    let stream = Stream::new().unwrap();
    let pool = IpcPool::new(Device::from_ordinal(0)).unwrap();
    let imported = ImportedPool::import_fd(pool.export_fd().unwrap(), Device::from_ordinal(0)).unwrap();
    let buffer = pool.alloc::<u32>(4, stream.as_stream()).unwrap();
    let handle = pool.export_pointer(&buffer).unwrap();
    let import = imported.import_pointer::<u32>(&handle, stream.as_stream()).unwrap();
    drop(buffer);
    drop(import);
}
