//! Provenance: an identifier the model passes must be one a tool returned. A model that invents
//! an order id makes a well-formed call that the schema accepts; the only defence is to remember
//! the ids tools returned in the conversation and accept only those.
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
//! The ids live in the session's `ConversationMemory`, one conversation each (the default memory
//! keeps at most [`MAX_IDS_PER_KIND`](crate::conversation::MAX_IDS_PER_KIND) per kind, the oldest
//! forgotten first), or in its [`ConversationStore`](crate::conversation::ConversationStore) when
//! it has one ([`Session::with_store`](crate::Session::with_store)), so an id grounded on one
//! replica is accepted on another and after a restart. A call outside a session
//! ([`Registry::call`](crate::Registry::call)) belongs to no conversation: nothing it returns is
//! remembered, and a grounded argument is refused there.

use std::borrow::Cow;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::conversation::{ConversationMemory, Grounding};
use crate::outcome::Violations;
use crate::outcome::{ErrorKind, Failure, Violation};
use crate::session::Session;
pub use crate::tool::grounds::Grounds;
use crate::tool::spec::FieldMeta;
use crate::validate::{escape_pointer, preview_str};
use crate::wording::article;

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
/// conversation as a `kind` id.
pub fn check<T: Identifier + ?Sized>(
    value: &T,
    field: &str,
    kind: &str,
    known: &dyn Grounding,
    report: &mut Violations,
) {
    value.each_id(&mut |id| {
        if !known.is_grounded(kind, &id) {
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

/// For each kind of id, the tools whose results carry it: named in `ungrounded_identifier` so
/// the model knows where to look an id up.
pub(crate) type Finders = HashMap<&'static str, Vec<Arc<str>>>;

/// `ungrounded_identifier`: every id no tool returned (`violations`), and which tools return
/// ids of the kinds that were refused. Only the refused fields' kinds count: a model told to
/// look a `member` id up with a tool that returns `book` ids calls the wrong tool. Nor does it
/// name the tool whose call was the conversation's latest successful grounding call when that
/// call returned no id of the kind: sent straight back to it, the model would loop.
#[cold]
pub(crate) fn ungrounded(
    violations: Vec<Violation>,
    fields: &[FieldMeta],
    finders: &Finders,
    session: &Session,
) -> Failure {
    let mut message = crate::validate::summarize(&violations);
    if !message.ends_with('.') {
        message.push('.');
    }
    let kinds = refused_kinds(&violations, fields);
    let sources: Vec<Sources> = kinds
        .iter()
        .map(|kind| Sources::of(kind, finders, session))
        .collect();
    message.push_str(&lookup_hint(&sources));
    let mut failure = Failure::new(ErrorKind::UngroundedIdentifier, message);
    failure.violations = violations;
    failure
}

/// The kinds of the grounded fields `violations` refused, in the order they were refused,
/// each once.
fn refused_kinds(violations: &[Violation], fields: &[FieldMeta]) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    for violation in violations.iter().filter(|v| v.rule == "grounded") {
        let kind = fields.iter().find_map(|field| {
            let kind = field.grounded_kind()?;
            let path = violation.path.strip_prefix('/')?;
            (path == escape_pointer(field.name())).then_some(kind)
        });
        if let Some(kind) = kind.filter(|kind| !kinds.contains(kind)) {
            kinds.push(kind);
        }
    }
    kinds
}

/// Where ids of one kind come from: the tools to look one up with, and those that return
/// such ids but just returned none (the latest successful grounding call here).
struct Sources<'a> {
    kind: &'a str,
    /// `` `a` or `b` ``: the tools worth calling; `None` when there are none.
    tools: Option<String>,
    /// `` `a` and `b` ``: the tools that just returned no id of the kind; `None` when none did.
    came_back_empty: Option<String>,
}

impl<'a> Sources<'a> {
    fn of(kind: &'a str, finders: &Finders, session: &Session) -> Self {
        let mut names: Vec<&str> = finders
            .get(kind)
            .map(|tools| tools.iter().map(|name| &**name).collect())
            .unwrap_or_default();
        names.sort_unstable();
        names.dedup();
        let (empty, tools): (Vec<&str>, Vec<&str>) = names
            .into_iter()
            .partition(|tool| session.came_back_empty(kind, tool));
        let list = |names: Vec<&str>, joint: &str| {
            let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            (!names.is_empty()).then(|| names.join(joint))
        };
        Sources {
            kind,
            tools: list(tools, " or "),
            came_back_empty: list(empty, " and "),
        }
    }
}

/// Where the model finds ids of the refused kinds: the tools that return each kind and were
/// not just called without one, a word that those just called found none, or the user for a
/// kind no tool returns.
fn lookup_hint(sources: &[Sources<'_>]) -> String {
    match sources {
        [one] => match (&one.tools, &one.came_back_empty) {
            (Some(tools), _) => format!(" Look it up first with {tools}; never invent ids."),
            (None, Some(empty)) => format!(
                " {empty} just returned no {} id, so there is none to use yet: call it again only with other arguments, or ask the user for the id; never invent one.",
                bare(one.kind)
            ),
            (None, None) => " Use an id the user or a tool gave you; never invent one.".to_owned(),
        },
        sources => {
            let (mut found, mut given, mut none) = (Vec::new(), Vec::new(), Vec::new());
            for source in sources {
                match (&source.tools, &source.came_back_empty) {
                    (Some(tools), _) => {
                        found.push(format!("{} id with {tools}", article(source.kind)));
                    }
                    (None, Some(empty)) => {
                        none.push(format!("{empty} just returned no {} id", bare(source.kind)));
                        given.push(format!("{} id", article(source.kind)));
                    }
                    (None, None) => given.push(format!("{} id", article(source.kind))),
                }
            }
            let mut parts = Vec::new();
            if !found.is_empty() {
                parts.push(format!("Look up {}", found.join(" and ")));
            }
            if !given.is_empty() {
                let use_ = if found.is_empty() { "Use" } else { "use" };
                parts.push(format!("{use_} {} the user gave you", given.join(" and ")));
            }
            if parts.is_empty() {
                return " Use an id the user or a tool gave you; never invent one.".to_owned();
            }
            let mut hint = String::new();
            if !none.is_empty() {
                hint = format!(" {}.", none.join("; "));
            }
            format!("{hint} {}; never invent ids.", parts.join("; "))
        }
    }
}

/// `` `order` ``: the kind in backticks, without an article.
fn bare(kind: &str) -> String {
    format!("`{kind}`")
}

/// Remembers the ids a successful result carries, as `grounds` declares them, and says for
/// each kind declared whether the result held an id of it.
pub(crate) fn remember(
    grounds: &[Grounds],
    data: &RawValue,
    memory: &dyn ConversationMemory,
) -> Vec<(&'static str, bool)> {
    let Ok(value) = serde_json::from_str::<Value>(data.get()) else {
        return Vec::new();
    };
    let mut kinds: Vec<(&'static str, bool)> = Vec::with_capacity(grounds.len());
    for grounds in grounds {
        let mut ids = Vec::new();
        grounds.ids_in(&value, &mut ids);
        let produced = !ids.is_empty();
        memory.record_ids(grounds.kind(), ids);
        match kinds.iter_mut().find(|(kind, _)| *kind == grounds.kind()) {
            Some((_, any)) => *any |= produced,
            None => kinds.push((grounds.kind(), produced)),
        }
    }
    kinds
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

    /// Ids known to a conversation: `order` ids `A1` and `42`.
    struct Known;

    impl Grounding for Known {
        fn is_grounded(&self, kind: &str, id: &str) -> bool {
            kind == "order" && matches!(id, "A1" | "42")
        }
    }

    /// The ids `check` refuses in `value`, as the violations name them.
    fn refused<T: Identifier + ?Sized>(value: &T) -> Vec<String> {
        let mut report = Violations::new();
        check(value, "order_id", "order", &Known, &mut report);
        report
            .into_vec()
            .into_iter()
            .map(|v| {
                assert_eq!(v.path, "/order_id");
                assert_eq!(v.rule, "grounded");
                assert_eq!(
                    v.expected,
                    "an `order` id a tool returned in this conversation"
                );
                v.got.unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn every_identifier_shape_is_checked_id_by_id() {
        assert!(refused("A1").is_empty());
        assert_eq!(refused("B7"), [r#""B7""#]);
        assert!(refused(&String::from("A1")).is_empty());
        assert_eq!(refused(&String::from("B7")), [r#""B7""#]);
        assert!(refused(&42u64).is_empty());
        assert_eq!(refused(&43i32), [r#""43""#]);
        assert!(
            refused(&None::<String>).is_empty(),
            "no id, nothing to check"
        );
        assert_eq!(refused(&Some("B7".to_owned())), [r#""B7""#]);
        assert_eq!(
            refused(&vec!["A1".to_owned(), "B7".to_owned(), "C9".to_owned()]),
            [r#""B7""#, r#""C9""#]
        );
    }

    #[test]
    fn articles_read_naturally() {
        assert_eq!(article("order"), "an `order`");
        assert_eq!(article("customer"), "a `customer`");
    }
}
