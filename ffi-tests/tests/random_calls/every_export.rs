//! Every stream-taking export on one workload, results checked against the CPU: eagerly, inside
//! the caller's captures of each mode (replayed three times), under another thread's global-mode
//! capture, from four threads sharing handles; and callbacks that fail (their status comes back,
//! nothing of ordo's keeps running).

use crate::support::*;
use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::{gpu_lock, reference};
use std::sync::atomic::{AtomicI32, Ordering};

/// One set of inputs and outputs for every stream-taking export, with its CPU references.
struct Workload {
    rows: usize,
    cols: usize,
    a: Vec<f32>,
    x: Vec<f32>,
    d_a: *mut f32,
    d_x: *mut f32,
    d_y: *mut f32,
    w: usize,
    h: usize,
    rgb: Vec<u8>,
    d_rgb: *mut u8,
    d_gray: *mut u8,
    n: usize,
    c0: Vec<f32>,
    scale: Vec<f32>,
    d_ca: *mut f32,
    d_cb: *mut f32,
    d_scale: *mut f32,
    pn: usize,
    h_in: *mut f32,
    h_out: *mut f32,
    d_in: *mut f32,
    d_out: *mut f32,
    staged: *mut u8,
    add_one: Box<AddOne>,
}

const STAGED: usize = 512;

fn staged_pattern(i: usize) -> u8 {
    (i * 7 % 251) as u8
}

impl Workload {
    fn new() -> Workload {
        let (rows, cols) = (100usize, 60usize);
        let a: Vec<f32> = (0..rows * cols).map(|i| ((i * 37) % 101) as f32 * 0.02 - 1.0).collect();
        let x: Vec<f32> = (0..cols).map(|i| ((i * 11) % 13) as f32 * 0.1 - 0.6).collect();
        let (w, h) = (33usize, 17usize);
        let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i * 73 % 256) as u8).collect();
        let n = 3000usize;
        let c0: Vec<f32> = (0..n).map(|i| 0.5 + (i % 17) as f32 * 0.01).collect();
        let scale: Vec<f32> = (0..n).map(|i| 0.9 + (i % 7) as f32 * 0.01).collect();
        let pn = 10_000usize;
        let add_one = Box::new(AddOne { x: upload(&[0f32; 256]), ones: upload(&[1f32; 256]) });
        Workload {
            d_a: upload(&a),
            d_x: upload(&x),
            d_y: upload(&vec![f32::NAN; rows]),
            rows,
            cols,
            a,
            x,
            d_rgb: upload(&rgb),
            d_gray: upload(&vec![0u8; w * h]),
            w,
            h,
            rgb,
            d_ca: upload(&c0),
            d_cb: upload(&vec![0f32; n]),
            d_scale: upload(&scale),
            n,
            c0,
            scale,
            h_in: pinned(pn),
            h_out: pinned(pn),
            d_in: upload(&vec![0f32; pn]),
            d_out: upload(&vec![0f32; pn]),
            pn,
            staged: upload(&[0u8; STAGED]),
            add_one,
        }
    }

    /// The pipeline's input for round `r`, written into the pinned input buffer.
    fn set_input(&self, r: usize) -> Vec<f32> {
        let input: Vec<f32> = (0..self.pn).map(|i| ((i + r * 5) % 1000) as f32 * 0.001).collect();
        unsafe { core::ptr::copy_nonoverlapping(input.as_ptr(), self.h_in, self.pn) };
        input
    }

    /// Resets every output (and the chain's input) before a round.
    fn clear(&self) {
        reset(self.d_y, &vec![f32::NAN; self.rows]);
        reset(self.d_gray, &vec![0u8; self.w * self.h]);
        reset(self.d_ca, &self.c0);
        reset(self.d_cb, &vec![0f32; self.n]);
        reset(self.staged, &[0u8; STAGED]);
        reset(self.add_one.x, &[0f32; 256]);
        unsafe { core::ptr::write_bytes(self.h_out, 0, self.pn) };
    }

    /// Every result against the CPU, after the work on `s` (input round `input`, the cache body
    /// run for bucket 8 once).
    fn verify(&self, s: sys::cudaStream_t, input: &[f32], what: &str) {
        close(
            &download(self.d_y, self.rows, s),
            &reference::gemv_normalize(&self.a, &self.x, self.rows, self.cols),
            what,
        );
        assert_eq!(
            download(self.d_gray, self.w * self.h, s),
            reference::frame_filter(&self.rgb, self.w, self.h),
            "{what}: frame_filter"
        );
        close(
            &download(self.d_cb, self.n, s),
            &reference::chain(&self.c0, &self.scale, 3),
            "pdl chain (3 steps, in b)",
        );
        let out = unsafe { core::slice::from_raw_parts(self.h_out, self.pn) };
        let want: Vec<f32> = input.iter().map(|&v| reference::heavy(v)).collect();
        assert!(out == &want[..], "{what}: pipeline output");
        let staged = download(self.staged.cast_const(), STAGED, s);
        assert!(staged.iter().enumerate().all(|(i, &b)| b == staged_pattern(i)), "{what}: staging ring copy");
        let x = download(self.add_one.x.cast_const(), 256, s);
        assert!(
            x[..8].iter().all(|&v| v == 1.0) && x[8..].iter().all(|&v| v == 0.0),
            "{what}: cache body for bucket 8: {:?}",
            &x[..10]
        );
    }

    fn free(self) {
        raw(|| unsafe {
            for p in [
                self.d_a,
                self.d_x,
                self.d_y,
                self.d_ca,
                self.d_cb,
                self.d_scale,
                self.d_in,
                self.d_out,
                self.add_one.x,
                self.add_one.ones.cast_mut(),
            ] {
                sys::cudaFree(p.cast());
            }
            for p in [self.d_rgb, self.d_gray, self.staged] {
                sys::cudaFree(p.cast());
            }
            sys::cudaFreeHost(self.h_in.cast());
            sys::cudaFreeHost(self.h_out.cast());
        });
    }
}

/// Every export on `s`, eagerly (`capture` None) or inside the caller's capture in that mode;
/// the capture is checked after every call, the graph is replayed three times, and every result
/// is checked against the CPU each time.
fn every_export_on(s: sys::cudaStream_t, capture: Option<sys::cudaStreamCaptureMode>) {
    let wl = Workload::new();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let mut cache: *mut OrdoGraphCache = null_mut();
    let mut timer: *mut OrdoTimer = null_mut();
    let mut slot: *mut c_void = null_mut();
    let mut ticket = 0usize;
    unsafe {
        assert_eq!(ordo_staging_ring_create(2, STAGED, &mut ring), ORDO_SUCCESS);
        let ctx = (&*wl.add_one as *const AddOne).cast_mut().cast();
        assert_eq!(ordo_graph_cache_create(null(), 0, 0, Some(add_one_body), ctx, &mut cache), ORDO_SUCCESS);
        assert_eq!(ordo_timer_create(&mut timer), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        for i in 0..STAGED {
            *slot.cast::<u8>().add(i) = staged_pattern(i);
        }
    }
    wl.clear();
    let first = wl.set_input(0);
    if let Some(mode) = capture {
        cuda(raw(|| unsafe { sys::cudaStreamBeginCapture(s, mode) }), "begin capture");
    }
    let valid = |what: &str| {
        if capture.is_some() {
            assert_eq!(
                capture_status(s),
                sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive,
                "{what} invalidated the capture"
            );
        }
    };
    unsafe {
        assert_eq!(ordo_timer_start(timer, s), ORDO_SUCCESS);
        valid("timer start");
        assert_eq!(ordo_gemv_normalize(s, wl.d_a, wl.d_x, wl.d_y, wl.rows, wl.cols), ORDO_SUCCESS);
        valid("gemv_normalize");
        assert_eq!(ordo_frame_filter(s, wl.d_rgb, wl.d_gray, wl.w, wl.h), ORDO_SUCCESS);
        valid("frame_filter");
        assert_eq!(ordo_pdl_chain(s, wl.d_ca, wl.d_cb, wl.d_scale, wl.n, 3, 1), ORDO_SUCCESS);
        valid("pdl_chain");
        assert_eq!(
            ordo_pipeline_run(s, wl.h_in, wl.d_in, wl.d_out, wl.h_out, wl.pn, 7, None, null_mut()),
            ORDO_SUCCESS
        );
        valid("pipeline_run");
        assert_eq!(ordo_staging_ring_submit(ring, ticket, STAGED, wl.staged.cast(), s), ORDO_SUCCESS);
        valid("staging_ring_submit");
        let mut bucket = 0usize;
        assert_eq!(ordo_graph_cache_run(cache, s, 5, &mut bucket), ORDO_SUCCESS);
        assert_eq!(bucket, 8);
        valid("graph_cache_run");
        let want = if capture.is_some() { ORDO_ERROR_STREAM_CAPTURING } else { ORDO_SUCCESS };
        assert_eq!(ordo_graph_cache_capture_all(cache, s), want);
        valid("graph_cache_capture_all");
        assert_eq!(ordo_timer_stop(timer, s), ORDO_SUCCESS);
        valid("timer stop");
        // Calls that take no stream, made while the capture is open (ordo allocates, instantiates
        // nothing here but frees pinned memory and events): the capture stays valid.
        let mut other: *mut OrdoStagingRing = null_mut();
        assert_eq!(ordo_staging_ring_create(1, 64, &mut other), ORDO_SUCCESS);
        ordo_staging_ring_destroy(other);
        let mut t2: *mut OrdoTimer = null_mut();
        assert_eq!(ordo_timer_create(&mut t2), ORDO_SUCCESS);
        ordo_timer_destroy(t2);
        let mut c2: *mut OrdoGraphCache = null_mut();
        assert_eq!(ordo_graph_cache_create(null(), 0, 0, Some(nop_body), null_mut(), &mut c2), ORDO_SUCCESS);
        ordo_graph_cache_destroy(c2);
        let mut v = 0;
        assert_eq!(ordo_runtime_version(&mut v), ORDO_SUCCESS);
        valid("calls without a stream");
    }
    match capture {
        None => wl.verify(s, &first, "eager"),
        Some(mode) => {
            let (mut g, mut ge) = (null_mut(), null_mut());
            cuda(raw(|| unsafe { sys::cudaStreamEndCapture(s, &mut g) }), "end capture");
            cuda(raw(|| unsafe { sys::cudaGraphInstantiate(&mut ge, g, 0) }), "instantiate");
            for r in 0..3 {
                wl.clear();
                let input = wl.set_input(r);
                cuda(raw(|| unsafe { sys::cudaGraphLaunch(ge, s) }), "launch");
                wl.verify(s, &input, &format!("{mode:?} capture, replay {r}"));
            }
            raw(|| unsafe {
                sys::cudaGraphExecDestroy(ge);
                sys::cudaGraphDestroy(g);
            });
        }
    }
    let mut ms = -1f32;
    let elapsed = unsafe { ordo_timer_elapsed_ms(timer, &mut ms) };
    if capture.is_none() {
        assert_eq!(elapsed, ORDO_SUCCESS);
        assert!(ms >= 0.0);
    } else {
        // CUDA cannot time events recorded by a graph: its error, documented.
        assert!(is_documented(elapsed) && elapsed != ORDO_SUCCESS, "{elapsed}");
    }
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    ordo_timer_destroy(timer);
    ordo_graph_cache_destroy(cache);
    ordo_staging_ring_destroy(ring);
    wl.free();
}

/// Every stream-taking export, eagerly on a stream of the test's and on the per-thread stream, gives
/// the CPU's result.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_every_export_gives_the_cpu_result() {
    let _gpu = gpu_lock();
    let s = own_stream();
    every_export_on(s, None);
    every_export_on(sys::cudaStreamPerThread(), None);
    raw(|| unsafe { sys::cudaStreamDestroy(s) });
}

/// Every export inside the caller's capture of each mode leaves it valid, and its graph replayed
/// three times gives the CPU's result each time.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_every_export_inside_captures_of_each_mode_leaves_them_valid_and_replays() {
    let _gpu = gpu_lock();
    let s = own_stream();
    for mode in MODES {
        every_export_on(s, Some(mode));
    }
    raw(|| unsafe { sys::cudaStreamDestroy(s) });
}

/// Work enqueued through every stream-taking export while another thread holds a global-mode
/// capture open leaves that capture valid, with the CPU's results.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_exports_leave_another_threads_global_capture_valid() {
    // Another thread holds a global-mode capture open (PyTorch's default) while this one enqueues
    // work through every stream-taking export, on handles made before that capture began and
    // synchronised after it ended: what global mode allows other threads (ordo.h, CAPTURES: no
    // capture-unsafe call meanwhile; the driver crashes otherwise: CB-02). ordo's own queries
    // (capture state, pointer attributes, the stream's device) neither fail nor invalidate that
    // capture, and the results match the CPU.
    let _gpu = gpu_lock();
    let other = own_stream();
    let x = upload(&[1f32; 256]);
    let ones = upload(&[1f32; 256]);
    let s = own_stream();
    let wl = Workload::new();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let mut cache: *mut OrdoGraphCache = null_mut();
    let mut timer: *mut OrdoTimer = null_mut();
    let mut slot: *mut c_void = null_mut();
    let mut ticket = 0usize;
    unsafe {
        assert_eq!(ordo_staging_ring_create(2, STAGED, &mut ring), ORDO_SUCCESS);
        let ctx = (&*wl.add_one as *const AddOne).cast_mut().cast();
        assert_eq!(ordo_graph_cache_create(null(), 0, 0, Some(add_one_body), ctx, &mut cache), ORDO_SUCCESS);
        assert_eq!(ordo_graph_cache_capture_all(cache, s), ORDO_SUCCESS);
        assert_eq!(ordo_timer_create(&mut timer), ORDO_SUCCESS);
        assert_eq!(ordo_staging_ring_acquire(ring, 0, &mut slot, &mut ticket), ORDO_SUCCESS);
        for i in 0..STAGED {
            *slot.cast::<u8>().add(i) = staged_pattern(i);
        }
        // A first run, so that the pipeline pool holds a pipeline of this device.
        wl.set_input(1);
        assert_eq!(ordo_pipeline_run(s, wl.h_in, wl.d_in, wl.d_out, wl.h_out, wl.pn, 7, None, null_mut()), 0);
    }
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    wl.clear();
    let input = wl.set_input(0);
    let (begun_tx, begun_rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let (other_raw, x_raw, ones_raw) = (other as usize, x as usize, ones as usize);
    let holder = std::thread::spawn(move || {
        let s = other_raw as sys::cudaStream_t;
        cuda(
            unsafe { sys::cudaStreamBeginCapture(s, sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal) },
            "begin",
        );
        let st = unsafe { ordo_pdl_chain(s, x_raw as *mut f32, x_raw as *mut f32, ones_raw as *const f32, 256, 1, 0) };
        assert_eq!(st, ORDO_SUCCESS);
        begun_tx.send(()).unwrap();
        done_rx.recv().unwrap();
        let mut g = null_mut();
        let end = unsafe { sys::cudaStreamEndCapture(s, &mut g) };
        if !g.is_null() {
            unsafe { sys::cudaGraphDestroy(g) };
        }
        end
    });
    begun_rx.recv().unwrap();
    unsafe {
        assert_eq!(ordo_timer_start(timer, s), ORDO_SUCCESS);
        assert_eq!(ordo_gemv_normalize(s, wl.d_a, wl.d_x, wl.d_y, wl.rows, wl.cols), ORDO_SUCCESS);
        assert_eq!(ordo_frame_filter(s, wl.d_rgb, wl.d_gray, wl.w, wl.h), ORDO_SUCCESS);
        assert_eq!(ordo_pdl_chain(s, wl.d_ca, wl.d_cb, wl.d_scale, wl.n, 3, 1), ORDO_SUCCESS);
        assert_eq!(
            ordo_pipeline_run(s, wl.h_in, wl.d_in, wl.d_out, wl.h_out, wl.pn, 7, None, null_mut()),
            ORDO_SUCCESS
        );
        assert_eq!(ordo_staging_ring_submit(ring, ticket, STAGED, wl.staged.cast(), s), ORDO_SUCCESS);
        let mut bucket = 0usize;
        assert_eq!(ordo_graph_cache_run(cache, s, 5, &mut bucket), ORDO_SUCCESS);
        assert_eq!(bucket, 8);
        assert_eq!(ordo_timer_stop(timer, s), ORDO_SUCCESS);
    }
    done_tx.send(()).unwrap();
    assert_eq!(
        holder.join().unwrap(),
        sys::cudaError::cudaSuccess,
        "the other thread's global capture was invalidated"
    );
    wl.verify(s, &input, "under another thread's global capture");
    ordo_timer_destroy(timer);
    ordo_graph_cache_destroy(cache);
    ordo_staging_ring_destroy(ring);
    wl.free();
    raw(|| unsafe {
        sys::cudaStreamDestroy(s);
        sys::cudaStreamDestroy(other);
        sys::cudaFree(x.cast());
        sys::cudaFree(ones.cast());
    });
}

/// A failing pipeline compute or cache body: its status comes back (a garbage one as
/// `ORDO_ERROR_LIBRARY`), eagerly and inside captures of each mode, and nothing of the run writes
/// after the caller's synchronise.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_failing_callbacks_return_their_status_and_leave_nothing_running() {
    let _gpu = gpu_lock();
    let s = own_stream();
    let n = 1 << 20;
    let input: Vec<f32> = (0..n).map(|i| (i % 1000) as f32).collect();
    let (h_in, h_out) = (pinned(n), pinned(n));
    unsafe { core::ptr::copy_nonoverlapping(input.as_ptr(), h_in, n) };
    let (d_in, d_out) = (upload(&vec![0f32; n]), upload(&vec![0f32; n]));
    // The compute callback fails on chunk 1 of 16: its status comes back, and once the caller has
    // synchronised its stream, ordo writes nothing more into host_out.
    unsafe { core::slice::from_raw_parts_mut(h_out, n).fill(-1.0) };
    let countdown = AtomicI32::new(1);
    let user = (&countdown as *const AtomicI32).cast_mut().cast();
    let st = unsafe { ordo_pipeline_run(s, h_in, d_in, d_out, h_out, n, 16, Some(copy_compute), user) };
    assert_eq!(st, CUDA_INVALID_VALUE);
    assert_eq!(countdown.load(Ordering::Relaxed), -1, "no chunk after the failing one");
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    let snapshot = unsafe { core::slice::from_raw_parts(h_out, n) }.to_vec();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        snapshot == unsafe { core::slice::from_raw_parts(h_out, n) },
        "host output changed after the caller's synchronize"
    );
    assert_eq!(&snapshot[..n / 16], &input[..n / 16], "chunk 0 copied out");
    assert!(snapshot[n / 16..].iter().all(|&v| v == -1.0), "nothing after chunk 0");
    // The same inside a capture of each mode: the status, the capture still valid and ending
    // cleanly (ordo's streams joined back), a garbage status as ORDO_ERROR_LIBRARY.
    for mode in MODES {
        cuda(raw(|| unsafe { sys::cudaStreamBeginCapture(s, mode) }), "begin");
        countdown.store(2, Ordering::Relaxed);
        let st = unsafe { ordo_pipeline_run(s, h_in, d_in, d_out, h_out, n, 16, Some(copy_compute), user) };
        assert_eq!(st, CUDA_INVALID_VALUE, "{mode:?}");
        assert_eq!(capture_status(s), sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive, "{mode:?}");
        let mut g = null_mut();
        cuda(raw(|| unsafe { sys::cudaStreamEndCapture(s, &mut g) }), "end capture after a failed pipeline");
        raw(|| unsafe { sys::cudaGraphDestroy(g) });
    }
    // Failing cache bodies: their status through run and capture_all, eagerly and in a capture.
    for (body, want) in [
        (failing_body as unsafe extern "C" fn(_, _, _) -> _, CUDA_INVALID_VALUE),
        (garbage_body as unsafe extern "C" fn(_, _, _) -> _, ORDO_ERROR_LIBRARY),
    ] {
        let mut cache: *mut OrdoGraphCache = null_mut();
        assert_eq!(unsafe { ordo_graph_cache_create(null(), 0, 1, Some(body), null_mut(), &mut cache) }, ORDO_SUCCESS);
        assert_eq!(unsafe { ordo_graph_cache_run(cache, s, 3, null_mut()) }, want);
        assert_eq!(
            capture_status(s),
            sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusNone,
            "the cache's capture ended"
        );
        assert_eq!(unsafe { ordo_graph_cache_capture_all(cache, s) }, want);
        assert_eq!(unsafe { ordo_graph_cache_run(cache, s, 1000, null_mut()) }, want, "eager overflow run");
        cuda(
            raw(|| unsafe { sys::cudaStreamBeginCapture(s, sys::cudaStreamCaptureMode::cudaStreamCaptureModeGlobal) }),
            "begin",
        );
        assert_eq!(unsafe { ordo_graph_cache_run(cache, s, 3, null_mut()) }, want);
        assert_eq!(capture_status(s), sys::cudaStreamCaptureStatus::cudaStreamCaptureStatusActive);
        let mut g = null_mut();
        cuda(raw(|| unsafe { sys::cudaStreamEndCapture(s, &mut g) }), "end capture");
        raw(|| unsafe { sys::cudaGraphDestroy(g) });
        ordo_graph_cache_destroy(cache);
    }
    cuda(raw(|| unsafe { sys::cudaStreamSynchronize(s) }), "synchronize");
    raw(|| unsafe {
        sys::cudaFreeHost(h_in.cast());
        sys::cudaFreeHost(h_out.cast());
        sys::cudaFree(d_in.cast());
        sys::cudaFree(d_out.cast());
        sys::cudaStreamDestroy(s);
    });
}

/// Four threads share one ring, one cache and one timer, with the CPU's results every round.
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn gpu_threads_share_handles_with_right_results() {
    // Four threads share one ring, one cache and one timer, each with its own stream and
    // buffers: pipeline runs and staging copies checked against the CPU on every round.
    let _gpu = gpu_lock();
    let mut ring: *mut OrdoStagingRing = null_mut();
    let mut cache: *mut OrdoGraphCache = null_mut();
    let mut timer: *mut OrdoTimer = null_mut();
    unsafe {
        assert_eq!(ordo_staging_ring_create(3, 1024, &mut ring), ORDO_SUCCESS);
        assert_eq!(ordo_graph_cache_create(null(), 0, 1, Some(nop_body), null_mut(), &mut cache), ORDO_SUCCESS);
        assert_eq!(ordo_timer_create(&mut timer), ORDO_SUCCESS);
    }
    let (ring_raw, cache_raw, timer_raw) = (ring as usize, cache as usize, timer as usize);
    std::thread::scope(|scope| {
        for t in 0..4usize {
            scope.spawn(move || {
                let s = own_stream();
                let n = 50_000;
                let (h_in, h_out) = (pinned(n), pinned(n));
                let (d_in, d_out) = (upload(&vec![0f32; n]), upload(&vec![0f32; n]));
                let staged = upload(&[0u8; 1024]);
                for round in 0..20 {
                    let input: Vec<f32> = (0..n).map(|i| ((i * (t + 1) + round) % 777) as f32 * 0.01).collect();
                    unsafe { core::ptr::copy_nonoverlapping(input.as_ptr(), h_in, n) };
                    let st = unsafe { ordo_pipeline_run(s, h_in, d_in, d_out, h_out, n, 4, None, null_mut()) };
                    assert_eq!(st, ORDO_SUCCESS);
                    let (mut slot, mut ticket) = (null_mut(), 0usize);
                    assert_eq!(
                        unsafe {
                            ordo_staging_ring_acquire(ring_raw as *mut OrdoStagingRing, 1, &mut slot, &mut ticket)
                        },
                        ORDO_SUCCESS
                    );
                    let bytes: Vec<u8> = (0..1024).map(|i| ((i + t * 3 + round) % 256) as u8).collect();
                    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), slot.cast::<u8>(), 1024) };
                    let st = unsafe {
                        ordo_staging_ring_submit(ring_raw as *mut OrdoStagingRing, ticket, 1024, staged.cast(), s)
                    };
                    assert_eq!(st, ORDO_SUCCESS);
                    assert_eq!(
                        unsafe {
                            ordo_graph_cache_run(
                                cache_raw as *mut OrdoGraphCache,
                                s,
                                1 + (round * 13 + t) % 300,
                                null_mut(),
                            )
                        },
                        ORDO_SUCCESS
                    );
                    assert_eq!(unsafe { ordo_timer_start(timer_raw as *mut OrdoTimer, s) }, ORDO_SUCCESS);
                    assert_eq!(unsafe { ordo_timer_stop(timer_raw as *mut OrdoTimer, s) }, ORDO_SUCCESS);
                    assert_eq!(download(staged.cast_const(), 1024, s), bytes, "thread {t} round {round}: staging copy");
                    let out = unsafe { core::slice::from_raw_parts(h_out, n) };
                    assert!(
                        out.iter().zip(&input).all(|(&o, &i)| o == reference::heavy(i)),
                        "thread {t} round {round}: pipeline"
                    );
                    let mut ms = 0f32;
                    let st = unsafe { ordo_timer_elapsed_ms(timer_raw as *mut OrdoTimer, &mut ms) };
                    assert!(is_documented(st), "{st}");
                }
                raw(|| unsafe {
                    sys::cudaFreeHost(h_in.cast());
                    sys::cudaFreeHost(h_out.cast());
                    sys::cudaFree(d_in.cast());
                    sys::cudaFree(d_out.cast());
                    sys::cudaFree(staged.cast());
                    sys::cudaStreamDestroy(s);
                });
            });
        }
    });
    ordo_timer_destroy(timer);
    ordo_graph_cache_destroy(cache);
    ordo_staging_ring_destroy(ring);
}
