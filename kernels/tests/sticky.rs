//! Sticky and non-sticky errors. A kernel that writes far out of bounds runs in a child process
//! (this test binary, run again with ORDO_STICKY_CHILD=1): the next synchronise reports a sticky
//! illegal-address error naming the call, every later call reports the lost context, and nothing
//! panics or hangs. A bad launch configuration, by contrast, leaves the context usable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ordo_cuda_core::launch::LaunchConfig;
use ordo_cuda_core::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "ORDO_STICKY_CHILD";

fn describe(what: &str, r: Result<()>) -> String {
    match r {
        Ok(()) => format!("{what} ok"),
        Err(e) => format!(
            "{what} {} {} sticky={}",
            e.cuda().map(|c| c.name().to_str().unwrap().to_string()).unwrap_or_default(),
            e.call(),
            e.is_sticky()
        ),
    }
}

/// The child's part: fault, then report what each call returns, one line each.
fn child() {
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let mut buf = DeviceBuffer::<f32>::zeroed_async(1024, s).unwrap();
    let launched = unsafe {
        ordo_cuda_kernels::kernel::write_at().launch(s, &LaunchConfig::new(1, 32), (buf.as_mut_ptr(), 1i64 << 40))
    };
    println!("CHILD {}", describe("launch", launched));
    println!("CHILD {}", describe("synchronize", s.synchronize()));
    println!("CHILD {}", describe("query", s.query().map(|_| ())));
    println!("CHILD {}", describe("event", Event::new().map(|_| ())));
    println!("CHILD {}", describe("alloc", DeviceBuffer::<f32>::alloc_async(16, s).map(|_| ())));
    println!("CHILD {}", describe("launch-again", ordo_cuda_kernels::empty(s)));
    std::mem::forget(buf); // its free would fail too; the process is about to exit
}

#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn an_illegal_address_in_a_child_process_is_sticky_and_named() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "an_illegal_address_in_a_child_process_is_sticky_and_named",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = proc.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = proc.kill();
            panic!("the faulting child hung");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = std::io::read_to_string(proc.stdout.take().unwrap()).unwrap();
    // The harness prints "test NAME ... " before the first line, without a newline.
    let lines: Vec<&str> = out.lines().filter_map(|l| l.split_once("CHILD ").map(|(_, rest)| rest)).collect();
    println!("{}", lines.join("\n"));
    assert!(status.success(), "the child panicked or crashed: {status:?}\n{out}");
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(lines[0], "launch ok", "the launch itself succeeds: the fault happens later, on the device");
    assert_eq!(lines[1], "synchronize cudaErrorIllegalAddress cudaStreamSynchronize sticky=true");
    for l in &lines[2..] {
        assert!(l.contains("cudaErrorIllegalAddress") && l.ends_with("sticky=true"), "after the fault: {l}");
    }
}

/// A launch that CUDA itself refuses (ordo's own checks pass it on) returns CUDA's error: a code,
/// not sticky, and the context stays usable: the next launch runs and its result is right. Two
/// refusals: more dynamic shared memory than any SM has, and a thread-block cluster larger than
/// any GPU schedules (32 blocks; 8 is the portable limit, 16 the largest with opt-in).
#[test]
#[cfg_attr(not(has_cuda_device), ignore = "needs a CUDA device")]
fn a_bad_launch_configuration_is_not_sticky() {
    const N: usize = 4096;
    let stream = Stream::new().unwrap();
    let s = stream.as_stream();
    let data: Vec<f32> = (0..N).map(|i| (i as f32).sin() * 100.0).collect();
    let mut x = DeviceBuffer::<f32>::alloc_async(N, s).unwrap();
    memory::copy::h2d_blocking(x.as_mut_slice(), &data, s).unwrap();
    let add_one = ordo_cuda_kernels::kernel::add_one();
    let refused = [
        ("1 GiB of dynamic shared memory", LaunchConfig::new(1, 256).with_shared_mem(1 << 30)),
        ("a cluster of 32 blocks", LaunchConfig::new(32, 128).with_cluster(32)),
    ];
    for (k, (what, config)) in refused.iter().enumerate() {
        // ordo's checks let it through: CUDA refuses it.
        config.validate().unwrap();
        // SAFETY: `x` holds N elements and outlives the kernels (synchronised below).
        let e = unsafe { add_one.launch(s, config, (x.as_mut_ptr(), N as i32)) }.unwrap_err();
        println!("{what}: {e}");
        let code = e.cuda_code().unwrap_or_else(|| panic!("{what}: not CUDA's error: {e:?}"));
        assert_ne!(code, sys::cudaError::cudaSuccess);
        assert!(!e.is_sticky(), "{what}: {e}");
        assert_eq!(e.call(), "cudaLaunchKernelExC", "{what}");
        // Nothing left behind: the last-error slot is clear, a correct launch runs.
        error::peek_last_error().unwrap();
        // SAFETY: as above.
        unsafe { ordo_cuda_kernels::add_one(s, x.as_mut_slice()).unwrap() };
        let mut back = vec![0f32; N];
        memory::copy::d2h_blocking(&mut back, x.as_slice(), s).unwrap();
        let expect: Vec<f32> = data.iter().map(|v| (0..=k).fold(*v, |v, _| v + 1.0)).collect();
        assert!(back == expect, "{what}: the launch after the refusal");
    }
    s.synchronize().unwrap();
}
