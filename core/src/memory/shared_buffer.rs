//! [`SharedStreamBuffer`]: a device buffer that keeps its stream alive, so that streams and their
//! buffers can live in one struct (a pipeline object, an engine's state) without a borrow.

use super::{DeviceBuffer, DeviceCopy, DeviceSlice, DeviceSliceMut};
use crate::error::Result;
use crate::stream::{Stream, StreamRef};
use alloc::sync::Arc;
use core::ops::RangeBounds;

/// A [`DeviceBuffer`] that holds a shared owner of its stream (`Arc<Stream>`) instead of
/// borrowing it: `'static`, so it can sit in a struct beside the stream, be moved to another
/// thread, or outlive the scope that made the stream. Freed on its stream (`cudaFreeAsync`) when
/// dropped, before its reference to the stream is released, so the stream is destroyed only after
/// the free is enqueued.
///
/// The borrowed form stays the zero-cost default; this one costs one reference count (an atomic
/// increment when made, a decrement when dropped), nothing per use. Its views borrow the buffer,
/// and their [`origin`](DeviceSlice::origin) the stream through it, so no view outlives either.
#[derive(Debug)]
pub struct SharedStreamBuffer<T: DeviceCopy> {
    // Declared first, so dropped first: the free is enqueued while `stream` is still alive.
    buffer: DeviceBuffer<'static, T>,
    stream: Arc<Stream>,
}

impl<T: DeviceCopy> SharedStreamBuffer<T> {
    /// The handle of `stream` as a `'static` reference, for a buffer that keeps the `Arc` beside
    /// it and never hands the reference out longer than it is borrowed.
    fn static_ref(stream: &Arc<Stream>) -> StreamRef<'static> {
        // SAFETY: only the lifetime changes. The stream lives as long as the `Arc` this buffer
        // keeps; the reference stays inside the buffer (dropped before the `Arc`), and is only
        // handed out re-borrowed for `&self` (`stream_ref`, the views' origin).
        unsafe { core::mem::transmute::<StreamRef<'_>, StreamRef<'static>>(stream.as_stream()) }
    }

    /// `len` elements from the current device's current pool, on `stream` (as
    /// [`DeviceBuffer::alloc_async`]).
    #[inline]
    pub fn alloc_async(len: usize, stream: &Arc<Stream>) -> Result<Self> {
        let buffer = DeviceBuffer::alloc_async(len, Self::static_ref(stream))?;
        Ok(SharedStreamBuffer { buffer, stream: Arc::clone(stream) })
    }

    /// `len` zeroed elements (as [`DeviceBuffer::zeroed_async`]).
    pub fn zeroed_async(len: usize, stream: &Arc<Stream>) -> Result<Self> {
        let buffer = DeviceBuffer::zeroed_async(len, Self::static_ref(stream))?;
        Ok(SharedStreamBuffer { buffer, stream: Arc::clone(stream) })
    }

    /// The stream the buffer is freed on.
    #[inline(always)]
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// The stream, borrowed for as long as the buffer is.
    #[inline(always)]
    pub fn stream_ref(&self) -> StreamRef<'_> {
        self.buffer.stream()
    }

    /// Elements.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether the buffer has no elements (never: a zero-length allocation is refused).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Bytes.
    #[inline(always)]
    pub fn byte_len(&self) -> usize {
        self.buffer.byte_len()
    }

    /// The device address.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.buffer.as_ptr()
    }

    /// The device address, for writing.
    #[inline(always)]
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.buffer.as_mut_ptr()
    }

    /// A shared view of the whole buffer; its origin is the buffer's stream.
    #[inline(always)]
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        self.buffer.as_slice()
    }

    /// An exclusive view of the whole buffer; its origin is the buffer's stream.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> DeviceSliceMut<'_, T> {
        self.buffer.as_mut_slice()
    }

    /// A shared view of `range`, with a clear error when it does not fit.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.buffer.slice(range)
    }

    /// An exclusive view of `range`, with a clear error when it does not fit.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        self.buffer.slice_mut(range)
    }

    /// Frees the buffer on its stream, reporting the result (`Drop` keeps it for
    /// [`take_drop_errors`](crate::error::take_drop_errors) instead).
    pub fn free_async(self) -> Result<()> {
        let SharedStreamBuffer { buffer, stream } = self;
        let result = buffer.free_async();
        drop(stream);
        result
    }
}
