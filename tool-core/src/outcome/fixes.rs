//! Which fixes a repair applied to a call's arguments: [`Fix`], and the set of them an outcome
//! carries, [`Fixes`].

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// One way the repair pass fixed a call's arguments: a deterministic rule, or the model.
///
/// The names ([`Fix::as_str`]) are what the envelope's `"repaired_by"` lists and what the
/// `toolwright::repair` log event names; they never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Fix {
    /// `code_fence`: the arguments were wrapped in a Markdown code fence (```` ```json ````).
    CodeFence,
    /// `surrounding_prose`: the one JSON object was surrounded by prose ("Here you go: {...}").
    SurroundingProse,
    /// `trailing_comma`: a comma before a closing `}` or `]`.
    TrailingComma,
    /// `single_quotes`: strings or keys in single quotes.
    SingleQuotes,
    /// `unquoted_keys`: object keys without quotes.
    UnquotedKeys,
    /// `double_encoded`: the whole argument object sent as a JSON string.
    DoubleEncoded,
    /// `number_from_string`: `"2"` where the schema wants a number; only when the whole string
    /// is that number.
    NumberFromString,
    /// `bool_from_string`: `"true"` or `"false"` where the schema wants a boolean.
    BoolFromString,
    /// `single_to_array`: one value where the schema wants an array of values of its type.
    SingleToArray,
    /// `null_optional`: `null` for a field the schema lets the model leave out (and that does
    /// not take `null`): the field is left out.
    NullOptional,
    /// `key_case`: an unknown argument that is a case or underscore variant (`maxResults`,
    /// `MAX_RESULTS`) of exactly one known argument. Off unless switched on.
    KeyCase,
    /// `model`: the registry's repairer (usually one more model turn) fixed the arguments.
    Model,
}

impl Fix {
    /// Every fix, in the order the repair pass tries the rules (the model last).
    pub const ALL: &'static [Fix] = &[
        Fix::CodeFence,
        Fix::SurroundingProse,
        Fix::TrailingComma,
        Fix::SingleQuotes,
        Fix::UnquotedKeys,
        Fix::DoubleEncoded,
        Fix::NumberFromString,
        Fix::BoolFromString,
        Fix::SingleToArray,
        Fix::NullOptional,
        Fix::KeyCase,
        Fix::Model,
    ];

    /// The name in the envelope and the log: `trailing_comma`, `number_from_string`, `model`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Fix::CodeFence => "code_fence",
            Fix::SurroundingProse => "surrounding_prose",
            Fix::TrailingComma => "trailing_comma",
            Fix::SingleQuotes => "single_quotes",
            Fix::UnquotedKeys => "unquoted_keys",
            Fix::DoubleEncoded => "double_encoded",
            Fix::NumberFromString => "number_from_string",
            Fix::BoolFromString => "bool_from_string",
            Fix::SingleToArray => "single_to_array",
            Fix::NullOptional => "null_optional",
            Fix::KeyCase => "key_case",
            Fix::Model => "model",
        }
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
}

impl fmt::Display for Fix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Fix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Fix::ALL
            .iter()
            .copied()
            .find(|fix| fix.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a repair rule"))
    }
}

/// A set of [`Fix`]es: what repaired one call, or which rules a repair pass may use. Iterates
/// in [`Fix::ALL`]'s order.
///
/// ```
/// use toolwright::repair::{Fix, Fixes};
///
/// let fixes = Fixes::EMPTY.with(Fix::TrailingComma).with(Fix::CodeFence);
/// assert!(fixes.contains(Fix::CodeFence));
/// assert_eq!(fixes.to_string(), "code_fence,trailing_comma");
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Fixes(u16);

impl Fixes {
    /// No fix.
    pub const EMPTY: Fixes = Fixes(0);

    /// This set and `fix`.
    #[must_use]
    pub const fn with(self, fix: Fix) -> Fixes {
        Fixes(self.0 | fix.bit())
    }

    /// This set without `fix`.
    #[must_use]
    pub const fn without(self, fix: Fix) -> Fixes {
        Fixes(self.0 & !fix.bit())
    }

    /// Adds `fix`.
    pub fn insert(&mut self, fix: Fix) {
        self.0 |= fix.bit();
    }

    /// Whether `fix` is in the set.
    pub const fn contains(self, fix: Fix) -> bool {
        self.0 & fix.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many fixes the set holds.
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The fixes, in [`Fix::ALL`]'s order.
    pub fn iter(self) -> FixesIter {
        self.into_iter()
    }
}

impl FromIterator<Fix> for Fixes {
    fn from_iter<I: IntoIterator<Item = Fix>>(iter: I) -> Self {
        iter.into_iter().fold(Fixes::EMPTY, Fixes::with)
    }
}

impl IntoIterator for Fixes {
    type Item = Fix;
    type IntoIter = FixesIter;

    fn into_iter(self) -> FixesIter {
        FixesIter { set: self, next: 0 }
    }
}

/// The fixes of a [`Fixes`], in [`Fix::ALL`]'s order.
#[derive(Debug, Clone)]
pub struct FixesIter {
    set: Fixes,
    next: usize,
}

impl Iterator for FixesIter {
    type Item = Fix;

    fn next(&mut self) -> Option<Fix> {
        while let Some(fix) = Fix::ALL.get(self.next).copied() {
            self.next += 1;
            if self.set.contains(fix) {
                return Some(fix);
            }
        }
        None
    }
}

impl fmt::Debug for Fixes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for Fixes {
    /// The names joined by commas: `code_fence,number_from_string`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, fix) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(fix.as_str())?;
        }
        Ok(())
    }
}

impl Serialize for Fixes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Fix::as_str))
    }
}
