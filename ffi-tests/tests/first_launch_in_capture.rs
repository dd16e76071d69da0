//! A kernel's first launch in the process made inside a capture, with thread-block cluster
//! dimensions (the open capture invalidation of RELIABILITY.md, session 11: about one run in fifteen
//! of `launch::gpu_a_captured_launch_keeps_the_domain_and_the_preferred_cluster_on_its_node`, when
//! that test happened to be the first to launch its kernel). This binary holds one test, so that
//! every kernel named here is launched for the first time in the process (lazy loading: the driver
//! loads a kernel into a context at its first launch there).
//!
//! The test asserts ordo's launch (`ordo_launch_kernel`, cluster 2 and, with CUDA 12.8 headers,
//! preferred cluster 4, in a thread-local capture) succeeds and its graph computes the right values.
//! It also prints, without asserting, what CUDA does with the same first launch made other ways (the
//! record for docs/cuda-behaviours.md): the runtime's `cudaLaunchKernelExC` with a cluster, a plain
//! first launch, and a first launch after `cudaFuncGetAttributes` loaded the kernel.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::null_mut;
use ordo_cuda_capi::*;
use ordo_cuda_core::sys;
use ordo_ffi_tests::launch::config;

extern "C" {
    /// `x[i] += 1`.
    fn ordok_add_one(x: *mut f32, n: i32);
    /// 64 dependent FMAs an element.
    fn ordok_heavy(x: *mut f32, n: i32);
    /// `x[i] = fma(x[i], a, b)`.
    fn ordok_scale_add(x: *mut f32, a: f32, b: f32, n: i32);
    /// `out[i] = in[i]^2`.
    fn ordok_square(input: *const f32, out: *mut f32, n: i32);
}

const N: i32 = 64 * 256 - 5;

/// A thread-local capture on a new non-blocking stream of what `launch` enqueues; the launch's
/// status, the capture's end and the graph (null if the end failed). The stream is destroyed.
fn capture_one(
    launch: impl FnOnce(sys::cudaStream_t) -> (bool, String),
) -> (bool, String, sys::cudaError_t, sys::cudaGraph_t) {
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(
        unsafe { sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking) },
        sys::cudaError::cudaSuccess
    );
    let mode = sys::cudaStreamCaptureMode::cudaStreamCaptureModeThreadLocal;
    assert_eq!(unsafe { sys::cudaStreamBeginCapture(stream, mode) }, sys::cudaError::cudaSuccess);
    let (ok, detail) = launch(stream);
    let mut graph: sys::cudaGraph_t = null_mut();
    let end = unsafe { sys::cudaStreamEndCapture(stream, &mut graph) };
    unsafe { sys::cudaGetLastError() };
    unsafe { sys::cudaStreamDestroy(stream) };
    (ok, detail, end, graph)
}

fn last_error_text() -> String {
    let mut buf = vec![0u8; 1024];
    let n = unsafe { ordo_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(buf.len()));
    String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string()
}

fn device_floats(host: &[f32]) -> *mut f32 {
    let mut p: *mut c_void = null_mut();
    assert_eq!(unsafe { sys::cudaMalloc(&mut p, host.len() * 4) }, sys::cudaError::cudaSuccess);
    let kind = sys::cudaMemcpyKind::cudaMemcpyHostToDevice;
    assert_eq!(unsafe { sys::cudaMemcpy(p, host.as_ptr().cast(), host.len() * 4, kind) }, sys::cudaError::cudaSuccess);
    p.cast()
}

fn download(p: *const f32, n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    let kind = sys::cudaMemcpyKind::cudaMemcpyDeviceToHost;
    assert_eq!(unsafe { sys::cudaMemcpy(out.as_mut_ptr().cast(), p.cast(), n * 4, kind) }, sys::cudaError::cudaSuccess);
    out
}

/// Runs `graph` twice on a new stream and destroys it.
fn replay_twice(graph: sys::cudaGraph_t) {
    let mut exec: sys::cudaGraphExec_t = null_mut();
    assert_eq!(unsafe { sys::cudaGraphInstantiate(&mut exec, graph, 0) }, sys::cudaError::cudaSuccess);
    let mut stream: sys::cudaStream_t = null_mut();
    assert_eq!(
        unsafe { sys::cudaStreamCreateWithFlags(&mut stream, sys::cudaStreamNonBlocking) },
        sys::cudaError::cudaSuccess
    );
    for _ in 0..2 {
        assert_eq!(unsafe { sys::cudaGraphLaunch(exec, stream) }, sys::cudaError::cudaSuccess);
    }
    assert_eq!(unsafe { sys::cudaStreamSynchronize(stream) }, sys::cudaError::cudaSuccess);
    unsafe {
        sys::cudaGraphExecDestroy(exec);
        sys::cudaGraphDestroy(graph);
        sys::cudaStreamDestroy(stream);
    }
}

fn has_clusters() -> bool {
    ordo_cuda_core::Device::current().unwrap().compute_capability().unwrap().0 >= 9
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_first_launch_with_a_cluster_inside_a_capture_is_captured() {
    if !has_clusters() {
        println!("no thread-block clusters on this device: nothing to test");
        return;
    }
    let host: Vec<f32> = (0..N).map(|i| (i % 17) as f32 - 8.0).collect();
    let x = device_floats(&host);
    let mut c = OrdoLaunchConfig {
        grid: [64, 1, 1],
        block: [256, 1, 1],
        cluster: [2, 1, 1],
        ..config(core::mem::size_of::<OrdoLaunchConfig>())
    };
    if cfg!(cuda_12_8) {
        c.preferred_cluster = [4, 1, 1];
    }

    // What CUDA does, printed: the runtime's own first launch with a cluster, inside a capture.
    let y = device_floats(&host);
    let (_, detail, end, graph) = capture_one(|s| {
        let mut val = sys::cudaLaunchAttributeValue { pad: [0; 64] };
        val.clusterDim.x = 2;
        val.clusterDim.y = 1;
        val.clusterDim.z = 1;
        let mut attr = sys::cudaLaunchAttribute {
            id: sys::cudaLaunchAttributeID::cudaLaunchAttributeClusterDimension,
            pad: [0; 4],
            val,
        };
        let raw = sys::cudaLaunchConfig_t {
            gridDim: sys::dim3 { x: 64, y: 1, z: 1 },
            blockDim: sys::dim3 { x: 256, y: 1, z: 1 },
            dynamicSmemBytes: 0,
            stream: s,
            attrs: &mut attr,
            numAttrs: 1,
        };
        let (mut yp, mut n) = (y, N);
        let mut args = [(&raw mut yp).cast::<c_void>(), (&raw mut n).cast::<c_void>()];
        let kernel = ordok_heavy as unsafe extern "C" fn(*mut f32, i32) as *const c_void;
        let code = unsafe { sys::cudaLaunchKernelExC(&raw, kernel, args.as_mut_ptr()) };
        (code == sys::cudaError::cudaSuccess, format!("{code:?}"))
    });
    println!("CUDA: the runtime's first launch of a kernel with a cluster, captured: launch {detail}, end {end:?}");
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }

    // A plain first launch (no cluster) through ordo, captured.
    let plain = OrdoLaunchConfig { cluster: [0, 0, 0], preferred_cluster: [0, 0, 0], ..c };
    let (ok, detail, end, graph) = capture_one(|s| {
        let (mut yp, mut a, mut b, mut n) = (y, 2.0f32, 1.0f32, N);
        let mut args = [(&raw mut yp).cast::<c_void>(), (&raw mut a).cast(), (&raw mut b).cast(), (&raw mut n).cast()];
        let kernel = ordok_scale_add as unsafe extern "C" fn(*mut f32, f32, f32, i32) as *const c_void;
        let st = unsafe { ordo_launch_kernel(s, kernel, args.as_mut_ptr(), &plain) };
        (st == ORDO_SUCCESS, if st == ORDO_SUCCESS { String::new() } else { last_error_text() })
    });
    println!("ordo: a plain first launch, captured: launch ok {ok} {detail}, end {end:?}");
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }

    // A first launch with a cluster after cudaFuncGetAttributes (which loads the kernel), captured.
    let square = ordok_square as unsafe extern "C" fn(*const f32, *mut f32, i32) as *const c_void;
    let mut fa: sys::cudaFuncAttributes = unsafe { core::mem::zeroed() };
    let loaded = unsafe { sys::cudaFuncGetAttributes(&mut fa, square) };
    let (ok, detail, end, graph) = capture_one(|s| {
        let (mut xp, mut yp, mut n) = (x as *const f32, y, N);
        let mut args = [(&raw mut xp).cast::<c_void>(), (&raw mut yp).cast(), (&raw mut n).cast()];
        let st = unsafe { ordo_launch_kernel(s, square, args.as_mut_ptr(), &c) };
        (st == ORDO_SUCCESS, if st == ORDO_SUCCESS { String::new() } else { last_error_text() })
    });
    println!("ordo: a first launch with a cluster after cudaFuncGetAttributes ({loaded:?}), captured: launch ok {ok} {detail}, end {end:?}");
    if !graph.is_null() {
        unsafe { sys::cudaGraphDestroy(graph) };
    }

    // The assertion: ordo's first launch of ordok_add_one, with the cluster, captured.
    let (ok, detail, end, graph) = capture_one(|s| {
        let (mut xp, mut n) = (x, N);
        let mut args = [(&raw mut xp).cast::<c_void>(), (&raw mut n).cast()];
        let kernel = ordok_add_one as unsafe extern "C" fn(*mut f32, i32) as *const c_void;
        let st = unsafe { ordo_launch_kernel(s, kernel, args.as_mut_ptr(), &c) };
        (st == ORDO_SUCCESS, if st == ORDO_SUCCESS { String::new() } else { last_error_text() })
    });
    println!("ordo: the first launch of ordok_add_one with a cluster, captured: launch ok {ok} {detail}, end {end:?}");
    assert!(ok, "the captured first launch: {detail}");
    assert_eq!(end, sys::cudaError::cudaSuccess, "the capture's end");
    replay_twice(graph);
    let got = download(x, host.len());
    assert!(got == host.iter().map(|v| v + 2.0).collect::<Vec<_>>(), "two replays, one add each");
    unsafe {
        sys::cudaFree(x.cast());
        sys::cudaFree(y.cast());
    }
}
