//! `ordo_pipeline_run_stencil`: a pipeline handle's run over rows, each chunk's compute reading a
//! halo of rows around its own.

use super::checks::{element_align, stencil_bytes, stencil_disjoint};
use super::handle::PipelineObject;
use super::run::{on_pool, Pointers};
use super::{OrdoPipeline, OrdoStencilFn};
use crate::capture_mode::in_caller_mode;
use crate::check::stream_ref;
use crate::handles;
use crate::status::{callback_error, guard, invalid, OrdoStatus, ORDO_SUCCESS};
use core::ffi::c_void;
use ordo_cuda_core::memory::MemPoolRef;
use ordo_cuda_core::pipeline::{check_stencil, Plan, Schedule, Stencil, StencilChunk};
use ordo_cuda_core::{sys, StreamRef};

/// Runs `pipeline` as a stencil over `rows` rows: input rows of `in_row_bytes` bytes, output rows
/// of `out_row_bytes`, each chunk's compute reading `halo` rows beyond its own on each side
/// (clamped at the frame's edges). NULL `dev_in` or `dev_out` are temporaries from the pipeline's
/// pool. The pipeline's element size is not used: rows are the records.
///
/// # Safety
/// The C contract: `host_in` and a non-null `dev_in` hold `rows * in_row_bytes` bytes, `host_out`
/// and a non-null `dev_out` `rows * out_row_bytes`, and stay allocated (the host ones untouched)
/// until the work on `stream` completes (at every replay, if captured); the input buffers do not
/// overlap the output buffers (checked: `ORDO_ERROR_INVALID_ARGUMENT`); `compute` is a function
/// that does not unwind, and reads only the input rows and writes only the output rows it is
/// given.
#[no_mangle]
pub unsafe extern "C" fn ordo_pipeline_run_stencil(
    pipeline: *mut OrdoPipeline,
    stream: sys::cudaStream_t,
    host_in: *const c_void,
    dev_in: *mut c_void,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    rows: usize,
    in_row_bytes: usize,
    out_row_bytes: usize,
    halo: usize,
    compute: OrdoStencilFn,
    user: *mut c_void,
) -> OrdoStatus {
    guard("ordo_pipeline_run_stencil", || {
        let object = handles::get::<PipelineObject, _>(pipeline)?;
        let Some(compute) = compute else {
            return Err(invalid("compute", "null pointer"));
        };
        let s = stream_ref(stream)?;
        let align = [element_align(in_row_bytes), element_align(out_row_bytes)];
        let pointers = Pointers::checked([host_in, host_out.cast_const()], [dev_in, dev_out], align)?;
        let (in_bytes, out_bytes) = stencil_bytes(rows, in_row_bytes, out_row_bytes)?;
        stencil_disjoint(pointers.host, pointers.dev.map(<*mut c_void>::cast_const), in_bytes, out_bytes)?;
        // The pipeline's own checks (chunk count), before anything reaches CUDA.
        if object.chunks != 0 {
            check_stencil([in_bytes, in_bytes, out_bytes, out_bytes], in_row_bytes, out_row_bytes, object.chunks)?;
        }
        // SAFETY: the create's contract: the pool outlives the pipeline.
        let mem_pool = unsafe { MemPoolRef::from_raw(object.mem_pool as sys::cudaMemPool_t) };
        let compute_chunk = |cs: StreamRef<'_>, c: StencilChunk<'_, u8, u8>| {
            // SAFETY: the caller's callback, with the chunk's device pointers, rows and user pointer.
            let status = in_caller_mode(|| unsafe {
                compute(
                    cs.as_raw(),
                    c.input.as_ptr().cast(),
                    c.output.as_mut_ptr().cast(),
                    c.first_row,
                    c.rows,
                    c.before,
                    c.after,
                    user,
                )
            });
            if status == ORDO_SUCCESS {
                Ok(())
            } else {
                Err(callback_error("ordo_stencil_fn", status))
            }
        };
        on_pool(&object.pool, Some(object.device), s, pointers, |p| {
            let plan = match object.chunks {
                0 => p.plan_for(in_bytes, out_bytes, rows),
                chunks => Plan { chunks, schedule: Schedule::Staged },
            };
            // SAFETY: the C contract: buffers of `in_bytes` and `out_bytes` bytes, live until the
            // work on `stream` completes.
            let buffers = unsafe { pointers.buffers(in_bytes, out_bytes) };
            let stencil = Stencil { in_record_len: in_row_bytes, out_record_len: out_row_bytes, halo, pool: mem_pool };
            // SAFETY: as above; the callback's contract covers the rows it touches.
            unsafe { p.run_stencil(s, buffers, plan, stencil, compute_chunk) }
        })
    })
}
