// In the exporting process, an IPC event cannot be destroyed while an event opened from its
// handle lives.
use ordo_cuda_core::ipc::{ImportedEvent, IpcEvent};

fn main() {
    let event = IpcEvent::new().unwrap();
    let handle = event.export().unwrap();
    let imported = ImportedEvent::open(&handle).unwrap();
    drop(event);
    drop(imported);
}
