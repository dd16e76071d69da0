//! The consumer process: serves the producer's modes one after another until Quit.

use crate::failure::{fail, Result};
use crate::link::ConsumerLink;
use crate::{ipc_mode, pinned_mode};
use ordo_ipc_frames::wire::Message;

/// Answers the producer until it says Quit.
pub fn serve(link: &mut ConsumerLink) -> Result<()> {
    loop {
        match link.recv_with_fd()? {
            (Message::SetupIpc(setup), None) => ipc_mode::consume(link, setup)?,
            (Message::SetupPinned(setup), Some(fd)) => pinned_mode::consume(link, setup, fd)?,
            (Message::Quit, None) => return Ok(()),
            (m, fd) => {
                return Err(fail(format!(
                    "the producer sent {m:?} (with a descriptor: {}) between modes",
                    fd.is_some()
                )))
            }
        }
    }
}
