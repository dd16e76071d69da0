//! Device and pinned views: their thread bounds follow the element type (checked at compile time:
//! an exclusive view moves between threads where `T: Send`, a shared one as `&[T]` does), and a
//! view made on a stream keeps that stream (its origin) through sub-views and reborrows. Needs no GPU.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::error::CudaError;
use ordo_cuda_core::*;
use static_assertions::{assert_impl_all, assert_not_impl_any};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::MutexGuard;

// An exclusive view hands out its elements: sending it needs `T: Send` (`MutexGuard` is `Sync`
// but not `Send`, so the old `T: Sync` bound let it through), sharing it needs `T: Sync`.
assert_not_impl_any!(DeviceSliceMut<'static, Rc<u8>>: Send, Sync);
assert_not_impl_any!(PinnedSliceMut<'static, Rc<u8>>: Send, Sync);
assert_not_impl_any!(DeviceSliceMut<'static, MutexGuard<'static, u8>>: Send);
assert_not_impl_any!(PinnedSliceMut<'static, MutexGuard<'static, u8>>: Send);
assert_impl_all!(DeviceSliceMut<'static, Cell<u8>>: Send);
assert_not_impl_any!(DeviceSliceMut<'static, Cell<u8>>: Sync);
assert_impl_all!(PinnedSliceMut<'static, Cell<u8>>: Send);
assert_not_impl_any!(PinnedSliceMut<'static, Cell<u8>>: Sync);
// A shared view is like `&[T]`: `Send` and `Sync` exactly where `T: Sync`.
assert_not_impl_any!(DeviceSlice<'static, Cell<u8>>: Send, Sync);
assert_not_impl_any!(PinnedSlice<'static, Cell<u8>>: Send, Sync);
assert_impl_all!(DeviceSlice<'static, MutexGuard<'static, u8>>: Send, Sync);
assert_impl_all!(DeviceSlice<'static, u32>: Send, Sync, Copy);
assert_impl_all!(DeviceSliceMut<'static, u32>: Send, Sync);
assert_impl_all!(PinnedSlice<'static, f32>: Send, Sync, Copy);
assert_impl_all!(PinnedSliceMut<'static, f32>: Send, Sync);
// The error stays plain data with its hint.
assert_impl_all!(CudaError: Copy, Send, Sync);
assert_impl_all!(Error: Clone, Send, Sync);

/// The views' `Send` and `Sync` follow their element type (the static assertions above; this
/// names them in the test list).
#[test]
fn view_thread_bounds_follow_the_element_type() {
    // The checks are the static assertions above; this names them for the test list.
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<DeviceSliceMut<'static, u8>>();
    sync::<DeviceSlice<'static, u8>>();
}

/// A view made on a stream keeps that stream through sub-views, reborrows and shared views; a
/// view from raw parts has none.
#[test]
fn views_keep_their_origin_through_sub_views_and_reborrows() {
    let mut host = [3u32; 8];
    // SAFETY: the handle is only compared and carried, never used for a CUDA call here.
    let s = unsafe { StreamRef::per_thread_default() };
    // SAFETY: not device memory, but no CUDA call touches it: only the views' bookkeeping is tested.
    let mut v = unsafe { DeviceSliceMut::from_raw_parts_on(host.as_mut_ptr(), 8, s) };
    assert_eq!(v.origin(), Some(s));
    assert_eq!(v.reborrow().origin(), Some(s));
    assert_eq!(v.as_slice().origin(), Some(s));
    assert_eq!(v.as_slice().slice(2..5).unwrap().origin(), Some(s));
    let sub = v.reborrow().slice_mut(1..=3).unwrap();
    assert_eq!((sub.origin(), sub.len()), (Some(s), 3));
    let shared = unsafe { DeviceSlice::from_raw_parts_on(host.as_ptr(), 8, s) };
    assert_eq!(shared.slice(..4).unwrap().origin(), Some(s));
    // Raw views know no origin: their contract covers the ordering.
    let raw = unsafe { DeviceSlice::from_raw_parts(host.as_ptr(), 8) };
    assert_eq!(raw.origin(), None);
    assert_eq!(raw.slice(1..).unwrap().origin(), None);
}
