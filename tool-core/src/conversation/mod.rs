//! What a conversation remembers between its calls: the ids tools returned in it (so a grounded
//! argument can be checked), how many times in a row the model failed each tool (its recovery
//! budget), and the calls waiting for a person's approval.
//!
//! In one process the memory is a trait, [`ConversationMemory`]: each
//! [`Session`](crate::Session) made with [`Session::new`](crate::Session::new) gets its own
//! [`InMemoryConversation`]; [`Session::with_memory`](crate::Session::with_memory) plugs in
//! another.
//!
//! ```
//! use std::sync::Arc;
//! use toolwright_core::conversation::{ConversationMemory, InMemoryConversation};
//! use toolwright_core::Session;
//!
//! let memory = Arc::new(InMemoryConversation::new());
//! let session = Session::new("conv-7").with_memory(memory.clone());
//! session.ground("order", "A1");
//! assert!(memory.is_grounded("order", "A1"));
//! ```
//!
//! A conversation that must outlive the process, or that several replicas of a service serve,
//! lives in a [`ConversationStore`] instead ([`Session::with_store`](crate::Session::with_store)):
//! [`MemoryConversationStore`], or `RedisConversationStore` (feature `redis`) that every replica
//! shares. Grounded ids, recovery counts and approval tickets then go to the store, and a
//! session written with serde and read back on any replica continues the conversation:
//!
//! ```
//! use std::sync::Arc;
//! use toolwright_core::conversation::{ConversationStore, MemoryConversationStore, Prepare, CallRecord};
//!
//! # async fn demo() -> Result<(), toolwright_core::conversation::ConversationStoreError> {
//! let store = Arc::new(MemoryConversationStore::new());
//! // What the application grounds itself (the signed-in customer's account):
//! let turn = CallRecord { ids: vec![("account".into(), vec!["ACC-311".into()])], ..CallRecord::default() };
//! store.record("conv-7", &turn).await?;
//! let asked = Prepare { ids: vec![("account".into(), "ACC-311".into())], edited_for: None };
//! assert_eq!(store.prepare("conv-7", &asked).await?.grounded, [true]);
//! # Ok(()) }
//! ```

pub(crate) mod durable;
mod memory;
pub(crate) mod recovery;
mod redeem;
#[cfg(feature = "redis")]
mod redis_store;
mod runs;
mod slots;
mod store;

pub use memory::{
    ConversationMemory, FailureCategory, Grounding, InMemoryConversation, MAX_IDS_PER_KIND,
};
pub use recovery::RecoveryBudget;
pub use redeem::{Redeemed, MAX_MEMORY_REDEMPTIONS};
pub use runs::{RunClaim, DEFAULT_RUN_TTL, MAX_MEMORY_RUNS, MAX_RUN_BYTES};
pub use slots::{SlotCap, SlotHold};

/// The kind of grounded id a deferred tool's name is recorded under once the conversation
/// found it with the registry's search tool (`RegistryBuilder::deferred`).
pub(crate) const FOUND_KIND: &str = "toolwright.found_tool";
#[cfg(feature = "redis")]
pub use redis_store::RedisConversationStore;
pub use store::{
    CallRecord, ConversationFuture, ConversationStore, ConversationStoreBuilder,
    ConversationStoreError, Decided, Decision, FailureCounts, MemoryConversationStore, Prepare,
    Prepared, Review, Ticket, TicketRequest, TicketState, WaitingPage, WaitingQuery,
    DEFAULT_APPROVAL_TTL, DEFAULT_IDLE_TTL,
};
