// A mutable device view hands its elements to whoever holds it: it is Send only where the element
// type is Send. A type that is Sync but not Send (like a MutexGuard) must not cross threads in one.
use ordo_cuda_core::DeviceSliceMut;
use std::marker::PhantomData;

struct SyncNotSend(PhantomData<*const ()>);
unsafe impl Sync for SyncNotSend {}

fn main() {
    let view: DeviceSliceMut<'static, SyncNotSend> =
        unsafe { DeviceSliceMut::from_raw_parts(std::ptr::NonNull::dangling().as_ptr(), 0) };
    std::thread::spawn(move || drop(view));
}
