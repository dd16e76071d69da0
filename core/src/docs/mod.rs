//! The rules every module follows, at more length than the front page has room for. These pages
//! hold no code.
//!
//! | page | what it says |
//! | --- | --- |
//! | [`design`] | what the crate is, what "stream-correct" promises, what the hot paths cost, where errors surface |
//! | [`safety`] | the safety model: what is safe and why, each kind of `unsafe` call and what it owes, threads, drop, host functions in graphs |
//! | [`user_kernels`] | compiling your own CUDA C against ordo: the build metadata, a build script, launching the kernels, building the docs on docs.rs |

pub mod design;
pub mod safety;
pub mod user_kernels;
