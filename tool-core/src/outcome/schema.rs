//! A tool's input schema as its spec and its failed calls share it.

use serde_json::value::RawValue;
use serde_json::Value;

/// A tool's input schema as a failed call's envelope carries it: the tree, and its compact text,
/// written on the tool's first failed call and copied into every later envelope. Escaping a
/// schema of a few hundred bytes again on every failure was about a third of a shape failure's
/// `to_model_string` (6,000 of 19,000 instructions). A tool's spec and its failures share one.
/// It also keeps the plan the fingerprint of a call follows, compiled on the tool's first
/// side-effecting call: reading the schema on every call was a third of the fingerprint's cost.
#[derive(Debug)]
pub(crate) struct ToolSchema {
    tree: Value,
    text: std::sync::OnceLock<Option<Box<RawValue>>>,
    plan: std::sync::OnceLock<crate::idempotency::canonical::Plan>,
}

impl ToolSchema {
    pub(crate) fn new(tree: Value) -> ToolSchema {
        ToolSchema {
            tree,
            text: std::sync::OnceLock::new(),
            plan: std::sync::OnceLock::new(),
        }
    }

    /// What the schema says about each place of the arguments, for their fingerprint.
    pub(crate) fn plan(&self) -> &crate::idempotency::canonical::Plan {
        self.plan
            .get_or_init(|| crate::idempotency::canonical::Plan::compile(&self.tree))
    }

    /// Its compact text, written the first time it is asked for.
    pub(super) fn text(&self) -> Option<&RawValue> {
        self.text
            .get_or_init(|| {
                let text = serde_json::to_string(&self.tree).ok()?;
                RawValue::from_string(text).ok()
            })
            .as_deref()
    }
}

impl std::ops::Deref for ToolSchema {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.tree
    }
}
