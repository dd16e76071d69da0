//! The chunked pipeline from C: `ordo_pipeline` handles made with options
//! (`ordo_pipeline_create`, `ordo_pipeline_run_on`, `ordo_pipeline_run_stencil`,
//! `ordo_pipeline_destroy`), and `ordo_pipeline_run`, which runs on one hidden default pool
//! (floats, the chunk count given). A handle is a Rust [`PipelinePool`] (its retention across
//! captures, its limits, the take and give-back of its pipelines are the Rust API's) and the
//! options each run uses; the runs are [`Pipeline::run_with`] (cut at element boundaries, the
//! temporaries allocated) and [`Pipeline::run_stencil`] (rows and halos). This file converts:
//! options, pointers, sizes, callbacks and statuses.

use super::check::{byte_len, in_caller_mode, non_null, read_options, require_device_on, require_pinned};
use super::check::{non_null_aligned, require_pool_for, stream_device, stream_ref, write_out};
use super::handles;
use super::status::{callback_error, guard, guard_void, invalid, OrdoStatus, Outcome, ORDO_SUCCESS};
use core::ffi::{c_int, c_void};
use ordo_cuda_core::memory::MemPoolRef;
use ordo_cuda_core::pipeline::{
    check_run_records, check_stencil, Pipeline, PipelinePool, Plan, PoolLimits, PoolSettings, RunBuffers, RunOptions,
    Schedule, Stencil, StencilChunk, MAX_CHUNKS, MAX_STREAMS,
};
use ordo_cuda_core::{sys, Device, DeviceSliceMut, Error, PinnedSlice, PinnedSliceMut, StreamRef};

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

/// The C handle type of a pipeline: opaque, never dereferenced (see [`handles`]).
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

/// A pipeline handle's object: its pool and the options each run uses.
struct PipelineObject {
    pool: PipelinePool,
    device: Device,
    element_size: usize,
    /// 0: planned each run.
    chunks: usize,
    /// The caller's memory pool (a `cudaMemPool_t`), 0 for ordo's pool of the device.
    mem_pool: usize,
}

/// The chunk count: given, or planned.
#[derive(Clone, Copy)]
enum Chunks {
    Given(usize),
    Planned,
}

/// The compute of a run.
#[derive(Clone, Copy)]
enum Compute {
    /// ordo's 64-step kernel over floats.
    #[cfg(feature = "kernels")]
    Heavy,
    Floats(unsafe extern "C" fn(sys::cudaStream_t, *const f32, *mut f32, usize, *mut c_void) -> OrdoStatus),
    Elements(unsafe extern "C" fn(sys::cudaStream_t, *const c_void, *mut c_void, usize, *mut c_void) -> OrdoStatus),
}

/// One run's arguments, as the caller gave them.
struct Run {
    stream: sys::cudaStream_t,
    host_in: *const c_void,
    dev_in: *mut c_void,
    dev_out: *mut c_void,
    host_out: *mut c_void,
    n: usize,
    compute: Compute,
    user: *mut c_void,
}

/// The alignment pointers of `element_size`-byte elements must have: the largest power of two
/// dividing it, at most 16.
fn element_align(element_size: usize) -> usize {
    (1usize << element_size.trailing_zeros().min(4)).max(1)
}

/// Runs `run` on a pipeline of `pool` for `device` (`None`: the stream's device), in elements of
/// `element_size` bytes. NULL device buffers become temporaries from `pool` (`None`: ordo's pool
/// of the device).
///
/// # Safety
/// The C contract: the buffers hold `n` elements (the host ones untouched) until the work on the
/// stream completes (at every replay, if captured); `mem_pool` is a live memory pool.
unsafe fn run_on_pool(
    pool: &PipelinePool,
    device: Option<Device>,
    element_size: usize,
    chunks: Chunks,
    mem_pool: Option<MemPoolRef<'_>>,
    run: Run,
) -> Outcome {
    let Run { stream, host_in, dev_in, dev_out, host_out, n, compute, user } = run;
    let s = stream_ref(stream)?;
    let align = element_align(element_size);
    let pointers = Pointers::checked([host_in, host_out.cast_const()], [dev_in, dev_out], [align, align])?;
    if n == 0 {
        return Err(invalid("n", "zero elements"));
    }
    let bytes = n.checked_mul(element_size).ok_or_else(|| invalid("n", "n * element size overflows"))?;
    byte_len::<u8>(bytes, "n")?;
    same_or_disjoint(pointers.host, pointers.dev.map(<*mut c_void>::cast_const), bytes)?;
    // The pipeline's own checks (chunk count), before anything reaches CUDA.
    if let Chunks::Given(chunks) = chunks {
        check_run_records([bytes; 4], element_size, chunks)?;
    }
    let compute_chunk = |cs: StreamRef<'_>, i: DeviceSliceMut<'_, u8>, o: DeviceSliceMut<'_, u8>| {
        // Whole elements: the pipeline cuts at multiples of `element_size` bytes.
        let elements = i.len() / element_size;
        let status = match compute {
            // SAFETY: the chunk's views, of floats (the exports pass `Heavy` for 4-byte elements
            // only); live as the buffers are.
            #[cfg(feature = "kernels")]
            Compute::Heavy => return unsafe { heavy(cs, i, o, elements) },
            // SAFETY: the caller's callback, with the chunk's device pointers and its user pointer.
            Compute::Floats(f) => in_caller_mode(|| unsafe {
                f(cs.as_raw(), i.as_mut_ptr().cast_const().cast(), o.as_mut_ptr().cast(), elements, user)
            }),
            // SAFETY: as above.
            Compute::Elements(f) => in_caller_mode(|| unsafe {
                f(cs.as_raw(), i.as_mut_ptr().cast_const().cast(), o.as_mut_ptr().cast(), elements, user)
            }),
        };
        if status == ORDO_SUCCESS {
            Ok(())
        } else {
            Err(callback_error("ordo_compute_fn", status))
        }
    };
    on_pool(pool, device, s, pointers, |p| {
        let plan = match chunks {
            Chunks::Given(chunks) => Plan { chunks, schedule: Schedule::Staged },
            Chunks::Planned => p.plan_for(bytes, bytes, n),
        };
        // SAFETY: the C contract: buffers of `bytes` bytes, live until the work on `stream` completes.
        let buffers = unsafe { pointers.buffers(bytes, bytes) };
        let options = RunOptions { record_len: element_size, pool: mem_pool };
        // SAFETY: as above.
        unsafe { p.run_with(s, buffers, plan, options, compute_chunk) }
    })
}

/// A run's buffers as the caller gave them: the host ones (in, out), and the device ones (in,
/// out; NULL for a temporary).
#[derive(Clone, Copy)]
struct Pointers {
    host: [*const c_void; 2],
    dev: [*mut c_void; 2],
}

impl Pointers {
    /// The caller's pointers checked before CUDA: the host ones non-null, and every non-null one
    /// aligned to its direction's alignment (`align`: in, out).
    fn checked(host: [*const c_void; 2], dev: [*mut c_void; 2], align: [usize; 2]) -> Outcome<Self> {
        non_null_aligned(host[0], align[0], "host_in")?;
        non_null_aligned(host[1], align[1], "host_out")?;
        for ((p, align), arg) in dev.into_iter().zip(align).zip(DEV_ARGS) {
            if !p.is_null() {
                non_null_aligned(p.cast_const(), align, arg)?;
            }
        }
        Ok(Pointers { host, dev })
    }

    /// Views of the buffers: `in_bytes` in, `out_bytes` out; `None` for a NULL device buffer.
    ///
    /// # Safety
    /// The C contract: the input buffers hold `in_bytes` bytes and the output ones `out_bytes`,
    /// live (the host ones untouched) until the work they are given to completes.
    unsafe fn buffers<'a>(self, in_bytes: usize, out_bytes: usize) -> RunBuffers<'a, u8, u8> {
        let [host_in, host_out] = self.host;
        let [dev_in, dev_out] = self.dev;
        // SAFETY: the caller's contract, above.
        unsafe {
            RunBuffers {
                input: PinnedSlice::from_raw_parts(host_in.cast::<u8>(), in_bytes),
                dev_in: (!dev_in.is_null()).then(|| DeviceSliceMut::from_raw_parts(dev_in.cast::<u8>(), in_bytes)),
                dev_out: (!dev_out.is_null()).then(|| DeviceSliceMut::from_raw_parts(dev_out.cast::<u8>(), out_bytes)),
                output: PinnedSliceMut::from_raw_parts(host_out.cast_mut().cast::<u8>(), out_bytes),
            }
        }
    }
}

/// The names of the device buffers in ordo.h, in, out.
const DEV_ARGS: [&str; 2] = ["dev_in", "dev_out"];

/// What every run checks after its own arguments, then the run: the host buffers pinned, the
/// stream's device (which must be `device`, when given) and the device buffers on it; then `run`
/// on a pipeline of `pool` for that device ([`PipelinePool::run`]: with the device current, the
/// pipeline given back, or dropped after a CUDA failure unless an open capture holds it).
fn on_pool(
    pool: &PipelinePool,
    device: Option<Device>,
    s: StreamRef<'_>,
    pointers: Pointers,
    run: impl FnOnce(&mut Pipeline) -> Result<(), Error>,
) -> Outcome {
    require_pinned(pointers.host[0], "host_in")?;
    require_pinned(pointers.host[1], "host_out")?;
    let stream_dev = stream_device(s)?;
    if device.is_some_and(|d| d != stream_dev) {
        return Err(invalid("stream", "a stream of another device than the pipeline's"));
    }
    for (p, arg) in pointers.dev.into_iter().zip(DEV_ARGS) {
        if !p.is_null() {
            require_device_on(p.cast_const(), stream_dev, arg)?;
        }
    }
    pool.run(stream_dev, run)?;
    Ok(())
}

/// The compute of a NULL callback: ordo's 64-step kernel, in builds with the kernels.
fn builtin_compute() -> Outcome<Compute> {
    #[cfg(feature = "kernels")]
    {
        Ok(Compute::Heavy)
    }
    #[cfg(not(feature = "kernels"))]
    {
        Err(super::status::missing_feature("kernels"))
    }
}

/// ordo's 64-step kernel over a chunk of floats.
///
/// # Safety
/// `i` and `o` hold `elements` floats (4-byte elements), live until the kernel completes.
#[cfg(feature = "kernels")]
unsafe fn heavy(
    cs: StreamRef<'_>,
    i: DeviceSliceMut<'_, u8>,
    o: DeviceSliceMut<'_, u8>,
    elements: usize,
) -> ordo_cuda_core::Result<()> {
    // SAFETY: the caller's contract, above.
    unsafe {
        let input = ordo_cuda_core::DeviceSlice::from_raw_parts(i.as_mut_ptr().cast_const().cast::<f32>(), elements);
        let output = DeviceSliceMut::from_raw_parts(o.as_mut_ptr().cast::<f32>(), elements);
        ordo_cuda_kernels::heavy_into(cs, input, output)
    }
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
    guard("ordo_pipeline_create", || {
        non_null(out.cast_const(), "out")?;
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
        let object = PipelineObject { pool, device, element_size, chunks, mem_pool: o.pool as usize };
        write_out(out, handles::register(object)?, "out")
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

/// The bytes of `rows` input rows of `in_row_bytes` and output rows of `out_row_bytes`, refused
/// before CUDA for a zero row size, zero rows, and byte counts that overflow or pass `isize::MAX`.
fn stencil_bytes(rows: usize, in_row_bytes: usize, out_row_bytes: usize) -> Outcome<(usize, usize)> {
    if in_row_bytes == 0 {
        return Err(invalid("in_row_bytes", "zero bytes a row"));
    }
    if out_row_bytes == 0 {
        return Err(invalid("out_row_bytes", "zero bytes a row"));
    }
    if rows == 0 {
        return Err(invalid("rows", "zero rows"));
    }
    let bytes = |row: usize| rows.checked_mul(row).ok_or_else(|| invalid("rows", "rows * row bytes overflows"));
    Ok((byte_len::<u8>(bytes(in_row_bytes)?, "rows")?, byte_len::<u8>(bytes(out_row_bytes)?, "rows")?))
}

/// Whether `a_len` bytes at `a` and `b_len` bytes at `b` share a byte (a range that would pass the
/// end of the address space is taken to reach it).
fn overlap(a: *const c_void, a_len: usize, b: *const c_void, b_len: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    a_len != 0 && b_len != 0 && a < b.saturating_add(b_len) && b < a.saturating_add(a_len)
}

/// Refuses a run's input buffer that partly overlaps its output buffer (host or device). One buffer
/// given as both is a run in place, which is sound: a chunk's bytes are copied out (and, on the
/// device, written by its compute) only after they were copied in, and chunks share no byte. A
/// shifted overlap is not: a later chunk's copy in would race an earlier chunk's copy out or
/// compute.
fn same_or_disjoint(host: [*const c_void; 2], dev: [*const c_void; 2], bytes: usize) -> Outcome {
    if host[0] != host[1] && overlap(host[0], bytes, host[1], bytes) {
        return Err(invalid("host_out", "host_in and host_out overlap without being the same buffer"));
    }
    if !dev[0].is_null() && !dev[1].is_null() && dev[0] != dev[1] && overlap(dev[0], bytes, dev[1], bytes) {
        return Err(invalid("dev_out", "dev_in and dev_out overlap without being the same buffer"));
    }
    Ok(())
}

/// Refuses a stencil's input buffer that overlaps its output buffer (host or device): the computes
/// of neighbouring chunks read input rows while others write output rows and copies run both ways,
/// so shared bytes race (and the views ordo makes of them must not alias).
fn stencil_disjoint(host: [*const c_void; 2], dev: [*const c_void; 2], in_bytes: usize, out_bytes: usize) -> Outcome {
    if overlap(host[0], in_bytes, host[1], out_bytes) {
        return Err(invalid("host_out", "host_in and host_out overlap"));
    }
    if !dev[0].is_null() && !dev[1].is_null() && overlap(dev[0], in_bytes, dev[1], out_bytes) {
        return Err(invalid("dev_out", "dev_in and dev_out overlap"));
    }
    Ok(())
}

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
    fn element_alignment_is_the_largest_power_of_two_dividing_the_size_up_to_16() {
        assert_eq!(element_align(1), 1);
        assert_eq!(element_align(4), 4);
        assert_eq!(element_align(12), 4);
        assert_eq!(element_align(48), 16);
        assert_eq!(element_align(3), 1);
    }

    #[test]
    fn overlapping_buffers_are_refused_before_cuda() {
        let at = |a: usize| a as *const c_void;
        assert!(!overlap(at(0x1000), 0x100, at(0x1100), 0x100), "adjacent");
        assert!(!overlap(at(0x1100), 0x100, at(0x1000), 0x100), "adjacent, the other way");
        assert!(overlap(at(0x1000), 0x101, at(0x1100), 0x100), "one byte shared");
        assert!(overlap(at(0x1000), 0x100, at(0x1000), 0x100), "in place");
        assert!(overlap(at(0x1000), 0x1000, at(0x1800), 0x10), "inside");
        assert!(overlap(at(usize::MAX - 4), 0x100, at(usize::MAX - 1), 1), "to the end of the address space");
        assert!(!overlap(at(0x1000), 0, at(0x1000), 0x100), "nothing shared by an empty range");
        let (hi, ho, di, d_o) = (at(0x10_0000), at(0x20_0000), at(0x30_0000), at(0x40_0000));
        assert_eq!(stencil_disjoint([hi, ho], [di, d_o], 0x1000, 0x1000), Ok(()));
        // A run (not a stencil) may also work in place, but not on a shifted overlap.
        assert_eq!(same_or_disjoint([hi, hi], [di, di], 0x1000), Ok(()), "in place");
        assert_eq!(same_or_disjoint([hi, ho], [di, d_o], 0x1000), Ok(()), "disjoint");
        assert_eq!(same_or_disjoint([hi, ho], [core::ptr::null(), di], 0x1000), Ok(()), "a temporary");
        assert!(same_or_disjoint([hi, at(hi as usize + 1)], [di, d_o], 0x1000).is_err(), "host shifted by one");
        assert!(same_or_disjoint([hi, ho], [at(d_o as usize + 8), d_o], 0x1000).is_err(), "device shifted");
        assert_eq!(stencil_disjoint([hi, ho], [core::ptr::null(), core::ptr::null()], 0x1000, 0x1000), Ok(()));
        // In place on the device (the same rows in and out): a halo reads rows another chunk writes.
        assert!(stencil_disjoint([hi, ho], [di, di], 0x1000, 0x1000).is_err());
        // An output longer than its input's distance to it on the host.
        assert!(stencil_disjoint([hi, at(0x10_0800)], [di, d_o], 0x1000, 0x800).is_err());
        assert!(stencil_disjoint([ho, hi], [di, d_o], 0x1000, 0x10_0001).is_err());
        assert_eq!(stencil_disjoint([ho, hi], [di, d_o], 0x1000, 0x10_0000), Ok(()));
    }

    #[test]
    fn stencil_sizes_are_checked_before_cuda() {
        assert_eq!(stencil_bytes(10, 64, 128), Ok((640, 1280)));
        for (rows, i, o) in [
            (0, 64, 32),
            (10, 0, 32),
            (10, 64, 0),
            (usize::MAX, 2, 1),
            (2, 1, usize::MAX),
            (isize::MAX as usize / 4 + 1, 4, 4),
        ] {
            assert!(stencil_bytes(rows, i, o).is_err(), "rows {rows}, {i} and {o} bytes a row");
        }
    }

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
