//! Several GPUs (only with two or more): peer copies of stream-ordered pool memory once ordo granted
//! the pools to each other, against `cudaMemcpyPeerAsync` of `cudaMalloc` memory in plain C++; and
//! NCCL all-reduce bus bandwidth (nccl-tests' definition, busbw = algbw x 2(n-1)/n) from 8 B to
//! 1 GiB, ordo's call against the same NCCL call made from C++, interleaved.

use crate::{interleave, Report};
use ordo_benches::cpp;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use ordo_cuda_libs::nccl::bandwidth::{bandwidth_gbps, Collective};
use ordo_cuda_libs::nccl::Communicators;
use std::time::Instant;

pub(crate) fn multi_group(r: &mut Report, rounds: usize) -> Result<()> {
    let count = device::count()?;
    if count < 2 {
        r.add("multi", "several GPUs: skipped", "", f64::NAN, None, format!("{count} GPU here"));
        return Ok(());
    }
    let (d0, d1) = (Device::new(0)?, Device::new(1)?);
    peer_copies(r, rounds, d0, d1)?;
    all_reduce(r, rounds, d0, d1)
}

fn peer_copies(r: &mut Report, rounds: usize, d0: Device, d1: Device) -> Result<()> {
    r.progress("peer copies");
    const N: usize = 64 << 20; // 256 MiB of f32
    let bytes = N * 4;
    d0.enable_peer_access_with_pools(d1)?;
    let s0 = d0.with_current(Stream::new)?;
    let s1 = d1.with_current(Stream::new)?;
    let (start, end) = d1.with_current(|| Ok((TimingEvent::new()?, TimingEvent::new()?)))?;
    let a0 = d0.with_current(|| DeviceBuffer::<f32>::zeroed_async(N, s0.as_stream()))?;
    let mut b0 = d0.with_current(|| DeviceBuffer::<f32>::zeroed_async(N, s0.as_stream()))?;
    let a1 = d1.with_current(|| DeviceBuffer::<f32>::zeroed_async(N, s1.as_stream()))?;
    let mut b1 = d1.with_current(|| DeviceBuffer::<f32>::zeroed_async(N, s1.as_stream()))?;
    s0.synchronize()?;
    s1.synchronize()?;
    // The C++ user's memory: cudaMalloc on each device.
    // SAFETY: plain allocations, freed below.
    let (ca0, cb0, ca1, cb1) = unsafe {
        (
            cpp::bl_device_alloc(0, bytes),
            cpp::bl_device_alloc(0, bytes),
            cpp::bl_device_alloc(1, bytes),
            cpp::bl_device_alloc(1, bytes),
        )
    };
    if [ca0, cb0, ca1, cb1].iter().any(|p| p.is_null()) {
        return Err(Error::invalid("ordo-bench multi", "cudaMalloc of the C++ baseline's buffers failed"));
    }
    let (pa0, pb0, pa1, pb1) = (a0.as_ptr(), b0.as_mut_ptr(), a1.as_ptr(), b1.as_mut_ptr());
    let (r0, r1) = (s0.as_stream(), s1.as_stream());
    let ordo_one = || -> Result<f64> {
        start.record(r1)?;
        // SAFETY: both buffers hold N floats and outlive the copy, which is waited for.
        unsafe {
            copy::peer_async(DeviceSliceMut::from_raw_parts(pb1, N), d1, DeviceSlice::from_raw_parts(pa0, N), d0, r1)?
        };
        end.record(r1)?;
        end.synchronize()?;
        Ok(f64::from(end.elapsed_ms_since(&start)?))
    };
    let ordo_both = || -> Result<f64> {
        r0.synchronize()?;
        r1.synchronize()?;
        let t0 = Instant::now();
        // SAFETY: as above, both directions; both streams are waited for.
        unsafe {
            copy::peer_async(DeviceSliceMut::from_raw_parts(pb1, N), d1, DeviceSlice::from_raw_parts(pa0, N), d0, r1)?;
            copy::peer_async(DeviceSliceMut::from_raw_parts(pb0, N), d0, DeviceSlice::from_raw_parts(pa1, N), d1, r0)?;
        }
        r0.synchronize()?;
        r1.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    let m = interleave(
        rounds,
        &mut [
            &mut || ordo_one(),
            // SAFETY: the C++ buffers hold `bytes` each; the call waits for its copy.
            &mut || Ok(unsafe { cpp::bl_peer_copy_ms(cb1, 1, ca0, 0, bytes, r1.as_raw()) }),
            &mut || ordo_both(),
            // SAFETY: as above.
            &mut || Ok(unsafe { cpp::bl_peer_both_ms(cb0, ca0, cb1, ca1, bytes, r0.as_raw(), r1.as_raw()) }),
        ],
    )?;
    let gbps = |ms: f64| bytes as f64 / ms / 1e6;
    r.add(
        "multi",
        "peer copy 256 MiB device 0 -> 1: ordo (pool memory) vs C++ cudaMemcpyPeerAsync (cudaMalloc)",
        "GB/s",
        gbps(m[0]),
        Some(gbps(m[1])),
        "GPU time from events; reference 387 GB/s (plain C++, NV18); target at least 0.95x",
    );
    r.add(
        "multi",
        "peer copies 256 MiB both directions at once, total: ordo vs C++",
        "GB/s",
        2.0 * gbps(m[2]),
        Some(2.0 * gbps(m[3])),
        "host time, enqueue to both streams done",
    );
    // SAFETY: allocated above, no longer in use (every call waited for its copies).
    unsafe {
        cpp::bl_device_free(0, ca0);
        cpp::bl_device_free(0, cb0);
        cpp::bl_device_free(1, ca1);
        cpp::bl_device_free(1, cb1);
    }
    drop((a0, b0));
    drop((a1, b1));
    s0.synchronize()?;
    s1.synchronize()
}

fn all_reduce(r: &mut Report, rounds: usize, d0: Device, d1: Device) -> Result<()> {
    r.progress("NCCL all-reduce");
    let devices = [d0, d1];
    // The C++ baseline's communicators are made first, ordo's second. Two sets made by the same
    // `ncclCommInitAll` differed by up to 3% in latency on one host (the same C++ calls on either
    // set, measured 2026-11-30), which is neither caller's cost: so the ratio is taken against the
    // same C++ calls on ordo's communicators, and the C++ calls on their own set are shown too.
    // SAFETY: NCCL communicators for devices 0 and 1, destroyed below.
    let cpp_comms = unsafe { cpp::bl_nccl_open(2) };
    if cpp_comms.is_null() {
        r.add("multi", "NCCL all-reduce: skipped", "", f64::NAN, None, "the C++ baseline could not open NCCL");
        return Ok(());
    }
    let mut comms = match Communicators::new(&devices) {
        Ok(c) => c,
        Err(e) => {
            r.add("multi", "NCCL all-reduce: skipped", "", f64::NAN, None, format!("{e}"));
            // SAFETY: opened above, never used.
            unsafe { cpp::bl_nccl_close(cpp_comms) };
            return Ok(());
        }
    };
    const MAX: usize = 1 << 28; // floats: 1 GiB
    let s0 = d0.with_current(Stream::new)?;
    let s1 = d1.with_current(Stream::new)?;
    let streams = [s0.as_stream(), s1.as_stream()];
    let mut send = Vec::new();
    let mut recv = Vec::new();
    for (d, s) in devices.iter().zip(streams) {
        send.push(d.with_current(|| DeviceBuffer::<f32>::zeroed_async(MAX, s))?);
        recv.push(d.with_current(|| DeviceBuffer::<f32>::zeroed_async(MAX, s))?);
    }
    for s in streams {
        s.synchronize()?;
    }
    let send_ptrs: Vec<*mut f32> = send.iter().map(|b| b.as_ptr().cast_mut()).collect();
    let recv_ptrs: Vec<*mut f32> = recv.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let raw_streams: Vec<_> = streams.iter().map(|s| s.as_raw()).collect();
    let ordo_raw_comms: Vec<*mut core::ffi::c_void> = comms.communicators().iter().map(|c| c.as_raw()).collect();
    let mut bytes = 8usize;
    while bytes <= MAX * 4 {
        let count = bytes / 4;
        // Latency-bound sizes (about 13 us a call on two H200s) scattered 0.95-1.01x between runs
        // at 200 calls a sample and 7 samples: more of both there.
        let latency_bound = bytes <= 64 << 10;
        let iters = if latency_bound {
            1000
        } else if bytes <= 1 << 20 {
            200
        } else if bytes <= 64 << 20 {
            20
        } else {
            3
        };
        let mut ordo_run = || -> Result<f64> {
            for s in streams {
                s.synchronize()?;
            }
            let t0 = Instant::now();
            for _ in 0..iters {
                // SAFETY: every buffer holds MAX >= count floats of its device and outlives the
                // collectives, which are waited for below.
                unsafe {
                    let sends = [
                        DeviceSlice::from_raw_parts(send_ptrs[0].cast_const(), count),
                        DeviceSlice::from_raw_parts(send_ptrs[1].cast_const(), count),
                    ];
                    let mut recvs = [
                        DeviceSliceMut::from_raw_parts(recv_ptrs[0], count),
                        DeviceSliceMut::from_raw_parts(recv_ptrs[1], count),
                    ];
                    comms.all_reduce_sum_f32(&sends, &mut recvs, &streams)?;
                }
            }
            for s in streams {
                s.synchronize()?;
            }
            Ok(t0.elapsed().as_secs_f64() * 1e6 / iters as f64)
        };
        // SAFETY: the same buffers and streams; the call waits for its collectives.
        let cpp_run = || unsafe {
            cpp::bl_nccl_all_reduce_us(
                cpp_comms,
                send_ptrs.as_ptr(),
                recv_ptrs.as_ptr(),
                count,
                raw_streams.as_ptr(),
                iters,
            )
        };
        // The baseline: the same C++ calls on ordo's communicators. Beside it, the C++ calls on their
        // own communicators, and at the latency-bound sizes those twice (two identical variants:
        // the noise floor).
        // SAFETY: ordo's communicators, live for the call, used by this thread only.
        let cpp_on_ordo = || unsafe {
            cpp::bl_nccl_all_reduce_on_us(
                cpp_comms,
                ordo_raw_comms.as_ptr(),
                send_ptrs.as_ptr(),
                recv_ptrs.as_ptr(),
                count,
                raw_streams.as_ptr(),
                iters,
            )
        };
        let (mut cpp_same, mut cpp_own, mut cpp_own_again) = (|| Ok(cpp_on_ordo()), || Ok(cpp_run()), || Ok(cpp_run()));
        let m = if latency_bound {
            interleave(rounds.max(15), &mut [&mut ordo_run, &mut cpp_same, &mut cpp_own, &mut cpp_own_again])?
        } else {
            interleave(rounds.min(7), &mut [&mut ordo_run, &mut cpp_same, &mut cpp_own])?
        };
        let bus = |us: f64| bandwidth_gbps(Collective::AllReduce, bytes as u64, us / 1e6, 2).1;
        let noise = match m.get(3) {
            Some(again) => format!("; C++ on its own set against itself {:.3}x", bus(*again) / bus(m[2])),
            None => String::new(),
        };
        r.add(
            "multi",
            format!("NCCL all-reduce f32 sum, {bytes} B a rank, 2 ranks: bus bandwidth, ordo vs C++ on the same communicators"),
            "GB/s",
            bus(m[0]),
            Some(bus(m[1])),
            format!(
                "{:.2} vs {:.2} us; target at least 0.98x; C++ on its own communicators {:.2} us (ordo {:.3}x it){noise}",
                m[0],
                m[1],
                m[2],
                bus(m[0]) / bus(m[2])
            ),
        );
        bytes *= 8;
    }
    // An all-reduce of 128 MiB a rank overlapped with compute on other streams of each device (the
    // source material's pattern): each alone, then both at once, host-timed to both done.
    const OVERLAP: usize = 32 << 20; // floats
    const WORK: usize = 8 << 20;
    let compute: Vec<Stream> = devices.iter().map(|d| d.with_current(Stream::new)).collect::<Result<Vec<_>>>()?;
    let mut work = Vec::new();
    for (d, cs) in devices.iter().zip(&compute) {
        work.push(d.with_current(|| DeviceBuffer::<f32>::zeroed_async(WORK, cs.as_stream()))?);
    }
    let work_ptrs: Vec<*mut f32> = work.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let sync_all = || -> Result<()> {
        for s in streams.iter().copied().chain(compute.iter().map(|c| c.as_stream())) {
            s.synchronize()?;
        }
        Ok(())
    };
    let comms = std::cell::RefCell::new(comms);
    let phase = |collective: bool, kernels: bool| -> Result<f64> {
        sync_all()?;
        let t0 = Instant::now();
        if collective {
            // SAFETY: the buffers hold MAX >= OVERLAP floats of their devices and are waited for.
            unsafe {
                let sends = [
                    DeviceSlice::from_raw_parts(send_ptrs[0].cast_const(), OVERLAP),
                    DeviceSlice::from_raw_parts(send_ptrs[1].cast_const(), OVERLAP),
                ];
                let mut recvs = [
                    DeviceSliceMut::from_raw_parts(recv_ptrs[0], OVERLAP),
                    DeviceSliceMut::from_raw_parts(recv_ptrs[1], OVERLAP),
                ];
                comms.borrow_mut().all_reduce_sum_f32(&sends, &mut recvs, &streams)?;
            }
        }
        if kernels {
            for (i, d) in devices.iter().enumerate() {
                d.with_current(|| {
                    for _ in 0..10 {
                        // SAFETY: the work buffer holds WORK floats and is waited for.
                        unsafe {
                            ordo_cuda_kernels::heavy(
                                compute[i].as_stream(),
                                DeviceSliceMut::from_raw_parts(work_ptrs[i], WORK),
                            )?
                        };
                    }
                    Ok(())
                })?;
            }
        }
        sync_all()?;
        Ok(t0.elapsed().as_secs_f64() * 1e3)
    };
    let m = interleave(
        rounds.min(7),
        &mut [&mut || phase(true, false), &mut || phase(false, true), &mut || phase(true, true)],
    )?;
    r.add(
        "multi",
        "all-reduce 128 MiB a rank + 10 compute kernels on other streams, at once vs one after the other",
        "ms",
        m[2],
        Some(m[0] + m[1]),
        format!(
            "all-reduce alone {:.3} ms, compute alone {:.3} ms; perfect overlap would be {:.3} ms",
            m[0],
            m[1],
            m[0].max(m[1])
        ),
    );
    drop(work);
    for c in &compute {
        c.synchronize()?;
    }
    // SAFETY: the C++ communicators, idle (every call waited for its work).
    unsafe { cpp::bl_nccl_close(cpp_comms) };
    drop(comms);
    drop((send, recv));
    for s in streams {
        s.synchronize()?;
    }
    Ok(())
}
