//! Which CUDA toolkit the crate was built with, and how the build found it ([`crate::BUILT_WITH`]).
//! The build script includes this file too, so that it and the crate name the search's places alike.

use core::fmt;

/// The place of the toolkit search that gave the toolkit a build used. The search takes the first
/// place that has one, in this order (`docs/toolkits.md` in ordo's repository).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FoundBy {
    /// `CUDA_HOME` names the toolkit's root.
    CudaHome,
    /// `CUDA_PATH` names the toolkit's root (and `CUDA_HOME` is not set).
    CudaPath,
    /// The folder above the first `nvcc` on `PATH`.
    NvccOnPath,
    /// `/usr/local/cuda`.
    UsrLocalCuda,
    /// The toolkit named by the pin file of the pip-wheel cache (`$ORDO_CUDA_CACHE/default`,
    /// default `~/.cache/ordo/default`: one line, the folder under the cache).
    CachePin,
    /// The highest CUDA version among the pip-wheel toolkits under the cache, which has no pin file.
    CacheNewest,
    /// None: a documentation build (`DOCS_RS`) with no toolkit, which takes the newest checked-in
    /// bindings and their version.
    NoToolkit,
}

impl FoundBy {
    /// Every place, in the order of the search.
    pub const ALL: [FoundBy; 7] = [
        FoundBy::CudaHome,
        FoundBy::CudaPath,
        FoundBy::NvccOnPath,
        FoundBy::UsrLocalCuda,
        FoundBy::CachePin,
        FoundBy::CacheNewest,
        FoundBy::NoToolkit,
    ];

    /// The place in words (what [`BuiltWith`] prints; the build script passes it to the crate).
    pub const fn name(self) -> &'static str {
        match self {
            FoundBy::CudaHome => "CUDA_HOME",
            FoundBy::CudaPath => "CUDA_PATH",
            FoundBy::NvccOnPath => "the nvcc on PATH",
            FoundBy::UsrLocalCuda => "/usr/local/cuda",
            FoundBy::CachePin => "the pin file of the pip-wheel cache",
            FoundBy::CacheNewest => "the newest toolkit in the pip-wheel cache (no pin file)",
            FoundBy::NoToolkit => "no toolkit (a documentation build)",
        }
    }

    /// The place whose [`name`](Self::name) is `name`.
    pub const fn from_name(name: &str) -> Option<FoundBy> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if bytes_eq(Self::ALL[i].name().as_bytes(), name.as_bytes()) {
                return Some(Self::ALL[i]);
            }
            i += 1;
        }
        None
    }
}

impl fmt::Display for FoundBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The toolkit a build of the crate used. Build scripts' messages are not shown for a dependency
/// from crates.io, so this is where a program can say which CUDA it carries
/// (`println!("{}", ordo_cuda_sys::BUILT_WITH)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltWith {
    /// `CUDART_VERSION` of the toolkit's headers (1000 * major + 10 * minor): the runtime linked.
    pub cuda_version: u32,
    /// The toolkit's root on the build machine (the folder holding `include/cuda_runtime_api.h`);
    /// `None` for a documentation build with no toolkit.
    pub root: Option<&'static str>,
    /// How the build found it.
    pub found_by: FoundBy,
    /// The nvcc published to crates that compile CUDA C against ordo (ordo's kernels among them):
    /// the toolkit's own, or `ORDO_NVCC`; `None` where there is neither (the CUDA 12 pip wheels).
    pub nvcc: Option<&'static str>,
    /// Whether the bindings were generated from the toolkit's headers (`false`: the checked-in
    /// bindings of the newest release of its major).
    pub bindings_generated: bool,
}

impl BuiltWith {
    /// `(major, minor)` of [`cuda_version`](Self::cuda_version).
    pub const fn major_minor(&self) -> (u32, u32) {
        (self.cuda_version / 1000, (self.cuda_version % 1000) / 10)
    }
}

impl fmt::Display for BuiltWith {
    /// One line: `CUDA 13.0 (CUDART_VERSION 13000) at /usr/local/cuda-13.0, found by CUDA_HOME;
    /// bindings generated from its headers; nvcc /usr/local/cuda-13.0/bin/nvcc`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = self.major_minor();
        write!(f, "CUDA {major}.{minor} (CUDART_VERSION {})", self.cuda_version)?;
        match self.root {
            Some(root) => write!(f, " at {root}, found by {}", self.found_by)?,
            None => write!(f, ", {}", self.found_by)?,
        }
        if self.bindings_generated {
            f.write_str("; bindings generated from its headers")?;
        } else {
            f.write_str("; the checked-in bindings of its major")?;
        }
        match self.nvcc {
            Some(nvcc) => write!(f, "; nvcc {nvcc}"),
            None => f.write_str("; no nvcc"),
        }
    }
}

const fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
