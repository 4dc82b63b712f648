//! Compile errors of `#[tool]` are part of the product: each `tests/ui/*.stderr` is what a user
//! sees for one mistake, pointing at the offending span and saying what to write instead.
//! `tests/ui-pass/` holds tools that must compile: every supported parameter kind and rule.
//!
//! Regenerate the expected output after an intended change with
//! `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr` as a user would.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui-pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}
