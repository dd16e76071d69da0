//! Streams: how much several non-blocking streams buy, ordo beside the same in plain CUDA C++
//! (`cuda/streams.cu`, whose kernels both sides launch), interleaved in the same rounds.
//!
//! (a) The source article's experiment: a matrix multiplication (a small tiled kernel, 256 threads
//!     a block) split into 16 row chunks over 1, 2, 4, 8 and 16 streams; throughput against one
//!     stream, and the host's submit time a launch; at a size where one chunk leaves most of the GPU
//!     idle (512^3: 64 blocks a chunk) and one where a chunk fills it (4096^3: 4096 blocks). The
//!     streams wait behind a gate kernel, so the GPU time excludes the host's enqueuing.
//! (b) Two chunks on two streams at 256 and at 128 threads a block: each block stamps
//!     `%globaltimer` at its start and end; the overlap of the two kernels' spans, as a share of the
//!     shorter one.
//! (c) A one-block kernel's latency (event to event on its own stream) while a queue of large
//!     kernels holds every SM on another stream: on a stream of the device's highest priority,
//!     against one of normal priority.
//!
//! The chart of (a) (throughput against stream count) goes to `$ORDO_BENCH_STREAMS_SVG`, or
//! `ordo-bench-streams.svg` in the temporary folder.

use crate::{interleave, median, Report};
use core::ffi::c_void;
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::memory::copy;
use ordo_cuda_core::*;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

extern "C" {
    fn bl_streams_matmul256(a: *const f32, b: *const f32, c: *mut f32, n: i32, row0: i32, stamps: *mut u64);
    fn bl_streams_matmul128(a: *const f32, b: *const f32, c: *mut f32, n: i32, row0: i32, stamps: *mut u64);
    fn bl_streams_spin(ns: u64);
    fn bl_streams_small(out: *mut i32);
    fn bl_streams_open() -> *mut c_void;
    fn bl_streams_close(h: *mut c_void);
    fn bl_streams_matmul_ms(
        h: *mut c_void,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        n: i32,
        chunks: i32,
        streams: i32,
        gate_ns: u64,
        submit_us: *mut f64,
    ) -> f64;
    fn bl_streams_pair(
        h: *mut c_void,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        n: i32,
        rows: i32,
        threads: i32,
        gate_ns: u64,
        stamps0: *mut u64,
        stamps1: *mut u64,
    ) -> i32;
    fn bl_streams_priority_us(
        h: *mut c_void,
        high: i32,
        hog_kernels: i32,
        hog_blocks: u32,
        hog_ns: u64,
        delay_us: f64,
        out: *mut i32,
    ) -> f64;
}

/// Row chunks of the product.
const CHUNKS: usize = 16;
/// Stream counts of (a).
const STREAM_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];
/// The sizes: one chunk of 512^3 is 64 blocks (the GPU mostly idle), of 4096^3 4096 blocks.
const SIZES: [(usize, &str); 2] = [(512, "a chunk leaves the GPU idle"), (4096, "a chunk fills the GPU")];
/// The gate every stream waits behind: longer than the host takes to enqueue a round.
const GATE_NS: u64 = 1_000_000;
/// (c): large kernels of 10 waves of 20 us, eight queued; the small kernel 300 us after them.
const HOG_NS: u64 = 20_000;
const HOG_WAVES: u32 = 10;
const HOG_KERNELS: usize = 8;
const DELAY_US: f64 = 300.0;

type Matmul = unsafe extern "C" fn(*const f32, *const f32, *mut f32, i32, i32, *mut u64);

/// ordo's side: its own streams and events.
struct Side {
    root: Stream,
    streams: Vec<Stream>,
    joins: Vec<Event>,
    start: TimingEvent,
    end: TimingEvent,
    high: Stream,
    normal: Stream,
    hog: Stream,
}

impl Side {
    fn new() -> Result<Side> {
        let (least, greatest) = Device::current()?.stream_priority_range()?;
        Ok(Side {
            root: Stream::new()?,
            streams: (0..16).map(|_| Stream::new()).collect::<Result<_>>()?,
            joins: (0..16).map(|_| Event::new()).collect::<Result<_>>()?,
            start: TimingEvent::new()?,
            end: TimingEvent::new()?,
            high: Stream::with_priority(StreamFlags::NON_BLOCKING, greatest)?,
            normal: Stream::with_priority(StreamFlags::NON_BLOCKING, least)?,
            hog: Stream::with_priority(StreamFlags::NON_BLOCKING, least)?,
        })
    }

    /// Queues the gate on the root stream and makes the first `count` streams wait behind it.
    fn gate(&self, count: usize) -> Result<()> {
        let spin = Kernel::new(bl_streams_spin as unsafe extern "C" fn(u64));
        // SAFETY: the spin kernel takes no pointer.
        unsafe { spin.launch(self.root.as_stream(), &LaunchConfig::new(1u32, 32u32), (GATE_NS,)) }?;
        self.start.record(self.root.as_stream())?;
        self.streams[..count].iter().try_for_each(|s| s.wait_event(&self.start))
    }

    /// Joins the first `count` streams into the root, records the end and waits for it.
    fn join(&self, count: usize) -> Result<()> {
        for (s, e) in self.streams[..count].iter().zip(&self.joins) {
            e.record(s.as_stream())?;
            self.root.wait_event(e)?;
        }
        self.end.record(self.root.as_stream())?;
        self.end.synchronize()
    }
}

/// The device's n x n operands and product.
struct Operands<'s> {
    n: usize,
    a: DeviceBuffer<'s, f32>,
    b: DeviceBuffer<'s, f32>,
    c: DeviceBuffer<'s, f32>,
    host_a: Vec<f32>,
    host_b: Vec<f32>,
}

impl<'s> Operands<'s> {
    fn new(n: usize, s: StreamRef<'s>) -> Result<Operands<'s>> {
        let host_a: Vec<f32> = (0..n * n).map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0).collect();
        let host_b: Vec<f32> = (0..n * n).map(|i| ((i * 53 % 97) as f32 - 48.0) / 48.0).collect();
        let mut a = DeviceBuffer::alloc_async(n * n, s)?;
        let mut b = DeviceBuffer::alloc_async(n * n, s)?;
        copy::h2d_blocking(a.as_mut_slice(), &host_a, s)?;
        copy::h2d_blocking(b.as_mut_slice(), &host_b, s)?;
        let c = DeviceBuffer::zeroed_async(n * n, s)?;
        s.synchronize()?;
        Ok(Operands { n, a, b, c, host_a, host_b })
    }

    fn ptrs(&mut self) -> (*const f32, *const f32, *mut f32) {
        (self.a.as_ptr(), self.b.as_ptr(), self.c.as_mut_ptr())
    }

    /// Checks 16 elements of the product against the CPU's, then zeroes it.
    /// Checks 16 elements of C's first `rows` rows (the rows the work computed) against the CPU,
    /// then zeroes C.
    fn check_and_clear(&mut self, who: &str, rows: usize, s: StreamRef<'_>) -> Result<()> {
        let n = self.n;
        let mut c = vec![0f32; n * n];
        copy::d2h_blocking(&mut c, self.c.as_slice(), s)?;
        for k in 0..16 {
            let (i, j) = ((k * 131 + 7) % rows.clamp(1, n), (k * 71 + 3) % n);
            let want: f64 = (0..n).map(|t| f64::from(self.host_a[i * n + t]) * f64::from(self.host_b[t * n + j])).sum();
            let got = f64::from(c[i * n + j]);
            if (got - want).abs() > 1e-3 * (1.0 + want.abs()) * (n as f64).sqrt() {
                return Err(Error::invalid(
                    "ordo-bench streams",
                    format!("{who}: C[{i}][{j}] = {got}, the CPU says {want}"),
                ));
            }
        }
        // SAFETY: our buffer; the memset is ordered on its stream.
        let code = unsafe { sys::cudaMemsetAsync(self.c.as_mut_ptr().cast(), 0, self.c.byte_len(), s.as_raw()) };
        error::check(code, "cudaMemsetAsync")?;
        s.synchronize()
    }
}

pub(crate) fn streams_group(r: &mut Report, rounds: usize) -> Result<()> {
    let side = Side::new()?;
    // SAFETY: no arguments; closed below.
    let cpp = unsafe { bl_streams_open() };
    let result = run(r, rounds, &side, cpp);
    // SAFETY: closed once; null is ignored.
    unsafe { bl_streams_close(cpp) };
    result
}

fn run(r: &mut Report, rounds: usize, side: &Side, cpp: *mut c_void) -> Result<()> {
    let s = side.root.as_stream();
    let mut curves = Vec::new();
    for (n, what) in SIZES {
        r.progress(&format!("streams: matmul {n}^3 over 1..16 streams"));
        let mut ops = Operands::new(n, s)?;
        curves.push(scaling(r, if n > 1024 { rounds.min(7) } else { rounds }, side, cpp, &mut ops, what)?);
        r.progress(&format!("streams: cuBLAS SGEMM {n}^3 over 1..16 streams"));
        cublas_scaling(r, if n > 1024 { rounds.min(7) } else { rounds }, side, &mut ops, what)?;
        r.progress(&format!("streams: two streams' kernels, {n}^3"));
        overlap(r, rounds.min(9), side, cpp, &mut ops)?;
    }
    r.progress("streams: a small kernel beside large ones, by priority");
    priority(r, rounds, side, cpp)?;
    let path = std::env::var_os("ORDO_BENCH_STREAMS_SVG")
        .map_or_else(|| std::env::temp_dir().join("ordo-bench-streams.svg"), Into::into);
    match std::fs::write(&path, chart(&curves)) {
        Ok(()) => r.add("streams", "chart: throughput against streams", "", f64::NAN, None, path.display().to_string()),
        Err(e) => {
            r.add("streams", "chart: throughput against streams", "", f64::NAN, None, format!("not written: {e}"))
        }
    }
    Ok(())
}

/// One size's throughput curve: (n, ordo GFLOP/s, C++ GFLOP/s) for each stream count.
type Curve = (usize, Vec<(usize, f64, Option<f64>)>);

fn scaling(
    r: &mut Report,
    rounds: usize,
    side: &Side,
    cpp: *mut c_void,
    ops: &mut Operands<'_>,
    what: &str,
) -> Result<Curve> {
    let n = ops.n;
    let rows = n / CHUNKS;
    let (a, b, c) = ops.ptrs();
    let matmul = Kernel::new(bl_streams_matmul256 as Matmul);
    let config = LaunchConfig::new(((n / 16) as u32, (rows / 16) as u32), (16u32, 16u32));
    // Each variant's host submit times, a launch, by round.
    let submits = RefCell::new(vec![Vec::new(); 2 * STREAM_COUNTS.len()]);
    let ordo_round = |count: usize, slot: usize| -> Result<f64> {
        side.gate(count)?;
        let t0 = Instant::now();
        for chunk in 0..CHUNKS {
            let st = side.streams[chunk % count].as_stream();
            // SAFETY: rows [chunk * rows, +rows) of n x n operands that outlive the work (synchronised below).
            unsafe { matmul.launch(st, &config, (a, b, c, n as i32, (chunk * rows) as i32, core::ptr::null_mut())) }?;
        }
        submits.borrow_mut()[slot].push(t0.elapsed().as_secs_f64() * 1e6 / CHUNKS as f64);
        side.join(count)?;
        Ok(f64::from(side.end.elapsed_ms_since(&side.start)?))
    };
    let cpp_round = |count: usize, slot: usize| -> Result<f64> {
        if cpp.is_null() {
            return Ok(f64::NAN);
        }
        let mut submit = 0.0;
        // SAFETY: an open handle; the operands outlive the call, which synchronises.
        let ms =
            unsafe { bl_streams_matmul_ms(cpp, a, b, c, n as i32, CHUNKS as i32, count as i32, GATE_NS, &mut submit) };
        if ms < 0.0 {
            return Err(Error::invalid("ordo-bench streams", "the C++ baseline's matmul failed"));
        }
        submits.borrow_mut()[slot].push(submit);
        Ok(ms)
    };
    let (ordo_round, cpp_round) = (&ordo_round, &cpp_round);
    let mut variants: Vec<Box<dyn FnMut() -> Result<f64> + '_>> = Vec::new();
    for (i, &count) in STREAM_COUNTS.iter().enumerate() {
        variants.push(Box::new(move || ordo_round(count, 2 * i)));
        variants.push(Box::new(move || cpp_round(count, 2 * i + 1)));
    }
    let mut refs: Vec<&mut dyn FnMut() -> Result<f64>> =
        variants.iter_mut().map(|v| &mut **v as &mut dyn FnMut() -> Result<f64>).collect();
    let ms = interleave(rounds, &mut refs)?;
    drop(refs);
    drop(variants);
    ops.check_and_clear("ordo and C++", n, side.root.as_stream())?;
    let gflops = |ms: f64| 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e9;
    let submits = submits.into_inner();
    let (one_ordo, one_cpp) = (gflops(ms[0]), gflops(ms[1]));
    let mut curve = Vec::new();
    for (i, &count) in STREAM_COUNTS.iter().enumerate() {
        let (o, c) = (gflops(ms[2 * i]), gflops(ms[2 * i + 1]));
        let c = (!c.is_nan()).then_some(c);
        let note = match c {
            Some(c) => format!("{:.2}x one stream (C++ {:.2}x); {what}", o / one_ordo, c / one_cpp),
            None => format!("{:.2}x one stream; {what}", o / one_ordo),
        };
        r.add("streams", format!("matmul {n}^3 in {CHUNKS} chunks over {count} streams"), "GFLOP/s", o, c, note);
        curve.push((count, o, c));
    }
    for (i, &count) in STREAM_COUNTS.iter().enumerate() {
        let o = median(&submits[2 * i]);
        let c = (!submits[2 * i + 1].is_empty()).then(|| median(&submits[2 * i + 1]));
        r.add(
            "streams",
            format!("host submit a chunk's launch, {n}^3, {count} streams"),
            "us",
            o,
            c,
            "the chunks' launches alone, a launch",
        );
    }
    Ok((n, curve))
}

/// (a) with cuBLAS (ordo's run-time loader; one handle a stream, as an engine keeps them): the
/// same row chunks, each one `cublasGemmEx` (fp32, `CUBLAS_COMPUTE_32F_PEDANTIC`: no tensor-core
/// shortcut, so that the CPU check holds), over 1..16 streams; throughput against one stream. No
/// C++ side: both would make the same cuBLAS call, and cuBLAS is not there at build time. Rows
/// say why they are missing where cuBLAS does not load.
fn cublas_scaling(r: &mut Report, rounds: usize, side: &Side, ops: &mut Operands<'_>, what: &str) -> Result<()> {
    use ordo_cuda_libs::cublas::{ComputeType, Cublas, DataType, GemmAlgo, GemmEx, Operand, Operation};
    let n = ops.n;
    let rows = n / CHUNKS;
    // PyTorch's cuBLAS where the loader does not know one (the GPU host's case).
    ordo_decode::cublas_path::choose()?;
    let mut handles = Vec::new();
    for _ in 0..STREAM_COUNTS[STREAM_COUNTS.len() - 1] {
        match Cublas::new() {
            Ok(h) => handles.push(RefCell::new(h)),
            Err(e) => {
                r.add(
                    "streams",
                    format!("cuBLAS SGEMM {n}^3 over streams"),
                    "",
                    f64::NAN,
                    None,
                    format!("cuBLAS did not load: {e}"),
                );
                return Ok(());
            }
        }
    }
    let (a, b, c) = ops.ptrs();
    // Row-major C[rows chunk] = A[rows chunk] B is, column-major, C_chunk^T = B^T A_chunk^T: B's
    // memory as the first operand, the chunk of A's rows as the second, both n apart.
    let gemm = |chunk: usize| GemmEx {
        transa: Operation::None,
        transb: Operation::None,
        m: n as i32,
        n: rows as i32,
        k: n as i32,
        alpha: 1.0,
        a: Operand { ptr: b.cast(), ty: DataType::F32, ld: n as i32 },
        b: Operand { ptr: a.wrapping_add(chunk * rows * n).cast(), ty: DataType::F32, ld: n as i32 },
        beta: 0.0,
        c: Operand { ptr: c.wrapping_add(chunk * rows * n).cast(), ty: DataType::F32, ld: n as i32 },
        compute: ComputeType::F32Pedantic,
        algo: GemmAlgo::Default,
    };
    let submits = RefCell::new(vec![Vec::new(); STREAM_COUNTS.len()]);
    let round = |count: usize, slot: usize| -> Result<f64> {
        side.gate(count)?;
        let t0 = Instant::now();
        for chunk in 0..CHUNKS {
            let st = side.streams[chunk % count].as_stream();
            // SAFETY: rows [chunk * rows, +rows) of n x n operands that outlive the work
            // (synchronised below); C's chunks do not overlap A or B.
            unsafe { handles[chunk % count].borrow_mut().gemm_ex(st, &gemm(chunk)) }?;
        }
        submits.borrow_mut()[slot].push(t0.elapsed().as_secs_f64() * 1e6 / CHUNKS as f64);
        side.join(count)?;
        Ok(f64::from(side.end.elapsed_ms_since(&side.start)?))
    };
    let round = &round;
    let mut variants: Vec<Box<dyn FnMut() -> Result<f64> + '_>> = Vec::new();
    for (i, &count) in STREAM_COUNTS.iter().enumerate() {
        variants.push(Box::new(move || round(count, i)));
    }
    let mut refs: Vec<&mut dyn FnMut() -> Result<f64>> =
        variants.iter_mut().map(|v| &mut **v as &mut dyn FnMut() -> Result<f64>).collect();
    let ms = interleave(rounds, &mut refs)?;
    drop(refs);
    drop(variants);
    ops.check_and_clear("cuBLAS", n, side.root.as_stream())?;
    let gflops = |ms: f64| 2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e9;
    let one = gflops(ms[0]);
    let submits = submits.into_inner();
    for (i, &count) in STREAM_COUNTS.iter().enumerate() {
        let g = gflops(ms[i]);
        r.add(
            "streams",
            format!("cuBLAS SGEMM {n}^3 in {CHUNKS} chunks over {count} streams"),
            "GFLOP/s",
            g,
            None,
            format!("{:.2}x one stream; host submit {:.1} us a GEMM; {what}", g / one, median(&submits[i])),
        );
    }
    Ok(())
}

/// The span (first start, last end) of one kernel's blocks from their stamps.
fn span(stamps: &[u64]) -> (u64, u64) {
    let start = stamps.iter().step_by(2).copied().min().unwrap_or(0);
    let end = stamps.iter().skip(1).step_by(2).copied().max().unwrap_or(0);
    (start, end)
}

/// The overlap of two spans as a share of the shorter, in percent.
fn overlap_percent(x: (u64, u64), y: (u64, u64)) -> f64 {
    let shared = x.1.min(y.1).saturating_sub(x.0.max(y.0)) as f64;
    let shorter = (x.1 - x.0).min(y.1 - y.0).max(1) as f64;
    100.0 * shared / shorter
}

fn overlap(r: &mut Report, rounds: usize, side: &Side, cpp: *mut c_void, ops: &mut Operands<'_>) -> Result<()> {
    let n = ops.n;
    let rows = n / CHUNKS;
    let (a, b, c) = ops.ptrs();
    let s = side.root.as_stream();
    for threads in [256usize, 128] {
        let per_block = if threads == 128 { 8 } else { 16 };
        let blocks = (n / 16) * (rows / per_block);
        let mut stamps =
            [DeviceBuffer::<u64>::zeroed_async(2 * blocks, s)?, DeviceBuffer::<u64>::zeroed_async(2 * blocks, s)?];
        s.synchronize()?;
        let ptrs = [stamps[0].as_mut_ptr(), stamps[1].as_mut_ptr()];
        let kernel =
            Kernel::new(if threads == 128 { bl_streams_matmul128 as Matmul } else { bl_streams_matmul256 as Matmul });
        let config = LaunchConfig::new(((n / 16) as u32, (rows / per_block) as u32), (16u32, per_block as u32));
        // The overlap in percent, and the first kernel's span in microseconds.
        let read = || -> Result<(f64, f64)> {
            let mut host = [vec![0u64; 2 * blocks], vec![0u64; 2 * blocks]];
            for (h, d) in host.iter_mut().zip(&stamps) {
                copy::d2h_blocking(h, d.as_slice(), s)?;
            }
            let (first, second) = (span(&host[0]), span(&host[1]));
            Ok((overlap_percent(first, second), (first.1 - first.0) as f64 / 1e3))
        };
        let durations = RefCell::new(Vec::new());
        let mut ordo_round = || -> Result<f64> {
            side.gate(2)?;
            for (i, &p) in ptrs.iter().enumerate() {
                let st = side.streams[i].as_stream();
                // SAFETY: chunks 0 and 1 of operands that outlive the work, stamps of `blocks` blocks.
                unsafe { kernel.launch(st, &config, (a, b, c, n as i32, (i * rows) as i32, p)) }?;
            }
            side.join(2)?;
            let (percent, us) = read()?;
            durations.borrow_mut().push(us);
            Ok(percent)
        };
        let mut cpp_round = || -> Result<f64> {
            if cpp.is_null() {
                return Ok(f64::NAN);
            }
            // SAFETY: an open handle; operands and stamps outlive the call, which synchronises.
            let code = unsafe {
                bl_streams_pair(cpp, a, b, c, n as i32, rows as i32, threads as i32, GATE_NS, ptrs[0], ptrs[1])
            };
            if code != 0 {
                return Err(Error::invalid("ordo-bench streams", "the C++ baseline's pair of kernels failed"));
            }
            Ok(read()?.0)
        };
        let m = interleave(rounds, &mut [&mut ordo_round, &mut cpp_round])?;
        let base = (!m[1].is_nan()).then_some(m[1]);
        r.add(
            "streams",
            format!("overlap of two streams' {n}^3 chunks, {threads} threads a block ({blocks} blocks each)"),
            "%",
            m[0],
            base,
            format!(
                "of the shorter kernel's span (%globaltimer); a kernel alone takes {:.1} us",
                median(&durations.borrow())
            ),
        );
    }
    // The overlap's kernels compute chunks 0 and 1 only.
    ops.check_and_clear("the overlap's kernels", 2 * (n / CHUNKS), s)
}

/// Spins the host for `us` microseconds.
fn host_delay(us: f64) {
    let until = Instant::now() + Duration::from_secs_f64(us * 1e-6);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn priority(r: &mut Report, rounds: usize, side: &Side, cpp: *mut c_void) -> Result<()> {
    let sms = Device::current()?.sm_count()?;
    let hog_blocks = sms * 8 * HOG_WAVES;
    let spin = Kernel::new(bl_streams_spin as unsafe extern "C" fn(u64));
    let small = Kernel::new(bl_streams_small as unsafe extern "C" fn(*mut i32));
    let mut out = DeviceBuffer::<i32>::zeroed_async(1, side.root.as_stream())?;
    side.root.synchronize()?;
    let out_ptr = out.as_mut_ptr();
    let ordo_round = |high: bool| -> Result<f64> {
        let small_stream = if high { side.high.as_stream() } else { side.normal.as_stream() };
        for _ in 0..HOG_KERNELS {
            // SAFETY: the spin kernel takes no pointer.
            unsafe { spin.launch(side.hog.as_stream(), &LaunchConfig::new(hog_blocks, 256u32), (HOG_NS,)) }?;
        }
        host_delay(DELAY_US);
        side.start.record(small_stream)?;
        // SAFETY: `out` holds one int and outlives the kernel (synchronised below).
        unsafe { small.launch(small_stream, &LaunchConfig::new(1u32, 32u32), (out_ptr,)) }?;
        side.end.record(small_stream)?;
        side.end.synchronize()?;
        let us = f64::from(side.end.elapsed_ms_since(&side.start)?) * 1e3;
        side.hog.synchronize()?;
        Ok(us)
    };
    let cpp_round = |high: bool| -> Result<f64> {
        if cpp.is_null() {
            return Ok(f64::NAN);
        }
        // SAFETY: an open handle; `out` outlives the call, which synchronises.
        let us = unsafe {
            bl_streams_priority_us(cpp, i32::from(high), HOG_KERNELS as i32, hog_blocks, HOG_NS, DELAY_US, out_ptr)
        };
        if us < 0.0 {
            return Err(Error::invalid("ordo-bench streams", "the C++ baseline's priority round failed"));
        }
        Ok(us)
    };
    let m = interleave(
        rounds,
        &mut [&mut || ordo_round(false), &mut || cpp_round(false), &mut || ordo_round(true), &mut || cpp_round(true)],
    )?;
    let base = |v: f64| (!v.is_nan()).then_some(v);
    let load = format!("{HOG_KERNELS} kernels of {HOG_WAVES} waves of {} us on every SM queued beside", HOG_NS / 1000);
    r.add(
        "streams",
        "small kernel's latency beside large kernels, normal priority",
        "us",
        m[0],
        base(m[1]),
        load.clone(),
    );
    r.add(
        "streams",
        "small kernel's latency beside large kernels, high priority",
        "us",
        m[2],
        base(m[3]),
        format!("{:.1}x faster than normal priority; {load}", m[0] / m[2]),
    );
    drop(out);
    side.root.synchronize()
}

/// The SVG of (a): one panel a size, GFLOP/s against stream count (log2), ordo and C++.
fn chart(curves: &[Curve]) -> String {
    let (w, h, left, top) = (420.0f64, 260.0f64, 60.0f64, 30.0f64);
    let mut body = String::new();
    for (p, (n, points)) in curves.iter().enumerate() {
        let x0 = 10.0 + p as f64 * (w + 30.0);
        let max = points.iter().flat_map(|&(_, o, c)| [o, c.unwrap_or(0.0)]).fold(1.0f64, f64::max) * 1.1;
        let x = |count: usize| x0 + left + (count as f64).log2() / 4.0 * (w - left - 20.0);
        let y = |v: f64| top + (1.0 - v / max) * (h - top - 40.0);
        let _ = writeln!(
            body,
            "<text x='{}' y='18' font-weight='bold'>matmul {n}^3, {CHUNKS} chunks: GFLOP/s</text>",
            x0 + left
        );
        let _ = writeln!(body, "<line x1='{}' y1='{}' x2='{}' y2='{}' stroke='black'/>", x(1), y(0.0), x(16), y(0.0));
        let _ = writeln!(body, "<line x1='{}' y1='{}' x2='{}' y2='{}' stroke='black'/>", x(1), y(0.0), x(1), y(max));
        for &(count, _, _) in points {
            let _ = writeln!(body, "<text x='{}' y='{}' text-anchor='middle'>{count}</text>", x(count), y(0.0) + 16.0);
        }
        let _ = writeln!(body, "<text x='{}' y='{}' text-anchor='middle'>streams</text>", x(4), y(0.0) + 32.0);
        for frac in [0.0, 0.5, 1.0] {
            let v = max / 1.1 * frac;
            let _ = writeln!(body, "<text x='{}' y='{}' text-anchor='end'>{v:.0}</text>", x(1) - 6.0, y(v) + 4.0);
        }
        let lines: [(&str, Vec<(usize, f64)>); 2] = [
            ("#4e79a7", points.iter().map(|&(k, o, _)| (k, o)).collect()),
            ("#e15759", points.iter().filter_map(|&(k, _, c)| Some((k, c?))).collect()),
        ];
        for (color, line) in &lines {
            let path: Vec<String> = line.iter().map(|&(k, v)| format!("{:.1},{:.1}", x(k), y(v))).collect();
            let _ =
                writeln!(body, "<polyline points='{}' fill='none' stroke='{color}' stroke-width='2'/>", path.join(" "));
            for &(k, v) in line {
                let _ = writeln!(body, "<circle cx='{:.1}' cy='{:.1}' r='3' fill='{color}'/>", x(k), y(v));
            }
        }
    }
    let _ = writeln!(
        body,
        "<text x='70' y='{}'>ordo (blue), plain CUDA C++ (red); medians of interleaved rounds</text>",
        h + 10.0
    );
    format!(
        "<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' font-family='sans-serif' font-size='11'>\n{body}</svg>\n",
        20.0 + curves.len() as f64 * (w + 30.0),
        h + 20.0
    )
}
