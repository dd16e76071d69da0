//! ordo-bench: measures ordo's calls against plain CUDA C++ in one process, interleaving the
//! variants (A B A B ...) and reporting medians and ratios.
//!
//!     ordo-bench [--quick] [--json FILE] [--csv FILE] [--svg FILE]
//!
//! Without a GPU it says so in one line and exits non-zero.

use ordo_benches::{cpp, interleave, median, quantile};
use ordo_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_core::graph_cache::{default_buckets, GraphCache, Overflow};
use ordo_core::host_fn::launch_host_fn;
use ordo_core::launch::LaunchConfig;
use ordo_core::memory::copy;
use ordo_core::pipeline::{choose_plan, predict_ms, Buffers, ChunkTimes, Pipeline, Plan, Schedule, StageTimes};
use ordo_core::*;
use ordo_kernels::{kernel, ChainPdl, ChainPlan};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

/// One reported figure.
struct Row {
    group: &'static str,
    name: String,
    unit: &'static str,
    ordo: f64,
    cpp: Option<f64>,
    note: String,
}

struct Report {
    rows: Vec<Row>,
    timeline: Vec<ChunkTimes>,
    started: Instant,
}

impl Report {
    fn add(&mut self, group: &'static str, name: impl Into<String>, unit: &'static str, ordo: f64, cpp: Option<f64>, note: impl Into<String>) {
        let row = Row { group, name: name.into(), unit, ordo, cpp, note: note.into() };
        let ratio = row.cpp.map(|c| format!("{:>6.3}x", row.ordo / c)).unwrap_or_default();
        let cpp = row.cpp.map(|c| format!("{c:>10.3}")).unwrap_or_else(|| format!("{:>10}", "-"));
        println!("{:<9} {:<52} {:>10.3} {} {:<5} {} {}", row.group, row.name, row.ordo, cpp, row.unit, ratio, row.note);
        self.rows.push(row);
    }

    fn progress(&self, what: &str) {
        eprint!("\r[{:5.1} s] {what:<60}", self.started.elapsed().as_secs_f64());
        let _ = std::io::stderr().flush();
    }
}

fn ms_between(s: StreamRef<'_>, start: &TimingEvent, end: &TimingEvent, f: impl FnOnce() -> Result<()>) -> Result<f64> {
    start.record(s)?;
    f()?;
    end.record(s)?;
    end.synchronize()?;
    Ok(end.elapsed_ms_since(start)? as f64)
}

fn launch_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("launch latency");
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut p = DeviceBuffer::<f32>::zeroed_async(32, s)?;
    let pp = p.as_mut_ptr();
    const ITERS: usize = 2000;
    let empty = kernel::empty();
    let one = LaunchConfig::new(1, 1);
    let warp = LaunchConfig::new(1, 32);
    // A (pointer, int) kernel of the same shape as the C++ one: ordo's add_one with n = 0 does nothing.
    let ptr_int = kernel::add_one();
    let ordo_submit = |ptr_kernel: bool| -> Result<f64> {
        s.synchronize()?;
        let t0 = Instant::now();
        for _ in 0..ITERS {
            // SAFETY: the kernels touch nothing (empty; add_one with n = 0).
            unsafe {
                if ptr_kernel {
                    ptr_int.launch(s, &warp, (pp, 0))?
                } else {
                    empty.launch(s, &one, ())?
                }
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6 / ITERS as f64;
        s.synchronize()?;
        Ok(us)
    };
    for (kernel_id, label) in [(0, "empty kernel"), (1, "kernel(ptr, int)")] {
        let m = interleave(
            rounds,
            &mut [
                &mut || ordo_submit(kernel_id == 1),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 1, kernel_id, pp, ITERS as i32) }),
                &mut || Ok(unsafe { cpp::bl_submit_us(s.as_raw(), 0, kernel_id, pp, ITERS as i32) }),
            ],
        )?;
        r.add("launch", format!("host submit, {label}: ordo vs cudaLaunchKernelEx"), "us", m[0], Some(m[1]), "");
        r.add("launch", format!("host submit, {label}: ordo vs <<<>>>"), "us", m[0], Some(m[2]), "");
    }
    let mut ordo_rt = Vec::new();
    let mut cpp_rt = Vec::new();
    for _ in 0..rounds * 20 {
        let t0 = Instant::now();
        ordo_kernels::empty(s)?;
        s.synchronize()?;
        ordo_rt.push(t0.elapsed().as_secs_f64() * 1e6);
        cpp_rt.push(unsafe { cpp::bl_roundtrip_us(s.as_raw()) });
    }
    r.add("launch", "launch + synchronize round trip", "us", median(&mut ordo_rt), Some(median(&mut cpp_rt)), "");
    Ok(())
}

fn graph_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("graphs: 200 add_one kernels");
    const N: usize = 4096;
    const K: usize = 200;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let mut x = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut y = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let t0 = Instant::now();
    let graph = capture(s, CaptureMode::Global, |cs| (0..K).try_for_each(|_| unsafe { ordo_kernels::add_one(cs, x.as_mut_slice()) }))?;
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
            &mut || ms_between(s, &start, &end, || (0..K).try_for_each(|_| unsafe { ordo_kernels::add_one(s, x.as_mut_slice()) })),
            &mut || Ok(unsafe { cpp::bl_eager_add_one_ms(s.as_raw(), y.as_mut_ptr(), N as i32, K as i32) }),
            &mut || ms_between(s, &start, &end, || exec.launch(s)),
            &mut || {
                let mut us = 0.0;
                Ok(unsafe { cpp::bl_graph_replay_ms(cpp_exec, s.as_raw(), &mut us) })
            },
        ],
    )?;
    // Host time of the launch call alone, the stream drained between launches, A B A B.
    let (mut ordo_host, mut cpp_host) = (Vec::new(), Vec::new());
    for _ in 0..rounds * 20 {
        let t0 = Instant::now();
        exec.launch(s)?;
        ordo_host.push(t0.elapsed().as_secs_f64() * 1e6);
        s.synchronize()?;
        cpp_host.push(unsafe { cpp::bl_graph_launch_us(cpp_exec, s.as_raw()) });
    }
    let per = |ms: f64| ms * 1e3 / K as f64;
    r.add("graph", "200 x add_one(4096), eager, per kernel", "us", per(m[0]), Some(per(m[1])), "");
    r.add("graph", "200 x add_one(4096), graph replay, per kernel", "us", per(m[2]), Some(per(m[3])), "");
    r.add("graph", "graph launch, host time", "us", median(&mut ordo_host), Some(median(&mut cpp_host)), "");
    r.add("graph", "instantiate 200-node graph", "ms", ordo_inst, Some(cpp_inst), format!("capture {captured_ms:.3} ms"));
    unsafe { cpp::bl_graph_destroy(cpp_exec) };

    // The bucket cache's per-call overhead above the bare replay (host time): round-up + replay.
    let mut input = DeviceBuffer::<f32>::zeroed_async(256, s)?;
    let ip = input.as_mut_ptr();
    let mut cache = GraphCache::new(default_buckets(), Overflow::Error, |cs, n| unsafe {
        ordo_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(ip, n))
    })?;
    cache.capture_all(s)?;
    let bare = capture(s, CaptureMode::Global, |cs| unsafe { ordo_kernels::add_one(cs, DeviceSliceMut::from_raw_parts(ip, 256)) })?
        .instantiate(InstantiateFlags::empty())?;
    bare.upload(s)?;
    s.synchronize()?;
    let mut cache_us = Vec::new();
    let mut bare_us = Vec::new();
    for i in 0..rounds * 100 {
        let n = 129 + i % 128;
        let t0 = Instant::now();
        cache.run(s, n)?;
        cache_us.push(t0.elapsed().as_secs_f64() * 1e6);
        let t0 = Instant::now();
        bare.launch(s)?;
        bare_us.push(t0.elapsed().as_secs_f64() * 1e6);
        if i % 50 == 49 {
            s.synchronize()?;
        }
    }
    s.synchronize()?;
    let (c, b) = (median(&mut cache_us), median(&mut bare_us));
    r.add("graph", "bucket cache run (round-up + replay), host", "us", c, None, format!("bare replay {b:.3} us; overhead {:.3} us", c - b));
    Ok(())
}

fn pdl_group(r: &mut Report, rounds: usize) -> Result<()> {
    const STEPS: usize = 100;
    let device = Device::current()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    for n in [4096usize, 128 << 10, 4 << 20] {
        r.progress(&format!("PDL chains, n = {n}"));
        let mut a = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let mut b = DeviceBuffer::<f32>::zeroed_async(n, s)?;
        let scale_host: Vec<f32> = (0..n).map(|i| 0.5 + (i % 89) as f32 * 0.005).collect();
        let mut scale = DeviceBuffer::<f32>::alloc_async(n, s)?;
        copy::h2d_blocking(scale.as_mut_slice(), &scale_host, s)?;
        let off = ChainPlan::new(device, n, ChainPdl::Off)?;
        let auto = ChainPlan::new(device, n, ChainPdl::Auto)?;
        let mut execs = Vec::new();
        for plan in [&off, &auto] {
            let g = capture(s, CaptureMode::Global, |cs| unsafe {
                ordo_kernels::chain(cs, a.as_mut_slice(), b.as_mut_slice(), scale.as_slice(), STEPS, plan)
            })?;
            let e = g.instantiate(InstantiateFlags::empty())?;
            e.upload(s)?;
            execs.push(e);
        }
        let (ap, bp, sp) = (a.as_mut_ptr(), b.as_mut_ptr(), scale.as_ptr());
        let run_chain = |plan: &ChainPlan| {
            ms_between(s, &start, &end, || unsafe {
                ordo_kernels::chain(s, DeviceSliceMut::from_raw_parts(ap, n), DeviceSliceMut::from_raw_parts(bp, n), DeviceSlice::from_raw_parts(sp, n), STEPS, plan)
            })
        };
        let m = interleave(
            rounds,
            &mut [
                &mut || run_chain(&off),
                &mut || run_chain(&auto),
                &mut || ms_between(s, &start, &end, || execs[0].launch(s)),
                &mut || ms_between(s, &start, &end, || execs[1].launch(s)),
                &mut || Ok(unsafe { cpp::bl_chain_ms(s.as_raw(), ap, bp, sp, n as i32, STEPS as i32, 0) }),
                &mut || Ok(unsafe { cpp::bl_chain_ms(s.as_raw(), ap, bp, sp, n as i32, STEPS as i32, 1) }),
            ],
        )?;
        let per = |ms: f64| ms * 1e3 / STEPS as f64;
        let label = format!("{n}");
        let rule = format!("ordo trigger {:?}", auto.trigger);
        r.add("pdl", format!("chain n={label}: eager, PDL off (ordo vs C++)"), "us", per(m[0]), Some(per(m[4])), "");
        r.add("pdl", format!("chain n={label}: eager, ordo PDL vs ordo off"), "us", per(m[1]), Some(per(m[0])), rule.clone());
        r.add("pdl", format!("chain n={label}: eager, C++ PDL (wait+trigger at start) vs off"), "us", per(m[5]), Some(per(m[4])), "");
        r.add("pdl", format!("chain n={label}: graph, ordo PDL vs graph off"), "us", per(m[3]), Some(per(m[2])), rule);
        // The source's kernel shape: in place, add_one-like, wait then trigger at the start.
        let m = interleave(
            rounds,
            &mut [
                &mut || Ok::<f64, Error>(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n as i32, STEPS as i32, 1) }),
                &mut || Ok(unsafe { cpp::bl_inplace_chain_ms(s.as_raw(), ap, n as i32, STEPS as i32, 0) }),
            ],
        )?;
        r.add("pdl", format!("in-place chain n={label}: C++ PDL (wait+trigger at start) vs off"), "us", per(m[0]), Some(per(m[1])), "");
    }
    Ok(())
}

fn small_ops_group(r: &mut Report, rounds: usize) -> Result<()> {
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
    let cpp_op = |op: i32| Ok::<f64, Error>(unsafe { cpp::bl_event_ops_us(a.as_raw(), b.as_raw(), e.as_raw(), op, ITERS as i32) });
    let m = interleave(
        rounds,
        &mut [
            &mut || per_op(&mut || e.record(a.as_stream())),
            &mut || cpp_op(0),
            &mut || per_op(&mut || {
                e.record(a.as_stream())?;
                b.wait_event(&e)
            }),
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

    let s = a.as_stream();
    let pool = MemPool::device_default(Device::current()?)?;
    pool.set_release_threshold(u64::MAX)?;
    let mut async_us = Vec::new();
    let mut sync_us = Vec::new();
    for _ in 0..rounds * 20 {
        let t0 = Instant::now();
        let buf = DeviceBuffer::<u8>::alloc_async(1 << 20, s)?;
        buf.free_async()?;
        async_us.push(t0.elapsed().as_secs_f64() * 1e6);
        let t0 = Instant::now();
        let mut p = core::ptr::null_mut();
        // SAFETY: plain allocation and free, the baseline being measured.
        unsafe {
            if sys::cudaMalloc(&mut p, 1 << 20) == sys::cudaError::cudaSuccess {
                sys::cudaFree(p);
            }
        }
        sync_us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    s.synchronize()?;
    r.add("alloc", "1 MiB cudaMallocAsync+cudaFreeAsync vs cudaMalloc+cudaFree", "us", median(&mut async_us), Some(median(&mut sync_us)), "");

    let (tx, rx) = std::sync::mpsc::channel::<f64>();
    let mut lat = Vec::new();
    for _ in 0..rounds * 20 {
        let tx = tx.clone();
        let t0 = Instant::now();
        launch_host_fn(s, move || {
            let _ = tx.send(t0.elapsed().as_secs_f64() * 1e6);
        })?;
        if let Ok(us) = rx.recv_timeout(std::time::Duration::from_secs(5)) {
            lat.push(us);
        }
    }
    let med = median(&mut lat);
    r.add("hostfn", "cudaLaunchHostFunc enqueue to running (median)", "us", med, None, format!("p99 {:.1} us", quantile(&mut lat, 0.99)));
    Ok(())
}

fn copy_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("copies");
    const N: usize = 64 << 20; // 256 MiB of f32
    let bytes = (N * 4) as f64;
    let s1 = Stream::new()?;
    let s2 = Stream::new()?;
    let s = s1.as_stream();
    let host_in = PinnedBuffer::<f32>::from_slice(&vec![1.5f32; N])?;
    let mut host_out = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let dev2 = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let (dp, hip, hop) = (dev.as_mut_ptr(), host_in.as_ptr(), host_out.as_mut_ptr());
    let m = interleave(
        rounds,
        &mut [
            &mut || ms_between(s, &start, &end, || unsafe { copy::h2d_async(DeviceSliceMut::from_raw_parts(dp, N), PinnedSlice::from_raw_parts(hip, N), s) }),
            &mut || Ok(unsafe { cpp::bl_copy_ms(dp.cast(), hip.cast(), N * 4, 1, s.as_raw()) }),
            &mut || ms_between(s, &start, &end, || unsafe { copy::d2h_async(PinnedSliceMut::from_raw_parts(hop, N), DeviceSlice::from_raw_parts(dp, N), s) }),
            &mut || Ok(unsafe { cpp::bl_copy_ms(hop.cast(), dp.cast(), N * 4, 2, s.as_raw()) }),
        ],
    )?;
    let gbps = |ms: f64| bytes / ms / 1e6;
    r.add("copy", "pinned H2D 256 MiB", "GB/s", gbps(m[0]), Some(gbps(m[1])), format!("PCIe Gen5 x16: 63 GB/s; {:.1}%", gbps(m[0]) / 63.0 * 100.0));
    r.add("copy", "pinned D2H 256 MiB", "GB/s", gbps(m[2]), Some(gbps(m[3])), format!("{:.1}% of 63 GB/s", gbps(m[2]) / 63.0 * 100.0));
    // Both directions at once, on two streams.
    let mut both = Vec::new();
    for _ in 0..rounds {
        s.synchronize()?;
        s2.synchronize()?;
        start.record(s)?;
        s2.wait_event(&start)?;
        unsafe {
            copy::h2d_async(dev.as_mut_slice(), host_in.pinned(), s)?;
            copy::d2h_async(host_out.pinned_mut(), dev2.as_slice(), s2.as_stream())?;
        }
        let joined = Event::new()?;
        joined.record(s2.as_stream())?;
        s.wait_event(&joined)?;
        end.record(s)?;
        end.synchronize()?;
        both.push(2.0 * bytes / end.elapsed_ms_since(&start)? as f64 / 1e6);
    }
    r.add("copy", "pinned H2D + D2H at once, total", "GB/s", median(&mut both), None, "reference 101.6 GB/s");
    // Pageable: the blocking copy (an async copy from pageable memory would not be asynchronous anyway).
    let pageable = vec![2.5f32; N];
    let mut pg = Vec::new();
    for _ in 0..rounds.min(5) {
        let t0 = Instant::now();
        copy::h2d_blocking(dev.as_mut_slice(), &pageable, s)?;
        pg.push(bytes / t0.elapsed().as_secs_f64() / 1e9);
    }
    r.add("copy", "pageable H2D 256 MiB (blocking copy)", "GB/s", median(&mut pg), None, "reference 9.8 GB/s");
    Ok(())
}

fn pipeline_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("pipeline sweep");
    const N: usize = 64 << 20; // 256 MiB of f32 in, 256 MiB out
    let main = Stream::new()?;
    let s = main.as_stream();
    let data: Vec<f32> = (0..N).map(|i| (i % 1000) as f32 * 0.001).collect();
    let input = PinnedBuffer::from_slice(&data)?;
    let mut output = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev_in = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let mut dev_out = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    // One timed pass of each stage.
    let (ip, op, dip, dop) = (input.as_ptr(), output.as_mut_ptr(), dev_in.as_mut_ptr(), dev_out.as_mut_ptr());
    let a = ms_between(s, &start, &end, || unsafe { copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, N), PinnedSlice::from_raw_parts(ip, N), s) })?;
    let b = ms_between(s, &start, &end, || unsafe { ordo_kernels::heavy_into(s, DeviceSlice::from_raw_parts(dip, N), DeviceSliceMut::from_raw_parts(dop, N)) })?;
    let c = ms_between(s, &start, &end, || unsafe { copy::d2h_async(PinnedSliceMut::from_raw_parts(op, N), DeviceSlice::from_raw_parts(dip, N), s) })?;
    let times = StageTimes { copy_in_ms: a, compute_ms: b, copy_out_ms: c };
    r.add("pipeline", "stages: copy in / compute / copy out", "ms", a + b + c, None, format!("{a:.2} / {b:.2} / {c:.2} (reference 4.89 / 0.32 / 4.86)"));
    // The bound: both full copies at once, on two streams (what the copy directions reach together).
    let second = Stream::new()?;
    let joined = Event::new()?;
    let mut both = Vec::new();
    for _ in 0..3 {
        both.push(ms_between(s, &start, &end, || unsafe {
            second.wait_event(&start)?;
            copy::h2d_async(DeviceSliceMut::from_raw_parts(dip, N), PinnedSlice::from_raw_parts(ip, N), s)?;
            copy::d2h_async(PinnedSliceMut::from_raw_parts(op, N), DeviceSlice::from_raw_parts(dop, N), second.as_stream())?;
            joined.record(second.as_stream())?;
            s.wait_event(&joined)
        })?);
    }
    let bound = median(&mut both);
    let mut pipe = Pipeline::new(8)?;
    let mut machine = pipe.machine();
    machine.duplex = ((a + c) / bound).clamp(1.0, 2.0);
    pipe.set_machine(machine);
    r.add("pipeline", "both copies at once (the bound)", "ms", bound, None, format!("{:.1} GB/s total; duplex {:.2}", 2.0 * (N * 4) as f64 / bound / 1e6, machine.duplex));
    let planned = choose_plan(times, &machine, 128);
    let mut run = |plan: Plan| -> Result<f64> {
        let p = &mut pipe;
        ms_between(s, &start, &end, || unsafe {
            let buffers = Buffers {
                input: PinnedSlice::from_raw_parts(ip, N),
                dev_in: DeviceSliceMut::from_raw_parts(dip, N),
                dev_out: DeviceSliceMut::from_raw_parts(dop, N),
                output: PinnedSliceMut::from_raw_parts(op, N),
            };
            p.run(s, buffers, plan, |cs, i, o| ordo_kernels::heavy_into(cs, i.as_slice(), o))
        })
    };
    let mut sweep = Vec::new();
    let rr = |chunks, streams| Plan { chunks, schedule: Schedule::RoundRobin { streams } };
    let staged = |chunks| Plan { chunks, schedule: Schedule::Staged };
    for plan in [rr(1, 1), rr(8, 4), rr(32, 8), staged(4), staged(8), staged(12), staged(16), staged(24), staged(32), staged(64)] {
        let mut v = Vec::new();
        for _ in 0..rounds.min(7) {
            v.push(run(plan)?);
        }
        let measured = median(&mut v);
        let predicted = predict_ms(times, plan, &machine);
        sweep.push((plan, measured, predicted));
    }
    for (plan, measured, predicted) in &sweep {
        r.add(
            "pipeline",
            match plan.schedule {
                Schedule::Staged => format!("staged, {} chunks: measured (vs model)", plan.chunks),
                Schedule::RoundRobin { streams } => format!("round robin, {} chunks x {streams} streams: measured (vs model)", plan.chunks),
            },
            "ms",
            *measured,
            Some(*predicted),
            format!("model error {:+.1}%", (predicted - measured) / measured * 100.0),
        );
    }
    // The planned pipeline against the plain C++ pipeline of the same plan and the bound.
    let m = interleave(
        rounds.min(9),
        &mut [
            &mut || run(planned),
            &mut || Ok(unsafe { cpp::bl_pipeline_ms(ip, dip, op, N, 32, 8) }),
            &mut || Ok(unsafe { cpp::bl_pipeline_ms(ip, dip, op, N, 8, 4) }),
        ],
    )?;
    r.add("pipeline", format!("planned ({:?}, {} chunks) vs C++ 32 chunks x 8 streams", planned.schedule, planned.chunks), "ms", m[0], Some(m[1]), format!("C++ 8 x 4: {:.3} ms", m[2]));
    r.add("pipeline", "planned vs both-directions bound", "ms", m[0], Some(bound), "target within 5%");
    // A timeline of the planned run for the SVG.
    run(planned)?;
    r.timeline = pipe.chunk_times()?;
    Ok(())
}

fn write_svg(path: &str, timeline: &[ChunkTimes]) -> std::io::Result<()> {
    let streams = 3 * timeline.iter().map(|t| t.stream).max().map_or(1, |m| m + 1);
    let end = timeline.iter().map(|t| t.copy_out.1).fold(0f32, f32::max).max(1e-3);
    let (w, lane) = (1000.0f32, 36.0f32);
    let h = lane * streams as f32 + 50.0;
    let mut svg = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{h}' font-family='sans-serif' font-size='11'>\n", w + 120.0);
    let x = |t: f32| 100.0 + t / end * w;
    for st in 0..streams {
        let stage = ["in", "compute", "out"][st % 3];
        let _ = writeln!(svg, "<text x='4' y='{}'>stream {} {stage}</text>", 24.0 + lane * st as f32, st / 3);
    }
    for t in timeline {
        for (stage, ((a, b), color)) in [(t.copy_in, "#4e79a7"), (t.compute, "#f28e2b"), (t.copy_out, "#59a14f")].into_iter().enumerate() {
            let y = 8.0 + lane * (3 * t.stream + stage) as f32;
            let _ = writeln!(svg, "<rect x='{:.2}' y='{y}' width='{:.2}' height='24' fill='{color}' stroke='white' stroke-width='0.5'/>", x(a), (x(b) - x(a)).max(0.5));
        }
    }
    let _ = writeln!(
        svg,
        "<text x='100' y='{}'>copy in (blue), compute (orange), copy out (green); 0 to {end:.2} ms</text>\n</svg>",
        h - 10.0
    );
    std::fs::write(path, svg)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let quick = args.iter().any(|a| a == "--quick");
    let rounds = if quick { 5 } else { 15 };
    match ordo_core::device::count() {
        Ok(n) if n > 0 => {}
        Ok(_) => {
            eprintln!("ordo-bench: no CUDA device");
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("ordo-bench: no usable CUDA driver or device: {e}");
            return ExitCode::FAILURE;
        }
    }
    let mut r = Report { rows: Vec::new(), timeline: Vec::new(), started: Instant::now() };
    let header = || -> Result<String> {
        let d = Device::current()?;
        Ok(format!(
            "{} | runtime {} | driver {} | bindings {}",
            d.name()?,
            device::runtime_version()?,
            device::driver_version()?,
            sys::CUDA_VERSION
        ))
    };
    match header() {
        Ok(h) => println!("{h}"),
        Err(e) => {
            eprintln!("ordo-bench: {e}");
            return ExitCode::FAILURE;
        }
    }
    println!("{:<9} {:<52} {:>10} {:>10} {:<5} {:>7}", "group", "figure", "ordo", "baseline", "unit", "ratio");
    type Group = fn(&mut Report, usize) -> Result<()>;
    let groups: [(&str, Group); 6] = [
        ("launch", launch_group),
        ("graph", graph_group),
        ("pdl", pdl_group),
        ("small", small_ops_group),
        ("copy", copy_group),
        ("pipeline", pipeline_group),
    ];
    for (name, g) in groups {
        if let Err(e) = g(&mut r, rounds) {
            eprintln!("\nordo-bench: {name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    eprintln!("\r[{:5.1} s] done{:<60}", r.started.elapsed().as_secs_f64(), "");
    let esc = |s: &str| s.replace('"', "'");
    if let Some(path) = arg("--json") {
        let rows: Vec<String> = r
            .rows
            .iter()
            .map(|x| {
                format!(
                    "{{\"group\":\"{}\",\"figure\":\"{}\",\"unit\":\"{}\",\"ordo\":{},\"baseline\":{},\"ratio\":{},\"note\":\"{}\"}}",
                    x.group,
                    esc(&x.name),
                    x.unit,
                    x.ordo,
                    x.cpp.map_or("null".into(), |c| c.to_string()),
                    x.cpp.map_or("null".into(), |c| (x.ordo / c).to_string()),
                    esc(&x.note)
                )
            })
            .collect();
        if let Err(e) = std::fs::write(&path, format!("[\n{}\n]\n", rows.join(",\n"))) {
            eprintln!("ordo-bench: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = arg("--csv") {
        let mut csv = String::from("group,figure,unit,ordo,baseline,ratio,note\n");
        for x in &r.rows {
            let _ = writeln!(
                csv,
                "{},\"{}\",{},{},{},{},\"{}\"",
                x.group,
                esc(&x.name),
                x.unit,
                x.ordo,
                x.cpp.map_or(String::new(), |c| c.to_string()),
                x.cpp.map_or(String::new(), |c| (x.ordo / c).to_string()),
                esc(&x.note)
            );
        }
        if let Err(e) = std::fs::write(&path, csv) {
            eprintln!("ordo-bench: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Some(path) = arg("--svg") {
        if let Err(e) = write_svg(&path, &r.timeline) {
            eprintln!("ordo-bench: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
