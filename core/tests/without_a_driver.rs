//! Without a driver: every constructor returns `Err` (never panics), and the error says there is
//! no NVIDIA driver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::*;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn without_a_driver_every_constructor_returns_err() {
    if driver_present() {
        return; // covered by the GPU tests there
    }
    let no_driver = |e: Error| {
        let c = e.cuda().unwrap_or_else(|| panic!("expected a CUDA error, got {e:?}"));
        assert!(c.is_no_driver(), "{c:?}");
    };
    no_driver(device::count().unwrap_err());
    no_driver(Device::current().unwrap_err());
    no_driver(Device::new(0).unwrap_err());
    no_driver(Device::from_ordinal(0).sm_count().unwrap_err());
    no_driver(Device::from_ordinal(0).name().unwrap_err());
    no_driver(Device::from_ordinal(0).stream_priority_range().unwrap_err());
    no_driver(Stream::new().unwrap_err());
    no_driver(Stream::with_flags(StreamFlags::BLOCKING).unwrap_err());
    no_driver(Stream::with_priority(StreamFlags::NON_BLOCKING, 0).unwrap_err());
    no_driver(Event::new().unwrap_err());
    no_driver(TimingEvent::new().unwrap_err());
    no_driver(MemPool::new(Device::from_ordinal(0)).unwrap_err());
    no_driver(MemPool::device_default(Device::from_ordinal(0)).unwrap_err());
    // SAFETY: used on this thread only, with the current device unchanged.
    let per_thread = unsafe { StreamRef::per_thread_default() };
    no_driver(DeviceBuffer::<f32>::alloc_async(16, per_thread).unwrap_err());
    no_driver(PinnedBuffer::<f32>::zeroed(16, HostAllocFlags::empty()).unwrap_err());
    no_driver(ManagedBuffer::<f32>::zeroed(16, ManagedFlags::ATTACH_GLOBAL).unwrap_err());
    let mut data = vec![0u32; 16];
    no_driver(RegisteredHost::new(&mut data, HostRegisterFlags::empty()).unwrap_err());
    no_driver(per_thread.synchronize().unwrap_err());
    no_driver(per_thread.query().unwrap_err());
    assert_eq!(device::runtime_version().unwrap(), sys::CUDA_VERSION);
    assert_eq!(device::driver_version().unwrap(), 0);
}

/// With no driver at all, CUDA says "driver version is insufficient"; ordo's error says there is
/// no NVIDIA driver, keeping CUDA's code.
#[test]
fn without_a_driver_the_error_says_so() {
    if driver_present() {
        return; // a GPU machine has a driver
    }
    let e = Stream::new().unwrap_err();
    let c = e.cuda().expect("a CUDA error");
    assert_eq!(c.code(), ordo_cuda_core::sys::cudaError::cudaErrorInsufficientDriver);
    assert!(e.to_string().contains("no NVIDIA driver"), "{e}");
}
