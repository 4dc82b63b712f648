//! Writes every conformance fixture as a JSON file into a directory, for
//! `tests/conformance/check.py`.
//!
//! ```text
//! cargo run -p toolwright-conformance --example write_fixtures -- DIR
//! ```
//!
//! The directory may also come from `TOOLWRIGHT_FIXTURES_DIR`. Each file holds
//! `{"kind", "name", "tool", "value"}`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("TOOLWRIGHT_FIXTURES_DIR").ok())
        .map(PathBuf::from)
    else {
        eprintln!("usage: write_fixtures DIR (or set TOOLWRIGHT_FIXTURES_DIR)");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let fixtures = toolwright_conformance::fixtures();
    for fixture in &fixtures {
        let path = dir.join(fixture.file_name());
        let text = match serde_json::to_string_pretty(fixture) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{}: {e}", fixture.file_name());
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("wrote {} fixtures to {}", fixtures.len(), dir.display());
    ExitCode::SUCCESS
}
