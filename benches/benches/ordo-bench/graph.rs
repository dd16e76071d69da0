//! Graphs: 200 add_one kernels eager against a graph, graph launch host time, instantiation, and
//! the bucket cache's overhead.

use crate::{interleave, ms_between, Report};
use ordo_benches::cpp;
use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::graph_cache::{default_buckets, GraphCache, Overflow};
use ordo_cuda_core::*;
use std::time::Instant;

pub(crate) fn graph_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("graphs: 200 add_one kernels");
    const N: usize = 4096;
    const K: usize = 200;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut y = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let t0 = Instant::now();
    // SAFETY: `x` is declared before the graph and `exec`, so it outlives them, and is freed on
    // `s` after every replay enqueued there; nothing else uses `s` during the capture.
    let graph = unsafe {
        capture(s, CaptureMode::Global, |cs| (0..K).try_for_each(|_| ordo_cuda_kernels::add_one(cs, x.as_mut_slice())))
    }?;
    let captured_ms = t0.elapsed().as_secs_f64() * 1e3;
    let t0 = Instant::now();
    let exec = graph.instantiate(InstantiateFlags::empty())?;
    let ordo_inst = t0.elapsed().as_secs_f64() * 1e3;
    exec.upload(s)?;
    let mut cpp_inst = 0.0;
    let cpp_exec = unsafe { cpp::bl_graph_add_one(s.as_raw(), y.as_mut_ptr(), N as i32, K as i32, &mut cpp_inst) };
    let m = interleave(
        rounds * 3,
        &mut [
            &mut || {
                ms_between(s, &start, &end, || {
                    (0..K).try_for_each(|_| unsafe { ordo_cuda_kernels::add_one(s, x.as_mut_slice()) })
                })
            },
            &mut || Ok(unsafe { cpp::bl_eager_add_one_ms(s.as_raw(), y.as_mut_ptr(), N as i32, K as i32) }),
            &mut || ms_between(s, &start, &end, || exec.launch(s)),
            &mut || {
                let mut us = 0.0;
                Ok(unsafe { cpp::bl_graph_replay_ms(cpp_exec, s.as_raw(), &mut us) })
            },
        ],
    )?;
    // Host time of the launch call alone, the stream drained between launches, A B A B.
    let host = interleave(
        rounds * 20,
        &mut [
            &mut || {
                let t0 = Instant::now();
                exec.launch(s)?;
                let us = t0.elapsed().as_secs_f64() * 1e6;
                s.synchronize()?;
                Ok(us)
            },
            &mut || Ok(unsafe { cpp::bl_graph_launch_us(cpp_exec, s.as_raw()) }),
        ],
    )?;
    let per = |ms: f64| ms * 1e3 / K as f64;
    r.add("graph", "200 x add_one(4096), eager, per kernel", "us", per(m[0]), Some(per(m[1])), "");
    r.add("graph", "200 x add_one(4096), graph replay, per kernel", "us", per(m[2]), Some(per(m[3])), "");
    r.add("graph", "graph launch, host time", "us", host[0], Some(host[1]), "");
    r.add(
        "graph",
        "instantiate 200-node graph",
        "ms",
        ordo_inst,
        Some(cpp_inst),
        format!("capture {captured_ms:.3} ms"),
    );
    unsafe { cpp::bl_graph_destroy(cpp_exec) };

    // The bucket cache's per-call overhead above the bare replay (host time): round-up + replay.
    let mut input = DeviceBuffer::<f32>::zeroed_async(256, s)?;
    let ip = input.as_mut_ptr();
    // SAFETY (the cache and `bare`): `input` (256 elements, the largest bucket) is declared
    // before both, so it outlives them, and is freed on `s` after every replay enqueued there;
    // nothing else uses `s` while they capture.
    let mut cache = unsafe {
        GraphCache::new(default_buckets(), Overflow::Error, |cs, n| {
            ordo_cuda_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(ip, n))
        })
    }?;
    cache.capture_all(s)?;
    let bare = unsafe {
        capture(s, CaptureMode::Global, |cs| ordo_cuda_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(ip, 256)))
    }?
    .instantiate(InstantiateFlags::empty())?;
    bare.upload(s)?;
    s.synchronize()?;
    // The cache runs sizes 129..=256 in turn; the stream is drained every 50 replays of each.
    let mut runs = 0usize;
    let mut bares = 0usize;
    let m = interleave(
        rounds * 100,
        &mut [
            &mut || {
                let n = 129 + runs % 128;
                runs += 1;
                let t0 = Instant::now();
                cache.run(s, n)?;
                Ok(t0.elapsed().as_secs_f64() * 1e6)
            },
            &mut || {
                let t0 = Instant::now();
                bare.launch(s)?;
                let us = t0.elapsed().as_secs_f64() * 1e6;
                bares += 1;
                if bares % 50 == 0 {
                    s.synchronize()?;
                }
                Ok(us)
            },
        ],
    )?;
    s.synchronize()?;
    let (c, b) = (m[0], m[1]);
    r.add(
        "graph",
        "bucket cache run (round-up + replay), host",
        "us",
        c,
        None,
        format!("bare replay {b:.3} us; overhead {:.3} us", c - b),
    );

    // The device memory a cache holds when its bodies allocate: each bucket n allocates n MiB
    // inside its graph (an allocation node and a free node), and every bucket runs once on one
    // stream. CUDA keeps graph allocations in one per-device graph pool, whose physical memory
    // graphs launched in order on one stream share: the reservation is compared with the largest
    // bucket's temporary (sharing) and with the sum of them all (no sharing).
    let device = Device::current()?;
    s.synchronize()?;
    device.trim_graph_mem()?;
    device.reset_graph_mem_high()?;
    const MIB: usize = 1 << 20;
    let per_mib = MIB / core::mem::size_of::<f32>();
    // SAFETY: the bodies touch only the temporaries they allocate on the capturing stream.
    let mut mem_cache = unsafe {
        GraphCache::new(default_buckets(), Overflow::Error, |cs, n| {
            let mut tmp = DeviceBuffer::<f32>::zeroed_async(n * per_mib, cs)?;
            ordo_cuda_kernels::add_one(cs, tmp.as_mut_slice())?;
            drop(tmp);
            Ok(())
        })
    }?;
    mem_cache.capture_all(s)?;
    for &b in &default_buckets() {
        mem_cache.run(s, b)?;
    }
    s.synchronize()?;
    let usage = device.graph_mem_usage()?;
    let mib = |bytes: u64| bytes as f64 / MIB as f64;
    let sum: usize = default_buckets().iter().sum();
    let largest = *default_buckets().last().unwrap_or(&1);
    r.add(
        "graph",
        format!(
            "bucket cache, {} buckets allocating n MiB each: graph memory reserved vs the largest bucket's",
            default_buckets().len()
        ),
        "MiB",
        mib(usage.reserved_high),
        Some(largest as f64),
        format!("sum of all buckets' temporaries {sum} MiB; in use at most {:.0} MiB", mib(usage.used_high)),
    );
    drop(mem_cache);
    s.synchronize()?;
    device.trim_graph_mem()?;
    Ok(())
}
