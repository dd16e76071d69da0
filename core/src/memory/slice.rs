//! Typed views of device memory and of page-locked host memory.

use crate::error::{Error, Result};
use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};

/// Resolves `range` against `len`, with a clear error when it does not fit.
pub(crate) fn resolve(range: impl RangeBounds<usize>, len: usize, call: &'static str) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1).ok_or(Error::invalid(call, "range start overflows"))?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1).ok_or(Error::invalid(call, "range end overflows"))?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    if start > end || end > len {
        return Err(Error::invalid(call, "range out of bounds"));
    }
    Ok((start, end - start))
}

macro_rules! view {
    ($(#[$doc:meta])* $name:ident, $ptr:ty, $borrow:ty, $as_ptr:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'a, T> {
            ptr: $ptr,
            len: usize,
            _borrow: PhantomData<$borrow>,
        }

        impl<'a, T> $name<'a, T> {
            /// A view of `len` elements at `ptr`.
            ///
            /// # Safety
            /// `ptr..ptr+len` is memory of this view's kind, allocated and not otherwise
            /// aliased against this view's access for `'a`.
            #[inline(always)]
            pub unsafe fn from_raw_parts(ptr: $ptr, len: usize) -> Self {
                $name { ptr, len, _borrow: PhantomData }
            }

            /// The first element's address.
            #[inline(always)]
            pub fn $as_ptr(&self) -> $ptr {
                self.ptr
            }

            /// Number of elements.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the view has no elements.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Size in bytes.
            #[inline(always)]
            pub fn byte_len(&self) -> usize {
                self.len * core::mem::size_of::<T>()
            }
        }

        // SAFETY: a view is a pointer and a length, like `&[T]` / `&mut [T]`.
        unsafe impl<T: Sync> Send for $name<'_, T> {}
        // SAFETY: as above.
        unsafe impl<T: Sync> Sync for $name<'_, T> {}
    };
}

view!(
    /// A shared view of device memory.
    DeviceSlice, *const T, &'a [T], as_ptr
);
view!(
    /// An exclusive view of device memory.
    DeviceSliceMut, *mut T, &'a mut [T], as_mut_ptr
);
view!(
    /// A shared view of page-locked (pinned or registered) host memory.
    PinnedSlice, *const T, &'a [T], as_ptr
);
view!(
    /// An exclusive view of page-locked (pinned or registered) host memory.
    PinnedSliceMut, *mut T, &'a mut [T], as_mut_ptr
);

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}
impl<T> Clone for PinnedSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for PinnedSlice<'_, T> {}

impl<'a, T> DeviceSlice<'a, T> {
    /// A sub-view, with a clear error when `range` does not fit.
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (start, len) = resolve(range, self.len, "DeviceSlice::slice")?;
        // SAFETY: inside this view.
        Ok(unsafe { DeviceSlice::from_raw_parts(self.ptr.add(start), len) })
    }
}

impl<'a, T> DeviceSliceMut<'a, T> {
    /// A sub-view, with a clear error when `range` does not fit.
    pub fn slice_mut(self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'a, T>> {
        let (start, len) = resolve(range, self.len, "DeviceSliceMut::slice_mut")?;
        // SAFETY: inside this view, which is given up.
        Ok(unsafe { DeviceSliceMut::from_raw_parts(self.ptr.add(start), len) })
    }

    /// A shorter-lived exclusive view of the same memory.
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        // SAFETY: the same memory, borrowed from `self`.
        unsafe { DeviceSliceMut::from_raw_parts(self.ptr, self.len) }
    }

    /// A shared view of the same memory.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // SAFETY: the same memory, shared from `self`.
        unsafe { DeviceSlice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<'a, T> PinnedSlice<'a, T> {
    /// A sub-view, with a clear error when `range` does not fit.
    pub fn slice(self, range: impl RangeBounds<usize>) -> Result<PinnedSlice<'a, T>> {
        let (start, len) = resolve(range, self.len, "PinnedSlice::slice")?;
        // SAFETY: inside this view.
        Ok(unsafe { PinnedSlice::from_raw_parts(self.ptr.add(start), len) })
    }
}

impl<'a, T> PinnedSliceMut<'a, T> {
    /// A shorter-lived exclusive view of the same memory.
    pub fn reborrow(&mut self) -> PinnedSliceMut<'_, T> {
        // SAFETY: the same memory, borrowed from `self`.
        unsafe { PinnedSliceMut::from_raw_parts(self.ptr, self.len) }
    }

    /// A sub-view, with a clear error when `range` does not fit.
    pub fn slice_mut(self, range: impl RangeBounds<usize>) -> Result<PinnedSliceMut<'a, T>> {
        let (start, len) = resolve(range, self.len, "PinnedSliceMut::slice_mut")?;
        // SAFETY: inside this view, which is given up.
        Ok(unsafe { PinnedSliceMut::from_raw_parts(self.ptr.add(start), len) })
    }
}
