//! The source's frame-processing program: 1000 frames of 1024x1024 RGB, grayscale plus a 5x5
//! Gaussian blur, through 1 (serial), 2 and 4 streams. Each stream owns its buffers, so no two
//! streams touch the same memory. Every 50th frame's output is kept and checked against a CPU
//! reference; throughput is reported against the serial version.
//!
//!     cargo run --release -p ordo-cuda-kernels --example frames

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::{DeviceBuffer, Event, HostAllocFlags, PinnedBuffer, Result, Stream, TimingEvent};
use std::process::ExitCode;

#[path = "../tests/common/mod.rs"]
mod common;

const W: usize = 1024;
const H: usize = 1024;
const FRAMES: usize = 1000;
const DISTINCT: usize = 8;
const CHECK_EVERY: usize = 50;

/// Runs all frames through `streams` streams; returns (ms, frames that matched the reference).
fn run(streams: usize, frames: &PinnedBuffer<u8>, refs: &[Vec<u8>]) -> Result<(f32, usize)> {
    let main = Stream::new()?;
    let m = main.as_stream();
    let workers: Vec<Stream> = (0..streams).map(|_| Stream::new()).collect::<Result<_>>()?;
    let mut rgb: Vec<DeviceBuffer<'_, u8>> =
        workers.iter().map(|s| DeviceBuffer::alloc_async(W * H * 3, s.as_stream())).collect::<Result<_>>()?;
    let mut out: Vec<DeviceBuffer<'_, u8>> =
        workers.iter().map(|s| DeviceBuffer::alloc_async(W * H, s.as_stream())).collect::<Result<_>>()?;
    let mut scratch: Vec<PinnedBuffer<u8>> =
        (0..streams).map(|_| PinnedBuffer::zeroed(W * H, HostAllocFlags::empty())).collect::<Result<_>>()?;
    let mut kept = PinnedBuffer::<u8>::zeroed(W * H * FRAMES.div_ceil(CHECK_EVERY), HostAllocFlags::empty())?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let fork = Event::new()?;
    let joins: Vec<Event> = (0..streams).map(|_| Event::new()).collect::<Result<_>>()?;
    for w in &workers {
        w.synchronize()?;
    }
    start.record(m)?;
    fork.record(m)?;
    for w in &workers {
        w.wait_event(&fork)?;
    }
    for f in 0..FRAMES {
        let i = f % streams;
        let s = workers[i].as_stream();
        let src = frames.pinned_range((f % DISTINCT) * W * H * 3..(f % DISTINCT + 1) * W * H * 3)?;
        // SAFETY: every buffer outlives the run (main is synchronised below before they drop).
        unsafe {
            copy::h2d_async(rgb[i].as_mut_slice(), src, s)?;
            ordo_cuda_kernels::frame_filter(s, rgb[i].as_slice(), out[i].as_mut_slice(), W, H)?;
            if f % CHECK_EVERY == 0 {
                let k = f / CHECK_EVERY;
                copy::d2h_async(kept.pinned_range_mut(k * W * H..(k + 1) * W * H)?, out[i].as_slice(), s)?;
            } else {
                copy::d2h_async(scratch[i].pinned_mut(), out[i].as_slice(), s)?;
            }
        }
    }
    for (w, j) in workers.iter().zip(&joins) {
        j.record(w.as_stream())?;
        m.wait_event(j)?;
    }
    end.record(m)?;
    m.synchronize()?;
    let ms = end.elapsed_ms_since(&start)?;
    let matched = (0..FRAMES)
        .step_by(CHECK_EVERY)
        .filter(|f| kept[f / CHECK_EVERY * W * H..(f / CHECK_EVERY + 1) * W * H] == refs[f % DISTINCT][..])
        .count();
    Ok((ms, matched))
}

fn main() -> ExitCode {
    if let Err(e) = ordo_cuda_core::device::count() {
        eprintln!("frames: no usable CUDA device: {e}");
        return ExitCode::FAILURE;
    }
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let host: Vec<u8> = (0..W * H * 3 * DISTINCT)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect();
    let refs: Vec<Vec<u8>> =
        (0..DISTINCT).map(|d| common::frame_filter_cpu(&host[d * W * H * 3..(d + 1) * W * H * 3], W, H)).collect();
    let frames = match PinnedBuffer::from_slice(&host) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("frames: {e}");
            return ExitCode::FAILURE;
        }
    };
    let checked = FRAMES.div_ceil(CHECK_EVERY);
    let mut serial_ms = 0.0;
    let mut ok = true;
    for streams in [1usize, 2, 4] {
        match run(streams, &frames, &refs) {
            Ok((ms, matched)) => {
                if streams == 1 {
                    serial_ms = ms;
                }
                println!(
                    "{streams} stream(s): {FRAMES} frames of {W}x{H} in {ms:.1} ms = {:.0} frames/s ({:.2}x serial); {matched}/{checked} checked frames match the CPU",
                    FRAMES as f32 / ms * 1e3,
                    serial_ms / ms
                );
                ok &= matched == checked;
            }
            Err(e) => {
                eprintln!("frames: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
