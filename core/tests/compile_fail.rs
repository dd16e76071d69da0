//! Compile-fail tests of the type-level promises (trybuild): each file in `tests/compile_fail/`
//! must fail to compile, with the compiler message checked in beside it (`.stderr`). Regenerate
//! the messages after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p ordo-core --test compile_fail`, and read them: each must fail
//! for the reason its file names, not another. Needs no GPU.

#[test]
fn type_level_promises_are_compile_errors() {
    trybuild::TestCases::new().compile_fail("tests/compile_fail/*.rs");
}
