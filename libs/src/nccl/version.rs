//! NCCL's release numbers (`ncclGetVersion`'s code), and the gates of what needs a newer NCCL
//! than the oldest ordo supports. See [`Version`].

use ordo_cuda_core::{Error, Result, UsageKind};

/// A NCCL release, `major.minor.patch`.
///
/// ordo supports NCCL 2.16 and later: the oldest release built for CUDA 12 (the oldest CUDA ordo
/// builds against is 12.3), and the oldest whose library ordo's tests load (its functions resolve,
/// `ncclGetVersion` and `ncclGetUniqueId` answer). [`Nccl::load`](super::Nccl::load) refuses an
/// older one. What came later is used where the loaded NCCL has it and refused, naming what is
/// missing, where it does not:
///
/// | what | NCCL | where |
/// | --- | --- | --- |
/// | `minCTAs` / `maxCTAs` of a config | 2.17 | [`CommConfig`](super::CommConfig) |
/// | `ncclCommSplit` | 2.18 | [`Communicator::split`](super::Communicator::split) |
/// | every rank makes the same id from `NCCL_COMM_ID` | 2.22 | [`IdSource::NcclCommId`](super::IdSource::NcclCommId) |
/// | `ncclCommInitRankScalable` | 2.23 | [`Communicator::init_rank_scalable`](super::Communicator::init_rank_scalable) |
///
/// A missing function is found by its symbol (`dlsym`), not by the number: a library that has it
/// is used whatever its number says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// The major release (2).
    pub major: u32,
    /// The minor release.
    pub minor: u32,
    /// The patch release.
    pub patch: u32,
}

/// The oldest NCCL ordo supports: 2.16.
pub const MIN_VERSION: Version = Version::new(2, 16, 0);
/// Config fields `minCTAs` and `maxCTAs`.
pub(crate) const CTAS_IN_CONFIG: Version = Version::new(2, 17, 0);
/// `ncclGetUniqueId` makes the same id on every rank when `NCCL_COMM_ID` is set (before 2.22 each
/// id carried a random magic number of its own, and ranks with different ids never meet).
pub(crate) const SAME_ID_FROM_COMM_ID: Version = Version::new(2, 22, 0);

impl Version {
    /// `major.minor.patch`.
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version { major, minor, patch }
    }

    /// The release of a `ncclGetVersion` code: `major * 1000 + minor * 100 + patch` up to 2.8,
    /// `major * 10000 + minor * 100 + patch` from 2.9 (`NCCL_VERSION` in nccl.h). `None` for a
    /// negative code.
    pub const fn from_code(code: i32) -> Option<Version> {
        if code < 0 {
            return None;
        }
        let code = code as u32;
        let (major, rest) = if code < 10_000 { (code / 1000, code % 1000) } else { (code / 10_000, code % 10_000) };
        Some(Version { major, minor: rest / 100, patch: rest % 100 })
    }
}

impl core::fmt::Display for Version {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// `Ok` when `found` is at least `needed`; else `NotSupported` from `call`, naming `what` and
/// both releases.
pub(crate) fn require(found: Version, needed: Version, call: &'static str, what: &str) -> Result<()> {
    if found >= needed {
        return Ok(());
    }
    Err(Error::usage(
        UsageKind::NotSupported,
        call,
        format!("{what} needs NCCL {}.{} or later; the loaded NCCL is {found}", needed.major, needed.minor),
    ))
}

/// `NotSupported` from `call`: the loaded NCCL lacks the function `symbol` (added in NCCL `since`).
#[cold]
pub(crate) fn missing_function(call: &'static str, symbol: &str, since: &str) -> Error {
    Error::usage(UsageKind::NotSupported, call, format!("the loaded NCCL has no {symbol} (NCCL {since} and later)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_of_both_schemes_read_as_releases() {
        assert_eq!(Version::from_code(2708), Some(Version::new(2, 7, 8)), "old scheme, up to 2.8");
        assert_eq!(Version::from_code(2804), Some(Version::new(2, 8, 4)));
        assert_eq!(Version::from_code(20_903), Some(Version::new(2, 9, 3)), "new scheme from 2.9");
        assert_eq!(Version::from_code(21_602), Some(Version::new(2, 16, 2)));
        assert_eq!(Version::from_code(22_803), Some(Version::new(2, 28, 3)));
        assert_eq!(Version::from_code(23_203), Some(Version::new(2, 32, 3)));
        assert_eq!(Version::from_code(-1), None);
        assert_eq!(Version::new(2, 32, 3).to_string(), "2.32.3");
        assert!(Version::new(2, 9, 0) > Version::from_code(2804).unwrap());
        assert!(Version::new(2, 16, 0) < Version::new(2, 23, 4));
    }

    #[test]
    fn gates_refuse_older_releases_naming_what_and_both_releases() {
        let scalable = Version::new(2, 23, 0);
        assert!(require(Version::new(2, 23, 4), scalable, "x", "ncclCommInitRankScalable").is_ok());
        assert!(require(Version::new(2, 32, 3), scalable, "x", "ncclCommInitRankScalable").is_ok());
        let e =
            require(Version::new(2, 22, 3), scalable, "Communicator::init_rank_scalable", "ncclCommInitRankScalable")
                .unwrap_err();
        assert!(matches!(&e, Error::Usage(u) if u.kind == UsageKind::NotSupported), "{e}");
        assert_eq!(e.call(), "Communicator::init_rank_scalable");
        assert_eq!(
            e.to_string(),
            "Communicator::init_rank_scalable: NotSupported: ncclCommInitRankScalable needs NCCL 2.23 or later; the loaded NCCL is 2.22.3"
        );
        let e = missing_function("Communicator::split", "ncclCommSplit", "2.18");
        assert!(e.to_string().contains("the loaded NCCL has no ncclCommSplit (NCCL 2.18 and later)"), "{e}");
        assert!(require(Version::new(2, 16, 2), MIN_VERSION, "Nccl::load", "ordo").is_ok());
        assert!(require(Version::new(2, 15, 5), MIN_VERSION, "Nccl::load", "ordo").is_err());
    }
}
