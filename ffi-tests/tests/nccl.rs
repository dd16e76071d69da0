//! NCCL through the C ABI (`ordo_nccl_*`) on the GPU, results checked against the CPU:
//! - one rank on device 0 (any GPU machine): every collective of a one-rank communicator is a copy
//!   (or, for average, a division by one), and a stream of its own waits on it;
//! - two ranks on two devices, one thread each (the calls a process per rank makes, in one
//!   process): sum and max all-reduce, broadcast from rank 1, reduce to rank 0, all-gather and
//!   reduce-scatter, then `ordo_nccl_comm_wait` and destroy.
//!
//! - a communicator made outside the C ABI (the Rust API's, standing in for an engine's
//!   `ncclComm_t`), borrowed: collectives on it, destroy and abort refused, release ends the
//!   handle and leaves the communicator to its owner;
//! - one rank: a wait refuses a capturing stream and keeps its timeout while another thread's init
//!   of the device blocks (in a child process), and a zero count is refused.
//!
//! Without libnccl.so.2 the tests say so and pass without checking anything. The two-rank test
//! needs two devices: with fewer it says so and passes, unless `ORDO_REQUIRE_GPUS` says the
//! machine has two.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;

/// A unique id, or `None` (after saying why) where NCCL cannot be loaded.
fn unique_id(test: &str) -> Option<[u8; ORDO_NCCL_UNIQUE_ID_BYTES]> {
    let mut id = [0u8; ORDO_NCCL_UNIQUE_ID_BYTES];
    let st = unsafe { ordo_nccl_get_unique_id(id.as_mut_ptr(), id.len()) };
    if st == ORDO_ERROR_NOT_SUPPORTED {
        println!("{test}: skipped, NCCL not loadable");
        return None;
    }
    assert_eq!(st, ORDO_SUCCESS, "ordo_nccl_get_unique_id");
    Some(id)
}

fn ok(st: OrdoStatus, what: &str) {
    if st != ORDO_SUCCESS {
        let mut buf = [0 as core::ffi::c_char; 256];
        unsafe { ordo_last_error_message(buf.as_mut_ptr(), buf.len()) };
        let message = unsafe { core::ffi::CStr::from_ptr(buf.as_ptr()) };
        panic!("{what}: status {st}: {message:?}");
    }
}

/// Rank `rank`'s data: never zero, different on each rank.
fn data(rank: usize, n: usize) -> Vec<f32> {
    (0..n).map(|i| 0.5 + ((i * 7 + rank * 13) % 31) as f32 + rank as f32 * 0.25).collect()
}

fn upload(s: StreamRef<'_>, host: &[f32]) -> DeviceBuffer<'static, f32> {
    let s: StreamRef<'static> = unsafe { StreamRef::from_raw(s.as_raw()).unwrap() };
    let mut d = DeviceBuffer::<f32>::alloc_async(host.len(), s).unwrap();
    copy::h2d_blocking(d.as_mut_slice(), host, s).unwrap();
    d
}

fn download(s: StreamRef<'_>, d: &DeviceBuffer<'_, f32>) -> Vec<f32> {
    let mut out = vec![0f32; d.len()];
    copy::d2h_blocking(&mut out, d.as_slice(), s).unwrap();
    out
}

/// Fills `d` with -1 (blocking), so that a collective that writes nothing is seen.
fn poison(s: StreamRef<'_>, d: &mut DeviceBuffer<'_, f32>) {
    let minus_one = vec![-1.0; d.len()];
    copy::h2d_blocking(d.as_mut_slice(), &minus_one, s).unwrap();
}

fn cv(p: *const f32) -> *const c_void {
    p.cast()
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_nccl_c_api_one_rank_collectives_are_copies() {
    const TEST: &str = "gpu_nccl_c_api_one_rank_collectives_are_copies";
    let Some(id) = unique_id(TEST) else { return };
    const N: usize = 4099;
    Device::from_ordinal(0).set_current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut comm = null_mut();
    ok(unsafe { ordo_nccl_comm_init_rank(0, 1, id.as_ptr(), id.len(), 0, &mut comm) }, "init one rank");
    assert!(!comm.is_null());
    let input = data(0, N);
    let send = upload(s, &input);
    let mut recv = upload(s, &vec![-1.0; N]);
    let f32t = ORDO_NCCL_FLOAT32;
    unsafe {
        for op in [ORDO_NCCL_SUM, ORDO_NCCL_PROD, ORDO_NCCL_MAX, ORDO_NCCL_MIN, ORDO_NCCL_AVG] {
            poison(s, &mut recv);
            ok(
                ordo_nccl_all_reduce(comm, cv(send.as_ptr()), recv.as_mut_ptr().cast(), N, f32t, op, s.as_raw()),
                "all_reduce",
            );
            ok(ordo_nccl_comm_wait(comm, s.as_raw(), 60_000), "wait");
            assert!(download(s, &recv) == input, "one-rank all-reduce (op {op}) is a copy");
        }
        for (what, st) in [
            (
                "broadcast",
                ordo_nccl_broadcast(comm, cv(send.as_ptr()), recv.as_mut_ptr().cast(), N, f32t, 0, s.as_raw()),
            ),
            (
                "reduce",
                ordo_nccl_reduce(
                    comm,
                    cv(send.as_ptr()),
                    recv.as_mut_ptr().cast(),
                    N,
                    f32t,
                    ORDO_NCCL_SUM,
                    0,
                    s.as_raw(),
                ),
            ),
            (
                "all_gather",
                ordo_nccl_all_gather(comm, cv(send.as_ptr()), recv.as_mut_ptr().cast(), N, f32t, s.as_raw()),
            ),
            (
                "reduce_scatter",
                ordo_nccl_reduce_scatter(
                    comm,
                    cv(send.as_ptr()),
                    recv.as_mut_ptr().cast(),
                    N,
                    f32t,
                    ORDO_NCCL_SUM,
                    s.as_raw(),
                ),
            ),
        ] {
            ok(st, what);
            ok(ordo_nccl_comm_wait(comm, s.as_raw(), 60_000), "wait");
            assert!(download(s, &recv) == input, "one-rank {what} is a copy");
        }
        // A root past the one rank, a count whose bytes overflow: refused before NCCL.
        let st = ordo_nccl_broadcast(comm, cv(send.as_ptr()), recv.as_mut_ptr().cast(), N, f32t, 1, s.as_raw());
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "root 1 of one rank");
        let st = ordo_nccl_all_reduce(
            comm,
            cv(send.as_ptr()),
            recv.as_mut_ptr().cast(),
            usize::MAX / 2,
            f32t,
            0,
            s.as_raw(),
        );
        assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "count * 4 overflows");
        ordo_nccl_comm_destroy(comm);
        assert_eq!(ordo_nccl_comm_wait(comm, s.as_raw(), 10), ORDO_ERROR_INVALID_HANDLE, "destroyed");
    }
    stream.synchronize().unwrap();
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_gpus_nccl_c_api_two_ranks_on_two_threads() {
    const TEST: &str = "two_gpus_nccl_c_api_two_ranks_on_two_threads";
    const N: usize = 1 << 16; // elements a rank
    const RANKS: usize = 2;
    let count = device::count().unwrap();
    if count < RANKS {
        let required: usize = std::env::var("ORDO_REQUIRE_GPUS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        assert!(required < RANKS, "ORDO_REQUIRE_GPUS={required} but CUDA sees {count} device(s)");
        println!("{TEST}: skipped, needs two CUDA devices, found {count}");
        return;
    }
    let Some(id) = unique_id(TEST) else { return };
    let inputs: Vec<Vec<f32>> = (0..RANKS).map(|r| data(r, N)).collect();
    let sum: Vec<f32> = (0..N).map(|i| inputs[0][i] + inputs[1][i]).collect();
    let max: Vec<f32> = (0..N).map(|i| inputs[0][i].max(inputs[1][i])).collect();
    let gathered: Vec<f32> = inputs.concat();
    std::thread::scope(|scope| {
        for rank in 0..RANKS {
            let (inputs, sum, max, gathered) = (&inputs, &sum, &max, &gathered);
            scope.spawn(move || {
                let device = Device::from_ordinal(rank as i32);
                device.set_current().unwrap();
                let stream = Stream::new().unwrap();
                let s = stream.as_stream();
                let mut comm = null_mut();
                // Blocks until both ranks have joined: each thread is one rank.
                ok(
                    unsafe { ordo_nccl_comm_init_rank(rank as i32, RANKS, id.as_ptr(), id.len(), rank, &mut comm) },
                    "init",
                );
                let send = upload(s, &inputs[rank]);
                let mut recv = upload(s, &vec![-1.0; N]);
                let mut all = upload(s, &vec![-1.0; N * RANKS]);
                let f32t = ORDO_NCCL_FLOAT32;
                let sr = s.as_raw();
                unsafe {
                    ok(
                        ordo_nccl_all_reduce(
                            comm,
                            cv(send.as_ptr()),
                            recv.as_mut_ptr().cast(),
                            N,
                            f32t,
                            ORDO_NCCL_SUM,
                            sr,
                        ),
                        "sum",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    assert!(download(s, &recv) == *sum, "rank {rank}: all-reduce sum");
                    ok(
                        ordo_nccl_all_reduce(
                            comm,
                            cv(send.as_ptr()),
                            recv.as_mut_ptr().cast(),
                            N,
                            f32t,
                            ORDO_NCCL_MAX,
                            sr,
                        ),
                        "max",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    assert!(download(s, &recv) == *max, "rank {rank}: all-reduce max");
                    ok(
                        ordo_nccl_broadcast(comm, cv(send.as_ptr()), recv.as_mut_ptr().cast(), N, f32t, 1, sr),
                        "broadcast",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    assert!(download(s, &recv) == inputs[1], "rank {rank}: broadcast from rank 1");
                    poison(s, &mut recv);
                    ok(
                        ordo_nccl_reduce(
                            comm,
                            cv(send.as_ptr()),
                            recv.as_mut_ptr().cast(),
                            N,
                            f32t,
                            ORDO_NCCL_SUM,
                            0,
                            sr,
                        ),
                        "reduce",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    if rank == 0 {
                        assert!(download(s, &recv) == *sum, "rank 0: reduce to rank 0");
                    }
                    ok(
                        ordo_nccl_all_gather(comm, cv(send.as_ptr()), all.as_mut_ptr().cast(), N, f32t, sr),
                        "all_gather",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    assert!(download(s, &all) == *gathered, "rank {rank}: all-gather");
                    // Reduce-scatter: each rank's N elements summed over the ranks, rank r
                    // keeping the r-th half.
                    let half = N / RANKS;
                    ok(
                        ordo_nccl_reduce_scatter(
                            comm,
                            cv(send.as_ptr()),
                            recv.as_mut_ptr().cast(),
                            half,
                            f32t,
                            ORDO_NCCL_SUM,
                            sr,
                        ),
                        "reduce_scatter",
                    );
                    ok(ordo_nccl_comm_wait(comm, sr, 60_000), "wait");
                    let got = download(s, &recv);
                    assert!(got[..half] == sum[rank * half..(rank + 1) * half], "rank {rank}: reduce-scatter");
                    ordo_nccl_comm_destroy(comm);
                }
                stream.synchronize().unwrap();
            });
        }
    });
}

/// The DEVICE POINTERS rule for NCCL: host memory (pageable or pinned) as any buffer of any
/// collective is ORDO_ERROR_INVALID_ARGUMENT naming the buffer, before NCCL is called, and the
/// stream stays healthy. Before the fix a pageable buffer reached NCCL: `ORDO_SUCCESS` for a sum,
/// and with `AVG` the stream failed with cudaErrorIllegalAddress (sticky: the context was lost).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_nccl_host_buffers_are_refused_before_nccl() {
    const TEST: &str = "gpu_nccl_host_buffers_are_refused_before_nccl";
    let Some(id) = unique_id(TEST) else { return };
    const N: usize = 1024;
    Device::from_ordinal(0).set_current().unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut comm = null_mut();
    ok(unsafe { ordo_nccl_comm_init_rank(0, 1, id.as_ptr(), id.len(), 0, &mut comm) }, "init one rank");
    let device = upload(s, &data(0, N));
    let mut device_out = upload(s, &vec![-1.0; N]);
    let mut pageable = data(0, N);
    let mut pinned = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty()).unwrap();
    let f32t = ORDO_NCCL_FLOAT32;
    let last_call = || {
        let mut info = OrdoErrorInfo {
            size: core::mem::size_of::<OrdoErrorInfo>(),
            status: 0,
            cuda_error: 0,
            library_status: 0,
            sticky: 0,
            call: [0; ORDO_LAST_ERROR_CALL_LEN],
            message: [0; ORDO_LAST_ERROR_MESSAGE_LEN],
        };
        assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
        unsafe { core::ffi::CStr::from_ptr(info.call.as_ptr()) }.to_string_lossy().into_owned()
    };
    let hosts: [(&str, *mut f32); 2] = [("pageable", pageable.as_mut_ptr()), ("pinned", pinned.as_mut_ptr())];
    for (what, host) in hosts {
        let (d_in, d_out, h) = (cv(device.as_ptr()), device_out.as_mut_ptr().cast::<c_void>(), host.cast::<c_void>());
        let cases: [(&str, &str, OrdoStatus); 10] = unsafe {
            [
                (
                    "ordo_nccl_all_reduce",
                    "send",
                    ordo_nccl_all_reduce(comm, h, d_out, N, f32t, ORDO_NCCL_AVG, s.as_raw()),
                ),
                (
                    "ordo_nccl_all_reduce",
                    "recv",
                    ordo_nccl_all_reduce(comm, d_in, h, N, f32t, ORDO_NCCL_SUM, s.as_raw()),
                ),
                ("ordo_nccl_broadcast", "send", ordo_nccl_broadcast(comm, h, d_out, N, f32t, 0, s.as_raw())),
                ("ordo_nccl_broadcast", "recv", ordo_nccl_broadcast(comm, d_in, h, N, f32t, 0, s.as_raw())),
                ("ordo_nccl_reduce", "send", ordo_nccl_reduce(comm, h, d_out, N, f32t, ORDO_NCCL_SUM, 0, s.as_raw())),
                ("ordo_nccl_reduce", "recv", ordo_nccl_reduce(comm, d_in, h, N, f32t, ORDO_NCCL_SUM, 0, s.as_raw())),
                ("ordo_nccl_all_gather", "send", ordo_nccl_all_gather(comm, h, d_out, N, f32t, s.as_raw())),
                ("ordo_nccl_all_gather", "recv", ordo_nccl_all_gather(comm, d_in, h, N, f32t, s.as_raw())),
                (
                    "ordo_nccl_reduce_scatter",
                    "send",
                    ordo_nccl_reduce_scatter(comm, h, d_out, N, f32t, ORDO_NCCL_SUM, s.as_raw()),
                ),
                (
                    "ordo_nccl_reduce_scatter",
                    "recv",
                    ordo_nccl_reduce_scatter(comm, d_in, h, N, f32t, ORDO_NCCL_SUM, s.as_raw()),
                ),
            ]
        };
        for (export, arg, st) in cases {
            assert_eq!(st, ORDO_ERROR_INVALID_ARGUMENT, "{export} with {what} host memory as {arg}");
        }
        // The record is the last refusal's: it names that export and its buffer.
        assert_eq!(last_call(), "ordo_nccl_reduce_scatter(recv)", "{what}");
    }
    ok(unsafe { ordo_nccl_comm_wait(comm, s.as_raw(), 60_000) }, "the stream is healthy");
    stream.synchronize().unwrap();
    ordo_nccl_comm_destroy(comm);
    assert!(download(s, &device_out) == vec![-1.0; N], "NCCL wrote nothing");
}

/// Borrowing checks its arguments before NCCL is loaded, and releasing wants a borrowed handle.
#[test]
fn nccl_borrow_and_release_refuse_bad_arguments() {
    let mut out = null_mut();
    assert_eq!(unsafe { ordo_nccl_comm_borrow(null_mut(), &mut out) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert!(out.is_null());
    let mut some = 1u8;
    let raw: *mut c_void = (&mut some as *mut u8).cast();
    assert_eq!(unsafe { ordo_nccl_comm_borrow(raw, null_mut()) }, ORDO_ERROR_INVALID_ARGUMENT);
    assert_eq!(ordo_nccl_comm_release(null_mut()), ORDO_ERROR_INVALID_HANDLE);
}

/// A communicator made outside the C ABI (the Rust API's own, as an engine's would be), borrowed:
/// an all-reduce on it is checked, destroy and abort refuse it and leave the handle working,
/// release ends the handle, and the owner's communicator still works afterwards.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_nccl_c_api_borrowed_communicator() {
    use ordo_cuda_libs::nccl::{Communicator, Nccl, ReduceOp};
    const TEST: &str = "gpu_nccl_c_api_borrowed_communicator";
    let Ok(nccl) = Nccl::load() else {
        println!("{TEST}: skipped, NCCL not loadable");
        return;
    };
    const N: usize = 4099;
    let device = Device::from_ordinal(0);
    device.set_current().unwrap();
    let id = nccl.unique_id().unwrap();
    let owner = Communicator::init_rank(&nccl, device, 1, &id, 0).unwrap();
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let input = data(0, N);
    let send = upload(s, &input);
    let mut recv = upload(s, &vec![-1.0; N]);
    let mut comm = null_mut();
    ok(unsafe { ordo_nccl_comm_borrow(owner.as_raw(), &mut comm) }, "borrow");
    assert!(!comm.is_null());
    unsafe {
        ok(
            ordo_nccl_all_reduce(
                comm,
                cv(send.as_ptr()),
                recv.as_mut_ptr().cast(),
                N,
                ORDO_NCCL_FLOAT32,
                ORDO_NCCL_SUM,
                s.as_raw(),
            ),
            "all_reduce on the borrowed handle",
        );
        ok(ordo_nccl_comm_wait(comm, s.as_raw(), 60_000), "wait");
    }
    assert!(download(s, &recv) == input, "one-rank all-reduce through the borrowed handle is a copy");
    // Neither end of the owner's communicator is reachable through the handle.
    assert_eq!(ordo_nccl_comm_abort(comm), ORDO_ERROR_INVALID_ARGUMENT, "abort of a borrowed handle");
    ordo_nccl_comm_destroy(comm);
    let mut info = last_error_info();
    assert_eq!(unsafe { ordo_last_error(&mut info) }, ORDO_SUCCESS);
    assert_eq!(info.status, ORDO_ERROR_INVALID_ARGUMENT, "destroy of a borrowed handle is refused");
    unsafe { ok(ordo_nccl_comm_wait(comm, s.as_raw(), 60_000), "the handle still works after the refusals") };
    ok(ordo_nccl_comm_release(comm), "release");
    assert_eq!(unsafe { ordo_nccl_comm_wait(comm, s.as_raw(), 10) }, ORDO_ERROR_INVALID_HANDLE, "released");
    // The owner's communicator was left alone: ordo's own all-reduce on it still works.
    poison(s, &mut recv);
    unsafe { owner.all_reduce(send.as_slice(), recv.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
    owner.wait(s, std::time::Duration::from_secs(60)).unwrap();
    assert!(download(s, &recv) == input, "the owner's communicator after the release");
    // An owned handle cannot be released.
    let mut owned = null_mut();
    let id = unique_id(TEST).unwrap();
    ok(unsafe { ordo_nccl_comm_init_rank(0, 1, id.as_ptr(), id.len(), 0, &mut owned) }, "init one rank");
    assert_eq!(ordo_nccl_comm_release(owned), ORDO_ERROR_INVALID_ARGUMENT, "release of an owned handle");
    ordo_nccl_comm_destroy(owned);
    drop(owner);
    stream.synchronize().unwrap();
}

fn last_error_info() -> OrdoErrorInfo {
    OrdoErrorInfo {
        size: core::mem::size_of::<OrdoErrorInfo>(),
        status: 0,
        cuda_error: 0,
        library_status: 0,
        sticky: 0,
        call: [0; ORDO_LAST_ERROR_CALL_LEN],
        message: [0; ORDO_LAST_ERROR_MESSAGE_LEN],
    }
}

// ---- Waits, captures and zero counts on one rank ----------------------------------------------------

/// A one-rank communicator on device 0 and a stream there, or `None` (after saying why) where NCCL
/// cannot be loaded.
fn one_rank(test: &str) -> Option<(*mut OrdoNcclComm, sys::cudaStream_t)> {
    let id = unique_id(test)?;
    assert_eq!(unsafe { sys::cudaSetDevice(0) }, sys::cudaError::cudaSuccess);
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(unsafe { sys::cudaStreamCreate(&mut stream) }, sys::cudaError::cudaSuccess);
    let mut comm = null_mut();
    assert_eq!(unsafe { ordo_nccl_comm_init_rank(0, 1, id.as_ptr(), id.len(), 0, &mut comm) }, ORDO_SUCCESS);
    Some((comm, stream))
}

/// `ordo_nccl_comm_wait` on a capturing stream is refused with `ORDO_ERROR_STREAM_CAPTURING` before
/// the stream is touched: the caller's capture stays valid (a query of the stream would have
/// invalidated it: `docs/cuda-behaviours.md`, CB-05).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_wait_on_a_capturing_stream_is_refused() {
    let Some((comm, stream)) = one_rank("gpu_nccl_wait_on_a_capturing_stream_is_refused") else { return };
    let mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal;
    assert_eq!(unsafe { sys::cudaStreamBeginCapture(stream, mode) }, sys::cudaError::cudaSuccess);
    let t = std::time::Instant::now();
    let st = unsafe { ordo_nccl_comm_wait(comm, stream, 200) };
    let waited = t.elapsed();
    let mut status = sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone;
    unsafe { sys::cudaStreamIsCapturing(stream, &mut status) };
    let mut graph: sys::cudaGraph_t = null_mut();
    let end = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }
    ordo_nccl_comm_destroy(comm);
    unsafe { sys::cudaStreamDestroy(stream) };
    println!("status {st} after {waited:?}; capture {status:?}; end {end:?}");
    assert_eq!(st, ORDO_ERROR_STREAM_CAPTURING);
    assert_eq!(status, sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive, "the capture was invalidated");
    assert_eq!(end, sys::cudaError::cudaSuccess);
}

/// A zero count is refused by every collective with `ORDO_ERROR_INVALID_ARGUMENT` before NCCL.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_zero_count_is_refused() {
    let Some((comm, stream)) = one_rank("gpu_nccl_zero_count_is_refused") else { return };
    let mut d: *mut c_void = null_mut();
    assert_eq!(unsafe { sys::cudaMalloc(&mut d, 1024) }, sys::cudaError::cudaSuccess);
    let f32t = ORDO_NCCL_FLOAT32;
    let sts = unsafe {
        [
            ordo_nccl_all_reduce(comm, d, d, 0, f32t, ORDO_NCCL_SUM, stream),
            ordo_nccl_broadcast(comm, d, d, 0, f32t, 0, stream),
            ordo_nccl_reduce(comm, d, d, 0, f32t, ORDO_NCCL_SUM, 0, stream),
            ordo_nccl_all_gather(comm, d, d, 0, f32t, stream),
            ordo_nccl_reduce_scatter(comm, d, d, 0, f32t, ORDO_NCCL_SUM, stream),
        ]
    };
    unsafe { sys::cudaStreamSynchronize(stream) };
    ordo_nccl_comm_destroy(comm);
    unsafe {
        sys::cudaFree(d);
        sys::cudaStreamDestroy(stream);
    }
    assert_eq!(sts, [ORDO_ERROR_INVALID_ARGUMENT; 5]);
}

/// A wait on a healthy communicator keeps its timeout while another thread's init of a
/// communicator of the same device blocks on a rank that never comes (NCCL's blocking calls hold
/// no lock of ordo's); run in a child process, which the blocked init keeps.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device and NCCL")]
fn gpu_nccl_wait_keeps_its_timeout_while_another_thread_inits_on_the_device() {
    const NAME: &str = "gpu_nccl_wait_keeps_its_timeout_while_another_thread_inits_on_the_device";
    if std::env::var_os("ORDO_NCCL_WAIT_CHILD").is_some() {
        let code = nccl_wait_child();
        std::process::exit(code); // the blocked threads go with the process
    }
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--include-ignored"])
        .env("ORDO_NCCL_WAIT_CHILD", "1")
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let status = status.expect("child hung past 60 s");
    assert!(status.success(), "child: {status:?} (2: the wait was still blocked after 10 s)");
}

/// The child's scenario: 0 when the wait came back in time (or NCCL is missing), 2 when it hung.
fn nccl_wait_child() -> i32 {
    let Some((comm, stream)) = one_rank("nccl_wait_child") else { return 0 };
    let Some(id2) = unique_id("nccl_wait_child") else { return 0 };
    std::thread::spawn(move || {
        let mut c = null_mut();
        // Rank 0 of 2; rank 1 never comes.
        let st = unsafe { ordo_nccl_comm_init_rank(0, 2, id2.as_ptr(), id2.len(), 0, &mut c) };
        println!("init of the two-rank communicator returned {st}");
    });
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let (tx, rx) = std::sync::mpsc::channel();
    let (comm_token, stream_token) = (comm as usize, stream as usize);
    std::thread::spawn(move || {
        let t = std::time::Instant::now();
        let st = unsafe { ordo_nccl_comm_wait(comm_token as *mut _, stream_token as sys::cudaStream_t, 100) };
        let _ = tx.send((st, t.elapsed()));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok((st, took)) => {
            println!("wait returned {st} after {took:?}");
            i32::from(st != ORDO_SUCCESS || took > std::time::Duration::from_secs(2))
        }
        Err(_) => {
            println!("ordo_nccl_comm_wait(timeout 100 ms) still blocked after 10 s");
            2
        }
    }
}
