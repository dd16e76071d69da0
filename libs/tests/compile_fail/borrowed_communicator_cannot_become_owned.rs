// Nor can a borrowed communicator be turned into an owned one, whose drop would destroy it.
use ordo_cuda_libs::nccl::{BorrowedCommunicator, Communicator};

fn own(comm: BorrowedCommunicator<'_>) -> Communicator {
    *comm
}

fn main() {}
