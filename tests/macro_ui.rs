//! Compile errors of `#[tool]` are part of the product: each `tests/ui/*.stderr` is what a user
//! sees for one mistake, pointing at the offending span and saying what to write instead.
//! `tests/ui-pass/` holds tools that must compile: every supported parameter kind and rule.
//!
//! Regenerate the expected output after an intended change with
//! `TRYBUILD=overwrite cargo test --all-features --test macro_ui`, then read every changed
//! `.stderr` as a user would.

#[test]
fn ui() {
    // rustc shortens `std::string::String` to `String` only when no crate in the graph exports
    // another `String`, so the expected output depends on the features. It is recorded with
    // `--all-features`, the README's test command.
    if !cfg!(all(feature = "redis", feature = "reqwest")) {
        eprintln!("tests/ui skipped: its expected output is recorded with --all-features (the README's test command)");
        return;
    }
    let t = trybuild::TestCases::new();
    t.pass("tests/ui-pass/*.rs");
    t.compile_fail("tests/ui/*.rs");
}
