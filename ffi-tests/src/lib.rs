//! C and C++ programs against ordo's C ABI, compiled by `build.rs` (the header as C99 and C++17
//! with warnings as errors, and test programs whose entry points the tests call), linked with the
//! `ordo` library's exports.

/// The entry points of the test programs in `cpp/`.
pub mod programs {
    extern "C" {
        /// `cpp/status_and_arguments.cpp`: version, status names, and every documented refusal of
        /// bad arguments; with `driver_present` 0, CUDA's no-driver status through the C API.
        /// Returns the number of failed checks.
        pub fn ffi_status_and_arguments_main(driver_present: i32) -> i32;
        /// `cpp/mixed.cu`: the caller's own kernels and ordo's calls on the caller's stream, and ordo
        /// calls captured into the caller's graph. Needs a GPU. Returns the number of failed checks.
        pub fn ffi_mixed_main() -> i32;
        /// `cpp/captures.cu`: ordo's calls captured into the program's graphs in every capture
        /// mode and replayed, a pipeline failing part-way, a staging-ring submit replayed, a graph
        /// cache in a capture and re-entered from its body, another thread's global capture left
        /// valid, stale and wrong-kind handles. Needs a GPU. Returns the number of failed checks.
        pub fn ffi_captures_main() -> i32;
        /// `cpp/hpp_program.cpp`: `ordo.hpp`'s compile-time stream rules, errors thrown with the
        /// thread's last error, RAII handles; with `driver_present` 0, the no-driver error.
        /// Returns the number of failed checks.
        pub fn ffi_hpp_main(driver_present: i32) -> i32;
        /// `cpp/hpp_gpu.cu`: `ordo.hpp` on a GPU: a timer, a graph cache with a lambda body, the
        /// pipeline with lambda computes, an `ordo::pipeline` of float pairs from the program's own
        /// pool, exceptions from callbacks rethrown to the caller. Needs a GPU. Returns the number
        /// of failed checks.
        pub fn ffi_hpp_gpu_main() -> i32;
        /// `cpp/stencil.cu`: a stencil (a vertical blur with a horizontal 2x downsample, the
        /// program's own kernel) through `ordo::pipeline::run_stencil`, against the CPU bit for
        /// bit: temporaries and the program's buffers, given and planned chunk counts, halos past a
        /// chunk and past the frame, a global-mode capture replayed on new input, a throwing
        /// compute, the documented refusals. Needs a GPU. Returns the number of failed checks.
        pub fn ffi_stencil_main() -> i32;
        /// `cpp/capture_defects.cu`: plain CUDA C++, no ordo: scenario `scenario` (0 global-mode
        /// captures on every thread, 1 thread-local, 2 relaxed, 3 one global capture beside
        /// synchronising threads, 4 a blocking copy on the legacy stream beside relaxed captures
        /// on a blocking stream, 5 the same with the synchronise alone, 6 scenario 3 with the
        /// synchronising threads in relaxed capture mode, 7 a thread-local capture of a blocking
        /// stream beside threads allocating and freeing managed, pinned, registered and device
        /// memory, events and streams, 8 scenario 4 with thread-local captures, 9 scenario 3 with
        /// the other threads polling with queries) on `threads` threads for
        /// `seconds` seconds. Prints what it counted; returns the failures of a control scenario.
        /// A driver crash ends the process: run it in a child process. Needs a GPU.
        pub fn ffi_capture_defect_main(scenario: i32, threads: i32, seconds: i32) -> i32;
    }
}

/// Serialises this crate's GPU tests within one test binary: a global-mode capture in one test
/// would see another test's raw CUDA calls (`cudaMalloc`, `cudaStreamSynchronize`) as unsafe calls
/// and be invalidated by them. (ordo's own calls relax their thread's capture mode and never do.)
pub fn gpu_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A kernel of ordo's and a launch configuration, for the tests of `ordo_launch_kernel`.
pub mod launch {
    use core::ffi::c_void;
    use core::ptr::null_mut;
    use ordo_cuda_capi::OrdoLaunchConfig;

    extern "C" {
        /// `__global__ void ordok_empty()` in ordo-cuda-kernels (linked into ordo).
        fn ordok_empty();
    }

    /// The host stub of ordo's empty kernel, as `ordo_launch_kernel` takes it.
    pub fn empty_kernel() -> *const c_void {
        ordok_empty as unsafe extern "C" fn() as *const c_void
    }

    /// One block of 32 threads, nothing else set; `size` as given (the struct's is 104).
    pub fn config(size: usize) -> OrdoLaunchConfig {
        OrdoLaunchConfig {
            size,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem_bytes: 0,
            pdl: 0,
            has_priority: 0,
            priority: 0,
            cluster: [0, 0, 0],
            cooperative: 0,
            programmatic_event: null_mut(),
            programmatic_event_at_block_start: 0,
            launch_completion_event: null_mut(),
            mem_sync_domain: 0,
            preferred_cluster: [0, 0, 0],
        }
    }
}

// Keeps the `ordo` exports linked into every binary of this crate.
pub use ordo_cuda_capi::ordo_version;

/// CPU references for the results of ordo's exports.
pub mod reference {
    /// The 64-step loop of ordo's pipeline kernel (the same fused multiply-adds, bit for bit).
    pub fn heavy(v: f32) -> f32 {
        (0..64).fold(v, |v, _| v.mul_add(0.999, 0.001))
    }

    /// `ordo_gemv_normalize`: y = A x (A row-major rows x cols), scaled to unit length (left as
    /// A x when that is all zeros), in f64.
    pub fn gemv_normalize(a: &[f32], x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
        let y: Vec<f64> =
            (0..rows).map(|r| (0..cols).map(|c| f64::from(a[r * cols + c]) * f64::from(x[c])).sum()).collect();
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        y.iter().map(|v| if norm > 0.0 { (v / norm) as f32 } else { *v as f32 }).collect()
    }

    /// `ordo_pdl_chain`: `steps` steps of out = prev * scale + 1 from `a`; the result is in `b`
    /// after an odd number of steps and in `a` after an even one (returned: the final values).
    pub fn chain(a: &[f32], scale: &[f32], steps: usize) -> Vec<f32> {
        a.iter().zip(scale).map(|(&v, &s)| (0..steps).fold(v, |v, _| v.mul_add(s, 1.0))).collect()
    }

    /// `ordo_frame_filter`, in the kernels' arithmetic: grayscale (0.299 r + 0.587 g + 0.114 b,
    /// fused as the device does), then the 5x5 binomial blur (clamped edges), / 256, rounded to
    /// nearest even.
    pub fn frame_filter(rgb: &[u8], w: usize, h: usize) -> Vec<u8> {
        let gray: Vec<f32> = (0..w * h)
            .map(|p| {
                let (r, g, b) = (f32::from(rgb[3 * p]), f32::from(rgb[3 * p + 1]), f32::from(rgb[3 * p + 2]));
                0.114f32.mul_add(b, 0.587f32.mul_add(g, 0.299 * r))
            })
            .collect();
        let wt = [1.0f32, 4.0, 6.0, 4.0, 1.0];
        let mut out = vec![0u8; w * h];
        for y in 0..h as i64 {
            for x in 0..w as i64 {
                let mut acc = 0f32;
                for dy in -2..=2i64 {
                    let yy = (y + dy).clamp(0, h as i64 - 1) as usize;
                    let mut row = 0f32;
                    for dx in -2..=2i64 {
                        let xx = (x + dx).clamp(0, w as i64 - 1) as usize;
                        row = wt[(dx + 2) as usize].mul_add(gray[yy * w + xx], row);
                    }
                    acc = wt[(dy + 2) as usize].mul_add(row, acc);
                }
                let v = acc * (1.0 / 256.0);
                out[y as usize * w + x as usize] = v.round_ties_even().clamp(0.0, 255.0) as u8;
            }
        }
        out
    }
}
