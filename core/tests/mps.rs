//! ordo under MPS (the Multi-Process Service): a test starts an MPS control daemon of its own
//! (`support/mps.rs`, quit by its guard on every path out), runs this binary twice as child
//! processes that are the daemon's clients (`support/child.rs`), and checks what they report.
//!
//! Each child checks that CUDA sees MPS (`cudaDevAttrMpsEnabled`), runs a small ordo workload
//! (stream-ordered buffers, copies, three launches of a kernel loaded from PTX, checked against the
//! CPU), and probes the features that MPS might change: a captured graph replayed twice, a chain of
//! PDL launches (compute capability 9.0 and later), a stream-ordered host pool's buffer through the
//! device and back, an SM partition (green context) with a kernel
//! on its stream, and IPC between the two clients (memory and an event, the parent relaying the
//! handles). The workload and graphs must work; the other probes' results are printed as a table
//! (the record of what works under MPS on the machine), and fail the test only where a probe
//! returned wrong data rather than an error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/child.rs"]
mod child;
#[path = "support/mps.rs"]
mod mps;

/// The test a child process runs (see `support/child.rs`): nothing in an ordinary run.
#[test]
fn child_process_entry() {
    let Some((role, socket)) = child::role() else { return };
    #[cfg(cuda_library_api)]
    client::run(&role, socket);
    #[cfg(not(cuda_library_api))]
    panic!("role {role:?}: this build has no runtime kernel loading (CUDA 12.8 headers or later) {socket:?}");
}

#[cfg(cuda_library_api)]
mod client {
    use super::child;
    use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
    use ordo_cuda_core::ipc::{ImportedEvent, IpcBuffer, IpcEvent, IpcEventHandle, IpcMapping, IpcMemHandle};
    use ordo_cuda_core::launch::{Kernel, LaunchConfig};
    use ordo_cuda_core::memory::copy;
    use ordo_cuda_core::partition::SmSplit;
    use ordo_cuda_core::*;
    use std::ffi::CStr;
    use std::os::unix::net::UnixStream;

    /// `x[i] = x[i] * 2654435761 + k` (`extern "C" __global__ void ordo_mps_step(unsigned* x,
    /// unsigned n, unsigned k)`), compiled to PTX for sm_75.
    const STEP_PTX: &str = "\
.version 7.0
.target sm_75
.address_size 64
.visible .entry ordo_mps_step(
 .param .u64 ordo_mps_step_param_0,
 .param .u32 ordo_mps_step_param_1,
 .param .u32 ordo_mps_step_param_2
)
{
 .reg .pred %p<2>;
 .reg .b32 %r<9>;
 .reg .b64 %rd<5>;
 ld.param.u64 %rd1, [ordo_mps_step_param_0];
 ld.param.u32 %r3, [ordo_mps_step_param_1];
 ld.param.u32 %r2, [ordo_mps_step_param_2];
 mov.u32 %r4, %ctaid.x;
 mov.u32 %r5, %ntid.x;
 mov.u32 %r6, %tid.x;
 mad.lo.s32 %r1, %r4, %r5, %r6;
 setp.ge.u32 %p1, %r1, %r3;
 @%p1 bra $L__BB0_2;
 cvta.to.global.u64 %rd2, %rd1;
 mul.wide.u32 %rd3, %r1, 4;
 add.s64 %rd4, %rd2, %rd3;
 ld.global.u32 %r7, [%rd4];
 mad.lo.s32 %r8, %r7, -1640531535, %r2;
 st.global.u32 [%rd4], %r8;
$L__BB0_2:
 ret;
}
\0";

    /// The same step with PDL's wait before its reads and its trigger after its write
    /// (`griddepcontrol`), for sm_90.
    const STEP_PDL_PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64
.visible .entry ordo_mps_step_pdl(
 .param .u64 ordo_mps_step_pdl_param_0,
 .param .u32 ordo_mps_step_pdl_param_1,
 .param .u32 ordo_mps_step_pdl_param_2
)
{
 .reg .pred %p<2>;
 .reg .b32 %r<9>;
 .reg .b64 %rd<5>;
 ld.param.u64 %rd1, [ordo_mps_step_pdl_param_0];
 ld.param.u32 %r3, [ordo_mps_step_pdl_param_1];
 ld.param.u32 %r2, [ordo_mps_step_pdl_param_2];
 griddepcontrol.wait;
 mov.u32 %r4, %ntid.x;
 mov.u32 %r5, %ctaid.x;
 mov.u32 %r6, %tid.x;
 mad.lo.s32 %r1, %r5, %r4, %r6;
 setp.ge.u32 %p1, %r1, %r3;
 @%p1 bra $L__BB0_2;
 cvta.to.global.u64 %rd2, %rd1;
 mul.wide.u32 %rd3, %r1, 4;
 add.s64 %rd4, %rd2, %rd3;
 ld.global.u32 %r7, [%rd4];
 mad.lo.s32 %r8, %r7, -1640531535, %r2;
 st.global.u32 [%rd4], %r8;
$L__BB0_2:
 griddepcontrol.launch_dependents;
 ret;
}
\0";

    /// Elements of the workload's buffer.
    const N: usize = 1 << 16;

    type Step = Kernel<(*mut u32, u32, u32)>;

    /// Loads kernel `name` of `ptx` (never unloaded: the process ends soon).
    fn load(ptx: &str, name: &CStr) -> Result<Step> {
        let mut lib: sys::cudaLibrary_t = std::ptr::null_mut();
        // SAFETY: NUL-terminated PTX; no options.
        let code = unsafe {
            sys::cudaLibraryLoadData(
                &mut lib,
                ptx.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        error::check(code, "cudaLibraryLoadData")?;
        let mut kernel: sys::cudaKernel_t = std::ptr::null_mut();
        // SAFETY: a loaded library; a NUL-terminated name.
        error::check(unsafe { sys::cudaLibraryGetKernel(&mut kernel, lib, name.as_ptr()) }, "cudaLibraryGetKernel")?;
        // SAFETY: a cudaKernel_t whose parameters are (unsigned*, unsigned, unsigned).
        unsafe { Kernel::from_raw(kernel as *const std::ffi::c_void) }
            .ok_or_else(|| Error::invalid("load", "cudaLibraryGetKernel gave null"))
    }

    /// The input: never zero.
    fn input() -> Vec<u32> {
        (0..N as u32).map(|i| i.wrapping_mul(7) | 1).collect()
    }

    /// What the steps `ks` make of the input, on the CPU.
    fn expected(ks: &[u32]) -> Vec<u32> {
        input().into_iter().map(|x| ks.iter().fold(x, |x, &k| x.wrapping_mul(2_654_435_761).wrapping_add(k))).collect()
    }

    /// A wrong result is a failure of the test, not a probe's "does not work here".
    fn check(what: &str, got: &[u32], ks: &[u32]) -> Result<String> {
        let wrong = got.iter().zip(expected(ks)).filter(|(g, w)| **g != *w).count();
        assert_eq!(wrong, 0, "{what}: {wrong} of {N} elements differ from the CPU's");
        Ok("ok".into())
    }

    fn fresh<'s>(s: StreamRef<'s>) -> Result<DeviceBuffer<'s, u32>> {
        let mut x = DeviceBuffer::alloc_async(N, s)?;
        copy::h2d_blocking(x.as_mut_slice(), &input(), s)?;
        Ok(x)
    }

    fn read(x: &DeviceBuffer<'_, u32>, s: StreamRef<'_>) -> Result<Vec<u32>> {
        let mut out = vec![0u32; N];
        copy::d2h_blocking(&mut out, x.as_slice(), s)?;
        Ok(out)
    }

    fn workload(step: Step, s: StreamRef<'_>) -> Result<String> {
        let mut x = fresh(s)?;
        let config = LaunchConfig::for_elements(N, 256)?;
        for k in [1, 2, 3] {
            // SAFETY: the kernel stays inside the N elements of `x`, freed on `s` after it.
            unsafe { step.launch(s, &config, (x.as_mut_ptr(), N as u32, k)) }?;
        }
        check("workload", &read(&x, s)?, &[1, 2, 3])
    }

    fn graph(step: Step, s: StreamRef<'_>) -> Result<String> {
        let mut x = fresh(s)?;
        s.synchronize()?;
        let (p, config) = (x.as_mut_ptr(), LaunchConfig::for_elements(N, 256)?);
        // SAFETY: `x` outlives every replay (the stream is synchronised before it drops); only the
        // closure uses `s` while it captures.
        let graph = unsafe {
            capture(s, CaptureMode::ThreadLocal, |cs| {
                [4, 5].into_iter().try_for_each(|k| step.launch(cs, &config, (p, N as u32, k)))
            })
        }?;
        let exec = graph.instantiate(InstantiateFlags::empty())?;
        exec.launch(s)?;
        exec.launch(s)?;
        let got = read(&x, s)?;
        check("graph", &got, &[4, 5, 4, 5])
    }

    fn pdl(s: StreamRef<'_>) -> Result<String> {
        let (major, _) = Device::current()?.compute_capability()?;
        if major < 9 {
            return Ok(format!("skipped: compute capability {major}.x has no PDL"));
        }
        let step = load(STEP_PDL_PTX, c"ordo_mps_step_pdl")?;
        let mut x = fresh(s)?;
        let config = LaunchConfig::for_elements(N, 256)?.with_pdl(true);
        for k in [6, 7, 8] {
            // SAFETY: as in `workload`; each kernel waits (griddepcontrol.wait) before it reads.
            unsafe { step.launch(s, &config, (x.as_mut_ptr(), N as u32, k)) }?;
        }
        check("pdl", &read(&x, s)?, &[6, 7, 8])
    }

    fn partitions(step: Step) -> Result<String> {
        let (a, b) = SmSplit::new(Device::current()?, 16)?.one_and_rest()?;
        let stream = a.stream()?;
        let s = stream.as_stream();
        let mut x = fresh(s)?;
        // SAFETY: as in `workload`.
        unsafe { step.launch(s, &LaunchConfig::for_elements(N, 256)?, (x.as_mut_ptr(), N as u32, 9)) }?;
        let got = read(&x, s)?;
        drop(x);
        stream.synchronize()?;
        check("partitions", &got, &[9]).map(|ok| format!("{ok} ({} + {} SMs)", a.sm_count(), b.sm_count()))
    }

    /// A buffer of a stream-ordered host pool (`cudaMemPoolCreate` of pinned host memory, CUDA 13)
    /// through the device and back: filled on the host, copied in, stepped, copied out.
    fn host_pool(step: Step, s: StreamRef<'_>) -> Result<String> {
        use ordo_cuda_core::memory::{HostPool, HostPoolBuffer};
        let pool = match HostPool::new(Device::current()?) {
            Err(Error::Usage(u)) if u.kind == UsageKind::NotSupported => return Ok(format!("skipped: {}", u.what)),
            pool => pool?,
        };
        let mut h = HostPoolBuffer::<u32>::alloc_async(N, &pool, s)?;
        h.host_mut_blocking()?.copy_from_slice(&input());
        let mut x = DeviceBuffer::<u32>::alloc_async(N, s)?;
        // SAFETY: `h` and `x` are freed on `s`, after the copies and the step; `h` is read on the
        // host only through `host_blocking`, which waits for `s`.
        unsafe {
            copy::h2d_async(x.as_mut_slice(), h.pinned(), s)?;
            step.launch(s, &LaunchConfig::for_elements(N, 256)?, (x.as_mut_ptr(), N as u32, 10))?;
            copy::d2h_async(h.pinned_mut(), x.as_slice(), s)?;
        }
        let got = h.host_blocking()?.to_vec();
        check("host pool", &got, &[10])
    }

    fn report(socket: &mut UnixStream, feature: &str, result: Result<String>) {
        let text = match result {
            Ok(detail) => format!("report {feature} {detail}"),
            Err(e) => format!("report {feature} error: {e}"),
        };
        child::send(socket, text.as_bytes());
    }

    pub fn run(role: &str, mut socket: UnixStream) {
        let mps = Device::current().and_then(|d| d.attribute(sys::cudaDeviceAttr::cudaDevAttrMpsEnabled));
        report(&mut socket, "mps", mps.map(|v| v.to_string()));
        let stream = Stream::new().unwrap();
        let s = stream.as_stream();
        let step = load(STEP_PTX, c"ordo_mps_step");
        report(&mut socket, "workload", step.clone().and_then(|k| workload(k, s)));
        report(&mut socket, "graph", step.clone().and_then(|k| graph(k, s)));
        report(&mut socket, "pdl", pdl(s));
        report(&mut socket, "host-pool", step.clone().and_then(|k| host_pool(k, s)));
        match role {
            "mps-exporter" => export(&mut socket, step.clone().unwrap(), s),
            "mps-importer" => import(&mut socket, s),
            other => panic!("unknown role {other:?}"),
        }
        // Last: a failure here may be sticky, and lose the context for everything after it.
        report(&mut socket, "partitions", step.and_then(partitions));
        stream.synchronize().unwrap();
        child::send(&mut socket, b"done");
    }

    /// Fills a buffer with the workload's steps and records an IPC event after them; sends both
    /// handles; keeps them until the parent relays the importer's answer.
    fn export(socket: &mut UnixStream, step: Step, s: StreamRef<'_>) {
        let made = (|| -> Result<(IpcBuffer<'_, u32>, IpcEvent)> {
            let mut buffer = IpcBuffer::<u32>::alloc(N, s)?;
            copy::h2d_blocking(buffer.as_mut_slice(), &input(), s)?;
            // SAFETY: the kernel stays inside the buffer, freed after the stream has drained.
            unsafe { step.launch(s, &LaunchConfig::for_elements(N, 256)?, (buffer.as_mut_ptr(), N as u32, 10)) }?;
            let event = IpcEvent::new()?;
            event.record(s)?;
            Ok((buffer, event))
        })();
        let handles = made.as_ref().map_err(Clone::clone).and_then(|(b, e)| Ok((b.export()?, e.export()?)));
        match handles {
            Ok((memory, event)) => {
                child::send(socket, b"handles");
                child::send(socket, &memory.to_bytes());
                child::send(socket, &event.to_bytes());
            }
            Err(e) => child::send(socket, format!("no handles: {e}").as_bytes()),
        }
        child::expect(socket, b"ack");
        drop(made);
    }

    /// Opens the exporter's buffer and event, waits on the event, and checks the buffer.
    fn import(socket: &mut UnixStream, s: StreamRef<'_>) {
        child::send(socket, b"ready");
        let first = child::recv(socket);
        let result = if first == b"handles" {
            let (memory, event) = (child::recv(socket), child::recv(socket));
            (|| -> Result<String> {
                // SAFETY: the exporter keeps both until this process has answered ("ack" waits for it).
                let (memory, event) =
                    unsafe { (IpcMemHandle::from_bytes(&memory)?, IpcEventHandle::from_bytes(&event)?) };
                let mapping = IpcMapping::<u32>::open(&memory, s)?;
                let event = ImportedEvent::open(&event)?;
                s.wait_event(&event)?;
                let mut got = vec![0u32; N];
                copy::d2h_blocking(&mut got, mapping.as_slice(), s)?;
                mapping.close()?;
                check("ipc", &got, &[10])
            })()
        } else {
            Ok(format!("skipped: the exporter said {:?}", String::from_utf8_lossy(&first)))
        };
        report(socket, "ipc", result);
    }
}

/// Reads `report FEATURE RESULT` messages until another message, which it returns.
#[cfg(cuda_library_api)]
fn reports(socket: &mut std::os::unix::net::UnixStream, into: &mut Vec<(String, String)>) -> Vec<u8> {
    loop {
        let message = child::recv(socket);
        let text = String::from_utf8_lossy(&message).into_owned();
        let Some(rest) = text.strip_prefix("report ") else { return message };
        let (feature, result) = rest.split_once(' ').unwrap_or((rest, ""));
        into.push((feature.to_string(), result.to_string()));
    }
}

#[cfg(cuda_library_api)]
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn two_processes_run_an_ordo_workload_under_mps() {
    let Some(daemon) = mps::MpsDaemon::start() else {
        eprintln!("no nvidia-cuda-mps-control on this machine: nothing run");
        return;
    };
    let env = daemon.env();
    let (exporter, mut a) = child::spawn("child_process_entry", "mps-exporter", &env);
    let (importer, mut b) = child::spawn("child_process_entry", "mps-importer", &env);
    let (mut from_a, mut from_b) = (Vec::new(), Vec::new());
    let handles = reports(&mut a, &mut from_a);
    let ready = reports(&mut b, &mut from_b);
    assert_eq!(ready, b"ready");
    child::send(&mut b, &handles);
    if handles == b"handles" {
        let (memory, event) = (child::recv(&mut a), child::recv(&mut a));
        child::send(&mut b, &memory);
        child::send(&mut b, &event);
    }
    let done = reports(&mut b, &mut from_b);
    assert_eq!(done, b"done");
    child::send(&mut a, b"ack");
    let done = reports(&mut a, &mut from_a);
    assert_eq!(done, b"done");
    child::wait_ok(exporter, std::time::Duration::from_secs(120));
    child::wait_ok(importer, std::time::Duration::from_secs(120));
    println!("ordo under MPS ({}):", daemon.log_dir().display());
    println!("feature      exporter                                 importer");
    for (feature, result) in &from_a {
        let other = from_b.iter().find(|(f, _)| f == feature).map_or("-", |(_, r)| r.as_str());
        println!("{feature:<12} {result:<40} {other}");
    }
    for (feature, result) in from_b.iter().filter(|(f, _)| !from_a.iter().any(|(g, _)| g == f)) {
        println!("{feature:<12} {:<40} {result}", "-");
    }
    let log = daemon.control_log();
    println!("control.log:\n{log}");
    for reports in [&from_a, &from_b] {
        let get = |f: &str| reports.iter().find(|(g, _)| g == f).map(|(_, r)| r.as_str());
        assert_eq!(get("mps"), Some("1"), "CUDA does not see MPS in a client: {reports:?}");
        assert_eq!(get("workload"), Some("ok"), "{reports:?}");
        assert_eq!(get("graph"), Some("ok"), "{reports:?}");
    }
    assert!(!log.is_empty(), "the control daemon logged nothing: were the children its clients?");
}
