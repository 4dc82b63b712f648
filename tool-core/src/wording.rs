//! English for messages to a model. A leaf: it imports nothing else of the crate.

/// "an order", "a customer".
pub(crate) fn article(kind: &str) -> String {
    let vowel = kind
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} `{kind}`", if vowel { "an" } else { "a" })
}

/// The parts joined into one string of exactly their length: one allocation, no formatting
/// machinery (a failed call's messages are built from a handful of parts each).
pub(crate) fn concat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// "`{field}` must be {expected}, got {got}".
pub(crate) fn must_be(field: &str, expected: &str, got: &str) -> String {
    concat(&["`", field, "` must be ", expected, ", got ", got])
}

/// `n` in decimal at the end of `out`, without the formatting machinery.
pub(crate) fn push_number(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(char::from(d));
    }
}
