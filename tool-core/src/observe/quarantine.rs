//! The quarantine: the argument text of calls that failed validation, kept for a while so an
//! operator can see what the model actually sent, reachable only through
//! [`Registry::quarantine`](crate::Registry::quarantine) and never logged.
//!
//! The store is bounded in entries and bytes and forgets each entry after a time to live
//! ([`QuarantinePolicy`]). What it gives out is redacted as the call events are: the value of
//! every `#[arg(sensitive)]` field, and of every key the tool's schema does not declare,
//! replaced by `"[redacted]"`, and text that is not a JSON object described rather than shown.
//! The text is held in the process's memory as it came (as the failed call's outcome holds it)
//! and redacted each time it is read, so a failing call does not pay for a parse and a rewrite
//! of its arguments. An application that needs the raw text (for a repair corpus, say) opts in
//! with [`QuarantinePolicy::raw_text`].

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::observe::redacted;
use crate::outcome::{Outcome, Seam};
use crate::tool::spec::{FieldMeta, ToolSpec};

/// Bounds of the quarantine, and whether it keeps raw text.
///
/// ```
/// use std::time::Duration;
/// use toolwright::observe::QuarantinePolicy;
/// use toolwright::Registry;
///
/// let policy = QuarantinePolicy::new()
///     .max_entries(500)
///     .max_bytes(256 * 1024)
///     .time_to_live(Duration::from_secs(600));
/// let registry = Registry::builder().quarantine(policy).build().unwrap();
/// assert!(registry.quarantine().entries().is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuarantinePolicy {
    max_entries: u32,
    max_bytes: u32,
    ttl: Duration,
    raw: bool,
}

impl Default for QuarantinePolicy {
    /// 1,000 entries, 1 MiB, one hour, redacted.
    fn default() -> Self {
        QuarantinePolicy::new()
    }
}

impl QuarantinePolicy {
    /// 1,000 entries, 1 MiB, one hour, redacted.
    pub const fn new() -> Self {
        QuarantinePolicy {
            max_entries: 1_000,
            max_bytes: 1 << 20,
            ttl: Duration::from_secs(3600),
            raw: false,
        }
    }

    /// Keeps nothing.
    pub const fn off() -> Self {
        QuarantinePolicy::new().max_entries(0)
    }

    /// At most this many entries (the least recently kept are forgotten first). Default: 1,000.
    pub const fn max_entries(mut self, entries: u32) -> Self {
        self.max_entries = entries;
        self
    }

    /// At most this many bytes of text (as received), tool names and call ids together. A
    /// redacted text can read a few bytes longer than it was kept: a value shorter than
    /// `"[redacted]"` is replaced by it. Default: 1 MiB.
    pub const fn max_bytes(mut self, bytes: u32) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// How long an entry is kept. Default: one hour.
    pub const fn time_to_live(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Keeps the text exactly as the model sent it, sensitive values included. Off by default:
    /// turn it on only where the quarantine is as protected as the data the tools handle.
    pub const fn raw_text(mut self, raw: bool) -> Self {
        self.raw = raw;
        self
    }
}

/// One call that failed validation. Its `Debug` shows the length of the text, not the text.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct QuarantineEntry {
    /// The tool called.
    pub tool: String,
    /// The call's id.
    pub call_id: String,
    /// Why validation refused it (`schema_mismatch`, `invalid_json`, ...).
    pub error_type: String,
    /// When the call ended.
    pub at: SystemTime,
    /// The argument text: redacted, unless the policy keeps raw text.
    pub text: String,
    /// Whether `text` is redacted.
    pub redacted: bool,
}

impl fmt::Debug for QuarantineEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QuarantineEntry")
            .field("tool", &self.tool)
            .field("call_id", &self.call_id)
            .field("error_type", &self.error_type)
            .field("at", &self.at)
            .field("text_bytes", &self.text.len())
            .field("redacted", &self.redacted)
            .finish()
    }
}

/// One kept call, as received: redacted when it is read, so a failed call pays for a copy of
/// its text and a push, not for a parse and a rewrite.
#[derive(Clone)]
struct Kept {
    tool: Arc<str>,
    call_id: String,
    error_type: &'static str,
    at: Instant,
    text: String,
    // What redaction needs, shared with the tool's spec.
    schema: Arc<crate::outcome::ToolSchema>,
    fields: &'static [FieldMeta],
}

impl Kept {
    fn weight(&self) -> usize {
        self.tool.len() + self.call_id.len() + self.text.len()
    }
}

/// Oldest first. Every entry lives as long as every other, so the expired ones are always at
/// the front, and the least recently kept are the ones a cap removes: a deque is the whole
/// eviction policy.
#[derive(Default)]
struct Ring {
    entries: VecDeque<Kept>,
    bytes: usize,
}

/// The quarantine of a registry, from [`Registry::quarantine`](crate::Registry::quarantine).
pub struct Quarantine {
    kept: Mutex<Ring>,
    policy: QuarantinePolicy,
}

impl fmt::Debug for Quarantine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quarantine")
            .field("policy", &self.policy)
            .field("entries", &self.lock().entries.len())
            .finish()
    }
}

impl Quarantine {
    pub(crate) fn new(policy: QuarantinePolicy) -> Quarantine {
        Quarantine {
            kept: Mutex::new(Ring::default()),
            policy,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ring> {
        // A panic elsewhere while holding the lock leaves the deque consistent (every change
        // is one push or pop and a sum), so a poisoned lock is still usable.
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets what has lived past the time to live, and the oldest entries past a cap.
    fn trim(&self, kept: &mut Ring, now: Instant) {
        while let Some(front) = kept.entries.front() {
            let expired = now.saturating_duration_since(front.at) >= self.policy.ttl;
            let over = kept.entries.len() > self.policy.max_entries as usize
                || kept.bytes > self.policy.max_bytes as usize;
            if !expired && !over {
                break;
            }
            if let Some(gone) = kept.entries.pop_front() {
                kept.bytes -= gone.weight();
            }
        }
    }

    /// Keeps the arguments of a call that failed validation.
    #[cold]
    pub(crate) fn keep(&self, spec: &ToolSpec, outcome: &Outcome, arguments: &str) {
        if self.policy.max_entries == 0 || outcome.seam() != Some(Seam::Validation) {
            return;
        }
        let Some(kind) = outcome.error_kind() else {
            return;
        };
        let entry = Kept {
            tool: Arc::clone(&spec.name),
            call_id: outcome.call_id().to_owned(),
            error_type: kind.as_str(),
            at: Instant::now(),
            text: arguments.to_owned(),
            schema: Arc::clone(&spec.input_schema),
            fields: spec.fields(),
        };
        // An entry alone over the byte cap is never kept.
        if entry.weight() > self.policy.max_bytes as usize {
            return;
        }
        let now = entry.at;
        let mut kept = self.lock();
        kept.bytes += entry.weight();
        kept.entries.push_back(entry);
        self.trim(&mut kept, now);
    }

    /// Every entry still kept, oldest first, redacted unless the policy keeps raw text. Entries
    /// past their time to live are forgotten first.
    pub fn entries(&self) -> Vec<QuarantineEntry> {
        let now = Instant::now();
        let wall = SystemTime::now();
        let kept: Vec<Kept> = {
            let mut kept = self.lock();
            self.trim(&mut kept, now);
            kept.entries.iter().cloned().collect()
        };
        // Redaction parses each text: done outside the lock, so failing calls never wait on it.
        kept.into_iter()
            .map(|k| QuarantineEntry {
                text: if self.policy.raw {
                    k.text
                } else {
                    redacted(&k.text, &k.schema, k.fields)
                },
                tool: k.tool.to_string(),
                call_id: k.call_id,
                error_type: k.error_type.to_owned(),
                at: wall
                    .checked_sub(now.saturating_duration_since(k.at))
                    .unwrap_or(wall),
                redacted: !self.policy.raw,
            })
            .collect()
    }

    /// The bounds it runs with.
    pub fn policy(&self) -> &QuarantinePolicy {
        &self.policy
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        let mut kept = self.lock();
        kept.entries.clear();
        kept.bytes = 0;
    }
}
