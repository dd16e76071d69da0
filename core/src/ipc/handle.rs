//! The bytes a handle crosses the process boundary as: a tag (`ordo`, the kind, the format's
//! version), the allocation's size in bytes, and CUDA's 64 bytes.
//!
//! | bytes | what |
//! | --- | --- |
//! | 0..4 | `b"ordo"` |
//! | 4 | the kind ([`HandleKind`]) |
//! | 5 | the format's version (1) |
//! | 6..8 | zero |
//! | 8..16 | the allocation's size in bytes, little-endian (0 for an event) |
//! | 16..80 | CUDA's handle (`cudaIpcMemHandle_t`, `cudaIpcEventHandle_t`, `cudaMemPoolPtrExportData`) |

use crate::error::{Error, Result};

/// Bytes of a handle on the wire (`to_bytes`, `from_bytes`).
pub const HANDLE_BYTES: usize = 80;

/// Bytes of CUDA's own handle inside.
pub(crate) const CUDA_BYTES: usize = 64;

const MAGIC: [u8; 4] = *b"ordo";
const VERSION: u8 = 1;

/// Which kind of handle a wire form holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum HandleKind {
    /// Device memory ([`IpcMemHandle`](super::IpcMemHandle)).
    Memory = 1,
    /// An event ([`IpcEventHandle`](super::IpcEventHandle)).
    Event = 2,
    /// An allocation of an exported pool ([`PoolPointerHandle`](super::PoolPointerHandle)).
    PoolPointer = 3,
}

impl HandleKind {
    /// The kind of handle `bytes` hold, `None` when they are not a handle of this format.
    pub fn of(bytes: &[u8]) -> Option<HandleKind> {
        if bytes.len() != HANDLE_BYTES || bytes[0..4] != MAGIC || bytes[5] != VERSION {
            return None;
        }
        [HandleKind::Memory, HandleKind::Event, HandleKind::PoolPointer].into_iter().find(|k| *k as u8 == bytes[4])
    }
}

/// The wire form of `kind` with `size` and CUDA's `data`.
pub(crate) fn encode(kind: HandleKind, size: usize, data: &[u8; CUDA_BYTES]) -> [u8; HANDLE_BYTES] {
    let mut out = [0u8; HANDLE_BYTES];
    out[0..4].copy_from_slice(&MAGIC);
    out[4] = kind as u8;
    out[5] = VERSION;
    out[8..16].copy_from_slice(&(size as u64).to_le_bytes());
    out[16..].copy_from_slice(data);
    out
}

/// The size and CUDA's data of a wire form of `kind`, refused (naming `call`) when `bytes` are not
/// one: another length, another format, another kind, or a size this machine cannot address.
pub(crate) fn decode(kind: HandleKind, bytes: &[u8], call: &'static str) -> Result<(usize, [u8; CUDA_BYTES])> {
    if bytes.len() != HANDLE_BYTES {
        return Err(Error::invalid(call, "not an ordo IPC handle: a handle is ipc::HANDLE_BYTES (80) bytes"));
    }
    match HandleKind::of(bytes) {
        None => return Err(Error::invalid(call, "not an ordo IPC handle (no `ordo` tag of format version 1)")),
        Some(k) if k != kind => {
            return Err(Error::invalid(call, "an ordo IPC handle of another kind (memory, event or pool pointer)"))
        }
        Some(_) => {}
    }
    let mut size = [0u8; 8];
    size.copy_from_slice(&bytes[8..16]);
    let size = usize::try_from(u64::from_le_bytes(size))
        .map_err(|_| Error::invalid(call, "the handle's size does not fit this machine's addresses"))?;
    let mut data = [0u8; CUDA_BYTES];
    data.copy_from_slice(&bytes[16..]);
    Ok((size, data))
}

/// The number of `T`s in `size` bytes, refused (naming `call`) when `size` is zero or not a
/// whole number of them.
pub(crate) fn elements<T>(size: usize, call: &'static str) -> Result<usize> {
    let each = core::mem::size_of::<T>();
    if each == 0 {
        return Err(Error::invalid(call, "zero-sized element type"));
    }
    if size == 0 || size % each != 0 {
        return Err(Error::invalid(call, "the handle's size is not a whole, non-zero number of elements of this type"));
    }
    Ok(size / each)
}

/// CUDA's `char reserved[64]` as bytes.
pub(crate) fn from_c_chars(chars: &[core::ffi::c_char; CUDA_BYTES]) -> [u8; CUDA_BYTES] {
    chars.map(|c| c as u8)
}

/// Bytes as CUDA's `char reserved[64]`.
pub(crate) fn to_c_chars(bytes: &[u8; CUDA_BYTES]) -> [core::ffi::c_char; CUDA_BYTES] {
    bytes.map(|b| b as core::ffi::c_char)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_round_trips_and_other_bytes_are_refused() {
        let data: [u8; CUDA_BYTES] = core::array::from_fn(|i| i as u8 ^ 0xa5);
        let wire = encode(HandleKind::PoolPointer, 4096, &data);
        assert_eq!(HandleKind::of(&wire), Some(HandleKind::PoolPointer));
        assert_eq!(decode(HandleKind::PoolPointer, &wire, "t").unwrap(), (4096, data));
        let refused = |bytes: &[u8], kind| decode(kind, bytes, "t").unwrap_err();
        assert!(matches!(refused(&wire, HandleKind::Memory), Error::Usage(_)), "another kind");
        assert!(matches!(refused(&wire[..79], HandleKind::PoolPointer), Error::Usage(_)), "short");
        let mut bad = wire;
        bad[0] = b'x';
        assert!(matches!(refused(&bad, HandleKind::PoolPointer), Error::Usage(_)), "no tag");
        let mut bad = wire;
        bad[5] = 2;
        assert_eq!(HandleKind::of(&bad), None, "another version");
        let mut bad = wire;
        bad[4] = 9;
        assert_eq!(HandleKind::of(&bad), None, "unknown kind");
    }

    #[test]
    fn sizes_must_be_whole_elements() {
        assert_eq!(elements::<f32>(4096, "t").unwrap(), 1024);
        assert!(elements::<f32>(4097, "t").is_err());
        assert!(elements::<f32>(0, "t").is_err());
        assert!(elements::<()>(8, "t").is_err());
        let chars = to_c_chars(&[0xff; CUDA_BYTES]);
        assert_eq!(from_c_chars(&chars), [0xff; CUDA_BYTES]);
    }
}
