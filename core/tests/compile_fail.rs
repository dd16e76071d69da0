//! Compile-fail tests of the type-level promises (trybuild): each file in `tests/compile_fail/`
//! must fail to compile, with the compiler message checked in beside it (`.stderr`). Regenerate
//! the messages after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p ordo-cuda-core --test compile_fail`, and read them: each must fail
//! for the reason its file names, not another. Needs no GPU, but needs cargo: where the test
//! binary runs without a Rust toolchain (a GPU machine running a prebuilt bundle) it says so and
//! checks nothing; `cargo test` always has one, so CI checks every case.

#[test]
fn type_level_promises_are_compile_errors() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    if std::process::Command::new(&cargo).arg("--version").output().is_err() {
        eprintln!("compile_fail: no cargo on this machine ({cargo:?}): nothing compiled, nothing checked");
        return;
    }
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/compile_fail/*.rs");
    // Items of CUDA 12.8 and later headers (batched copies).
    #[cfg(cuda_12_8)]
    cases.compile_fail("tests/compile_fail/cuda_12_8/*.rs");
}
