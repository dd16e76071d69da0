//! Batched copies: `CopyBatch` (one `cudaMemcpyBatchAsync`) against the same copies one by one
//! (`copy::h2d_async` each): GPU time of 64 MiB in 32 and 96 chunks, and the host's time to
//! enqueue 64 small copies.

use crate::Report;

#[cfg(cuda_13)]
pub(crate) fn batch_copy_group(r: &mut Report, rounds: usize) -> ordo_cuda_core::Result<()> {
    use crate::ms_between;
    use crate::{interleave, median};
    use ordo_cuda_core::memory::{copy, CopyAttributes, CopyBatch};
    use ordo_cuda_core::*;
    use std::time::Instant;

    r.progress("batched copies");
    const N: usize = 16 << 20; // 64 MiB of u32
    let stream = Stream::new()?;
    let s = stream.as_stream();
    let host = PinnedBuffer::<u32>::from_slice(&vec![7u32; N])?;
    let mut dev = DeviceBuffer::<u32>::zeroed_async(N, s)?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let (hp, dp) = (host.as_ptr(), dev.as_mut_ptr());
    // SAFETY (both closures): chunks of `host` and `dev`, which outlive the copies (each run is
    // timed to its end).
    let batched = |chunks: usize| -> Result<f64> {
        let mut batch = CopyBatch::<128>::new(CopyAttributes::default());
        for i in 0..chunks {
            let (lo, hi) = (N * i / chunks, N * (i + 1) / chunks);
            unsafe {
                batch.h2d(
                    DeviceSliceMut::from_raw_parts(dp.add(lo), hi - lo),
                    PinnedSlice::from_raw_parts(hp.add(lo), hi - lo),
                )?
            };
        }
        ms_between(s, &start, &end, || unsafe { batch.enqueue(s) })
    };
    let one_by_one = |chunks: usize| -> Result<f64> {
        ms_between(s, &start, &end, || {
            (0..chunks).try_for_each(|i| {
                let (lo, hi) = (N * i / chunks, N * (i + 1) / chunks);
                unsafe {
                    copy::h2d_async(
                        DeviceSliceMut::from_raw_parts(dp.add(lo), hi - lo),
                        PinnedSlice::from_raw_parts(hp.add(lo), hi - lo),
                        s,
                    )
                }
            })
        })
    };
    for chunks in [32usize, 96] {
        let m = interleave(rounds, &mut [&mut || batched(chunks), &mut || one_by_one(chunks)])?;
        r.add(
            "batch",
            format!("H2D 64 MiB in {chunks} chunks: one CopyBatch vs {chunks} copy::h2d_async"),
            "ms",
            m[0],
            Some(m[1]),
            "GPU time; earlier measurement 0.958-0.987x (C++, bare copies)",
        );
    }
    // Host time to enqueue 64 copies of 4 KiB, the stream drained between rounds.
    const SMALL: usize = 1024;
    let (mut b, mut o) = (Vec::new(), Vec::new());
    for _ in 0..rounds * 4 {
        let mut batch = CopyBatch::<64>::new(CopyAttributes::default());
        let t0 = Instant::now();
        for i in 0..64 {
            // SAFETY: as above.
            unsafe {
                batch.h2d(
                    DeviceSliceMut::from_raw_parts(dp.add(i * SMALL), SMALL),
                    PinnedSlice::from_raw_parts(hp.add(i * SMALL), SMALL),
                )?
            };
        }
        // SAFETY: as above.
        unsafe { batch.enqueue(s) }?;
        b.push(t0.elapsed().as_secs_f64() * 1e6);
        s.synchronize()?;
        let t0 = Instant::now();
        for i in 0..64 {
            // SAFETY: as above.
            unsafe {
                copy::h2d_async(
                    DeviceSliceMut::from_raw_parts(dp.add(i * SMALL), SMALL),
                    PinnedSlice::from_raw_parts(hp.add(i * SMALL), SMALL),
                    s,
                )?
            };
        }
        o.push(t0.elapsed().as_secs_f64() * 1e6);
        s.synchronize()?;
    }
    r.add(
        "batch",
        "enqueue 64 H2D copies of 4 KiB: one CopyBatch vs 64 copy::h2d_async",
        "us",
        median(&b),
        Some(median(&o)),
        "host time, filling the batch included",
    );
    drop(dev);
    stream.synchronize()
}

#[cfg(not(cuda_13))]
pub(crate) fn batch_copy_group(_: &mut Report, _: usize) -> ordo_cuda_core::Result<()> {
    Ok(())
}
