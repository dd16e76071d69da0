//! Drives the C API with random sizes, counts, flags, enum values, streams and handles over valid
//! or null pointers (a seeded generator, 20,000 calls), and checks that it never crashes and always
//! returns a documented status: 0, a CUDA code (1..=999), or one of ordo's (10001..=10005). A null
//! pointer where one is required is always ORDO_ERROR_INVALID_ARGUMENT. Valid device pointers are
//! only paired with sizes inside their allocation (the C API cannot see an allocation's size).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use core::ffi::c_void;
use core::ptr::{null, null_mut};
use ordo::ffi::*;
use ordo::sys;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn size(&mut self, max_valid: usize) -> usize {
        match self.below(5) {
            0 => 0,
            1 => usize::MAX - self.below(3) as usize,
            2 => 1usize << (32 + self.below(31)),
            _ => 1 + self.below(max_valid as u64) as usize,
        }
    }
}

fn documented(s: OrdoStatus) -> bool {
    s == ORDO_SUCCESS || (1..=999).contains(&s) || (ORDO_ERROR_INVALID_ARGUMENT..=ORDO_ERROR_LIBRARY).contains(&s)
}

unsafe extern "C" fn capture_nothing(_: sys::cudaStream_t, _: usize, _: *mut c_void) -> OrdoStatus {
    ORDO_SUCCESS
}

#[test]
fn random_calls_never_crash_and_return_documented_statuses() {
    const CAP: usize = 4096;
    let gpu = ordo::device::count().is_ok_and(|n| n > 0);
    // Valid memory: device buffers on a GPU machine; host memory otherwise (never dereferenced
    // there: with no driver every call stops at CUDA's status or before).
    let mut dev: [*mut f32; 4] = [null_mut(); 4];
    let mut host = vec![0f32; CAP * 4];
    for (i, d) in dev.iter_mut().enumerate() {
        if gpu {
            let mut p = null_mut();
            assert_eq!(unsafe { sys::cudaMalloc(&mut p, CAP * 4) }, sys::cudaError::cudaSuccess);
            // Initialised, so kernels reading it read defined values (compute-sanitizer initcheck).
            assert_eq!(unsafe { sys::cudaMemset(p, 0, CAP * 4) }, sys::cudaError::cudaSuccess);
            *d = p.cast();
        } else {
            *d = host[i * CAP..].as_mut_ptr();
        }
    }
    let own = if gpu { ordo::Stream::new().ok() } else { None };
    let streams: Vec<sys::cudaStream_t> = [null_mut(), sys::cudaStreamLegacy(), sys::cudaStreamPerThread()]
        .into_iter()
        .chain(own.as_ref().map(|s| s.as_raw()))
        .collect();
    let mut cache: *mut OrdoGraphCache = null_mut();
    unsafe { ordo_graph_cache_create(null(), 0, 0, Some(capture_nothing), null_mut(), &mut cache) };
    let mut zeros = [0u64; 8];
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let mut counts = std::collections::BTreeMap::new();
    for call in 0..20_000 {
        let stream = streams[rng.below(streams.len() as u64) as usize];
        let ptr = |rng: &mut Rng| if rng.below(4) == 0 { null_mut() } else { dev[rng.below(4) as usize] };
        let (a, x, y) = (ptr(&mut rng), ptr(&mut rng), ptr(&mut rng));
        let any_null = a.is_null() || x.is_null() || y.is_null();
        let which = rng.below(7);
        let status = unsafe {
            match which {
                0 => {
                    // rows * cols within CAP when valid
                    let rows = rng.size(64);
                    let cols = rng.size(64);
                    ordo_gemv_normalize(stream, a, x, y, rows, cols)
                }
                1 => {
                    let (w, h) = (rng.size(32), rng.size(32));
                    ordo_frame_filter(stream, a.cast::<u8>(), y.cast::<u8>(), w, h)
                }
                2 => {
                    let pdl = rng.below(4) as i32 - 1;
                    ordo_pdl_chain(stream, a, x, y, rng.size(CAP), rng.below(5) as usize, pdl)
                }
                3 => {
                    // Host arrays here are pageable (or device memory): never valid pipeline input.
                    let n = rng.size(CAP);
                    ordo_pipeline_run(stream, a, x, y, a, n, rng.size(64), None, null_mut())
                }
                4 => {
                    let handle = match rng.below(3) {
                        0 => null_mut(),
                        1 => zeros.as_mut_ptr().cast(),
                        _ => cache,
                    };
                    let n = rng.size(300);
                    let mut bucket = 0usize;
                    ordo_graph_cache_run(handle, stream, n, &mut bucket)
                }
                5 => {
                    let t: *mut OrdoTimer = if rng.below(2) == 0 { null_mut() } else { cache.cast() };
                    let mut ms = 0f32;
                    ordo_timer_elapsed_ms(t, &mut ms)
                }
                _ => {
                    let status = rng.next() as i32;
                    assert!(!ordo_status_name(status).is_null() && !ordo_status_string(status).is_null());
                    let sticky = ordo_status_is_sticky(status);
                    assert!(sticky == 0 || sticky == 1);
                    ORDO_SUCCESS
                }
            }
        };
        assert!(documented(status), "call {call} (function {which}): undocumented status {status}");
        let used_null = if which == 1 { a.is_null() || y.is_null() } else { any_null };
        if which <= 2 && (used_null || stream.is_null()) {
            assert_eq!(status, ORDO_ERROR_INVALID_ARGUMENT, "call {call}: null pointer or stream must be refused");
        }
        if which == 3 && gpu && !any_null && !stream.is_null() && status == ORDO_SUCCESS {
            panic!("call {call}: a pipeline over pageable or device memory as host memory was accepted");
        }
        *counts.entry(status).or_insert(0u32) += 1;
    }
    println!("statuses seen: {counts:?}");
    if let Some(s) = &own {
        s.synchronize().unwrap();
    }
    unsafe { ordo_graph_cache_destroy(cache) };
    if gpu {
        for d in dev {
            unsafe { sys::cudaFree(d.cast()) };
        }
        // Refused captures (of the legacy stream) leave a non-sticky error in the runtime's
        // last-error slot; the context itself is fine.
        if let Err(e) = ordo::error::take_last_error() {
            assert!(!e.is_sticky(), "{e}");
        }
        let s = ordo::Stream::new().unwrap();
        s.synchronize().unwrap();
    }
    drop(host);
}
