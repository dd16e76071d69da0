//! Making a communicator from several unique ids (`ncclCommInitRankScalable`, NCCL 2.23): the
//! bootstrap spread over several roots, for jobs of many ranks, where one root answering every
//! rank is slow.
//!
//! NCCL gives id `i` the ranks `first_root_rank(i, ..) .. first_root_rank(i + 1, ..)`; the rank
//! that makes id `i` runs its root, so the ids are best made by the first rank of each block
//! ([`first_root_rank`]), which is what the [`Rendezvous`](super::Rendezvous) does.

use super::api::{RawComm, RawUniqueId};
use super::comm::{made_by_init, rank_args};
use super::version::{require, Version};
use super::{CommConfig, Communicator, Nccl, UniqueId};
use crate::function::call;
use core::ffi::c_int;
use ordo_cuda_core::{Device, Error, Result};

/// The release that brought `ncclCommInitRankScalable`.
pub(crate) const SCALABLE_INIT: Version = Version::new(2, 23, 0);

/// The first rank whose bootstrap goes through id `root` of `roots` among `ranks` ranks: NCCL's
/// split (`firstRankFromRoot` in bootstrap.cc), `root * (ranks / roots) + min(root, ranks % roots)`.
/// The rank best placed to make id `root`. `None` where `roots` is zero or above `ranks`, or
/// `root` is not below `roots`.
pub fn first_root_rank(root: usize, roots: usize, ranks: usize) -> Option<usize> {
    if roots == 0 || roots > ranks || root >= roots {
        return None;
    }
    // No overflow: root < roots <= ranks, so the result is below ranks.
    Some(root * (ranks / roots) + root.min(ranks % roots))
}

/// The id whose root the bootstrap of `rank` goes through: the inverse of [`first_root_rank`]
/// (NCCL's `rootIdFromRank`). `None` where the arguments are out of range.
pub fn root_of_rank(rank: usize, roots: usize, ranks: usize) -> Option<usize> {
    if roots == 0 || roots > ranks || rank >= ranks {
        return None;
    }
    let (per, extra) = (ranks / roots, ranks % roots);
    let wide = extra * (per + 1); // the ranks of the first `extra` roots, one more rank each
    Some(if rank < wide { rank / (per + 1) } else { (rank - wide) / per + extra })
}

impl Communicator {
    /// Makes rank `rank` of `ranks` on `device` from several unique ids
    /// (`ncclCommInitRankScalable`, NCCL 2.23 and later), every rank passing the same `ids` in the
    /// same order; otherwise as [`init_rank_config`](Self::init_rank_config). Id `i` is best made
    /// by rank [`first_root_rank(i, ids.len(), ranks)`](first_root_rank). At least one id and at
    /// most one a rank. An older NCCL: `NotSupported` naming `ncclCommInitRankScalable`, before
    /// anything else is done.
    ///
    /// With `NCCL_COMM_ID` set, NCCL uses the first id alone (its root is at that address).
    pub fn init_rank_scalable(
        nccl: &Nccl,
        device: Device,
        ranks: usize,
        ids: &[UniqueId],
        rank: usize,
        config: &CommConfig,
    ) -> Result<Communicator> {
        const CALL: &str = "Communicator::init_rank_scalable";
        let init = nccl.api().init_rank_scalable.get(CALL)?;
        // A library with the symbol but an older number would be a build of NCCL's own; the
        // symbol decides, the number is checked for a clear word where both disagree.
        require(nccl.release()?, SCALABLE_INIT, CALL, init.name)?;
        let (n, r) = rank_args(CALL, ranks, rank)?;
        if ids.is_empty() || ids.len() > ranks {
            return Err(Error::invalid(CALL, "between one id and one id a rank"));
        }
        let count = c_int::try_from(ids.len()).map_err(|_| Error::invalid(CALL, "more ids than an int holds"))?;
        config.check(nccl, CALL)?;
        let mut raw_ids: Vec<RawUniqueId> = ids.iter().map(|id| id.to_raw()).collect();
        let mut raw_config = config.raw();
        let mut raw: RawComm = core::ptr::null_mut();
        let returned = device.with_current(|| {
            // No device lock: a blocking config waits for every rank (see `device_lock`).
            // SAFETY: `raw`, `raw_ids` (`count` ids) and `raw_config` are writable and live for
            // the call (NCCL copies the ids and the config); ranks checked.
            Ok(call!(unsafe { init(&mut raw, n, r, count, raw_ids.as_mut_ptr(), &mut raw_config) }))
        })?;
        made_by_init(nccl, device, raw, returned, rank, ranks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_split_the_ranks_as_nccl_does() {
        // 10 ranks over 3 roots: 4, 3, 3 (the first `10 % 3` roots take one more).
        assert_eq!((0..3).map(|i| first_root_rank(i, 3, 10).unwrap()).collect::<Vec<_>>(), [0, 4, 7]);
        let roots: Vec<usize> = (0..10).map(|r| root_of_rank(r, 3, 10).unwrap()).collect();
        assert_eq!(roots, [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]);
        // Every split: each root's first rank maps back to that root, and blocks are contiguous.
        for ranks in 1..40 {
            for roots in 1..=ranks {
                let mut expect = 0;
                for rank in 0..ranks {
                    let root = root_of_rank(rank, roots, ranks).unwrap();
                    assert!(root == expect || root == expect + 1, "{ranks}/{roots}: rank {rank}");
                    if root == expect + 1 {
                        expect += 1;
                        assert_eq!(first_root_rank(root, roots, ranks), Some(rank));
                    }
                }
                assert_eq!(expect, roots - 1, "{ranks} ranks, {roots} roots: every root has ranks");
                assert_eq!(first_root_rank(0, roots, ranks), Some(0));
            }
        }
        assert_eq!(first_root_rank(0, 0, 4), None);
        assert_eq!(first_root_rank(3, 3, 4), None);
        assert_eq!(first_root_rank(0, 5, 4), None, "more roots than ranks");
        assert_eq!(root_of_rank(4, 2, 4), None);
    }
}
