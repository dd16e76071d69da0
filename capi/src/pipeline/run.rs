//! The path every pipeline run shares: the caller's arguments, the compute it asked for (its
//! callback or ordo's kernel), the buffers checked and viewed, and the run on a pipeline of a pool.

use super::checks::{element_align, same_or_disjoint};
use crate::capture_mode::in_caller_mode;
use crate::check::{byte_len, require_device_on, require_pinned};
use crate::check::{non_null_aligned, stream_device, stream_ref};
use crate::status::{callback_error, invalid, OrdoStatus, Outcome, ORDO_SUCCESS};
use core::ffi::c_void;
use ordo_cuda_core::memory::MemPoolRef;
use ordo_cuda_core::pipeline::{check_run_records, Pipeline, PipelinePool, Plan, RunBuffers, RunOptions, Schedule};
use ordo_cuda_core::{sys, Device, DeviceSliceMut, Error, PinnedSlice, PinnedSliceMut, StreamRef};

/// The chunk count: given, or planned.
#[derive(Clone, Copy)]
pub(super) enum Chunks {
    Given(usize),
    Planned,
}

/// The compute of a run.
#[derive(Clone, Copy)]
pub(super) enum Compute {
    /// ordo's 64-step kernel over floats.
    #[cfg(feature = "kernels")]
    Heavy,
    Floats(unsafe extern "C" fn(sys::cudaStream_t, *const f32, *mut f32, usize, *mut c_void) -> OrdoStatus),
    Elements(unsafe extern "C" fn(sys::cudaStream_t, *const c_void, *mut c_void, usize, *mut c_void) -> OrdoStatus),
}

/// One run's arguments, as the caller gave them.
pub(super) struct Run {
    pub(super) stream: sys::cudaStream_t,
    pub(super) host_in: *const c_void,
    pub(super) dev_in: *mut c_void,
    pub(super) dev_out: *mut c_void,
    pub(super) host_out: *mut c_void,
    pub(super) n: usize,
    pub(super) compute: Compute,
    pub(super) user: *mut c_void,
}

/// Runs `run` on a pipeline of `pool` for `device` (`None`: the stream's device), in elements of
/// `element_size` bytes. NULL device buffers become temporaries from `pool` (`None`: ordo's pool
/// of the device).
///
/// # Safety
/// The C contract: the buffers hold `n` elements (the host ones untouched) until the work on the
/// stream completes (at every replay, if captured); `mem_pool` is a live memory pool.
pub(super) unsafe fn run_on_pool(
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
pub(super) struct Pointers {
    pub(super) host: [*const c_void; 2],
    pub(super) dev: [*mut c_void; 2],
}

impl Pointers {
    /// The caller's pointers checked before CUDA: the host ones non-null, and every non-null one
    /// aligned to its direction's alignment (`align`: in, out).
    pub(super) fn checked(host: [*const c_void; 2], dev: [*mut c_void; 2], align: [usize; 2]) -> Outcome<Self> {
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
    pub(super) unsafe fn buffers<'a>(self, in_bytes: usize, out_bytes: usize) -> RunBuffers<'a, u8, u8> {
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
pub(super) fn on_pool(
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
pub(super) fn builtin_compute() -> Outcome<Compute> {
    #[cfg(feature = "kernels")]
    {
        Ok(Compute::Heavy)
    }
    #[cfg(not(feature = "kernels"))]
    {
        Err(crate::status::missing_feature("kernels"))
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
