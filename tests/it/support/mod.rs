//! Helpers the test modules share.

pub mod capture;
#[cfg(feature = "redis")]
pub mod redis_commands;
pub mod redis_server;
#[cfg(feature = "review-page")]
pub mod review_page;
pub mod script;
