//! Handles as small as the raw ones, flag words equal to the C constants, and streams that
//! cannot name a default stream by accident.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::*;

#[test]
fn flags_equal_the_c_constants() {
    assert_eq!(StreamFlags::NON_BLOCKING.bits(), 0x01);
    assert_eq!(StreamFlags::BLOCKING.bits(), 0x00);
    assert_eq!(EventFlags::BLOCKING_SYNC.bits(), 0x01);
    assert_eq!(EventFlags::DISABLE_TIMING.bits(), 0x02);
    assert_eq!(EventFlags::INTERPROCESS.bits(), 0x04);
    assert_eq!(HostAllocFlags::PORTABLE.bits(), 0x01);
    assert_eq!(HostAllocFlags::MAPPED.bits(), 0x02);
    assert_eq!(HostAllocFlags::WRITE_COMBINED.bits(), 0x04);
    assert_eq!(HostRegisterFlags::PORTABLE.bits(), 0x01);
    assert_eq!(HostRegisterFlags::MAPPED.bits(), 0x02);
    assert_eq!(HostRegisterFlags::READ_ONLY.bits(), 0x08);
    assert_eq!(ManagedFlags::ATTACH_GLOBAL.bits(), 0x01);
    assert_eq!(ManagedFlags::ATTACH_HOST.bits(), 0x02);
}

#[test]
fn handles_are_as_small_as_the_raw_ones() {
    use core::mem::size_of;
    assert_eq!(size_of::<Stream>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<StreamRef<'_>>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<Option<StreamRef<'_>>>(), size_of::<sys::cudaStream_t>());
    assert_eq!(size_of::<Event>(), size_of::<sys::cudaEvent_t>());
    assert_eq!(size_of::<TimingEvent>(), size_of::<sys::cudaEvent_t>());
    assert_eq!(size_of::<Device>(), 4);
}

#[test]
fn null_and_named_streams() {
    assert!(unsafe { StreamRef::from_raw(core::ptr::null_mut()) }.is_none());
    // SAFETY: the handles are only compared, never used for CUDA calls.
    assert_eq!(unsafe { StreamRef::legacy_default() }.as_raw() as usize, 1);
    // SAFETY: as above.
    assert_eq!(unsafe { StreamRef::per_thread_default() }.as_raw() as usize, 2);
}
