// A borrowed communicator is its owner's to abort: `abort` takes a `Communicator` by value, which
// a `BorrowedCommunicator` (a shared view) cannot give.
use ordo_cuda_libs::nccl::BorrowedCommunicator;

fn end(comm: BorrowedCommunicator<'_>) {
    let _ = comm.abort();
}

fn main() {}
