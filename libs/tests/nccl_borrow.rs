//! A communicator made by plain NCCL calls (as an engine makes its own), borrowed by ordo: ordo's
//! collectives and waits on it agree with the CPU, and the communicator is still its owner's after
//! the borrow ends. One rank on one GPU (`ncclCommInitAll` of device 0). Needs a CUDA device and
//! libnccl.so.2: without NCCL the test says so and passes without checking anything.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(feature = "nccl")]

use core::ffi::{c_int, c_void};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_libs::nccl::{BorrowedCommunicator, CommState, Nccl, ReduceOp};
use std::time::Duration;

type InitAll = unsafe extern "C" fn(*mut *mut c_void, c_int, *const c_int) -> c_int;
type Query = unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int;
type Destroy = unsafe extern "C" fn(*mut c_void) -> c_int;
type AllReduce =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, c_int, c_int, *mut c_void, *mut c_void) -> c_int;

/// The library ordo loaded, opened again by the same name (the loader hands back the same one):
/// the owner's NCCL, as an engine that links NCCL itself has it.
fn owners_nccl() -> libloading::Library {
    let names = std::env::var("ORDO_NCCL").into_iter().chain(["libnccl.so.2".to_owned()]);
    names.into_iter().find_map(|n| unsafe { libloading::Library::new(n) }.ok()).expect("NCCL opens again")
}

fn upload<'s>(host: &[f32], s: StreamRef<'s>) -> DeviceBuffer<'s, f32> {
    let mut d = DeviceBuffer::<f32>::alloc_async(host.len(), s).unwrap();
    copy::h2d_blocking(d.as_mut_slice(), host, s).unwrap();
    d
}

fn download(d: &DeviceBuffer<'_, f32>, s: StreamRef<'_>) -> Vec<f32> {
    let mut h = vec![0f32; d.len()];
    copy::d2h_blocking(&mut h, d.as_slice(), s).unwrap();
    h
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_communicator_made_by_plain_nccl_calls_is_borrowed_used_and_left_to_its_owner() {
    let nccl = match Nccl::load() {
        Ok(n) => n,
        Err(e) => {
            println!("skipped, NCCL not loadable: {e}");
            return;
        }
    };
    let lib = owners_nccl();
    let (init_all, count, destroy, raw_all_reduce) = unsafe {
        (
            *lib.get::<InitAll>(b"ncclCommInitAll").unwrap(),
            *lib.get::<Query>(b"ncclCommCount").unwrap(),
            *lib.get::<Destroy>(b"ncclCommDestroy").unwrap(),
            *lib.get::<AllReduce>(b"ncclAllReduce").unwrap(),
        )
    };
    let d = Device::from_ordinal(0);
    d.set_current().unwrap();
    // The owner's communicator: one rank on device 0.
    let mut raw: *mut c_void = core::ptr::null_mut();
    assert_eq!(unsafe { init_all(&mut raw, 1, [0].as_ptr()) }, 0, "ncclCommInitAll");
    assert!(!raw.is_null());

    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    const N: usize = 1 << 16;
    let host: Vec<f32> = (0..N).map(|i| ((i * 13) % 29) as f32 + 0.5).collect();
    let send = upload(&host, s);
    let sentinel = vec![-7.0f32; N];
    {
        // SAFETY: `raw` is the owner's live communicator of this process's NCCL; the owner makes
        // no call on it while borrowed, and destroys it only after the borrow ended (below).
        let comm = unsafe { BorrowedCommunicator::borrow_raw(&nccl, raw) }.unwrap();
        assert_eq!((comm.rank(), comm.ranks(), comm.device()), (0, 1, d), "asked of NCCL");
        assert_eq!(comm.state().unwrap(), CommState::Ready);
        assert_eq!(comm.as_raw(), raw);
        println!("borrowed: {comm:?}");

        // One rank: every reduction over the ranks is the rank's own data, written into a buffer
        // that held something else.
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Prod, ReduceOp::Avg] {
            let mut recv = upload(&sentinel, s);
            unsafe { comm.all_reduce(send.as_slice(), recv.as_mut_slice(), op, s).unwrap() };
            comm.wait(s, Duration::from_secs(60)).unwrap();
            assert_eq!(download(&recv, s), host, "all_reduce {op:?} on the borrowed communicator");
        }
        let mut gathered = upload(&sentinel, s);
        unsafe { comm.all_gather(send.as_slice(), gathered.as_mut_slice(), s).unwrap() };
        let mut b = upload(&sentinel, s);
        unsafe { comm.broadcast(Some(send.as_slice()), b.as_mut_slice(), 0, s).unwrap() };
        comm.wait(s, Duration::from_secs(60)).unwrap();
        assert_eq!(download(&gathered, s), host, "all_gather");
        assert_eq!(download(&b, s), host, "broadcast");
        // ordo's checks hold on a borrowed one too.
        assert!(unsafe { comm.broadcast(None, b.as_mut_slice(), 1, s) }.is_err(), "root not below ranks");

        // A captured all-reduce on the borrowed communicator, replayed: x -> x (one rank) three
        // times into a buffer the capture writes.
        let mut out = upload(&sentinel, s);
        let graph = unsafe {
            capture(s, CaptureMode::Relaxed, |cs| {
                comm.all_reduce(send.as_slice(), out.as_mut_slice(), ReduceOp::Sum, cs)
            })
        }
        .unwrap();
        let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
        for _ in 0..3 {
            exec.launch(s).unwrap();
        }
        comm.wait(s, Duration::from_secs(60)).unwrap();
        assert_eq!(download(&out, s), host, "captured all-reduce on the borrowed communicator");
        drop((exec, graph));

        // A split of a borrowed communicator is ordo's own (destroyed when dropped).
        match comm.split(Some(0), 0, None) {
            Ok(Some(child)) => {
                let mut r = upload(&sentinel, s);
                unsafe { child.all_reduce(send.as_slice(), r.as_mut_slice(), ReduceOp::Sum, s).unwrap() };
                child.wait(s, Duration::from_secs(60)).unwrap();
                assert_eq!(download(&r, s), host, "all_reduce on a split of the borrowed communicator");
            }
            Err(Error::Usage(u)) if u.kind == UsageKind::NotSupported => println!("no split: {}", u.what),
            other => panic!("split of the borrowed communicator: {other:?}"),
        }
        s.synchronize().unwrap();
    } // the borrow ends: no NCCL call

    // Still the owner's: NCCL answers on it, runs the owner's own all-reduce, and destroys it once.
    let mut n: c_int = 0;
    assert_eq!(unsafe { count(raw, &mut n) }, 0, "ncclCommCount after the borrow");
    assert_eq!(n, 1);
    let mut recv = upload(&sentinel, s);
    let status =
        unsafe { raw_all_reduce(send.as_ptr().cast(), recv.as_mut_ptr().cast(), N, 7, 0, raw, s.as_raw().cast()) };
    assert_eq!(status, 0, "the owner's ncclAllReduce after the borrow");
    s.synchronize().unwrap();
    assert_eq!(download(&recv, s), host);
    drop((recv, send));
    s.synchronize().unwrap();
    assert_eq!(unsafe { destroy(raw) }, 0, "the owner destroys it, once");
    assert!(ordo_cuda_core::error::take_drop_errors().is_empty());
}

/// The checks that need no communicator: a null handle is refused before NCCL is called.
#[test]
fn a_null_handle_is_refused() {
    let Ok(nccl) = Nccl::load() else {
        println!("skipped, NCCL not loadable");
        return;
    };
    let e = unsafe { BorrowedCommunicator::borrow_raw(&nccl, core::ptr::null_mut()) }.unwrap_err();
    assert!(matches!(&e, Error::Usage(u) if u.kind == UsageKind::InvalidArgument), "{e}");
}
