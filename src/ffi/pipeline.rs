//! `ordo_pipeline_run`: the Rust [`Pipeline`] over the caller's pinned and device buffers.
//!
//! Pipelines (their streams and events) are pooled per device. A run takes one out of the pool,
//! runs without any lock held (the compute callback may call back into ordo, another pipeline run
//! included; several threads run at once, each on its own pipeline), and puts it back. A pipeline
//! whose run met a CUDA error is dropped instead of kept, and one whose context a `cudaDeviceReset`
//! destroyed is forgotten without a CUDA call (see [`super::context`]): the next run makes a fresh
//! one. A pipeline whose last run was captured stays out of use until the caller's capture ends
//! (its worker streams belong to that capture until then). [`Pipeline::run`] joins its worker
//! streams back to the caller's stream on every path out, errors included.
//!
//! The pool is bounded: at most `POOL_LIMIT` (16) idle pipelines a device are kept (a take that
//! finds more, left by captures that have ended since, drops the surplus), and at most
//! [`PIPELINE_CAPTURE_LIMIT`] held by captures still open (a run that would need one more gets
//! `cudaErrorMemoryAllocation`).

use super::check::{byte_len, in_caller_mode, non_null, require_device_on, require_pinned, stream_device, stream_ref};
use super::context::InContext;
use super::status::{callback_error, guard, invalid, OrdoStatus, ORDO_SUCCESS};
use core::ffi::c_void;
use ordo_core::pipeline::{check_run, Buffers, Pipeline, Plan, Schedule};
use ordo_core::{sys, Device, DeviceSliceMut, Error, PinnedSlice, PinnedSliceMut, StreamRef};
use std::sync::{Mutex, PoisonError};

/// A compute callback for the pipeline: runs on `stream` over `n` elements of `input` (device)
/// into `output` (device). Returns a status (0 on success).
pub type OrdoComputeFn = Option<
    unsafe extern "C" fn(
        stream: sys::cudaStream_t,
        input: *const f32,
        output: *mut f32,
        n: usize,
        user: *mut c_void,
    ) -> OrdoStatus,
>;

/// Pooled pipelines, any device: idle ones, and ones whose last run was captured into a capture
/// still open. Held only to take one out or put one back.
static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// A pipeline and the context its streams and events belong to (see [`super::context`]).
type Pooled = InContext<Pipeline>;

/// Idle pipelines kept at most, per device (more exist only while that many runs overlap).
const POOL_LIMIT: usize = 16;

/// Pipelines of one device kept for captures still open, at most: a run that would need a new
/// pipeline while the pool holds this many of its device's, all in open captures, gets
/// `cudaErrorMemoryAllocation` (end or abandon the captures to free them).
pub const PIPELINE_CAPTURE_LIMIT: usize = 256;

fn pool() -> std::sync::MutexGuard<'static, Vec<Pooled>> {
    POOL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An idle pipeline of `device` from the pool, or a new one (made with `device` current).
///
/// A pooled pipeline whose workers are still part of a caller's open capture (its last run was
/// captured and the capture has not ended) stays in the pool, unused, until the capture ends; one
/// of a destroyed context is forgotten; one whose state CUDA cannot tell is dropped. When the
/// device's pipelines in the pool outnumber [`POOL_LIMIT`] (captures held many, and have ended
/// since), every one is looked at and idle ones beyond the limit are dropped: the pool shrinks back
/// once captures end. Pipelines are dropped (their streams destroyed) outside the lock.
fn take(device: Device) -> Result<Pooled, Error> {
    let mut candidates = {
        let mut pool = pool();
        let (mine, others): (Vec<Pooled>, Vec<Pooled>) = pool.drain(..).partition(|p| p.context().device() == device);
        *pool = others;
        mine
    };
    let trim = candidates.len() > POOL_LIMIT;
    // Asked outside the lock (one CUDA call a worker stream): until one is free, or all of them
    // when the pool must be trimmed.
    let mut found = None;
    let mut idle = Vec::new();
    let mut held = Vec::new();
    let mut unseen = Vec::new();
    while let Some(mut p) = candidates.pop() {
        if found.is_some() && !trim {
            unseen.push(p);
            continue;
        }
        // One of a destroyed context (cudaDeviceReset) is forgotten, never touched.
        if !p.context().alive() {
            drop(p);
            continue;
        }
        match p.checked_mut().in_capture() {
            Ok(false) if found.is_none() => found = Some(p),
            Ok(false) => idle.push(p),
            Ok(true) => held.push(p),
            Err(_) => drop(p),
        }
    }
    let surplus = idle.split_off(idle.len().min(POOL_LIMIT));
    let held_count = held.len();
    {
        let mut pool = pool();
        pool.extend(held);
        pool.extend(idle);
        pool.extend(unseen);
    }
    drop(surplus);
    match found {
        Some(p) => Ok(p),
        None if held_count >= PIPELINE_CAPTURE_LIMIT => Err(Error::Cuda(
            ordo_core::CudaError::new(sys::cudaError::cudaErrorMemoryAllocation, "ordo_pipeline_run")
                .with_hint("every pooled pipeline of the device is held by a capture still open (at most 256): end or abandon those captures"),
        )),
        None => device.with_current(|| {
            let mut p = Pipeline::new(3)?;
            // C callers cannot read stage times: only the events the cross-stream waits need.
            p.set_stage_timing(false);
            InContext::new(p)
        }),
    }
}

/// Puts a pipeline back after a run. Idle pipelines beyond [`POOL_LIMIT`] of its device are
/// dropped (outside the lock); one still part of an open capture is always kept (its streams must
/// outlive the capture).
fn give_back(mut p: Pooled) {
    let keep = p.checked_mut().in_capture().unwrap_or(false);
    let device = p.context().device();
    let mut pool = pool();
    if keep || pool.iter().filter(|q| q.context().device() == device).count() < POOL_LIMIT {
        pool.push(p);
    } else {
        drop(pool);
        drop(p);
    }
}

/// How many pipelines the pool holds now, idle or held by open captures (for tests).
pub fn pooled_pipelines() -> usize {
    pool().len()
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
        let s = stream_ref(stream)?;
        non_null(host_in, "null host_in")?;
        non_null(dev_in.cast_const(), "null dev_in")?;
        non_null(dev_out.cast_const(), "null dev_out")?;
        non_null(host_out.cast_const(), "null host_out")?;
        if n == 0 {
            return Err(invalid("zero elements"));
        }
        byte_len::<f32>(n)?;
        // The pipeline's own checks (chunk count), before anything reaches CUDA.
        check_run([n; 4], chunks)?;
        require_pinned(host_in.cast())?;
        require_pinned(host_out.cast_const().cast())?;
        // The pipeline of the stream's device, run with that device current (its events and
        // streams are made there); device buffers must be that device's.
        let device = stream_device(s)?;
        require_device_on(dev_in.cast_const().cast(), device)?;
        require_device_on(dev_out.cast_const().cast(), device)?;
        let mut pooled = take(device)?;
        let p = pooled.checked_mut();
        // SAFETY: the C contract: buffers of n elements, live until the work on `stream` completes.
        let buffers = unsafe {
            Buffers {
                input: PinnedSlice::from_raw_parts(host_in, n),
                dev_in: DeviceSliceMut::from_raw_parts(dev_in, n),
                dev_out: DeviceSliceMut::from_raw_parts(dev_out, n),
                output: PinnedSliceMut::from_raw_parts(host_out, n),
            }
        };
        let plan = Plan { chunks, schedule: Schedule::Staged };
        let compute_chunk = |cs: StreamRef<'_>, i: DeviceSliceMut<'_, f32>, o: DeviceSliceMut<'_, f32>| match compute {
            Some(f) => {
                // SAFETY: the caller's callback, with the chunk's device pointers and its user pointer.
                let status =
                    in_caller_mode(|| unsafe { f(cs.as_raw(), i.as_mut_ptr(), o.as_mut_ptr(), i.len(), user) });
                if status == ORDO_SUCCESS {
                    Ok(())
                } else {
                    Err(callback_error("ordo_compute_fn", status))
                }
            }
            // SAFETY: the chunk's views; live as the buffers are.
            None => unsafe { ordo_kernels::heavy_into(cs, i.as_slice(), o) },
        };
        // SAFETY: as above.
        let result = device.with_current(|| unsafe { p.run(s, buffers, plan, compute_chunk) });
        // Kept for the next run unless CUDA failed (after cudaDeviceReset, say, its streams are
        // gone); one still part of the caller's open capture is kept either way.
        match result {
            Err(Error::Cuda(_)) if !p.in_capture().unwrap_or(false) => drop(pooled),
            _ => give_back(pooled),
        }
        result?;
        Ok(())
    })
}
