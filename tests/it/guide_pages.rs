//! The guide in `docs/` stays whole: every page is in the book's table of contents and is
//! compiled as doc tests (its Rust blocks run in `cargo test`), and the README, the guide and
//! the measurement pages speak to users, not about how the code was built.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn pages() -> Vec<String> {
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs/src"))
        .expect("docs/src exists")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md") && name != "SUMMARY.md")
        .collect();
    pages.sort();
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_page_is_in_the_table_of_contents() {
    let summary = read(&root().join("docs/src/SUMMARY.md"));
    for page in pages() {
        assert!(
            summary.contains(&format!("]({page})")),
            "docs/src/{page} is not linked from docs/src/SUMMARY.md"
        );
    }
}

#[test]
fn every_page_is_compiled_as_doc_tests() {
    let lib = read(&root().join("src/lib.rs"));
    for page in pages() {
        if page == "introduction.md" || page == "layout.md" {
            continue; // prose only
        }
        assert!(
            lib.contains(&format!("include_str!(\"../docs/src/{page}\")")),
            "docs/src/{page} is not included in src/lib.rs's `guide` module, so its code is never compiled"
        );
    }
}

#[test]
fn no_page_has_a_rust_block_that_is_not_compiled() {
    for page in pages().into_iter().chain(["../../README.md".to_owned()]) {
        let text = read(&root().join("docs/src").join(&page));
        for (n, line) in text.lines().enumerate() {
            let fence = line.trim_start();
            assert!(
                !(fence.starts_with("```rust") && fence.contains("ignore")),
                "docs/src/{page}:{}: a Rust block marked `ignore` is never compiled",
                n + 1
            );
            // rustdoc compiles a fence without a language as Rust: say what it is.
            assert!(
                fence != "```" || {
                    // a closing fence: the number of fences before it is odd
                    text.lines()
                        .take(n)
                        .filter(|l| l.trim_start().starts_with("```"))
                        .count()
                        % 2
                        == 1
                },
                "docs/src/{page}:{}: a fence without a language is compiled as Rust; write ```text",
                n + 1
            );
        }
    }
}

#[test]
fn user_docs_tell_no_story_of_how_they_were_built() {
    let mut docs = vec![(String::from("README.md"), read(&root().join("README.md")))];
    for other in ["docs/mutants.md", "benches/README.md", "examples/README.md"] {
        docs.push((other.to_owned(), read(&root().join(other))));
    }
    for page in pages() {
        docs.push((
            format!("docs/src/{page}"),
            read(&root().join("docs/src").join(&page)),
        ));
    }
    let words = [
        "this branch",
        "this stage",
        "issue 1",
        "issue 2",
        "issue 3",
        "seed 0",
        "DESIGN.md",
    ];
    for (name, text) in &docs {
        let lower = text.to_lowercase();
        for word in words {
            assert!(
                !lower.contains(&word.to_lowercase()),
                "{name} says {word:?}"
            );
        }
        for (n, line) in text.lines().enumerate() {
            // A UUID (a session or task id in a captured MCP exchange) is not a commit hash.
            let tokens = line
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '-')
                .filter(|token| !is_uuid(token))
                .flat_map(|token| token.split('-'));
            for token in tokens {
                let hexlike = (7..=40).contains(&token.len())
                    && token.chars().all(|c| c.is_ascii_hexdigit())
                    && token.chars().any(|c| c.is_ascii_digit())
                    && token.chars().any(|c| c.is_ascii_lowercase());
                assert!(
                    !hexlike,
                    "{name}:{}: {token:?} reads as a commit hash",
                    n + 1
                );
            }
        }
    }
    let readme_lines = docs[0].1.lines().count();
    assert!(
        readme_lines <= 320,
        "the README is a front page of about 300 lines; it has {readme_lines}"
    );
}

/// `8-4-4-4-12` hex digits, as in `c19e7416-e810-4048-9554-8d0192ba0f14`.
fn is_uuid(token: &str) -> bool {
    let groups: Vec<&str> = token.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

/// A default value is stated once, in the rustdoc of the item that sets it; a page links there
/// (`[`max_steps`](https://docs.rs/toolwright/latest/...#method.max_steps)`) instead of restating
/// the number, which would go stale the day the default changes. This catches the usual
/// phrasings of a restated default: a number shortly before "by default" in the same clause
/// ("(5 minutes by default)", "3 attempts in all by default") and a number just inside
/// "(default ..." ("(default 10, ...)", "(default: 1,000 entries)").
#[test]
fn no_page_restates_a_default_value() {
    // Not an API default: the example binary's command-line flag, documented by its `--help`.
    let allowed = ["`--seed` (default 7)"];
    let mut docs = vec![(String::from("README.md"), read(&root().join("README.md")))];
    for page in pages() {
        docs.push((
            format!("docs/src/{page}"),
            read(&root().join("docs/src").join(&page)),
        ));
    }
    let mut found = Vec::new();
    for (name, text) in &docs {
        for (n, line) in text.lines().enumerate() {
            let mut checked = line.to_owned();
            for phrase in allowed {
                checked = checked.replace(phrase, "");
            }
            let lower = checked.to_ascii_lowercase();
            // "<number> <unit> ... by default", the number in the same clause and close by.
            for (at, _) in lower.match_indices("by default") {
                let clause = lower[..at]
                    .rsplit(['.', ';', ')', '(', ':'])
                    .next()
                    .unwrap_or("");
                let near: String = clause
                    .chars()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                if near.chars().any(|c| c.is_ascii_digit()) {
                    found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
            // "(default <number>" or "(default: ... <number>", before the parenthesis closes.
            for (at, _) in lower.match_indices("(default") {
                let inside: String = lower[at + "(default".len()..]
                    .chars()
                    .take_while(|&c| c != ')')
                    .take(30)
                    .collect();
                if inside.chars().any(|c| c.is_ascii_digit()) {
                    found.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    found.dedup();
    assert!(
        found.is_empty(),
        "these lines restate a default value; link to the rustdoc of the item that sets it \
         (https://docs.rs/toolwright/latest/toolwright/...) instead:\n{}",
        found.join("\n")
    );
}

/// The README's Rust blocks read on GitHub and crates.io as they compile: rustdoc's hidden
/// lines (`# ` at the start of a line in a Rust block) would be shown there literally.
#[test]
fn the_readme_s_rust_blocks_have_no_hidden_lines() {
    let readme = read(&root().join("README.md"));
    let mut in_rust = false;
    for (n, line) in readme.lines().enumerate() {
        if let Some(fence) = line.strip_prefix("```") {
            in_rust = !in_rust && (fence.is_empty() || fence.starts_with("rust"));
            continue;
        }
        assert!(
            !(in_rust && (line == "#" || line.starts_with("# "))),
            "README.md:{}: a rustdoc hidden line, shown literally on GitHub: {line:?}",
            n + 1
        );
    }
}
