//! The driver's log of failed calls (CUDA 12.9 and later drivers, `cuLogs*`), read only after a
//! failure and kept for the error.
//!
//! The driver writes lines for each failure it can explain, `[time][thread][source][severity]
//! message`, into one process-wide buffer (25,600 bytes): the reason, then `Returning N (NAME) from
//! cuEntryPoint`; the thread is the POSIX thread handle (`pthread_self`) as a decimal number. (Seen
//! on driver 580: `[15:42:56.295][140537618612224][CUDA][E] buffer cannot be NULL`.) On the success
//! path ordo reads nothing. After a failure, [`capture`] reads what the buffer gained since the
//! calling thread last read it (each thread keeps its own position; its first read, and a read from
//! a position the wrapped log no longer holds, take the whole buffer; a read always has room for
//! the whole buffer, since the driver fills from the position onwards and would leave out the
//! newest lines, this failure's, when other threads wrote more since), keeps the lines that carry
//! the calling thread's handle (the failing call ran on it, and other threads' lines belong to
//! their own failures), and stores them under a number that the [`CudaError`](super::CudaError)
//! keeps: the error stays plain data. The last [`KEPT`] texts are kept; [`lookup`] finds one by its
//! number.
//!
//! A failure that ordo handled without reporting it (a driver call refused, then made through the
//! runtime) may leave a line that the next reported failure on the thread then shows too.

use super::Text;
use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::sync::Arc;
use core::num::NonZeroU32;
use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

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

/// Reads the driver's lines for the failure that just happened on this thread and keeps them;
/// their number, or `None` when the driver has no log or logged nothing for this thread.
#[cold]
#[inline(never)]
pub(crate) fn capture() -> Option<NonZeroU32> {
    let text = read()?;
    Some(store(text.into()))
}

/// The lines kept under `id`, while they are kept.
pub(crate) fn lookup(id: NonZeroU32) -> Option<Text> {
    let store = STORE.lock().unwrap_or_else(PoisonError::into_inner);
    store.iter().find(|(i, _)| *i == id).map(|(_, text)| Text::from(Arc::clone(text)))
}

fn store(text: Arc<str>) -> NonZeroU32 {
    let id = loop {
        // Wraps after 2^32 failures; 0 is skipped, and the store holds far fewer than 2^32.
        if let Some(id) = NonZeroU32::new(NEXT.fetch_add(1, Ordering::Relaxed)) {
            break id;
        }
    };
    let mut store = STORE.lock().unwrap_or_else(PoisonError::into_inner);
    if store.len() >= KEPT {
        store.pop_front();
    }
    store.push_back((id, text));
    id
}

#[cfg(cuda_12_8)]
std::thread_local! {
    /// Where this thread's next read of the driver's log starts; `None` before its first.
    static CURSOR: core::cell::Cell<Option<u32>> = const { core::cell::Cell::new(None) };
}

/// This thread's new lines in the driver's log, `; `-separated, or `None`.
#[cfg(cuda_12_8)]
fn read() -> Option<String> {
    if OVERRAN.load(Ordering::Relaxed) {
        return None;
    }
    let (current, dump) = crate::driver_calls::logs()?;
    // The offer exceeds the driver's whole log (READ_OFFERED): every line since this thread's last
    // read comes back, this failure's included however much other threads wrote meanwhile, and
    // the driver's too-small-buffer path is never taken. A failure is the cold path: the buffer is
    // on the heap.
    let mut buf = alloc::vec![CANARY; READ_OFFERED + MARGIN];
    let mut size = READ_OFFERED;
    let cursor = CURSOR.try_with(|c| c.get()).ok()?;
    let mut code = 1;
    if let Some(mut at) = cursor {
        // SAFETY: `at` and `size` are writable; `buf` holds `size` bytes and a margin after them.
        code = unsafe { dump(&mut at, buf.as_mut_ptr().cast(), &mut size, 0) };
        if code == 0 {
            let _ = CURSOR.try_with(|c| c.set(Some(at)));
        }
    }
    if code != 0 {
        // The first read on this thread, or a position the driver no longer holds (its log wraps):
        // the whole log, and from now on what follows it.
        size = READ_OFFERED;
        let mut at = 0;
        // SAFETY: `at` is writable.
        let known = unsafe { current(&mut at, 0) } == 0;
        // SAFETY: a null iterator reads every buffered line; `size` is writable and `buf` holds
        // `size` bytes and a margin after them.
        code = unsafe { dump(core::ptr::null_mut(), buf.as_mut_ptr().cast(), &mut size, 0) };
        if known && code == 0 {
            let _ = CURSOR.try_with(|c| c.set(Some(at)));
        }
    }
    // Past the offer only its NUL may be written.
    if buf.get(READ_OFFERED + 1..).is_some_and(|after| after.iter().any(|&b| b != CANARY)) {
        OVERRAN.store(true, Ordering::Relaxed);
        return None;
    }
    if code != 0 || size == 0 {
        return None;
    }
    let text = String::from_utf8_lossy(buf.get(..size.min(READ_OFFERED))?);
    this_threads_lines(&text, thread_ids())
}

#[cfg(not(cuda_12_8))]
fn read() -> Option<String> {
    None
}

/// The ids a line of the calling thread may carry: its POSIX thread handle (what driver 580
/// writes), and its kernel thread id (in case a driver writes that instead).
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

/// The lines of `log` that carry one of `ids` (every parsed line when `ids` is unknown), each as
/// `[severity] message`, `; `-separated; `None` for none. The driver ends the lines of each
/// failure with `Returning N (NAME) from cuEntryPoint`: the lines of the latest failure are kept
/// (from after the one before it), so that lines of a thread that ended earlier and whose handle
/// the calling thread now has, or of an earlier failure this thread did not report, are not
/// attributed to this one. Without such a line, the latest [`MAX_LINES`].
#[cfg(cuda_12_8)]
pub(crate) fn this_threads_lines(log: &str, ids: Option<[u64; 2]>) -> Option<String> {
    let lines: alloc::vec::Vec<&str> = log
        .lines()
        .filter_map(|line| {
            let (thread, rest) = parse(line)?;
            ids.map_or(true, |ids| ids.contains(&thread)).then_some(rest)
        })
        .collect();
    let ends = |l: &&str| l.contains("] Returning ");
    let kept = match lines.iter().rposition(ends) {
        Some(last) => {
            let first = lines[..last].iter().rposition(ends).map_or(0, |i| i + 1);
            let first = first.max((last + 1).saturating_sub(MAX_LINES));
            lines.get(first..=last)?
        }
        None => lines.get(lines.len().saturating_sub(MAX_LINES)..)?,
    };
    if kept.is_empty() {
        return None;
    }
    Some(kept.join("; "))
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
mod tests {
    use super::*;
    use alloc::format;

    #[cfg(cuda_12_8)]
    const LOG: &str = "\
[22:21:32.099][25642][CUDA][E] buffer cannot be NULL
[22:21:32.100][777][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync
some note the driver adds when older lines were dropped
[22:21:32.101][25642][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory
";

    #[cfg(cuda_12_8)]
    #[test]
    fn only_the_calling_threads_lines_are_kept_without_time_and_thread() {
        assert_eq!(
            this_threads_lines(LOG, Some([25642, 1])).unwrap(),
            "[E] buffer cannot be NULL; [E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory"
        );
        let other = "[E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync";
        assert_eq!(this_threads_lines(LOG, Some([777, 1])).unwrap(), other);
        assert_eq!(this_threads_lines(LOG, Some([5, 777])).unwrap(), other, "either id");
        assert!(this_threads_lines(LOG, Some([1, 2])).is_none(), "no line of this thread");
        assert_eq!(
            this_threads_lines(LOG, None).unwrap(),
            "[E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory",
            "unknown thread: the latest failure of any"
        );
        assert!(this_threads_lines("", Some([1, 2])).is_none());
        assert!(this_threads_lines("[x][notanumber][CUDA][E] m", None).is_none());
        assert!(this_threads_lines("[x][1][CUDA]", None).is_none(), "cut short");
    }

    /// Of the calling thread's lines, those of its latest failure: an earlier failure's (or a
    /// thread's that had the same handle before) end at their own `Returning` line.
    #[cfg(cuda_12_8)]
    #[test]
    fn only_the_latest_failures_lines_are_kept() {
        let log = "\
[t][9][CUDA][E] an earlier thread's reason
[t][9][CUDA][E] Returning 700 (CUDA_ERROR_ILLEGAL_ADDRESS) from cuStreamSynchronize
[t][3][CUDA][E] another thread's reason
[t][9][CUDA][E] Mempools do not support Read-Only flag
[t][3][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync
[t][9][CUDA][E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess
";
        assert_eq!(
            this_threads_lines(log, Some([9, 0])).unwrap(),
            "[E] Mempools do not support Read-Only flag; [E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess"
        );
        assert_eq!(
            this_threads_lines(log, Some([3, 0])).unwrap(),
            "[E] another thread's reason; [E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync"
        );
    }

    #[cfg(cuda_12_8)]
    #[test]
    fn at_most_the_latest_lines_are_kept() {
        let log: String = (0..20).map(|i| format!("[t][5][CUDA][E] line {i}\n")).collect();
        let kept = this_threads_lines(&log, Some([5, 1])).unwrap();
        assert_eq!(kept.matches("; ").count(), MAX_LINES - 1);
        assert!(kept.starts_with("[E] line 12;") && kept.ends_with("line 19"), "{kept}");
    }

    #[test]
    fn stored_texts_are_found_by_number_until_evicted() {
        let first = store("first".into());
        assert_eq!(lookup(first).unwrap(), "first");
        let ids: alloc::vec::Vec<_> = (0..KEPT).map(|i| store(format!("t{i}").into())).collect();
        assert!(lookup(first).is_none(), "evicted after KEPT newer ones");
        assert_eq!(lookup(ids[KEPT - 1]).unwrap(), format!("t{}", KEPT - 1).as_str());
    }
}
