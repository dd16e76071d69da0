//! Real NCCL libraries of several releases, loaded without a GPU: each loads (every function ordo
//! needs resolves), tells its release, makes unique ids (two processes exchange rank 0's through a
//! folder the rendezvous makes), and the calls that need a newer NCCL than the library is are
//! refused naming what is missing, while the ones it has reach NCCL.
//!
//! The libraries are listed in `ORDO_NCCL_LIBS` (paths separated by `:`):
//! `scripts/lib-versions.sh` downloads the oldest release ordo supports and the newest on the
//! package index and runs this test with them. Without the variable the test says so and checks
//! nothing. Each library is tested in child processes of its own (NCCL stays loaded for the life
//! of a process, and `NCCL_COMM_ID` is read from the process environment).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use ordo_cuda_core::{Device, Error, UsageKind};
use ordo_cuda_libs::nccl::{CommConfig, Communicator, IdSource, LaunchEnv, Nccl, Rendezvous, Version, MIN_VERSION};
use std::process::Command;
use std::time::Duration;

const TEST: &str = "every_listed_nccl_loads_and_gates_what_it_lacks";
const CHILD: &str = "ORDO_NCCL_VERSIONS_CHILD";

fn not_supported_naming(e: &Error, words: &str) -> bool {
    matches!(e, Error::Usage(u) if u.kind == UsageKind::NotSupported && u.what.as_str().contains(words))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One child: the library `ORDO_NCCL` names; prints `KEY value` lines for the parent.
fn child(part: &str) {
    let nccl = Nccl::load().unwrap();
    let release = nccl.release().unwrap();
    println!("RELEASE {release}");
    assert!(release >= MIN_VERSION, "loaded: {release}");
    match part {
        "ids" => {
            let a = nccl.unique_id().unwrap().to_bytes();
            let b = nccl.unique_id().unwrap().to_bytes();
            assert!(a.iter().any(|&x| x != 0));
            assert_ne!(a, b, "without NCCL_COMM_ID every id is new");
            // Scalable init: refused by name before 2.23; reached NCCL (and failed there without
            // a GPU, or made a one-rank communicator with one) from 2.23.
            let id = nccl.unique_id().unwrap();
            let d = Device::from_ordinal(0);
            let r = Communicator::init_rank_scalable(&nccl, d, 1, &[id], 0, &CommConfig::default());
            match r {
                Err(e) if not_supported_naming(&e, "ncclCommInitRankScalable") => println!("SCALABLE refused: {e}"),
                Err(e) => println!("SCALABLE reached: {e}"),
                Ok(c) => {
                    println!("SCALABLE reached: a communicator of {} rank", c.ranks());
                    c.abort().unwrap();
                }
            }
            // Config fields of 2.17 on an older NCCL: refused, not ignored.
            let ctas = CommConfig { max_ctas: Some(4), ..CommConfig::default() };
            match Communicator::init_rank_config(&nccl, d, 1, &nccl.unique_id().unwrap(), 0, &ctas) {
                Err(e) if not_supported_naming(&e, "minCTAs/maxCTAs") => println!("CTAS refused: {e}"),
                Err(e) => println!("CTAS reached: {e}"),
                Ok(c) => {
                    println!("CTAS reached: a communicator");
                    c.abort().unwrap();
                }
            }
        }
        "comm-id" => {
            // NCCL_COMM_ID is set in this process's environment by the parent.
            let addr = std::env::var("NCCL_COMM_ID").unwrap();
            let launch = LaunchEnv::from_lookup(|k| match k {
                "RANK" => Some("1".into()),
                "WORLD_SIZE" => Some("2".into()),
                "LOCAL_RANK" => Some("1".into()),
                _ => None,
            })
            .unwrap();
            let mut r = Rendezvous::new(launch, IdSource::NcclCommId(addr));
            match r.unique_ids(&nccl, "world", 1) {
                Ok(ids) => println!("COMMID {}", hex(&ids[0].to_bytes())),
                Err(e) if not_supported_naming(&e, "NCCL_COMM_ID") => println!("COMMID refused: {e}"),
                Err(e) => panic!("{e}"),
            }
            assert!(r.unique_ids(&nccl, "world", 2).is_err(), "one id from NCCL_COMM_ID");
        }
        "folder" => {
            // Two processes as ranks, NCCL's own ids, through a folder the rendezvous makes.
            let rank = std::env::var("ORDO_NCCL_VERSIONS_RANK").unwrap();
            let launch = LaunchEnv::from_lookup(|k| match k {
                "RANK" | "LOCAL_RANK" => Some(rank.clone()),
                "WORLD_SIZE" => Some("2".into()),
                _ => None,
            })
            .unwrap();
            let dir = std::env::var("ORDO_NCCL_VERSIONS_DIR").unwrap();
            let mut r = Rendezvous::new(launch, IdSource::Folder(dir.into())).with_timeout(Duration::from_secs(60));
            let ids = r.unique_ids(&nccl, "world", 1).unwrap();
            println!("FOLDER {}", hex(&ids[0].to_bytes()));
        }
        other => panic!("{other}"),
    }
}

fn run(lib: &str, part: &str, extra: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, part)
        .env("ORDO_NCCL", lib)
        .envs(extra.iter().copied())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{lib} ({part}):\n{text}");
    text
}

fn line<'t>(text: &'t str, key: &str) -> &'t str {
    // The harness may print its own words before the child's on a line.
    let at = |l: &'t str| l.find(key).map(|i| &l[i + key.len()..]);
    text.lines().find_map(at).unwrap_or_else(|| panic!("no {key:?} in:\n{text}")).trim()
}

#[test]
fn every_listed_nccl_loads_and_gates_what_it_lacks() {
    if let Ok(part) = std::env::var(CHILD) {
        return child(&part);
    }
    let Ok(libs) = std::env::var("ORDO_NCCL_LIBS") else {
        println!("skipped: ORDO_NCCL_LIBS lists no NCCL libraries (scripts/lib-versions.sh sets it)");
        return;
    };
    for lib in libs.split(':').filter(|l| !l.is_empty()) {
        let ids = run(lib, "ids", &[]);
        let release: Vec<u32> = line(&ids, "RELEASE").split('.').map(|n| n.parse().unwrap()).collect();
        let release = Version::new(release[0], release[1], release[2]);
        let scalable = line(&ids, "SCALABLE");
        assert_eq!(scalable.starts_with("refused"), release < Version::new(2, 23, 0), "{lib} {release}: {scalable}");
        let ctas = line(&ids, "CTAS");
        assert_eq!(ctas.starts_with("refused"), release < Version::new(2, 17, 0), "{lib} {release}: {ctas}");

        // NCCL_COMM_ID: from 2.22, two processes make the same id; before, refused by name.
        let env = [("NCCL_COMM_ID", "127.0.0.1:29431")];
        let (a, b) = (run(lib, "comm-id", &env), run(lib, "comm-id", &env));
        let (a, b) = (line(&a, "COMMID"), line(&b, "COMMID"));
        if release >= Version::new(2, 22, 0) {
            assert!(!a.starts_with("refused"), "{lib}: {a}");
            assert_eq!(a, b, "{lib}: two processes, one id from NCCL_COMM_ID");
        } else {
            assert!(a.starts_with("refused") && a.contains("2.22"), "{lib}: {a}");
        }
        // Two processes exchange NCCL's id through a folder the rendezvous makes (owner only).
        let top = std::env::temp_dir().join(format!("ordo-nccl-versions-{}", std::process::id()));
        let dir = top.join("ids");
        let _ = std::fs::remove_dir_all(&top);
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["1", "0"]
            .into_iter()
            .map(|rank| {
                Command::new(&exe)
                    .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
                    .env(CHILD, "folder")
                    .env("ORDO_NCCL", lib)
                    .env("ORDO_NCCL_VERSIONS_RANK", rank)
                    .env("ORDO_NCCL_VERSIONS_DIR", &dir)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let folder: Vec<String> = children
            .into_iter()
            .map(|c| {
                let out = c.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                assert!(out.status.success(), "{lib} (folder):\n{text}");
                line(&text, "FOLDER").to_owned()
            })
            .collect();
        assert_eq!(folder[0], folder[1], "{lib}: both ranks hold rank 0's id");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700, "made for the owner only");
        let _ = std::fs::remove_dir_all(&top);
        println!("{lib}: NCCL {release}: loads; scalable init {scalable}; CTAs {ctas}; NCCL_COMM_ID {a:.40}");
    }
}
