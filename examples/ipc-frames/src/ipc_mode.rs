//! Mode A, ordo's way: the ring's slots are `IpcBuffer`s the producer exports once and the
//! consumer maps once (`IpcMapping`); each slot has two IPC events, `ready` (the producer's,
//! recorded after the fill) and `free` (the consumer's, recorded after its copy out of the slot).
//! Per frame the producer's stream waits on `free[k]`, fills slot `k` and records `ready[k]`; the
//! consumer's stream waits on `ready[k]`, copies the slot into its own buffer and records
//! `free[k]`. Neither host waits for the GPU; the messages only say that a record has been made,
//! so that the other side's wait, enqueued after the message, waits for that record.

use crate::failure::{fail, Context, Result};
use crate::fill::Fill;
use crate::host_calls;
use crate::link::{ConsumerLink, Link};
use crate::pass::{self, Consume, Produce};
use ordo_cuda::ipc::{ImportedEvent, IpcBuffer, IpcEvent, IpcEventHandle, IpcMapping, IpcMemHandle};
use ordo_cuda::memory::copy;
use ordo_cuda::{DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream, StreamRef};
use ordo_ipc_frames::args::Args;
use ordo_ipc_frames::report::Row;
use ordo_ipc_frames::wire::{Message, Setup};

struct Producer<'a, 's> {
    fill: &'a Fill,
    stream: StreamRef<'s>,
    slots: &'a mut [IpcBuffer<'s, u32>],
    ready: &'a [IpcEvent],
    free: &'a [ImportedEvent<'a>],
    /// Whether slot `k` has held a frame: its next use waits on `free[k]`.
    used: Vec<bool>,
}

impl Produce for Producer<'_, '_> {
    fn produce(&mut self, index: u64, slot: usize) -> Result<()> {
        let s = self.stream;
        if self.used[slot] {
            // The consumer recorded `free[slot]` before its Free message, which has been received.
            host_calls::WAIT_IMPORTED.time(|| s.wait_event(&self.free[slot]))?;
        }
        let buffer = &mut self.slots[slot];
        let words = buffer.len();
        // SAFETY: the slot's `words` words, freed only after `s` has drained (IpcBuffer's drop).
        host_calls::FILL.time(|| unsafe { self.fill.launch(s, buffer.as_mut_ptr(), words, index) })?;
        host_calls::RECORD_IPC.time(|| self.ready[slot].record(s))?;
        self.used[slot] = true;
        Ok(())
    }
}

/// The producer's side: exports, runs the passes, tears down in the order CUDA asks (the consumer
/// closes its mappings and imported events before this process frees what it exported).
pub fn produce(link: &mut Link, fill: &Fill, s: StreamRef<'_>, args: &Args, mib: usize) -> Result<Row> {
    let words = Args::frame_bytes(mib) / 4;
    let mut slots = Vec::with_capacity(args.slots);
    let mut ready = Vec::with_capacity(args.slots);
    let outcome = (|| {
        for _ in 0..args.slots {
            slots.push(IpcBuffer::<u32>::alloc(words, s).context("allocating an IPC slot")?);
            ready.push(IpcEvent::new().context("creating an IPC event")?);
        }
        exchange_and_run(link, fill, s, args, mib, &mut slots, &ready)
    })();
    // On an error the consumer is killed before the slots are freed under its mappings.
    if outcome.is_err() {
        link.kill();
    }
    outcome
}

fn exchange_and_run<'s>(
    link: &mut Link,
    fill: &Fill,
    s: StreamRef<'s>,
    args: &Args,
    mib: usize,
    slots: &mut [IpcBuffer<'s, u32>],
    ready: &[IpcEvent],
) -> Result<Row> {
    let setup = Setup {
        frame_bytes: Args::frame_bytes(mib) as u64,
        slots: args.slots as u32,
        max_frames: args.max_frames() as u64,
    };
    link.send(&Message::SetupIpc(setup))?;
    for b in slots.iter() {
        link.send(&Message::Handle(b.export().context("exporting a slot")?.to_bytes().to_vec()))?;
    }
    for e in ready {
        link.send(&Message::Handle(e.export().context("exporting a ready event")?.to_bytes().to_vec()))?;
    }
    let free_bytes = (0..args.slots).map(|_| link.recv_handle()).collect::<Result<Vec<_>>>()?;
    link.expect(&Message::Ready)?;
    // SAFETY: the consumer keeps its free events until this process sends Released, after these
    // handles' events have been dropped.
    let free_handles = free_bytes
        .iter()
        .map(|b| unsafe { IpcEventHandle::from_bytes(b) })
        .collect::<ordo_cuda::Result<Vec<_>>>()
        .context("the consumer's free events")?;
    let free = free_handles
        .iter()
        .map(ImportedEvent::open)
        .collect::<ordo_cuda::Result<Vec<_>>>()
        .context("opening a free event")?;
    let mut side = Producer { fill, stream: s, slots, ready, free: &free, used: vec![false; args.slots] };
    let row = pass::produce_passes(link, &mut side, args, "ipc", mib)?;
    host_calls::print_and_reset(&format!("producer, {mib} MiB"));
    link.send(&Message::Teardown)?;
    link.expect(&Message::TornDown)?;
    // Every wait on them has been enqueued; the waits hold on after the events' destruction.
    drop(free);
    link.send(&Message::Released)?;
    Ok(row)
}

struct Consumer<'a, 's> {
    stream: StreamRef<'s>,
    slots: &'a [IpcMapping<'s, u32>],
    ready: &'a [ImportedEvent<'s>],
    free: &'a [IpcEvent],
    keep: DeviceBuffer<'s, u32>,
    samples: PinnedBuffer<u32>,
}

impl Consume for Consumer<'_, '_> {
    fn consume(&mut self, slot: usize, seq: usize) -> Result<()> {
        let s = self.stream;
        host_calls::WAIT_IMPORTED.time(|| s.wait_event(&self.ready[slot]))?;
        // SAFETY: the mapping is closed, and `keep` freed, only after `s` has drained.
        host_calls::COPY_OUT
            .time(|| unsafe { copy::d2d_async(self.keep.as_mut_slice(), self.slots[slot].as_slice(), s) })?;
        host_calls::RECORD_IPC.time(|| self.free[slot].record(s))?;
        sample(s, &self.keep, &mut self.samples, seq)
    }
    fn stream(&self) -> StreamRef<'_> {
        self.stream
    }
    fn samples(&self) -> &[u32] {
        &self.samples
    }
}

/// Copies the first and last words of `keep` into sample pair `seq` on `s`.
pub fn sample(
    s: StreamRef<'_>,
    keep: &DeviceBuffer<'_, u32>,
    samples: &mut PinnedBuffer<u32>,
    seq: usize,
) -> Result<()> {
    let last = keep.len() - 1;
    // SAFETY: `keep` is freed on `s`, after the copies; `samples` is read and freed only after `s`
    // has been synchronised.
    unsafe {
        copy::d2h_async(samples.pinned_range_mut(2 * seq..2 * seq + 1)?, keep.slice(0..1)?, s)?;
        copy::d2h_async(samples.pinned_range_mut(2 * seq + 1..2 * seq + 2)?, keep.slice(last..last + 1)?, s)?;
    }
    Ok(())
}

/// The words of a frame of `setup`, refused when it is no whole, non-zero number of them.
pub fn frame_words(setup: &Setup) -> Result<usize> {
    let bytes = usize::try_from(setup.frame_bytes).map_err(|_| fail("a frame larger than this machine addresses"))?;
    if bytes == 0 || bytes % 4 != 0 || setup.slots == 0 || setup.max_frames == 0 {
        return Err(fail(format!("a setup this consumer cannot hold: {setup:?}")));
    }
    Ok(bytes / 4)
}

/// The consumer's side, from the setup to the producer's Released.
pub fn consume(link: &mut ConsumerLink, setup: Setup) -> Result<()> {
    let words = frame_words(&setup)?;
    let slots = setup.slots as usize;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    // Made first, dropped last: the producer's imported copies are gone by Released.
    let free = (0..slots).map(|_| IpcEvent::new()).collect::<ordo_cuda::Result<Vec<_>>>()?;
    let slot_bytes = (0..slots).map(|_| link.recv_handle()).collect::<Result<Vec<_>>>()?;
    let ready_bytes = (0..slots).map(|_| link.recv_handle()).collect::<Result<Vec<_>>>()?;
    // SAFETY: the producer keeps its slots and ready events until this process sends TornDown,
    // after the mappings and imported events have been closed; the sizes are the producer's.
    let (slot_handles, ready_handles) = unsafe {
        (
            slot_bytes.iter().map(|b| IpcMemHandle::from_bytes(b)).collect::<ordo_cuda::Result<Vec<_>>>()?,
            ready_bytes.iter().map(|b| IpcEventHandle::from_bytes(b)).collect::<ordo_cuda::Result<Vec<_>>>()?,
        )
    };
    let mappings = slot_handles
        .iter()
        .map(|h| IpcMapping::<u32>::open(h, s))
        .collect::<ordo_cuda::Result<Vec<_>>>()
        .context("mapping a slot")?;
    if mappings.iter().any(|m| m.len() != words) {
        return Err(fail("a slot's size is not the frame's"));
    }
    let ready = ready_handles
        .iter()
        .map(ImportedEvent::open)
        .collect::<ordo_cuda::Result<Vec<_>>>()
        .context("opening a ready event")?;
    for e in &free {
        link.send(&Message::Handle(e.export()?.to_bytes().to_vec()))?;
    }
    let keep = DeviceBuffer::<u32>::alloc_async(words, s)?;
    let samples = PinnedBuffer::<u32>::zeroed(2 * setup.max_frames as usize, HostAllocFlags::empty())?;
    link.send(&Message::Ready)?;
    let mut side = Consumer { stream: s, slots: &mappings, ready: &ready, free: &free, keep, samples };
    pass::consume_passes(link, &mut side, slots, words)?;
    host_calls::print_and_reset(&format!("consumer, {} MiB", (words * 4) >> 20));
    drop(side);
    // Each close synchronises `s` first.
    for m in mappings {
        m.close().context("closing a slot's mapping")?;
    }
    drop(ready);
    link.send(&Message::TornDown)?;
    link.expect(&Message::Released)?;
    drop(free);
    Ok(())
}
