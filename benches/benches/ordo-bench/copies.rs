//! Copies: pinned both directions and both at once, pageable.

use crate::{interleave, median, ms_between, Report};
use ordo_benches::cpp;
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::time::Instant;

pub(crate) fn copy_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("copies");
    const N: usize = 64 << 20; // 256 MiB of f32
    let bytes = (N * 4) as f64;
    let s1 = Stream::new()?;
    let s2 = Stream::new()?;
    let s = s1.as_stream();
    let host_in = PinnedBuffer::<f32>::from_slice(&vec![1.5f32; N])?;
    let mut host_out = PinnedBuffer::<f32>::zeroed(N, HostAllocFlags::empty())?;
    let mut dev = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let dev2 = DeviceBuffer::<f32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let (dp, hip, hop) = (dev.as_mut_ptr(), host_in.as_ptr(), host_out.as_mut_ptr());
    let m = interleave(
        rounds,
        &mut [
            &mut || {
                ms_between(s, &start, &end, || unsafe {
                    copy::h2d_async(DeviceSliceMut::from_raw_parts(dp, N), PinnedSlice::from_raw_parts(hip, N), s)
                })
            },
            &mut || Ok(unsafe { cpp::bl_copy_ms(dp.cast(), hip.cast(), N * 4, 1, s.as_raw()) }),
            &mut || {
                ms_between(s, &start, &end, || unsafe {
                    copy::d2h_async(PinnedSliceMut::from_raw_parts(hop, N), DeviceSlice::from_raw_parts(dp, N), s)
                })
            },
            &mut || Ok(unsafe { cpp::bl_copy_ms(hop.cast(), dp.cast(), N * 4, 2, s.as_raw()) }),
        ],
    )?;
    let gbps = |ms: f64| bytes / ms / 1e6;
    r.add(
        "copy",
        "pinned H2D 256 MiB",
        "GB/s",
        gbps(m[0]),
        Some(gbps(m[1])),
        format!("PCIe Gen5 x16: 63 GB/s; {:.1}%", gbps(m[0]) / 63.0 * 100.0),
    );
    r.add(
        "copy",
        "pinned D2H 256 MiB",
        "GB/s",
        gbps(m[2]),
        Some(gbps(m[3])),
        format!("{:.1}% of 63 GB/s", gbps(m[2]) / 63.0 * 100.0),
    );
    // Both directions at once, on two streams.
    let mut both = Vec::new();
    for _ in 0..rounds {
        s.synchronize()?;
        s2.synchronize()?;
        start.record(s)?;
        s2.wait_event(&start)?;
        unsafe {
            copy::h2d_async(dev.as_mut_slice(), host_in.pinned(), s)?;
            copy::d2h_async(host_out.pinned_mut(), dev2.as_slice(), s2.as_stream())?;
        }
        let joined = Event::new()?;
        joined.record(s2.as_stream())?;
        s.wait_event(&joined)?;
        end.record(s)?;
        end.synchronize()?;
        both.push(2.0 * bytes / end.elapsed_ms_since(&start)? as f64 / 1e6);
    }
    r.add("copy", "pinned H2D + D2H at once, total", "GB/s", median(&both), None, "reference 101.6 GB/s");
    // Pageable: the blocking copy (an async copy from pageable memory would not be asynchronous anyway).
    let pageable = vec![2.5f32; N];
    let mut pg = Vec::new();
    for _ in 0..rounds.min(5) {
        let t0 = Instant::now();
        copy::h2d_blocking(dev.as_mut_slice(), &pageable, s)?;
        pg.push(bytes / t0.elapsed().as_secs_f64() / 1e9);
    }
    r.add("copy", "pageable H2D 256 MiB (blocking copy)", "GB/s", median(&pg), None, "reference 9.8 GB/s");
    Ok(())
}
