//! What a call carries through the stages ([`Call`]) and what every stage may read of the
//! registry ([`Pipeline`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::context::StateMap;
use crate::conversation::recovery::RecoveryBudget;
use crate::idempotency::{IdempotencyStore, KeyMode, MemoryStore};
use crate::observe::{ArgumentLog, Quarantine};
use crate::progress::ProgressHandle;
use crate::provenance::Finders;
use crate::repair::{DeterministicRepair, Repairer};
use crate::runtime::Sources;

/// What every stage may need of the registry: its shared state, its clock and randomness, its
/// stores and policies. Built once with the registry.
pub(crate) struct Pipeline {
    pub(crate) state: Arc<StateMap>,
    pub(crate) sources: Sources,
    pub(crate) store: Arc<dyn IdempotencyStore>,
    /// The same store when it is the in-memory one: it answers at once, so a call begins and
    /// settles its key without a boxed future.
    pub(crate) memory: Option<MemoryStore>,
    pub(crate) key_mode: KeyMode,
    pub(crate) argument_log: ArgumentLog,
    /// For each kind of id, the tools whose results carry it (replaced when the tool set
    /// changes; read only to word an `ungrounded_identifier` failure).
    pub(crate) finders: std::sync::RwLock<Arc<Finders>>,
    pub(crate) recovery: RecoveryBudget,
    pub(crate) repairer: Option<Arc<dyn Repairer>>,
    /// The deterministic repair rules, tried before the repairer.
    pub(crate) rules: Option<DeterministicRepair>,
    pub(crate) repair_timeout: Duration,
    pub(crate) approval_timeout: Duration,
    pub(crate) max_argument_bytes: usize,
    /// The arguments of calls that failed validation.
    pub(crate) quarantine: Quarantine,
    /// Calls of names no tool has.
    pub(crate) unknown_calls: std::sync::atomic::AtomicU64,
    /// The cap on a result's JSON text, in bytes.
    pub(crate) max_result_bytes: Option<usize>,
    /// The application's check of every validated call.
    pub(crate) call_guard: Option<Arc<dyn crate::guard::policy::CallGuard>>,
    /// The application's check of every result.
    pub(crate) result_guard: Option<Arc<dyn crate::guard::output::ResultGuard>>,
}

/// One call as it moves through the stages.
pub(crate) struct Call {
    pub(crate) id: String,
    /// The argument text; after a repair, the repaired text (what runs, what the key covers).
    pub(crate) arguments: String,
    pub(crate) arrived: Instant,
    /// Where the tool's progress reports go, when the caller attached a handle.
    pub(crate) progress: Option<ProgressHandle>,
}

impl Call {
    /// The call, leaving an empty one (same arrival) in its place.
    pub(crate) fn take(&mut self) -> Call {
        let arrived = self.arrived;
        std::mem::replace(
            self,
            Call {
                id: String::new(),
                arguments: String::new(),
                arrived,
                progress: None,
            },
        )
    }

    pub(crate) fn new(id: String, arguments: String, progress: Option<ProgressHandle>) -> Call {
        Call {
            id,
            arguments,
            arrived: Instant::now(),
            progress,
        }
    }
}
