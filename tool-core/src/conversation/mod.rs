//! What a conversation remembers between its calls: the ids tools returned in it (so a grounded
//! argument can be checked) and how many times in a row the model failed each tool (its
//! recovery budget).
//!
//! The memory is a trait, [`ConversationMemory`], so it can live where the application keeps
//! its conversations. Each [`Session`](crate::Session) made with
//! [`Session::new`](crate::Session::new) gets its own [`InMemoryConversation`]; a session made
//! with [`Session::with_memory`](crate::Session::with_memory) uses the one given, for example a
//! store shared by every replica of a service.
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

pub(crate) mod durable;
mod memory;
pub mod recovery;
#[cfg(feature = "redis")]
mod redis_store;
mod store;

pub use memory::{
    ConversationMemory, FailureCategory, Grounding, InMemoryConversation, MAX_IDS_PER_KIND,
};
pub use recovery::RecoveryBudget;
#[cfg(feature = "redis")]
pub use redis_store::RedisConversationStore;
pub use store::{
    ConversationFuture, ConversationStore, ConversationStoreBuilder, ConversationStoreError,
    Decided, Decision, MemoryConversationStore, Prepare, Prepared, Recorded, Review, Ticket,
    TicketRequest, TicketState, Turn, WaitingPage, WaitingQuery, DEFAULT_APPROVAL_TTL,
    DEFAULT_IDLE_TTL,
};
