//! The model's recovery budget ([`RecoveryBudget`]), counted in the conversation's memory.

use super::memory::{ConversationMemory, FailureCategory as Category};
use crate::outcome::{ErrorKind, Outcome};

/// Retries a model gets per category of failure, per tool and conversation: how many times in a
/// row a model may retry a tool after the same kind of failure before the envelope tells it to
/// stop (a budget per category of error keeps an error the model cannot fix from turning into an
/// expensive, unbounded retry loop).
///
/// | category | error types | retries (default) |
/// |---|---|---|
/// | schema violation | `invalid_json`, `unknown_argument`, `schema_mismatch` | 2 |
/// | unknown tool | `unknown_tool` | 1 |
/// | semantic | `semantic_invalid` | 1 |
/// | circuit open | `circuit_open` | 0: never again while it is open |
///
/// Counted per conversation (in the session's
/// [`ConversationMemory`](super::ConversationMemory)) and tool; a success of the tool starts
/// its count again. Once a failure exceeds its category's budget, its envelope says
/// `"retryable": false` and the message ends with why the model should stop and tell the user.
/// Calls outside a session ([`Registry::call`](crate::Registry::call)) are not counted. Set the
/// budgets with [`RegistryBuilder::recovery_budget`](crate::RegistryBuilder::recovery_budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryBudget {
    schema: Option<u32>,
    unknown_tool: Option<u32>,
    semantic: Option<u32>,
    circuit_open: Option<u32>,
}

impl Default for RecoveryBudget {
    /// 2 after a schema violation, 1 after an unknown tool or a semantic failure, 0 while a
    /// breaker is open.
    fn default() -> Self {
        RecoveryBudget {
            schema: Some(2),
            unknown_tool: Some(1),
            semantic: Some(1),
            circuit_open: Some(0),
        }
    }
}

impl RecoveryBudget {
    /// The defaults (2, 1, 1, 0).
    pub const fn new() -> Self {
        RecoveryBudget {
            schema: Some(2),
            unknown_tool: Some(1),
            semantic: Some(1),
            circuit_open: Some(0),
        }
    }

    /// No budget: envelopes never tell the model to stop on count.
    pub const fn unlimited() -> Self {
        RecoveryBudget {
            schema: None,
            unknown_tool: None,
            semantic: None,
            circuit_open: None,
        }
    }

    /// Retries after `invalid_json`, `unknown_argument` and `schema_mismatch`.
    pub const fn schema_violations(mut self, retries: u32) -> Self {
        self.schema = Some(retries);
        self
    }

    /// Retries after `unknown_tool`.
    pub const fn unknown_tools(mut self, retries: u32) -> Self {
        self.unknown_tool = Some(retries);
        self
    }

    /// Retries after `semantic_invalid`.
    pub const fn semantic_failures(mut self, retries: u32) -> Self {
        self.semantic = Some(retries);
        self
    }

    /// Calls of a tool while its breaker is open, after the first.
    pub const fn circuit_open(mut self, retries: u32) -> Self {
        self.circuit_open = Some(retries);
        self
    }

    /// The category of a failure and its budget, for the kinds a budget covers.
    fn category(&self, kind: ErrorKind) -> Option<(Category, Option<u32>)> {
        Some(match kind {
            ErrorKind::InvalidJson | ErrorKind::UnknownArgument | ErrorKind::SchemaMismatch => {
                (Category::Schema, self.schema)
            }
            ErrorKind::UnknownTool => (Category::UnknownTool, self.unknown_tool),
            ErrorKind::SemanticInvalid => (Category::Semantic, self.semantic),
            ErrorKind::CircuitOpen => (Category::CircuitOpen, self.circuit_open),
            _ => return None,
        })
    }
}

fn words(category: Category) -> &'static str {
    match category {
        Category::Schema => "with arguments that do not fit its schema",
        Category::UnknownTool => "with a tool name that does not exist",
        Category::Semantic => "with values that break its business rule",
        Category::CircuitOpen => "while it is out of service",
    }
}

/// Counts the outcome against the budget in the conversation's memory; a failure past its
/// category's budget is marked final (`retryable: false`, and the message says why to stop).
/// Returns whether the outcome is a success after counted failures of its tool: the model
/// called again and got through.
pub(crate) fn apply(
    budget: &RecoveryBudget,
    memory: &dyn ConversationMemory,
    outcome: &mut Outcome,
) -> bool {
    if outcome.is_ok() {
        // Back on track: this tool's counts, and the count of invented names, start again.
        return memory.clear_failures(outcome.tool());
    }
    let Some((key, category, limit)) = counted_as(budget, outcome) else {
        return false;
    };
    let count = memory.count_failure(key, category);
    mark(category, limit, count, outcome);
    false
}

/// The failure in a row a store counted for `outcome` (a conversation kept in a
/// [`ConversationStore`](super::ConversationStore) counts after the call): marked final when
/// past its category's budget.
pub(crate) fn apply_counted(budget: &RecoveryBudget, count: u32, outcome: &mut Outcome) {
    if let Some((category, limit)) = outcome.error_kind().and_then(|k| budget.category(k)) {
        mark(category, limit, count, outcome);
    }
}

/// What a failure is counted under: the tool (`""` for every invented name: a model that
/// guesses a new one each time is still guessing), the category and its budget, when a budget
/// covers its kind.
pub(crate) fn counted_as<'o>(
    budget: &RecoveryBudget,
    outcome: &'o Outcome,
) -> Option<(&'o str, Category, Option<u32>)> {
    let (category, limit) = budget.category(outcome.error_kind()?)?;
    let key = match category {
        Category::UnknownTool => "",
        _ => outcome.tool(),
    };
    Some((key, category, limit))
}

/// A failure past its category's budget is marked final: `retryable: false`, and the message
/// says why the model should stop.
fn mark(category: Category, limit: Option<u32>, count: u32, outcome: &mut Outcome) {
    let Some(limit) = limit else { return };
    // After `limit` retries, that is `limit + 1` failures in a row, another call would be
    // one retry too many: say so now.
    if count > limit {
        let n = count;
        let tool = outcome.tool().to_owned();
        if let Some(failure) = outcome.failure.as_deref_mut() {
            failure.retryable = false;
            let end = if failure.message.ends_with('.') {
                ""
            } else {
                "."
            };
            let stop = match (n, category) {
                    (1, Category::CircuitOpen) => format!(
                        " Do not call `{tool}` again for this; tell the user it is unavailable right now"
                    ),
                    (1, _) => format!(
                        " Do not call `{tool}` again for this; tell the user what went wrong"
                    ),
                    (_, Category::UnknownTool) => format!(
                        " This is the {} call in a row of a tool that does not exist: stop guessing names and tell the user what you cannot do",
                        ordinal(n)
                    ),
                    _ => format!(
                        " This is the {} failure of `{tool}` in a row {}: stop calling it for this and tell the user what went wrong",
                        ordinal(n),
                        words(category)
                    ),
                };
            failure.message.push_str(end);
            failure.message.push_str(&stop);
        }
    }
}

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (1, r) if r != 11 => "st",
        (2, r) if r != 12 => "nd",
        (3, r) if r != 13 => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::ordinal;

    #[test]
    fn ordinals() {
        let shown: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101].map(ordinal).to_vec();
        assert_eq!(
            shown,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
        );
    }
}
