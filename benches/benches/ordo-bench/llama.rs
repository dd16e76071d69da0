//! A Llama-3-8B-shaped decode step (examples/decode: cuBLAS GEMMs, ordo's fused kernels launched
//! by the PDL plan) of a few layers, replayed from the bucket graph cache against the same step
//! enqueued eagerly, in the same interleaved rounds. The full 32-layer comparison with PyTorch is
//! `ordo-decode` with `torch_decode.py` (examples/decode); this group keeps the step in the report
//! at a size that builds in a second.
//!
//! Per batch: the replayed step against the eager one (the ratio is what the graph saves), with
//! the step's GPU time (the per-operation profile, events between operations behind a spin kernel)
//! and the eager step without PDL in the note.

use crate::{interleave, Report};
use ordo_cuda_core::graph_cache::{CacheOptions, GraphCache, Overflow};
use ordo_cuda_core::{Result, Stream, StreamRef};
use ordo_decode::{cublas_path, Decoder, Limits, ModelConfig};
use std::cell::RefCell;
use std::time::Instant;

/// Layers of the step (of Llama-3-8B's 32).
const LAYERS: usize = 4;
/// Cached tokens before the new one.
const CONTEXT: usize = 512;
/// The batches, one graph-cache bucket each.
const BATCHES: [usize; 2] = [1, 8];
/// Steps timed in one sample (each synchronised); the sample is their median.
const STEPS: usize = 10;

/// The median of `STEPS` steps of `f`, each timed from the call to the synchronise's return (us).
fn steps_us(s: StreamRef<'_>, f: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    let mut us = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let t0 = Instant::now();
        f()?;
        s.synchronize()?;
        us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    Ok(crate::median(&us))
}

pub(crate) fn llama_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("llama decode step: weights");
    cublas_path::choose()?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let config = ModelConfig::llama3_8b(LAYERS);
    let limits = Limits::new(BATCHES[BATCHES.len() - 1], CONTEXT, 128)?;
    let dec = RefCell::new(Decoder::new(s, config, limits, true)?);
    let plain = RefCell::new(Decoder::new(s, config, limits, false)?);
    // A warm-up step before each capture: cuBLAS and the kernels meet their first use outside it.
    let options = CacheOptions { warmup: true, ..CacheOptions::default() };
    // SAFETY: the body enqueues the decoder's step on the capturing stream over the decoder's
    // buffers; `dec` is declared before the cache and outlives it; nothing else uses `s` while it
    // captures.
    let mut graphs = unsafe {
        GraphCache::with_options(BATCHES.to_vec(), Overflow::Error, options, |cs, b| {
            dec.borrow_mut().step(cs, b, LAYERS)
        })
    }?;
    for batch in BATCHES {
        r.progress(&format!("llama decode step, batch {batch}"));
        for d in [&dec, &plain] {
            let mut d = d.borrow_mut();
            d.prefill(batch, CONTEXT)?;
            d.set_positions(&vec![CONTEXT as i32; batch])?;
            d.fill_input(batch)?;
        }
        graphs.run(s, batch)?;
        s.synchronize()?;
        let m = interleave(
            rounds,
            &mut [
                &mut || steps_us(s, &mut || graphs.run(s, batch).map(|_| ())),
                &mut || steps_us(s, &mut || dec.borrow_mut().step(s, batch, LAYERS)),
                &mut || steps_us(s, &mut || plain.borrow_mut().step(s, batch, LAYERS)),
            ],
        )?;
        let gpu_us = gpu_time_us(&mut dec.borrow_mut(), s, batch)?;
        r.add(
            "llama",
            format!("Llama-3-8B decode step ({LAYERS} layers, batch {batch}, context {CONTEXT}): graph replay vs eager"),
            "us",
            m[0],
            Some(m[1]),
            format!(
                "baseline: the same step enqueued eagerly (4 cuBLAS GEMMs and 6 ordo kernels a layer); GPU time of the operations {gpu_us:.0} us; eager without PDL {:.0} us; the 32-layer comparison with PyTorch: examples/decode",
                m[2]
            ),
        );
    }
    s.synchronize()?;
    drop(graphs);
    Ok(())
}

/// The step's GPU time: each layer behind a spin kernel, events between operations (us).
fn gpu_time_us(dec: &mut Decoder<'_>, s: StreamRef<'_>, batch: usize) -> Result<f64> {
    use ordo_cuda_core::launch::LaunchConfig;
    use ordo_cuda_core::TimingEvent;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let mut total = 0.0;
    for l in 0..=LAYERS {
        // SAFETY: the spin kernel takes no pointer.
        unsafe { ordo_decode::kernels::spin().launch(s, &LaunchConfig::new(1, 1), (1_000_000,))? };
        start.record(s)?;
        if l < LAYERS {
            dec.layer(s, batch, l, false, &mut |_| Ok(()))?;
        } else {
            dec.final_norm(s, batch, false, &mut |_| Ok(()))?;
        }
        end.record(s)?;
        end.synchronize()?;
        total += end.elapsed_ms_since(&start)? as f64 * 1e3;
    }
    Ok(total)
}
