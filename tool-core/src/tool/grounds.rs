//! Where a tool's result carries ids, and finding them in a result.

use serde_json::Value;

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
