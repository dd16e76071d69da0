// The handle's life and owner cannot be checked: borrowing one is `unsafe`.
use ordo_cuda_libs::nccl::{BorrowedCommunicator, Nccl};

fn borrow(nccl: &Nccl, raw: *mut core::ffi::c_void) {
    let _ = BorrowedCommunicator::borrow_raw(nccl, raw);
}

fn main() {}
