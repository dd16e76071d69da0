//! NCCL in one process on one GPU: a communicator of one rank, enough for what one rank alone
//! decides (here, `Communicator::split`). Needs a CUDA device and libnccl.so.2: without NCCL the
//! test says so and passes without checking anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use ordo_cuda_core::*;
use ordo_cuda_libs::nccl::{CommConfig, Communicator, Nccl};
use std::time::Duration;

/// A split of a non-blocking communicator completes on NCCL's thread, which writes the new
/// communicator through the pointer `ncclCommSplit` was given. Before the fix that pointer was a
/// local of `split`, which had returned `Ok(None)` by then: NCCL's thread wrote into a dead stack
/// frame (from safe code), and the new communicator was lost. Inside an open group NCCL makes it
/// only at the group's end, with the same late write: split is refused there.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_split_hands_out_the_new_communicator_and_is_refused_inside_a_group() {
    let nccl = match Nccl::load() {
        Ok(n) => n,
        Err(e) => {
            println!("skipped, NCCL not loadable: {e}");
            return;
        }
    };
    let d = Device::from_ordinal(0);
    d.set_current().unwrap();
    let non_blocking = CommConfig { blocking: false, ..CommConfig::default() };
    for config in [non_blocking, CommConfig::default()] {
        let id = nccl.unique_id().unwrap();
        let parent = Communicator::init_rank_config(&nccl, d, 1, &id, 0, &config).unwrap();
        parent.wait_ready(Duration::from_secs(120)).unwrap();

        let child = parent.split(Some(0), 0, None).unwrap().expect("a colour was given: a new communicator");
        assert_eq!((child.rank(), child.ranks()), (0, 1), "blocking: {}", config.blocking);
        child.wait_ready(Duration::from_secs(120)).unwrap();
        assert!(parent.split(None, 0, None).unwrap().is_none(), "no colour: no communicator");

        let group = nccl.group().unwrap();
        let e = parent.split(Some(0), 0, None).expect_err("refused inside a group");
        assert!(matches!(e, Error::Usage(ref u) if u.kind == UsageKind::InvalidArgument), "{e}");
        group.end().unwrap();
        drop(child);
        parent.abort().unwrap();
    }
}
