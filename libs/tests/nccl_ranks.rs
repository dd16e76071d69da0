//! NCCL with one process per GPU, the way multi-process and multi-node programs use it: the test
//! binary runs itself again as two children (rank from `ORDO_NCCL_TEST_RANK`, one GPU each through
//! `CUDA_VISIBLE_DEVICES`, `NCCL_NVLS_ENABLE=0`); rank 0 writes the unique id's bytes to a file,
//! rank 1 reads them. Needs two GPUs and libnccl.so.2: with fewer GPUs or no NCCL each test says
//! so and passes without checking anything. Children are killed after a deadline, so a hang is
//! a failure with the children's output, not a stuck run.
//!
//! The same tests run a second time over NCCL's network transport, as two hosts would talk:
//! sockets on the loopback interface (`NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=Socket
//! NCCL_SOCKET_IFNAME=lo`), each rank's output checked for channels `via NET/Socket` and none via
//! P2P or SHM. Others make the ranks from a launcher's variables (torchrun's, ids through a folder
//! or from `NCCL_COMM_ID`), and borrow communicators made by plain NCCL calls.
//!
//! Run from a gpu-bundle: `nccl_ranks --include-ignored --nocapture` (the children are started
//! by the test with the same binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_libs::nccl::{
    Bf16, BorrowedCommunicator, CommConfig, Communicator, Nccl, NcclType, ReduceOp, Rendezvous, UniqueId, Version, F16,
};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RANK: &str = "ORDO_NCCL_TEST_RANK";
const ID_FILE: &str = "ORDO_NCCL_TEST_ID_FILE";
const RANKS: usize = 2;
const CHILD_DEADLINE: Duration = Duration::from_secs(240);

/// Whether this process is a child, and its rank.
fn child_rank() -> Option<usize> {
    std::env::var(RANK).ok().map(|r| r.parse().unwrap())
}

/// `None` (after saying why) where the test cannot run here.
fn can_run(test: &str) -> Option<()> {
    let n = device::count().unwrap_or(0);
    if n < RANKS {
        let required: usize = std::env::var("ORDO_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < RANKS, "{test}: ORDO_REQUIRE_GPUS={required} but CUDA sees {n} device(s)");
        println!("{test}: skipped, needs {RANKS} CUDA devices, found {n}");
        return None;
    }
    if let Err(e) = Nccl::load() {
        println!("{test}: skipped, NCCL not loadable: {e}");
        return None;
    }
    Some(())
}

/// NCCL's network transport over the loopback interface, as two hosts would talk (sockets), with
/// NCCL saying which transport each channel took (`NCCL_DEBUG=INFO`).
const NETWORK: &[(&str, &str)] = &[
    ("NCCL_P2P_DISABLE", "1"),
    ("NCCL_SHM_DISABLE", "1"),
    ("NCCL_NET", "Socket"),
    ("NCCL_IB_DISABLE", "1"),
    ("NCCL_SOCKET_IFNAME", "lo"),
    ("NCCL_DEBUG", "INFO"),
];

/// Every rank's channels went through the network transport, none through NVLink, PCIe peer access
/// or shared memory.
fn assert_network_transport(text: &str) {
    assert!(text.contains("via NET/Socket"), "no channel through NET/Socket:\n{text}");
    assert!(!text.contains("via P2P") && !text.contains("via SHM"), "a channel took P2P or SHM:\n{text}");
}

/// Runs `test` again in two child processes, waits for both (killing them after the deadline),
/// and returns each one's exit code and output.
fn run_ranks(test: &str) -> Vec<(Option<i32>, String)> {
    run_ranks_with(test, &[])
}

/// As [`run_ranks`], with `extra` added to each child's environment (after the defaults, so that
/// it may replace them); a value `{rank}` is the child's rank, as a launcher gives each its own.
fn run_ranks_with(test: &str, extra: &[(&str, &str)]) -> Vec<(Option<i32>, String)> {
    let exe = std::env::current_exe().unwrap();
    let id_file = std::env::temp_dir().join(format!("ordo-nccl-id-{}-{test}", std::process::id()));
    let _ = std::fs::remove_file(&id_file);
    let mut children: Vec<_> = (0..RANKS)
        .map(|rank| {
            Command::new(&exe)
                .args([test, "--exact", "--nocapture", "--include-ignored", "--test-threads=1"])
                .env(RANK, rank.to_string())
                .env(ID_FILE, &id_file)
                .env("CUDA_VISIBLE_DEVICES", rank.to_string())
                .env("NCCL_NVLS_ENABLE", "0")
                .env("NCCL_DEBUG", std::env::var("NCCL_DEBUG").unwrap_or_else(|_| "WARN".into()))
                .envs(extra.iter().map(|&(k, v)| (k, if v == "{rank}" { rank.to_string() } else { v.to_owned() })))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let start = Instant::now();
    loop {
        let done = children.iter_mut().all(|c| c.try_wait().unwrap().is_some());
        if done {
            break;
        }
        if start.elapsed() > CHILD_DEADLINE {
            for c in &mut children {
                let _ = c.kill();
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let outputs: Vec<_> = children
        .into_iter()
        .enumerate()
        .map(|(rank, c)| {
            let out = c.wait_with_output().unwrap();
            let text = format!(
                "--- rank {rank} (exit {:?}) stdout:\n{}\n--- rank {rank} stderr:\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            println!("{text}");
            (out.status.code(), text)
        })
        .collect();
    let _ = std::fs::remove_file(&id_file);
    assert!(start.elapsed() <= CHILD_DEADLINE, "{test}: children killed after {CHILD_DEADLINE:?}");
    outputs
}

/// Rank 0 makes the id and writes it (to a temporary name, then renamed: the reader never sees
/// half a file); the others wait for the file.
fn exchange_id(nccl: &Nccl, rank: usize) -> UniqueId {
    let path = PathBuf::from(std::env::var(ID_FILE).unwrap());
    if rank == 0 {
        let id = nccl.unique_id().unwrap();
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, id.to_bytes()).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        return id;
    }
    let start = Instant::now();
    loop {
        if let Ok(bytes) = std::fs::read(&path) {
            return UniqueId::from_bytes(&bytes).unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no id from rank 0 at {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn init(rank: usize) -> (Nccl, Communicator, Stream) {
    let nccl = Nccl::load().unwrap();
    println!("rank {rank}: NCCL {}", nccl.version().unwrap());
    let id = exchange_id(&nccl, rank);
    let d = Device::from_ordinal(0); // the one GPU CUDA_VISIBLE_DEVICES leaves
    d.set_current().unwrap();
    let comm = Communicator::init_rank(&nccl, d, RANKS, &id, rank).unwrap();
    assert_eq!((comm.rank(), comm.ranks()), (rank, RANKS));
    (nccl, comm, Stream::new().unwrap())
}

/// Rank `r`'s element `i`: small integers, exact in every type and in every result below.
fn value(r: usize, i: usize) -> f64 {
    ((i * 7 + r * 3) % 5 + 1) as f64
}

fn data<T>(r: usize, n: usize, conv: fn(f64) -> T) -> Vec<T> {
    (0..n).map(|i| conv(value(r, i))).collect()
}

fn upload<'s, T: DeviceCopy>(host: &[T], s: StreamRef<'s>) -> DeviceBuffer<'s, T> {
    let mut d = DeviceBuffer::<T>::alloc_async(host.len(), s).unwrap();
    copy::h2d_blocking(d.as_mut_slice(), host, s).unwrap();
    d
}

fn download<T: DeviceCopy + Default>(d: &DeviceBuffer<'_, T>, s: StreamRef<'_>) -> Vec<T> {
    let mut h = vec![T::default(); d.len()];
    copy::d2h_blocking(&mut h, d.as_slice(), s).unwrap();
    h
}

/// The CPU's version of a reduction.
type Reference = fn(f64, f64) -> f64;

/// Every collective on element type `T` against the CPU. `float`: whether `Avg` applies.
fn check_type<T: NcclType + Default + PartialEq + core::fmt::Debug>(
    comm: &Communicator,
    s: StreamRef<'_>,
    name: &str,
    conv: fn(f64) -> T,
    float: bool,
) {
    const N: usize = 1000;
    let r = comm.rank();
    let peer = 1 - r;
    let mine = data(r, N, conv);
    let all: Vec<Vec<f64>> = (0..RANKS).map(|q| (0..N).map(|i| value(q, i)).collect()).collect();
    let reduce = |f: fn(f64, f64) -> f64| -> Vec<T> { (0..N).map(|i| conv(f(all[0][i], all[1][i]))).collect() };
    let send = upload(&mine, s);
    let mut recv = DeviceBuffer::<T>::zeroed_async(N, s).unwrap();
    let mut ops: Vec<(ReduceOp, Reference)> = vec![
        (ReduceOp::Sum, |a, b| a + b),
        (ReduceOp::Prod, |a, b| a * b),
        (ReduceOp::Max, f64::max),
        (ReduceOp::Min, f64::min),
    ];
    if float {
        ops.push((ReduceOp::Avg, |a, b| (a + b) / 2.0));
    }
    for (op, f) in ops {
        unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), op, s).unwrap() };
        comm.wait(s, Duration::from_secs(60)).unwrap();
        assert_eq!(download(&recv, s), reduce(f), "{name} all_reduce {op:?}");
    }
    // In place.
    let mut buf = upload(&mine, s);
    unsafe { comm.all_reduce_in_place(buf.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    assert_eq!(download(&buf, s), reduce(|a, b| a + b), "{name} all_reduce in place");
    // All-gather: rank q's block at q * N.
    let mut gathered = DeviceBuffer::<T>::zeroed_async(RANKS * N, s).unwrap();
    unsafe { comm.all_gather(send.as_slice(), gathered.as_mut_slice(), s).unwrap() };
    let expect: Vec<T> = all.iter().flatten().map(|&v| conv(v)).collect();
    assert_eq!(download(&gathered, s), expect, "{name} all_gather");
    // Reduce-scatter of the gathered buffer's sum: block r.
    let big = upload(&data(r, RANKS * N, conv), s);
    unsafe { comm.reduce_scatter(big.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    let expect: Vec<T> = (r * N..(r + 1) * N).map(|i| conv(value(0, i) + value(1, i))).collect();
    assert_eq!(download(&recv, s), expect, "{name} reduce_scatter");
    // Broadcast from rank 1.
    let mut b = DeviceBuffer::<T>::zeroed_async(N, s).unwrap();
    let src = (r == 1).then(|| send.as_slice());
    unsafe { comm.broadcast(src, b.as_mut_slice(), 1, s).unwrap() };
    assert_eq!(download(&b, s), data(1, N, conv), "{name} broadcast");
    // Reduce to rank 0 (max).
    let mut red = DeviceBuffer::<T>::zeroed_async(N, s).unwrap();
    let dst = (r == 0).then(|| red.as_mut_slice());
    unsafe { comm.reduce(send.as_slice(), dst, ReduceOp::Max, 0, s).unwrap() };
    if r == 0 {
        assert_eq!(download(&red, s), reduce(f64::max), "{name} reduce");
    }
    // Send and receive in one group: each rank gets the other's data.
    let mut got = DeviceBuffer::<T>::zeroed_async(N, s).unwrap();
    let group = comm.nccl_library().group().unwrap();
    unsafe {
        comm.send(send.as_slice(), peer, s).unwrap();
        comm.recv(got.as_mut_slice(), peer, s).unwrap();
    }
    group.end().unwrap();
    comm.wait(s, Duration::from_secs(60)).unwrap();
    assert_eq!(download(&got, s), data(peer, N, conv), "{name} send/recv");
    // Argument checks one rank can make.
    let short = DeviceBuffer::<T>::zeroed_async(N - 1, s).unwrap();
    let mut short_mut = DeviceBuffer::<T>::zeroed_async(N - 1, s).unwrap();
    assert!(unsafe { comm.all_reduce(send.as_slice(), short_mut.as_mut_slice(), ReduceOp::Sum, s) }.is_err());
    assert!(unsafe { comm.all_gather(send.as_slice(), short_mut.as_mut_slice(), s) }.is_err());
    assert!(unsafe { comm.broadcast(Some(short.as_slice()), b.as_mut_slice(), 0, s) }.is_err());
    assert!(unsafe { comm.broadcast(None, b.as_mut_slice(), 2, s) }.is_err(), "root not below ranks");
    assert!(unsafe { comm.send(send.as_slice(), 2, s) }.is_err(), "peer not below ranks");
    s.synchronize().unwrap();
    println!("rank {r}: {name}: every collective agrees with the CPU");
}

fn collectives_child(rank: usize) {
    let (_nccl, comm, stream) = init(rank);
    let s = stream.as_stream();
    check_type::<f32>(&comm, s, "f32", |v| v as f32, true);
    check_type::<f64>(&comm, s, "f64", |v| v, true);
    check_type::<F16>(&comm, s, "f16", |v| F16::from_f32(v as f32), true);
    check_type::<Bf16>(&comm, s, "bf16", |v| Bf16::from_f32(v as f32), true);
    check_type::<i32>(&comm, s, "i32", |v| v as i32, false);
    check_type::<i64>(&comm, s, "i64", |v| v as i64, false);
    check_type::<u8>(&comm, s, "u8", |v| v as u8, false);

    // A captured all-reduce, replayed: each replay sums the two ranks' buffers in place, so
    // after k replays every element is (a + b) * 2^(k-1).
    const N: usize = 1 << 20;
    const REPLAYS: u32 = 5;
    let mine = data(rank, N, |v| v as f32);
    let mut buf = upload(&mine, s);
    let mut warm = DeviceBuffer::<f32>::zeroed_async(N, s).unwrap();
    // One eager call first, so that NCCL connects outside the capture.
    unsafe { comm.all_reduce(buf.as_slice(), warm.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    s.synchronize().unwrap();
    let graph = unsafe {
        capture(s, CaptureMode::Relaxed, |cs| comm.all_reduce_in_place(buf.as_mut_slice(), ReduceOp::Sum, cs))
    }
    .unwrap();
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    for _ in 0..REPLAYS {
        exec.launch(s).unwrap();
    }
    comm.wait(s, Duration::from_secs(60)).unwrap();
    let expect: Vec<f32> =
        (0..N).map(|i| ((value(0, i) + value(1, i)) * f64::from(1u32 << (REPLAYS - 1))) as f32).collect();
    assert_eq!(download(&buf, s), expect, "captured all-reduce replayed {REPLAYS} times");
    println!("rank {rank}: captured all-reduce replayed {REPLAYS} times: right");
    drop(exec);
    drop(graph);
    drop((buf, warm));
    s.synchronize().unwrap();
    println!("rank {rank}: done");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_every_collective_and_type_and_a_captured_all_reduce() {
    const TEST: &str = "two_ranks_every_collective_and_type_and_a_captured_all_reduce";
    if let Some(rank) = child_rank() {
        return collectives_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    for (code, text) in run_ranks(TEST) {
        assert_eq!(code, Some(0), "a rank failed:\n{text}");
        assert!(text.contains("captured all-reduce replayed 5 times: right") && text.contains("done"), "{text}");
    }
}

/// The peer dies mid-way: rank 1 exits after the first all-reduce; rank 0's next all-reduce can
/// never complete. Rank 0 must get an error within the wait's deadline (NCCL's async error, or
/// ordo's `ncclTimeout`) and abort, instead of hanging.
fn killed_peer_child(rank: usize) {
    let (_nccl, comm, stream) = init(rank);
    let s = stream.as_stream();
    const N: usize = 1 << 22;
    let send = upload(&data(rank, N, |v| v as f32), s);
    let mut recv = DeviceBuffer::<f32>::zeroed_async(N, s).unwrap();
    unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    comm.wait(s, Duration::from_secs(60)).unwrap();
    println!("rank {rank}: first all-reduce done");
    if rank == 1 {
        println!("rank 1: exiting without a word to rank 0");
        std::process::exit(3);
    }
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let enqueued = unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s) };
    let waited = enqueued.and_then(|()| comm.wait(s, Duration::from_secs(20)));
    let took = start.elapsed();
    println!("rank 0: the all-reduce with a dead peer gave {waited:?} after {took:?}");
    let e = waited.expect_err("an all-reduce with a dead peer cannot succeed");
    assert!(matches!(&e, Error::Library(l) if l.library == "NCCL"), "{e}");
    assert!(took < Duration::from_secs(40), "bounded: {took:?}");
    let aborted = comm.abort();
    println!("rank 0: abort: {aborted:?}; SURVIVOR GOT AN ERROR");
    // Skip the destructors: the buffers' stream may still hold NCCL's aborted kernel.
    std::process::exit(0);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_a_killed_peer_gives_the_survivor_an_error_not_a_hang() {
    const TEST: &str = "two_ranks_a_killed_peer_gives_the_survivor_an_error_not_a_hang";
    if let Some(rank) = child_rank() {
        return killed_peer_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    let out = run_ranks(TEST);
    assert_eq!(out[1].0, Some(3), "rank 1 exits on purpose:\n{}", out[1].1);
    assert_eq!(out[0].0, Some(0), "the survivor:\n{}", out[0].1);
    assert!(out[0].1.contains("SURVIVOR GOT AN ERROR"), "{}", out[0].1);
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_every_collective_over_the_network_transport() {
    const TEST: &str = "two_ranks_every_collective_over_the_network_transport";
    if let Some(rank) = child_rank() {
        return collectives_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    for (code, text) in run_ranks_with(TEST, NETWORK) {
        assert_eq!(code, Some(0), "a rank failed:\n{text}");
        assert!(text.contains("captured all-reduce replayed 5 times: right") && text.contains("done"), "{text}");
        assert_network_transport(&text);
    }
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_a_killed_peer_over_the_network_transport() {
    const TEST: &str = "two_ranks_a_killed_peer_over_the_network_transport";
    if let Some(rank) = child_rank() {
        return killed_peer_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    let out = run_ranks_with(TEST, NETWORK);
    assert_eq!(out[1].0, Some(3), "rank 1 exits on purpose:\n{}", out[1].1);
    assert_eq!(out[0].0, Some(0), "the survivor:\n{}", out[0].1);
    assert!(out[0].1.contains("SURVIVOR GOT AN ERROR"), "{}", out[0].1);
    assert_network_transport(&out[0].1);
}

/// `recv = Σ over the ranks of send` on `comm`, checked against the CPU.
fn sum_check(comm: &Communicator, s: StreamRef<'_>, what: &str) {
    const N: usize = 1 << 20;
    let send = upload(&data(comm.rank(), N, |v| v as f32), s);
    let mut recv = DeviceBuffer::<f32>::zeroed_async(N, s).unwrap();
    unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    comm.wait(s, Duration::from_secs(60)).unwrap();
    let expect: Vec<f32> = (0..N).map(|i| (0..comm.ranks()).map(|r| value(r, i)).sum::<f64>() as f32).collect();
    assert_eq!(download(&recv, s), expect, "{what}");
    println!("rank {}: {what}: right", comm.rank());
}

/// The ranks as torchrun describes them (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, ...) and the ids
/// through a folder (`ORDO_NCCL_ID_DIR`): three communicators, made by name, one of them from two
/// ids (`ncclCommInitRankScalable`, NCCL 2.23 and later).
fn launcher_child(rank: usize) {
    let mut rendezvous = Rendezvous::from_env().unwrap().with_timeout(Duration::from_secs(120));
    assert_eq!((rendezvous.launch().rank(), rendezvous.launch().ranks()), (rank, RANKS));
    let d = rendezvous.launch().device().unwrap(); // one device visible to each rank: 0
    d.set_current().unwrap();
    let nccl = Nccl::load().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let world = rendezvous.init_rank(&nccl, d, "world", &CommConfig::default()).unwrap();
    sum_check(&world, s, "a communicator from the launcher's environment");
    let non_blocking = CommConfig { blocking: false, ..CommConfig::default() };
    let second = rendezvous.init_rank(&nccl, d, "second", &non_blocking).unwrap();
    second.wait_ready(Duration::from_secs(120)).unwrap();
    sum_check(&second, s, "a second, non-blocking communicator");
    if nccl.release().unwrap() >= Version::new(2, 23, 0) {
        let scalable = rendezvous.init_rank_scalable(&nccl, d, "scalable", 2, &CommConfig::default()).unwrap();
        sum_check(&scalable, s, "a communicator from two ids");
    } else {
        let e = rendezvous.init_rank_scalable(&nccl, d, "scalable", 2, &CommConfig::default()).unwrap_err();
        assert!(e.to_string().contains("ncclCommInitRankScalable"), "{e}");
        println!("rank {rank}: a communicator from two ids: right (refused by NCCL {})", nccl.release().unwrap());
    }
    s.synchronize().unwrap();
    println!("rank {rank}: LAUNCHER OK");
}

fn torchrun_env(test: &str, dir: &std::path::Path) -> Vec<(String, String)> {
    vec![
        ("WORLD_SIZE".into(), RANKS.to_string()),
        ("LOCAL_WORLD_SIZE".into(), RANKS.to_string()),
        ("MASTER_ADDR".into(), "127.0.0.1".into()),
        ("MASTER_PORT".into(), "29500".into()),
        ("TORCHELASTIC_RUN_ID".into(), format!("{}-{test}", std::process::id())),
        ("ORDO_NCCL_ID_DIR".into(), dir.display().to_string()),
    ]
}

/// Runs the two ranks with torchrun's variables, `RANK` and `LOCAL_RANK` each child's own.
fn run_launched(test: &str, extra: &[(String, String)]) -> Vec<(Option<i32>, String)> {
    let own = [("RANK", "{rank}"), ("LOCAL_RANK", "{rank}")];
    let refs: Vec<(&str, &str)> = own.into_iter().chain(extra.iter().map(|(k, v)| (k.as_str(), v.as_str()))).collect();
    run_ranks_with(test, &refs)
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_from_the_launchers_environment_and_a_folder() {
    const TEST: &str = "two_ranks_from_the_launchers_environment_and_a_folder";
    if let Some(rank) = child_rank() {
        return launcher_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ordo-nccl-ids-{}-{TEST}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = run_launched(TEST, &torchrun_env(TEST, &dir));
    let _ = std::fs::remove_dir_all(&dir);
    for (code, text) in out {
        assert_eq!(code, Some(0), "a rank failed:\n{text}");
        assert!(text.contains("LAUNCHER OK"), "{text}");
    }
}

/// A free port on the loopback interface (asked of the system; free again when returned).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Every rank makes the same id from `NCCL_COMM_ID` (NCCL 2.22 and later): no exchange at all.
fn comm_id_child(rank: usize) {
    let mut rendezvous = Rendezvous::from_env().unwrap();
    assert!(matches!(rendezvous.source(), ordo_cuda_libs::nccl::IdSource::NcclCommId(_)));
    let d = rendezvous.launch().device().unwrap();
    d.set_current().unwrap();
    let nccl = Nccl::load().unwrap();
    if nccl.release().unwrap() < Version::new(2, 22, 0) {
        let e = rendezvous.init_rank(&nccl, d, "world", &CommConfig::default()).unwrap_err();
        assert!(e.to_string().contains("NCCL_COMM_ID"), "{e}");
        println!("rank {rank}: NCCL_COMM_ID refused by NCCL {}; COMM ID OK", nccl.release().unwrap());
        return;
    }
    let stream = Stream::new().unwrap();
    let world = rendezvous.init_rank(&nccl, d, "world", &CommConfig::default()).unwrap();
    sum_check(&world, stream.as_stream(), "a communicator from NCCL_COMM_ID");
    println!("rank {rank}: COMM ID OK");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_from_nccl_comm_id_without_an_exchange() {
    const TEST: &str = "two_ranks_from_nccl_comm_id_without_an_exchange";
    if let Some(rank) = child_rank() {
        return comm_id_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    // No folder: a rank that looked for one would fail (the variables say two hosts).
    let env = vec![
        ("WORLD_SIZE".to_owned(), RANKS.to_string()),
        ("GROUP_WORLD_SIZE".to_owned(), RANKS.to_string()),
        ("LOCAL_WORLD_SIZE".to_owned(), "1".to_owned()),
        ("NCCL_COMM_ID".to_owned(), format!("127.0.0.1:{}", free_port())),
    ];
    for (code, text) in run_launched(TEST, &env) {
        assert_eq!(code, Some(0), "a rank failed:\n{text}");
        assert!(text.contains("COMM ID OK"), "{text}");
    }
}

type RawInitRank = unsafe extern "C" fn(*mut *mut core::ffi::c_void, i32, RawId, i32) -> i32;
type RawDestroy = unsafe extern "C" fn(*mut core::ffi::c_void) -> i32;

/// `ncclUniqueId`, by value.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawId([u8; UniqueId::BYTES]);

/// Each rank makes its communicator with plain NCCL calls (`ncclCommInitRank` through the loaded
/// library, as an engine would), ordo borrows it for every collective and type, and the owner
/// destroys it after the borrow.
fn borrowed_child(rank: usize) {
    let nccl = Nccl::load().unwrap();
    let id = exchange_id(&nccl, rank);
    let d = Device::from_ordinal(0);
    d.set_current().unwrap();
    let names = std::env::var("ORDO_NCCL").into_iter().chain(["libnccl.so.2".to_owned()]);
    let lib = names.into_iter().find_map(|n| unsafe { libloading::Library::new(n) }.ok()).unwrap();
    let (init, destroy) = unsafe {
        (*lib.get::<RawInitRank>(b"ncclCommInitRank").unwrap(), *lib.get::<RawDestroy>(b"ncclCommDestroy").unwrap())
    };
    let mut raw = core::ptr::null_mut();
    assert_eq!(unsafe { init(&mut raw, RANKS as i32, RawId(id.to_bytes()), rank as i32) }, 0, "ncclCommInitRank");
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    {
        // SAFETY: this process's communicator of the same NCCL, alive until destroyed below, after
        // the borrow; only this thread calls NCCL.
        let comm = unsafe { BorrowedCommunicator::borrow_raw(&nccl, raw) }.unwrap();
        assert_eq!((comm.rank(), comm.ranks(), comm.device()), (rank, RANKS, d));
        check_type::<f32>(&comm, s, "f32 (borrowed)", |v| v as f32, true);
        check_type::<i64>(&comm, s, "i64 (borrowed)", |v| v as i64, false);
        check_type::<Bf16>(&comm, s, "bf16 (borrowed)", |v| Bf16::from_f32(v as f32), true);
        s.synchronize().unwrap();
    }
    assert_eq!(unsafe { destroy(raw) }, 0, "the owner destroys its communicator after the borrow");
    println!("rank {rank}: BORROWED OK");
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_ranks_borrow_communicators_made_by_plain_nccl_calls() {
    const TEST: &str = "two_ranks_borrow_communicators_made_by_plain_nccl_calls";
    if let Some(rank) = child_rank() {
        return borrowed_child(rank);
    }
    if can_run(TEST).is_none() {
        return;
    }
    for (code, text) in run_ranks(TEST) {
        assert_eq!(code, Some(0), "a rank failed:\n{text}");
        assert!(text.contains("every collective agrees with the CPU") && text.contains("BORROWED OK"), "{text}");
    }
}
