//! Compile-fail tests of the type-level promises of this crate (trybuild): each file in
//! `tests/compile_fail/` must fail to compile, with the compiler message checked in beside it
//! (`.stderr`). Regenerate the messages after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p ordo-cuda-libs --test compile_fail`, and read them: each must
//! fail for the reason its file names. Needs no GPU, but needs cargo: where the test binary runs
//! without a Rust toolchain (a prebuilt bundle on a GPU machine) it says so and checks nothing.
#![cfg(feature = "nccl")]

#[test]
fn type_level_promises_are_compile_errors() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if std::process::Command::new(&cargo).arg("--version").output().is_err() {
        eprintln!("compile_fail: no cargo on this machine ({cargo:?}): nothing compiled, nothing checked");
        return;
    }
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
