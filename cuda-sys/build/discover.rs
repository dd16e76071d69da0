//! Finding a CUDA toolkit. Shared by the build script and by the discovery tests (which build fake
//! toolkits in a temporary folder), so it takes its environment as arguments and never panics.
//!
//! The order (docs/toolkits.md): `CUDA_HOME`, `CUDA_PATH`, the folder above `nvcc` on `PATH`,
//! `/usr/local/cuda`, then the pip-wheel cache: the toolkit its pin file names, or, with no pin
//! file, the highest version there. The first place that has a toolkit gives it; a variable or a
//! pin file that names no toolkit is an error, never a reason to look further.

use crate::built_with::FoundBy;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// The pin file of a pip-wheel cache: one line, the folder under the cache whose toolkit a build
/// takes (`cuda-13.0`). `scripts/setup.sh` writes it when it is missing; `scripts/toolkits.sh`
/// never does, so the releases it adds do not change what a plain build uses.
pub const PIN_FILE: &str = "default";

/// A toolkit the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// The toolkit's root (the folder holding `include/`).
    pub root: PathBuf,
    /// Folders to pass with `-I`: the root's `include/`, then, for the pip-wheel layout whose runtime
    /// headers and `crt/` headers sit in two packages, the folder holding `crt/host_defines.h`.
    pub include_dirs: Vec<PathBuf>,
    /// The folder holding `libcudart_static.a` (or `libcudart.so*`).
    pub lib_dir: PathBuf,
    /// `bin/nvcc` when the toolkit has one (the 12.x wheels do not).
    pub nvcc: Option<PathBuf>,
    /// `CUDART_VERSION` as the headers define it: 1000 * major + 10 * minor.
    pub version: u32,
    /// Which place found it.
    pub found_by: FoundBy,
    /// The place in words, with its value (`CUDA_HOME=/opt/cuda`), for the build log.
    pub found_via: String,
    /// The files and folders whose change can change the choice (`cargo::rerun-if-changed`): the
    /// toolkit's `cuda_runtime_api.h`, and the pin file, or the cache folder where the highest
    /// version there was taken.
    pub watch: Vec<PathBuf>,
}

impl Toolkit {
    /// The main include folder (holding `cuda_runtime_api.h`).
    pub fn include_dir(&self) -> &Path {
        &self.include_dirs[0]
    }
}

/// Where the search looks, in order. Built from the real environment by [`Places::from_env`].
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// `CUDA_HOME` and `CUDA_PATH`, as (name, value), when set.
    pub explicit: Vec<(String, PathBuf)>,
    /// The `PATH` variable, searched for `nvcc`.
    pub path: Option<OsString>,
    /// Fixed system roots (`/usr/local/cuda`).
    pub system_roots: Vec<PathBuf>,
    /// Folders under which `scripts/setup.sh` installs toolkits from pip wheels
    /// (`<cache>/<name>/venv/lib/python3.*/site-packages/nvidia/...`).
    pub wheel_caches: Vec<PathBuf>,
}

impl Places {
    /// The places a build looks at, read from `env`.
    pub fn from_env(env: &dyn Fn(&str) -> Option<OsString>) -> Places {
        let mut explicit = Vec::new();
        for name in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(v) = env(name).filter(|v| !v.is_empty()) {
                explicit.push((name.to_string(), PathBuf::from(v)));
            }
        }
        let mut wheel_caches = Vec::new();
        if let Some(c) = env("ORDO_CUDA_CACHE").filter(|v| !v.is_empty()) {
            wheel_caches.push(PathBuf::from(c));
        } else if let Some(home) = env("HOME").filter(|v| !v.is_empty()) {
            wheel_caches.push(Path::new(&home).join(".cache/ordo"));
        }
        Places { explicit, path: env("PATH"), system_roots: vec![PathBuf::from("/usr/local/cuda")], wheel_caches }
    }
}

/// The search failed: every place tried, and why each was not a toolkit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    pub tried: Vec<(String, String)>,
    /// Set when `CUDA_HOME` or `CUDA_PATH` names a folder that is not a toolkit: that is an error
    /// even if another place has one, since the caller asked for that folder.
    pub explicit_invalid: bool,
    /// The pin file of the cache, when it names no toolkit (an error for the same reason).
    pub bad_pin: Option<PathBuf>,
    /// The folder the wheel installs are looked for in (for the install command in the message).
    pub wheel_cache: Option<PathBuf>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.explicit_invalid {
            writeln!(f, "ordo-cuda-sys: CUDA_HOME/CUDA_PATH does not name a usable CUDA toolkit.")?;
        } else if let Some(pin) = &self.bad_pin {
            writeln!(f, "ordo-cuda-sys: the pin file {} names no usable CUDA toolkit.", pin.display())?;
        } else {
            writeln!(
                f,
                "ordo-cuda-sys: no CUDA toolkit found (CUDA 12.3 or later: the runtime headers and libcudart)."
            )?;
        }
        writeln!(f, "Places tried, in order:")?;
        for (place, why) in &self.tried {
            writeln!(f, "  - {place}: {why}")?;
        }
        if self.explicit_invalid {
            writeln!(
                f,
                "Set CUDA_HOME to a toolkit's root (the folder holding include/cuda_runtime_api.h), or unset it."
            )?;
        }
        let cache = self.wheel_cache.as_ref().map_or_else(|| "~/.cache/ordo".to_string(), |c| c.display().to_string());
        if let Some(pin) = &self.bad_pin {
            return write!(
                f,
                "Write into {} the name of the folder under {cache} whose toolkit to build with (e.g. `cuda-13.0`), \
                 delete it to take the highest version there, or set CUDA_HOME to a toolkit's root.",
                pin.display()
            );
        }
        writeln!(f, "Install a CUDA toolkit, then build again; either")?;
        writeln!(
            f,
            "  - NVIDIA's CUDA Toolkit (https://developer.nvidia.com/cuda-downloads, or your distribution's package): \
             found at /usr/local/cuda or through the nvcc on PATH; elsewhere set CUDA_HOME to its root; or"
        )?;
        writeln!(
            f,
            "  - NVIDIA's pip wheels (compiler, headers and static runtime, about 350 MB, no root needed), found \
             where they are installed with no variable set:"
        )?;
        writeln!(f, "      python3 -m venv {cache}/cuda-13/venv")?;
        writeln!(f, "      {cache}/cuda-13/venv/bin/pip install \"cuda-toolkit[nvcc,cudart,crt,cccl,nvvm]==13.*\"")?;
        writeln!(
            f,
            "    (CUDA 12: \"cuda-toolkit[cudart,nvcc]==12.*\", whose wheels have no nvcc, so no CUDA C kernels)"
        )?;
        write!(f, "From a checkout of ordo's repository, `bash scripts/setup.sh` installs the wheels that way.")
    }
}

/// Reads `#define CUDART_VERSION <n>` from the text of `cuda_runtime_api.h`.
pub fn parse_cudart_version(header: &str) -> Option<u32> {
    header.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?;
        let mut words = rest.split_whitespace();
        if words.next()? != "CUDART_VERSION" {
            return None;
        }
        words.next()?.parse().ok()
    })
}

/// Checks that `root` is a toolkit and describes it; `Err` says why not.
pub fn probe_root(root: &Path, found_by: FoundBy, found_via: &str) -> Result<Toolkit, String> {
    let include = root.join("include");
    let api = include.join("cuda_runtime_api.h");
    let text = fs::read_to_string(&api).map_err(|_| format!("no {}", api.display()))?;
    let version = parse_cudart_version(&text)
        .ok_or_else(|| format!("{} has no `#define CUDART_VERSION <number>`", api.display()))?;
    let mut include_dirs = vec![include.clone()];
    if !include.join("crt/host_defines.h").is_file() {
        // pip-wheel layout of 12.x: nvidia/cuda_runtime/include beside nvidia/cuda_nvcc/include/crt.
        let sibling = root.parent().map(|p| p.join("cuda_nvcc/include"));
        match sibling.filter(|s| s.join("crt/host_defines.h").is_file()) {
            Some(s) => include_dirs.push(s),
            None => {
                return Err(format!(
                    "has {} but no crt/host_defines.h (in include/ or ../cuda_nvcc/include/)",
                    api.display()
                ))
            }
        }
    }
    let lib_dir = ["lib64", "lib", "lib/x64"]
        .iter()
        .map(|d| root.join(d))
        .find(|d| has_cudart(d))
        .ok_or_else(|| "headers found, but no libcudart_static.a or libcudart.so* in lib64/ or lib/".to_string())?;
    let nvcc = Some(root.join("bin/nvcc")).filter(|p| p.is_file());
    Ok(Toolkit {
        root: root.to_path_buf(),
        include_dirs,
        lib_dir,
        nvcc,
        version,
        found_by,
        found_via: found_via.to_string(),
        watch: vec![api],
    })
}

fn has_cudart(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else { return false };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name == "libcudart_static.a" || name.starts_with("libcudart.so")
    })
}

/// The toolkit roots of one wheel install (`<install>/venv/lib/python3.*/site-packages/nvidia/...`).
fn install_roots(install: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let Ok(pythons) = fs::read_dir(install.join("venv/lib")) else { return roots };
    for py in pythons.flatten() {
        let Ok(pkgs) = fs::read_dir(py.path().join("site-packages/nvidia")) else { continue };
        for pkg in pkgs.flatten() {
            let name = pkg.file_name().to_string_lossy().into_owned();
            // 13.x: nvidia/cu13 (cu14, ... later); 12.x: nvidia/cuda_runtime.
            let is_toolkit = name == "cuda_runtime"
                || (name.starts_with("cu") && name[2..].chars().all(|c| c.is_ascii_digit()) && name.len() > 2);
            if is_toolkit {
                roots.push(pkg.path());
            }
        }
    }
    roots.sort();
    roots
}

/// The toolkit of the highest version among `roots`, or `None`; the others' failures go to `tried`.
fn highest(
    roots: Vec<PathBuf>,
    found_by: FoundBy,
    via: &dyn Fn(&Path) -> String,
    tried: &mut Vec<(String, String)>,
) -> Option<Toolkit> {
    let mut best: Option<Toolkit> = None;
    for root in roots {
        match probe_root(&root, found_by, &via(&root)) {
            Ok(t) => {
                if best.as_ref().map_or(true, |b| t.version > b.version) {
                    best = Some(t);
                }
            }
            Err(why) => tried.push((format!("pip wheels at {}", root.display()), why)),
        }
    }
    best
}

/// Searches the places in order: explicit variables, `nvcc` on `PATH`, system roots, wheel caches
/// (the pinned toolkit, else the highest version).
pub fn discover(places: &Places) -> Result<Toolkit, NotFound> {
    let mut tried = Vec::new();
    let wheel_cache = places.wheel_caches.first().cloned();
    // CUDA_HOME where set, else CUDA_PATH: the first variable set is the answer, a toolkit or an
    // error (the caller asked for that folder), never a reason to look further.
    match places.explicit.first() {
        Some((name, root)) => {
            let via = format!("{name}={}", root.display());
            let found_by = if name == "CUDA_PATH" { FoundBy::CudaPath } else { FoundBy::CudaHome };
            return probe_root(root, found_by, &via).map_err(|why| {
                tried.push((via, why));
                NotFound { tried, explicit_invalid: true, bad_pin: None, wheel_cache }
            });
        }
        None => tried.push(("CUDA_HOME, CUDA_PATH".into(), "not set".into())),
    }
    match &places.path {
        Some(path) => {
            let nvcc = std::env::split_paths(path).map(|d| d.join("nvcc")).find(|p| p.is_file());
            match nvcc {
                Some(nvcc) => {
                    let root = nvcc.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
                    let via = format!("nvcc on PATH ({})", nvcc.display());
                    match probe_root(root, FoundBy::NvccOnPath, &via) {
                        Ok(t) => return Ok(t),
                        Err(why) => tried.push((via, why)),
                    }
                }
                None => tried.push(("nvcc on PATH".into(), "no nvcc in any PATH folder".into())),
            }
        }
        None => tried.push(("nvcc on PATH".into(), "PATH is not set".into())),
    }
    for root in &places.system_roots {
        let via = root.display().to_string();
        match probe_root(root, FoundBy::UsrLocalCuda, &via) {
            Ok(t) => return Ok(t),
            Err(why) => tried.push((via, why)),
        }
    }
    for cache in &places.wheel_caches {
        let pin = cache.join(PIN_FILE);
        if let Ok(text) = fs::read_to_string(&pin) {
            let name = text.trim();
            let place = format!("the pin file {} ({name:?})", pin.display());
            let install = cache.join(name);
            let roots = if name.is_empty() { Vec::new() } else { install_roots(&install) };
            let via = |root: &Path| format!("{place}: pip wheels at {}", root.display());
            match highest(roots, FoundBy::CachePin, &via, &mut tried) {
                Some(mut t) => {
                    t.watch.push(pin);
                    return Ok(t);
                }
                None => {
                    let why = if name.is_empty() {
                        "the file is empty".to_string()
                    } else {
                        format!("no pip-wheel toolkit in {} (expected venv/lib/python3.*/site-packages/nvidia/{{cu13,cuda_runtime}})", install.display())
                    };
                    tried.push((place, why));
                    return Err(NotFound { tried, explicit_invalid: false, bad_pin: Some(pin), wheel_cache });
                }
            }
        }
        let mut roots = Vec::new();
        if let Ok(installs) = fs::read_dir(cache) {
            let mut installs: Vec<PathBuf> = installs.flatten().map(|e| e.path()).collect();
            installs.sort();
            for install in installs {
                roots.extend(install_roots(&install));
            }
        }
        if roots.is_empty() {
            tried.push((
                format!("pip-wheel toolkits under {}", cache.display()),
                "none (expected <name>/venv/lib/python3.*/site-packages/nvidia/{cu13,cuda_runtime})".into(),
            ));
            continue;
        }
        let count = roots.len();
        let via = |root: &Path| {
            format!(
                "pip wheels at {}, the highest version of {count} under {} (no pin file {})",
                root.display(),
                cache.display(),
                pin.display()
            )
        };
        if let Some(mut t) = highest(roots, FoundBy::CacheNewest, &via, &mut tried) {
            // A release added to the cache changes the choice: watch the whole cache.
            t.watch.push(cache.clone());
            return Ok(t);
        }
    }
    Err(NotFound { tried, explicit_invalid: false, bad_pin: None, wheel_cache })
}
