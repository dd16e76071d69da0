//! Typed views of device memory and of page-locked host memory.

use crate::error::{Error, Result};
use crate::stream::StreamRef;
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
    ($(#[$doc:meta])* $name:ident, $ptr:ty, $borrow:ty, $as_ptr:ident $(, $field:ident: $fty:ty = $init:expr)?) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'a, T> {
            ptr: $ptr,
            len: usize,
            $($field: $fty,)?
            _borrow: PhantomData<$borrow>,
        }

        impl<'a, T> $name<'a, T> {
            /// A view of `len` elements at `ptr`.
            ///
            /// # Safety
            /// `ptr..ptr+len` is memory of this view's kind (so `len * size_of::<T>()` fits in an
            /// `isize`), allocated and not otherwise aliased against this view's access for `'a`.
            #[inline(always)]
            pub unsafe fn from_raw_parts(ptr: $ptr, len: usize) -> Self {
                $name { ptr, len, $($field: $init,)? _borrow: PhantomData }
            }

            /// The first element's address.
            #[inline(always)]
            pub fn $as_ptr(&self) -> $ptr {
                self.ptr
            }

            super::accessors::len_methods!(
                is_empty: "Whether the view has no elements.",
                byte_len: "Size in bytes. Cannot overflow: the view lies inside one allocation (the \
                           constructors' contract), whose size fits in an `isize`."
            );
        }
    };
}

view!(
    /// A shared view of device memory.
    ///
    /// It knows the stream its buffer is freed on ([`origin`](Self::origin)), so that safe
    /// functions which enqueue on another stream can order their work after what is queued there
    /// (see [`order`](super::order)).
    DeviceSlice, *const T, &'a [T], as_ptr, origin: Option<StreamRef<'a>> = None
);
view!(
    /// An exclusive view of device memory.
    ///
    /// It knows the stream its buffer is freed on ([`origin`](Self::origin)), so that safe
    /// functions which enqueue on another stream can order their work after what is queued there
    /// (see [`order`](super::order)).
    DeviceSliceMut, *mut T, &'a mut [T], as_mut_ptr, origin: Option<StreamRef<'a>> = None
);
view!(
    /// A shared view of page-locked (pinned or registered) host memory.
    PinnedSlice, *const T, &'a [T], as_ptr
);
view!(
    /// An exclusive view of page-locked (pinned or registered) host memory.
    PinnedSliceMut, *mut T, &'a mut [T], as_mut_ptr
);

// SAFETY: shared views are like `&[T]`: sending or sharing one shares the elements, which needs
// `T: Sync`. The origin is a `StreamRef`, which is `Send + Sync`.
unsafe impl<T: Sync> Send for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for DeviceSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Send for PinnedSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for PinnedSlice<'_, T> {}
// SAFETY: exclusive views are like `&mut [T]`: sending one moves access to the elements to
// another thread (`T: Send`); sharing it shares them (`T: Sync`).
unsafe impl<T: Send> Send for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for DeviceSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for PinnedSliceMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for PinnedSliceMut<'_, T> {}

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

/// The methods of a device view that knows the stream its buffer is freed on: the constructor
/// with an origin, [`origin`](DeviceSlice::origin), and the sub-view (`slice`, `slice_mut`) that
/// keeps it. `$a` begins the constructor's doc ("A", "An exclusive").
macro_rules! device_view {
    ($name:ident, $ptr:ty, $a:literal, $sub:ident) => {
        impl<'a, T> $name<'a, T> {
            #[doc = concat!($a, " view of `len` elements at `ptr` of a buffer freed on `origin`")]
            /// (stream-ordered): functions that enqueue on another stream order their work after
            /// `origin`'s.
            ///
            /// # Safety
            /// As for [`from_raw_parts`](Self::from_raw_parts); and the memory is freed, if at all,
            /// only by a stream-ordered free enqueued on `origin`, so that work ordered before that
            /// free (on `origin`, or after an event recorded there) still finds it allocated.
            #[inline(always)]
            pub unsafe fn from_raw_parts_on(ptr: $ptr, len: usize, origin: StreamRef<'a>) -> Self {
                $name { ptr, len, origin: Some(origin), _borrow: PhantomData }
            }

            /// The stream the memory is freed on, when the view knows it (`None` for views made by
            /// [`from_raw_parts`](Self::from_raw_parts), whose contract then covers the ordering).
            #[inline(always)]
            pub fn origin(&self) -> Option<StreamRef<'a>> {
                self.origin
            }

            /// A sub-view, with a clear error when `range` does not fit. Keeps the origin.
            pub fn $sub(self, range: impl RangeBounds<usize>) -> Result<$name<'a, T>> {
                let (start, len) = resolve(range, self.len, concat!(stringify!($name), "::", stringify!($sub)))?;
                // SAFETY: inside this view (taken by value), of the same buffer.
                Ok($name { ptr: unsafe { self.ptr.add(start) }, len, origin: self.origin, _borrow: PhantomData })
            }
        }
    };
}

device_view!(DeviceSlice, *const T, "A", slice);
device_view!(DeviceSliceMut, *mut T, "An exclusive", slice_mut);

impl<T> DeviceSliceMut<'_, T> {
    /// A shorter-lived exclusive view of the same memory, with the same origin.
    pub fn reborrow(&mut self) -> DeviceSliceMut<'_, T> {
        // The same memory, borrowed from `self`.
        DeviceSliceMut { ptr: self.ptr, len: self.len, origin: self.origin, _borrow: PhantomData }
    }

    /// A shared view of the same memory, with the same origin.
    pub fn as_slice(&self) -> DeviceSlice<'_, T> {
        // The same memory, shared from `self`.
        DeviceSlice { ptr: self.ptr, len: self.len, origin: self.origin, _borrow: PhantomData }
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
