//! SM partitions (green contexts): a decode-like graph (a chain of 100 small kernels) replayed on
//! a partition of one group of SMs while a compute hog fills every other SM, against the same on
//! plain streams with the hog filling the GPU; ordo's partitions beside the same calls in plain
//! CUDA C++ through the driver's entry points (`cuda/green.cu`).

use crate::interleave;
use crate::{ms_between, Report};
use core::ffi::c_void;
use ordo_cuda_core::graph::{capture, CaptureMode, InstantiateFlags};
use ordo_cuda_core::launch::{Kernel, LaunchConfig};
use ordo_cuda_core::partition::SmSplit;
use ordo_cuda_core::*;

extern "C" {
    fn bl_green_open(device: i32, min_sms: u32) -> *mut c_void;
    fn bl_green_sms(h: *mut c_void, which: i32) -> u32;
    fn bl_green_chain_us(h: *mut c_void, partitioned: i32, hog: i32, hog_ns: u64) -> f64;
    fn bl_green_close(h: *mut c_void);
    fn bl_green_step(x: *mut f32, n: i32);
    fn bl_green_hog(ns: u64);
}

/// SMs a group asks for: the driver rounds up to its granularity (8 on an H200: 16 SMs a group).
const MIN_SMS: u32 = 16;
/// How long the hog's blocks spin.
const HOG_NS: u64 = 10_000_000;
const N: usize = 4096;
const KERNELS: usize = 100;

pub(crate) fn green_group(r: &mut Report, rounds: usize) -> Result<()> {
    r.progress("green contexts: a chain beside a hog");
    let device = Device::current()?;
    let split = match SmSplit::new(device, MIN_SMS) {
        Ok(split) => split,
        Err(e) => {
            r.add("green", "SM partitions", "us", f64::NAN, None, format!("not available: {e}"));
            return Ok(());
        }
    };
    let (a, b) = split.one_and_rest()?;
    let (sa, sb) = (a.stream()?, b.stream()?);
    let plain = [Stream::new()?, Stream::new()?];
    let p0 = plain[0].as_stream();
    let mut x = DeviceBuffer::<f32>::zeroed_async(N, p0)?;
    let step = Kernel::new(bl_green_step as unsafe extern "C" fn(*mut f32, i32));
    let hog = Kernel::new(bl_green_hog as unsafe extern "C" fn(u64));
    let xp = x.as_mut_ptr();
    plain[0].synchronize()?;
    let config = LaunchConfig::new((N / 256) as u32, 256u32);
    // SAFETY: `x` outlives every replay (declared before the graph; the streams are synchronised
    // before it drops); nothing else uses `p0` while it captures.
    let graph = unsafe {
        capture(p0, CaptureMode::ThreadLocal, |cs| {
            (0..KERNELS).try_for_each(|_| step.launch(cs, &config, (xp, N as i32)))
        })
    }?;
    let exec = graph.instantiate(InstantiateFlags::empty())?;
    let (start, end) = (TimingEvent::new()?, TimingEvent::new()?);
    let device_sms = device.sm_count()?;
    let ordo_chain_us = |partitioned: bool, with_hog: bool| -> Result<f64> {
        let (chain, other, hog_sms) = if partitioned {
            (sa.as_stream(), sb.as_stream(), b.sm_count())
        } else {
            (p0, plain[1].as_stream(), device_sms)
        };
        if with_hog {
            // SAFETY: the hog takes no pointer.
            unsafe { hog.launch(other, &LaunchConfig::new(8 * hog_sms, 256u32), (HOG_NS,)) }?;
        }
        let ms = ms_between(chain, &start, &end, || exec.launch(chain))?;
        other.synchronize()?;
        Ok(ms * 1e3)
    };
    // SAFETY: plain values; the handle is closed below.
    let cpp = unsafe { bl_green_open(device.ordinal(), MIN_SMS) };
    let cpp_chain_us = |partitioned: i32, with_hog: i32| -> Result<f64> {
        if cpp.is_null() {
            return Ok(f64::NAN);
        }
        // SAFETY: an open baseline handle.
        Ok(unsafe { bl_green_chain_us(cpp, partitioned, with_hog, HOG_NS) })
    };
    let m = interleave(
        rounds.min(7),
        &mut [
            &mut || ordo_chain_us(false, false),
            &mut || cpp_chain_us(0, 0),
            &mut || ordo_chain_us(false, true),
            &mut || cpp_chain_us(0, 1),
            &mut || ordo_chain_us(true, false),
            &mut || cpp_chain_us(1, 0),
            &mut || ordo_chain_us(true, true),
            &mut || cpp_chain_us(1, 1),
        ],
    );
    let cpp_sms = if cpp.is_null() {
        "C++ baseline: no green contexts".to_string()
    } else {
        // SAFETY: an open baseline handle.
        unsafe { format!("C++ partitions {} + {} SMs", bl_green_sms(cpp, 0), bl_green_sms(cpp, 1)) }
    };
    // SAFETY: closed once; null is ignored.
    unsafe { bl_green_close(cpp) };
    let m = m?;
    let base = |v: f64| (!v.is_nan()).then_some(v);
    let (sa_n, sb_n) = (a.sm_count(), b.sm_count());
    r.add("green", format!("{KERNELS}-kernel chain graph, plain stream, GPU idle"), "us", m[0], base(m[1]), cpp_sms);
    r.add(
        "green",
        format!("{KERNELS}-kernel chain graph, plain stream, hog filling the GPU"),
        "us",
        m[2],
        base(m[3]),
        format!("{:.1}x the idle chain", m[2] / m[0]),
    );
    r.add("green", format!("{KERNELS}-kernel chain graph, partition of {sa_n} SMs, idle"), "us", m[4], base(m[5]), "");
    r.add(
        "green",
        format!("{KERNELS}-kernel chain graph, partition of {sa_n} SMs, hog on the other {sb_n}"),
        "us",
        m[6],
        base(m[7]),
        format!("{:.2}x the idle partition; reference 423 / 15,533 / 451 / 468 us (C++, H200)", m[6] / m[4]),
    );
    drop((exec, sa, sb));
    plain[0].synchronize()?;
    drop(x);
    plain[0].synchronize()
}
