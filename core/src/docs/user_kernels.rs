//! # Compiling your own CUDA C
//!
//! The build script publishes, as `links` metadata, what a crate compiling its own kernels against
//! ordo needs. Cargo passes it to the build script of every crate that depends on `ordo-cuda-core`
//! directly, as environment variables:
//!
//! | variable | value |
//! | --- | --- |
//! | `DEP_ORDO_CUDA_CORE_NVCC` | the nvcc of the toolkit ordo is built against, so that your kernels and ordo's runtime come from one toolkit (absent when that toolkit has no nvcc, and on docs.rs) |
//! | `DEP_ORDO_CUDA_CORE_INCLUDE` | ordo's device headers: `ordo/pdl.cuh` (`ORDO_PDL_KERNELS`), `ordo/graph.cuh` (`ordo_set_condition`) |
//! | `DEP_ORDO_CUDA_CORE_GENCODE` | the nvcc `-gencode` flags ordo's own kernels are built with, separated by spaces |
//! | `DEP_ORDO_CUDA_CORE_CUDA_VERSION` | the toolkit's version as its headers give it (`13000` for 13.0) |
//! | `DEP_ORDO_CUDA_CORE_CUDA_INCLUDE` | the toolkit's include folders, a search path (empty with no toolkit, on docs.rs) |
//! | `DEP_ORDO_CUDA_CORE_HAS_DEVICE` | `1` where the build machine has an NVIDIA GPU, else `0` (for `cfg`s of GPU tests) |
//!
//! The facade, `ordo-cuda`, passes the same keys on to its own dependents as `DEP_ORDO_CUDA_*`.
//! A build script with `cc` as its build dependency (not compiled here: `cc` is no dependency of
//! this crate; `examples/user-kernel/build.rs` in ordo's repository is a complete one):
//!
//! ```rust,ignore
//! fn main() {
//!     println!("cargo::rerun-if-changed=src/my_kernels.cu");
//!     println!("cargo::rerun-if-env-changed=DOCS_RS");
//!     // docs.rs: no toolkit, and rustdoc links nothing (see "Documentation on docs.rs" below).
//!     if std::env::var_os("DOCS_RS").is_some() {
//!         return;
//!     }
//!     let var = |key: &str| std::env::var(format!("DEP_ORDO_CUDA_CORE_{key}")).ok();
//!     let Some(nvcc) = var("NVCC") else {
//!         eprintln!("my-crate: ordo's CUDA toolkit has no nvcc; set CUDA_HOME to one that has");
//!         std::process::exit(1);
//!     };
//!     std::env::set_var("NVCC", nvcc); // the compiler cc runs for CUDA files
//!     let mut build = cc::Build::new();
//!     // The CUDA runtime is linked once, by ordo-cuda-sys.
//!     build.cuda(true).cudart("none").include(var("INCLUDE").unwrap_or_default()).file("src/my_kernels.cu");
//!     for flag in var("GENCODE").unwrap_or_default().split_whitespace() {
//!         build.flag(flag);
//!     }
//!     build.compile("my_kernels");
//! }
//! ```
//!
//! Launch them through the host stubs nvcc generates: declare each kernel once by its signature
//! with [`declare_kernels!`], which gives it a function returning its typed [`Kernel`] (the
//! example at the top of the [crate docs](crate)), or declare the `extern "C"` stub yourself and
//! pass it to [`Kernel::new`].
//!
//! ## Documentation on docs.rs
//! docs.rs builds documentation without a CUDA toolkit, and sets `DOCS_RS=1` in the environment
//! of every build script of that build, ordo's and yours. ordo builds there (ordo-cuda-sys
//! documents with its checked-in bindings, ordo-cuda-kernels compiles nothing), but with no
//! toolkit it publishes no `NVCC`, so a build script that compiles its `.cu` as above would stop
//! at the missing nvcc, and the crate would have no documentation.
//!
//! Nothing has to be compiled for documentation: rustdoc type-checks the crate but links nothing,
//! so the declarations of kernels that were never compiled ([`declare_kernels!`], or `extern "C"`
//! blocks) type-check as they are, with no `cfg` around them. The build script's first step is
//! therefore: with `DOCS_RS` set, return before compiling (the `if` in the build script above),
//! and say `cargo::rerun-if-env-changed=DOCS_RS` so that a later build with the toolkit compiles
//! again.
//!
//! - No other metadata is needed. ordo-cuda-sys fails a build that finds no toolkit unless
//!   `DOCS_RS` is set, so outside docs.rs a missing `NVCC` means a toolkit without nvcc (a
//!   runtime-only install): an error for a crate that compiles CUDA C, worth its own message
//!   ("set `CUDA_HOME` to a toolkit with nvcc"), not a reason to skip.
//! - A crate that uses a file its build script makes, such as
//!   `include_bytes!(concat!(env!("OUT_DIR"), "/my_kernels.fatbin"))` or an `env!` the script
//!   sets, needs that to exist when the script skips: write an empty file in its place, or
//!   declare a `cfg` (`cargo::rustc-check-cfg=cfg(my_kernels_skipped)` always,
//!   `cargo::rustc-cfg=my_kernels_skipped` when skipping) and put the item under
//!   `#[cfg(not(my_kernels_skipped))]`.
//!
//! To check it as docs.rs would: `DOCS_RS=1 cargo doc` with no toolkit to be found (`CUDA_HOME`
//! and `CUDA_PATH` unset, no nvcc on `PATH`, `ORDO_CUDA_CACHE` an empty folder).
//!
//! [`declare_kernels!`]: crate::declare_kernels
//! [`Kernel`]: crate::Kernel
//! [`Kernel::new`]: crate::Kernel::new
