//! Which cuBLAS a run loads: the one PyTorch uses where it can be found, so that both sides run the
//! same GEMM kernels (the GPU host's loader may not know where the wheel keeps it).

use ordo_cuda::cublas::Cublas;
use ordo_cuda::Result;
use std::process::Command;

/// What [`choose`] did, in words (empty when `ORDO_CUBLAS` was set by the caller).
#[derive(Debug, Clone)]
pub struct Choice {
    /// One line for the report.
    pub note: String,
}

/// The `libcublas.so.N` files of the nvidia wheels beside PyTorch's (asked of `python3`, without
/// importing torch), the newest major first.
fn torch_cublas() -> Vec<String> {
    const SCRIPT: &str = "import importlib.util as u, glob, os\n\
        s = u.find_spec('torch')\n\
        if s is not None and s.origin:\n    \
        site = os.path.dirname(os.path.dirname(s.origin))\n    \
        for p in glob.glob(os.path.join(site, 'nvidia', '*', 'lib', 'libcublas.so.*')): print(p)\n";
    let Ok(out) = Command::new("python3").args(["-c", SCRIPT]).output() else {
        return Vec::new();
    };
    let mut paths: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|p| p.ends_with(".so.13") || p.ends_with(".so.12"))
        .collect();
    paths.sort_by(|a, b| b.cmp(a));
    paths
}

/// Sets `ORDO_CUBLAS` to PyTorch's cuBLAS when the caller did not name one and it loads; else
/// leaves the loader's search. Call it before other threads start: it sets the environment.
pub fn choose() -> Result<Choice> {
    if std::env::var_os("ORDO_CUBLAS").is_some_and(|v| !v.is_empty()) {
        return Ok(Choice { note: String::new() });
    }
    for path in torch_cublas() {
        std::env::set_var("ORDO_CUBLAS", &path);
        if Cublas::new().is_ok() {
            return Ok(Choice { note: format!("cuBLAS: PyTorch's ({path}); set ORDO_CUBLAS to use another") });
        }
        std::env::remove_var("ORDO_CUBLAS");
    }
    Ok(Choice { note: "cuBLAS: PyTorch's was not found or did not load; the loader's libcublas.so.13/.12".into() })
}

/// The path of the cuBLAS this process has loaded (`/proc/self/maps`).
pub fn loaded() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().filter_map(|l| l.split_whitespace().nth(5)).find(|p| p.contains("libcublas.so")).map(str::to_owned)
}
