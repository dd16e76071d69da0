//! Sizes, ranges and lengths of memory calls and views, checked before CUDA is called.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;

#[test]
fn sizes_are_checked_before_cuda_is_called() {
    // SAFETY: used on this thread only, with the current device unchanged.
    let s = unsafe { StreamRef::per_thread_default() };
    let zero = DeviceBuffer::<f32>::alloc_async(0, s).unwrap_err();
    assert!(matches!(zero, Error::Usage(UsageError { kind: UsageKind::InvalidArgument, .. })), "{zero:?}");
    assert!(zero.to_string().contains("zero length"), "{zero}");
    let overflow = DeviceBuffer::<u64>::alloc_async(usize::MAX / 4, s).unwrap_err();
    assert!(overflow.to_string().contains("overflows"), "{overflow}");
    assert!(PinnedBuffer::<u8>::zeroed(0, HostAllocFlags::empty()).is_err());
    assert!(PinnedBuffer::<[u8; 16]>::zeroed(usize::MAX / 8, HostAllocFlags::empty())
        .unwrap_err()
        .to_string()
        .contains("overflows"));
    assert!(ManagedBuffer::<f64>::zeroed(0, ManagedFlags::ATTACH_GLOBAL).is_err());
    let mut empty: [f32; 0] = [];
    assert!(RegisteredHost::new(&mut empty, HostRegisterFlags::empty()).is_err());
}

#[test]
fn views_check_ranges_and_lengths() {
    let mut host = [1.0f32; 8];
    let dev = unsafe { DeviceSliceMut::from_raw_parts(host.as_mut_ptr(), 8) };
    assert!(dev.as_slice().slice(2..6).is_ok());
    assert_eq!(dev.as_slice().slice(2..=5).unwrap().len(), 4);
    assert!(dev.as_slice().slice(4..9).is_err());
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = dev.as_slice().slice(5..3);
    assert!(reversed.is_err());
    let pinned = unsafe { PinnedSlice::from_raw_parts(host.as_ptr(), 4) };
    // SAFETY: refused before CUDA is called (the lengths differ); the stream is used on this thread only.
    let err = unsafe { copy::h2d_async(dev, pinned, StreamRef::per_thread_default()) }.unwrap_err();
    assert!(err.to_string().contains("lengths differ"), "{err}");
}
