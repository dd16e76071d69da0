//! `ordo_pipeline_run`: a run over floats on one hidden pool of pipelines, the chunk count given.

use super::run::{builtin_compute, run_on_pool, Chunks, Compute, Run};
use super::OrdoComputeFn;
use crate::check::non_null;
use crate::status::{guard, OrdoStatus};
use core::ffi::c_void;
use ordo_cuda_core::pipeline::{PipelinePool, PoolLimits, PoolSettings};
use ordo_cuda_core::sys;

/// `ordo_pipeline_run`'s pipelines: three streams at default priority, no stage timing.
static DEFAULT_POOL: PipelinePool =
    PipelinePool::new(PoolSettings { streams: 3, priority: None, stage_timing: false }, PoolLimits::DEFAULT);

/// Pipelines of one device (and pool) kept for captures still open, at most (the pools' limit,
/// which ordo.h documents).
pub const PIPELINE_CAPTURE_LIMIT: usize = PoolLimits::DEFAULT.held_by_captures;

/// How many pipelines `ordo_pipeline_run`'s pool holds now, idle or held by open captures (for
/// tests).
pub fn pooled_pipelines() -> usize {
    DEFAULT_POOL.len()
}

/// How many pipelines of destroyed handles are kept for captures still open (for tests).
pub fn orphaned_pipelines() -> usize {
    ordo_cuda_core::pipeline::orphaned_pipelines()
}

/// The chunked pipeline over `n` floats: copy `host_in` (pinned) into `dev_in`, compute into
/// `dev_out` (the callback, or ordo's 64-step kernel when `compute` is NULL), copy `dev_out` out to
/// `host_out` (pinned), in `chunks` chunks, staged over three streams forked from and joined back to
/// `stream`. Pageable host memory gives `ORDO_ERROR_PAGEABLE_MEMORY`.
///
/// # Safety
/// The C contract: the four buffers hold `n` floats and stay allocated (the host ones untouched)
/// until the work on `stream` completes (at every replay, if captured); `compute`, if not NULL, is
/// a function that does not unwind.
#[no_mangle]
pub unsafe extern "C" fn ordo_pipeline_run(
    stream: sys::cudaStream_t,
    host_in: *const f32,
    dev_in: *mut f32,
    dev_out: *mut f32,
    host_out: *mut f32,
    n: usize,
    chunks: usize,
    compute: OrdoComputeFn,
    user: *mut c_void,
) -> OrdoStatus {
    guard("ordo_pipeline_run", || {
        // The device buffers are required here (NULL is ordo_pipeline_run_on's temporaries).
        non_null(dev_in.cast_const(), "dev_in")?;
        non_null(dev_out.cast_const(), "dev_out")?;
        let compute = match compute {
            Some(f) => Compute::Floats(f),
            None => builtin_compute()?,
        };
        let run = Run {
            stream,
            host_in: host_in.cast(),
            dev_in: dev_in.cast(),
            dev_out: dev_out.cast(),
            host_out: host_out.cast(),
            n,
            compute,
            user,
        };
        // SAFETY: the caller's contract, passed on; no pool.
        unsafe { run_on_pool(&DEFAULT_POOL, None, 4, Chunks::Given(chunks), None, run) }
    })
}
