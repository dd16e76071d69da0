//! The messages between the producer and the consumer, and their form on the socket: a
//! little-endian `u32` length, then a tag byte and the message's fields (little-endian integers).
//! A message that ends early, runs past its fields, carries an unknown tag or is longer than
//! [`MAX_MESSAGE`] is refused, not guessed at.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

/// The longest message (a failure's text is cut to fit).
pub const MAX_MESSAGE: usize = 4096;

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// Producer: the IPC mode begins; `slots` memory handles and `slots` ready-event handles follow.
    SetupIpc(Setup),
    /// Producer: the pinned mode begins; the shared memory's descriptor comes with this message.
    SetupPinned(Setup),
    /// Either side: an IPC handle's bytes (`to_bytes`).
    Handle(Vec<u8>),
    /// Consumer: the mode's buffers are open; the consumer waits for frames.
    Ready,
    /// Producer: frame `index` is in `slot` (in the IPC mode: its ready event has been recorded).
    Frame(Frame),
    /// Consumer: the slot of pass frame `seq` may be written again (in the IPC mode: its free event
    /// has been recorded). `done_ns`: when the consume had completed, in a latency pass; else 0.
    Free { seq: u64, slot: u32, done_ns: u64 },
    /// Producer: the pass has ended; synchronise, check the samples, answer [`Message::Drained`].
    Drain,
    /// Consumer: every frame of the pass has been consumed (at `done_ns`), `wrong` of `checked`
    /// sample words differed from the pattern.
    Drained { done_ns: u64, checked: u64, wrong: u64 },
    /// Producer: close the mode's mappings and imported events.
    Teardown,
    /// Consumer: closed; the producer may free what it exported.
    TornDown,
    /// Producer: freed; the consumer may drop the events it exported.
    Released,
    /// Producer: the run is over; exit.
    Quit,
    /// Either side: what went wrong, before it exits.
    Failed(String),
}

/// A mode's shape, sent with its setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub frame_bytes: u64,
    pub slots: u32,
    /// The most frames a pass sends (the consumer keeps two sample words each).
    pub max_frames: u64,
}

/// One frame handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Its place in the pass (0, 1, ...).
    pub seq: u64,
    /// Its number, from which its contents follow (`pattern`).
    pub index: u64,
    pub slot: u32,
    /// When the producer began it (`clock::monotonic_ns`), before its fill was enqueued.
    pub started_ns: u64,
    /// A latency pass: the consumer synchronises after the consume and says when it completed.
    pub latency: bool,
}

/// A message that could not be read.
#[derive(Debug)]
pub enum WireError {
    /// The socket failed (a timeout is `WouldBlock` or `TimedOut`).
    Io(io::Error),
    /// The other side closed the socket.
    Closed,
    /// Bytes that are no message: why.
    Malformed(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                write!(f, "the other process sent nothing in time (it hangs, or failed without a word)")
            }
            WireError::Io(e) => write!(f, "the socket failed: {e}"),
            WireError::Closed => write!(f, "the other process closed its socket (it exited or died)"),
            WireError::Malformed(why) => write!(f, "a malformed message: {why}"),
        }
    }
}

impl std::error::Error for WireError {}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> WireError {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            WireError::Closed
        } else {
            WireError::Io(e)
        }
    }
}

mod tag {
    pub const SETUP_IPC: u8 = 1;
    pub const SETUP_PINNED: u8 = 2;
    pub const HANDLE: u8 = 3;
    pub const READY: u8 = 4;
    pub const FRAME: u8 = 5;
    pub const FREE: u8 = 6;
    pub const DRAIN: u8 = 7;
    pub const DRAINED: u8 = 8;
    pub const TEARDOWN: u8 = 9;
    pub const TORN_DOWN: u8 = 10;
    pub const RELEASED: u8 = 11;
    pub const QUIT: u8 = 12;
    pub const FAILED: u8 = 13;
}

impl Message {
    /// The message's bytes, without the length.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(40);
        let setup = |out: &mut Vec<u8>, t: u8, s: &Setup| {
            out.push(t);
            out.extend_from_slice(&s.frame_bytes.to_le_bytes());
            out.extend_from_slice(&s.slots.to_le_bytes());
            out.extend_from_slice(&s.max_frames.to_le_bytes());
        };
        match self {
            Message::SetupIpc(s) => setup(&mut out, tag::SETUP_IPC, s),
            Message::SetupPinned(s) => setup(&mut out, tag::SETUP_PINNED, s),
            Message::Handle(bytes) => {
                out.push(tag::HANDLE);
                out.extend_from_slice(&bytes[..bytes.len().min(MAX_MESSAGE - 1)]);
            }
            Message::Ready => out.push(tag::READY),
            Message::Frame(f) => {
                out.push(tag::FRAME);
                out.extend_from_slice(&f.seq.to_le_bytes());
                out.extend_from_slice(&f.index.to_le_bytes());
                out.extend_from_slice(&f.slot.to_le_bytes());
                out.extend_from_slice(&f.started_ns.to_le_bytes());
                out.push(u8::from(f.latency));
            }
            Message::Free { seq, slot, done_ns } => {
                out.push(tag::FREE);
                out.extend_from_slice(&seq.to_le_bytes());
                out.extend_from_slice(&slot.to_le_bytes());
                out.extend_from_slice(&done_ns.to_le_bytes());
            }
            Message::Drain => out.push(tag::DRAIN),
            Message::Drained { done_ns, checked, wrong } => {
                out.push(tag::DRAINED);
                out.extend_from_slice(&done_ns.to_le_bytes());
                out.extend_from_slice(&checked.to_le_bytes());
                out.extend_from_slice(&wrong.to_le_bytes());
            }
            Message::Teardown => out.push(tag::TEARDOWN),
            Message::TornDown => out.push(tag::TORN_DOWN),
            Message::Released => out.push(tag::RELEASED),
            Message::Quit => out.push(tag::QUIT),
            Message::Failed(text) => {
                out.push(tag::FAILED);
                // Cut at a character boundary so that the text stays UTF-8.
                let mut end = text.len().min(MAX_MESSAGE - 1);
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                out.extend_from_slice(&text.as_bytes()[..end]);
            }
        }
        out
    }

    /// The message whose [`encode`](Self::encode) gave `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Message, WireError> {
        let mut r = Fields(bytes);
        let message = match r.u8()? {
            tag::SETUP_IPC => Message::SetupIpc(r.setup()?),
            tag::SETUP_PINNED => Message::SetupPinned(r.setup()?),
            tag::HANDLE => Message::Handle(r.rest().to_vec()),
            tag::READY => Message::Ready,
            tag::FRAME => Message::Frame(Frame {
                seq: r.u64()?,
                index: r.u64()?,
                slot: r.u32()?,
                started_ns: r.u64()?,
                latency: match r.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(WireError::Malformed("a frame's latency flag is neither 0 nor 1")),
                },
            }),
            tag::FREE => Message::Free { seq: r.u64()?, slot: r.u32()?, done_ns: r.u64()? },
            tag::DRAIN => Message::Drain,
            tag::DRAINED => Message::Drained { done_ns: r.u64()?, checked: r.u64()?, wrong: r.u64()? },
            tag::TEARDOWN => Message::Teardown,
            tag::TORN_DOWN => Message::TornDown,
            tag::RELEASED => Message::Released,
            tag::QUIT => Message::Quit,
            tag::FAILED => Message::Failed(
                String::from_utf8(r.rest().to_vec())
                    .map_err(|_| WireError::Malformed("a failure's text is not UTF-8"))?,
            ),
            _ => return Err(WireError::Malformed("an unknown tag")),
        };
        if !r.0.is_empty() {
            return Err(WireError::Malformed("bytes past the message's fields"));
        }
        Ok(message)
    }

    /// The length and the message, as one write puts them on the socket.
    pub fn framed(&self) -> Vec<u8> {
        let body = self.encode();
        let mut out = Vec::with_capacity(body.len() + 4);
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }
}

/// The fields of a message not read yet.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or(WireError::Malformed("the message ends early"))?;
        self.0 = rest;
        Ok(*head)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take::<1>()?[0])
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    fn setup(&mut self) -> Result<Setup, WireError> {
        Ok(Setup { frame_bytes: self.u64()?, slots: self.u32()?, max_frames: self.u64()? })
    }
    fn rest(&mut self) -> &[u8] {
        core::mem::take(&mut self.0)
    }
}

/// Writes `message` (length and body in one write).
pub fn send(w: &mut impl Write, message: &Message) -> io::Result<()> {
    w.write_all(&message.framed())
}

/// Sends `message` with the descriptor `fd` (`SCM_RIGHTS`, with the message's first bytes).
pub fn send_with_fd(socket: &UnixStream, message: &Message, fd: impl std::os::fd::AsFd) -> io::Result<()> {
    ordo_cuda::ipc::send_fd(socket, fd, &message.framed())
}

/// The length of a message from its four bytes, refused past [`MAX_MESSAGE`] or at zero.
fn body_len(len: [u8; 4]) -> Result<usize, WireError> {
    match u32::from_le_bytes(len) as usize {
        0 => Err(WireError::Malformed("an empty message")),
        n if n > MAX_MESSAGE => Err(WireError::Malformed("a message longer than MAX_MESSAGE")),
        n => Ok(n),
    }
}

/// Reads one message.
pub fn recv(r: &mut impl Read) -> Result<Message, WireError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut body = vec![0u8; body_len(len)?];
    r.read_exact(&mut body)?;
    Message::decode(&body)
}

/// Reads one message and the descriptor that came with it, if one did (`recv_fd` for the length,
/// which is where a descriptor arrives).
pub fn recv_with_fd(socket: &mut UnixStream) -> Result<(Message, Option<OwnedFd>), WireError> {
    let mut len = [0u8; 4];
    let (n, fd) = ordo_cuda::ipc::recv_fd(&*socket, &mut len)?;
    if n < len.len() {
        return Err(WireError::Closed);
    }
    let mut body = vec![0u8; body_len(len)?];
    socket.read_exact(&mut body)?;
    Ok((Message::decode(&body)?, fd))
}
