//! The command line: frame sizes, frames a mode, the ring's slots, the modes, the JSON file.

use std::fmt;
use std::path::PathBuf;

pub const USAGE: &str = "\
ipc-frames: frames handed from a producer process to a consumer process on one GPU, through CUDA
IPC (device memory and events shared between the processes) and through pinned shared host
memory (a copy out and a copy in), measured side by side.

usage: ipc-frames [--sizes 1,16 | --frame-mib N] [--frames N] [--warmup N] [--slots R]
                  [--modes ipc,pinned] [--out FILE]

  --sizes LIST     frame sizes in MiB, one row each (default 1,16)
  --frame-mib N    one frame size in MiB (the same as --sizes N)
  --frames N       frames timed a mode and size (default 400); the latency pass sends as many
  --warmup N       frames sent before them, untimed (default 20)
  --slots R        frames in the ring, in flight at most (default 4)
  --modes LIST     ipc, pinned or both (default ipc,pinned)
  --out FILE       also write the table as JSON to FILE";

/// Bytes of one MiB.
pub const MIB: usize = 1 << 20;

/// The largest ring the consumer is asked to hold: a bound that keeps every count below in range.
pub const MAX_SLOTS: usize = 1024;

/// How a frame crosses from the producer to the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Device memory and events shared between the processes (`IpcBuffer`, `IpcMapping`, `IpcEvent`).
    Ipc,
    /// A copy out into pinned shared host memory, a copy in on the other side.
    Pinned,
}

impl Mode {
    /// The name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Ipc => "ipc",
            Mode::Pinned => "pinned",
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// Frame sizes in MiB.
    pub sizes_mib: Vec<usize>,
    /// Frames timed a mode and size (and sent again one at a time in the latency pass).
    pub frames: usize,
    /// Frames sent before them, untimed.
    pub warmup: usize,
    /// Frames in the ring.
    pub slots: usize,
    /// The modes measured, in order.
    pub modes: Vec<Mode>,
    /// The JSON file, if asked for.
    pub out: Option<PathBuf>,
}

impl Default for Args {
    fn default() -> Args {
        Args {
            sizes_mib: vec![1, 16],
            frames: 400,
            warmup: 20,
            slots: 4,
            modes: vec![Mode::Ipc, Mode::Pinned],
            out: None,
        }
    }
}

impl Args {
    /// The bytes of a frame of `mib` MiB (checked at parsing: it fits, and so do the ring's).
    pub fn frame_bytes(mib: usize) -> usize {
        mib.saturating_mul(MIB)
    }

    /// The most frames a pass sends: the consumer keeps two sample words for each.
    pub fn max_frames(&self) -> usize {
        self.frames.max(self.warmup)
    }
}

/// A command line that cannot be run, with what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (--help for usage)", self.0)
    }
}

impl std::error::Error for ArgError {}

fn error(what: impl Into<String>) -> ArgError {
    ArgError(what.into())
}

fn number(flag: &str, text: &str) -> Result<usize, ArgError> {
    text.trim().parse::<usize>().map_err(|_| error(format!("{flag}: {text:?} is not a whole number")))
}

fn positive(flag: &str, text: &str) -> Result<usize, ArgError> {
    match number(flag, text)? {
        0 => Err(error(format!("{flag}: must be at least 1"))),
        n => Ok(n),
    }
}

/// Parses the arguments after the program's name; `None` for `--help`.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Args>, ArgError> {
    let mut a = Args::default();
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        if flag == "--help" || flag == "-h" {
            return Ok(None);
        }
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_string(), Some(value.to_string())),
            _ => (flag.clone(), None),
        };
        let known = ["--sizes", "--frame-mib", "--frames", "--warmup", "--slots", "--modes", "--out"];
        if !known.contains(&name.as_str()) {
            return Err(error(format!("unknown argument {flag:?}")));
        }
        let value = match inline.or_else(|| it.next()) {
            Some(v) => v,
            None => return Err(error(format!("{name} needs a value"))),
        };
        match name.as_str() {
            "--sizes" => {
                a.sizes_mib = value.split(',').map(|s| positive("--sizes", s)).collect::<Result<_, _>>()?;
            }
            "--frame-mib" => a.sizes_mib = vec![positive("--frame-mib", &value)?],
            "--frames" => a.frames = positive("--frames", &value)?,
            "--warmup" => a.warmup = number("--warmup", &value)?,
            "--slots" => a.slots = positive("--slots", &value)?,
            "--modes" => {
                a.modes = value
                    .split(',')
                    .map(|m| match m.trim() {
                        "ipc" => Ok(Mode::Ipc),
                        "pinned" => Ok(Mode::Pinned),
                        other => Err(error(format!("--modes: {other:?} is not ipc or pinned"))),
                    })
                    .collect::<Result<_, _>>()?;
            }
            _ => {
                if value.is_empty() {
                    return Err(error("--out needs a file name"));
                }
                a.out = Some(PathBuf::from(value));
            }
        }
    }
    check(&a)?;
    Ok(Some(a))
}

/// Refuses what the run could not do: a ring past [`MAX_SLOTS`], a frame or a ring of frames whose
/// bytes overflow the address space, counts whose totals overflow.
fn check(a: &Args) -> Result<(), ArgError> {
    if a.slots > MAX_SLOTS {
        return Err(error(format!("--slots: at most {MAX_SLOTS}")));
    }
    if a.modes.is_empty() || a.sizes_mib.is_empty() {
        return Err(error("nothing to run: no size or no mode"));
    }
    let limit = isize::MAX as usize;
    for &mib in &a.sizes_mib {
        let ring = mib.checked_mul(MIB).and_then(|b| b.checked_mul(a.slots)).filter(|&b| b <= limit);
        if ring.is_none() {
            return Err(error(format!("a ring of {} frames of {mib} MiB overflows the address space", a.slots)));
        }
    }
    // Two sample words a frame, and frame numbers that stay below 2^32 (the pattern's seed).
    let total = a.frames.checked_mul(2).and_then(|f| f.checked_add(a.warmup)).filter(|&t| t < u32::MAX as usize / 4);
    if total.is_none() {
        return Err(error("--frames or --warmup too large"));
    }
    Ok(())
}
