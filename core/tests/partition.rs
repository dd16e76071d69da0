//! SM partitions (green contexts): partitions of one split run on disjoint SMs (each block of a
//! test kernel writes its `%smid`), partition streams take every stream call and graph launches,
//! the last handle waits for the partition's work, a graph captured on a partition (or joined by a
//! partition's stream) keeps it and replays on its SMs after the partition and its streams are
//! dropped, streams of one partition are made from many threads at once; without a driver, a clear
//! error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[cfg(cuda_library_api)]
use ordo_cuda_core::memory::copy;
#[cfg(cuda_library_api)]
use ordo_cuda_core::partition::{PartitionStream, Remainder, SmPartition};
use ordo_cuda_core::partition::{SmGranularity, SmSplit};
use ordo_cuda_core::*;
#[cfg(cuda_library_api)]
use std::collections::BTreeSet;

#[cfg(cuda_library_api)]
#[path = "support/random.rs"]
mod random;

fn driver_present() -> bool {
    std::path::Path::new("/dev/nvidiactl").exists()
}

#[test]
fn without_a_driver_a_split_says_so() {
    if driver_present() {
        return; // the GPU tests below cover a machine with a driver
    }
    let err = SmSplit::new(Device::from_ordinal(0), 16).unwrap_err();
    assert!(err.cuda().is_some_and(|e| e.is_no_driver()), "{err}");
    assert!(err.to_string().contains("driver"), "{err}");
    assert!(SmGranularity::of(Device::from_ordinal(0)).is_err());
}

/// `ordo_smid(unsigned* out, u64 spin_ns)`: every thread spins `spin_ns` of `%globaltimer` (so
/// that the blocks spread over every SM they may use), then thread 0 writes the block's `%smid`
/// to `out[blockIdx.x]`. `ordo_spin_flag(unsigned* flag, u64 ns)`: spins `ns`, then writes 1 to
/// `*flag` (generic address: mapped host memory). `ordo_add_const(float* x, float c, int n)`:
/// `x[i] += c`.
#[cfg(cuda_library_api)]
const PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64

.visible .entry ordo_smid(
    .param .u64 p_out,
    .param .u64 p_spin
)
{
    .reg .pred %p<3>;
    .reg .b32 %r<4>;
    .reg .b64 %rd<9>;

    ld.param.u64 %rd1, [p_out];
    ld.param.u64 %rd2, [p_spin];
    mov.u64 %rd3, %globaltimer;
$L_spin:
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p1, %rd5, %rd2;
    @%p1 bra $L_spin;
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p2, %r1, 0;
    @%p2 bra $L_done;
    mov.u32 %r2, %smid;
    mov.u32 %r3, %ctaid.x;
    cvta.to.global.u64 %rd6, %rd1;
    mul.wide.u32 %rd7, %r3, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.u32 [%rd8], %r2;
$L_done:
    ret;
}

.visible .entry ordo_spin_flag(
    .param .u64 p_flag,
    .param .u64 p_ns
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [p_flag];
    ld.param.u64 %rd2, [p_ns];
    mov.u64 %rd3, %globaltimer;
$L_wait:
    mov.u64 %rd4, %globaltimer;
    sub.u64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p1, %rd5, %rd2;
    @%p1 bra $L_wait;
    mov.u32 %r1, 1;
    st.volatile.u32 [%rd1], %r1;
    membar.sys;
    ret;
}

.visible .entry ordo_add_const(
    .param .u64 p_x,
    .param .f32 p_c,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [p_x];
    ld.param.f32 %f1, [p_c];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra $L_end;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.f32 %f2, [%rd4];
    add.f32 %f3, %f2, %f1;
    st.global.f32 [%rd4], %f3;
$L_end:
    ret;
}
";

#[cfg(cuda_library_api)]
mod kernels {
    use super::*;
    use ordo_cuda_core::library::{Library, LibraryKernel};
    use std::sync::OnceLock;

    fn library() -> &'static Library {
        static LIB: OnceLock<Library> = OnceLock::new();
        LIB.get_or_init(|| Library::from_ptx(PTX).unwrap())
    }

    pub fn smid() -> LibraryKernel<(*mut u32, u64)> {
        // SAFETY: ordo_smid takes (unsigned*, unsigned long long).
        unsafe { library().kernel(c"ordo_smid") }.unwrap()
    }

    pub fn spin_flag() -> LibraryKernel<(*mut u32, u64)> {
        // SAFETY: ordo_spin_flag takes (unsigned*, unsigned long long).
        unsafe { library().kernel(c"ordo_spin_flag") }.unwrap()
    }

    pub fn add_const() -> LibraryKernel<(*mut f32, f32, i32)> {
        // SAFETY: ordo_add_const takes (float*, float, int).
        unsafe { library().kernel(c"ordo_add_const") }.unwrap()
    }

    /// Blocks of 1024 threads (at most two resident on an SM), two for each SM of the device:
    /// every SM a stream may use gets one while they spin.
    pub fn blocks() -> usize {
        2 * Device::current().unwrap().sm_count().unwrap() as usize
    }

    /// A buffer of one entry a block, 0xff in every byte (an entry no block wrote reads u32::MAX).
    pub fn smid_buffer(s: StreamRef<'_>) -> DeviceBuffer<'_, u32> {
        let mut out = DeviceBuffer::<u32>::alloc_async(blocks(), s).unwrap();
        // SAFETY: `out` is freed on its own stream `s`, after the memset.
        unsafe { copy::memset_async(out.as_mut_slice(), 0xff, s) }.unwrap();
        out
    }

    /// Enqueues `ordo_smid` on `s`, writing into `out` (one entry a block), spinning 200 us.
    pub fn enqueue_smid(s: StreamRef<'_>, out: &mut DeviceBuffer<'_, u32>) -> Result<()> {
        let config = launch::LaunchConfig::new(out.len() as u32, 1024u32);
        // SAFETY: `out` holds one u32 a block; the callers keep it until the kernel has run
        // (a blocking read, or its free on the stream it was allocated on).
        unsafe { smid().launch(s, &config, (out.as_mut_ptr(), 200_000)) }
    }

    /// The distinct `%smid` values in `out`, read with a blocking copy on `s`; every block must
    /// have written one.
    pub fn read_sms(out: &DeviceBuffer<'_, u32>, s: StreamRef<'_>) -> BTreeSet<u32> {
        let mut host = vec![0u32; out.len()];
        copy::d2h_blocking(&mut host, out.as_slice(), s).unwrap();
        assert!(host.iter().all(|&v| v != u32::MAX), "a block wrote no %smid");
        host.into_iter().collect()
    }

    /// The SMs one launch of `ordo_smid` on `s` ran on.
    pub fn sms_of(s: StreamRef<'_>) -> BTreeSet<u32> {
        let mut out = smid_buffer(s);
        enqueue_smid(s, &mut out).unwrap();
        read_sms(&out, s)
    }
}

#[cfg(cuda_library_api)]
use kernels::*;

/// One split, partitions of its groups: each partition's blocks run on SMs of no other partition
/// of the split, on at most its SM count. One group and the rest (the decode shape), and four
/// partitions with the SMs left over on their own.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn partitions_of_one_split_run_on_disjoint_sms() {
    let device = Device::current().unwrap();
    let g = SmGranularity::of(device).unwrap();
    assert_eq!(g.sm_count, device.sm_count().unwrap());
    assert!(g.min_partition >= 1 && g.alignment >= 1, "{g:?}");
    let split = SmSplit::new(device, 16).unwrap();
    println!(
        "{g:?}; split by 16: {} groups of {} SMs, {} left over",
        split.group_count(),
        split.sms_per_group(),
        split.remainder_sms()
    );
    assert!(split.sms_per_group() >= 16 && split.sms_per_group() % g.alignment == 0, "{split:?}");
    let covered = split.group_count() as u32 * split.sms_per_group() + split.remainder_sms();
    assert!(covered <= g.sm_count, "{split:?}");
    let (decode, rest) = split.one_and_rest().unwrap();
    assert_eq!(decode.sm_count() + rest.sm_count(), covered, "every SM of the split, once");
    // Four partitions of equal groups, the SMs left over a fifth.
    let split = SmSplit::new(device, 16).unwrap();
    let each = (split.group_count() / 4).max(1);
    let counts = vec![each; (split.group_count() / each).min(4)];
    let remainder = if split.remainder_sms() > 0 { Remainder::Own } else { Remainder::Unused };
    let several = split.into_partitions(&counts, remainder).unwrap();
    for parts in [vec![decode, rest], several] {
        let streams: Vec<PartitionStream> = parts.iter().map(|p| p.stream().unwrap()).collect();
        let sets: Vec<BTreeSet<u32>> = streams.iter().map(|s| sms_of(s.as_stream())).collect();
        for (i, (set, part)) in sets.iter().zip(&parts).enumerate() {
            println!("partition {i}: {} SMs, blocks ran on {set:?}", part.sm_count());
            assert!(!set.is_empty() && set.len() as u32 <= part.sm_count(), "partition {i}: {set:?}");
            for (j, other) in sets.iter().enumerate().skip(i + 1) {
                assert!(set.is_disjoint(other), "partitions {i} and {j} share SMs: {:?}", set.intersection(other));
            }
        }
    }
}

/// A partition's stream takes what any stream takes: stream-ordered allocation, copies (async and
/// blocking), a kernel, an event recorded there and waited on by a plain stream; a graph captured
/// on a plain stream and launched on the partition's stream runs on the partition's SMs, as does
/// a graph captured on the partition's stream.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn partition_streams_take_every_stream_call_and_graph_launches() {
    let device = Device::current().unwrap();
    let (a, b) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
    let (sa, sb) = (a.stream().unwrap(), b.stream().unwrap());
    assert!(sa.partition().same_as(&a) && !sa.partition().same_as(&b));
    let plain = Stream::new().unwrap();
    let (s, p) = (sa.as_stream(), plain.as_stream());
    assert_eq!(s.device().unwrap(), device);

    // Allocation, copies and a kernel on the partition's stream, read back on a plain stream
    // after an event.
    let n = 300_007usize;
    let data: Vec<f32> = random::random_u32(n, 33).iter().map(|&v| (v % 4096) as f32 - 2048.0).collect();
    let host = PinnedBuffer::from_slice(&data).unwrap();
    let mut x = DeviceBuffer::<f32>::alloc_async(n, s).unwrap();
    // SAFETY: `host` and `x` outlive the copy (the final synchronise below).
    unsafe { copy::h2d_async(x.as_mut_slice(), host.pinned(), s) }.unwrap();
    let config = launch::LaunchConfig::for_elements(n, 256).unwrap();
    // SAFETY: `x` holds n floats, alive until its free on `s`, after the kernel.
    unsafe { add_const().launch(s, &config, (x.as_mut_ptr(), 1.5, n as i32)) }.unwrap();
    let done = Event::new().unwrap();
    done.record(s).unwrap();
    p.wait_event(&done).unwrap();
    let mut back = PinnedBuffer::<f32>::zeroed(n, HostAllocFlags::empty()).unwrap();
    // SAFETY: ordered after the kernel by the event; `x` is freed on `s` only after `p` is
    // synchronised below (dropped after).
    unsafe { copy::d2h_async(back.pinned_mut(), x.as_slice(), p) }.unwrap();
    plain.synchronize().unwrap();
    let expect: Vec<f32> = data.iter().map(|v| v + 1.5).collect();
    assert!(back[..] == expect[..], "the partition's kernel, read back on a plain stream");
    let mut blocking = vec![0f32; n];
    copy::d2h_blocking(&mut blocking, x.as_slice(), s).unwrap();
    assert!(blocking == expect, "a blocking copy on the partition's stream");
    drop(x);

    let b_sms = sms_of(sb.as_stream());
    let a_sms = sms_of(s);
    assert!(a_sms.is_disjoint(&b_sms));

    // A graph captured on a plain stream, launched on the partition's stream: its kernels keep the
    // context they were captured in (the whole device), as CUDA's kernel nodes do. Recorded, and
    // checked only to have run.
    let mut out = smid_buffer(p);
    plain.synchronize().unwrap();
    // SAFETY: `out` outlives every launch of the graph (synchronised below before it drops);
    // nothing else uses `p` while it captures.
    let graph = unsafe { capture(p, CaptureMode::ThreadLocal, |cs| enqueue_smid(cs, &mut out)) }.unwrap();
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    exec.launch(s).unwrap();
    s.synchronize().unwrap();
    let launched = read_sms(&out, p);
    println!("a graph captured on a plain stream, launched on the partition's: {launched:?}");
    assert!(!launched.is_empty(), "the graph ran");

    // A graph captured on the partition's stream, launched there and on a plain stream.
    let mut out2 = smid_buffer(p);
    plain.synchronize().unwrap();
    // SAFETY: as above.
    let graph = unsafe { capture(s, CaptureMode::ThreadLocal, |cs| enqueue_smid(cs, &mut out2)) }.unwrap();
    let exec2 = graph.instantiate(InstantiateFlags::empty()).unwrap();
    exec2.launch(s).unwrap();
    s.synchronize().unwrap();
    let captured = read_sms(&out2, p);
    assert!(captured.is_disjoint(&b_sms), "captured on the partition: {captured:?}");
    assert!(captured.union(&a_sms).count() as u32 <= a.sm_count(), "{captured:?} beside {a_sms:?}");
    exec2.launch(p).unwrap();
    plain.synchronize().unwrap();
    println!(
        "a graph captured on the partition's stream: {captured:?}; launched on a plain stream: {:?}",
        read_sms(&out2, p)
    );
    drop((exec, exec2, out, out2));
    plain.synchronize().unwrap();
}

/// The last handle of a partition waits for its work before the green context goes: a kernel
/// that spins 200 ms, then writes a flag into mapped host memory, has written it when the drop
/// of the last stream returns (without the wait, the flag would still be 0 then).
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn the_last_handle_waits_for_the_partitions_work() {
    let device = Device::current().unwrap();
    let (a, b) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
    drop(b);
    let stream = a.stream().unwrap();
    drop(a); // the stream keeps the partition
    let flag = PinnedBuffer::<u32>::zeroed(1, HostAllocFlags::MAPPED).unwrap();
    let ptr = flag.as_ptr().cast_mut(); // the device address of mapped memory, with UVA
    let t0 = std::time::Instant::now();
    // SAFETY: `flag` is mapped host memory that outlives the kernel (the drop below waits for it).
    unsafe { spin_flag().launch(stream.as_stream(), &launch::LaunchConfig::new(1u32, 1u32), (ptr, 200_000_000)) }
        .unwrap();
    drop(stream);
    let waited = t0.elapsed();
    // SAFETY: a live u32 of ours, written by the device; read as volatile.
    let seen = unsafe { core::ptr::read_volatile(flag.as_ptr()) };
    println!("the last drop returned after {waited:?}, flag {seen}");
    assert_eq!(seen, 1, "the green context went before its work completed");
}

/// Graphs hold the partition they were captured on. One graph captured on a partition's stream, one
/// captured on a plain stream that a stream of the partition joined (an event recorded in the
/// capture, waited on there, and back): after the partition and all its streams are dropped, both
/// replay on a plain stream, three times each, one of them instantiated only after the drop; the
/// data match the CPU's, and the captured kernels' blocks ran on the partition's SMs only (none of
/// the other partition's). Before graphs held their partition, the drop destroyed the green context
/// under them (`cuGreenCtxDestroy`) and every replay ran on a destroyed context.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn graphs_keep_the_partition_they_were_captured_on() {
    let device = Device::current().unwrap();
    let (a, b) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
    let a_sms = a.sm_count();
    let b_sms = sms_of(b.stream().unwrap().as_stream());
    let plain = Stream::new().unwrap();
    let p = plain.as_stream();
    let n = 200_003usize;
    let data: Vec<f32> = random::random_u32(n, 57).iter().map(|&v| (v % 4096) as f32 * 0.5 - 1023.75).collect();
    let mut x = DeviceBuffer::<f32>::alloc_async(n, p).unwrap();
    let mut y = DeviceBuffer::<f32>::alloc_async(n, p).unwrap();
    copy::h2d_blocking(x.as_mut_slice(), &data, p).unwrap();
    copy::h2d_blocking(y.as_mut_slice(), &data, p).unwrap();
    let mut smids = smid_buffer(p);
    plain.synchronize().unwrap();
    let config = launch::LaunchConfig::for_elements(n, 256).unwrap();
    let (xp, yp) = (x.as_mut_ptr(), y.as_mut_ptr());

    // Captured on the partition's stream: x += 1.25, and the blocks' SMs.
    let on_partition = a.stream().unwrap();
    // SAFETY: `x` and `smids` outlive every launch of the graph (synchronised below before they
    // drop); nothing else uses the partition's stream while it captures.
    let graph = unsafe {
        capture(on_partition.as_stream(), CaptureMode::ThreadLocal, |cs| {
            add_const().launch(cs, &config, (xp, 1.25, n as i32))?;
            enqueue_smid(cs, &mut smids)
        })
    }
    .unwrap();
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();

    // Captured on a plain stream, the work on a partition stream that joined the capture: y -= 0.5.
    let origin = Stream::new().unwrap();
    let joined = a.stream().unwrap();
    let (fork, join) = (Event::new().unwrap(), Event::new().unwrap());
    // SAFETY: `y` outlives every launch (synchronised below); the joined stream is used only by
    // this capture's function until the capture ends.
    let joined_graph = unsafe {
        capture(origin.as_stream(), CaptureMode::ThreadLocal, |cs| {
            fork.record(cs)?;
            joined.as_stream().wait_event(&fork)?;
            add_const().launch(joined.as_stream(), &config, (yp, -0.5, n as i32))?;
            join.record(joined.as_stream())?;
            cs.wait_event(&join)
        })
    }
    .unwrap();

    // The partition and every stream of it go; the graphs stay.
    drop((on_partition, joined, a, origin));
    let joined_exec = joined_graph.instantiate(InstantiateFlags::empty()).unwrap();
    drop((graph, joined_graph));
    for _ in 0..3 {
        exec.launch(p).unwrap();
        joined_exec.launch(p).unwrap();
    }
    plain.synchronize().unwrap();
    let (mut got_x, mut got_y) = (vec![0f32; n], vec![0f32; n]);
    copy::d2h_blocking(&mut got_x, x.as_slice(), p).unwrap();
    copy::d2h_blocking(&mut got_y, y.as_slice(), p).unwrap();
    let want_x: Vec<f32> = data.iter().map(|v| v + 1.25 + 1.25 + 1.25).collect();
    let want_y: Vec<f32> = data.iter().map(|v| v - 0.5 - 0.5 - 0.5).collect();
    assert!(got_x == want_x, "the graph captured on the partition, replayed after its drop");
    assert!(got_y == want_y, "the graph a partition stream joined, replayed after its drop");
    let ran_on = read_sms(&smids, p);
    println!("after the partition's drop, its graph's blocks ran on {ran_on:?} (the partition had {a_sms} SMs)");
    assert!(ran_on.is_disjoint(&b_sms), "the replay left the partition's SMs: {ran_on:?} beside {b_sms:?}");
    assert!(ran_on.len() as u32 <= a_sms, "{ran_on:?}");
    drop((exec, joined_exec));
    plain.synchronize().unwrap();
    drop((x, y, smids));
    plain.synchronize().unwrap();
}

/// A partition stream that joined a capture and is dropped inside the capture's function, with
/// the partition's last handle, still leaves the graph holding the partition: in relaxed mode (where
/// the event synchronise of the green context's drop is allowed inside the capture) the capture
/// forks onto the partition's stream, adds there, joins back, drops the stream and the partition,
/// and ends; the graph replays three times after, the data match the CPU's, and no drop destroyed
/// or waited on the green context (the drop of its last handle records an event on it and
/// synchronises). Before, the stream left the list at its drop, the capture's end found no
/// partition stream, and the partition's drop destroyed the green context under the captured
/// kernel (`cuGreenCtxDestroy`, or an error recorded on the way).
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_partition_stream_dropped_inside_the_capture_is_still_held() {
    let device = Device::current().unwrap();
    let (a, _rest) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
    let joined = a.stream().unwrap();
    let plain = Stream::new().unwrap();
    let p = plain.as_stream();
    let n = 100_003usize;
    let data: Vec<f32> = random::random_u32(n, 91).iter().map(|&v| (v % 4096) as f32 * 0.25 - 511.5).collect();
    let mut y = DeviceBuffer::<f32>::alloc_async(n, p).unwrap();
    copy::h2d_blocking(y.as_mut_slice(), &data, p).unwrap();
    plain.synchronize().unwrap();
    let config = launch::LaunchConfig::for_elements(n, 256).unwrap();
    let yp = y.as_mut_ptr();
    let origin = Stream::new().unwrap();
    let (fork, join) = (Event::new().unwrap(), Event::new().unwrap());
    let (fork, join) = (&fork, &join);
    let green_ctx_calls = |e: &Error| e.call().starts_with("cuGreenCtx") || e.call() == "cudaEventSynchronize";
    let before: Vec<Error> = error::take_drop_errors();
    assert!(!before.iter().any(green_ctx_calls), "{before:?}");
    // SAFETY: `y` outlives every launch (synchronised below before it drops); the joined stream is
    // used by this function alone, and dropped in it after joining back.
    let graph = unsafe {
        capture(origin.as_stream(), CaptureMode::Relaxed, move |cs| {
            fork.record(cs)?;
            joined.as_stream().wait_event(fork)?;
            add_const().launch(joined.as_stream(), &config, (yp, 2.5, n as i32))?;
            join.record(joined.as_stream())?;
            cs.wait_event(join)?;
            drop(joined); // leaves the list before the capture's end looks for partition streams
            drop(a); // the last handle of the green context outside the graph
            Ok(())
        })
    };
    let graph = match graph {
        Ok(graph) => graph,
        Err(e) => panic!("the capture failed: {e} (did CUDA refuse the joined stream's destroy inside it?)"),
    };
    let dropped = error::take_drop_errors();
    assert!(!dropped.iter().any(green_ctx_calls), "the partition's drop reached its green context: {dropped:?}");
    let exec = graph.instantiate(InstantiateFlags::empty()).unwrap();
    drop(graph);
    for _ in 0..3 {
        exec.launch(p).unwrap();
    }
    plain.synchronize().unwrap();
    let mut got = vec![0f32; n];
    copy::d2h_blocking(&mut got, y.as_slice(), p).unwrap();
    let want: Vec<f32> = data.iter().map(|v| v + 2.5 + 2.5 + 2.5).collect();
    assert!(got == want, "the replays of a graph whose partition stream was dropped inside the capture");
    drop(exec);
    plain.synchronize().unwrap();
    drop(y);
    plain.synchronize().unwrap();
}

/// Streams of one partition made and used from many threads at once (CUDA lets one thread at a
/// time use a green context's handle; ordo serialises that use), and a priority outside the
/// device's range refused before CUDA is called.
#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn streams_of_one_partition_from_many_threads() {
    let device = Device::current().unwrap();
    let (a, _rest) = SmSplit::new(device, 16).unwrap().one_and_rest().unwrap();
    let (least, greatest) = device.stream_priority_range().unwrap();
    assert!(a.stream_with_priority(greatest - 1).is_err() && a.stream_with_priority(least + 1).is_err());
    let high = a.stream_with_priority(greatest).unwrap();
    assert_eq!(high.as_stream().priority().unwrap(), greatest);
    std::thread::scope(|scope| {
        for t in 0..8u32 {
            let a = a.clone();
            scope.spawn(move || {
                device.set_current().unwrap();
                for i in 0..20u32 {
                    let s: PartitionStream = a.stream().unwrap();
                    let n = 1000 + (t * 20 + i) as usize;
                    let mut x = DeviceBuffer::<f32>::zeroed_async(n, s.as_stream()).unwrap();
                    let config = launch::LaunchConfig::for_elements(n, 128).unwrap();
                    // SAFETY: `x` holds n floats, freed on this stream after the kernel.
                    unsafe { add_const().launch(s.as_stream(), &config, (x.as_mut_ptr(), t as f32, n as i32)) }
                        .unwrap();
                    let mut host = vec![0f32; n];
                    copy::d2h_blocking(&mut host, x.as_slice(), s.as_stream()).unwrap();
                    assert!(host.iter().all(|&v| v == t as f32), "thread {t} round {i}");
                }
            });
        }
    });
    let partition: SmPartition = high.partition();
    assert!(partition.same_as(&a));
}
