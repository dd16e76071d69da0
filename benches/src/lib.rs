//! ordo's benchmark support: the plain CUDA C++ baselines (compiled from `cuda/baseline.cu`) and
//! the measurement helpers the `ordo-bench` report and the criterion benches share.

use ordo_cuda_core::sys::{cudaEvent_t, cudaGraphExec_t, cudaStream_t};

/// The C++ baselines.
pub mod cpp {
    #![allow(missing_docs)]
    use super::*;
    extern "C" {
        pub fn bl_submit_us(s: cudaStream_t, which: i32, kernel: i32, p: *mut f32, iters: i32) -> f64;
        pub fn bl_roundtrip_us(s: cudaStream_t) -> f64;
        pub fn bl_eager_add_one_ms(s: cudaStream_t, x: *mut f32, n: i32, kernels: i32) -> f64;
        pub fn bl_graph_add_one(
            s: cudaStream_t,
            x: *mut f32,
            n: i32,
            kernels: i32,
            instantiate_ms: *mut f64,
        ) -> cudaGraphExec_t;
        pub fn bl_graph_replay_ms(e: cudaGraphExec_t, s: cudaStream_t, launch_us: *mut f64) -> f64;
        pub fn bl_graph_destroy(e: cudaGraphExec_t);
        pub fn bl_graph_launch_us(e: cudaGraphExec_t, s: cudaStream_t) -> f64;
        pub fn bl_event_ops_us(a: cudaStream_t, b: cudaStream_t, e: cudaEvent_t, op: i32, iters: i32) -> f64;
        pub fn bl_inplace_chain_ms(s: cudaStream_t, x: *mut f32, n: i32, steps: i32, pdl: i32) -> f64;
        pub fn bl_chain_ms(
            s: cudaStream_t,
            a: *mut f32,
            b: *mut f32,
            scale: *const f32,
            n: i32,
            steps: i32,
            form: i32,
            blocks: i32,
        ) -> f64;
        pub fn bl_copy_ms(
            dst: *mut core::ffi::c_void,
            src: *const core::ffi::c_void,
            bytes: usize,
            kind: i32,
            s: cudaStream_t,
        ) -> f64;
        pub fn bl_stamp_run(s: cudaStream_t, st: *mut u64, count: i32, spin_ns: u64);
        pub fn bl_device_alloc(device: i32, bytes: usize) -> *mut core::ffi::c_void;
        pub fn bl_device_free(device: i32, p: *mut core::ffi::c_void);
        pub fn bl_peer_copy_ms(
            dst: *mut core::ffi::c_void,
            dst_device: i32,
            src: *const core::ffi::c_void,
            src_device: i32,
            bytes: usize,
            s: cudaStream_t,
        ) -> f64;
        pub fn bl_peer_both_ms(
            b0: *mut core::ffi::c_void,
            a0: *const core::ffi::c_void,
            b1: *mut core::ffi::c_void,
            a1: *const core::ffi::c_void,
            bytes: usize,
            s0: cudaStream_t,
            s1: cudaStream_t,
        ) -> f64;
        pub fn bl_nccl_open(ndev: i32) -> *mut core::ffi::c_void;
        pub fn bl_nccl_close(handle: *mut core::ffi::c_void);
        pub fn bl_nccl_all_reduce_us(
            handle: *mut core::ffi::c_void,
            send: *const *mut f32,
            recv: *const *mut f32,
            count: usize,
            streams: *const cudaStream_t,
            iters: i32,
        ) -> f64;
        pub fn bl_nccl_all_reduce_on_us(
            handle: *mut core::ffi::c_void,
            comms: *const *mut core::ffi::c_void,
            send: *const *mut f32,
            recv: *const *mut f32,
            count: usize,
            streams: *const cudaStream_t,
            iters: i32,
        ) -> f64;
        pub fn bl_chain_stamped(
            s: cudaStream_t,
            a: *mut f32,
            b: *mut f32,
            scale: *const f32,
            n: i32,
            steps: i32,
            pdl: i32,
            blocks: i32,
            st: *mut u64,
            spin_ns: u64,
        );
        pub fn bl_pipeline_ms(
            h_in: *const f32,
            d_in: *mut f32,
            h_out: *mut f32,
            n: usize,
            chunks: i32,
            streams: i32,
        ) -> f64;
        // The decode step (cuda/decode.cu).
        pub fn bl_decode_open(
            hidden: i32,
            max_batch: i32,
            h_x: *mut f32,
            h_y: *mut f32,
            h_t: *mut f32,
            d_x: *mut f32,
            d_a: *mut f32,
            d_b: *mut f32,
            d_scale: *const f32,
            d_w: *const f32,
            d_y: *mut f32,
        ) -> *mut core::ffi::c_void;
        pub fn bl_decode_close(handle: *mut core::ffi::c_void);
        pub fn bl_decode_eager_us(
            handle: *mut core::ffi::c_void,
            s: cudaStream_t,
            batch: i32,
            steps: i32,
            norm: i32,
            pdl_grid: u32,
        ) -> f64;
        pub fn bl_decode_capture_us(
            handle: *mut core::ffi::c_void,
            s: cudaStream_t,
            buckets: *const i32,
            count: i32,
            mode: i32,
            parts: *mut f64,
        ) -> f64;
        pub fn bl_decode_replay_us(handle: *mut core::ffi::c_void, s: cudaStream_t, batch: i32, steps: i32) -> f64;
    }
}

/// The baselines' kernels, for launching through ordo (`Kernel::new`) exactly what C++ launches.
pub mod kernels {
    #![allow(missing_docs)]
    extern "C" {
        pub fn bl_empty();
        pub fn bl_ptr_int(p: *mut f32, n: i32);
        pub fn bl_spin(ns: u64);
        pub fn bl_stamp(st: *mut u64, i: i32);
        pub fn bl_chain_step_stamped(prev: *const f32, out: *mut f32, scale: *const f32, n: i32, st: *mut u64, k: i32);
        pub fn bl_chain_step_stamped_pdl(
            prev: *const f32,
            out: *mut f32,
            scale: *const f32,
            n: i32,
            st: *mut u64,
            k: i32,
        );
        pub fn bl_chain_step_plain(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
        pub fn bl_chain_step_plain_stride(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
        /// The decode step's user kernel (cuda/decode.cu), in ordo's two forms.
        pub fn bl_user_step(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
        pub fn bl_user_step_pdl(prev: *const f32, out: *mut f32, scale: *const f32, n: i32);
    }
}
