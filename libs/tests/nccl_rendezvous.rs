//! The rendezvous without a GPU or NCCL: the launchers' environments (given through a lookup
//! function, never the process environment), and the exchange of unique ids through a folder or a
//! caller's store with threads and processes as ranks: stale records of earlier runs, deadlines,
//! communicators of different names in one folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use ordo_cuda_core::{Error, UsageKind};
use ordo_cuda_libs::nccl::{
    first_root_rank, is_timeout, ClosureStore, FolderStore, IdExchange, IdSource, IdStore, LaunchEnv, Launcher,
    UniqueId,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k| map.get(k).cloned()
}

fn invalid(e: &Error, words: &str) {
    match e {
        Error::Usage(u) => {
            assert_eq!(u.kind, UsageKind::InvalidArgument, "{e}");
            assert!(u.what.as_str().contains(words), "expected {words:?} in: {e}");
        }
        other => panic!("expected an invalid-argument error with {words:?}, got {other}"),
    }
}

#[test]
fn torchrun_slurm_and_open_mpi_environments_are_read() {
    let t = LaunchEnv::from_lookup(env(&[
        ("RANK", "3"),
        ("WORLD_SIZE", "8"),
        ("LOCAL_RANK", "1"),
        ("LOCAL_WORLD_SIZE", "2"),
        ("GROUP_WORLD_SIZE", "4"),
        ("MASTER_ADDR", "node-0"),
        ("MASTER_PORT", "29500"),
        ("TORCHELASTIC_RUN_ID", "a1b2"),
        ("TORCHELASTIC_RESTART_COUNT", "0"),
    ]))
    .unwrap();
    assert_eq!(t.launcher(), Launcher::Torchrun);
    assert_eq!((t.rank(), t.ranks(), t.local_rank(), t.local_ranks()), (3, 8, 1, Some(2)));
    assert_eq!(t.master(), Some(("node-0", 29500)));
    assert_eq!(t.one_host(), Some(false));
    assert_eq!(t.job(), "torchrun.a1b2.node-0-29500.r0");

    let s = LaunchEnv::from_lookup(env(&[
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "16"),
        ("SLURM_NPROCS", "16"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_NNODES", "4"),
        ("SLURM_JOB_ID", "123456"),
        ("SLURM_STEP_ID", "0"),
    ]))
    .unwrap();
    assert_eq!(s.launcher(), Launcher::Slurm);
    assert_eq!((s.rank(), s.ranks(), s.local_rank(), s.local_ranks()), (5, 16, 1, None));
    assert_eq!((s.one_host(), s.master(), s.job()), (Some(false), None, "slurm.123456.0"));
    // A step smaller than its job: the step's count.
    let step = LaunchEnv::from_lookup(env(&[
        ("SLURM_PROCID", "1"),
        ("SLURM_NTASKS", "16"),
        ("SLURM_STEP_NUM_TASKS", "2"),
        ("SLURM_STEP_NUM_NODES", "1"),
        ("SLURM_LOCALID", "1"),
    ]))
    .unwrap();
    assert_eq!((step.ranks(), step.one_host()), (2, Some(true)));

    let o = LaunchEnv::from_lookup(env(&[
        ("OMPI_COMM_WORLD_RANK", "2"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
        ("OMPI_MCA_ess_base_jobid", "3405643777"),
    ]))
    .unwrap();
    assert_eq!(o.launcher(), Launcher::OpenMpi);
    assert_eq!((o.rank(), o.ranks(), o.local_rank(), o.local_ranks()), (2, 4, 2, Some(4)));
    assert_eq!((o.one_host(), o.job()), (Some(true), "ompi.3405643777"));
    // Values are trimmed; a job token keeps only safe characters.
    let p = LaunchEnv::from_lookup(env(&[
        ("OMPI_COMM_WORLD_RANK", " 0 "),
        ("OMPI_COMM_WORLD_SIZE", "1\n"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "0"),
        ("PMIX_NAMESPACE", "prterun-host-99@1"),
    ]))
    .unwrap();
    assert_eq!((p.rank(), p.ranks(), p.job(), p.one_host()), (0, 1, "ompi.prterun-host-99_1", None));
}

#[test]
fn the_launcher_that_started_the_process_wins() {
    let slurm = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "0")];
    let torch = [("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "1")];
    let ompi = [("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "6"), ("OMPI_COMM_WORLD_LOCAL_RANK", "0")];
    let all: Vec<(&str, &str)> = slurm.iter().chain(&torch).chain(&ompi).copied().collect();
    assert_eq!(LaunchEnv::from_lookup(env(&all)).unwrap().launcher(), Launcher::Torchrun, "torchrun under srun");
    let no_torch: Vec<(&str, &str)> = slurm.iter().chain(&ompi).copied().collect();
    let e = LaunchEnv::from_lookup(env(&no_torch)).unwrap();
    assert_eq!((e.launcher(), e.rank()), (Launcher::OpenMpi, 3), "mpirun inside an allocation");
    let e = LaunchEnv::for_launcher(Launcher::Slurm, env(&all)).unwrap();
    assert_eq!((e.launcher(), e.rank(), e.ranks()), (Launcher::Slurm, 0, 2), "asked for by name");
    invalid(&LaunchEnv::from_lookup(env(&[])).unwrap_err(), "no launcher's variables");
    invalid(&LaunchEnv::from_lookup(env(&[("PATH", "/bin")])).unwrap_err(), "are all unset");
}

#[test]
fn missing_malformed_and_inconsistent_variables_are_named() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (&[("RANK", "0"), ("LOCAL_RANK", "0")], "RANK or WORLD_SIZE is set but WORLD_SIZE is missing"),
        (&[("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")], "but RANK is missing"),
        (&[("RANK", "0"), ("WORLD_SIZE", "2")], "but LOCAL_RANK is missing"),
        (&[("RANK", "zero"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")], "RANK=\"zero\" is not a whole number"),
        (&[("RANK", "-1"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")], "RANK=\"-1\" is not a whole number"),
        (&[("RANK", "0"), ("WORLD_SIZE", "99999999999999999999999"), ("LOCAL_RANK", "0")], "is too large"),
        (&[("RANK", "2"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")], "RANK=2 is not below WORLD_SIZE=2"),
        (&[("RANK", "0"), ("WORLD_SIZE", "0"), ("LOCAL_RANK", "0")], "WORLD_SIZE is 0"),
        (&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "2")], "LOCAL_RANK=2 is not below WORLD_SIZE=2"),
        (
            &[("RANK", "0"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "2"), ("LOCAL_WORLD_SIZE", "2")],
            "local rank 2 of 2 ranks on this host",
        ),
        (
            &[("RANK", "0"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "0"), ("LOCAL_WORLD_SIZE", "8")],
            "8 ranks on this host, 4 ranks in all",
        ),
        (&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "h")], "MASTER_PORT is not"),
        (&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("MASTER_PORT", "1")], "MASTER_ADDR is not"),
        (
            &[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0"), ("MASTER_ADDR", "h"), ("MASTER_PORT", "0")],
            "MASTER_PORT=\"0\" is not a port",
        ),
        (&[("SLURM_PROCID", "0"), ("SLURM_LOCALID", "0")], "none of SLURM_STEP_NUM_TASKS, SLURM_NTASKS"),
        (&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")], "SLURM_LOCALID is missing"),
        (
            &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_NPROCS", "3"), ("SLURM_LOCALID", "0")],
            "SLURM_NTASKS=2 but SLURM_NPROCS=3",
        ),
        (
            &[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "0"), ("SLURM_NNODES", "3")],
            "3 hosts for 2 ranks",
        ),
        (&[("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4"), ("SLURM_LOCALID", "0")], "SLURM_PROCID=4 is not below"),
        (&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")], "OMPI_COMM_WORLD_LOCAL_RANK is missing"),
        (&[("OMPI_COMM_WORLD_SIZE", "2"), ("OMPI_COMM_WORLD_LOCAL_RANK", "0")], "OMPI_COMM_WORLD_RANK is missing"),
    ];
    for (vars, words) in cases {
        let e = LaunchEnv::from_lookup(env(vars)).expect_err(words);
        invalid(&e, words);
    }
}

#[test]
fn the_device_is_the_local_rank_or_the_one_visible() {
    let l = LaunchEnv::from_lookup(env(&[("RANK", "5"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "1")])).unwrap();
    assert_eq!(l.device_among(8).unwrap().ordinal(), 1);
    assert_eq!(l.device_among(2).unwrap().ordinal(), 1);
    assert_eq!(l.device_among(1).unwrap().ordinal(), 0, "one GPU a task (--gpus-per-task=1)");
    invalid(&l.device_among(0).unwrap_err(), "no CUDA device");
    let l3 = LaunchEnv::from_lookup(env(&[("RANK", "3"), ("WORLD_SIZE", "8"), ("LOCAL_RANK", "3")])).unwrap();
    invalid(&l3.device_among(2).unwrap_err(), "local rank 3 but 2 CUDA devices");
}

#[test]
fn the_id_source_follows_the_environment() {
    let one_host = LaunchEnv::from_lookup(env(&[
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "0"),
        ("LOCAL_WORLD_SIZE", "2"),
    ]))
    .unwrap();
    let many = LaunchEnv::from_lookup(env(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_LOCALID", "0"),
        ("SLURM_NNODES", "2"),
    ]))
    .unwrap();
    let unknown =
        LaunchEnv::from_lookup(env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "8"), ("SLURM_LOCALID", "0")])).unwrap();
    let got =
        IdSource::from_lookup(&many, env(&[("NCCL_COMM_ID", "10.1.2.3:29501"), ("ORDO_NCCL_ID_DIR", "/x")])).unwrap();
    assert!(matches!(got, IdSource::NcclCommId(ref a) if a == "10.1.2.3:29501"), "{got:?}");
    let got = IdSource::from_lookup(&many, env(&[("ORDO_NCCL_ID_DIR", "/shared/ids")])).unwrap();
    assert!(matches!(got, IdSource::Folder(ref d) if d == &PathBuf::from("/shared/ids")), "{got:?}");
    let got = IdSource::from_lookup(&one_host, env(&[])).unwrap();
    let user = std::env::temp_dir().join(format!(
        "ordo-nccl-{}",
        std::fs::metadata("/proc/self")
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                m.uid()
            })
            .unwrap()
    ));
    assert!(matches!(got, IdSource::Folder(ref d) if d == &user), "one host, this user's folder: {got:?}");
    invalid(&IdSource::from_lookup(&many, env(&[])).unwrap_err(), "8 ranks on several hosts: set NCCL_COMM_ID");
    invalid(&IdSource::from_lookup(&unknown, env(&[])).unwrap_err(), "whose hosts the launcher does not say");
    invalid(&IdSource::from_lookup(&many, env(&[("NCCL_COMM_ID", "nohost")])).unwrap_err(), "is not host:port");
}

/// A folder of its own for one test, removed at the end.
struct Folder(PathBuf);

impl Folder {
    fn new(test: &str) -> Folder {
        let p = std::env::temp_dir().join(format!("ordo-rdv-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Folder(p)
    }
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fake id, distinct for each (run, index, maker rank): the test checks who made each.
fn fake_id(run: u8, index: usize, maker: usize) -> UniqueId {
    let mut b = [0u8; UniqueId::BYTES];
    b[0] = run;
    b[1] = index as u8;
    b[2] = maker as u8;
    for (i, x) in b.iter_mut().enumerate().skip(3) {
        *x = (i as u8).wrapping_mul(31).wrapping_add(run);
    }
    UniqueId::from_bytes(&b).unwrap()
}

/// Runs `ranks` threads as ranks of one exchange in `dir`, each starting after its delay;
/// returns each rank's result.
fn threads(
    dir: &std::path::Path,
    name: &str,
    ranks: usize,
    count: usize,
    run: u8,
    timeout: Duration,
    delay: impl Fn(usize) -> Duration + Sync,
) -> Vec<ordo_cuda_core::Result<Vec<UniqueId>>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let delay = &delay;
                s.spawn(move || {
                    std::thread::sleep(delay(rank));
                    let mut store = FolderStore::new(dir);
                    let ex = IdExchange { name, job: "test-job", rank, ranks, count, timeout };
                    ex.run(&mut store, &mut |i| Ok(fake_id(run, i, rank)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn expect_ids(run: u8, count: usize, ranks: usize) -> Vec<UniqueId> {
    (0..count).map(|i| fake_id(run, i, first_root_rank(i, count, ranks).unwrap())).collect()
}

#[test]
fn threads_as_ranks_get_rank_0s_id_and_leave_the_folder_clean() {
    let f = Folder::new("threads");
    let t = Duration::from_secs(60);
    for (ranks, slow) in [(2, 0), (8, 0), (8, 5), (8, 7)] {
        // `slow` starts 200 ms late: the others wait for it (rank 0 included).
        let out = threads(&f.0, "world", ranks, 1, 1, t, |r| Duration::from_millis(if r == slow { 200 } else { 0 }));
        for (rank, got) in out.into_iter().enumerate() {
            assert_eq!(got.unwrap(), expect_ids(1, 1, ranks), "{ranks} ranks, rank {rank}");
        }
        assert!(f.files().is_empty(), "left behind: {:?}", f.files());
    }
}

#[test]
fn several_ids_come_from_the_first_rank_of_each_root() {
    let f = Folder::new("roots");
    for (ranks, count) in [(7, 3), (4, 4), (5, 2)] {
        let out =
            threads(&f.0, "big", ranks, count, 2, Duration::from_secs(60), |r| Duration::from_millis(r as u64 * 3));
        for (rank, got) in out.into_iter().enumerate() {
            assert_eq!(got.unwrap(), expect_ids(2, count, ranks), "{ranks} ranks {count} ids, rank {rank}");
        }
    }
}

/// A store that keeps everything (no removes): what a crash leaves behind.
struct KeepAll(FolderStore);

impl IdStore for KeepAll {
    fn put(&mut self, key: &str, value: &[u8]) -> ordo_cuda_core::Result<()> {
        self.0.put(key, value)
    }
    fn get(&mut self, key: &str) -> ordo_cuda_core::Result<Option<Vec<u8>>> {
        self.0.get(key)
    }
}

#[test]
fn records_of_an_earlier_run_are_never_taken_for_this_runs() {
    let f = Folder::new("stale");
    let t = Duration::from_secs(60);
    // An earlier run of the same name and job that left every record (id, acks, go).
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..3)
            .map(|rank| {
                let dir = f.0.clone();
                s.spawn(move || {
                    let ex = IdExchange { name: "world", job: "test-job", rank, ranks: 3, count: 1, timeout: t };
                    ex.run(&mut KeepAll(FolderStore::new(dir)), &mut |i| Ok(fake_id(10, i, rank))).unwrap()
                })
            })
            .collect();
        for h in hs {
            assert_eq!(h.join().unwrap(), expect_ids(10, 1, 3));
        }
    });
    assert!(f.files().iter().any(|n| n.ends_with(".go")), "the earlier run left its records: {:?}", f.files());
    // This run: ranks 1 and 2 start first and find the old id and the old confirmation; rank 0
    // comes 300 ms later. Every rank must end with this run's id.
    let out = threads(&f.0, "world", 3, 1, 11, t, |r| Duration::from_millis(if r == 0 { 300 } else { 0 }));
    for (rank, got) in out.into_iter().enumerate() {
        assert_eq!(got.unwrap(), expect_ids(11, 1, 3), "rank {rank} took a stale id");
    }
    // A crash after rank 0 published: rank 0 of a run whose other rank never came gave up and
    // left its id. The next run, its rank 1 first, takes the new id, not the crashed run's.
    let mut store = FolderStore::new(f.0.clone());
    let crashed =
        IdExchange { name: "world", job: "test-job", rank: 0, ranks: 2, count: 1, timeout: Duration::from_millis(100) };
    assert!(crashed.run(&mut store, &mut |i| Ok(fake_id(12, i, 0))).is_err());
    assert!(f.files().iter().any(|n| n.ends_with(".id")), "the crashed run's id stays: {:?}", f.files());
    let out = threads(&f.0, "world", 2, 1, 13, t, |r| Duration::from_millis(if r == 0 { 300 } else { 0 }));
    for (rank, got) in out.into_iter().enumerate() {
        assert_eq!(got.unwrap(), expect_ids(13, 1, 2), "rank {rank} took the crashed run's id");
    }
}

#[test]
fn a_missing_rank_is_a_timeout_naming_what_was_awaited() {
    let f = Folder::new("timeout");
    let t = Duration::from_millis(300);
    // Rank 1 alone: no id from rank 0.
    let start = Instant::now();
    let mut store = FolderStore::new(f.0.clone());
    let e = IdExchange { name: "w", job: "j", rank: 1, ranks: 2, count: 1, timeout: t }
        .run(&mut store, &mut |_| panic!("rank 1 makes no id"))
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5), "bounded: {:?}", start.elapsed());
    let text = e.to_string();
    assert!(matches!(&e, Error::Library(l) if l.library == "NCCL" && l.status == 8), "{e}");
    assert!(text.contains("rank 1 found no id from rank 0 at ordo-nccl.w.j.id"), "{text}");
    assert!(!is_timeout(&e), "not the deadline of a communicator's wait");
    // Rank 0 of 4 alone: names the ranks that did not acknowledge.
    let e = IdExchange { name: "w", job: "j", rank: 0, ranks: 4, count: 1, timeout: t }
        .run(&mut store, &mut |i| Ok(fake_id(3, i, 0)))
        .unwrap_err();
    assert!(e.to_string().contains("ranks 1, 2, 3 did not acknowledge"), "{e}");
    // The next run of the key is not disturbed by the id rank 0 left.
    let out = threads(&f.0, "w", 2, 1, 4, Duration::from_secs(60), |_| Duration::ZERO);
    assert!(out.into_iter().all(|r| r.unwrap() == expect_ids(4, 1, 2)));
}

#[test]
fn ranks_that_disagree_on_the_number_of_ranks_are_an_error() {
    let f = Folder::new("disagree");
    let t = Duration::from_millis(800);
    let out: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = [(0usize, 2usize), (1, 3)]
            .into_iter()
            .map(|(rank, ranks)| {
                let dir = f.0.clone();
                s.spawn(move || {
                    IdExchange { name: "w", job: "j", rank, ranks, count: 1, timeout: t }
                        .run(&mut FolderStore::new(dir), &mut |i| Ok(fake_id(5, i, rank)))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    invalid(out[0].as_ref().unwrap_err(), "rank 1 counts 3 ranks, rank 0 counts 2");
    assert!(out[1].as_ref().unwrap_err().to_string().contains("(of 3) acknowledged an id for 2 ranks"), "{:?}", out[1]);
}

#[test]
fn communicators_of_different_names_in_one_folder_never_mix() {
    let f = Folder::new("names");
    let t = Duration::from_secs(60);
    std::thread::scope(|s| {
        let hs: Vec<_> = ["tp", "pp", "dp"]
            .into_iter()
            .enumerate()
            .map(|(k, name)| {
                let dir = f.0.clone();
                s.spawn(move || {
                    (k, threads(&dir, name, 4, 1, 20 + k as u8, t, |r| Duration::from_millis((r * 7 % 5) as u64)))
                })
            })
            .collect();
        for h in hs {
            let (k, out) = h.join().unwrap();
            for got in out {
                assert_eq!(got.unwrap(), expect_ids(20 + k as u8, 1, 4));
            }
        }
    });
}

#[test]
fn a_callers_store_through_closures() {
    let map: Arc<Mutex<HashMap<String, Vec<u8>>>> = Arc::default();
    let out: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..5)
            .map(|rank| {
                let (m1, m2) = (map.clone(), map.clone());
                s.spawn(move || {
                    let mut store = ClosureStore::new(
                        move |k: &str, v: &[u8]| {
                            m1.lock().unwrap().insert(k.to_owned(), v.to_vec());
                            Ok(())
                        },
                        move |k: &str| Ok(m2.lock().unwrap().get(k).cloned()),
                    );
                    IdExchange { name: "kv", job: "j", rank, ranks: 5, count: 2, timeout: Duration::from_secs(60) }
                        .run(&mut store, &mut |i| Ok(fake_id(30, i, rank)))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for got in out {
        assert_eq!(got.unwrap(), expect_ids(30, 2, 5));
    }
    let keys: Vec<String> = map.lock().unwrap().keys().cloned().collect();
    assert!(keys.iter().all(|k| k.starts_with("ordo-nccl.kv.j.")), "{keys:?}");
    // A store's failure is the exchange's error.
    let mut failing =
        ClosureStore::new(|_: &str, _: &[u8]| Err(Error::invalid("kv", "store down")), |_: &str| Ok(None));
    let e = IdExchange { name: "kv", job: "j", rank: 0, ranks: 2, count: 1, timeout: Duration::from_secs(1) }
        .run(&mut failing, &mut |i| Ok(fake_id(31, i, 0)))
        .unwrap_err();
    invalid(&e, "store down");
}

#[test]
fn a_folder_that_cannot_be_written_is_an_error_naming_it() {
    let mut store = FolderStore::new("/nonexistent/ordo/ids");
    let e = IdExchange { name: "w", job: "j", rank: 0, ranks: 2, count: 1, timeout: Duration::from_secs(1) }
        .run(&mut store, &mut |i| Ok(fake_id(40, i, 0)))
        .unwrap_err();
    invalid(&e, "/nonexistent/ordo/ids/ordo-nccl.w.j.id");
}

const CHILD_RANK: &str = "ORDO_RDV_TEST_RANK";
const CHILD_DIR: &str = "ORDO_RDV_TEST_DIR";

/// Processes as ranks: the test binary runs itself as four children, which exchange through a
/// folder and print the ids they got; all must print rank 0's.
#[test]
fn processes_as_ranks_exchange_through_a_folder() {
    const TEST: &str = "processes_as_ranks_exchange_through_a_folder";
    const RANKS: usize = 4;
    if let Ok(rank) = std::env::var(CHILD_RANK) {
        let rank: usize = rank.parse().unwrap();
        let mut store = FolderStore::new(std::env::var(CHILD_DIR).unwrap());
        let ex = IdExchange { name: "procs", job: "j", rank, ranks: RANKS, count: 2, timeout: Duration::from_secs(60) };
        let ids = ex.run(&mut store, &mut |i| Ok(fake_id(50, i, rank))).unwrap();
        let hex: Vec<String> =
            ids.iter().map(|id| id.to_bytes()[..4].iter().map(|b| format!("{b:02x}")).collect()).collect();
        println!("IDS {}", hex.join(","));
        return;
    }
    let f = Folder::new("procs");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..RANKS)
        .rev()
        .map(|rank| {
            std::process::Command::new(&exe)
                .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
                .env(CHILD_RANK, rank.to_string())
                .env(CHILD_DIR, &f.0)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let expect: Vec<String> = expect_ids(50, 2, RANKS)
        .iter()
        .map(|id| id.to_bytes()[..4].iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(text.contains(&format!("IDS {}", expect.join(","))), "{text}");
    }
}
