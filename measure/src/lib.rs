//! # ordo-cuda-measure
//!
//! Measures any CUDA kernel the way `ordo-bench` measures ordo's own, with nvbench's statistics,
//! every variant against plain `cudaLaunchKernelEx` in the same interleaved rounds. The
//! `ordo-measure` command wraps it (its guide: `docs/measure.md`).
//!
//! ```no_run
//! use ordo_cuda_core::{launch::LaunchConfig, Device, SharedStreamBuffer};
//! use ordo_cuda_measure::engine::{Engine, LaunchSlot, Options, Subject, Target};
//!
//! ordo_cuda_core::declare_kernels! {
//!     unsafe extern "C" {
//!         /// `extern "C" __global__ void scale(float* x, float a, int n)`, linked into the program.
//!         fn scale(x: *mut f32, a: f32, n: i32);
//!     }
//! }
//!
//! fn main() -> ordo_cuda_core::Result<()> {
//!     let device = Device::new(0)?;
//!     let mut engine = Engine::new(device, Options::default())?;
//!     let n = 1 << 20;
//!     let mut x = SharedStreamBuffer::<f32>::zeroed_async(n, engine.stream())?;
//!     let xp = x.as_mut_ptr();
//!     // SAFETY: `scale` touches x[..n], which outlives `subject`.
//!     let target = unsafe {
//!         Target::typed("scale", scale(), device, LaunchConfig::for_elements(n, 256)?, move |_: LaunchSlot| {
//!             (xp, 1.0f32, n as i32)
//!         })?
//!     };
//!     let mut subject = Subject::new(target);
//!     let mut rows = engine.submit(&mut subject)?; // host time of one launch, each launch path
//!     rows.extend(engine.cold(&mut subject)?); // kernel time, L2 flushed before each sample
//!     println!("{}", engine.report(rows).to_markdown());
//!     drop(subject);
//!     Ok(())
//! }
//! ```
//!
//! ## What it measures
//!
//! - **host submit latency** of one launch through each path (ordo's launch, `cudaLaunchKernelEx`,
//!   `cudaLaunchKernel` as `<<<>>>` compiles to, the driver's `cuLaunchKernelEx`), and launch +
//!   `cudaStreamSynchronize`;
//! - **GPU gaps** between back-to-back launches of a kernel, or of kernel A then B: eager, queued
//!   behind a blocking kernel, and in a CUDA graph; with and without PDL where the kernel waits
//!   (`griddepcontrol.wait`) or comes in ordo's two forms; the time from a kernel's end to the next
//!   one's release from its wait; the per-kernel period from events. Gaps come from `%globaltimer`
//!   stamps that the kernel writes ([`spec::args`]: `stamps`), or that [`ptx::instrument`] adds
//!   to a copy of a kernel given as PTX or CUDA C;
//! - **kernel time**, cold (the L2 flushed before each sample, nvbench's `measure_cold`) and hot
//!   (launches back to back, nvbench's batch measurement).
//!
//! ## Modules
//!
//! Everything but the engine needs no GPU and no CUDA call, so that it is tested without one (the
//! sampling loop takes its clock from a [`runner::Environment`], tested against synthetic sources).
//! What comes from NVIDIA/nvbench's sources names the file:
//!
//! | module | what | from nvbench |
//! | --- | --- | --- |
//! | [`engine`] | launches and times kernels on one device and one stream of its own (built against CUDA 12.5 or later headers) | the L2 flush (`detail/l2flush.cuh`: a `cudaMemsetAsync` of a buffer the size of L2) |
//! | [`runner`] | the sampling loop: variants interleaved in alternating rounds | (ordo's own) |
//! | [`stats`] | the statistics of a series | `detail/statistics.cuh` |
//! | [`stopping`] | the `stdrel` stopping criterion, its minimum time, noise target, stability check and timeout | `detail/stdrel_criterion.cxx`, `measure_cold.cu` |
//! | [`throttle`] | the throttle rule with its recovery delay | `detail/gpu_frequency.cxx` |
//! | [`helpers`] | the blocking and timestamps kernels, in PTX written by hand | `blocking_kernel.cu`, `detail/timestamps_kernel.cu` |
//! | [`stamps`] | `%globaltimer` stamps reduced to GPU gaps | (ordo's own) |
//! | [`ptx`] | stamps added to a kernel given as PTX | (ordo's own) |
//! | [`report`] | reports: a header (device, driver, clocks, how it sampled) and rows | |
//! | [`compare`] | two reports compared row by row | `python/scripts/nvbench_compare.py` |
//! | [`spec`], [`cli`] | what the command line says to measure, and its parser | |
// docs.rs (nightly rustdoc, `--cfg ordo_doc_cfg` from [package.metadata.docs.rs]): feature badges.
#![cfg_attr(ordo_doc_cfg, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod check;
pub mod cli;
pub mod compare;
#[cfg(measure_engine)]
pub mod engine;
pub mod helpers;
pub mod ptx;
pub mod report;
pub mod runner;
pub mod spec;
pub mod stamps;
pub mod stats;
pub mod stopping;
pub mod throttle;

/// The guide (`docs/measure.md`), whose examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../docs/measure.md")]
pub struct Guide;

#[doc(inline)]
pub use report::{Header, Report, Row};
#[doc(inline)]
pub use runner::{Measure, Sample, Settings};
#[doc(inline)]
pub use spec::SpecError;
#[doc(inline)]
pub use stats::Summary;
