//! The unique id that bootstraps a communicator: made by one rank, carried to the others by the
//! caller (a file, a pipe, a TCP connection, a job launcher's key-value store).

use super::api::{RawUniqueId, UNIQUE_ID_BYTES};
use ordo_cuda_core::{Error, Result};

/// `ncclUniqueId`: 128 bytes that name a communicator being made. One rank gets it
/// ([`Nccl::unique_id`](super::Nccl::unique_id)), every rank passes the same bytes to
/// [`Communicator::init_rank`](super::Communicator::init_rank). It holds the address of the first
/// rank's bootstrap socket: carry it only over channels you trust.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct UniqueId {
    bytes: [u8; UNIQUE_ID_BYTES],
}

impl UniqueId {
    /// The number of bytes.
    pub const BYTES: usize = UNIQUE_ID_BYTES;

    /// The bytes to carry to the other ranks.
    #[inline]
    pub const fn to_bytes(&self) -> [u8; UNIQUE_ID_BYTES] {
        self.bytes
    }

    /// The id from the bytes another rank sent: exactly [`UniqueId::BYTES`] of them.
    pub fn from_bytes(bytes: &[u8]) -> Result<UniqueId> {
        let bytes = <[u8; UNIQUE_ID_BYTES]>::try_from(bytes)
            .map_err(|_| Error::invalid("UniqueId::from_bytes", "a unique id is exactly 128 bytes"))?;
        Ok(UniqueId { bytes })
    }

    pub(crate) fn from_raw(raw: RawUniqueId) -> UniqueId {
        UniqueId { bytes: raw.internal.map(|c| c as u8) }
    }

    pub(crate) fn to_raw(self) -> RawUniqueId {
        RawUniqueId { internal: self.bytes.map(|b| b as core::ffi::c_char) }
    }
}

impl core::fmt::Debug for UniqueId {
    /// Not the bytes: they hold a socket address.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("UniqueId(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_round_trip_and_wrong_lengths_are_refused() {
        let bytes: Vec<u8> = (0..128u32).map(|i| (i * 7 + 3) as u8).collect();
        let id = UniqueId::from_bytes(&bytes).unwrap();
        assert_eq!(id.to_bytes().as_slice(), bytes.as_slice());
        assert_eq!(UniqueId::from_raw(id.to_raw()), id, "through NCCL's struct and back");
        assert_eq!(UniqueId::from_raw(id.to_raw()).to_bytes()[127], bytes[127]);
        for n in [0, 1, 127, 129, 256] {
            let e = UniqueId::from_bytes(&vec![0u8; n]).unwrap_err();
            assert!(e.to_string().contains("128 bytes"), "{e}");
        }
        assert_eq!(format!("{id:?}"), "UniqueId(..)");
    }
}
