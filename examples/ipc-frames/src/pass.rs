//! A pass: frames handed over through a ring of slots, the same for both modes. The producer
//! hands frame `seq` over in slot `seq % window` once the consumer has freed that slot's previous
//! frame (its `Free` message received), so at most `window` frames are in flight; the consumer
//! answers each frame with `Free`. At the end the producer sends `Drain`, and the consumer
//! synchronises its stream, checks the samples and answers `Drained`.

use crate::failure::{fail, Result};
use crate::link::{ConsumerLink, Link};
use ordo_cuda::StreamRef;
use ordo_ipc_frames::args::Args;
use ordo_ipc_frames::clock::monotonic_ns;
use ordo_ipc_frames::pattern::{seed, word};
use ordo_ipc_frames::report::Row;
use ordo_ipc_frames::wire::{Frame, Message};
use std::collections::VecDeque;

/// The producer's side of a mode.
pub trait Produce {
    /// Makes frame `index` in `slot` and makes it visible to the consumer (the message follows).
    /// The consumer has freed the slot's previous frame: its `Free` has been received.
    fn produce(&mut self, index: u64, slot: usize) -> Result<()>;
}

/// The consumer's side of a mode.
pub trait Consume {
    /// Consumes the frame in `slot` into the consumer's own device buffer, copies its first and
    /// last words into sample pair `seq`, and releases the slot (so that the producer may write it
    /// once told).
    fn consume(&mut self, slot: usize, seq: usize) -> Result<()>;
    /// The stream the consume runs on.
    fn stream(&self) -> StreamRef<'_>;
    /// The sample pairs (read once the stream has been synchronised).
    fn samples(&self) -> &[u32];
}

/// What a pass measured.
struct Pass {
    elapsed_ns: u64,
    latencies_ns: Vec<u64>,
    checked: u64,
    wrong: u64,
}

/// The producer's passes of one mode and size: warm-up, timed (`--slots` in flight), latency (one
/// frame in flight, the consumer synchronising after each).
pub fn produce_passes(
    link: &mut Link,
    side: &mut impl Produce,
    args: &Args,
    mode: &'static str,
    mib: usize,
) -> Result<Row> {
    let mut index = 0u64;
    let mut passes = Vec::new();
    if args.warmup > 0 {
        passes.push(produce_pass(link, side, args.warmup, args.slots, false, &mut index)?);
    }
    let timed = produce_pass(link, side, args.frames, args.slots, false, &mut index)?;
    let latency = produce_pass(link, side, args.frames, 1, true, &mut index)?;
    let (checked, wrong) =
        passes.iter().chain([&timed, &latency]).fold((0, 0), |(c, w), p| (c + p.checked, w + p.wrong));
    Ok(Row {
        mode,
        frame_mib: mib,
        frames: args.frames,
        elapsed_ns: timed.elapsed_ns,
        latencies_ns: latency.latencies_ns,
        checked,
        wrong,
    })
}

fn produce_pass(
    link: &mut Link,
    side: &mut impl Produce,
    frames: usize,
    window: usize,
    latency: bool,
    index: &mut u64,
) -> Result<Pass> {
    let mut in_flight: VecDeque<Frame> = VecDeque::with_capacity(window);
    let mut latencies_ns = Vec::with_capacity(if latency { frames } else { 0 });
    let mut first_ns = None;
    for seq in 0..frames {
        if in_flight.len() == window {
            receive_free(link, &mut in_flight, latency.then_some(&mut latencies_ns))?;
        }
        let slot = seq % window;
        let started_ns = monotonic_ns();
        first_ns.get_or_insert(started_ns);
        side.produce(*index, slot)?;
        let frame = Frame { seq: seq as u64, index: *index, slot: slot as u32, started_ns, latency };
        link.send(&Message::Frame(frame))?;
        in_flight.push_back(frame);
        *index += 1;
    }
    while !in_flight.is_empty() {
        receive_free(link, &mut in_flight, latency.then_some(&mut latencies_ns))?;
    }
    link.send(&Message::Drain)?;
    match link.recv()? {
        Message::Drained { done_ns, checked, wrong } => {
            Ok(Pass { elapsed_ns: done_ns.saturating_sub(first_ns.unwrap_or(done_ns)), latencies_ns, checked, wrong })
        }
        m => Err(fail(format!("the consumer sent {m:?} where Drained belongs"))),
    }
}

/// Receives the consumer's `Free` of the oldest frame in flight (the consumer answers in order).
fn receive_free(link: &mut Link, in_flight: &mut VecDeque<Frame>, latencies: Option<&mut Vec<u64>>) -> Result<()> {
    let Some(oldest) = in_flight.pop_front() else { return Ok(()) };
    match link.recv()? {
        Message::Free { seq, slot, done_ns } if seq == oldest.seq && slot == oldest.slot => {
            if let Some(latencies) = latencies {
                latencies.push(done_ns.saturating_sub(oldest.started_ns));
            }
            Ok(())
        }
        m => Err(fail(format!("the consumer sent {m:?} where the Free of frame {} belongs", oldest.seq))),
    }
}

/// The consumer's side of one mode: frames until `Teardown`.
pub fn consume_passes(link: &mut ConsumerLink, side: &mut impl Consume, slots: usize, words: usize) -> Result<()> {
    let max_frames = side.samples().len() / 2;
    let mut indexes: Vec<u64> = Vec::with_capacity(max_frames);
    loop {
        match link.recv()? {
            Message::Frame(f) => {
                let (seq, slot) = (f.seq as usize, f.slot as usize);
                if slot >= slots || seq != indexes.len() || seq >= max_frames {
                    return Err(fail(format!("frame {f:?} out of place: {slots} slots, {max_frames} frames a pass")));
                }
                side.consume(slot, seq)?;
                let done_ns = if f.latency {
                    side.stream().synchronize()?;
                    monotonic_ns()
                } else {
                    0
                };
                indexes.push(f.index);
                link.send(&Message::Free { seq: f.seq, slot: f.slot, done_ns })?;
            }
            Message::Drain => {
                side.stream().synchronize()?;
                let done_ns = monotonic_ns();
                let (checked, wrong) = check(side.samples(), &indexes, words);
                indexes.clear();
                link.send(&Message::Drained { done_ns, checked, wrong })?;
            }
            Message::Teardown => return Ok(()),
            m => return Err(fail(format!("the producer sent {m:?} during a pass"))),
        }
    }
}

/// Compares sample pair `seq` (the first and last words of the consumer's copy) with frame
/// `indexes[seq]`; (words checked, words wrong). The first wrong word is told on standard error.
fn check(samples: &[u32], indexes: &[u64], words: usize) -> (u64, u64) {
    let mut wrong = 0u64;
    for (seq, &index) in indexes.iter().enumerate() {
        for (k, j) in [0, words - 1].into_iter().enumerate() {
            let (got, want) = (samples[2 * seq + k], word(seed(index), j as u64));
            if got != want {
                if wrong == 0 {
                    eprintln!("ipc-frames consumer: frame {index} word {j}: {got:#010x}, expected {want:#010x}");
                }
                wrong += 1;
            }
        }
    }
    (2 * indexes.len() as u64, wrong)
}
