//! This test binary run again as a child process: the parent runs one test of the binary (an
//! entry that does nothing in an ordinary run) with a role in the environment, and talks to the
//! child over a Unix-domain socket that is the child's standard input. For tests of what crosses
//! process boundaries (IPC handles, pools shared by descriptor, MPS clients). Messages are
//! length-prefixed; every read has a deadline, so that a child that hangs or dies fails the test
//! instead of hanging it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that names the child's role.
pub const ROLE: &str = "ORDO_TEST_CHILD_ROLE";

/// How long a read waits for the other process.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs this binary's test `entry` (alone, exactly, output not captured) as a child with `role`
/// and the extra environment `envs`; returns the child and the parent's end of the socket.
pub fn spawn(entry: &str, role: &str, envs: &[(&str, &OsStr)]) -> (Child, UnixStream) {
    let (parent, child_end) = UnixStream::pair().unwrap();
    parent.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut command = Command::new(exe);
    command
        .args([entry, "--exact", "--nocapture", "--test-threads=1", "--include-ignored"])
        .env(ROLE, role)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(child_end)));
    for (key, value) in envs {
        command.env(key, value);
    }
    (command.spawn().unwrap(), parent)
}

/// In a child: its role and its socket to the parent. `None` in an ordinary test run.
pub fn role() -> Option<(String, UnixStream)> {
    let role = std::env::var(ROLE).ok()?;
    let socket = UnixStream::from(std::io::stdin().as_fd().try_clone_to_owned().unwrap());
    socket.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
    Some((role, socket))
}

/// Sends one message.
pub fn send(socket: &mut UnixStream, bytes: &[u8]) {
    socket.write_all(&(bytes.len() as u32).to_le_bytes()).unwrap();
    socket.write_all(bytes).unwrap();
}

/// Receives one message (the other side's `send`).
pub fn recv(socket: &mut UnixStream) -> Vec<u8> {
    let mut len = [0u8; 4];
    socket.read_exact(&mut len).expect("the other process sent nothing (it failed, or hangs)");
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    socket.read_exact(&mut bytes).unwrap();
    bytes
}

/// Receives one message and checks it is `expected`.
pub fn expect(socket: &mut UnixStream, expected: &[u8]) {
    let got = recv(socket);
    assert_eq!(
        got,
        expected,
        "{:?} where {:?} was expected",
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(expected)
    );
}

/// Waits for the child to exit (killing it after `timeout`) and asserts that its test passed.
pub fn wait_ok(mut child: Child, timeout: Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "the child process failed: {status} (its output is above)");
            return;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child process did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
