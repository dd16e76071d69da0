#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Toolkit discovery over fake toolkits in a temporary folder: the order of the places, each layout
//! the build script knows, the pin file of the pip-wheel cache, version reading without a table,
//! and the messages when a named place has no toolkit or nothing is found.

#[path = "../src/built_with.rs"]
#[allow(dead_code)]
mod built_with;
#[path = "../build/discover.rs"]
#[allow(dead_code)]
mod discover;

use built_with::FoundBy;
use discover::{discover, parse_cudart_version, Places, PIN_FILE};
use std::fs;
use std::path::{Path, PathBuf};

/// A fresh, empty folder under the system temp folder, unique per test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ordo-discovery-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn touch(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn header(version: u32) -> String {
    format!("/* fake */\n#if !defined(__CUDA_RUNTIME_API_H__)\n#define CUDART_VERSION  {version}\n#endif\n")
}

/// A classic toolkit root: include/ with crt/, lib64/ with the static runtime, bin/nvcc.
fn fake_toolkit(root: &Path, version: u32, lib: &str, nvcc: bool) {
    touch(&root.join("include/cuda_runtime_api.h"), &header(version));
    touch(&root.join("include/crt/host_defines.h"), "");
    touch(&root.join(lib).join("libcudart_static.a"), "");
    if nvcc {
        touch(&root.join("bin/nvcc"), "");
    }
}

fn site(cache: &Path, install: &str) -> PathBuf {
    cache.join(install).join("venv/lib/python3.11/site-packages/nvidia")
}

fn empty_places() -> Places {
    Places { explicit: vec![], path: Some("".into()), system_roots: vec![], wheel_caches: vec![] }
}

#[test]
fn parses_the_version_define_without_a_table() {
    for v in [12020, 12090, 13000, 13050, 14010] {
        assert_eq!(parse_cudart_version(&header(v)), Some(v));
    }
    assert_eq!(parse_cudart_version("#  define   CUDART_VERSION 12030 /* c */"), Some(12030));
    assert_eq!(parse_cudart_version("#define CUDART_VERSION_MAJOR 12"), None);
    assert_eq!(parse_cudart_version("// nothing here"), None);
}

#[test]
fn cuda_home_layout() {
    let dir = scratch("home");
    let root = dir.join("cuda-13.5");
    fake_toolkit(&root, 13050, "lib64", true);
    let places = Places { explicit: vec![("CUDA_HOME".into(), root.clone())], ..empty_places() };
    let t = discover(&places).unwrap();
    assert_eq!(t.version, 13050);
    assert_eq!(t.root, root);
    assert_eq!(t.lib_dir, root.join("lib64"));
    assert_eq!(t.nvcc, Some(root.join("bin/nvcc")));
    assert_eq!(t.include_dirs, vec![root.join("include")]);
}

#[test]
fn explicit_variable_naming_no_toolkit_is_an_error_even_if_another_exists() {
    let dir = scratch("bad-home");
    let good = dir.join("good");
    fake_toolkit(&good, 13000, "lib64", true);
    let places = Places {
        explicit: vec![("CUDA_HOME".into(), dir.join("missing"))],
        system_roots: vec![good],
        ..empty_places()
    };
    let err = discover(&places).unwrap_err();
    assert!(err.explicit_invalid);
    let msg = err.to_string();
    assert!(msg.contains("CUDA_HOME="), "{msg}");
    assert!(msg.contains("cuda_runtime_api.h"), "{msg}");
}

#[test]
fn nvcc_on_path_layout() {
    let dir = scratch("path");
    let root = dir.join("opt/cuda");
    fake_toolkit(&root, 12020, "lib", true);
    let path = std::env::join_paths([dir.join("usr/bin"), root.join("bin")]).unwrap();
    let t = discover(&Places { path: Some(path), ..empty_places() }).unwrap();
    assert_eq!((t.version, t.root.clone()), (12020, root.clone()));
    assert_eq!(t.lib_dir, root.join("lib"));
    assert!(t.found_via.contains("nvcc on PATH"));
    assert_eq!(t.found_by, FoundBy::NvccOnPath);
}

#[test]
fn system_root_layout() {
    let dir = scratch("system");
    let root = dir.join("usr/local/cuda");
    fake_toolkit(&root, 12090, "lib64", true);
    let t = discover(&Places { system_roots: vec![root.clone()], ..empty_places() }).unwrap();
    assert_eq!((t.version, t.root), (12090, root));
}

#[test]
fn wheel_layouts_pick_the_highest_version() {
    let dir = scratch("wheels");
    // 13.x wheels: nvidia/cu13 is a whole toolkit root.
    let cu13 = site(&dir, "cuda-13.0").join("cu13");
    fake_toolkit(&cu13, 13000, "lib", true);
    // 12.x wheels: runtime headers and library in cuda_runtime, crt/ headers in cuda_nvcc, no nvcc.
    let rt12 = site(&dir, "cuda-12.9").join("cuda_runtime");
    touch(&rt12.join("include/cuda_runtime_api.h"), &header(12090));
    touch(&rt12.join("lib/libcudart_static.a"), "");
    touch(&site(&dir, "cuda-12.9").join("cuda_nvcc/include/crt/host_defines.h"), "");

    let t = discover(&Places { wheel_caches: vec![dir.clone()], ..empty_places() }).unwrap();
    assert_eq!((t.version, t.root.clone()), (13000, cu13.clone()));
    assert_eq!(t.found_by, FoundBy::CacheNewest);

    // A future release in the cache is taken over 13.0, with no code change.
    let cu14 = site(&dir, "cuda-14.1").join("cu14");
    fake_toolkit(&cu14, 14010, "lib", true);
    let t = discover(&Places { wheel_caches: vec![dir.clone()], ..empty_places() }).unwrap();
    assert_eq!(t.version, 14010);

    // The 12.x wheel layout on its own, as CUDA_HOME: two include folders, no nvcc.
    let t = discover(&Places { explicit: vec![("CUDA_HOME".into(), rt12.clone())], ..empty_places() }).unwrap();
    assert_eq!(t.version, 12090);
    assert_eq!(t.nvcc, None);
    assert_eq!(t.include_dirs, vec![rt12.join("include"), site(&dir, "cuda-12.9").join("cuda_nvcc/include")]);
    assert_eq!(t.lib_dir, rt12.join("lib"));
}

#[test]
fn headers_without_a_runtime_library_are_not_a_toolkit() {
    let dir = scratch("nolib");
    let root = dir.join("cuda");
    touch(&root.join("include/cuda_runtime_api.h"), &header(13000));
    touch(&root.join("include/crt/host_defines.h"), "");
    let err = discover(&Places { system_roots: vec![root], ..empty_places() }).unwrap_err();
    assert!(err.to_string().contains("no libcudart_static.a"), "{err}");
}

#[test]
fn nothing_found_lists_every_place_tried_and_the_install_command() {
    let dir = scratch("none");
    let places = Places {
        explicit: vec![],
        path: Some(std::env::join_paths([dir.join("bin")]).unwrap()),
        system_roots: vec![dir.join("usr/local/cuda")],
        wheel_caches: vec![dir.join("cache")],
    };
    let err = discover(&places).unwrap_err();
    assert!(!err.explicit_invalid);
    let places_tried: Vec<&str> = err.tried.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(places_tried.len(), 4, "{places_tried:?}");
    assert_eq!(places_tried[0], "CUDA_HOME, CUDA_PATH");
    assert!(places_tried[1].starts_with("nvcc on PATH"));
    assert!(places_tried[2].ends_with("usr/local/cuda"));
    assert!(places_tried[3].contains("pip-wheel toolkits under"));
    let msg = err.to_string();
    assert!(msg.contains("no CUDA toolkit found"), "{msg}");
    // What a user of the crate from crates.io, with no checkout, can do: NVIDIA's toolkit and the
    // variable that points at it, or the pip wheels, installed where the search looks.
    assert!(msg.contains("developer.nvidia.com/cuda-downloads"), "{msg}");
    assert!(msg.contains("set CUDA_HOME"), "{msg}");
    let cache = dir.join("cache").display().to_string();
    assert!(msg.contains(&format!("python3 -m venv {cache}/cuda-13/venv")), "{msg}");
    assert!(msg.contains(&format!("{cache}/cuda-13/venv/bin/pip install \"cuda-toolkit[")), "{msg}");
    // The checkout's script only as the other way.
    assert!(msg.contains("From a checkout of ordo's repository, `bash scripts/setup.sh`"), "{msg}");
}

#[test]
fn places_from_env_reads_the_variables() {
    let env = |k: &str| match k {
        "CUDA_HOME" => Some("/a".into()),
        "CUDA_PATH" => Some("".into()),
        "HOME" => Some("/home/u".into()),
        "PATH" => Some("/bin".into()),
        _ => None,
    };
    let p = Places::from_env(&env);
    assert_eq!(p.explicit, vec![("CUDA_HOME".to_string(), PathBuf::from("/a"))]);
    assert_eq!(p.wheel_caches, vec![PathBuf::from("/home/u/.cache/ordo")]);
    assert_eq!(p.system_roots, vec![PathBuf::from("/usr/local/cuda")]);
    let env2 = |k: &str| if k == "ORDO_CUDA_CACHE" { Some("/c".into()) } else { None };
    assert_eq!(Places::from_env(&env2).wheel_caches, vec![PathBuf::from("/c")]);
}

/// A wheel install of a 13.x release under `cache`, as scripts/toolkits.sh leaves it (cuda-X.Y).
fn wheel_toolkit(cache: &Path, version: u32) -> PathBuf {
    let install = format!("cuda-{}.{}", version / 1000, version % 1000 / 10);
    let root = site(cache, &install).join(format!("cu{}", version / 1000));
    fake_toolkit(&root, version, "lib", true);
    root
}

/// The search's order, one place taken away at a time: CUDA_HOME, CUDA_PATH, the nvcc on PATH,
/// /usr/local/cuda, the cache's pin, the cache's highest version. Each place holds a different
/// version, so the one taken is unambiguous.
#[test]
fn the_places_are_searched_in_the_documented_order() {
    let dir = scratch("order");
    let home = dir.join("home");
    fake_toolkit(&home, 12030, "lib64", true);
    let cuda_path = dir.join("cuda-path");
    fake_toolkit(&cuda_path, 12040, "lib64", true);
    let on_path = dir.join("opt/cuda");
    fake_toolkit(&on_path, 12050, "lib64", true);
    let system = dir.join("usr/local/cuda");
    fake_toolkit(&system, 12060, "lib64", true);
    let cache = dir.join("cache");
    let pinned = wheel_toolkit(&cache, 13000);
    let newest = wheel_toolkit(&cache, 13050);
    fs::write(cache.join(PIN_FILE), "cuda-13.0\n").unwrap();

    let mut places = Places {
        explicit: vec![("CUDA_HOME".into(), home.clone()), ("CUDA_PATH".into(), cuda_path.clone())],
        path: Some(std::env::join_paths([dir.join("usr/bin"), on_path.join("bin")]).unwrap()),
        system_roots: vec![system.clone()],
        wheel_caches: vec![cache.clone()],
    };
    let mut taken = Vec::new();
    loop {
        let t = discover(&places).unwrap();
        taken.push((t.found_by, t.version, t.root.clone()));
        match t.found_by {
            FoundBy::CudaHome | FoundBy::CudaPath => {
                places.explicit.remove(0);
            }
            FoundBy::NvccOnPath => places.path = Some(dir.join("usr/bin").into()),
            FoundBy::UsrLocalCuda => places.system_roots.clear(),
            FoundBy::CachePin => fs::remove_file(cache.join(PIN_FILE)).unwrap(),
            _ => break,
        }
    }
    assert_eq!(
        taken,
        [
            (FoundBy::CudaHome, 12030, home),
            (FoundBy::CudaPath, 12040, cuda_path),
            (FoundBy::NvccOnPath, 12050, on_path),
            (FoundBy::UsrLocalCuda, 12060, system),
            (FoundBy::CachePin, 13000, pinned),
            (FoundBy::CacheNewest, 13050, newest),
        ]
    );
}

/// CUDA_HOME set to a folder with no toolkit fails the build, even with CUDA_PATH naming one: the
/// variable says which toolkit, and a build with another would be the silent change to avoid.
#[test]
fn cuda_home_naming_no_toolkit_is_an_error_even_with_cuda_path_set() {
    let dir = scratch("home-over-path");
    let good = dir.join("good");
    fake_toolkit(&good, 13000, "lib64", true);
    let places = Places {
        explicit: vec![("CUDA_HOME".into(), dir.join("missing")), ("CUDA_PATH".into(), good)],
        ..empty_places()
    };
    let err = discover(&places).unwrap_err();
    assert!(err.explicit_invalid);
    assert_eq!(err.tried.len(), 1, "{err}");
}

/// Installing a newer release into the cache (scripts/toolkits.sh) does not change what a build
/// with a pin file takes; without one the highest version is taken, and the whole cache is watched
/// so that the next build sees a release added.
#[test]
fn the_pin_file_holds_the_choice_when_releases_are_added() {
    let dir = scratch("pin");
    let cache = dir.join("cache");
    let cu130 = wheel_toolkit(&cache, 13000);
    let places = Places { wheel_caches: vec![cache.clone()], ..empty_places() };
    fs::write(cache.join(PIN_FILE), "cuda-13.0\n").unwrap();
    let before = discover(&places).unwrap();
    wheel_toolkit(&cache, 13050);
    wheel_toolkit(&cache, 14010);
    let after = discover(&places).unwrap();
    assert_eq!(before, after);
    assert_eq!((after.found_by, after.version, after.root.clone()), (FoundBy::CachePin, 13000, cu130.clone()));
    assert!(after.found_via.contains(&cache.join(PIN_FILE).display().to_string()), "{}", after.found_via);
    // Rerun the build when the pin or the pinned headers change, not on every change in the cache.
    assert_eq!(after.watch, [cu130.join("include/cuda_runtime_api.h"), cache.join(PIN_FILE)]);

    fs::remove_file(cache.join(PIN_FILE)).unwrap();
    let newest = discover(&places).unwrap();
    assert_eq!((newest.found_by, newest.version), (FoundBy::CacheNewest, 14010));
    assert!(newest.found_via.contains("the highest version of 3"), "{}", newest.found_via);
    assert!(newest.watch.contains(&cache), "{:?}", newest.watch);

    // An absolute path in the pin file names a toolkit anywhere.
    let elsewhere = dir.join("elsewhere");
    let root = wheel_toolkit(&elsewhere, 13020);
    fs::write(cache.join(PIN_FILE), elsewhere.join("cuda-13.2").display().to_string()).unwrap();
    assert_eq!(discover(&places).unwrap().root, root);
}

/// A pin file that names no toolkit fails the build with a message naming the file and the ways
/// out, rather than falling back to another toolkit.
#[test]
fn a_pin_naming_no_toolkit_is_an_error() {
    let dir = scratch("bad-pin");
    let cache = dir.join("cache");
    wheel_toolkit(&cache, 13000);
    let places = Places { wheel_caches: vec![cache.clone()], ..empty_places() };
    let pin = cache.join(PIN_FILE);
    for (text, why) in [("cuda-13.9\n", "no pip-wheel toolkit in"), ("\n", "the file is empty")] {
        fs::write(&pin, text).unwrap();
        let err = discover(&places).unwrap_err();
        assert_eq!(err.bad_pin.as_ref(), Some(&pin));
        assert!(!err.explicit_invalid);
        let msg = err.to_string();
        assert!(msg.contains(&format!("the pin file {} names no usable CUDA toolkit", pin.display())), "{msg}");
        assert!(msg.contains(why), "{msg}");
        assert!(msg.contains("delete it to take the highest version there"), "{msg}");
    }
}
