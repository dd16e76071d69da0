// A staging ticket is its holder's: redeeming it consumes the only copy, so safe code cannot
// redeem a copy and take the slot while the holder still writes it.
use ordo_cuda_core::staging::{StagingRing, Ticket};

fn redeem_twice(ring: &StagingRing<u8>, ticket: Ticket) {
    let copy = ticket.clone();
    let _ = ring.redeem(ticket);
    let _ = ring.redeem(copy);
}

fn main() {}
