//! Mode B, the baseline written without IPC: the ring's slots are pinned host memory both
//! processes map (`memfd_create`, `MAP_SHARED`, registered with `cudaHostRegister` in each).
//! Per frame the producer fills its own device frame, copies it out into slot `k` and synchronises
//! its stream (it must know the copy landed before telling the consumer); the consumer copies
//! slot `k` into its own device buffer and synchronises before saying the slot is free.

use crate::failure::{fail, Context, Result};
use crate::fill::Fill;
use crate::ipc_mode::{frame_words, sample};
use crate::link::{ConsumerLink, Link};
use crate::pass::{self, Consume, Produce};
use crate::shared_memory::SharedMemory;
use ordo_cuda::memory::copy;
use ordo_cuda::{DeviceBuffer, HostAllocFlags, HostRegisterFlags, PinnedBuffer, RegisteredHost, Stream, StreamRef};
use ordo_ipc_frames::args::Args;
use ordo_ipc_frames::report::Row;
use ordo_ipc_frames::wire::{Message, Setup};
use std::os::fd::{AsFd, OwnedFd};

struct Producer<'a, 'h, 's> {
    fill: &'a Fill,
    stream: StreamRef<'s>,
    frame: DeviceBuffer<'s, u32>,
    host: RegisteredHost<'h, u32>,
}

impl Produce for Producer<'_, '_, '_> {
    fn produce(&mut self, index: u64, slot: usize) -> Result<()> {
        let s = self.stream;
        let words = self.frame.len();
        // SAFETY: `frame`'s `words` words, freed on `s` after the kernel.
        unsafe { self.fill.launch(s, self.frame.as_mut_ptr(), words, index) }?;
        let dst = self.host.pinned_mut().slice_mut(slot * words..(slot + 1) * words)?;
        // SAFETY: the slot is not read by the consumer until the message after the synchronise
        // below; `frame` outlives the copy (freed on `s`).
        unsafe { copy::d2h_async(dst, self.frame.as_slice(), s) }?;
        s.synchronize()?;
        Ok(())
    }
}

/// The producer's side.
pub fn produce(link: &mut Link, fill: &Fill, s: StreamRef<'_>, args: &Args, mib: usize) -> Result<Row> {
    let words = Args::frame_bytes(mib) / 4;
    let ring_bytes = Args::frame_bytes(mib) * args.slots;
    let mut memory = SharedMemory::create(ring_bytes)?;
    // Its own descriptor to send: the registration below borrows the memory for the whole mode.
    let fd = memory.as_fd().try_clone_to_owned().context("duplicating the shared memory's descriptor")?;
    let outcome = (|| {
        let host = RegisteredHost::new(memory.words_mut(), HostRegisterFlags::PORTABLE)
            .context("registering the shared memory (cudaHostRegister)")?;
        let frame = DeviceBuffer::<u32>::alloc_async(words, s)?;
        let setup = Setup {
            frame_bytes: Args::frame_bytes(mib) as u64,
            slots: args.slots as u32,
            max_frames: args.max_frames() as u64,
        };
        link.send_with_fd(&Message::SetupPinned(setup), &fd)?;
        drop(fd);
        link.expect(&Message::Ready)?;
        let mut side = Producer { fill, stream: s, frame, host };
        let row = pass::produce_passes(link, &mut side, args, "pinned", mib)?;
        link.send(&Message::Teardown)?;
        link.expect(&Message::TornDown)?;
        link.send(&Message::Released)?;
        // The last copy out was synchronised; the registration ends with `side`.
        drop(side);
        Ok(row)
    })();
    if outcome.is_err() {
        link.kill();
    }
    outcome
}

struct Consumer<'h, 's> {
    stream: StreamRef<'s>,
    host: RegisteredHost<'h, u32>,
    keep: DeviceBuffer<'s, u32>,
    samples: PinnedBuffer<u32>,
}

impl Consume for Consumer<'_, '_> {
    fn consume(&mut self, slot: usize, seq: usize) -> Result<()> {
        let s = self.stream;
        let words = self.keep.len();
        let src = self.host.pinned().slice(slot * words..(slot + 1) * words)?;
        // SAFETY: the producer does not write the slot until this process's Free, sent after the
        // synchronise below; `keep` is freed on `s`.
        unsafe { copy::h2d_async(self.keep.as_mut_slice(), src, s) }?;
        sample(s, &self.keep, &mut self.samples, seq)?;
        s.synchronize()?;
        Ok(())
    }
    fn stream(&self) -> StreamRef<'_> {
        self.stream
    }
    fn samples(&self) -> &[u32] {
        &self.samples
    }
}

/// The consumer's side, from the setup (with the memory's descriptor) to the producer's Released.
pub fn consume(link: &mut ConsumerLink, setup: Setup, fd: OwnedFd) -> Result<()> {
    let words = frame_words(&setup)?;
    let slots = setup.slots as usize;
    let ring_bytes = words.checked_mul(4 * slots).ok_or_else(|| fail("the ring's size overflows"))?;
    let mut memory = SharedMemory::map(fd, ring_bytes)?;
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let host = RegisteredHost::new(memory.words_mut(), HostRegisterFlags::PORTABLE)
        .context("registering the shared memory (cudaHostRegister)")?;
    let keep = DeviceBuffer::<u32>::alloc_async(words, s)?;
    let samples = PinnedBuffer::<u32>::zeroed(2 * setup.max_frames as usize, HostAllocFlags::empty())?;
    link.send(&Message::Ready)?;
    let mut side = Consumer { stream: s, host, keep, samples };
    pass::consume_passes(link, &mut side, slots, words)?;
    drop(side);
    link.send(&Message::TornDown)?;
    link.expect(&Message::Released)
}
