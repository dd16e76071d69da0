//! The accessors that every owner of typed memory writes alike (addresses, lengths, views),
//! written once. Each macro is invoked inside the owner's `impl` block and reads the owner's
//! fields `ptr: NonNull<T>` and `len: usize` (and `stream: StreamRef` for the device views).

/// `as_ptr` and `as_mut_ptr`, with the two docs given.
macro_rules! ptr_methods {
    ($const_doc:literal, $mut_doc:literal) => {
        #[doc = $const_doc]
        #[inline(always)]
        pub fn as_ptr(&self) -> *const T {
            self.ptr.as_ptr()
        }

        #[doc = $mut_doc]
        #[inline(always)]
        pub fn as_mut_ptr(&mut self) -> *mut T {
            self.ptr.as_ptr()
        }
    };
}

/// `len` and `is_empty` (its doc given), and `byte_len` when its doc is given.
macro_rules! len_methods {
    (is_empty: $empty_doc:literal $(, byte_len: $bytes_doc:literal)?) => {
        /// Number of elements.
        #[inline(always)]
        pub fn len(&self) -> usize {
            self.len
        }

        #[doc = $empty_doc]
        #[inline(always)]
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }

        $(
            #[doc = $bytes_doc]
            #[inline(always)]
            pub fn byte_len(&self) -> usize {
                // Cannot overflow: the memory exists (the constructors check the size, or their
                // contract promises it).
                self.len.saturating_mul(core::mem::size_of::<T>())
            }
        )?
    };
}

/// The accessors of an owner of device memory that is released only after the work of its
/// `stream` (freed there, or after a synchronise of it): addresses, lengths and whole views.
macro_rules! device_memory_methods {
    () => {
        $crate::memory::accessors::ptr_methods!(
            "The device address, for kernel arguments.",
            "The device address, for kernel arguments that write."
        );

        $crate::memory::accessors::len_methods!(
            is_empty: "Always false: there is at least one element.",
            byte_len: "Size in bytes."
        );

        /// A shared view of the whole memory; its [`origin`](crate::DeviceSlice::origin)
        /// is [`stream`](Self::stream).
        #[inline(always)]
        pub fn as_slice(&self) -> $crate::memory::DeviceSlice<'_, T> {
            // SAFETY: memory this value owns, shared for the borrow; released only after the work
            // queued on `self.stream`.
            unsafe { $crate::memory::DeviceSlice::from_raw_parts_on(self.ptr.as_ptr(), self.len, self.stream) }
        }

        /// An exclusive view of the whole memory; its
        /// [`origin`](crate::DeviceSliceMut::origin) is [`stream`](Self::stream).
        #[inline(always)]
        pub fn as_mut_slice(&mut self) -> $crate::memory::DeviceSliceMut<'_, T> {
            // SAFETY: memory this value owns, borrowed exclusively; released only after the work
            // queued on `self.stream`.
            unsafe { $crate::memory::DeviceSliceMut::from_raw_parts_on(self.ptr.as_ptr(), self.len, self.stream) }
        }
    };
}

/// `pinned`, `pinned_mut` and their range forms: the views of page-locked host memory that
/// asynchronous copies take.
macro_rules! pinned_views {
    () => {
        /// A view for asynchronous copies.
        #[inline(always)]
        pub fn pinned(&self) -> $crate::memory::PinnedSlice<'_, T> {
            // SAFETY: page-locked memory this value owns, shared for the borrow.
            unsafe { $crate::memory::PinnedSlice::from_raw_parts(self.ptr.as_ptr(), self.len) }
        }

        /// An exclusive view for asynchronous copies into this memory.
        #[inline(always)]
        pub fn pinned_mut(&mut self) -> $crate::memory::PinnedSliceMut<'_, T> {
            // SAFETY: page-locked memory this value owns, borrowed exclusively.
            unsafe { $crate::memory::PinnedSliceMut::from_raw_parts(self.ptr.as_ptr(), self.len) }
        }

        /// A view of `range`, with a clear error when it does not fit.
        pub fn pinned_range(
            &self,
            range: impl core::ops::RangeBounds<usize>,
        ) -> $crate::error::Result<$crate::memory::PinnedSlice<'_, T>> {
            self.pinned().slice(range)
        }

        /// An exclusive view of `range`, with a clear error when it does not fit.
        pub fn pinned_range_mut(
            &mut self,
            range: impl core::ops::RangeBounds<usize>,
        ) -> $crate::error::Result<$crate::memory::PinnedSliceMut<'_, T>> {
            self.pinned_mut().slice_mut(range)
        }
    };
}

pub(crate) use {device_memory_methods, len_methods, pinned_views, ptr_methods};
