use super::*;
use alloc::format;
#[cfg(cuda_12_8)]
use alloc::vec::Vec;

#[cfg(cuda_12_8)]
const fn failure(code: u32, call: &'static str) -> Failure {
    Failure { code, call }
}

#[cfg(cuda_12_8)]
const NULL_BUFFER: Failure = failure(1, "cuLogsDumpToMemory");

#[cfg(cuda_12_8)]
const LOG: &str = "\
[22:21:32.099][25642][CUDA][E] buffer cannot be NULL
[22:21:32.100][777][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory
some note the driver adds when older lines were dropped
[22:21:32.101][25642][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory
";

#[cfg(cuda_12_8)]
#[test]
fn only_the_calling_threads_lines_are_kept_without_time_and_thread() {
    assert_eq!(
        this_failures_lines(LOG, [25642, 1], NULL_BUFFER).unwrap(),
        "[E] buffer cannot be NULL; [E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory"
    );
    let other = "[E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory";
    assert_eq!(this_failures_lines(LOG, [777, 1], NULL_BUFFER).unwrap(), other);
    assert_eq!(this_failures_lines(LOG, [5, 777], NULL_BUFFER).unwrap(), other, "either id");
    assert!(this_failures_lines(LOG, [1, 2], NULL_BUFFER).is_none(), "no line of this thread");
    assert!(this_failures_lines("", [1, 2], NULL_BUFFER).is_none());
    assert!(this_failures_lines("[x][notanumber][CUDA][E] m", [1, 2], NULL_BUFFER).is_none());
    assert!(this_failures_lines("[x][1][CUDA]", [1, 2], NULL_BUFFER).is_none(), "cut short");
}

/// Of the calling thread's lines, those of its latest failure: an earlier failure's end at
/// their own `Returning` line.
#[cfg(cuda_12_8)]
#[test]
fn only_the_latest_failures_lines_are_kept() {
    let log = "\
[t][9][CUDA][E] an earlier failure's reason
[t][9][CUDA][E] Returning 700 (CUDA_ERROR_ILLEGAL_ADDRESS) from cuStreamSynchronize
[t][3][CUDA][E] another thread's reason
[t][9][CUDA][E] Mempools do not support Read-Only flag
[t][3][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync
[t][9][CUDA][E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess
";
    assert_eq!(
        this_failures_lines(log, [9, 0], failure(801, "cudaMemPoolSetAccess")).unwrap(),
        "[E] Mempools do not support Read-Only flag; [E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess"
    );
    assert_eq!(
        this_failures_lines(log, [3, 0], failure(1, "cudaMemcpyAsync")).unwrap(),
        "[E] another thread's reason; [E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync"
    );
}

/// H200, driver 580: `cudaSetDevice(9999)`, which the runtime refuses without calling the
/// driver, carried the lines of the thread's earlier `cuLogsDumpToMemory(NULL)`, a failure
/// the program made itself. Its latest lines are not its own: another code, another entry point.
#[cfg(cuda_12_8)]
#[test]
fn an_earlier_failures_lines_are_not_a_runtime_refusals() {
    let log = "\
[15:42:56.295][140537618612224][CUDA][E] buffer cannot be NULL
[15:42:56.295][140537618612224][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory
";
    let ids = [140_537_618_612_224, 7];
    let set_device = failure(101, "cudaSetDevice");
    assert!(this_failures_lines(log, ids, set_device).is_none(), "another code");
    assert!(this_failures_lines(log, ids, failure(1, "cudaSetDevice")).is_none(), "another entry point");
    assert!(this_failures_lines(log, ids, failure(1, "cuDeviceGet")).is_none(), "another driver call");
    assert!(this_failures_lines(log, ids, NULL_BUFFER).is_some(), "its own");
    // An earlier failure with the code, followed by the thread's latest with another: the
    // latest is not this failure's, and the earlier one is not either.
    let earlier = "\
[t][5][CUDA][E] Returning 101 (CUDA_ERROR_INVALID_DEVICE) from cuDeviceGet
[t][5][CUDA][E] buffer cannot be NULL
[t][5][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuLogsDumpToMemory
";
    assert!(this_failures_lines(earlier, [5, 0], set_device).is_none());
    // Reason lines with no `Returning` line end no failure.
    assert!(this_failures_lines("[t][5][CUDA][E] a reason\n", [5, 0], failure(1, "cudaMalloc")).is_none());
}

#[cfg(cuda_12_8)]
#[test]
fn a_line_matches_by_driver_code_and_entry_point_of_the_call() {
    let ends = |f: Failure, code, entry| f.ended_by(code, entry);
    // The same number, and entry points of the call's group or the context's set-up.
    assert!(ends(failure(801, "cudaMemPoolSetAccess"), 801, "cuMemPoolSetAccess"));
    assert!(ends(failure(2, "cudaMalloc"), 2, "cuMemAlloc_v2"), "versioned name");
    assert!(ends(failure(2, "cudaMallocAsync"), 2, "cuDevicePrimaryCtxRetain"), "context set-up");
    assert!(ends(failure(101, "cudaSetDevice"), 101, "cuDevicePrimaryCtxRetain"));
    assert!(ends(failure(400, "cudaStreamSynchronize"), 400, "cuStreamSynchronize_ptsz"));
    assert!(ends(failure(1, "cudaLaunchKernelExC"), 1, "cuLaunchKernelEx"));
    assert!(ends(failure(1, "cudaIpcOpenMemHandle"), 1, "cuIpcOpenMemHandle_v2"), "no group: its own name");
    assert!(ends(failure(500, "cudaGetDriverEntryPointByVersion"), 500, "cuGetProcAddress_v2"));
    // Runtime codes made from another driver code.
    assert!(ends(failure(9, "cudaLaunchKernelExC"), 1, "cuLaunchKernelEx"));
    assert!(ends(failure(98, "cudaFuncGetAttributes"), 500, "cuLibraryGetKernel"));
    assert!(!ends(failure(9, "cuLaunchKernelEx"), 1, "cuLaunchKernelEx"), "a driver call's code is the driver's");
    // Another code, another group, a call that makes no driver call.
    assert!(!ends(failure(101, "cudaSetDevice"), 1, "cuDevicePrimaryCtxRetain"));
    assert!(!ends(failure(1, "cudaSetDevice"), 1, "cuLogsDumpToMemory"));
    assert!(!ends(failure(1, "cudaStreamSynchronize"), 1, "cuMemcpyAsync"));
    assert!(!ends(failure(700, "cudaGetLastError"), 700, "cuStreamSynchronize"));
    assert!(!ends(failure(700, "cudaGetLastError"), 700, "cuInit"));
    assert!(!ends(failure(1, "cudaIpcOpenMemHandle"), 1, "cuIpcGetMemHandle"));
    // A driver call: only itself.
    assert!(ends(NULL_BUFFER, 1, "cuLogsDumpToMemory"));
    assert!(!ends(NULL_BUFFER, 1, "cuLogsCurrent"));
    assert!(!ends(failure(1, "Stream::new"), 1, "cuStreamCreate"), "not a CUDA name");
    assert!(!ends(failure(1, "cudaMalloc"), 1, "notcu"));
}

#[cfg(cuda_12_8)]
#[test]
fn returning_lines_are_parsed() {
    let line = "[E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess";
    assert_eq!(returning(line), Some((801, "cuMemPoolSetAccess")));
    assert_eq!(returning("[E] Returning 1 (X) from cuMemAlloc_v2."), Some((1, "cuMemAlloc_v2")));
    assert_eq!(returning("[E] buffer cannot be NULL"), None);
    assert_eq!(returning("[E] Returning x (X) from cuA"), None);
}

#[cfg(cuda_12_8)]
#[test]
fn at_most_the_latest_lines_are_kept() {
    let mut log: String = (0..20).map(|i| format!("[t][5][CUDA][E] line {i}\n")).collect();
    log.push_str("[t][5][CUDA][E] Returning 1 (CUDA_ERROR_INVALID_VALUE) from cuMemcpyAsync\n");
    let kept = this_failures_lines(&log, [5, 1], failure(1, "cudaMemcpyAsync")).unwrap();
    assert_eq!(kept.matches("; ").count(), MAX_LINES - 1);
    assert!(kept.starts_with("[E] line 13;") && kept.ends_with("from cuMemcpyAsync"), "{kept}");
}

/// A log held in memory, as the driver's: positions count lines; the lines before `first`
/// were overwritten, and a position before it is refused.
#[cfg(cuda_12_8)]
#[derive(Default)]
struct TestLog {
    lines: core::cell::RefCell<Vec<String>>,
    first: core::cell::Cell<usize>,
}

#[cfg(cuda_12_8)]
impl TestLog {
    fn write(&self, thread: u64, message: &str) {
        self.lines.borrow_mut().push(format!("[t][{thread}][CUDA][E] {message}\n"));
    }
}

#[cfg(cuda_12_8)]
impl Log for TestLog {
    fn end(&self) -> Option<u32> {
        u32::try_from(self.lines.borrow().len()).ok()
    }
    fn dump(&self, at: Option<&mut u32>) -> Option<String> {
        let lines = self.lines.borrow();
        let from = match at {
            None => self.first.get(),
            Some(at) => {
                let from = *at as usize;
                if from < self.first.get() || from > lines.len() {
                    return None;
                }
                *at = u32::try_from(lines.len()).ok()?;
                from
            }
        };
        Some(lines.get(from..)?.concat())
    }
}

#[cfg(cuda_12_8)]
const POOL_ACCESS: Failure = failure(801, "cudaMemPoolSetAccess");

#[cfg(cuda_12_8)]
const REFUSED: &str = "Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess";

#[cfg(cuda_12_8)]
fn lines_of(reader: &Reader, log: &TestLog, failure: Failure) -> Option<String> {
    this_failures_lines(&reader.read(log)?, reader.ids, failure)
}

/// An empty log, and no exited thread's position.
#[cfg(cuda_12_8)]
fn empty_log() -> (TestLog, Mutex<Exits>) {
    (TestLog::default(), Mutex::new(Exits(VecDeque::new())))
}

/// The reader of a new thread with `ids` whose call the driver refused (its line in `log`), and
/// whose first read found that failure's lines.
#[cfg(cuda_12_8)]
fn reader_after_one_failure(ids: [u64; 2], log: &TestLog, exits: &Mutex<Exits>) -> Reader {
    let reader = Reader::new(ids, exits);
    log.write(ids[0], REFUSED);
    assert!(lines_of(&reader, log, POOL_ACCESS).is_some());
    reader
}

/// H200, driver 580: a new thread's first failure carried the lines of a thread that had
/// exited, whose POSIX handle glibc had given it. Here both fail with the same code in the
/// same entry point, so only the position the exited thread left tells them apart.
#[cfg(cuda_12_8)]
#[test]
fn a_new_thread_reads_after_the_exited_thread_with_its_handle() {
    let (log, exits) = empty_log();
    let first = Reader::new([9, 100], &exits);
    log.write(9, "Mempools do not support Read-Only flag");
    log.write(9, REFUSED);
    assert!(lines_of(&first, &log, POOL_ACCESS).is_some(), "its own failure");
    // A failure it does not report, then it exits.
    log.write(9, REFUSED);
    first.exit(log.end(), &exits);
    log.write(3, "another thread's line");
    // The next thread with handle 9 fails where the runtime refuses without the driver.
    let next = Reader::new([9, 101], &exits);
    assert!(lines_of(&next, &log, POOL_ACCESS).is_none(), "the exited thread's lines");
    // Its own failure afterwards is found.
    log.write(9, "Mempools do not support Read-Only flag");
    log.write(9, REFUSED);
    assert_eq!(
        lines_of(&next, &log, POOL_ACCESS).unwrap(),
        "[E] Mempools do not support Read-Only flag; [E] Returning 801 (CUDA_ERROR_NOT_SUPPORTED) from cuMemPoolSetAccess"
    );
    // The position was taken: a third thread with the handle reads the whole log.
    assert!(lines_of(&Reader::new([9, 102], &exits), &log, POOL_ACCESS).is_some());
}

#[cfg(cuda_12_8)]
#[test]
fn an_exit_without_the_logs_end_records_the_last_read() {
    let (log, exits) = empty_log();
    let first = reader_after_one_failure([4, 1], &log, &exits);
    first.exit(None, &exits);
    assert_eq!(lock(&exits).take(4), Some(1), "after its last read");
    Reader::new([5, 2], &exits).exit(None, &exits);
    assert_eq!(lock(&exits).take(5), None, "a thread that never read knows no position");
}

#[cfg(cuda_12_8)]
#[test]
fn a_thread_reads_only_what_the_log_gained_since_its_last_read() {
    let (log, exits) = empty_log();
    let reader = reader_after_one_failure([7, 1], &log, &exits);
    assert!(lines_of(&reader, &log, POOL_ACCESS).is_none(), "no line since: the runtime refused alone");
    assert!(reader.read(&log).unwrap().is_empty());
    // A position the log no longer holds: all it holds is newer, and is read.
    log.write(7, "later");
    log.write(7, REFUSED);
    log.first.set(1);
    reader.cursor.set(Some(0));
    assert_eq!(lines_of(&reader, &log, POOL_ACCESS).unwrap(), format!("[E] later; [E] {REFUSED}"));
    assert_eq!(reader.cursor.get(), Some(3));
    // A refused position at the log's end: nothing new, not the whole log.
    log.first.set(4);
    assert!(reader.read(&log).is_none());
}

/// A log whose dumps go through [`guarded_dump`] with a canary flag of its own (not the
/// process's), written by a driver that writes past every offer; counts its dumps.
#[cfg(cuda_12_8)]
struct OverrunningLog {
    overran: core::sync::atomic::AtomicBool,
    dumps: core::cell::Cell<usize>,
}

#[cfg(cuda_12_8)]
impl Log for OverrunningLog {
    fn end(&self) -> Option<u32> {
        Some(7) // never where a reader's position is: a refused read falls back to the whole log
    }
    fn dump(&self, _at: Option<&mut u32>) -> Option<String> {
        guarded_dump(&self.overran, |buf, size| {
            self.dumps.set(self.dumps.get() + 1);
            // SAFETY: `buf` holds `*size` bytes and a margin after them; this writes within
            // the margin, as the driver of CB-27 did past its offer.
            unsafe { buf.add(*size + 100).write(b'x') };
            0
        })
    }
}

/// A driver caught writing past a read's offer is not read again: the read that caught it
/// fails, and its fallback to the whole log (a refused position whose log has moved) makes no
/// second dump; nor does any later read. Before, the fallback dumped the whole log again into
/// a driver known to overrun.
#[cfg(cuda_12_8)]
#[test]
fn a_driver_caught_overrunning_is_not_dumped_again() {
    let log = OverrunningLog { overran: core::sync::atomic::AtomicBool::new(false), dumps: Default::default() };
    let reader = Reader { ids: [1, 2], cursor: core::cell::Cell::new(Some(3)) };
    assert!(reader.read(&log).is_none());
    assert!(log.overran.load(Ordering::Relaxed), "the overrun is caught");
    assert_eq!(log.dumps.get(), 1, "dumped again after the overrun was caught");
    // A reader with no position, and a later read, dump nothing either.
    assert!(Reader { ids: [3, 4], cursor: core::cell::Cell::new(None) }.read(&log).is_none());
    assert!(reader.read(&log).is_none());
    assert_eq!(log.dumps.get(), 1);
    // A driver that writes within its offer is read as before.
    let fine = core::sync::atomic::AtomicBool::new(false);
    let text = guarded_dump(&fine, |buf, size| {
        // SAFETY: `buf` holds `*size` bytes; three are written, and the size written.
        unsafe { core::ptr::copy_nonoverlapping(b"abc".as_ptr(), buf, 3) };
        *size = 3;
        0
    });
    assert_eq!(text.as_deref(), Some("abc"));
    assert!(!fine.load(Ordering::Relaxed));
    assert!(guarded_dump(&fine, |_, _| 1).is_none(), "a refused dump");
    assert!(!fine.load(Ordering::Relaxed), "a refusal is no overrun");
}

#[cfg(cuda_12_8)]
#[test]
fn exited_threads_positions_are_bounded_and_taken_once() {
    let mut exits = Exits(VecDeque::new());
    for handle in 0..EXITS_KEPT as u64 + 2 {
        exits.record(handle, 1);
    }
    exits.record(5, 9);
    assert_eq!(exits.0.len(), EXITS_KEPT);
    assert_eq!(exits.take(0), None, "the oldest dropped");
    assert_eq!(exits.take(5), Some(9), "the latest exit of the handle");
    assert_eq!(exits.take(5), None);
}

/// The runtime codes CUresult also has: the same number with the same meaning, the names
/// aside (`cudaErrorMemoryAllocation`, `CUDA_ERROR_OUT_OF_MEMORY`), in the headers the build
/// used; [`TRANSLATED`] names runtime codes CUresult lacks, from driver codes it has.
#[cfg(cuda_12_8)]
#[test]
fn runtime_and_driver_codes_of_one_number_mean_the_same() {
    fn codes(header: &str, start: &str, prefix: &str) -> Vec<(u32, String)> {
        let body = &header[header.find(start).unwrap()..];
        let body = &body[..body.find('}').unwrap()];
        body.lines()
            .filter_map(|l| {
                let (name, value) = l.trim().strip_prefix(prefix)?.split_once('=')?;
                let value = value.trim().trim_end_matches(',').parse().ok()?;
                Some((value, name.trim().replace('_', "").to_uppercase()))
            })
            .collect()
    }
    let runtime = codes(
        include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/driver_types.h")),
        "enum __device_builtin__ cudaError",
        "cudaError",
    );
    let driver = codes(
        include_str!(concat!(env!("ORDO_CUDA_INCLUDE"), "/cuda.h")),
        "typedef enum cudaError_enum",
        "CUDA_ERROR_",
    );
    assert!(runtime.len() > 90 && driver.len() > 90, "{} {}", runtime.len(), driver.len());
    const RENAMED: &[(&str, &str)] = &[
        ("MEMORYALLOCATION", "OUTOFMEMORY"),
        ("INITIALIZATIONERROR", "NOTINITIALIZED"),
        ("CUDARTUNLOADING", "DEINITIALIZED"),
        ("DEVICESUNAVAILABLE", "DEVICEUNAVAILABLE"),
        ("INVALIDKERNELIMAGE", "INVALIDIMAGE"),
        ("DEVICEUNINITIALIZED", "INVALIDCONTEXT"),
        ("MAPBUFFEROBJECTFAILED", "MAPFAILED"),
        ("UNMAPBUFFEROBJECTFAILED", "UNMAPFAILED"),
        ("NOKERNELIMAGEFORDEVICE", "NOBINARYFORGPU"),
        ("DEVICEALREADYINUSE", "CONTEXTALREADYINUSE"),
        ("INVALIDRESOURCEHANDLE", "INVALIDHANDLE"),
        ("SYMBOLNOTFOUND", "NOTFOUND"),
        ("SETONACTIVEPROCESS", "PRIMARYCONTEXTACTIVE"),
        ("LAUNCHFAILURE", "LAUNCHFAILED"),
    ];
    let driver_name = |value: u32| driver.iter().find(|(v, _)| *v == value).map(|(_, n)| n.as_str());
    for (value, name) in &runtime {
        if let Some(d) = driver_name(*value) {
            assert!(d == name || RENAMED.contains(&(name.as_str(), d)), "{value}: cudaError{name} / CUDA_ERROR_{d}");
        }
    }
    for &(code, from) in TRANSLATED {
        assert!(driver_name(code).is_none(), "{code} is a driver code");
        assert!(runtime.iter().any(|(v, _)| *v == code), "{code} is no runtime code");
        assert!(from.iter().all(|&d| driver_name(d).is_some()), "{from:?}");
    }
}

#[test]
fn stored_texts_are_found_by_number_until_evicted() {
    let first = store("first".into());
    assert_eq!(lookup(first).unwrap(), "first");
    let ids: alloc::vec::Vec<_> = (0..KEPT).map(|i| store(format!("t{i}").into())).collect();
    assert!(lookup(first).is_none(), "evicted after KEPT newer ones");
    assert_eq!(lookup(ids[KEPT - 1]).unwrap(), format!("t{}", KEPT - 1).as_str());
}
