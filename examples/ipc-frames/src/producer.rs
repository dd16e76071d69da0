//! The producer process: starts the consumer, then measures each frame size in each mode.

use crate::failure::{fail, Context, Result};
use crate::fill::Fill;
use crate::link::Link;
use crate::{ipc_mode, pinned_mode};
use ordo_cuda::Stream;
use ordo_ipc_frames::args::{Args, Mode};
use ordo_ipc_frames::report::Row;

/// Runs every size and mode; the rows in order.
pub fn run(args: &Args) -> Result<Vec<Row>> {
    // No device: CUDA's own error, before a consumer is started.
    let devices = ordo_cuda::device::count().context("looking for a CUDA device")?;
    if devices == 0 {
        return Err(fail("no CUDA device"));
    }
    let fill = Fill::load()?;
    let stream = Stream::new().context("creating the producer's stream")?;
    let s = stream.as_stream();
    let mut link = Link::spawn()?;
    let mut rows = Vec::new();
    for &mib in &args.sizes_mib {
        for &mode in &args.modes {
            let row = match mode {
                Mode::Ipc => ipc_mode::produce(&mut link, &fill, s, args, mib),
                Mode::Pinned => pinned_mode::produce(&mut link, &fill, s, args, mib),
            }
            .context(&format!("{} mode, {mib} MiB frames", mode.name()))?;
            eprintln!(
                "ipc-frames: {} {mib} MiB: {:.0} frames/s, check {}",
                mode.name(),
                row.frames_per_s(),
                if row.passed() { "pass" } else { "FAIL" }
            );
            rows.push(row);
        }
    }
    link.finish()?;
    stream.synchronize()?;
    Ok(rows)
}
