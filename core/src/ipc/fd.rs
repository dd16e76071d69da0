//! A file descriptor passed to another process over a connected Unix-domain socket (`SCM_RIGHTS`):
//! how an exported pool's descriptor ([`IpcPool::export_fd`](super::IpcPool::export_fd)) reaches
//! its importer. The receiver gets a descriptor of its own for the same open file; the sender's
//! stays open until it closes it.

use core::ffi::{c_int, c_void};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::vec::Vec;

/// Room for the control message of a few descriptors, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// Sends `payload` (at least one byte: a descriptor travels with data) and `fd` over the connected
/// Unix-domain stream socket `socket` (`sendmsg` with an `SCM_RIGHTS` control message; `SIGPIPE`
/// suppressed). The descriptor goes with the first bytes; a payload the kernel takes in parts is
/// sent to the end.
///
/// ```
/// use std::os::unix::net::UnixStream;
/// # fn main() -> std::io::Result<()> {
/// let (a, b) = UnixStream::pair()?;
/// let file = std::fs::File::open("/dev/null")?;
/// ordo_cuda_core::ipc::send_fd(&a, &file, b"pool")?;
/// let mut payload = [0u8; 4];
/// let (n, fd) = ordo_cuda_core::ipc::recv_fd(&b, &mut payload)?;
/// assert_eq!((n, &payload), (4, b"pool"));
/// assert!(fd.is_some());
/// # Ok(()) }
/// ```
pub fn send_fd(socket: impl AsFd, fd: impl AsFd, payload: &[u8]) -> io::Result<()> {
    if payload.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "send_fd: a descriptor needs at least one payload byte",
        ));
    }
    let socket = socket.as_fd().as_raw_fd();
    let raw: RawFd = fd.as_fd().as_raw_fd();
    let mut iov = libc::iovec { iov_base: payload.as_ptr().cast_mut().cast::<c_void>(), iov_len: payload.len() };
    let mut control = Control([0; 64]);
    // SAFETY: CMSG_SPACE and CMSG_LEN only compute sizes.
    let (space, len) = unsafe {
        (libc::CMSG_SPACE(core::mem::size_of::<c_int>() as u32), libc::CMSG_LEN(core::mem::size_of::<c_int>() as u32))
    };
    // SAFETY: msghdr is plain data; zero is a valid value of each field.
    let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg` names a control buffer of `space` (<= 64) bytes, so the first header is inside
    // it and non-null; its data has room for one int (CMSG_LEN of one int).
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = len as _;
        core::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<c_int>(), raw);
    }
    let sent = loop {
        // SAFETY: `msg` and everything it points to live across the call.
        let n = unsafe { libc::sendmsg(socket, &msg, libc::MSG_NOSIGNAL) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    };
    send_all(socket, &payload[sent..])
}

/// Writes all of `bytes` to `socket` (`send`, `SIGPIPE` suppressed).
fn send_all(socket: RawFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is readable for its length.
        let n = unsafe { libc::send(socket, bytes.as_ptr().cast(), bytes.len(), libc::MSG_NOSIGNAL) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::WriteZero, "send_fd: the socket took no bytes"));
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Receives into `payload` until it is full or the peer has closed the socket, and the descriptor
/// that came with the bytes (`recvmsg` with `MSG_CMSG_CLOEXEC`: the descriptor is closed across
/// `exec`). Returns the number of bytes received (fewer than `payload.len()` only at the end of the
/// stream; 0 when the peer had closed it) and the descriptor, `None` when none came.
///
/// More than one descriptor, or a control message the kernel had to cut short, is an error
/// (`InvalidData`); every descriptor that did arrive is closed then. An empty `payload` is refused
/// (`InvalidInput`) before anything is read: a descriptor travels with payload bytes
/// ([`send_fd`] sends at least one), so nothing could be received into it.
pub fn recv_fd(socket: impl AsFd, payload: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    if payload.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "recv_fd: the payload buffer is empty"));
    }
    let socket = socket.as_fd().as_raw_fd();
    let mut filled = 0;
    let mut received: Option<OwnedFd> = None;
    while filled < payload.len() {
        let rest = &mut payload[filled..];
        let mut iov = libc::iovec { iov_base: rest.as_mut_ptr().cast(), iov_len: rest.len() };
        let mut control = Control([0; 64]);
        // SAFETY: msghdr is plain data; zero is a valid value of each field.
        let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len() as _;
        // SAFETY: `msg` names writable buffers of the lengths it gives.
        let n = unsafe { libc::recvmsg(socket, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // Every descriptor that arrived is owned now, so that each is closed on every path out.
        let fds = take_fds(&msg);
        let truncated = msg.msg_flags & libc::MSG_CTRUNC != 0;
        let count = fds.len() + usize::from(received.is_some());
        if truncated || count > 1 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "recv_fd: more than one descriptor arrived"));
        }
        if let Some(fd) = fds.into_iter().next() {
            received = Some(fd);
        }
        if n == 0 {
            break;
        }
        filled += n as usize;
    }
    Ok((filled, received))
}

/// The descriptors of the `SCM_RIGHTS` messages `msg` received, owned.
fn take_fds(msg: &libc::msghdr) -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    // SAFETY: `msg` was filled by recvmsg: its control buffer holds `msg_controllen` bytes of
    // well-formed headers, walked with the kernel's own macros; each SCM_RIGHTS message's data
    // is ints, descriptors now owned by this process.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = ((*cmsg).cmsg_len as usize).saturating_sub(libc::CMSG_LEN(0) as usize);
                for i in 0..bytes / core::mem::size_of::<c_int>() {
                    let fd = core::ptr::read_unaligned(data.cast::<c_int>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
    fds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::format;
    use std::io::{Read, Seek, Write};
    use std::os::unix::net::UnixStream;
    use std::string::String;

    #[test]
    fn a_descriptor_and_its_payload_reach_the_other_end() {
        let (a, b) = UnixStream::pair().unwrap();
        let mut file = tempfile();
        file.write_all(b"shared file").unwrap();
        send_fd(&a, &file, b"hello, pool").unwrap();
        let mut payload = [0u8; 11];
        let (n, fd) = recv_fd(&b, &mut payload).unwrap();
        assert_eq!(&payload[..n], b"hello, pool");
        // The received descriptor is the same open file: it reads what was written through ours.
        let mut received = std::fs::File::from(fd.unwrap());
        received.rewind().unwrap();
        let mut text = String::new();
        received.read_to_string(&mut text).unwrap();
        assert_eq!(text, "shared file");
    }

    #[test]
    fn plain_bytes_bring_no_descriptor_and_a_closed_peer_ends_the_stream() {
        let (mut a, b) = UnixStream::pair().unwrap();
        a.write_all(b"xy").unwrap();
        drop(a);
        let mut payload = [0u8; 4];
        let (n, fd) = recv_fd(&b, &mut payload).unwrap();
        assert_eq!((n, fd.is_none()), (2, true));
        assert_eq!(recv_fd(&b, &mut payload).unwrap().0, 0);
    }

    #[test]
    fn an_empty_payload_and_a_second_descriptor_are_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        let file = tempfile();
        assert_eq!(send_fd(&a, &file, b"").unwrap_err().kind(), io::ErrorKind::InvalidInput);
        send_fd(&a, &file, b"1").unwrap();
        // An empty buffer is refused without reading: the descriptor stays in the socket.
        assert_eq!(recv_fd(&b, &mut []).unwrap_err().kind(), io::ErrorKind::InvalidInput);
        send_fd(&a, &file, b"2").unwrap();
        let mut payload = [0u8; 2];
        assert_eq!(recv_fd(&b, &mut payload).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    /// A temporary file, removed from its folder at once (its descriptor keeps it).
    fn tempfile() -> std::fs::File {
        let path =
            std::env::temp_dir().join(format!("ordo-ipc-fd-{}-{:?}", std::process::id(), std::thread::current().id()));
        let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        file
    }
}
