//! A decode step, eager and replayed from the bucket graph cache, against the same step in plain
//! CUDA C++ (`cuda/decode.cu`) in the same interleaved rounds; and the capture of every bucket, by
//! the Rust API's cache and by the C ABI's (`ordo_graph_cache_*`, as a C++ program calls it).
//!
//! The step for `batch` rows of [`HIDDEN`] floats, on its own stream: the input copied in; three
//! of the user's own kernels (`out = prev * scale + 1`, the chain-step kind, compiled in ordo's two
//! forms in `cuda/decode.cu`) launched with ordo's PDL rule (the first without the PDL attribute,
//! the next two as the plan says); `gemv_normalize` of the third kernel's output (batch x HIDDEN)
//! with a weight vector (up to 1024 rows it normalises in one block, no temporary); y and the
//! hidden state copied out; then a synchronise. Timed on the host from the first call to the synchronise's return, each
//! step alone; a figure is the median of medians.
//!
//! The baseline is the same step in plain CUDA C++, as a C++ engineer writes it: the kernels
//! without `griddepcontrol`, one element a thread, `<<<>>>`; y normalised in one block, as ordo
//! does (the three-operation form through a temporary allocated once, at start, and zeroed each
//! step, is measured beside it); the graphs captured by hand, one capture and instantiation a
//! bucket, no upload in the capture row's baseline (uploaded for the replay rows, as ordo's
//! first replay uploads). Both sides work on the same buffers (the same pinned pages and device
//! memory), so that where memory sits does not count for either side. The replay rows make both
//! sides' graphs afresh in each epoch, the side that instantiates first alternating (a graph's
//! replay level depended on it: BENCHMARKS.md). One eager variant, not a baseline, launches the
//! C++ step's kernels as ordo's PDL plan does (`cudaLaunchKernelEx`, the PDL form and attribute),
//! to tell PDL's own cost from ordo's. The device's default pool is left as the process has it.

use crate::Report;
use crate::{interleave, median};
use core::ffi::c_void;
use ordo_benches::cpp;
use ordo_benches::kernels::{bl_user_step, bl_user_step_pdl};
use ordo_cuda_capi::{
    ordo_graph_cache_capture_all, ordo_graph_cache_create_with_options, ordo_graph_cache_destroy,
    OrdoGraphCacheOptions, OrdoStatus, ORDO_CAPTURE_THREAD_LOCAL, ORDO_ERROR_INVALID_ARGUMENT, ORDO_ERROR_LIBRARY,
    ORDO_SUCCESS,
};
use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::graph_cache::{CacheOptions, GraphCache, Overflow};
use ordo_cuda_core::launch::{Kernel, PdlKernel, PdlMode, PdlPlan};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::time::Instant;

/// Floats a row.
const HIDDEN: usize = 4096;
/// The batches measured, eager and replayed.
const BATCHES: [usize; 3] = [1, 8, 64];
/// The graph cache's buckets (seven, as an engine keeps for decode).
const BUCKETS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Steps timed in one sample of a variant.
const STEPS: usize = 20;
/// Instantiations of each side's graphs for the replay rows (see the replay rows' comment).
const EPOCHS: usize = 5;

/// The ordo side's buffers, as raw pointers (the buffers live in [`decode_group`]).
#[derive(Clone, Copy)]
struct Side {
    x_host: *mut f32,
    y_host: *mut f32,
    t_host: *mut f32,
    x: *mut f32,
    a: *mut f32,
    b: *mut f32,
    scale: *const f32,
    w: *const f32,
    y: *mut f32,
}

/// The user's kernel in ordo's two forms.
fn user_step() -> PdlKernel<(*const f32, *mut f32, *const f32, i32)> {
    type Step = unsafe extern "C" fn(*const f32, *mut f32, *const f32, i32);
    PdlKernel::new(Kernel::new(bl_user_step as Step), Kernel::new(bl_user_step_pdl as Step))
}

/// One decode step of `batch` rows on `s` (not synchronised), the temporary from `pool` (`None`:
/// ordo's pool).
fn ordo_step(s: StreamRef<'_>, batch: usize, p: Side, plan: &PdlPlan, pool: Option<MemPoolRef<'_>>) -> Result<()> {
    let n = batch * HIDDEN;
    let step = user_step();
    // SAFETY: every buffer holds at least max(BATCHES) * HIDDEN floats (y: max batch), and outlives
    // the synchronised steps and the graphs that replay them; the plan's grid covers `n` with the
    // body's grid-stride loop; no kernel writes `scale`, which the PDL form reads before its wait,
    // and the first kernel, whose predecessor is the copy of its input, is launched without PDL.
    unsafe {
        copy::h2d_async(DeviceSliceMut::from_raw_parts(p.x, n), PinnedSlice::from_raw_parts(p.x_host, n), s)?;
        step.launch(s, plan, false, (p.x.cast_const(), p.a, p.scale, n as i32))?;
        step.launch(s, plan, true, (p.a.cast_const(), p.b, p.scale, n as i32))?;
        step.launch(s, plan, true, (p.b.cast_const(), p.a, p.scale, n as i32))?;
        ordo_cuda_kernels::gemv_normalize_in(
            s,
            pool,
            DeviceSlice::from_raw_parts(p.a, n),
            DeviceSlice::from_raw_parts(p.w, HIDDEN),
            DeviceSliceMut::from_raw_parts(p.y, batch),
            batch,
            HIDDEN,
        )?;
        copy::d2h_async(PinnedSliceMut::from_raw_parts(p.y_host, batch), DeviceSlice::from_raw_parts(p.y, batch), s)?;
        copy::d2h_async(PinnedSliceMut::from_raw_parts(p.t_host, n), DeviceSlice::from_raw_parts(p.a, n), s)
    }
}

/// The buffers and plans of the C ABI cache's body ([`c_step`]).
struct CStep<'a> {
    side: Side,
    plans: &'a [PdlPlan],
}

/// The decode step of `bucket` rows as a C capture callback (`ordo_capture_fn`), over the buffers
/// and plans `user` (a [`CStep`]) points to: what a C++ program gives `ordo_graph_cache_create`.
unsafe extern "C" fn c_step(stream: sys::cudaStream_t, bucket: usize, user: *mut c_void) -> OrdoStatus {
    // SAFETY: the `CStep` the cache was made with, alive until the cache is destroyed.
    let body = unsafe { &*user.cast::<CStep<'_>>() };
    // SAFETY: the cache's capturing stream, alive for the call.
    let Some(s) = (unsafe { StreamRef::from_raw(stream) }) else {
        return ORDO_ERROR_INVALID_ARGUMENT;
    };
    let Some(plan) = BUCKETS.iter().position(|&b| b == bucket).and_then(|i| body.plans.get(i)) else {
        return ORDO_ERROR_INVALID_ARGUMENT;
    };
    match ordo_step(s, bucket, body.side, plan, None) {
        Ok(()) => ORDO_SUCCESS,
        Err(e) => e.cuda_code().map_or(ORDO_ERROR_LIBRARY, |c| c.0 as OrdoStatus),
    }
}

/// The C++ side's handle (`bl_decode_open`), closed on drop.
struct Cpp(*mut core::ffi::c_void);

impl Drop for Cpp {
    fn drop(&mut self) {
        // SAFETY: the handle bl_decode_open returned, closed once.
        unsafe { cpp::bl_decode_close(self.0) };
    }
}

pub(crate) fn decode_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("decode step: buffers");
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let max = *BATCHES.iter().chain(&BUCKETS).max().unwrap_or(&1);
    let n = max * HIDDEN;
    let x_data: Vec<f32> = (0..n).map(|i| ((i * 7919) % 2003) as f32 / 1001.0 - 1.0).collect();
    let scale_data: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
    let w_data: Vec<f32> = (0..HIDDEN).map(|i| ((i * 31) % 97) as f32 / 48.0 - 1.0).collect();
    let x_host = PinnedBuffer::from_slice(&x_data)?;
    let mut y_host = PinnedBuffer::<f32>::zeroed(max, HostAllocFlags::empty())?;
    let mut t_host = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty())?;
    let mut x = DeviceBuffer::<f32>::zeroed_async(n, s)?;
    let mut a = DeviceBuffer::<f32>::zeroed_async(n, s)?;
    let mut b = DeviceBuffer::<f32>::zeroed_async(n, s)?;
    let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
    copy::h2d_blocking(scale.as_mut_slice(), &scale_data, s)?;
    let mut w = DeviceBuffer::<f32>::alloc_async(HIDDEN, s)?;
    copy::h2d_blocking(w.as_mut_slice(), &w_data, s)?;
    let mut y = DeviceBuffer::<f32>::zeroed_async(max, s)?;
    let side = Side {
        x_host: x_host.as_ptr().cast_mut(),
        y_host: y_host.as_mut_ptr(),
        t_host: t_host.as_mut_ptr(),
        x: x.as_mut_ptr(),
        a: a.as_mut_ptr(),
        b: b.as_mut_ptr(),
        scale: scale.as_ptr(),
        w: w.as_ptr(),
        y: y.as_mut_ptr(),
    };
    // The plans, made once (a few attribute queries each), as a user makes them.
    let plans: Vec<PdlPlan> =
        BUCKETS.iter().map(|&b| user_step().plan(device, b * HIDDEN, 256, PdlMode::Auto)).collect::<Result<_>>()?;
    // The same kernels launched without PDL (the plain form over the full grid): tells what PDL
    // gives or costs in the eager step.
    let plain_plans: Vec<PdlPlan> =
        BUCKETS.iter().map(|&b| user_step().plan(device, b * HIDDEN, 256, PdlMode::Plain)).collect::<Result<_>>()?;
    let bucket = |batch: usize| -> Result<usize> {
        BUCKETS.iter().position(|&b| b == batch).ok_or(Error::invalid("decode", "batch is not a bucket"))
    };
    let plan = |batch: usize| -> Result<&PdlPlan> { Ok(&plans[bucket(batch)?]) };
    let plain_plan = |batch: usize| -> Result<&PdlPlan> { Ok(&plain_plans[bucket(batch)?]) };
    // The C++ side works on the same buffers: the same pinned pages and device memory, so that
    // the buffers are no difference between the sides.
    // SAFETY: the buffers hold what bl_decode_open asks for (max * HIDDEN floats, y: max, w:
    // HIDDEN) and outlive the handle: `cpp_side` is declared after them, so dropped (closed, its
    // graphs destroyed) before them; the handle is closed once, by `Cpp`'s drop.
    let handle = unsafe {
        cpp::bl_decode_open(
            HIDDEN as i32,
            max as i32,
            side.x_host,
            side.y_host,
            side.t_host,
            side.x,
            side.a,
            side.b,
            side.scale,
            side.w,
            side.y,
        )
    };
    if handle.is_null() {
        return Err(Error::invalid("decode", "the C++ side could not allocate its temporary"));
    }
    let cpp_side = Cpp(handle);
    let h = cpp_side.0;
    let default_pool = MemPool::device_default(device)?;
    let default_threshold = default_pool.release_threshold()?;
    s.synchronize()?;

    // One sample: STEPS steps, each timed alone; their median.
    let ordo_eager = |batch: usize, pdl: bool| -> Result<f64> {
        let plan = if pdl { plan(batch)? } else { plain_plan(batch)? };
        let mut us = Vec::with_capacity(STEPS);
        for _ in 0..STEPS {
            let t0 = Instant::now();
            ordo_step(s, batch, side, plan, None)?;
            s.synchronize()?;
            us.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        Ok(median(&us))
    };
    // norm: 0 in one block (the baseline), 1 in three operations through the temporary allocated
    // once (the form before ordo's one-block normalisation). pdl_grid: 0, the plain kernels (the
    // baseline); else the launches ordo's plan makes (the PDL form over that grid, the PDL
    // attribute on the second and third), by hand with cudaLaunchKernelEx.
    let cpp_eager = |batch: usize, norm: i32, pdl_grid: u32| -> Result<f64> {
        // SAFETY: the handle; `s` is the stream its buffers were made for.
        let us = unsafe { cpp::bl_decode_eager_us(h, s.as_raw(), batch as i32, STEPS as i32, norm, pdl_grid) };
        if us < 0.0 {
            return Err(Error::invalid("decode", "a CUDA call of the C++ eager step failed"));
        }
        Ok(us)
    };

    for batch in BATCHES {
        r.progress(&format!("decode step, batch {batch}: eager"));
        // Three times the rounds of the other rows: single runs of 15 rounds scattered by 5% each
        // way (0.945-1.064), where a round costs a millisecond.
        let pdl_grid = plan(batch).map(|p| if p.uses_pdl() { p.grid() } else { 0 })?;
        let m = interleave(
            rounds * 3,
            &mut [
                &mut || ordo_eager(batch, true),
                &mut || cpp_eager(batch, 0, 0),
                &mut || ordo_eager(batch, false),
                &mut || cpp_eager(batch, 1, 0),
                &mut || cpp_eager(batch, 0, pdl_grid),
            ],
        )?;
        check_same(
            batch,
            side,
            s,
            &mut || ordo_step(s, batch, side, plan(batch)?, None),
            // SAFETY: the handle; one step on `s`.
            &mut || unsafe {
                cpp::bl_decode_eager_us(h, s.as_raw(), batch as i32, 1, 0, 0);
            },
        )?;
        // The PDL variant computes the same (a refused launch leaves NaN in the outputs).
        check_same(
            batch,
            side,
            s,
            &mut || ordo_step(s, batch, side, plan(batch)?, None),
            // SAFETY: the handle; one step on `s`.
            &mut || unsafe {
                cpp::bl_decode_eager_us(h, s.as_raw(), batch as i32, 1, 0, pdl_grid);
            },
        )?;
        let pdl_note = if pdl_grid == 0 {
            "C++ with the launches ordo's PDL plan makes: the plan uses no PDL at this size".to_string()
        } else {
            format!(
                "C++ with the launches ordo's PDL plan makes (cudaLaunchKernelEx, PDL form over {pdl_grid} blocks, the attribute on kernels 2 and 3): {:.1} us",
                m[4]
            )
        };
        r.add(
            "decode",
            format!("decode step, batch {batch}, eager: ordo vs C++ (y normalised in one block)"),
            "us",
            m[0],
            Some(m[1]),
            format!(
                "target at most 1.03x; ordo without PDL (the plain form, full grid): {:.1} us; {pdl_note}; C++ normalising in three operations through a temporary allocated once: {:.1} us",
                m[2], m[3]
            ),
        );
    }

    // The graph cache against graphs captured by hand, one bucket a batch. In this group a graph
    // kept one replay time for a whole measurement while another instantiation of the same work
    // sat at another, microseconds away (BENCHMARKS.md, "The decode step after the one-block
    // normalisation"; cause not found: the plain C++ experiment graph_instances.cu did not show
    // it), so each side's graphs are captured and instantiated afresh in each of EPOCHS epochs;
    // a figure is the median over the epochs of each epoch's interleaved median.
    r.progress("decode step: graph replay");
    let mut medians = vec![[const { Vec::new() }; 4]; BATCHES.len()];
    // The C++ side's capture of every bucket (`bl_decode_capture_us` with `mode`), its previous
    // graphs destroyed first: its microseconds, and the capture / instantiate / upload parts.
    let cpp_capture = |mode: i32| -> (f64, [f64; 3]) {
        let buckets = BUCKETS.map(|b| b as i32);
        let mut parts = [0f64; 3];
        // SAFETY: the handle; `buckets` holds BUCKETS.len() ints, `parts` three doubles.
        let us = unsafe {
            cpp::bl_decode_capture_us(h, s.as_raw(), buckets.as_ptr(), BUCKETS.len() as i32, mode, parts.as_mut_ptr())
        };
        (us, parts)
    };
    for epoch in 0..EPOCHS {
        // Which side instantiates first alternates between epochs: the levels above struck one
        // side's graphs more often than the other's when ordo's were always made first. The C++
        // graphs are uploaded (mode 1), as ordo's cache's first replay uploads its graphs.
        if epoch % 2 == 1 {
            cpp_capture(1);
        }
        // SAFETY (the caches): the buffers `side` points to are declared before the caches and
        // outlive them (dropped at the end of the epoch, after their replays are synchronised);
        // nothing else uses `s` while a cache captures on it.
        let mut cache = unsafe {
            GraphCache::new(BUCKETS.to_vec(), Overflow::Error, |cs, batch| {
                ordo_step(cs, batch, side, plan(batch)?, None)
            })
        }?;
        cache.capture_all(s)?;
        // Two more caches, to tell where a difference in replay comes from: the kernels without
        // PDL (the plain form over the full grid), and the graphs uploaded at capture.
        // SAFETY: as for `cache`.
        let mut plain_cache = unsafe {
            GraphCache::new(BUCKETS.to_vec(), Overflow::Error, |cs, batch| {
                ordo_step(cs, batch, side, plain_plan(batch)?, None)
            })
        }?;
        plain_cache.capture_all(s)?;
        let uploaded = CacheOptions { upload: true, ..CacheOptions::default() };
        // SAFETY: as for `cache`.
        let mut uploaded_cache = unsafe {
            GraphCache::with_options(BUCKETS.to_vec(), Overflow::Error, uploaded, |cs, batch| {
                ordo_step(cs, batch, side, plan(batch)?, None)
            })
        }?;
        uploaded_cache.capture_all(s)?;
        if epoch % 2 == 0 {
            cpp_capture(1);
        }
        for (k, batch) in BATCHES.into_iter().enumerate() {
            let m = interleave(
                rounds,
                &mut [
                    &mut || replay(&mut cache, s, batch),
                    &mut || Ok(unsafe { cpp::bl_decode_replay_us(h, s.as_raw(), batch as i32, STEPS as i32) }),
                    &mut || replay(&mut plain_cache, s, batch),
                    &mut || replay(&mut uploaded_cache, s, batch),
                ],
            )?;
            check_same(
                batch,
                side,
                s,
                &mut || cache.run(s, batch).map(|_| ()),
                // SAFETY: the handle's graphs of this epoch; one replay on `s`.
                &mut || unsafe {
                    cpp::bl_decode_replay_us(h, s.as_raw(), batch as i32, 1);
                },
            )?;
            for (into, v) in medians[k].iter_mut().zip(m) {
                into.push(v);
            }
        }
        s.synchronize()?;
    }
    for (k, batch) in BATCHES.into_iter().enumerate() {
        let [o, c, p, u] = &medians[k];
        let range = |v: &[f64]| {
            let (lo, hi) = v.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            format!("{lo:.1}-{hi:.1}")
        };
        r.add(
            "decode",
            format!("decode step, batch {batch}, graph replay: GraphCache::run vs C++ cudaGraphLaunch"),
            "us",
            median(o),
            Some(median(c)),
            format!(
                "target at most 1.00x; each replay synchronised; medians over {EPOCHS} instantiations, their range ordo {} us, C++ {} us; ordo without PDL: {:.1} us; ordo's graphs uploaded at capture: {:.1} us",
                range(o),
                range(c),
                median(p),
                median(u)
            ),
        );
    }

    // The capture of every bucket: ordo's cache (new, capture_all, synchronise) against the loop a
    // C++ engineer writes (capture, instantiate), and both with uploads (ordo's
    // `CacheOptions::upload`, C++'s cudaGraphUpload), and the C++ loop normalising through a
    // temporary allocated inside the step, to tell where a difference comes from. `first` also
    // times the first replay of every bucket after the capture (each synchronised): what an
    // upload moves out of the first replays.
    r.progress("decode step: capture of every bucket");
    let ordo_capture_all = |upload: bool, first: Option<&mut f64>| -> Result<f64> {
        let t0 = Instant::now();
        let options = CacheOptions { upload, ..CacheOptions::default() };
        // SAFETY: as for the cache above; dropped before the buffers, after a synchronise.
        let mut cache = unsafe {
            GraphCache::with_options(BUCKETS.to_vec(), Overflow::Error, options, |cs, batch| {
                ordo_step(cs, batch, side, plan(batch)?, None)
            })
        }?;
        cache.capture_all(s)?;
        s.synchronize()?;
        let us = t0.elapsed().as_secs_f64() * 1e6;
        if let Some(first) = first {
            let t1 = Instant::now();
            for &batch in &BUCKETS {
                cache.run(s, batch)?;
                s.synchronize()?;
            }
            *first = t1.elapsed().as_secs_f64() * 1e6;
        }
        drop(cache);
        Ok(us)
    };
    let cpp_capture_all = |mode: i32| -> Result<f64> { Ok(cpp_capture(mode).0) };
    // The same through the C ABI, as a C++ program makes its cache: create (default options, or
    // `upload` 1), capture_all, synchronise; destroyed after.
    let c_body = CStep { side, plans: &plans };
    let c_capture_all = |upload: i32| -> Result<f64> {
        let failed = |call: &'static str| Error::invalid(call, "the C ABI's graph cache failed");
        let t0 = Instant::now();
        let options = OrdoGraphCacheOptions {
            size: core::mem::size_of::<OrdoGraphCacheOptions>(),
            capture_mode: ORDO_CAPTURE_THREAD_LOCAL,
            warmup: 0,
            overflow_eager: 0,
            instantiate_flags: 0,
            user_free: None,
            upload,
        };
        let user = (&c_body as *const CStep<'_>).cast_mut().cast::<c_void>();
        let mut cache = core::ptr::null_mut();
        // SAFETY: BUCKETS.len() buckets; `c_body` and the buffers it points to outlive the cache
        // (destroyed below, after a synchronise); `cache` is writable.
        let st = unsafe {
            ordo_graph_cache_create_with_options(
                BUCKETS.as_ptr(),
                BUCKETS.len(),
                &options,
                Some(c_step),
                user,
                &mut cache,
            )
        };
        if st != ORDO_SUCCESS {
            return Err(failed("ordo_graph_cache_create_with_options"));
        }
        // SAFETY: a live cache and stream; nothing else uses `s` while the cache captures.
        let st = unsafe { ordo_graph_cache_capture_all(cache, s.as_raw()) };
        let synced = s.synchronize();
        let us = t0.elapsed().as_secs_f64() * 1e6;
        ordo_graph_cache_destroy(cache);
        synced?;
        if st != ORDO_SUCCESS {
            return Err(failed("ordo_graph_cache_capture_all"));
        }
        Ok(us)
    };
    let m = interleave(
        rounds,
        &mut [
            &mut || ordo_capture_all(false, None),
            &mut || cpp_capture_all(0),
            &mut || ordo_capture_all(true, None),
            &mut || cpp_capture_all(1),
            &mut || cpp_capture_all(3),
            &mut || c_capture_all(0),
            &mut || c_capture_all(1),
        ],
    )?;
    // The first replays of the seven buckets after a capture, without and with uploads (medians
    // of `rounds` captures each).
    let (mut first_plain, mut first_uploaded) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (upload, into) in [(false, &mut first_plain), (true, &mut first_uploaded)] {
            let mut us = 0.0;
            ordo_capture_all(upload, Some(&mut us))?;
            into.push(us);
        }
    }
    // Where the time goes: ordo's steps of the cache, one by one (ordo's capture, instantiation,
    // upload), against the C++ loop's, over the same buckets, summed; medians of `rounds` passes.
    let (mut ordo_parts, mut cpp_parts) = (vec![Vec::new(); 3], vec![Vec::new(); 3]);
    for _ in 0..rounds {
        let mut sum = [0f64; 3];
        for &batch in BUCKETS.iter().rev() {
            let t0 = Instant::now();
            // SAFETY: as for the cache above; the executable graph is dropped before the buffers.
            let graph =
                unsafe { capture(s, CaptureMode::Global, |cs| ordo_step(cs, batch, side, plan(batch)?, None)) }?;
            let t1 = Instant::now();
            let exec = graph.instantiate(InstantiateFlags::empty())?;
            let t2 = Instant::now();
            exec.upload(s)?;
            let t3 = Instant::now();
            for (k, (from, to)) in [(t0, t1), (t1, t2), (t2, t3)].into_iter().enumerate() {
                sum[k] += (to - from).as_secs_f64() * 1e6;
            }
            s.synchronize()?;
        }
        let (_, cpp_sum) = cpp_capture(3);
        for k in 0..3 {
            ordo_parts[k].push(sum[k]);
            cpp_parts[k].push(cpp_sum[k]);
        }
    }
    let med = |v: &mut Vec<Vec<f64>>| [median(&v[0]), median(&v[1]), median(&v[2])];
    let (op, cp) = (med(&mut ordo_parts), med(&mut cpp_parts));
    r.add(
        "decode",
        format!("capture of {} buckets (1 to 64): GraphCache::new + capture_all vs C++ loop (capture, instantiate)", BUCKETS.len()),
        "us",
        m[0],
        Some(m[1]),
        format!(
            "target at most 1.2x; with uploads (CacheOptions::upload; cudaGraphUpload): ordo {:.0} us, C++ {:.0} us; C++ + upload + a temporary allocated in the step: {:.0} us; first replay of the 7 buckets after the capture, ordo without / with uploads: {:.0} / {:.0} us; capture / instantiate / upload, ordo {:.0} / {:.0} / {:.0} us, C++ (upload, temporary in the step) {:.0} / {:.0} / {:.0} us",
            m[2], m[3], m[4], median(&first_plain), median(&first_uploaded), op[0], op[1], op[2], cp[0], cp[1], cp[2]
        ),
    );
    r.add(
        "decode",
        format!("capture of {} buckets (1 to 64), C ABI: ordo_graph_cache_create_with_options + capture_all vs C++ loop (capture, instantiate)", BUCKETS.len()),
        "us",
        m[5],
        Some(m[1]),
        format!(
            "target at most 1.2x; the default options, which upload no graph at capture (as GraphCache's); with upload = 1: {:.0} us (C++ loop with cudaGraphUpload: {:.0} us)",
            m[6], m[3]
        ),
    );
    s.synchronize()?;
    if default_pool.release_threshold()? != default_threshold {
        return Err(Error::invalid("decode", "the default pool's release threshold changed during the group"));
    }
    Ok(())
}

/// [`STEPS`] replays of `cache`'s graph for `batch` on `s`, each timed alone from the run to the
/// synchronise's return; their median, microseconds.
fn replay<F: FnMut(StreamRef<'_>, usize) -> Result<()>>(
    cache: &mut GraphCache<F>,
    s: StreamRef<'_>,
    batch: usize,
) -> Result<f64> {
    let mut us = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let t0 = Instant::now();
        cache.run(s, batch)?;
        s.synchronize()?;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(&us))
}

/// Both sides compute the same step at `batch`: `ordo` (one step of ordo's, eager or replayed)
/// then `cpp` (the same of the C++ side's), each on the shared buffers, the pinned outputs filled
/// with NaN before each and read after its synchronise: the hidden states bit for bit (the same
/// kernels in the same order), y within 1e-5, and not all zero.
fn check_same(
    batch: usize,
    p: Side,
    s: StreamRef<'_>,
    ordo: &mut dyn FnMut() -> Result<()>,
    cpp: &mut dyn FnMut(),
) -> Result<()> {
    let n = batch * HIDDEN;
    let run = |f: &mut dyn FnMut() -> Result<()>| -> Result<(Vec<f32>, Vec<f32>)> {
        s.synchronize()?;
        // SAFETY: the pinned outputs hold at least `batch` and `n` floats (the largest bucket's),
        // and no work on them is pending (synchronised above; every step runs on `s`).
        unsafe {
            core::slice::from_raw_parts_mut(p.y_host, batch).fill(f32::NAN);
            core::slice::from_raw_parts_mut(p.t_host, n).fill(f32::NAN);
        }
        f()?;
        s.synchronize()?;
        // SAFETY: as above, after the step's synchronise.
        let (y, t) =
            unsafe { (core::slice::from_raw_parts(p.y_host, batch), core::slice::from_raw_parts(p.t_host, n)) };
        Ok((y.to_vec(), t.to_vec()))
    };
    let (oy, ot) = run(ordo)?;
    let (y, t) = run(&mut || {
        cpp();
        Ok(())
    })?;
    let y_close = oy.iter().zip(&y).all(|(o, c)| (o - c).abs() <= 1e-5 * c.abs().max(1e-3));
    if ot != t || !y_close || y.iter().all(|&v| v == 0.0) || t.iter().any(|v| v.is_nan()) {
        return Err(Error::invalid("decode", "ordo's step and the C++ step disagree (or computed zeros)"));
    }
    Ok(())
}
