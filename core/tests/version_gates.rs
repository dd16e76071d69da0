//! The version gates (`cuda_12_5`, `cuda_12_8`, `cuda_13`) and `has_cuda_device` are one list, in
//! ordo-cuda-sys's build script, which publishes the cfgs it sets (`DEP_ORDO_CUDA_SYS_CFGS`); this
//! crate's build script sets the same from it, as every other build script of the workspace does.
//! A gate's name says the release it starts at: `cuda_12_8` is CUDA 12.8 and later headers.
#![allow(clippy::panic)]

/// The `CUDART_VERSION` a gate's name says it starts at (`cuda_12_8`: 12080, `cuda_13`: 13000).
fn threshold(gate: &str) -> Option<u32> {
    let mut parts = gate.strip_prefix("cuda_")?.split('_');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    Some(major * 1000 + minor * 10)
}

/// Whether `cfg` is set on this crate; `None` for a name this test does not know.
fn set_here(cfg: &str) -> Option<bool> {
    Some(match cfg {
        "cuda_12_5" => cfg!(cuda_12_5),
        "cuda_12_8" => cfg!(cuda_12_8),
        "cuda_13" => cfg!(cuda_13),
        "has_cuda_device" => cfg!(has_cuda_device),
        _ => return None,
    })
}

#[test]
fn each_gate_is_set_here_as_ordo_cuda_sys_sets_it_and_as_its_name_says() {
    let all: Vec<&str> = env!("ORDO_CUDA_SYS_CHECK_CFGS").split_whitespace().collect();
    let set: Vec<&str> = env!("ORDO_CUDA_SYS_CFGS").split_whitespace().collect();
    for used in ["cuda_12_8", "has_cuda_device"] {
        assert!(all.contains(&used), "ordo-cuda-sys publishes no `{used}` among {all:?}");
    }
    let version = ordo_cuda_sys::CUDA_VERSION;
    for cfg in &all {
        let here = set_here(cfg)
            .unwrap_or_else(|| panic!("`{cfg}` is a new cfg of ordo-cuda-sys: give it a line in `set_here`"));
        assert_eq!(here, set.contains(cfg), "{cfg}: set here, as published");
        if let Some(since) = threshold(cfg) {
            assert_eq!(here, version >= since, "{cfg} against headers of CUDART_VERSION {version}");
        }
    }
    assert_eq!(cfg!(cuda_library_api), cfg!(cuda_12_8), "cuda_library_api is another name for cuda_12_8");
}

#[test]
fn a_gates_name_gives_its_release() {
    assert_eq!(threshold("cuda_12_8"), Some(12080));
    assert_eq!(threshold("cuda_13"), Some(13000));
    assert_eq!(threshold("has_cuda_device"), None);
}
