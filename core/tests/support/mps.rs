//! An MPS control daemon for one test: started with its own pipe and log folders in a temporary
//! folder, so that only the processes given [`MpsDaemon::env`] become its clients, and stopped by
//! the guard's drop (`echo quit | nvidia-cuda-mps-control` with the same folders), also when the
//! test fails and unwinds. The GPU's settings (compute mode and the rest) are left alone.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CONTROL: &str = "nvidia-cuda-mps-control";

/// A running MPS control daemon, quit on drop.
pub struct MpsDaemon {
    root: PathBuf,
    pipe: PathBuf,
    log: PathBuf,
}

impl MpsDaemon {
    /// Starts a control daemon (`nvidia-cuda-mps-control -d`) with fresh pipe and log folders.
    /// `None` where the machine has no `nvidia-cuda-mps-control`; any other failure panics.
    pub fn start() -> Option<MpsDaemon> {
        static SERIAL: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "ordo-mps-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let (pipe, log) = (root.join("pipe"), root.join("log"));
        std::fs::create_dir_all(&pipe).unwrap();
        std::fs::create_dir_all(&log).unwrap();
        // From here the guard quits the daemon and removes the folders on every path out.
        let daemon = MpsDaemon { root, pipe, log };
        let status = daemon.control().arg("-d").status();
        match status {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_dir_all(&daemon.root);
                std::mem::forget(daemon);
                return None;
            }
            Err(e) => panic!("starting {CONTROL} -d: {e}"),
            Ok(s) => assert!(s.success(), "{CONTROL} -d failed: {s}"),
        }
        // The daemon forks; its control pipe appears once it listens.
        let start = Instant::now();
        while !daemon.pipe.join("control").exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(daemon)
    }

    /// The environment that makes a CUDA process this daemon's client.
    pub fn env(&self) -> [(&'static str, &OsStr); 2] {
        [("CUDA_MPS_PIPE_DIRECTORY", self.pipe.as_os_str()), ("CUDA_MPS_LOG_DIRECTORY", self.log.as_os_str())]
    }

    /// The log folder (`control.log`, `server.log`).
    pub fn log_dir(&self) -> &Path {
        &self.log
    }

    /// What the control daemon has logged so far.
    pub fn control_log(&self) -> String {
        std::fs::read_to_string(self.log.join("control.log")).unwrap_or_default()
    }

    /// `nvidia-cuda-mps-control` with this daemon's folders.
    fn control(&self) -> Command {
        let mut c = Command::new(CONTROL);
        c.env("CUDA_MPS_PIPE_DIRECTORY", &self.pipe).env("CUDA_MPS_LOG_DIRECTORY", &self.log);
        c
    }

    /// `echo quit | nvidia-cuda-mps-control`; whether it was delivered.
    fn quit(&self) -> bool {
        let Ok(mut child) = self.control().stdin(Stdio::piped()).stdout(Stdio::null()).spawn() else {
            return false;
        };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(b"quit\n");
        }
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return status.success(),
                Ok(None) if start.elapsed() < Duration::from_secs(30) => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }
}

impl Drop for MpsDaemon {
    fn drop(&mut self) {
        let quit = self.quit();
        // Give the daemon a moment to stop (its server first, once the clients are gone) before
        // its folders go; where it removes its control pipe, that says it has.
        let start = Instant::now();
        while quit && self.pipe.join("control").exists() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if !quit {
            eprintln!("MPS: `echo quit | {CONTROL}` failed for {}: stop it by hand", self.pipe.display());
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
