//! A module file read, before anything is loaded: its kind ([`detect`]), its bytes, and its PTX
//! where it has one that can be read: PTX text, CUDA C compiled by NVRTC, or the PTX a fatbin
//! carries uncompressed. A cubin holds machine code only. What reads PTX (the stamps, the PDL
//! check) starts here.

use super::invalid;
use super::module::{check_elf, check_fatbin, compile, detect, u16_at, u32_at, u64_at, ModuleKind, FATBIN_MAGIC};
use ordo_cuda_core::Result;

/// A module file and, where it can be had, its PTX.
#[derive(Debug, Clone)]
pub struct ModuleSource {
    /// The file's path.
    pub path: String,
    /// What it holds.
    pub kind: ModuleKind,
    /// Its bytes (for a cubin or fatbin, checked to lie within the file).
    pub bytes: Vec<u8>,
    /// Its PTX, or why there is none.
    pub ptx: core::result::Result<String, String>,
}

impl ModuleSource {
    /// Reads `path`. CUDA C is compiled by NVRTC for `arch` (compute capability; `compute_90` if
    /// `None`) with `nvrtc_options` added (an `--gpu-architecture`/`-arch` among them wins).
    pub fn read(path: &str, nvrtc_options: &[String], arch: Option<(u32, u32)>) -> Result<ModuleSource> {
        let bytes = std::fs::read(path).map_err(|e| invalid(format!("reading {path}: {e}")))?;
        let kind = detect(path, &bytes);
        let text =
            |bytes: &[u8]| String::from_utf8(bytes.to_vec()).map_err(|_| invalid(format!("{path}: not UTF-8 text")));
        let ptx = match kind {
            ModuleKind::Cubin => {
                check_elf(&bytes).map_err(|e| invalid(format!("{path}: {e}")))?;
                Err(format!(
                    "{path} is a cubin, which holds machine code only: give the .ptx or .cu it came from (nvcc -ptx)"
                ))
            }
            ModuleKind::Fatbin => {
                check_fatbin(&bytes).map_err(|e| invalid(format!("{path}: {e}")))?;
                fatbin_ptx(&bytes).map_err(|e| format!("{path}: {e}"))
            }
            ModuleKind::Ptx => Ok(text(&bytes)?),
            ModuleKind::CudaC => Ok(compile(path, &text(&bytes)?, nvrtc_options, arch)?),
        };
        Ok(ModuleSource { path: path.to_owned(), kind, bytes, ptx })
    }
}

/// The PTX a fatbin carries for the highest architecture, where it is stored uncompressed.
///
/// A fatbin is one or more containers (magic, version, header size, size of what follows), each
/// a list of entries: kind (1: PTX, 2: ELF), version, header size, payload size; at offset 16 the
/// compressed size (0 when not compressed), at 28 the architecture, at 40 flags (`0x2000`,
/// `0x8000`: compressed).
pub fn fatbin_ptx(b: &[u8]) -> core::result::Result<String, String> {
    let mut best: Option<(u64, &[u8])> = None;
    let mut compressed = false;
    let mut at = 0usize;
    while let (Some(magic), Some(header), Some(size)) = (u32_at(b, at), u16_at(b, at + 6), u64_at(b, at + 8)) {
        if magic != u64::from(FATBIN_MAGIC) {
            break;
        }
        let start = at.checked_add(usize::try_from(header).map_err(|_| "a header too large")?).ok_or("overflow")?;
        let end = start.checked_add(usize::try_from(size).map_err(|_| "a size too large")?).ok_or("overflow")?;
        if end > b.len() {
            return Err("an entry runs past the end of the file".into());
        }
        let mut e = start;
        while e + 16 <= end {
            let (Some(kind), Some(eh), Some(payload)) = (u16_at(b, e), u32_at(b, e + 4), u64_at(b, e + 8)) else {
                break;
            };
            let p = e.checked_add(usize::try_from(eh).map_err(|_| "an entry header too large")?).ok_or("overflow")?;
            let q = p.checked_add(usize::try_from(payload).map_err(|_| "an entry too large")?).ok_or("overflow")?;
            if eh < 16 || q > end {
                return Err("an entry runs past its container".into());
            }
            if kind == 1 {
                let packed = u32_at(b, e + 16).unwrap_or(0) != 0 || u64_at(b, e + 40).unwrap_or(0) & 0xA000 != 0;
                let arch = u32_at(b, e + 28).unwrap_or(0);
                if packed {
                    compressed = true;
                } else if best.map_or(true, |(a, _)| a < arch) {
                    best = Some((arch, &b[p..q]));
                }
            }
            e = q;
        }
        at = end;
    }
    match best {
        Some((_, payload)) => {
            let text = std::str::from_utf8(payload).map_err(|_| "its PTX is not UTF-8 text".to_owned())?;
            Ok(text.trim_matches('\0').to_owned())
        }
        None if compressed => Err(
            "its PTX is compressed (nvcc compresses it by default): give the .ptx or .cu, or make the fatbin with -Xfatbin=--compress=false"
                .into(),
        ),
        None => Err("it carries no PTX (only machine code): give the .ptx or .cu it came from".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fatbin of one container holding `entries` (kind, flags, arch, payload).
    fn fatbin(entries: &[(u16, u64, u32, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, flags, arch, payload) in entries {
            let mut h = vec![0u8; 64];
            h[..2].copy_from_slice(&kind.to_le_bytes());
            h[4..8].copy_from_slice(&64u32.to_le_bytes());
            h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
            h[28..32].copy_from_slice(&arch.to_le_bytes());
            h[40..48].copy_from_slice(&flags.to_le_bytes());
            body.extend(h);
            body.extend_from_slice(payload);
        }
        let mut out = Vec::new();
        out.extend(FATBIN_MAGIC.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend((body.len() as u64).to_le_bytes());
        out.extend(body);
        out
    }

    #[test]
    fn reads_the_highest_uncompressed_ptx_and_says_why_not() {
        let b =
            fatbin(&[(2, 0, 90, b"\x7fELF"), (1, 0x11, 80, b"\n.version 8.0\0\0"), (1, 0x11, 90, b".version 9.0\0")]);
        assert_eq!(fatbin_ptx(&b).unwrap(), ".version 9.0");
        let packed = fatbin(&[(1, 0x8011, 90, b"(\xb5/\xfd")]);
        assert!(fatbin_ptx(&packed).unwrap_err().contains("compressed"));
        let sass = fatbin(&[(2, 0, 90, b"\x7fELF")]);
        assert!(fatbin_ptx(&sass).unwrap_err().contains("no PTX"));
        let mut cut = b.clone();
        cut.truncate(b.len() - 4);
        assert!(fatbin_ptx(&cut).is_err());
    }
}
