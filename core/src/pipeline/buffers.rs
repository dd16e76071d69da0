//! What a pipeline run is given: its buffers ([`Buffers`], [`RunBuffers`]), how it cuts and
//! allocates ([`RunOptions`], [`Stencil`]), and what a stencil's compute gets for one chunk
//! ([`StencilChunk`]).

use crate::memory::{DeviceSlice, DeviceSliceMut, MemPoolRef, PinnedSlice, PinnedSliceMut};

/// The four buffers of a pipeline run, all of one length: host input, its device copy, the device
/// output, and the host output.
pub struct Buffers<'a, T, U> {
    /// Pinned host input.
    pub input: PinnedSlice<'a, T>,
    /// Device memory the input is copied into.
    pub dev_in: DeviceSliceMut<'a, T>,
    /// Device memory the compute writes.
    pub dev_out: DeviceSliceMut<'a, U>,
    /// Pinned host output.
    pub output: PinnedSliceMut<'a, U>,
}

/// The buffers of [`Pipeline::run_with`](super::Pipeline::run_with) and [`Pipeline::run_stencil`](super::Pipeline::run_stencil): the host ones, and the
/// device ones where the caller has them (`None`: the run allocates a temporary of the length of
/// the host buffer it pairs with, see [`RunOptions::pool`]).
pub struct RunBuffers<'a, T, U> {
    /// Pinned host input.
    pub input: PinnedSlice<'a, T>,
    /// Device memory the input is copied into, or `None` for a temporary.
    pub dev_in: Option<DeviceSliceMut<'a, T>>,
    /// Device memory the compute writes, or `None` for a temporary.
    pub dev_out: Option<DeviceSliceMut<'a, U>>,
    /// Pinned host output.
    pub output: PinnedSliceMut<'a, U>,
}

/// How [`Pipeline::run_with`](super::Pipeline::run_with) cuts and allocates.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'p> {
    /// Values of `T` (and of `U`) that make one element: chunks are cut at element boundaries only,
    /// so the compute callback always sees whole elements (1: every value is an element). A run
    /// of bytes with `record_len` 12 moves 12-byte elements.
    pub record_len: usize,
    /// The pool device temporaries come from (`cudaMallocFromPoolAsync` on the caller's stream);
    /// `None`: ordo's pool of the pipeline's device, which keeps their memory mapped between runs
    /// ([`temporaries`](crate::memory::temporaries)). Temporaries are freed on the caller's stream
    /// after the run's join, so their memory returns to the pool stream-ordered.
    pub pool: Option<MemPoolRef<'p>>,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions { record_len: 1, pool: None }
    }
}

/// How [`Pipeline::run_stencil`](super::Pipeline::run_stencil) cuts, reads and allocates: records (rows) of different lengths
/// on the two sides, and a halo of records each compute reads beyond the ones it writes.
#[derive(Debug, Clone, Copy)]
pub struct Stencil<'p> {
    /// Values of `T` a record of the input (a row of the frame; 1 or more).
    pub in_record_len: usize,
    /// Values of `U` a record of the output (1 or more): the output holds this many values for
    /// each input record.
    pub out_record_len: usize,
    /// Records before and after its own that each chunk's compute reads, clamped at the frame's
    /// edges (0: a compute reads only the records it writes). Any value: a halo as large as the
    /// frame reads all of it.
    pub halo: usize,
    /// The pool device temporaries come from, as [`RunOptions::pool`].
    pub pool: Option<MemPoolRef<'p>>,
}

/// What the compute callback of [`Pipeline::run_stencil`](super::Pipeline::run_stencil) gets for one chunk: the records it
/// writes, and the input records it may read (its own and the halo around them).
#[derive(Debug)]
pub struct StencilChunk<'a, T, U> {
    /// The device input's records `first_row - before .. first_row + rows + after`, copied in
    /// before the compute runs. Shared: the computes of neighbouring chunks read the same records,
    /// possibly at the same time on other streams, so nothing may write through it.
    pub input: DeviceSlice<'a, T>,
    /// Records of `input` before the first record written: the halo, fewer at the frame's top.
    pub before: usize,
    /// Records of `input` after the last record written: the halo, fewer at the frame's bottom.
    pub after: usize,
    /// The frame's index of the first record written (the record at `input`'s `before`).
    pub first_row: usize,
    /// Records written: `output` holds `rows` output records.
    pub rows: usize,
    /// The device output's records `first_row .. first_row + rows`: this chunk's alone.
    pub output: DeviceSliceMut<'a, U>,
}
