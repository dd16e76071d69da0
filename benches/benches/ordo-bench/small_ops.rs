//! Events, stream waits and queries; stream-ordered allocation; host-function latency.

use crate::{interleave, sample_rounds, Report};
use ordo_benches::cpp;
use ordo_cuda_core::host_fn::launch_host_fn;
use ordo_cuda_core::*;
use ordo_cuda_measure::{stats, Sample};
use std::time::Instant;

pub(crate) fn small_ops_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("events, waits, queries, allocation, host functions");
    let a = Stream::new()?;
    let b = Stream::new()?;
    let e = Event::new()?;
    const ITERS: usize = 10_000;
    let per_op = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        let t0 = Instant::now();
        for _ in 0..ITERS {
            f()?;
        }
        Ok(t0.elapsed().as_secs_f64() * 1e6 / ITERS as f64)
    };
    let cpp_op = |op: i32| {
        Ok::<f64, Error>(unsafe { cpp::bl_event_ops_us(a.as_raw(), b.as_raw(), e.as_raw(), op, ITERS as i32) })
    };
    let m = interleave(
        rounds,
        &mut [
            &mut || per_op(&mut || e.record(a.as_stream())),
            &mut || cpp_op(0),
            &mut || {
                per_op(&mut || {
                    e.record(a.as_stream())?;
                    b.wait_event(&e)
                })
            },
            &mut || cpp_op(1),
            &mut || per_op(&mut || e.query().map(|_| ())),
            &mut || cpp_op(2),
            &mut || per_op(&mut || a.query().map(|_| ())),
            &mut || cpp_op(3),
        ],
    )?;
    a.synchronize()?;
    b.synchronize()?;
    r.add("events", "cudaEventRecord", "us", m[0], Some(m[1]), "reference 0.14 us");
    r.add("events", "record + cudaStreamWaitEvent", "us", m[2], Some(m[3]), "reference 0.29 us");
    r.add("events", "cudaEventQuery", "us", m[4], Some(m[5]), "reference 0.15 us");
    r.add("events", "cudaStreamQuery", "us", m[6], Some(m[7]), "");

    // The driver's forms of the same calls (cuEventRecord, cuStreamWaitEvent), through the
    // runtime's entry-point query: whether a driver path for them would pay, as it is tried for
    // launches (Kernel::for_driver).
    type RecordFn = unsafe extern "C" fn(sys::cudaEvent_t, sys::cudaStream_t) -> i32;
    type WaitFn = unsafe extern "C" fn(sys::cudaStream_t, sys::cudaEvent_t, u32) -> i32;
    // SAFETY: the signatures of cuEventRecord and cuStreamWaitEvent in cuda.h (CUDA 12.0).
    let (record, wait) = unsafe {
        (
            core::mem::transmute::<*mut core::ffi::c_void, RecordFn>(driver_entry(c"cuEventRecord")?),
            core::mem::transmute::<*mut core::ffi::c_void, WaitFn>(driver_entry(c"cuStreamWaitEvent")?),
        )
    };
    let driver_status = |code: i32, call: &'static str| {
        if code == 0 {
            Ok(())
        } else {
            Err(Error::invalid(call, "the driver call failed"))
        }
    };
    let m = interleave(
        rounds,
        &mut [
            // SAFETY: a live event and stream.
            &mut || per_op(&mut || driver_status(unsafe { record(e.as_raw(), a.as_raw()) }, "cuEventRecord")),
            &mut || cpp_op(0),
            &mut || {
                per_op(&mut || {
                    // SAFETY: as above.
                    driver_status(unsafe { record(e.as_raw(), a.as_raw()) }, "cuEventRecord")?;
                    // SAFETY: as above.
                    driver_status(unsafe { wait(b.as_raw(), e.as_raw(), 0) }, "cuStreamWaitEvent")
                })
            },
            &mut || cpp_op(1),
        ],
    )?;
    a.synchronize()?;
    b.synchronize()?;
    r.add("events", "cuEventRecord (driver entry point) vs cudaEventRecord", "us", m[0], Some(m[1]), "");
    r.add("events", "record + wait through the driver vs the runtime", "us", m[2], Some(m[3]), "");

    let s = a.as_stream();
    let pool = MemPool::device_default(Device::current()?)?;
    pool.set_release_threshold(u64::MAX)?;
    let alloc = interleave(
        rounds * 20,
        &mut [
            &mut || {
                let t0 = Instant::now();
                let buf = DeviceBuffer::<u8>::alloc_async(1 << 20, s)?;
                buf.free_async()?;
                Ok(t0.elapsed().as_secs_f64() * 1e6)
            },
            &mut || {
                let t0 = Instant::now();
                let mut p = core::ptr::null_mut();
                // SAFETY: plain allocation and free, the baseline being measured.
                unsafe {
                    if sys::cudaMalloc(&mut p, 1 << 20) == sys::cudaError::cudaSuccess {
                        sys::cudaFree(p);
                    }
                }
                Ok(t0.elapsed().as_secs_f64() * 1e6)
            },
        ],
    )?;
    s.synchronize()?;
    r.add("alloc", "1 MiB cudaMallocAsync+cudaFreeAsync vs cudaMalloc+cudaFree", "us", alloc[0], Some(alloc[1]), "");

    let (tx, rx) = std::sync::mpsc::channel::<f64>();
    let series = sample_rounds(
        rounds * 20,
        &mut [&mut || {
            let tx = tx.clone();
            let t0 = Instant::now();
            // SAFETY: the closure only sends on a channel: no CUDA call, nor in its drop.
            unsafe {
                launch_host_fn(s, move || {
                    let _ = tx.send(t0.elapsed().as_secs_f64() * 1e6);
                })?
            };
            let us = rx
                .recv_timeout(std::time::Duration::from_secs(5))
                .map_err(|_| Error::invalid("ordo-bench hostfn", "the host function did not run within 5 s"))?;
            Ok(Sample::duration(us))
        }],
    )?;
    let lat = series.first().and_then(|s| s.values.first().cloned()).unwrap_or_default();
    r.add(
        "hostfn",
        "cudaLaunchHostFunc enqueue to running (median)",
        "us",
        stats::percentile(&lat, 50),
        None,
        format!("p99 {:.1} us", stats::percentile(&lat, 99)),
    );
    Ok(())
}

/// The address of the driver function `name` (CUDA 12.0 form), through the runtime.
fn driver_entry(name: &core::ffi::CStr) -> Result<*mut core::ffi::c_void> {
    let mut p = core::ptr::null_mut();
    let mut status = sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess;
    // SAFETY: a NUL-terminated name; `p` and `status` writable.
    let code = unsafe {
        sys::cudaGetDriverEntryPointByVersion(
            name.as_ptr(),
            &mut p,
            12000,
            sys::cudaGetDriverEntryPointFlags::cudaEnableDefault.0 as u64,
            &mut status,
        )
    };
    error::check(code, "cudaGetDriverEntryPointByVersion")?;
    if p.is_null() || status != sys::cudaDriverEntryPointQueryResult::cudaDriverEntryPointSuccess {
        return Err(Error::invalid("cudaGetDriverEntryPointByVersion", "no such driver function"));
    }
    Ok(p)
}
