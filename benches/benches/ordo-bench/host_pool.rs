//! Stream-ordered pinned host memory: a host pool's allocate + free on a stream against
//! `cudaHostAlloc` + `cudaFreeHost`, and copies from and to its memory against `cudaHostAlloc`
//! memory (C++ copies), the pool with and without the device's access.

use crate::{interleave, median};
use crate::{ms_between, Report};
use ordo_benches::cpp;
use ordo_cuda_core::memory::{copy, HostPool, HostPoolBuffer, HostPoolOptions};
use ordo_cuda_core::*;
use std::time::Instant;

pub(crate) fn host_pool_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("host pools");
    let device = Device::current()?;
    let pool = match HostPool::new(device) {
        Ok(pool) => pool,
        Err(e) => {
            r.add("hostpool", "host-located pool", "us", f64::NAN, None, format!("not available: {e}"));
            return Ok(());
        }
    };
    let stream = Stream::new()?;
    let s = stream.as_stream();
    for (bytes, pool_iters, host_iters) in [(1usize << 20, 200usize, 20usize), (64 << 20, 50, 3)] {
        // Warm: the pool grows once (the first allocation pins its memory).
        let t0 = Instant::now();
        HostPoolBuffer::<u8>::alloc_async(bytes, &pool, s)?.free_async()?;
        stream.synchronize()?;
        let first_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut ordo = Vec::new();
        let mut host = Vec::new();
        for _ in 0..rounds.min(5) {
            let t0 = Instant::now();
            for _ in 0..pool_iters {
                HostPoolBuffer::<u8>::alloc_async(bytes, &pool, s)?.free_async()?;
            }
            stream.synchronize()?;
            ordo.push(t0.elapsed().as_secs_f64() * 1e6 / pool_iters as f64);
            let t0 = Instant::now();
            for _ in 0..host_iters {
                let mut p: *mut core::ffi::c_void = core::ptr::null_mut();
                // SAFETY: `p` is writable; freed right after.
                error::check(unsafe { sys::cudaHostAlloc(&mut p, bytes, 0) }, "cudaHostAlloc")?;
                // SAFETY: the allocation just made.
                error::check(unsafe { sys::cudaFreeHost(p) }, "cudaFreeHost")?;
            }
            host.push(t0.elapsed().as_secs_f64() * 1e6 / host_iters as f64);
        }
        r.add(
            "hostpool",
            format!("allocate + free {} MiB on a stream vs cudaHostAlloc + cudaFreeHost", bytes >> 20),
            "us",
            median(&ordo),
            Some(median(&host)),
            format!("pool warm (first allocation {first_ms:.1} ms); to the stream's synchronise"),
        );
    }

    const N: usize = 16 << 20; // 64 MiB of u32
    let bytes = (N * 4) as f64;
    let gbps = |ms: f64| bytes / ms / 1e6;
    let bare =
        HostPool::with_options(device, HostPoolOptions { device_access: PoolAccess::None, ..Default::default() })?;
    let mut from_pool = HostPoolBuffer::<u32>::zeroed_async(N, &pool, s)?;
    // The bare pool grants the device nothing, so the device cannot zero it: the host does.
    let mut from_bare = HostPoolBuffer::<u32>::alloc_async(N, &bare, s)?;
    let mut pinned = PinnedBuffer::<u32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev = DeviceBuffer::<u32>::zeroed_async(N, s)?;
    stream.synchronize()?;
    from_bare.host_mut_blocking()?.fill(0);
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let (pp, bp, hp, dp) = (
        from_pool.pinned_mut().as_mut_ptr(),
        from_bare.pinned_mut().as_mut_ptr(),
        pinned.as_mut_ptr(),
        dev.as_mut_ptr(),
    );
    let m = interleave(
        rounds,
        &mut [
            // SAFETY (every variant): the buffers outlive the copies (each is timed to its end).
            &mut || {
                ms_between(s, &start, &end, || unsafe {
                    copy::h2d_async(DeviceSliceMut::from_raw_parts(dp, N), PinnedSlice::from_raw_parts(pp, N), s)
                })
            },
            &mut || Ok(unsafe { cpp::bl_copy_ms(dp.cast(), hp.cast_const().cast(), N * 4, 1, s.as_raw()) }),
            &mut || {
                ms_between(s, &start, &end, || unsafe {
                    copy::d2h_async(PinnedSliceMut::from_raw_parts(pp, N), DeviceSlice::from_raw_parts(dp, N), s)
                })
            },
            &mut || Ok(unsafe { cpp::bl_copy_ms(hp.cast(), dp.cast_const().cast(), N * 4, 2, s.as_raw()) }),
            &mut || {
                ms_between(s, &start, &end, || unsafe {
                    copy::h2d_async(DeviceSliceMut::from_raw_parts(dp, N), PinnedSlice::from_raw_parts(bp, N), s)
                })
            },
        ],
    )?;
    r.add(
        "hostpool",
        "H2D 64 MiB from a host pool vs cudaHostAlloc memory",
        "GB/s",
        gbps(m[0]),
        Some(gbps(m[1])),
        "device granted read-write access",
    );
    r.add("hostpool", "D2H 64 MiB into a host pool vs cudaHostAlloc memory", "GB/s", gbps(m[2]), Some(gbps(m[3])), "");
    r.add(
        "hostpool",
        "H2D 64 MiB from a host pool without the device's access vs cudaHostAlloc",
        "GB/s",
        gbps(m[4]),
        Some(gbps(m[1])),
        "CUDA's default for host pools (measured 8.4 GB/s before)",
    );
    drop((from_pool, from_bare, dev));
    stream.synchronize()
}
