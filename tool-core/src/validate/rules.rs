//! Field rules: the runtime half of `#[arg(range/length/pattern/one_of/validate)]`.
//!
//! The macro calls these on the typed, already-parsed arguments; the schema half of the same
//! declaration is written into the input schema from [`Rule`](crate::tool::Rule). An absent optional
//! value (`None`) passes every rule: "optional" means the model may leave it out.
//!
//! ```
//! use toolwright::outcome::Violations;
//! use toolwright::validate::rules;
//! use toolwright::tool::Number;
//!
//! let mut report = Violations::new();
//! rules::range(&50u32, "max_results", Some(Number::int(1)), Some(Number::int(20)), &mut report);
//! rules::length("", "query", Some(1), Some(300), &mut report);
//! assert_eq!(report.len(), 2);
//! assert_eq!(report.as_slice()[0].message, "`max_results` must be at most 20, got 50");
//! ```

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::sync::OnceLock;

use regex::Regex;

use super::{counted, length_expected, preview_str};
use crate::outcome::Violations;
use crate::tool::spec::Number;

/// A value `range` can bound.
#[diagnostic::on_unimplemented(
    message = "`range` needs a number, but this argument is `{Self}`",
    label = "not an integer or float",
    note = "`#[arg(range(min = .., max = ..))]` applies to integers, floats and `Option`s of them; use `length` for strings and lists"
)]
pub trait Numeric {
    /// The value, integers exact, `None` when absent.
    fn numeric(&self) -> Option<NumericValue>;
}

/// A value as [`range`] and [`one_of_numbers`] compare it: an integer (of any width) exactly,
/// so `u64::MAX` is not read as the `f64` 18446744073709551616, and a float as `f64`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NumericValue {
    /// A signed integer.
    Signed(i128),
    /// An unsigned integer.
    Unsigned(u128),
    /// A float.
    Float(f64),
}

impl NumericValue {
    /// How the value compares with `bound`: exactly when both are integers, as `f64` otherwise;
    /// `None` for NaN.
    pub fn cmp_bound(self, bound: Number) -> Option<Ordering> {
        match (self, bound.integer()) {
            (NumericValue::Signed(v), Some(b)) => Some(v.cmp(&b)),
            (NumericValue::Unsigned(v), Some(b)) => Some(match u128::try_from(b) {
                Ok(b) => v.cmp(&b),
                Err(_) => Ordering::Greater,
            }),
            (v, _) => v.as_f64().partial_cmp(&bound.value()),
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn as_f64(self) -> f64 {
        match self {
            NumericValue::Signed(v) => v as f64,
            NumericValue::Unsigned(v) => v as f64,
            NumericValue::Float(v) => v,
        }
    }

    fn is_nan(self) -> bool {
        matches!(self, NumericValue::Float(v) if v.is_nan())
    }
}

impl Display for NumericValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Integers exactly as they are, floats without a fraction when whole: "50", not "50.0".
        match self {
            NumericValue::Signed(v) => write!(f, "{v}"),
            NumericValue::Unsigned(v) => write!(f, "{v}"),
            NumericValue::Float(v) => write!(f, "{v}"),
        }
    }
}

macro_rules! numeric {
    ($variant:ident as $wide:ty: $($t:ty),*) => {$(
        impl Numeric for $t {
            #[allow(clippy::cast_lossless)]
            fn numeric(&self) -> Option<NumericValue> {
                Some(NumericValue::$variant(*self as $wide))
            }
        }
    )*};
}
numeric!(Signed as i128: i8, i16, i32, i64, i128, isize);
numeric!(Unsigned as u128: u8, u16, u32, u64, u128, usize);
numeric!(Float as f64: f32, f64);

impl<T: Numeric> Numeric for Option<T> {
    fn numeric(&self) -> Option<NumericValue> {
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

/// Checks an inclusive numeric range.
pub fn range<T: Numeric + ?Sized>(
    value: &T,
    field: &str,
    min: Option<Number>,
    max: Option<Number>,
    report: &mut Violations,
) {
    let Some(v) = value.numeric() else { return };
    let below = min.is_some_and(|m| v.cmp_bound(m) == Some(Ordering::Less));
    let above = max.is_some_and(|m| v.cmp_bound(m) == Some(Ordering::Greater));
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
    report.field(field, "range", expected, v.to_string());
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
///
/// The pattern is JSON Schema's, an ECMA-262 regular expression, where `\d` is `[0-9]`, `\w` is
/// `[A-Za-z0-9_]` and `.` stops at every line terminator; in Rust's `regex` the first two also
/// match other scripts' digits and letters. It is translated as the `jsonschema` validator
/// translates it (the `jsonschema-regex` crate), so the check accepts exactly the strings the
/// schema keyword accepts.
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
            .get_or_init(|| {
                let translated = jsonschema_regex::to_rust_regex(self.source).ok()?;
                Regex::new(&translated).ok()
            })
            .as_ref()
    }

    /// Whether `text` matches, searched anywhere as JSON Schema does; `None` when the pattern
    /// cannot be translated or compiled (the macro rejects such patterns).
    pub fn is_match(&self, text: &str) -> Option<bool> {
        self.regex().map(|re| re.is_match(text))
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
    // The macro rejects patterns that do not translate or compile, so `None` only happens for
    // hand-written tools; such a pattern cannot reject anything.
    if pattern.is_match(text) == Some(false) {
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
    if !options
        .iter()
        .any(|o| v.cmp_bound(*o) == Some(Ordering::Equal))
    {
        report.field(
            field,
            "one_of",
            format!("one of {}", list(options, false)),
            v.to_string(),
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
    fn every_argument_type_is_checked_and_an_absent_option_passes() {
        use std::collections::{BTreeMap, HashMap};
        let name = String::from("abcd");
        assert_eq!(
            run(|r| length(&name, "name", None, Some(3), r)),
            ["`name` must be at most 3 characters long, got 4 characters"]
        );
        assert_eq!(
            run(|r| length(&Some(name.clone()), "name", None, Some(3), r)),
            ["`name` must be at most 3 characters long, got 4 characters"]
        );
        assert!(run(|r| length(&None::<String>, "name", Some(1), None, r)).is_empty());
        let map: HashMap<String, u8> = [("a".into(), 1), ("b".into(), 2)].into();
        assert_eq!(
            run(|r| length(&map, "tags", None, Some(1), r)),
            ["`tags` must be at most 1 entry long, got 2 entries"]
        );
        let tree: BTreeMap<String, u8> = [("a".into(), 1), ("b".into(), 2)].into();
        assert_eq!(
            run(|r| length(&tree, "tags", Some(3), None, r)),
            ["`tags` must be at least 3 entries long, got 2 entries"]
        );
        let (lo, hi) = (Some(Number::int(1)), Some(Number::int(20)));
        assert_eq!(
            run(|r| range(&Some(50u32), "max", lo, hi, r)),
            ["`max` must be at most 20, got 50"]
        );
        assert!(run(|r| range(&None::<u32>, "max", lo, hi, r)).is_empty());
        static P: LazyPattern = LazyPattern::new("^[A-Z]{3}$");
        assert_eq!(P.source(), "^[A-Z]{3}$");
        let text = String::from("sfo");
        assert_eq!(run(|r| pattern(&text, "origin", &P, r)).len(), 1);
        assert_eq!(
            run(|r| pattern(&Some(text.clone()), "origin", &P, r)).len(),
            1
        );
        assert_eq!(
            run(|r| one_of(&Some(text.clone()), "origin", &["SFO"], r)),
            ["`origin` must be one of \"SFO\", got \"sfo\""]
        );
        assert!(run(|r| pattern(&String::from("SFO"), "origin", &P, r)).is_empty());
        assert!(run(|r| one_of(&None::<String>, "origin", &["SFO"], r)).is_empty());
    }

    #[test]
    fn a_custom_check_reports_its_own_words_at_the_field() {
        let check = |v: &u32| {
            if *v > 3 {
                Err("must be 3 or less")
            } else {
                Ok(())
            }
        };
        let mut report = Violations::new();
        custom(&5u32, "seats", check, &mut report);
        custom(&2u32, "seats", check, &mut report);
        let violations = report.into_vec();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].path, "/seats");
        assert_eq!(violations[0].rule, "custom");
        assert_eq!(violations[0].message, "`seats`: must be 3 or less");
    }

    #[test]
    fn bounds_are_inclusive_and_nan_breaks_a_single_bound_too() {
        assert!(run(|r| length("ab", "code", Some(2), Some(2), r)).is_empty());
        assert!(
            run(|r| range(&2u8, "n", Some(Number::int(2)), Some(Number::int(2)), r)).is_empty()
        );
        assert_eq!(
            run(|r| range(&f64::NAN, "amount", Some(Number::int(1)), None, r)),
            ["`amount` must be at least 1, got NaN"]
        );
        assert_eq!(
            run(|r| range(&f64::NAN, "amount", None, Some(Number::int(9)), r)),
            ["`amount` must be at most 9, got NaN"]
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

    #[test]
    fn integer_bounds_compare_exactly() {
        let max = Some(Number::int(9_007_199_254_740_992));
        assert_eq!(
            run(|r| range(&9_007_199_254_740_993u64, "capped", None, max, r)),
            ["`capped` must be at most 9007199254740992, got 9007199254740993"]
        );
        assert!(run(|r| range(&9_007_199_254_740_992u64, "capped", None, max, r)).is_empty());
        let max = Some(Number::uint(u64::MAX - 1));
        assert_eq!(
            run(|r| range(&u64::MAX, "big", None, max, r)),
            ["`big` must be at most 18446744073709551614, got 18446744073709551615"]
        );
        assert!(run(|r| range(&(u64::MAX - 1), "big", None, max, r)).is_empty());
    }

    #[test]
    fn wide_integers_compare_exactly_on_both_sides() {
        let (lo, hi) = (Some(Number::int(i64::MIN)), Some(Number::uint(u64::MAX)));
        assert!(run(|r| range(&i64::MIN, "n", lo, hi, r)).is_empty());
        assert!(run(|r| range(&u64::MAX, "n", lo, hi, r)).is_empty());
        assert_eq!(
            run(|r| range(&u128::MAX, "n", lo, hi, r)),
            [format!(
                "`n` must be at most {}, got {}",
                u64::MAX,
                u128::MAX
            )]
        );
        assert_eq!(
            run(|r| range(&(i128::from(i64::MIN) - 1), "n", lo, hi, r)),
            ["`n` must be at least -9223372036854775808, got -9223372036854775809"]
        );
        // An unsigned value is above every negative bound.
        assert!(run(|r| range(&0u8, "n", Some(Number::int(-1)), None, r)).is_empty());
        assert_eq!(
            run(|r| one_of_numbers(&u64::MAX, "n", &[Number::uint(u64::MAX - 1)], r)),
            ["`n` must be one of 18446744073709551614, got 18446744073709551615"]
        );
    }

    #[test]
    fn patterns_mean_what_json_schema_means() {
        static DIGITS: LazyPattern = LazyPattern::new(r"^A\d{4}$");
        static WORD: LazyPattern = LazyPattern::new(r"^\w+$");
        static SPACE: LazyPattern = LazyPattern::new(r"^\s$");
        // ECMA-262 `\d` is [0-9] and `\w` is [A-Za-z0-9_]; Rust's would take other scripts.
        for other_digits in [
            "A\u{661}\u{662}\u{663}\u{664}",
            "A\u{ff11}\u{ff12}\u{ff13}\u{ff14}",
        ] {
            assert_eq!(DIGITS.is_match(other_digits), Some(false), "{other_digits}");
        }
        assert_eq!(DIGITS.is_match("A1234"), Some(true));
        assert_eq!(
            WORD.is_match("\u{43f}\u{430}\u{440}\u{43e}\u{43b}\u{44c}"),
            Some(false)
        );
        assert_eq!(WORD.is_match("pass_word1"), Some(true));
        // ECMA-262 `\s` is Unicode whitespace, the byte order mark included.
        for space in ["\u{a0}", "\u{2003}", "\u{feff}", "\t"] {
            assert_eq!(SPACE.is_match(space), Some(true), "{space:?}");
        }
    }
}
