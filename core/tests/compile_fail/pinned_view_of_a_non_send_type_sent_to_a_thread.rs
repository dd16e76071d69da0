// As for device views: a mutable pinned view is Send only where the element type is Send.
use ordo_cuda_core::PinnedSliceMut;
use std::marker::PhantomData;

struct SyncNotSend(PhantomData<*const ()>);
unsafe impl Sync for SyncNotSend {}

fn main() {
    let view: PinnedSliceMut<'static, SyncNotSend> =
        unsafe { PinnedSliceMut::from_raw_parts(std::ptr::NonNull::dangling().as_ptr(), 0) };
    std::thread::spawn(move || drop(view));
}
