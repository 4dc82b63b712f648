//! Field rules: the runtime half of `#[arg(range/length/pattern/one_of/validate)]`.
//!
//! The macro calls these on the typed, already-parsed arguments; the schema half of the same
//! declaration is written into the input schema from [`Rule`](crate::tool::Rule). An absent optional
//! value (`None`) passes every rule: "optional" means the model may leave it out.
//!
//! ```
//! use toolwright_core::validate::{rules, Violations};
//! use toolwright_core::tool::Number;
//!
//! let mut report = Violations::new();
//! rules::range(&50u32, "max_results", Some(Number::int(1)), Some(Number::int(20)), &mut report);
//! rules::length("", "query", Some(1), Some(300), &mut report);
//! assert_eq!(report.len(), 2);
//! assert_eq!(report.as_slice()[0].message, "`max_results` must be at most 20, got 50");
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::sync::OnceLock;

use regex::Regex;

use super::{counted, length_expected, preview_str, Violations};
use crate::tool::Number;

/// A value `range` can bound.
#[diagnostic::on_unimplemented(
    message = "`range` needs a number, but this argument is `{Self}`",
    label = "not an integer or float",
    note = "`#[arg(range(min = .., max = ..))]` applies to integers, floats and `Option`s of them; use `length` for strings and lists"
)]
pub trait Numeric {
    /// The value as `f64`, `None` when absent.
    fn numeric(&self) -> Option<f64>;
}

macro_rules! numeric {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            #[allow(clippy::cast_lossless, clippy::cast_precision_loss)]
            fn numeric(&self) -> Option<f64> { Some(*self as f64) }
        }
    )*};
}
numeric!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

impl<T: Numeric> Numeric for Option<T> {
    fn numeric(&self) -> Option<f64> {
        self.as_ref().and_then(Numeric::numeric)
    }
}

/// A value `length` can measure.
#[diagnostic::on_unimplemented(
    message = "`length` needs a string, list or map, but this argument is `{Self}`",
    label = "has no length",
    note = "`#[arg(length(min = .., max = ..))]` applies to `String`, `Vec<T>`, maps and `Option`s of them; use `range` for numbers"
)]
pub trait Measured {
    /// The length and its unit (characters for strings, as JSON Schema counts), `None` when absent.
    fn measure(&self) -> Option<(usize, &'static str)>;
}

impl Measured for str {
    fn measure(&self) -> Option<(usize, &'static str)> {
        Some((self.chars().count(), "characters"))
    }
}

impl Measured for String {
    fn measure(&self) -> Option<(usize, &'static str)> {
        self.as_str().measure()
    }
}

impl<T> Measured for Vec<T> {
    fn measure(&self) -> Option<(usize, &'static str)> {
        Some((self.len(), "items"))
    }
}

impl<K, V, S> Measured for HashMap<K, V, S> {
    fn measure(&self) -> Option<(usize, &'static str)> {
        Some((self.len(), "entries"))
    }
}

impl<K, V> Measured for BTreeMap<K, V> {
    fn measure(&self) -> Option<(usize, &'static str)> {
        Some((self.len(), "entries"))
    }
}

impl<T: Measured> Measured for Option<T> {
    fn measure(&self) -> Option<(usize, &'static str)> {
        self.as_ref().and_then(Measured::measure)
    }
}

/// A value `pattern` and string `one_of` can read as text.
#[diagnostic::on_unimplemented(
    message = "`pattern` and string `one_of` need a string, but this argument is `{Self}`",
    label = "not a string",
    note = "they apply to `String` and `Option<String>`"
)]
pub trait Textual {
    /// The text, `None` when absent.
    fn text(&self) -> Option<&str>;
}

impl Textual for str {
    fn text(&self) -> Option<&str> {
        Some(self)
    }
}

impl Textual for String {
    fn text(&self) -> Option<&str> {
        Some(self)
    }
}

impl<T: Textual> Textual for Option<T> {
    fn text(&self) -> Option<&str> {
        self.as_ref().and_then(Textual::text)
    }
}

fn number_text(v: f64) -> String {
    // Integers print without a fraction: "50", not "50.0".
    format!("{v}")
}

/// Checks an inclusive numeric range.
pub fn range<T: Numeric + ?Sized>(
    value: &T,
    field: &str,
    min: Option<Number>,
    max: Option<Number>,
    report: &mut Violations,
) {
    let Some(v) = value.numeric() else { return };
    let below = min.is_some_and(|m| v < m.value());
    let above = max.is_some_and(|m| v > m.value());
    // NaN compares false everywhere; it is never inside a declared range.
    let nan = v.is_nan() && (min.is_some() || max.is_some());
    if !(below || above || nan) {
        return;
    }
    let expected = match (min, max) {
        (Some(lo), Some(hi)) if nan => format!("between {lo} and {hi}"),
        (Some(lo), _) if below || (nan && max.is_none()) => format!("at least {lo}"),
        (_, Some(hi)) => format!("at most {hi}"),
        (Some(lo), None) => format!("at least {lo}"),
        (None, None) => return,
    };
    report.field(field, "range", expected, number_text(v));
}

/// Checks an inclusive length range (characters for strings, items for lists).
pub fn length<T: Measured + ?Sized>(
    value: &T,
    field: &str,
    min: Option<u64>,
    max: Option<u64>,
    report: &mut Violations,
) {
    let Some((len, unit)) = value.measure() else {
        return;
    };
    let len64 = len as u64;
    let expected = if let Some(m) = min.filter(|m| len64 < *m) {
        length_expected(true, m, unit)
    } else if let Some(m) = max.filter(|m| len64 > *m) {
        length_expected(false, m, unit)
    } else {
        return;
    };
    report.field(field, "length", expected, counted(len64, unit));
}

/// A `pattern` compiled on first use and shared by every later call.
pub struct LazyPattern {
    source: &'static str,
    compiled: OnceLock<Option<Regex>>,
}

impl LazyPattern {
    /// A pattern, not yet compiled.
    pub const fn new(source: &'static str) -> Self {
        LazyPattern {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The pattern as declared.
    pub fn source(&self) -> &'static str {
        self.source
    }

    fn regex(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| Regex::new(self.source).ok())
            .as_ref()
    }
}

/// Checks a `pattern`. Like JSON Schema's keyword it searches anywhere in the string; anchor the
/// pattern (`^...$`) to match the whole value.
pub fn pattern<T: Textual + ?Sized>(
    value: &T,
    field: &str,
    pattern: &LazyPattern,
    report: &mut Violations,
) {
    let Some(text) = value.text() else { return };
    // The macro rejects patterns that do not compile, so `None` only happens for hand-written
    // tools; an uncompilable pattern cannot reject anything.
    let Some(re) = pattern.regex() else { return };
    if !re.is_match(text) {
        report.field(
            field,
            "pattern",
            format!("a string matching `{}`", pattern.source),
            preview_str(text),
        );
    }
}

fn list<T: Display>(options: &[T], quote: bool) -> String {
    let items: Vec<String> = options
        .iter()
        .map(|o| {
            if quote {
                format!("{:?}", o.to_string())
            } else {
                o.to_string()
            }
        })
        .collect();
    items.join(", ")
}

/// Checks a string `one_of`.
pub fn one_of<T: Textual + ?Sized>(
    value: &T,
    field: &str,
    options: &[&str],
    report: &mut Violations,
) {
    let Some(text) = value.text() else { return };
    if !options.contains(&text) {
        report.field(
            field,
            "one_of",
            format!("one of {}", list(options, true)),
            preview_str(text),
        );
    }
}

/// Checks a numeric `one_of`.
pub fn one_of_numbers<T: Numeric + ?Sized>(
    value: &T,
    field: &str,
    options: &[Number],
    report: &mut Violations,
) {
    let Some(v) = value.numeric() else { return };
    if !options.iter().any(|o| o.value() == v) {
        report.field(
            field,
            "one_of",
            format!("one of {}", list(options, false)),
            number_text(v),
        );
    }
}

/// Runs a custom per-field check, `fn(&T) -> Result<(), E>` where `E: Display`; the error's text
/// becomes the message.
pub fn custom<T: ?Sized, E: Display>(
    value: &T,
    field: &str,
    check: impl FnOnce(&T) -> Result<(), E>,
    report: &mut Violations,
) {
    if let Err(e) = check(value) {
        let message = e.to_string();
        report.push(crate::outcome::Violation {
            path: format!("/{}", super::escape_pointer(field)),
            rule: "custom",
            expected: message.clone(),
            got: None,
            message: format!("`{field}`: {message}"),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: impl FnOnce(&mut Violations)) -> Vec<String> {
        let mut r = Violations::new();
        f(&mut r);
        r.into_vec().into_iter().map(|v| v.message).collect()
    }

    #[test]
    fn range_reports_the_broken_bound_and_the_value() {
        let (lo, hi) = (Some(Number::float(0.01)), Some(Number::float(500.0)));
        assert_eq!(
            run(|r| range(&0.0f64, "amount", lo, hi, r)),
            ["`amount` must be at least 0.01, got 0"]
        );
        assert_eq!(
            run(|r| range(&900.5f64, "amount", lo, hi, r)),
            ["`amount` must be at most 500, got 900.5"]
        );
        assert!(run(|r| range(&5.0f64, "amount", lo, hi, r)).is_empty());
        assert!(run(|r| range(&None::<f64>, "amount", lo, hi, r)).is_empty());
        assert_eq!(
            run(|r| range(&f64::NAN, "amount", lo, hi, r)),
            ["`amount` must be between 0.01 and 500, got NaN"]
        );
    }

    #[test]
    fn length_counts_characters_not_bytes() {
        assert!(run(|r| length("ééé", "name", None, Some(3), r)).is_empty());
        assert_eq!(
            run(|r| length("", "query", Some(1), None, r)),
            ["`query` must be non-empty, got 0 characters"]
        );
        assert_eq!(
            run(|r| length(&vec![1, 2, 3], "ids", None, Some(2), r)),
            ["`ids` must be at most 2 items long, got 3 items"]
        );
        assert_eq!(
            run(|r| length(&Vec::<u8>::new(), "ids", Some(1), None, r)),
            ["`ids` must be non-empty, got 0 items"]
        );
        assert_eq!(
            run(|r| length("abcd", "code", Some(1), Some(1), r)),
            ["`code` must be at most 1 character long, got 4 characters"]
        );
    }

    #[test]
    fn pattern_and_one_of_quote_what_came() {
        static P: LazyPattern = LazyPattern::new("^[A-Z]{3}$");
        assert_eq!(
            run(|r| pattern("sfo", "origin", &P, r)),
            ["`origin` must be a string matching `^[A-Z]{3}$`, got \"sfo\""]
        );
        assert!(run(|r| pattern("SFO", "origin", &P, r)).is_empty());
        assert_eq!(
            run(|r| one_of("premium", "cabin", &["economy", "business"], r)),
            ["`cabin` must be one of \"economy\", \"business\", got \"premium\""]
        );
        assert_eq!(
            run(|r| one_of_numbers(&3u8, "stars", &[Number::int(1), Number::int(5)], r)),
            ["`stars` must be one of 1, 5, got 3"]
        );
    }
}
