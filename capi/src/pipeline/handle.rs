//! `ordo_pipeline` handles: made with options (`ordo_pipeline_create`), run over elements
//! (`ordo_pipeline_run_on`), destroyed (`ordo_pipeline_destroy`).

use super::run::{builtin_compute, run_on_pool, Chunks, Compute, Run};
use super::{OrdoPipeline, OrdoPipelineFn, OrdoPipelineOptions};
use crate::check::{read_options, require_pool_for};
use crate::handles;
use crate::status::{guard, guard_void, invalid, OrdoStatus, Outcome};
use core::ffi::c_void;
use ordo_cuda_core::memory::MemPoolRef;
use ordo_cuda_core::pipeline::{PipelinePool, PoolLimits, PoolSettings, MAX_CHUNKS, MAX_STREAMS};
use ordo_cuda_core::{sys, Device};

/// A pipeline handle's object: its pool and the options each run uses.
pub(super) struct PipelineObject {
    pub(super) pool: PipelinePool,
    pub(super) device: Device,
    pub(super) element_size: usize,
    /// 0: planned each run.
    pub(super) chunks: usize,
    /// The caller's memory pool (a `cudaMemPool_t`), 0 for ordo's pool of the device.
    pub(super) mem_pool: usize,
}

/// A pipeline handle's options, checked (the memory pool is checked against the device by
/// [`ordo_pipeline_create`]).
struct Checked {
    /// How the pool's pipelines are made.
    settings: PoolSettings,
    element_size: usize,
    /// 0: planned each run.
    chunks: usize,
    /// `None`: the device current at create.
    device: Option<usize>,
}

/// The options' fields checked, into what a pipeline object keeps.
fn checked(o: &OrdoPipelineOptions) -> Outcome<Checked> {
    if o.element_size == 0 {
        return Err(invalid("options.element_size", "0"));
    }
    if o.streams > MAX_STREAMS {
        return Err(invalid("options.streams", "over 64"));
    }
    if o.chunks > MAX_CHUNKS {
        return Err(invalid("options.chunks", "over 65536"));
    }
    if !(0..=1).contains(&o.stage_timing) {
        return Err(invalid("options.stage_timing", "neither 0 nor 1"));
    }
    if o.device < -1 {
        return Err(invalid("options.device", "below -1"));
    }
    let settings = PoolSettings {
        streams: if o.streams == 0 { 3 } else { o.streams },
        priority: (o.priority != 0).then_some(o.priority),
        stage_timing: o.stage_timing == 1,
    };
    let device = usize::try_from(o.device).ok();
    Ok(Checked { settings, element_size: o.element_size, chunks: o.chunks, device })
}

/// The default options (`ORDO_PIPELINE_OPTIONS_INIT` in ordo.h).
const DEFAULT_OPTIONS: OrdoPipelineOptions = OrdoPipelineOptions {
    size: core::mem::size_of::<OrdoPipelineOptions>(),
    device: -1,
    element_size: 4,
    streams: 0,
    priority: 0,
    chunks: 0,
    stage_timing: 0,
    pool: core::ptr::null_mut(),
};

/// Creates a pipeline: its options checked, and its first pipeline (streams and events) made on
/// its device. `options` NULL: the defaults (`ORDO_PIPELINE_OPTIONS_INIT`).
///
/// # Safety
/// The C contract: a non-null `options` points to `options->size` readable bytes; `options->pool`
/// is NULL or a live pool that outlives the pipeline; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn ordo_pipeline_create(
    options: *const OrdoPipelineOptions,
    out: *mut *mut OrdoPipeline,
) -> OrdoStatus {
    handles::create("ordo_pipeline_create", out, || {
        // SAFETY: the caller's contract: NULL or `size` readable bytes.
        let o = unsafe { read_options(options, "options") }?.unwrap_or(DEFAULT_OPTIONS);
        let Checked { settings, element_size, chunks, device } = checked(&o)?;
        let device = match device {
            None => Device::current()?,
            Some(ordinal) => Device::new(ordinal)?,
        };
        // SAFETY: the C contract: NULL or a live pool.
        require_pool_for(unsafe { MemPoolRef::from_raw(o.pool) }, device)?;
        let pool = PipelinePool::new(settings, PoolLimits::DEFAULT);
        // The first pipeline now: a bad priority or device fails the create, not the first run.
        pool.prepare(device)?;
        Ok(PipelineObject { pool, device, element_size, chunks, mem_pool: o.pool as usize })
    })
}

/// Runs `pipeline` over `n` elements on `stream`; NULL `dev_in` or `dev_out` are temporaries from
/// the pipeline's pool. `compute` NULL: ordo's 64-step kernel, for 4-byte elements (floats) only.
///
/// # Safety
/// The C contract: `host_in`, `host_out` and the non-null device buffers hold `n` elements and
/// stay allocated (the host ones untouched) until the work on `stream` completes (at every replay,
/// if captured); `compute`, if not NULL, is a function that does not unwind.
#[no_mangle]
pub unsafe extern "C" fn ordo_pipeline_run_on(
    pipeline: *mut OrdoPipeline,
    stream: sys::cudaStream_t,
    host_in: *const c_void,
    dev_in: *mut c_void,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    n: usize,
    compute: OrdoPipelineFn,
    user: *mut c_void,
) -> OrdoStatus {
    guard("ordo_pipeline_run_on", || {
        let object = handles::get::<PipelineObject, _>(pipeline)?;
        let compute = match compute {
            Some(f) => Compute::Elements(f),
            None if object.element_size == 4 => builtin_compute()?,
            None => {
                return Err(invalid("compute", "NULL compute needs 4-byte elements (ordo's kernel is over floats)"))
            }
        };
        let chunks = if object.chunks == 0 { Chunks::Planned } else { Chunks::Given(object.chunks) };
        // SAFETY: the create's contract: the pool outlives the pipeline.
        let mem_pool = unsafe { MemPoolRef::from_raw(object.mem_pool as sys::cudaMemPool_t) };
        let run = Run { stream, host_in, dev_in, dev_out, host_out, n, compute, user };
        // SAFETY: the caller's contract, passed on.
        unsafe { run_on_pool(&object.pool, Some(object.device), object.element_size, chunks, mem_pool, run) }
    })
}

/// Destroys a pipeline. NULL, destroyed and unknown handles, and handles of another kind, are
/// ignored. Its pipelines still held by an open capture live until that capture ends.
#[no_mangle]
pub extern "C" fn ordo_pipeline_destroy(pipeline: *mut OrdoPipeline) {
    guard_void("ordo_pipeline_destroy", || drop(handles::remove::<PipelineObject, _>(pipeline)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_before_cuda() {
        let ok = DEFAULT_OPTIONS;
        assert!(checked(&ok).is_ok());
        for bad in [
            OrdoPipelineOptions { element_size: 0, ..ok },
            OrdoPipelineOptions { streams: 65, ..ok },
            OrdoPipelineOptions { chunks: MAX_CHUNKS + 1, ..ok },
            OrdoPipelineOptions { stage_timing: 2, ..ok },
            OrdoPipelineOptions { device: -2, ..ok },
        ] {
            assert!(checked(&bad).is_err());
        }
    }
}
