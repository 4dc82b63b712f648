//! The quarantine: the argument text of calls that failed validation, kept for a while so an
//! operator can see what the model actually sent, reachable only through
//! [`Registry::quarantine`](crate::Registry::quarantine) and never logged.
//!
//! The store is bounded in entries and bytes and forgets each entry after a time to live
//! ([`QuarantinePolicy`]). What it keeps is redacted as the call events are: the value of every
//! `#[arg(sensitive)]` field, and of every key the tool's schema does not declare, replaced by
//! `"[redacted]"`, and text that is not a JSON object described rather than shown. An
//! application that needs the raw text (for a repair corpus, say) opts in with
//! [`QuarantinePolicy::raw_text`].

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use moka::policy::EvictionPolicy;
use moka::sync::Cache;
use serde::{Deserialize, Serialize};

use crate::observe::redacted;
use crate::outcome::{Outcome, Seam};
use crate::tool::ToolSpec;

/// Bounds of the quarantine, and whether it keeps raw text.
///
/// ```
/// use std::time::Duration;
/// use toolwright_core::observe::QuarantinePolicy;
/// use toolwright_core::Registry;
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

    /// At most this many entries (the least recently kept are forgotten first).
    pub const fn max_entries(mut self, entries: u32) -> Self {
        self.max_entries = entries;
        self
    }

    /// At most this many bytes of text, tool names and call ids together.
    pub const fn max_bytes(mut self, bytes: u32) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// How long an entry is kept.
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

impl QuarantineEntry {
    fn weight(&self) -> usize {
        self.tool.len() + self.call_id.len() + self.text.len()
    }
}

/// The quarantine of a registry, from [`Registry::quarantine`](crate::Registry::quarantine).
pub struct Quarantine {
    cache: Cache<u64, Arc<QuarantineEntry>, foldhash::fast::RandomState>,
    next: AtomicU64,
    policy: QuarantinePolicy,
}

impl fmt::Debug for Quarantine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quarantine")
            .field("policy", &self.policy)
            .field("entries", &self.cache.entry_count())
            .finish()
    }
}

impl Quarantine {
    pub(crate) fn new(policy: QuarantinePolicy) -> Quarantine {
        // One capacity bounds both: each entry weighs its bytes, and at least the byte cap's
        // share per entry, so the total weight under the byte cap also keeps the count under
        // the entry cap.
        let floor = if policy.max_entries == 0 {
            u32::MAX
        } else {
            policy.max_bytes.div_ceil(policy.max_entries).max(1)
        };
        let cache = Cache::builder()
            .max_capacity(u64::from(policy.max_bytes))
            .weigher(move |_: &u64, entry: &Arc<QuarantineEntry>| {
                u32::try_from(entry.weight()).unwrap_or(u32::MAX).max(floor)
            })
            .time_to_live(policy.ttl)
            // Oldest out first; TinyLFU admission (the default) would turn new entries away
            // in favour of old ones, since every call id is seen once.
            .eviction_policy(EvictionPolicy::lru())
            .build_with_hasher(foldhash::fast::RandomState::default());
        Quarantine {
            cache,
            next: AtomicU64::new(0),
            policy,
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
        // Text past the byte cap is never kept, so it is not read (redaction parses it):
        // an oversized payload must not cost its parse here either.
        if arguments.len() > self.policy.max_bytes as usize {
            return;
        }
        let text = if self.policy.raw {
            arguments.to_owned()
        } else {
            redacted(arguments, spec.input_schema(), spec.fields())
        };
        let entry = QuarantineEntry {
            tool: spec.name().to_owned(),
            call_id: outcome.call_id().to_owned(),
            error_type: kind.as_str().to_owned(),
            at: SystemTime::now(),
            text,
            redacted: !self.policy.raw,
        };
        if entry.weight() > self.policy.max_bytes as usize {
            return;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.cache.insert(n, Arc::new(entry));
    }

    /// Every entry still kept, oldest first. Evictions due are applied first, so the count and
    /// the bytes are within the policy's bounds.
    pub fn entries(&self) -> Vec<QuarantineEntry> {
        self.cache.run_pending_tasks();
        let mut entries: Vec<(u64, Arc<QuarantineEntry>)> =
            self.cache.iter().map(|(k, v)| (*k, v)).collect();
        entries.sort_by_key(|(n, _)| *n);
        entries
            .into_iter()
            .map(|(_, e)| QuarantineEntry::clone(&e))
            .collect()
    }

    /// The bounds it runs with.
    pub fn policy(&self) -> &QuarantinePolicy {
        &self.policy
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        self.cache.invalidate_all();
        self.cache.run_pending_tasks();
    }
}
