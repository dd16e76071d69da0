//! The parts of `ipc-frames` that need no GPU, kept apart so that they are tested on any machine:
//! the command line, the messages between the two processes, the frames' pattern and the fill
//! kernel's PTX, the shared clock, and the table. The binary (`src/main.rs`) says what is measured.

pub mod args;
pub mod clock;
pub mod pattern;
pub mod report;
pub mod wire;
