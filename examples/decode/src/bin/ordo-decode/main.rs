//! `ordo-decode`: the ordo side of the decode comparison (`--help` for the options). One run: the
//! correctness pass (eager against replayed, bit for bit; the outputs written for
//! `torch_decode.py`; a CPU reference at full shapes), then for each batch and context the step
//! eager and replayed from the bucket graph cache, and the per-operation profile; markdown tables
//! on stdout, everything in `OUT/ordo.json`.

mod args;
mod measure;

use measure::{profile, stats, time_steps, Profile, StepSample};
use ordo_cuda::graph_cache::{CacheOptions, GraphCache, Overflow};
use ordo_cuda::{device, Device, Error, Result, Stream, StreamRef};
use ordo_decode::config::BufferSizes;
use ordo_decode::cublas_path;
use ordo_decode::reference::Reference;
use ordo_decode::{Decoder, Limits, ModelConfig};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::process::ExitCode;
use std::time::Instant;

/// Profile passes a configuration (the median of each operation's time is kept).
const PROFILE_PASSES: usize = 3;
/// Tolerance of the CPU reference check: |ordo - reference| <= ATOL + RTOL |reference|.
const REF_ATOL: f32 = 2e-2;
const REF_RTOL: f32 = 2e-2;

fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ordo-decode: {e}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let outcome = match args.serve_s {
        Some(seconds) => serve(&args, seconds),
        None => run(&args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("ordo-decode: a correctness check failed (see above); the figures were still written");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("ordo-decode: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One configuration's measurements.
struct Measured {
    batch: usize,
    context: usize,
    eager: Vec<StepSample>,
    graph: Vec<StepSample>,
    profile: Profile,
    identical: bool,
    finite: bool,
}

fn run(args: &args::Args) -> Result<bool> {
    if device::count()? == 0 {
        return Err(Error::invalid("ordo-decode", "no CUDA device"));
    }
    let started = Instant::now();
    let dev = Device::current()?;
    let cublas = cublas_path::choose()?;
    std::fs::create_dir_all(&args.out).map_err(|e| io_error("creating the output folder", e))?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let config = ModelConfig::llama3_8b(args.layers);
    let max_batch = args.batches.iter().copied().max().unwrap_or(1);
    let max_context = args.contexts.iter().copied().max().unwrap_or(1);
    let limits = Limits::new(max_batch, max_context, args.chunk)?;
    let t0 = Instant::now();
    let dec = RefCell::new(Decoder::new(s, config, limits, args.pdl)?);
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let (version, device_gb) = {
        let d = dec.borrow();
        (d.cublas_version()?, d.device_bytes() as f64 / 1e9)
    };
    let loaded = cublas_path::loaded().unwrap_or_else(|| "(not found in /proc/self/maps)".into());
    println!(
        "# ordo decode: Llama-3-8B layer shapes, fp16, {} layers timed, {} checked",
        args.layers, args.check_layers
    );
    println!();
    println!(
        "{} ({} SMs) | driver {} | runtime {} | cuBLAS {version} from {loaded} | PDL {} | {:.1} GB on the device, built in {build_ms:.0} ms",
        dev.name()?,
        dev.sm_count()?,
        device::driver_version()?,
        device::runtime_version()?,
        if args.pdl { "on" } else { "off" },
        device_gb,
    );
    if !cublas.note.is_empty() {
        println!("{}", cublas.note);
    }
    println!("limits: batch {max_batch}, {} cache positions a sequence in chunks of {}", limits.max_ctx, limits.chunk);

    // Graphs: one a batch bucket, for the timed depth and for the checked depth. The positions
    // are on the device, so the same graphs serve every context.
    let (layers, check_layers) = (args.layers, args.check_layers);
    let options = CacheOptions { warmup: true, ..CacheOptions::default() };
    // SAFETY (both caches): the bodies enqueue the decoder's step on the capturing stream, over
    // the decoder's buffers; `dec` is declared before the caches and outlives them (they are
    // dropped first, at the end of this function, after the last synchronise); nothing else uses
    // `s` while a cache captures.
    let mut graphs = unsafe {
        GraphCache::with_options(args.batches.clone(), Overflow::Error, options, |cs, b| {
            dec.borrow_mut().step(cs, b, layers)
        })
    }?;
    // SAFETY: as above.
    let mut check_graphs = unsafe {
        GraphCache::with_options(args.batches.clone(), Overflow::Error, options, |cs, b| {
            dec.borrow_mut().step(cs, b, check_layers)
        })
    }?;
    let t0 = Instant::now();
    graphs.capture_all(s)?;
    s.synchronize()?;
    let capture_ms = t0.elapsed().as_secs_f64() * 1e3;
    check_graphs.capture_all(s)?;
    s.synchronize()?;

    // The correctness pass.
    println!();
    println!("## Correctness ({check_layers} layers): eager against replayed, outputs for torch_decode.py");
    println!();
    println!("| batch | context | eager = replayed (bits) | finite | output file | first values |");
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut ok = true;
    let mut checks = Vec::new();
    for &batch in &args.batches {
        for &context in &args.contexts {
            setup(&dec, s, batch, context)?;
            dec.borrow_mut().step(s, batch, check_layers)?;
            let eager = dec.borrow().read_output(batch)?;
            check_graphs.run(s, batch)?;
            let replayed = dec.borrow().read_output(batch)?;
            let values: Vec<f32> = eager.iter().map(|&b| half::f16::from_bits(b).to_f32()).collect();
            let finite = values.iter().all(|v| v.is_finite()) && values.iter().any(|&v| v != 0.0);
            let identical = eager == replayed;
            ok &= finite && identical;
            let file = format!("check_b{batch}_c{context}.f16");
            let bytes: Vec<u8> = eager.iter().flat_map(|b| b.to_le_bytes()).collect();
            std::fs::write(args.out.join(&file), bytes).map_err(|e| io_error("writing a check output", e))?;
            let first: Vec<String> = values.iter().take(4).map(|v| format!("{v:.4}")).collect();
            println!("| {batch} | {context} | {identical} | {finite} | {file} | {} |", first.join(", "));
            checks.push(json!({
                "batch": batch, "context": context, "layers": check_layers, "file": file,
                "eager_equals_graph": identical, "finite": finite,
                "sum": values.iter().map(|&v| v as f64).sum::<f64>(),
            }));
        }
    }
    let reference = if args.reference {
        let r = reference_check(&dec, s, args.contexts[0], check_layers)?;
        ok &= r.get("pass").and_then(Value::as_bool).unwrap_or(false);
        println!();
        println!(
            "CPU reference (fp32, fp16 storage; batch 1, context {}, {check_layers} layers): max |ordo - ref| = {:.3e}, max rel = {:.3e}, tolerance {REF_ATOL:e} + {REF_RTOL:e} |ref|: {}",
            args.contexts[0],
            r["max_abs"].as_f64().unwrap_or(f64::NAN),
            r["max_rel"].as_f64().unwrap_or(f64::NAN),
            if r["pass"].as_bool().unwrap_or(false) { "pass" } else { "FAIL" }
        );
        r
    } else {
        json!(null)
    };

    // The timed configurations.
    let mut measured = Vec::new();
    for &batch in &args.batches {
        for &context in &args.contexts {
            setup(&dec, s, batch, context)?;
            let eager = &mut || dec.borrow_mut().step(s, batch, layers);
            let mut graph_step = || graphs.run(s, batch).map(|_| ());
            for _ in 0..args.warmup {
                eager()?;
                s.synchronize()?;
                graph_step()?;
                s.synchronize()?;
            }
            // Two rounds of each, alternating, so that drift favours neither.
            let (mut e, mut g) = (Vec::new(), Vec::new());
            let first_round = args.steps.div_ceil(2);
            for round in 0..2 {
                let n = if round == 0 { first_round } else { args.steps - first_round };
                e.extend(time_steps(s, n, eager)?);
                g.extend(time_steps(s, n, &mut graph_step)?);
            }
            // The timed depth's outputs, eager against replayed.
            eager()?;
            let out_eager = dec.borrow().read_output(batch)?;
            graph_step()?;
            let out_graph = dec.borrow().read_output(batch)?;
            let finite = out_eager.iter().all(|&b| half::f16::from_bits(b).to_f32().is_finite());
            let identical = out_eager == out_graph;
            ok &= finite && identical;
            let profile = profile(&mut dec.borrow_mut(), s, batch, layers, PROFILE_PASSES)?;
            measured.push(Measured { batch, context, eager: e, graph: g, profile, identical, finite });
        }
    }
    s.synchronize()?;
    let results = report(&measured, layers);
    let doc = json!({
        "side": "ordo",
        "device": dev.name()?.to_string(),
        "sms": dev.sm_count()?,
        "driver": device::driver_version()?,
        "runtime": device::runtime_version()?,
        "cublas": { "version": version, "path": loaded },
        "model": {
            "name": "Llama-3-8B layer shapes", "hidden": config.hidden, "heads": config.heads,
            "kv_heads": config.kv_heads, "head_dim": config.head_dim, "ffn": config.ffn,
            "layers": layers, "check_layers": check_layers, "eps": config.eps, "rope_theta": config.rope_theta,
            "dtype": "float16", "weight_bytes": config.weight_bytes(),
        },
        "settings": {
            "steps": args.steps, "warmup": args.warmup, "chunk": args.chunk, "pdl": args.pdl,
            "max_ctx": limits.max_ctx, "profile_passes": PROFILE_PASSES,
            "device_bytes": BufferSizes::new(&config, &limits).bytes(layers) + config.weight_bytes(),
        },
        "capture_all_ms": capture_ms,
        "build_ms": build_ms,
        "results": results.0,
        "ops": results.1,
        "check": checks,
        "reference": reference,
        "ok": ok,
        "run_s": started.elapsed().as_secs_f64(),
    });
    let path = args.out.join("ordo.json");
    let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::invalid("ordo-decode", e.to_string()))?;
    std::fs::write(&path, text).map_err(|e| io_error("writing ordo.json", e))?;
    println!();
    println!(
        "GraphCache::capture_all of {} buckets ({layers} layers; a warm-up step, the capture and the instantiation a bucket): {capture_ms:.0} ms; run {:.1} s; wrote {}",
        args.batches.len(),
        started.elapsed().as_secs_f64(),
        path.display()
    );
    drop(check_graphs);
    drop(graphs);
    Ok(ok)
}

/// `--serve`: the first batch and context, replayed from a one-bucket graph cache, each step
/// synchronised, for `seconds` from `--start-at-ms` (at once without it); one JSON line on stdout.
/// For several processes at once (`scripts/mps-bench.sh`: with and without MPS).
fn serve(args: &args::Args, seconds: f64) -> Result<bool> {
    if device::count()? == 0 {
        return Err(Error::invalid("ordo-decode", "no CUDA device"));
    }
    cublas_path::choose()?;
    let (batch, context) = (args.batches[0], args.contexts[0]);
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let limits = Limits::new(batch, context, args.chunk)?;
    let dec = RefCell::new(Decoder::new(s, ModelConfig::llama3_8b(args.layers), limits, args.pdl)?);
    let layers = args.layers;
    let options = CacheOptions { warmup: true, ..CacheOptions::default() };
    // SAFETY: the body enqueues the decoder's step on the capturing stream, over the decoder's
    // buffers; `dec` is declared before the cache and outlives it; nothing else uses `s`.
    let mut graphs = unsafe {
        GraphCache::with_options(vec![batch], Overflow::Error, options, |cs, b| dec.borrow_mut().step(cs, b, layers))
    }?;
    graphs.capture_all(s)?;
    setup(&dec, s, batch, context)?;
    for _ in 0..args.warmup {
        graphs.run(s, batch)?;
        s.synchronize()?;
    }
    if args.profile_step {
        // SAFETY: no arguments; the profiler's start and stop only mark what ncu collects.
        unsafe { cudaProfilerStart() };
        graphs.run(s, batch)?;
        s.synchronize()?;
        // SAFETY: as above.
        unsafe { cudaProfilerStop() };
    }
    let late_ms = match &args.barrier {
        Some(dir) => meet(dir)?,
        None => 0.0,
    };
    let mut wall = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed().as_secs_f64() < seconds {
        let t = Instant::now();
        graphs.run(s, batch)?;
        s.synchronize()?;
        wall.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let out = dec.borrow().read_output(batch)?;
    let finite = out.iter().all(|&b| half::f16::from_bits(b).to_f32().is_finite());
    let st = stats(wall.iter().copied());
    let line = json!({
        "pid": std::process::id(), "batch": batch, "context": context, "layers": layers, "pdl": args.pdl,
        "steps": wall.len(), "seconds": elapsed, "steps_per_s": wall.len() as f64 / elapsed,
        "median_ms": st.median, "p99_ms": st.p99, "late_ms": late_ms, "finite": finite,
        "mps_active_thread_percentage": std::env::var("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").ok(),
    });
    println!("{line}");
    drop(graphs);
    Ok(finite)
}

extern "C" {
    /// `cuda_profiler_api.h` (in the CUDA runtime ordo links): starts what a profiler collects.
    fn cudaProfilerStart() -> i32;
    /// Stops it.
    fn cudaProfilerStop() -> i32;
}

/// `--barrier DIR`: announces this process (`DIR/ready.PID`), waits for `DIR/go` and then for the
/// wall-clock time (Unix ms) it holds; how late this process was for that time (ms).
fn meet(dir: &std::path::Path) -> Result<f64> {
    let now_ms =
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let ready = dir.join(format!("ready.{}", std::process::id()));
    std::fs::write(&ready, b"").map_err(|e| io_error("writing the barrier's ready file", e))?;
    let go = dir.join("go");
    let deadline = Instant::now() + std::time::Duration::from_secs(600);
    let at = loop {
        if let Ok(text) = std::fs::read_to_string(&go) {
            if let Ok(at) = text.trim().parse::<f64>() {
                break at;
            }
        }
        if Instant::now() > deadline {
            return Err(Error::invalid("ordo-decode --barrier", "no go file within 10 minutes"));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    let late = (now_ms() - at).max(0.0);
    while now_ms() < at {
        std::hint::spin_loop();
    }
    Ok(late)
}

/// Pre-fills the caches for `context` tokens, sets every position to `context` and the input from
/// the formula; synchronised.
fn setup(dec: &RefCell<Decoder<'_>>, s: StreamRef<'_>, batch: usize, context: usize) -> Result<()> {
    let mut d = dec.borrow_mut();
    d.prefill(batch, context)?;
    d.set_positions(&vec![context as i32; batch])?;
    d.fill_input(batch)?;
    s.synchronize()
}

/// ordo's step of `layers` layers at batch 1 against the CPU reference at full shapes.
fn reference_check(dec: &RefCell<Decoder<'_>>, s: StreamRef<'_>, context: usize, layers: usize) -> Result<Value> {
    let (config, limits) = {
        let d = dec.borrow();
        (*d.config(), *d.limits())
    };
    setup(dec, s, 1, context)?;
    dec.borrow_mut().step(s, 1, layers)?;
    let out = dec.borrow().read_output(1)?;
    let mut reference = Reference::new(ModelConfig { layers, ..config }, 1, limits.max_ctx);
    reference.prefill(1, context);
    let x = reference.input(1);
    let expected = reference.step(&x, &[context], layers)?;
    let (mut max_abs, mut max_rel, mut pass) = (0f32, 0f32, true);
    for (o, r) in out.iter().map(|&b| half::f16::from_bits(b).to_f32()).zip(&expected) {
        let d = (o - r).abs();
        max_abs = max_abs.max(d);
        max_rel = max_rel.max(d / r.abs().max(1e-3));
        pass &= d <= REF_ATOL + REF_RTOL * r.abs();
    }
    Ok(json!({
        "batch": 1, "context": context, "layers": layers, "max_abs": max_abs, "max_rel": max_rel,
        "atol": REF_ATOL, "rtol": REF_RTOL, "pass": pass,
    }))
}

/// Prints the tables; returns the results and the operations as JSON arrays.
fn report(measured: &[Measured], layers: usize) -> (Vec<Value>, Vec<Value>) {
    println!();
    println!("## Step time ({layers} layers): ms a step, each step synchronised");
    println!();
    println!("GPU busy: the step's GPU time with the queue kept full (each layer behind a spin kernel, no PDL); overhead = median - GPU busy (negative where the replay, with PDL, beats the full eager queue).");
    println!();
    println!("| batch | context | mode | median | p99 | tokens/s | host enqueue | host CPU | GPU busy | overhead | out eager = replayed |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut results = Vec::new();
    let mut ops_json = Vec::new();
    for m in measured {
        let busy_ms = m.profile.busy_us / 1e3;
        let ops_ms = m.profile.ops.iter().map(|(_, us)| us).sum::<f64>() / 1e3;
        for (mode, samples) in [("eager", &m.eager), ("graph", &m.graph)] {
            let wall = stats(samples.iter().map(|x| x.wall_ms));
            let enqueue = stats(samples.iter().map(|x| x.enqueue_ms));
            let cpu = stats(samples.iter().map(|x| x.cpu_ms));
            let tokens = m.batch as f64 / (wall.median / 1e3);
            println!(
                "| {} | {} | {mode} | {:.3} | {:.3} | {:.0} | {:.3} | {:.3} | {:.3} | {:+.3} | {} |",
                m.batch,
                m.context,
                wall.median,
                wall.p99,
                tokens,
                enqueue.median,
                cpu.median,
                busy_ms,
                wall.median - busy_ms,
                m.identical && m.finite
            );
            results.push(json!({
                "batch": m.batch, "context": m.context, "mode": mode,
                "median_ms": wall.median, "p99_ms": wall.p99, "mean_ms": wall.mean,
                "tokens_per_s": tokens, "host_enqueue_ms": enqueue.median, "host_cpu_ms": cpu.median,
                "gpu_busy_ms": busy_ms, "gpu_ops_ms": ops_ms, "overhead_ms": wall.median - busy_ms,
                "steps": samples.len(), "samples_ms": samples.iter().map(|x| x.wall_ms).collect::<Vec<_>>(),
            }));
        }
    }
    println!();
    println!("## GPU time of each operation: us a step (all layers); behind a spin kernel, an event after each operation, no PDL");
    println!();
    let header: Vec<String> = measured.iter().map(|m| format!("b{} c{}", m.batch, m.context)).collect();
    println!("| operation | {} |", header.join(" | "));
    println!("| --- |{}", " --- |".repeat(header.len()));
    if let Some(first) = measured.first() {
        for (k, (op, _)) in first.profile.ops.iter().enumerate() {
            let cells: Vec<String> = measured
                .iter()
                .map(|m| m.profile.ops.get(k).map_or("-".into(), |(_, us)| format!("{us:.1}")))
                .collect();
            println!("| {} | {} |", op.name(), cells.join(" | "));
        }
        let sum = |m: &Measured| m.profile.ops.iter().map(|(_, us)| us).sum::<f64>();
        let totals: Vec<String> = measured.iter().map(|m| format!("{:.1}", sum(m))).collect();
        println!("| **sum** | {} |", totals.join(" | "));
        let busy: Vec<String> = measured.iter().map(|m| format!("{:.1}", m.profile.busy_us)).collect();
        println!("| GPU busy (no events between operations) | {} |", busy.join(" | "));
    }
    for m in measured {
        for (op, us) in &m.profile.ops {
            ops_json.push(json!({
                "batch": m.batch, "context": m.context, "op": op.name(), "category": op.category(), "us_per_step": us,
            }));
        }
    }
    (results, ops_json)
}

fn io_error(what: &str, e: std::io::Error) -> Error {
    Error::invalid("ordo-decode", format!("{what}: {e}"))
}
