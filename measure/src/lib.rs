//! # ordo-cuda-measure
//!
//! Measures any CUDA kernel the way `ordo-bench` measures ordo's own, with nvbench's statistics:
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
//!   (launches back to back, nvbench's batch measurement);
//!
//! every variant against plain `cudaLaunchKernelEx` in the same interleaved rounds.
//!
//! ## Statistics (from nvbench)
//! Taken from NVIDIA/nvbench's sources: the statistics of a series ([`stats`]:
//! `detail/statistics.cuh`), the `stdrel` stopping criterion with its minimum time, noise target,
//! stability check and timeout ([`stopping`]: `detail/stdrel_criterion.cxx`, `measure_cold.cu`), the
//! throttle rule with its recovery delay ([`throttle`]: `detail/gpu_frequency.cxx`), the blocking
//! and timestamps kernels ([`helpers`]: `blocking_kernel.cu`, `detail/timestamps_kernel.cu`), the L2
//! flush (`detail/l2flush.cuh`: a `cudaMemsetAsync` of a buffer the size of L2), and the
//! comparison rule ([`compare`]: `python/scripts/nvbench_compare.py`). ordo's own: variants
//! interleaved in alternating rounds ([`runner`]), the gaps from stamps ([`stamps`]).
//!
//! ## Layout
//! Everything but the engine needs no GPU and no CUDA call: statistics, stopping, throttle rule,
//! the sampling loop (which takes its clock from an [`runner::Environment`], so that it is tested
//! against synthetic sources), reports and their comparison, the command line's parser
//! ([`spec`], [`cli`]), the PTX instrumentation. The engine ([`engine`]; built against CUDA 12.5 or
//! later headers) launches and times. The `ordo-measure` command wraps it.

#![warn(missing_docs)]

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

pub use report::{Header, Report, Row};
pub use runner::{Measure, Sample, Settings};
pub use spec::SpecError;
pub use stats::Summary;
