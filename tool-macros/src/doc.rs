//! Doc comments as the model reads them: the one reflow every description goes through (a
//! tool's doc, a parameter's doc, a `#[data]` field's, variant's or type's doc).

/// The text of a doc comment reflowed for a model: the lines of a paragraph joined with single
/// spaces (a `///` comment wraps where the editor did, not where a sentence ends), paragraphs
/// (a blank `///` line between them) separated by `\n\n`, the ends trimmed.
///
/// Markdown that depends on its line breaks keeps them: a line that starts a list item (`- `,
/// `* `, `+ `, `1. `, `1) `), a heading (`#`) or a table row (`|`) starts a new line (a line
/// after it that is none of those continues the item, as in Markdown); a heading or table row
/// ends its line; a fenced code block (```` ``` ```` or `~~~`) is kept line for line, blank
/// lines included.
pub(crate) fn reflow(text: &str) -> String {
    let mut out = String::new();
    // The current line of `out` takes no continuation: a heading, a table row, a fence.
    let mut closed = false;
    // A blank line was seen since the last text: the next text starts a paragraph.
    let mut blank = false;
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(marker) = fence {
            out.push('\n');
            out.push_str(line.trim_end());
            if trimmed.starts_with(marker) {
                fence = None;
                closed = true;
            }
            continue;
        }
        if trimmed.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        let opens_fence = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(*m));
        let starts_line = opens_fence.is_some() || block_start(trimmed);
        if !out.is_empty() && !blank && !closed && !starts_line {
            out.push(' ');
            out.push_str(trimmed);
        } else {
            if !out.is_empty() {
                out.push_str(if blank { "\n\n" } else { "\n" });
            }
            // The start of a line keeps its indentation: a nested list item stays nested.
            out.push_str(line.trim_end());
        }
        blank = false;
        fence = opens_fence;
        closed = heading(trimmed) || trimmed.starts_with('|');
    }
    out.trim().to_owned()
}

/// Whether a line (trimmed) starts a Markdown block of its own: a list item, a heading or a
/// table row.
fn block_start(line: &str) -> bool {
    if heading(line) || line.starts_with('|') {
        return true;
    }
    if ["- ", "* ", "+ "].iter().any(|m| line.starts_with(m)) || matches!(line, "-" | "*" | "+") {
        return true;
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && digits <= 9
        && matches!(line.as_bytes().get(digits), Some(b'.' | b')'))
        && matches!(line.as_bytes().get(digits + 1), None | Some(b' '))
}

/// A Markdown heading: one to six `#`, then a space or the end of the line.
fn heading(line: &str) -> bool {
    let hashes = line.bytes().take_while(|b| *b == b'#').count();
    (1..=6).contains(&hashes) && matches!(line.as_bytes().get(hashes), None | Some(b' '))
}

/// The lines of `///` comments (`#[doc = "..."]` string literals), each without rustdoc's one
/// leading space; `None` when some `#[doc]` is not a string literal (`#[doc = include_str!(..)]`),
/// whose text only the compiler knows.
pub(crate) fn doc_lines(attrs: &[syn::Attribute]) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    for attr in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let syn::Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
        else {
            return None;
        };
        let line = s.value();
        lines.push(line.strip_prefix(' ').map(str::to_owned).unwrap_or(line));
    }
    Some(lines)
}

#[cfg(test)]
mod tests {
    use super::reflow;

    #[test]
    fn lines_of_a_paragraph_are_joined_and_paragraphs_kept() {
        assert_eq!(
            reflow("Look up an order\nby its id.\n\nRead only;\n  safe to retry.\n"),
            "Look up an order by its id.\n\nRead only; safe to retry."
        );
        assert_eq!(reflow("One.\n\n\n\nTwo."), "One.\n\nTwo.");
        assert_eq!(reflow("\n  Trimmed.  \n\n"), "Trimmed.");
        assert_eq!(reflow(""), "");
    }

    #[test]
    fn list_items_keep_their_lines_and_take_their_continuations() {
        assert_eq!(
            reflow(
                "Modes:\n- `fast`: skips the\n  check\n- `slow`\n  * nested\n1. first\n2) second"
            ),
            "Modes:\n- `fast`: skips the check\n- `slow`\n  * nested\n1. first\n2) second"
        );
        // Not list items: a hyphenated word, a number in a sentence.
        assert_eq!(
            reflow("a well-\nknown id\n2024 was\nthe year,\n#1 in sales"),
            "a well- known id 2024 was the year, #1 in sales"
        );
    }

    #[test]
    fn code_fences_headings_and_tables_keep_their_lines() {
        assert_eq!(
            reflow("Example:\n```json\n{\"id\": 1,\n\n \"x\": 2}\n```\nThen\nmore."),
            "Example:\n```json\n{\"id\": 1,\n\n \"x\": 2}\n```\nThen more."
        );
        assert_eq!(
            reflow("# Title\nText\nhere.\n| a | b |\n| 1 | 2 |"),
            "# Title\nText here.\n| a | b |\n| 1 | 2 |"
        );
    }
}
