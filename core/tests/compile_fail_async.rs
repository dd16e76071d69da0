//! Compile-fail tests of the type-level promises of `ordo_cuda_core::future` (feature `async`),
//! as `compile_fail.rs` does for the rest: each file in `tests/compile_fail/async/` must fail to
//! compile, with the compiler message checked in beside it. Regenerate the messages after a
//! deliberate change with
//! `TRYBUILD=overwrite cargo test -p ordo-cuda-core --features async --test compile_fail_async`,
//! and read them. Needs no GPU, but needs cargo (without it, it says so and checks nothing).
#![cfg(feature = "async")]

#[test]
fn futures_hold_what_the_gpu_uses() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if std::process::Command::new(&cargo).arg("--version").output().is_err() {
        eprintln!("compile_fail_async: no cargo on this machine ({cargo:?}): nothing compiled, nothing checked");
        return;
    }
    trybuild::TestCases::new().compile_fail("tests/compile_fail/async/*.rs");
}
