//! Finding a CUDA toolkit. Shared by the build script and by the discovery tests (which build fake
//! toolkits in a temporary folder), so it takes its environment as arguments and never panics.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

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
    /// Which place found it, for the build log.
    pub found_via: String,
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
    /// The folder the wheel installs are looked for in (for the install command in the message).
    pub wheel_cache: Option<PathBuf>,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.explicit_invalid {
            writeln!(f, "ordo-cuda-sys: CUDA_HOME/CUDA_PATH does not name a usable CUDA toolkit.")?;
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
pub fn probe_root(root: &Path, found_via: &str) -> Result<Toolkit, String> {
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
    Ok(Toolkit { root: root.to_path_buf(), include_dirs, lib_dir, nvcc, version, found_via: found_via.to_string() })
}

fn has_cudart(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else { return false };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name == "libcudart_static.a" || name.starts_with("libcudart.so")
    })
}

/// The toolkit roots that `setup.sh`'s wheel installs hold under `cache`, best first (highest version).
fn wheel_roots(cache: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let Ok(installs) = fs::read_dir(cache) else { return roots };
    for install in installs.flatten() {
        let lib = install.path().join("venv/lib");
        let Ok(pythons) = fs::read_dir(&lib) else { continue };
        for py in pythons.flatten() {
            let nvidia = py.path().join("site-packages/nvidia");
            let Ok(pkgs) = fs::read_dir(&nvidia) else { continue };
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
    }
    roots.sort();
    roots
}

/// Searches the places in order: explicit variables, `nvcc` on `PATH`, system roots, wheel caches.
pub fn discover(places: &Places) -> Result<Toolkit, NotFound> {
    let mut tried = Vec::new();
    let mut explicit_invalid = false;
    let wheel_cache = places.wheel_caches.first().cloned();
    if places.explicit.is_empty() {
        tried.push(("CUDA_HOME, CUDA_PATH".into(), "not set".into()));
    }
    for (name, root) in &places.explicit {
        let via = format!("{name}={}", root.display());
        match probe_root(root, &via) {
            Ok(t) => return Ok(t),
            Err(why) => {
                tried.push((via, why));
                explicit_invalid = true;
            }
        }
    }
    if explicit_invalid {
        return Err(NotFound { tried, explicit_invalid, wheel_cache });
    }
    match &places.path {
        Some(path) => {
            let nvcc = std::env::split_paths(path).map(|d| d.join("nvcc")).find(|p| p.is_file());
            match nvcc {
                Some(nvcc) => {
                    let root = nvcc.parent().and_then(Path::parent).unwrap_or(Path::new("/"));
                    let via = format!("nvcc on PATH ({})", nvcc.display());
                    match probe_root(root, &via) {
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
        match probe_root(root, &via) {
            Ok(t) => return Ok(t),
            Err(why) => tried.push((via, why)),
        }
    }
    for cache in &places.wheel_caches {
        let roots = wheel_roots(cache);
        if roots.is_empty() {
            tried.push((
                format!("pip-wheel toolkits under {}", cache.display()),
                "none (expected <name>/venv/lib/python3.*/site-packages/nvidia/{cu13,cuda_runtime})".into(),
            ));
            continue;
        }
        let mut best: Option<Toolkit> = None;
        for root in roots {
            let via = format!("pip wheels at {}", root.display());
            match probe_root(&root, &via) {
                Ok(t) => {
                    if best.as_ref().map_or(true, |b| t.version > b.version) {
                        best = Some(t);
                    }
                }
                Err(why) => tried.push((via, why)),
            }
        }
        if let Some(t) = best {
            return Ok(t);
        }
    }
    Err(NotFound { tried, explicit_invalid, wheel_cache })
}
