// The per-thread and legacy default streams name a different stream on each thread (or current
// device): a handle, or a buffer freed on one, must stay where it was made. The type cannot carry
// that, so making one is unsafe.
use ordo_cuda_core::StreamRef;

fn main() {
    let per_thread = StreamRef::per_thread_default();
    let legacy = StreamRef::legacy_default();
    let _ = (per_thread, legacy);
}
