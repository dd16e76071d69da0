//! Batched copies: up to `N` copies gathered on the stack and enqueued on a stream with one
//! `cudaMemcpyBatchAsync` (CUDA 12.8 and later headers; one signature over 12.8/12.9, which had a
//! `failIdx` parameter, and 13.x, which dropped it).
//!
//! The copies are typed as ordo's asynchronous copies are: device views and pinned host views
//! ([`PinnedSlice`], from a [`PinnedBuffer`](super::PinnedBuffer), a
//! [`RegisteredHost`](super::RegisteredHost) or a [`HostPoolBuffer`](super::HostPoolBuffer)), so
//! pageable memory does not compile here either; each copy's lengths are checked when it is
//! added. The batch borrows every view it holds for `'a`, and holds its arrays inline: adding a
//! copy and enqueuing the batch allocate nothing.
//!
//! CUDA does not capture `cudaMemcpyBatchAsync` into graphs (it refuses the call with
//! `cudaErrorStreamCaptureUnsupported` and leaves the capture as it was: `docs/cuda-behaviours.md`,
//! CB-09); on a capturing stream the
//! batch is enqueued as one `cudaMemcpyAsync` a copy instead, which the capture records as copy
//! nodes, in the batch's order.
//!
//! The copies of one batch run in stream order as a whole, in no order among themselves, so two
//! copies of one batch must not touch the same memory with one of them writing it: the borrows
//! see to that (a destination view borrows its buffer exclusively for the batch's life), except
//! for views made from raw parts, whose contract covers it.
//!
//! ```no_run
//! use ordo_cuda_core::memory::{CopyBatch, CopyAttributes};
//! use ordo_cuda_core::{DeviceBuffer, HostAllocFlags, PinnedBuffer, Stream};
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let stream = Stream::new()?;
//! let s = stream.as_stream();
//! let host = PinnedBuffer::<f32>::from_slice(&[1.0; 1024])?;
//! let mut a = DeviceBuffer::<f32>::alloc_async(512, s)?;
//! let mut b = DeviceBuffer::<f32>::alloc_async(512, s)?;
//! let mut batch = CopyBatch::<8>::new(CopyAttributes::default());
//! batch.h2d(a.as_mut_slice(), host.pinned_range(..512)?)?;
//! batch.h2d(b.as_mut_slice(), host.pinned_range(512..)?)?;
//! // SAFETY: `host`, `a` and `b` outlive the copies: the stream is synchronised before they drop.
//! unsafe { batch.enqueue(s)? };
//! stream.synchronize()?;
//! # Ok(()) }
//! ```

use super::{DeviceCopy, DeviceSlice, DeviceSliceMut, PinnedSlice, PinnedSliceMut};
use crate::error::{Error, Result};
use crate::stream::StreamRef;
use core::ffi::c_void;
use core::marker::PhantomData;
use ordo_cuda_sys as sys;

/// When a batch's copies may read their sources (`cudaMemcpySrcAccessOrder`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceOrder {
    /// In stream order, after the work enqueued before the batch (`cudaMemcpySrcAccessOrderStream`):
    /// what `cudaMemcpyAsync` does.
    Stream,
    /// Out of stream order, and done before the enqueue returns
    /// (`cudaMemcpySrcAccessOrderDuringApiCall`): for sources no earlier work on the stream
    /// writes.
    DuringCall,
    /// Out of stream order, at any time, also after the enqueue returns
    /// (`cudaMemcpySrcAccessOrderAny`): for sources no earlier work on the stream writes.
    Any,
}

impl SourceOrder {
    const fn to_raw(self) -> sys::cudaMemcpySrcAccessOrder {
        match self {
            SourceOrder::Stream => sys::cudaMemcpySrcAccessOrder::cudaMemcpySrcAccessOrderStream,
            SourceOrder::DuringCall => sys::cudaMemcpySrcAccessOrder::cudaMemcpySrcAccessOrderDuringApiCall,
            SourceOrder::Any => sys::cudaMemcpySrcAccessOrder::cudaMemcpySrcAccessOrderAny,
        }
    }
}

/// The attributes of a run of copies in a batch (`cudaMemcpyAttributes`). CUDA's location hints
/// apply to managed and pageable memory only, which a batch does not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CopyAttributes {
    /// When the sources may be read.
    pub source_order: SourceOrder,
    /// `cudaMemcpyFlagPreferOverlapWithCompute`: a hint that the copies should overlap with
    /// compute work (CUDA may ignore it).
    pub prefer_overlap_with_compute: bool,
}

impl Default for CopyAttributes {
    /// Stream order, no flags: the behaviour of `cudaMemcpyAsync`.
    fn default() -> CopyAttributes {
        CopyAttributes { source_order: SourceOrder::Stream, prefer_overlap_with_compute: false }
    }
}

impl CopyAttributes {
    fn to_raw(self) -> sys::cudaMemcpyAttributes {
        let flags = if self.prefer_overlap_with_compute {
            sys::cudaMemcpyFlags::cudaMemcpyFlagPreferOverlapWithCompute
        } else {
            sys::cudaMemcpyFlags::cudaMemcpyFlagDefault
        };
        sys::cudaMemcpyAttributes { srcAccessOrder: self.source_order.to_raw(), flags: flags.0, ..Default::default() }
    }
}

/// Up to `N` typed copies and their attributes, held inline (no allocation), enqueued with one
/// `cudaMemcpyBatchAsync`. It borrows the views it holds for `'a`. See the
/// [module documentation](self).
pub struct CopyBatch<'a, const N: usize> {
    dsts: [*mut c_void; N],
    srcs: [*const c_void; N],
    sizes: [usize; N],
    len: usize,
    attrs: [sys::cudaMemcpyAttributes; N],
    /// `attr_starts[k]`: the first copy `attrs[k]` applies to.
    attr_starts: [usize; N],
    attr_count: usize,
    /// The attributes of the next copy added.
    current: CopyAttributes,
    _views: PhantomData<&'a mut [u8]>,
}

// SAFETY: the pointers are views the batch borrows for 'a; moving the batch to another thread
// moves those borrows, as the views themselves may move (`DeviceSliceMut`/`PinnedSliceMut` are
// `Send` for `T: Send`, and every `DeviceCopy` is `Send + Sync`).
unsafe impl<const N: usize> Send for CopyBatch<'_, N> {}

impl<const N: usize> core::fmt::Debug for CopyBatch<'_, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CopyBatch")
            .field("len", &self.len)
            .field("capacity", &N)
            .field("current", &self.current)
            .finish()
    }
}

const CALL: &str = "CopyBatch";

impl<'a, const N: usize> CopyBatch<'a, N> {
    /// An empty batch whose copies get `attributes` until [`set_attributes`](Self::set_attributes).
    pub fn new(attributes: CopyAttributes) -> Self {
        CopyBatch {
            dsts: [core::ptr::null_mut(); N],
            srcs: [core::ptr::null(); N],
            sizes: [0; N],
            len: 0,
            attrs: [sys::cudaMemcpyAttributes::default(); N],
            attr_starts: [0; N],
            attr_count: 0,
            current: attributes,
            _views: PhantomData,
        }
    }

    /// The copies added.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no copy was added.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies added from now on get `attributes`.
    pub fn set_attributes(&mut self, attributes: CopyAttributes) {
        self.current = attributes;
    }

    /// Forgets every copy (the borrows end with the batch), keeping the current attributes.
    pub fn clear(&mut self) {
        self.len = 0;
        self.attr_count = 0;
    }

    fn push(
        &mut self,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        dst_len: usize,
        src_len: usize,
    ) -> Result<()> {
        if dst_len != src_len {
            return Err(Error::invalid(CALL, "source and destination lengths differ"));
        }
        if dst_len == 0 {
            return Err(Error::invalid(CALL, "zero-length copy"));
        }
        if self.len == N {
            return Err(Error::invalid(CALL, "the batch is full (N copies)"));
        }
        let raw = self.current.to_raw();
        let same_run = self.attr_count > 0 && self.attrs.get(self.attr_count - 1).is_some_and(|a| same(a, &raw));
        if !same_run {
            // A new run of attributes starts at this copy; at most one a copy, so it fits.
            if let (Some(a), Some(s)) = (self.attrs.get_mut(self.attr_count), self.attr_starts.get_mut(self.attr_count))
            {
                *a = raw;
                *s = self.len;
                self.attr_count += 1;
            }
        }
        if let (Some(d), Some(s), Some(b)) =
            (self.dsts.get_mut(self.len), self.srcs.get_mut(self.len), self.sizes.get_mut(self.len))
        {
            (*d, *s, *b) = (dst, src, bytes);
            self.len += 1;
        }
        Ok(())
    }

    /// Adds a host-to-device copy of `src` into `dst` (equal lengths, not zero).
    pub fn h2d<T: DeviceCopy>(&mut self, dst: DeviceSliceMut<'a, T>, src: PinnedSlice<'a, T>) -> Result<()> {
        self.push(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), dst.len(), src.len())
    }

    /// Adds a device-to-host copy of `src` into `dst` (equal lengths, not zero).
    pub fn d2h<T: DeviceCopy>(&mut self, dst: PinnedSliceMut<'a, T>, src: DeviceSlice<'a, T>) -> Result<()> {
        self.push(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), dst.len(), src.len())
    }

    /// Adds a device-to-device copy of `src` into `dst` (equal lengths, not zero).
    pub fn d2d<T: DeviceCopy>(&mut self, dst: DeviceSliceMut<'a, T>, src: DeviceSlice<'a, T>) -> Result<()> {
        self.push(dst.as_mut_ptr().cast(), src.as_ptr().cast(), src.byte_len(), dst.len(), src.len())
    }

    /// Enqueues every copy on `stream` with one `cudaMemcpyBatchAsync` (one `cudaMemcpyAsync` a
    /// copy where CUDA refuses the batch because the stream is capturing). An empty batch is a
    /// usage error. The batch keeps its copies (enqueue it again, or [`clear`](Self::clear) it).
    ///
    /// # Safety
    /// As for [`copy::h2d_async`](super::copy::h2d_async) and its kin, for every copy: the host
    /// and device memory stay allocated (and the host memory unwritten by the CPU while read,
    /// unaccessed while written) until the copy has completed on `stream`; device memory of a
    /// buffer of another stream is ordered with it ([`order`](super::order)); a capture extends
    /// this to every replay. Under [`SourceOrder::DuringCall`] or [`SourceOrder::Any`], no work
    /// enqueued on `stream` before the batch writes a source.
    pub unsafe fn enqueue(&mut self, stream: StreamRef<'_>) -> Result<()> {
        if self.len == 0 {
            return Err(Error::invalid("CopyBatch::enqueue", "an empty batch"));
        }
        // SAFETY: `len` copies in the arrays (checked when added), `attr_count` runs starting at
        // 0, increasing, each below `len`; the memory is the caller's contract.
        let status = cuda_call!(
            unsafe {
                sys::compat::cudaMemcpyBatchAsync(
                    self.dsts.as_ptr(),
                    self.srcs.as_ptr(),
                    self.sizes.as_ptr(),
                    self.len,
                    self.attrs.as_mut_ptr(),
                    self.attr_starts.as_mut_ptr(),
                    self.attr_count,
                    stream.as_raw(),
                )
            },
            answers: cudaErrorStreamCaptureUnsupported
        )?;
        if status == sys::cudaError::cudaErrorStreamCaptureUnsupported {
            // SAFETY: forwarded contract.
            return unsafe { self.enqueue_one_by_one(stream) };
        }
        Ok(())
    }

    /// The copies one `cudaMemcpyAsync` each, in order: what a capture records. Clears the
    /// refusal of the batch that CUDA left as the thread's last error first.
    ///
    /// # Safety
    /// As [`enqueue`](Self::enqueue).
    #[cold]
    unsafe fn enqueue_one_by_one(&self, stream: StreamRef<'_>) -> Result<()> {
        // SAFETY: no arguments.
        if unsafe { sys::cudaPeekAtLastError() } == sys::cudaError::cudaErrorStreamCaptureUnsupported {
            // SAFETY: no arguments.
            unsafe { sys::cudaGetLastError() };
        }
        let copies = self.dsts.iter().zip(&self.srcs).zip(&self.sizes).take(self.len);
        for ((&dst, &src), &bytes) in copies {
            // SAFETY: a copy checked when added; the memory is the caller's contract.
            cuda_call!(unsafe {
                sys::cudaMemcpyAsync(dst, src, bytes, sys::cudaMemcpyKind::cudaMemcpyDefault, stream.as_raw())
            })?;
        }
        Ok(())
    }
}

fn same(a: &sys::cudaMemcpyAttributes, b: &sys::cudaMemcpyAttributes) -> bool {
    a.srcAccessOrder == b.srcAccessOrder && a.flags == b.flags
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn views(n: usize) -> (DeviceSliceMut<'static, u32>, PinnedSlice<'static, u32>) {
        // SAFETY: never dereferenced or copied: the tests only fill the batch's arrays.
        unsafe {
            (
                DeviceSliceMut::from_raw_parts(0x1000 as *mut u32, n),
                PinnedSlice::from_raw_parts(0x2000 as *const u32, n),
            )
        }
    }

    #[test]
    fn runs_of_attributes_start_where_they_change() {
        let mut b = CopyBatch::<4>::new(CopyAttributes::default());
        let (d, s) = views(8);
        b.h2d(d, s).unwrap();
        let (d, s) = views(8);
        b.h2d(d, s).unwrap();
        b.set_attributes(CopyAttributes { source_order: SourceOrder::Any, prefer_overlap_with_compute: true });
        let (d, s) = views(2);
        b.h2d(d, s).unwrap();
        assert_eq!((b.len(), b.attr_count), (3, 2));
        assert_eq!(&b.attr_starts[..2], &[0, 2]);
        assert_eq!(b.sizes[..3], [32, 32, 8]);
        assert_eq!(b.attrs[1].srcAccessOrder, sys::cudaMemcpySrcAccessOrder::cudaMemcpySrcAccessOrderAny);
        assert_eq!(b.attrs[1].flags, 1);
        b.set_attributes(CopyAttributes::default());
        let (d, s) = views(1);
        b.h2d(d, s).unwrap();
        assert_eq!(&b.attr_starts[..3], &[0, 2, 3], "back to the first attributes: a new run");
        let (d, s) = views(1);
        assert!(b.h2d(d, s).unwrap_err().to_string().contains("full"));
        b.clear();
        assert!(b.is_empty() && b.attr_count == 0);
    }

    #[test]
    fn lengths_are_checked_when_a_copy_is_added() {
        let mut b = CopyBatch::<2>::new(CopyAttributes::default());
        let (d, _) = views(4);
        let (_, s) = views(5);
        assert!(b.h2d(d, s).unwrap_err().to_string().contains("lengths differ"));
        let (d, s) = views(0);
        assert!(b.h2d(d, s).unwrap_err().to_string().contains("zero-length"));
        assert!(b.is_empty(), "a refused copy is not added");
        // SAFETY: an empty batch is refused before CUDA is called.
        let err = unsafe { b.enqueue(StreamRef::per_thread_default()) }.unwrap_err();
        assert!(err.to_string().contains("empty"), "{err}");
    }
}
