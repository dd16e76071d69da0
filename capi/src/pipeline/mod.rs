//! The chunked pipeline from C: `ordo_pipeline` handles made with options
//! (`ordo_pipeline_create`, `ordo_pipeline_run_on`, `ordo_pipeline_run_stencil`,
//! `ordo_pipeline_destroy`), and `ordo_pipeline_run`, which runs on one hidden default pool
//! (floats, the chunk count given). A handle is a Rust
//! [`PipelinePool`](ordo_cuda_core::pipeline::PipelinePool) (its retention across
//! captures, its limits, the take and give-back of its pipelines are the Rust API's) and the
//! options each run uses; the runs are
//! [`Pipeline::run_with`](ordo_cuda_core::pipeline::Pipeline::run_with) (cut at element boundaries, the
//! temporaries allocated) and
//! [`Pipeline::run_stencil`](ordo_cuda_core::pipeline::Pipeline::run_stencil) (rows and halos). This folder converts:
//! options, pointers, sizes, callbacks and statuses: the C types here, the checks made before CUDA
//! in `checks.rs`, the path every run shares in `run.rs`, `ordo_pipeline_run` and its pool in
//! `default_pool.rs`, the handle's exports in `handle.rs`, the stencil run in `stencil.rs`.

mod checks;
mod default_pool;
mod handle;
mod run;
mod stencil;

pub use default_pool::{ordo_pipeline_run, orphaned_pipelines, pooled_pipelines, PIPELINE_CAPTURE_LIMIT};
pub use handle::{ordo_pipeline_create, ordo_pipeline_destroy, ordo_pipeline_run_on};
pub use stencil::ordo_pipeline_run_stencil;

use super::status::OrdoStatus;
use core::ffi::{c_int, c_void};
use ordo_cuda_core::sys;

/// A compute callback for `ordo_pipeline_run`: runs on `stream` over `n` floats of `input`
/// (device) into `output` (device). Returns a status (0 on success).
pub type OrdoComputeFn = Option<
    unsafe extern "C" fn(
        stream: sys::cudaStream_t,
        input: *const f32,
        output: *mut f32,
        n: usize,
        user: *mut c_void,
    ) -> OrdoStatus,
>;

/// A compute callback for `ordo_pipeline_run_on`: runs on `stream` over `n` elements (of the
/// pipeline's element size) of `input` (device) into `output` (device). Returns a status.
pub type OrdoPipelineFn = Option<
    unsafe extern "C" fn(
        stream: sys::cudaStream_t,
        input: *const c_void,
        output: *mut c_void,
        n: usize,
        user: *mut c_void,
    ) -> OrdoStatus,
>;

/// A compute callback for `ordo_pipeline_run_stencil`: runs on `stream` for the chunk whose
/// output rows are `first_row .. first_row + rows`; `input` (device) points to input row
/// `first_row - before`, and holds `before + rows + after` rows; `output` (device) to output row
/// `first_row`, and holds `rows` rows. Returns a status (0 on success).
pub type OrdoStencilFn = Option<
    unsafe extern "C" fn(
        stream: sys::cudaStream_t,
        input: *const c_void,
        output: *mut c_void,
        first_row: usize,
        rows: usize,
        before: usize,
        after: usize,
        user: *mut c_void,
    ) -> OrdoStatus,
>;

/// The C handle type of a pipeline: opaque, never dereferenced (see [`handles`](crate::handles)).
#[repr(C)]
pub struct OrdoPipeline {
    _opaque: [u8; 0],
}

/// Options of a pipeline (`ordo_pipeline_options` in ordo.h), NCCL's `ncclConfig_t` pattern: the
/// caller sets `size` to `sizeof(ordo_pipeline_options)`, so that later versions can add fields
/// at the end.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct OrdoPipelineOptions {
    /// `sizeof(ordo_pipeline_options)`, set by the caller.
    pub size: usize,
    /// The device (-1: the device current at create).
    pub device: c_int,
    /// Bytes an element (1 or more).
    pub element_size: usize,
    /// Worker streams (0: 3, the staged schedule's; at most 64).
    pub streams: usize,
    /// The worker streams' priority (0: CUDA's default; within `cudaDeviceGetStreamPriorityRange`).
    pub priority: c_int,
    /// Chunks a run (0: ordo's planner chooses, at most 65536).
    pub chunks: usize,
    /// 1: stage timing events; 0 (the default): only the events the waits need.
    pub stage_timing: c_int,
    /// The pool temporaries come from (NULL: ordo's pool of the device, `ordo_temporary_pool`).
    pub pool: sys::cudaMemPool_t,
}
