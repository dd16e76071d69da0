//! The driver's log of failed calls (CUDA 12.9 and later drivers, `cuLogs*`), read only after a
//! failure, and the lines of that failure kept for the error.
//!
//! The driver writes lines for each failure it can explain, `[time][thread][source][severity]
//! message`, into one process-wide buffer (25,600 bytes): the reason, then `Returning N (NAME) from
//! cuEntryPoint`; the thread is the POSIX thread handle (`pthread_self`) as a decimal number. (Seen
//! on driver 580: `[15:42:56.295][140537618612224][CUDA][E] buffer cannot be NULL`.) On the success
//! path ordo reads nothing.
//!
//! # Reading
//! After a failure, [`capture`] reads what the log gained since the calling thread last read it
//! ([`Reader`]: each thread keeps its own position; a read from a position the driver refuses
//! takes the whole log, unless the log has not moved since). A read always has room for the whole
//! log: the driver fills from the position onwards and would leave out the newest lines, this
//! failure's, when other threads wrote more since.
//!
//! # Which lines are the failure's
//! Of the calling thread's lines, those of its latest failure: the lines after its second-latest
//! `Returning` line, up to its latest, and only when that latest line names the failure's code
//! ([`Failure`]: the driver's code for it) and an entry point the failing call may have called. A
//! call the runtime refuses without calling the driver (`cudaSetDevice(9999)`) leaves no line of
//! its own: the thread's latest lines are then another failure's, one the program made itself and
//! did not report, and are not attached. No reason rather than a wrong one.
//!
//! # Threads that exited
//! glibc gives a new thread the handle of one that exited (it reuses the stack), so the exited
//! thread's lines carry the new thread's handle. A thread that read the log records, as it exits,
//! where the log then ended ([`Exits`]); a new thread with its handle starts reading there, after
//! the lines of the thread before it. An exited thread that never had an error read through ordo
//! recorded nothing: its lines are told apart from the new thread's only by code and entry point.
//!
//! The texts kept are stored under a number that the [`CudaError`](super::CudaError) keeps: the
//! error stays plain data. The last [`KEPT`] texts are kept; [`lookup`] finds one by its number.

use super::Text;
use crate::sync::lock;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::sync::Arc;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// How many failures' lines are kept.
pub(crate) const KEPT: usize = 256;

/// At most this many of the thread's lines are kept for one failure (the latest).
#[cfg(cuda_12_8)]
const MAX_LINES: usize = 8;

/// The most the driver keeps of its log, in bytes (CUDA's documentation of `cuLogsDumpToMemory`).
#[cfg(cuda_12_8)]
const LOG_CAPACITY: usize = 25_600;

/// The size a read offers the driver: more than its whole log, so that the driver never takes the
/// path of a buffer too small for what it holds (a note at the head, then as many of the newest
/// lines as it computes fit). On driver 580 that path wrote past the buffer it was given
/// (`docs/cuda-behaviours.md`, CB-27): a 4096-byte read corrupted the caller's stack. Twice the
/// documented store, in case a dump spells its lines out longer than the store keeps them.
#[cfg(cuda_12_8)]
const READ_OFFERED: usize = 2 * LOG_CAPACITY + 4096;

/// Bytes after the offer that the driver is never told of, filled with [`CANARY`] and checked after
/// each read: its terminating NUL goes there when the offer is full, and a driver that writes past
/// what it was offered writes into ordo's own allocation, is caught, and is not read again.
#[cfg(cuda_12_8)]
const MARGIN: usize = 64 * 1024;

#[cfg(cuda_12_8)]
const CANARY: u8 = 0xA5;

/// Set when a read found the driver had written past the offer's NUL: the log is not read again.
#[cfg(cuda_12_8)]
static OVERRAN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

static NEXT: AtomicU32 = AtomicU32::new(1);
static STORE: Mutex<VecDeque<(NonZeroU32, Arc<str>)>> = Mutex::new(VecDeque::new());

/// Reads the driver's lines for the failure that just happened on this thread (`code`, returned by
/// `call`) and keeps them; their number, or `None` when the driver has no log or logged nothing
/// that is this failure's.
#[cold]
#[inline(never)]
pub(crate) fn capture(code: u32, call: &'static str) -> Option<NonZeroU32> {
    let text = read(code, call)?;
    Some(store(text.into()))
}

/// The lines kept under `id`, while they are kept.
pub(crate) fn lookup(id: NonZeroU32) -> Option<Text> {
    let store = lock(&STORE);
    store.iter().find(|(i, _)| *i == id).map(|(_, text)| Text::from(Arc::clone(text)))
}

fn store(text: Arc<str>) -> NonZeroU32 {
    let id = loop {
        // Wraps after 2^32 failures; 0 is skipped, and the store holds far fewer than 2^32.
        if let Some(id) = NonZeroU32::new(NEXT.fetch_add(1, Ordering::Relaxed)) {
            break id;
        }
    };
    let mut store = lock(&STORE);
    if store.len() >= KEPT {
        store.pop_front();
    }
    store.push_back((id, text));
    id
}

/// This failure's lines, `; `-separated, or `None`.
#[cfg(cuda_12_8)]
fn read(code: u32, call: &'static str) -> Option<String> {
    let log = Driver::get()?;
    READER
        .try_with(|reader| {
            let reader = reader.0.as_ref()?;
            let text = reader.read(&log)?;
            this_failures_lines(&text, reader.ids, Failure { code, call })
        })
        .ok()?
}

#[cfg(not(cuda_12_8))]
fn read(_code: u32, _call: &'static str) -> Option<String> {
    None
}

/// A failure whose lines are wanted: the code its call returned and the call's name, a runtime
/// call's (`cudaSetDevice`, with the runtime's code) or a driver call's (`cuDeviceGet`, with the
/// driver's code).
#[cfg(cuda_12_8)]
#[derive(Clone, Copy, Debug)]
struct Failure {
    code: u32,
    call: &'static str,
}

/// Runtime codes that CUresult lacks and that the runtime makes from a driver code of another
/// number: a launch configuration the driver refused (`cudaErrorInvalidConfiguration` from
/// `CUDA_ERROR_INVALID_VALUE`), a function the driver does not know or did not find
/// (`cudaErrorInvalidDeviceFunction` from `CUDA_ERROR_INVALID_HANDLE` or `CUDA_ERROR_NOT_FOUND`).
/// Every runtime code that CUresult also has is the same number with the same meaning (a test
/// checks the headers); the other runtime codes are the runtime's own, with no line of the driver.
#[cfg(cuda_12_8)]
const TRANSLATED: &[(u32, &[u32])] = &[(9, &[1]), (98, &[400, 500])];

/// Which driver entry points a runtime call may fail in, by the start of their names after `cuda`
/// and `cu`: the calls of a group, then the entry points they are made of. First match wins; a
/// call of no group may fail only in the entry point of its own name (`cudaIpcOpenMemHandle`,
/// `cuIpcOpenMemHandle`). Calls that report the runtime's own state call no entry point.
#[cfg(cuda_12_8)]
const GROUPS: &[(&[&str], &[&str])] = &[
    (&["GetLastError", "PeekAtLastError", "GetErrorName", "GetErrorString", "RuntimeGetVersion"], &[]),
    (&["SetDevice", "GetDevice", "InitDevice", "ChooseDevice", "Device"], &["Device", "Ctx"]),
    (&["Thread"], &["Thread", "Ctx"]),
    (&["Stream"], &["Stream", "Ctx"]),
    (&["Event"], &["Event"]),
    (
        &["Launch", "Func", "GetFuncBySymbol", "GetKernel", "Occupancy", "Library", "Kernel"],
        &["Launch", "Func", "Kernel", "Library", "Module", "Occupancy"],
    ),
    (&["Malloc", "Free", "Host", "Mem", "Array", "Mipmapped", "Pointer"], &["Mem", "Array", "Mipmapped", "Pointer"]),
    (&["Graph"], &["Graph"]),
    (&["UserObject"], &["UserObject"]),
    (&["GetDriverEntryPoint"], &["GetProcAddress"]),
];

/// Entry points the runtime calls to set up the device's context, which any call that uses a
/// device may make first (`cuInit`, `cuDevicePrimaryCtxRetain`).
#[cfg(cuda_12_8)]
const SET_UP: &[&str] = &["Init", "DevicePrimaryCtx"];

#[cfg(cuda_12_8)]
impl Failure {
    /// Whether the driver's line `Returning code (NAME) from entry` ends this failure's lines.
    fn ended_by(&self, code: u32, entry: &str) -> bool {
        self.has_driver_code(code) && self.may_have_called(entry)
    }

    /// Whether the driver's `code` is this failure's: the same number, or one the runtime
    /// translates into this failure's code ([`TRANSLATED`]).
    fn has_driver_code(&self, code: u32) -> bool {
        code == self.code
            || (self.call.starts_with("cuda")
                && TRANSLATED.iter().any(|&(runtime, driver)| runtime == self.code && driver.contains(&code)))
    }

    /// Whether the failing call may have called the driver's `entry` (versioned names, `_v2` or
    /// `_ptsz`, are the entry point's): a driver call only itself, a runtime call its group's.
    fn may_have_called(&self, entry: &str) -> bool {
        let Some(entry) = entry.split('_').next().and_then(|e| e.strip_prefix("cu")) else { return false };
        let Some(call) = self.call.strip_prefix("cuda") else {
            return self.call.strip_prefix("cu").is_some_and(|call| call.split('_').next() == Some(entry));
        };
        let set_up = || SET_UP.iter().any(|s| entry.starts_with(s));
        match GROUPS.iter().find(|(calls, _)| calls.iter().any(|c| call.starts_with(c))) {
            Some((_, entries)) => !entries.is_empty() && (entries.iter().any(|e| entry.starts_with(e)) || set_up()),
            None => entry == call || set_up(),
        }
    }
}

/// The driver's log as a [`Reader`] reads it; a trait so that tests read a log of their own.
#[cfg(cuda_12_8)]
trait Log {
    /// Where the next line will be written (`cuLogsCurrent`), when the driver says.
    fn end(&self) -> Option<u32>;
    /// The lines from `*at` on, moving `at` past them, or every line held for `None`; `None` when
    /// the driver refuses.
    fn dump(&self, at: Option<&mut u32>) -> Option<String>;
}

/// The driver's `cuLogsCurrent` and `cuLogsDumpToMemory`.
#[cfg(cuda_12_8)]
struct Driver {
    current: crate::driver_calls::LogsCurrentFn,
    dump: crate::driver_calls::LogsDumpFn,
}

#[cfg(cuda_12_8)]
impl Driver {
    /// The driver's log, unless the driver keeps none or once wrote past a read's offer.
    fn get() -> Option<Driver> {
        if OVERRAN.load(Ordering::Relaxed) {
            return None;
        }
        let (current, dump) = crate::driver_calls::logs()?;
        Some(Driver { current, dump })
    }
}

#[cfg(cuda_12_8)]
impl Log for Driver {
    fn end(&self) -> Option<u32> {
        let mut at = 0;
        // SAFETY: `at` is writable; flags 0.
        (unsafe { (self.current)(&mut at, 0) } == 0).then_some(at)
    }

    fn dump(&self, at: Option<&mut u32>) -> Option<String> {
        let at = at.map_or(core::ptr::null_mut(), |at| at as *mut u32);
        guarded_dump(&OVERRAN, |buf, size| {
            // SAFETY: `at` is null (every buffered line) or writable; `size` is writable and `buf`
            // holds `*size` bytes and a margin after them (`guarded_dump`).
            unsafe { (self.dump)(at, buf.cast(), size, 0) }
        })
    }
}

/// One dump of the log through `dump` (given a buffer and the size offered, which it sets to the
/// size written; its status back), unless `overran` is set: a driver once caught writing past an
/// offer is not read again, by any reader, whichever path of [`Reader::read`] asks. Sets `overran`
/// when this dump wrote past the offer's NUL.
///
/// The offer exceeds the driver's whole log (`READ_OFFERED`): every line since the position comes
/// back, the failure's included however much other threads wrote meanwhile, and the driver's
/// too-small-buffer path is never taken. A failure is the cold path: the buffer is on the heap.
#[cfg(cuda_12_8)]
fn guarded_dump(
    overran: &core::sync::atomic::AtomicBool,
    dump: impl FnOnce(*mut u8, &mut usize) -> core::ffi::c_int,
) -> Option<String> {
    if overran.load(Ordering::Relaxed) {
        return None;
    }
    let mut buf = alloc::vec![CANARY; READ_OFFERED + MARGIN];
    let mut size = READ_OFFERED;
    let code = dump(buf.as_mut_ptr(), &mut size);
    // Past the offer only its NUL may be written.
    if buf.get(READ_OFFERED + 1..).is_some_and(|after| after.iter().any(|&b| b != CANARY)) {
        overran.store(true, Ordering::Relaxed);
        return None;
    }
    if code != 0 {
        return None;
    }
    Some(String::from_utf8_lossy(buf.get(..size.min(READ_OFFERED))?).into_owned())
}

/// One thread's reads of the log.
#[cfg(cuda_12_8)]
struct Reader {
    /// The ids the driver's lines of the thread may carry: its POSIX thread handle (what driver
    /// 580 writes), and its kernel thread id (in case a driver writes that instead).
    ids: [u64; 2],
    /// Where the thread's next read starts: after its last read, or, before its first, where the
    /// log ended when a thread with its handle exited; `None`: the whole log.
    cursor: core::cell::Cell<Option<u32>>,
}

#[cfg(cuda_12_8)]
impl Reader {
    /// The reader of a thread with `ids`, starting where the log ended when the last thread with
    /// its handle exited, as recorded in `exits`.
    fn new(ids: [u64; 2], exits: &Mutex<Exits>) -> Reader {
        let start = lock(exits).take(ids[0]);
        Reader { ids, cursor: core::cell::Cell::new(start) }
    }

    /// What `log` gained since this reader's last read (all it holds before the first), or `None`.
    fn read(&self, log: &impl Log) -> Option<String> {
        if let Some(start) = self.cursor.get() {
            let mut at = start;
            if let Some(text) = log.dump(Some(&mut at)) {
                self.cursor.set(Some(at));
                return Some(text);
            }
            // Refused: the log has not moved (a driver may refuse a position at its end), or no
            // longer holds `start` (it wrapped past it, so all it holds is newer).
            if log.end() == Some(start) {
                return None;
            }
        }
        let end = log.end();
        let text = log.dump(None)?;
        if end.is_some() {
            self.cursor.set(end);
        }
        Some(text)
    }

    /// Records, as the thread exits, where its lines end: at `end` (where the log ends now), else
    /// after its last read.
    fn exit(&self, end: Option<u32>, exits: &Mutex<Exits>) {
        if let Some(at) = end.or(self.cursor.get()) {
            lock(exits).record(self.ids[0], at);
        }
    }
}

/// The calling thread's [`Reader`] (none where its ids are unknown), which records the thread's
/// exit.
#[cfg(cuda_12_8)]
struct ThreadReader(Option<Reader>);

#[cfg(cuda_12_8)]
impl Drop for ThreadReader {
    fn drop(&mut self) {
        if let Some(reader) = &self.0 {
            reader.exit(Driver::get().and_then(|log| log.end()), &EXITED);
        }
    }
}

#[cfg(cuda_12_8)]
std::thread_local! {
    /// Made at the thread's first read, after its first failure: nothing on a success path.
    static READER: ThreadReader = ThreadReader(thread_ids().map(|ids| Reader::new(ids, &EXITED)));
}

/// How many exited threads' positions are kept; a thread whose handle's position was dropped reads
/// the whole log first.
#[cfg(cuda_12_8)]
const EXITS_KEPT: usize = 256;

/// Where the log ended when threads that read it exited, by POSIX thread handle, oldest first.
#[cfg(cuda_12_8)]
struct Exits(VecDeque<(u64, u32)>);

#[cfg(cuda_12_8)]
static EXITED: Mutex<Exits> = Mutex::new(Exits(VecDeque::new()));

#[cfg(cuda_12_8)]
impl Exits {
    fn record(&mut self, handle: u64, at: u32) {
        self.0.retain(|&(h, _)| h != handle);
        if self.0.len() >= EXITS_KEPT {
            self.0.pop_front();
        }
        self.0.push_back((handle, at));
    }

    /// The position recorded for `handle`, which only the next thread with that handle takes.
    fn take(&mut self, handle: u64) -> Option<u32> {
        let i = self.0.iter().position(|&(h, _)| h == handle)?;
        self.0.remove(i).map(|(_, at)| at)
    }
}

/// The calling thread's POSIX thread handle and kernel thread id.
#[cfg(all(cuda_12_8, target_os = "linux"))]
fn thread_ids() -> Option<[u64; 2]> {
    extern "C" {
        fn gettid() -> i32;
        fn pthread_self() -> core::ffi::c_ulong;
    }
    // SAFETY: no arguments; neither can fail.
    let (handle, tid) = unsafe { (pthread_self(), gettid()) };
    Some([handle, u64::try_from(tid).ok()?])
}

#[cfg(all(cuda_12_8, not(target_os = "linux")))]
fn thread_ids() -> Option<[u64; 2]> {
    None
}

/// The lines of `failure` in `log` (text the driver dumped): of the lines that carry one of `ids`,
/// those after the second-latest `Returning` line up to the latest, which must end `failure`
/// ([`Failure::ended_by`]); at most the latest [`MAX_LINES`], each as `[severity] message`,
/// `; `-separated. `None` when the thread has no `Returning` line, or its latest is another
/// failure's.
#[cfg(cuda_12_8)]
fn this_failures_lines(log: &str, ids: [u64; 2], failure: Failure) -> Option<String> {
    let lines: alloc::vec::Vec<&str> = log
        .lines()
        .filter_map(|line| {
            let (thread, rest) = parse(line)?;
            ids.contains(&thread).then_some(rest)
        })
        .collect();
    let last = lines.iter().rposition(|l| returning(l).is_some())?;
    let (code, entry) = returning(lines.get(last)?)?;
    if !failure.ended_by(code, entry) {
        return None;
    }
    let first = lines.get(..last)?.iter().rposition(|l| returning(l).is_some()).map_or(0, |i| i + 1);
    let first = first.max((last + 1).saturating_sub(MAX_LINES));
    Some(lines.get(first..=last)?.join("; "))
}

/// `[severity] Returning N (NAME) from cuEntryPoint` → (N, `cuEntryPoint`); `None` for another line.
#[cfg(cuda_12_8)]
fn returning(line: &str) -> Option<(u32, &str)> {
    let (_, rest) = line.split_once("] Returning ")?;
    let (code, rest) = rest.split_once(' ')?;
    let (_, entry) = rest.rsplit_once(" from ")?;
    let entry = entry.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    Some((code.parse().ok()?, entry))
}

/// `[time][thread][source][severity] message` → (thread, `[severity] message`); `None` for a line
/// of another shape (the driver's note that older lines were lost).
#[cfg(cuda_12_8)]
fn parse(line: &str) -> Option<(u64, &str)> {
    let field = |s: &str| -> Option<usize> { s.starts_with('[').then(|| s.find(']')).flatten() };
    let line = line.trim_end();
    let time_end = field(line)?;
    let rest = line.get(time_end + 1..)?;
    let thread_end = field(rest)?;
    let thread: u64 = rest.get(1..thread_end)?.trim().parse().ok()?;
    let rest = rest.get(thread_end + 1..)?;
    let source_end = field(rest)?;
    let rest = rest.get(source_end + 1..)?;
    field(rest)?;
    Some((thread, rest))
}

#[cfg(test)]
mod tests;
