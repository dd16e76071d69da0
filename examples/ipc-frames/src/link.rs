//! The socket between the two processes. The producer runs its own executable again as the
//! consumer, with [`ROLE`] set and one end of a `UnixStream::pair()` as the child's standard input.
//! Every read has a deadline ([`READ_TIMEOUT`]), so that a consumer that died or hangs fails the
//! run instead of hanging it; the producer's [`Link`] kills and reaps the child on every way out
//! but [`Link::finish`].

use crate::failure::{fail, Context, Result};
use ordo_ipc_frames::wire::{self, Message};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that makes this executable the consumer.
pub const ROLE: &str = "ORDO_IPC_FRAMES_ROLE";

/// How long either side waits for the other's next message.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The producer's end: the socket and the consumer process.
pub struct Link {
    socket: UnixStream,
    child: Option<Child>,
}

impl Link {
    /// Starts the consumer (this executable again, with [`ROLE`] set).
    pub fn spawn() -> Result<Link> {
        let (socket, child_end) = UnixStream::pair().context("socketpair")?;
        socket.set_read_timeout(Some(READ_TIMEOUT)).context("the socket's read timeout")?;
        let exe = std::env::current_exe().context("finding this executable to start the consumer")?;
        let child = Command::new(exe)
            .env(ROLE, "consumer")
            .stdin(Stdio::from(OwnedFd::from(child_end)))
            .spawn()
            .context("starting the consumer process")?;
        Ok(Link { socket, child: Some(child) })
    }

    pub fn send(&mut self, message: &Message) -> Result<()> {
        wire::send(&mut self.socket, message).context("sending to the consumer")
    }

    /// Sends `message` with the descriptor `fd`.
    pub fn send_with_fd(&mut self, message: &Message, fd: impl AsFd) -> Result<()> {
        wire::send_with_fd(&self.socket, message, fd).context("sending a descriptor to the consumer")
    }

    /// The consumer's next message; its [`Message::Failed`] is an error here.
    pub fn recv(&mut self) -> Result<Message> {
        match wire::recv(&mut self.socket).context("waiting for the consumer")? {
            Message::Failed(why) => Err(fail(format!("the consumer failed: {why}"))),
            message => Ok(message),
        }
    }

    /// The consumer's next message, which must be `expected`.
    pub fn expect(&mut self, expected: &Message) -> Result<()> {
        match self.recv()? {
            m if m == *expected => Ok(()),
            m => Err(fail(format!("the consumer sent {m:?} where {expected:?} belongs"))),
        }
    }

    /// The consumer's next message, which must be a handle.
    pub fn recv_handle(&mut self) -> Result<Vec<u8>> {
        match self.recv()? {
            Message::Handle(bytes) => Ok(bytes),
            m => Err(fail(format!("the consumer sent {m:?} where a handle belongs"))),
        }
    }

    /// Kills and reaps the consumer, if it still runs.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Tells the consumer to exit and waits for it (killing it after [`READ_TIMEOUT`]).
    pub fn finish(&mut self) -> Result<()> {
        self.send(&Message::Quit)?;
        let Some(mut child) = self.child.take() else { return Err(fail("the consumer was already gone")) };
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(fail(format!("the consumer exited with {status}"))),
                Ok(None) if start.elapsed() < READ_TIMEOUT => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(fail("the consumer did not exit after the run"));
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(e).context("waiting for the consumer to exit");
                }
            }
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The consumer's end: the socket it was given as its standard input.
pub struct ConsumerLink {
    socket: UnixStream,
}

impl ConsumerLink {
    /// The socket on standard input (the producer's [`Link::spawn`]).
    pub fn from_stdin() -> Result<ConsumerLink> {
        let fd = std::io::stdin().as_fd().try_clone_to_owned().context("taking the socket from standard input")?;
        let socket = UnixStream::from(fd);
        socket
            .set_read_timeout(Some(READ_TIMEOUT))
            .context("the socket's read timeout (is stdin the producer's socket?)")?;
        Ok(ConsumerLink { socket })
    }

    pub fn send(&mut self, message: &Message) -> Result<()> {
        wire::send(&mut self.socket, message).context("sending to the producer")
    }

    /// The producer's next message and the descriptor that came with it.
    pub fn recv_with_fd(&mut self) -> Result<(Message, Option<OwnedFd>)> {
        wire::recv_with_fd(&mut self.socket).context("waiting for the producer")
    }

    /// The producer's next message; a descriptor with it is refused.
    pub fn recv(&mut self) -> Result<Message> {
        match self.recv_with_fd()? {
            (message, None) => Ok(message),
            (message, Some(_)) => Err(fail(format!("a descriptor came with {message:?}"))),
        }
    }

    /// The producer's next message, which must be `expected`.
    pub fn expect(&mut self, expected: &Message) -> Result<()> {
        match self.recv()? {
            m if m == *expected => Ok(()),
            m => Err(fail(format!("the producer sent {m:?} where {expected:?} belongs"))),
        }
    }

    /// The producer's next message, which must be a handle.
    pub fn recv_handle(&mut self) -> Result<Vec<u8>> {
        match self.recv()? {
            Message::Handle(bytes) => Ok(bytes),
            m => Err(fail(format!("the producer sent {m:?} where a handle belongs"))),
        }
    }
}
