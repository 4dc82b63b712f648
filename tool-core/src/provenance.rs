//! Provenance: an identifier the model passes must be one a tool returned (seed 000, "Hallucinated
//! parameters": "when a tool result returns identifiers, tag them as known-valid in the working
//! context, and validate that identifier arguments in the next call match a known-valid value").
//!
//! - `#[tool(grounds(order = "id"))]`: every value at `id` in the tool's result (arrays are
//!   walked at every step, so `id` covers an `Order` and a `Vec<Order>`; `lines.sku` reaches
//!   into nested lists) is an `order` id known to the session. An empty path grounds the result
//!   itself (a tool returning a list of ids).
//! - `#[arg(grounded = "order")]`: the argument (a string or an integer, or an `Option` or `Vec`
//!   of them) must be a known `order` id of the session, else the call fails with
//!   `ungrounded_identifier`, naming the tools that return such ids.
//! - [`Session::ground`](crate::Session::ground): the application grounds ids it knows itself
//!   (the signed-in customer's account, what the user clicked).
//!
//! The ids live with the [`Session`], one conversation each (at most
//! [`MAX_IDS_PER_KIND`] per kind, the oldest forgotten first). A call outside a session
//! ([`Registry::call`](crate::Registry::call)) belongs to no conversation: nothing it returns is
//! remembered, and a grounded argument is refused there.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::call::Session;
use crate::outcome::Violation;
use crate::validate::{escape_pointer, preview_str, Violations};

/// How many ids of one kind a session remembers; beyond it the oldest is forgotten.
pub const MAX_IDS_PER_KIND: usize = 10_000;

/// Where a tool's result carries ids of a kind (`#[tool(grounds(kind = "path"))]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grounds {
    kind: &'static str,
    path: &'static str,
}

impl Grounds {
    /// Ids of `kind` at `path` in the result: field names joined by `.`, arrays walked at
    /// every step; `""` is the result itself.
    pub const fn new(kind: &'static str, path: &'static str) -> Self {
        Grounds { kind, path }
    }

    /// The kind of id.
    pub const fn kind(&self) -> &'static str {
        self.kind
    }

    /// Where in the result.
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// Every id this declaration finds in a result.
    pub(crate) fn ids_in(&self, result: &Value, out: &mut Vec<String>) {
        let steps: Vec<&str> = self.path.split('.').filter(|s| !s.is_empty()).collect();
        walk(result, &steps, out);
    }
}

fn walk(value: &Value, steps: &[&str], out: &mut Vec<String>) {
    match (value, steps.split_first()) {
        (Value::Array(items), _) => items.iter().for_each(|item| walk(item, steps, out)),
        (Value::Object(map), Some((first, rest))) => {
            if let Some(next) = map.get(*first) {
                walk(next, rest, out);
            }
        }
        (Value::String(s), None) => out.push(s.clone()),
        (Value::Number(n), None) => out.push(n.to_string()),
        _ => {}
    }
}

/// The ids a session knows, by kind.
#[derive(Default)]
pub(crate) struct Grounded {
    kinds: Mutex<HashMap<String, Ids>>,
}

#[derive(Default)]
struct Ids {
    known: HashSet<String>,
    order: VecDeque<String>,
}

impl Grounded {
    pub(crate) fn record(&self, kind: &str, ids: impl IntoIterator<Item = String>) {
        let mut kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = kinds.entry(kind.to_owned()).or_default();
        for id in ids {
            if entry.known.insert(id.clone()) {
                entry.order.push_back(id);
                if entry.order.len() > MAX_IDS_PER_KIND {
                    if let Some(oldest) = entry.order.pop_front() {
                        entry.known.remove(&oldest);
                    }
                }
            }
        }
    }

    pub(crate) fn contains(&self, kind: &str, id: &str) -> bool {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        kinds.get(kind).is_some_and(|ids| ids.known.contains(id))
    }
}

impl fmt::Debug for Grounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = self.kinds.lock().unwrap_or_else(PoisonError::into_inner);
        let counts: HashMap<&str, usize> = kinds
            .iter()
            .map(|(k, v)| (k.as_str(), v.known.len()))
            .collect();
        f.debug_map().entries(counts).finish()
    }
}

/// What a grounded argument may hold: identifiers as text.
#[diagnostic::on_unimplemented(
    message = "`grounded` checks identifiers, and `{Self}` is not one",
    label = "not a string or an integer",
    note = "`#[arg(grounded = \"kind\")]` applies to a `String` or an integer, or an `Option` or `Vec` of them"
)]
pub trait Identifier {
    /// Calls `f` with every id the value holds (none for `None`, each element of a list).
    fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>));
}

impl Identifier for str {
    fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>)) {
        f(Cow::Borrowed(self));
    }
}

impl Identifier for String {
    fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>)) {
        f(Cow::Borrowed(self));
    }
}

macro_rules! integer_ids {
    ($($t:ty),*) => {$(
        impl Identifier for $t {
            fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>)) {
                f(Cow::Owned(self.to_string()));
            }
        }
    )*};
}
integer_ids!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);

impl<T: Identifier> Identifier for Option<T> {
    fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>)) {
        if let Some(v) = self {
            v.each_id(f);
        }
    }
}

impl<T: Identifier> Identifier for Vec<T> {
    fn each_id(&self, f: &mut dyn FnMut(Cow<'_, str>)) {
        self.iter().for_each(|v| v.each_id(f));
    }
}

/// The check `#[arg(grounded = "kind")]` generates: every id in `value` must be known to the
/// session as a `kind` id.
pub fn check<T: Identifier + ?Sized>(
    value: &T,
    field: &str,
    kind: &str,
    session: &Session,
    report: &mut Violations,
) {
    value.each_id(&mut |id| {
        if !session.is_grounded(kind, &id) {
            let shown = preview_str(&id);
            report.push(Violation {
                path: format!("/{}", escape_pointer(field)),
                rule: "grounded",
                expected: format!("{} id a tool returned in this conversation", article(kind)),
                got: Some(shown.clone()),
                message: format!(
                    "`{field}` is {shown}, {} id no tool has returned in this conversation",
                    article(kind)
                ),
            });
        }
    });
}

/// "an order", "a customer".
pub(crate) fn article(kind: &str) -> String {
    let vowel = kind
        .chars()
        .next()
        .is_some_and(|c| "aeiouAEIOU".contains(c));
    format!("{} `{kind}`", if vowel { "an" } else { "a" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(path: &'static str, value: Value) -> Vec<String> {
        let mut out = Vec::new();
        Grounds::new("k", path).ids_in(&value, &mut out);
        out
    }

    #[test]
    fn paths_walk_objects_and_every_array() {
        let orders = json!([{"id": "A1", "lines": [{"sku": "S1"}, {"sku": "S2"}]}, {"id": "A2"}]);
        assert_eq!(ids("id", orders.clone()), ["A1", "A2"]);
        assert_eq!(ids("lines.sku", orders), ["S1", "S2"]);
        assert_eq!(ids("id", json!({"id": 42})), ["42"]);
        assert_eq!(ids("", json!(["A1", "A2"])), ["A1", "A2"]);
        assert!(ids("id", json!({"other": "A1"})).is_empty());
        assert!(ids("id", json!({"id": {"nested": "A1"}})).is_empty());
    }

    #[test]
    fn a_session_forgets_the_oldest_ids_beyond_its_limit() {
        let grounded = Grounded::default();
        grounded.record("order", (0..=MAX_IDS_PER_KIND).map(|i| i.to_string()));
        assert!(!grounded.contains("order", "0"));
        assert!(grounded.contains("order", "1"));
        assert!(grounded.contains("order", &MAX_IDS_PER_KIND.to_string()));
        assert!(!grounded.contains("customer", "1"));
    }

    #[test]
    fn articles_read_naturally() {
        assert_eq!(article("order"), "an `order`");
        assert_eq!(article("customer"), "a `customer`");
    }
}
