//! `ipc-frames`: frames handed from one process to another on one GPU, through CUDA IPC
//! (ordo's `ipc` module) against copying through pinned host memory.
//!
//! The process started is the producer; it runs its own executable again as the consumer, the two
//! talking over a Unix socket pair (length-prefixed messages, reads with a deadline). Frames of
//! each size go through a ring of `--slots` slots, in two modes:
//!
//! - **ipc**: the slots are `IpcBuffer`s exported once and mapped once by the consumer
//!   (`IpcMapping`), with two IPC events a slot: `ready` (producer to consumer) and `free`
//!   (consumer to producer). Per frame the producer's stream waits on `free[k]`, a kernel fills
//!   the slot, the stream records `ready[k]` and a message says "frame i in slot k"; the
//!   consumer's stream waits on `ready[k]`, copies the slot into the consumer's own device buffer
//!   (what a consumer that keeps a frame does), records `free[k]`, and a message says so. No
//!   host waits for the GPU per frame.
//! - **pinned**: the slots are host memory both processes map (`memfd_create`, `MAP_SHARED`) and
//!   register as pinned (`cudaHostRegister`). Per frame the producer fills its device frame, copies
//!   it into the slot and synchronises its stream before its message; the consumer copies the slot
//!   into its device buffer and synchronises before saying the slot is free.
//!
//! For each mode and size: a warm-up (`--warmup` frames), a timed pass of `--frames` frames with
//! up to `--slots` in flight, then a latency pass of as many frames one at a time. Measured:
//! - **frames/s and GB/s** of the timed pass, from the producer beginning its first frame to the
//!   consumer's stream having completed its copy of the last (the consumer synchronises, then
//!   reads the clock; both processes read `CLOCK_MONOTONIC`);
//! - **latency p50 and p99** of the latency pass: from the producer beginning a frame (before its
//!   fill is enqueued, so that both modes count the same work: fill, hand-over, copy into the
//!   consumer's buffer) to the consumer's stream having completed that copy (the consumer
//!   synchronises after each frame in this pass only);
//! - **check**: the consumer copies the first and last words of each frame it kept into pinned
//!   memory, compared after each pass with the pattern the producer's kernel wrote (every pass,
//!   warm-up included); `FAIL` if any differs, and the exit status is then non-zero.
//!
//! The table is printed as markdown; `--out FILE` writes the same as JSON. Run it on a GPU host
//! from the project root with a gpu-bundle built here:
//!
//! ```text
//! bash target/gpu-bundle/run.sh exe ipc-frames --sizes 1,16
//! cargo run --release -p ordo-example-ipc-frames -- --sizes 1,16 --out ipc-frames.json
//! ```

mod consumer;
mod failure;
mod fill;
mod host_calls;
mod ipc_mode;
mod link;
mod pass;
mod pinned_mode;
mod producer;
mod shared_memory;

use ordo_ipc_frames::args::{self, USAGE};
use ordo_ipc_frames::report;
use std::process::ExitCode;

/// The consumer: serves the producer over the socket on standard input.
fn consumer_main(role: &str) -> ExitCode {
    if role != "consumer" {
        eprintln!("ipc-frames: {}={role:?} is no role of this program", link::ROLE);
        return ExitCode::from(2);
    }
    let mut link = match link::ConsumerLink::from_stdin() {
        Ok(link) => link,
        Err(e) => {
            eprintln!("ipc-frames consumer: {e}");
            return ExitCode::FAILURE;
        }
    };
    match consumer::serve(&mut link) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let _ = link.send(&ordo_ipc_frames::wire::Message::Failed(e.to_string()));
            eprintln!("ipc-frames consumer: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` to standard output; a closed pipe (`| head`) is no reason to panic.
fn print_out(text: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

fn main() -> ExitCode {
    if let Some(role) = std::env::var_os(link::ROLE) {
        return consumer_main(&role.to_string_lossy());
    }
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print_out(&format!("{USAGE}\n"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("ipc-frames: {e}");
            return ExitCode::from(2);
        }
    };
    let rows = match producer::run(&args) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("ipc-frames: {e}");
            return ExitCode::FAILURE;
        }
    };
    print_out(&format!(
        "frames of each size through {} slots, {} timed and {} one at a time for the latency (from the producer beginning a frame to the consumer's copy completed):\n\n{}",
        args.slots,
        args.frames,
        args.frames,
        report::markdown(&rows)
    ));
    if let Some(path) = &args.out {
        let json = report::json(&rows, args.slots, args.warmup);
        let written = serde_json::to_string_pretty(&json)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(path, text + "\n").map_err(|e| e.to_string()));
        if let Err(e) = written {
            eprintln!("ipc-frames: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if rows.iter().all(report::Row::passed) {
        ExitCode::SUCCESS
    } else {
        eprintln!("ipc-frames: a frame check FAILED (see above)");
        ExitCode::FAILURE
    }
}
