//! The engine: launches and times kernels on one device and one stream of its own, and turns the
//! samples into report rows.
//!
//! ```no_run
//! use ordo_cuda_measure::engine::{Engine, Options, Subject, Target, LaunchSlot};
//! use ordo_cuda_core::{launch::LaunchConfig, Device, Kernel};
//! extern "C" {
//!     fn saxpy(a: f32, x: *const f32, y: *mut f32, n: i32); // a kernel linked into the program
//! }
//! # fn main() -> ordo_cuda_core::Result<()> {
//! let device = Device::new(0)?;
//! let mut engine = Engine::new(device, Options::default())?;
//! let n = 1 << 20;
//! let x = ordo_cuda_core::SharedStreamBuffer::<f32>::zeroed_async(n, engine.stream())?;
//! let mut y = ordo_cuda_core::SharedStreamBuffer::<f32>::zeroed_async(n, engine.stream())?;
//! let (xp, yp) = (x.as_ptr(), y.as_mut_ptr());
//! let kernel = Kernel::new(saxpy as unsafe extern "C" fn(f32, *const f32, *mut f32, i32));
//! // SAFETY: saxpy touches x[..n] and y[..n], which outlive `subject`.
//! let target = unsafe {
//!     Target::typed("saxpy", kernel, device, LaunchConfig::for_elements(n, 256)?, move |_: LaunchSlot| {
//!         (2.0f32, xp, yp, n as i32)
//!     })?
//! };
//! let mut subject = Subject::new(target);
//! let mut rows = engine.cold(&mut subject)?;
//! rows.extend(engine.submit(&mut subject)?);
//! let report = engine.report(rows);
//! println!("{}", report.to_markdown());
//! # drop(subject); Ok(()) }
//! ```

mod advice;
mod harness;
pub mod launch;
mod measures;
pub mod module;
mod race;
mod source;

pub use launch::{Func, LaunchSlot, Path, RawArg, Target};
pub use race::{Edge, RaceOptions};

use crate::report::{DeviceInfo, Header, PeerInfo, Report, Row};
use crate::runner::{self, Measure, RealTime, Series, Settings};
use crate::stopping::Stopping;
use harness::Instruments;
use ordo_cuda_core::launch::KernelArgs;
use ordo_cuda_core::{device, sys, Device, Error, PdlKernel, Result, SharedStreamBuffer, Stream, TimingEvent};
use std::sync::Arc;

/// What the engine does beyond the sampling settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// How to sample and when to stop.
    pub settings: Settings,
    /// Seconds after which the blocking kernel gives up (nvbench: 30).
    pub blocking_timeout: f64,
    /// Launches in a gap sequence.
    pub launches: usize,
    /// Launches in a host-submit sample (queued behind the blocking kernel).
    pub submit_launches: usize,
    /// The GPU time a hot batch aims at (seconds).
    pub hot_batch_time: f64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            settings: Settings::default(),
            blocking_timeout: 30.0,
            launches: 100,
            submit_launches: 100,
            hot_batch_time: 1e-3,
        }
    }
}

/// A kernel as the engine measures it: the forms it is launched in.
///
/// - `plain`: launched without PDL (submit, sync, hot, cold, and gap sequences without PDL);
/// - `pdl`: launched with PDL (the kernel itself when it waits, or its PDL form);
/// - `stamped` and `stamped_pdl`: the forms that write `%globaltimer` stamps, for the gaps (the
///   same forms when the kernel writes its own, copies made by [`crate::ptx::instrument`] else).
///
/// Without stamped forms the gap measure gives the period (events) only.
pub struct Subject {
    name: String,
    forms: Vec<Target>,
    plain: usize,
    pdl: Option<usize>,
    stamped: Option<usize>,
    stamped_pdl: Option<usize>,
    releases: bool,
}

impl Subject {
    /// A kernel launched without PDL only, and without stamps.
    pub fn new(plain: Target) -> Subject {
        Subject {
            name: plain.name().to_owned(),
            forms: vec![plain],
            plain: 0,
            pdl: None,
            stamped: None,
            stamped_pdl: None,
            releases: false,
        }
    }

    fn push(&mut self, t: Target) -> usize {
        self.forms.push(t);
        self.forms.len() - 1
    }

    /// The kernel writes its own stamps.
    pub fn self_stamped(mut self) -> Subject {
        self.stamped = Some(self.plain);
        self
    }

    /// `t` is the kernel with stamps (an instrumented copy).
    pub fn with_stamped(mut self, t: Target) -> Subject {
        let i = self.push(t);
        self.stamped = Some(i);
        self
    }

    /// The kernel contains `griddepcontrol.wait`: it is launched with PDL as it is (and its stamped
    /// form, if any, too; `releases`: that form records its release from the wait).
    pub fn waits(mut self, releases: bool) -> Subject {
        self.pdl = Some(self.plain);
        self.stamped_pdl = self.stamped;
        self.releases = releases && self.stamped.is_some();
        self
    }

    /// `pdl` is its PDL form (ordo's two forms), `stamped_pdl` that form with stamps (the same
    /// target when it writes its own: pass `None` and `self_stamped_pdl: true`), recording its
    /// release when `releases`.
    pub fn with_pdl_form(
        mut self,
        pdl: Target,
        stamped_pdl: Option<Target>,
        self_stamped_pdl: bool,
        releases: bool,
    ) -> Subject {
        let p = self.push(pdl);
        self.pdl = Some(p);
        self.stamped_pdl = match stamped_pdl {
            Some(t) => Some(self.push(t)),
            None if self_stamped_pdl => Some(p),
            None => None,
        };
        self.releases = releases && self.stamped_pdl.is_some();
        self
    }

    /// ordo's two forms of one kernel ([`PdlKernel`]): the plain form launched without PDL, the
    /// PDL form with it, each with the arguments `args` makes; `self_stamped` when both write
    /// their stamps at [`LaunchSlot::stamps`] (then the PDL form's releases are read too).
    ///
    /// # Safety
    /// As [`Target::typed`], for both forms.
    pub unsafe fn pdl_kernel<A, F>(
        name: impl Into<String>,
        kernel: PdlKernel<A>,
        device: Device,
        config: ordo_cuda_core::launch::LaunchConfig,
        args: F,
        self_stamped: bool,
    ) -> Result<Subject>
    where
        A: KernelArgs + 'static,
        F: FnMut(LaunchSlot) -> A + Clone + 'static,
    {
        let name = name.into();
        // SAFETY: forwarded.
        let plain = unsafe { Target::typed(name.clone(), kernel.plain(), device, config, args.clone())? };
        // SAFETY: forwarded.
        let pdl = unsafe { Target::typed(format!("{name} (PDL form)"), kernel.pdl(), device, config, args)? };
        let s = Subject::new(plain);
        Ok(if self_stamped {
            s.self_stamped().with_pdl_form(pdl, None, true, true)
        } else {
            s.with_pdl_form(pdl, None, false, false)
        })
    }

    /// Its name in reports.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it can be launched with PDL.
    pub fn has_pdl(&self) -> bool {
        self.pdl.is_some()
    }

    /// How it can be launched with PDL, if at all.
    pub fn pdl_support(&self) -> PdlSupport {
        match self.pdl {
            None => PdlSupport::Neither,
            Some(p) if p == self.plain => PdlSupport::Waits,
            Some(p) => PdlSupport::Form(self.forms[p].name().to_owned()),
        }
    }

    /// The form for a sequence: PDL or not, stamped if available; and whether it is stamped.
    fn form(&self, pdl: bool) -> Option<(usize, bool)> {
        match (pdl, self.stamped, self.stamped_pdl) {
            (false, Some(s), _) => Some((s, true)),
            (false, None, _) => Some((self.plain, false)),
            (true, _, Some(s)) => Some((s, true)),
            (true, _, None) => self.pdl.map(|p| (p, false)),
        }
    }
}

/// How a kernel can be launched with PDL: a PDL launch lets it start before the previous kernel
/// ends, which is safe only for a kernel that waits (`griddepcontrol.wait`) before it reads what
/// that kernel wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PdlSupport {
    /// The kernel waits: launched with PDL as it is ([`Subject::waits`]).
    Waits,
    /// Its PDL form, named, is launched with PDL ([`Subject::with_pdl_form`]).
    Form(String),
    /// Neither: no PDL launch.
    Neither,
}

/// Why a gap measure has no PDL variant, or `None` when it has one. The PDL sequence launches
/// every kernel after the first with PDL (for A then B, A after B as well as B after A), so every
/// kernel must wait or have a PDL form; the note says which kernel lacks that, and what the
/// others have. `kernels` are (name, support), A first.
pub fn no_pdl_note(kernels: &[(&str, &PdlSupport)]) -> Option<String> {
    if kernels.iter().all(|(_, s)| **s != PdlSupport::Neither) {
        return None;
    }
    let has = |s: &PdlSupport| match s {
        PdlSupport::Waits => "waits (griddepcontrol.wait)".to_owned(),
        PdlSupport::Form(f) => format!("has a PDL form ({f})"),
        PdlSupport::Neither => "has no griddepcontrol.wait and no PDL form".to_owned(),
    };
    Some(match kernels {
        [(name, s)] => format!("no PDL variant: {name} {}", has(s)),
        _ => {
            let each: Vec<String> = kernels
                .iter()
                .zip(["A", "B"])
                .map(|((name, s), which)| format!("{which} ({name}) {}", has(s)))
                .collect();
            format!(
                "no PDL variant: a PDL sequence (A B A B ...) starts each kernel before the one before it ends, so both must wait or have a PDL form: {}",
                each.join("; ")
            )
        }
    })
}

/// Launches and times kernels on one device, on a stream of its own.
pub struct Engine {
    device: Device,
    stream: Arc<Stream>,
    inst: Instruments,
    l2: Option<SharedStreamBuffer<u8>>,
    start: TimingEvent,
    stop: TimingEvent,
    driver: Option<launch::CuLaunchKernelExFn>,
    options: Options,
    header: Header,
    default_hz: f64,
    env: RealTime,
}

impl Engine {
    /// An engine on `device` (made current while it works, then restored): its stream, its helper
    /// kernels, the mapped page, the L2-sized buffer, and the device's header.
    pub fn new(device: Device, options: Options) -> Result<Engine> {
        device.with_current(|| {
            let stream = Arc::new(Stream::new()?);
            let attr = |a| device.attribute(a);
            let l2_bytes = usize::try_from(attr(sys::cudaDeviceAttr::cudaDevAttrL2CacheSize)?).unwrap_or(0);
            let l2 = if l2_bytes > 0 { Some(SharedStreamBuffer::<u8>::zeroed_async(l2_bytes, &stream)?) } else { None };
            let sms = device.sm_count()?;
            let info = DeviceInfo {
                ordinal: device.ordinal(),
                name: device.name()?.as_str().to_owned(),
                compute_capability: device.compute_capability()?,
                sms,
                sm_clock_khz: u32::try_from(attr(sys::cudaDeviceAttr::cudaDevAttrClockRate)?).unwrap_or(0),
                memory_clock_khz: u32::try_from(attr(sys::cudaDeviceAttr::cudaDevAttrMemoryClockRate)?).unwrap_or(0),
                memory_bus_bits: u32::try_from(attr(sys::cudaDeviceAttr::cudaDevAttrGlobalMemoryBusWidth)?)
                    .unwrap_or(0),
                l2_bytes: l2_bytes as u64,
            };
            let default_hz = f64::from(info.sm_clock_khz) * 1e3;
            let header = Header {
                tool: format!("ordo-measure {}", env!("CARGO_PKG_VERSION")),
                device: info,
                driver_version: device::driver_version()?,
                runtime_version: device::runtime_version()?,
                bindings_version: sys::CUDA_VERSION,
                peers: peers(device)?,
                sampling: describe(&options, default_hz),
            };
            let inst = Instruments::new(sms, options.blocking_timeout)?;
            inst.warm_up(stream.as_stream())?;
            Ok(Engine {
                device,
                stream,
                inst,
                l2,
                start: TimingEvent::new()?,
                stop: TimingEvent::new()?,
                driver: launch::driver_launch_fn().ok(),
                options,
                header,
                default_hz,
                env: RealTime::default(),
            })
        })
    }

    /// The engine's stream: allocate the buffers targets use on it
    /// (`SharedStreamBuffer::zeroed_async(n, engine.stream())`).
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The header every report of this engine carries.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Replaces the options (the header's sampling line follows).
    pub fn set_options(&mut self, options: Options) {
        self.options = options;
        self.header.sampling = describe(&options, self.default_hz);
    }

    /// `rows` under this engine's header.
    pub fn report(&self, rows: Vec<Row>) -> Report {
        Report { header: self.header.clone(), rows }
    }

    /// Runs any [`Measure`] with this engine's settings, clock and throttle rule.
    pub fn run(&mut self, measure: &mut dyn Measure) -> Result<Vec<Series>> {
        runner::run(measure, &self.options.settings, self.default_hz, &mut self.env)
    }

    /// Runs `measure` with `settings` instead of the engine's.
    pub fn run_with(&mut self, measure: &mut dyn Measure, settings: &Settings) -> Result<Vec<Series>> {
        runner::run(measure, settings, self.default_hz, &mut self.env)
    }

    /// Launches the spin kernel for `ns` nanoseconds on the engine's stream (a kernel of known
    /// duration, for checking measurements).
    pub fn spin(&self, ns: u64) -> Result<()> {
        self.inst.helpers.spin(self.stream.as_stream(), ns)
    }
}

/// The other devices and what this process may reach of them.
fn peers(device: Device) -> Result<Vec<PeerInfo>> {
    let n = device::count()?;
    let mut out = Vec::new();
    for ordinal in 0..n {
        let Ok(peer) = i32::try_from(ordinal) else { break };
        if peer == device.ordinal() {
            continue;
        }
        let mut can = 0;
        // SAFETY: `can` writable; two device ordinals.
        ordo_cuda_core::error::check(
            unsafe { sys::cudaDeviceCanAccessPeer(&mut can, device.ordinal(), peer) },
            "cudaDeviceCanAccessPeer",
        )?;
        let mut pool: sys::cudaMemPool_t = core::ptr::null_mut();
        // SAFETY: `pool` writable.
        let pool_mapped = unsafe { sys::cudaDeviceGetDefaultMemPool(&mut pool, peer) } == sys::cudaError::cudaSuccess
            && {
                let mut flags = sys::cudaMemAccessFlags::cudaMemAccessFlagsProtNone;
                let mut at = sys::mem_location(sys::cudaMemLocationType::cudaMemLocationTypeDevice, device.ordinal());
                // SAFETY: a pool of `peer`; `flags` and `at` valid.
                let code = unsafe { sys::cudaMemPoolGetAccess(&mut flags, pool, &mut at) };
                code == sys::cudaError::cudaSuccess && flags != sys::cudaMemAccessFlags::cudaMemAccessFlagsProtNone
            };
        // A refused query leaves a non-sticky error in the thread's last-error slot.
        // SAFETY: no arguments.
        unsafe { sys::cudaGetLastError() };
        out.push(PeerInfo { ordinal: peer, can_access: can != 0, pool_mapped });
    }
    Ok(out)
}

/// The header's sampling line.
fn describe(o: &Options, default_hz: f64) -> String {
    let s = &o.settings;
    let stop = match s.stopping {
        Stopping::StdRel(p) => format!(
            "nvbench's stdrel: noise below {:.2}% after {:.3} s of measured time and at least {} samples, or a settled noise; timeout {} s",
            p.max_noise * 100.0,
            p.min_time,
            s.limits.min_samples,
            s.limits.timeout
        ),
        Stopping::Rounds(r) => format!("{r} rounds"),
    };
    format!(
        "variants interleaved in alternating rounds after {} warm-up round(s); {stop}; GPU-timed samples with the SM clock below {:.0}% of {:.0} MHz dropped (pause {} s); gap sequences of {} launches, host-submit samples of {}",
        s.warmup_rounds,
        s.throttle.threshold * 100.0,
        default_hz / 1e6,
        s.throttle.recovery_delay,
        o.launches,
        o.submit_launches
    )
}

/// An error for the engine's own checks.
fn invalid(what: impl Into<String>) -> Error {
    Error::invalid(crate::cli::PROGRAM, what.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_no_pdl_note_names_which_kernel_lacks_what() {
        let (w, f, n) = (PdlSupport::Waits, PdlSupport::Form("step_pdl".into()), PdlSupport::Neither);
        assert_eq!(
            no_pdl_note(&[("step", &n)]).unwrap(),
            "no PDL variant: step has no griddepcontrol.wait and no PDL form"
        );
        assert_eq!(no_pdl_note(&[("step", &w)]), None);
        assert_eq!(no_pdl_note(&[("step", &f)]), None);
        for (a, b) in [(&w, &w), (&w, &f), (&f, &w), (&f, &f)] {
            assert_eq!(no_pdl_note(&[("a", a), ("b", b)]), None, "{a:?} {b:?}");
        }
        let note = |a, b| no_pdl_note(&[("produce", a), ("consume", b)]).unwrap();
        let lacks = |which: &str, name: &str| format!("{which} ({name}) has no griddepcontrol.wait and no PDL form");
        // B waits, A does not: the case the old note ("the kernel neither waits nor has a PDL form") got wrong.
        let x = note(&n, &w);
        assert!(x.contains(&lacks("A", "produce")) && x.contains("B (consume) waits (griddepcontrol.wait)"), "{x}");
        let x = note(&n, &f);
        assert!(x.contains(&lacks("A", "produce")) && x.contains("B (consume) has a PDL form (step_pdl)"), "{x}");
        let x = note(&w, &n);
        assert!(x.contains("A (produce) waits") && x.contains(&lacks("B", "consume")), "{x}");
        let x = note(&f, &n);
        assert!(x.contains("A (produce) has a PDL form (step_pdl)") && x.contains(&lacks("B", "consume")), "{x}");
        let x = note(&n, &n);
        assert!(x.contains(&lacks("A", "produce")) && x.contains(&lacks("B", "consume")), "{x}");
        for x in [note(&n, &w), note(&w, &n), note(&n, &n)] {
            assert!(x.starts_with("no PDL variant: ") && x.contains("both must wait or have a PDL form"), "{x}");
            assert!(!x.contains("the kernel neither"), "{x}");
        }
    }
}
