//! Fault fixtures of toolwright's execution seam; the fixtures are this crate's tests
//! (`tests/it/faults.rs`): a real HTTP server on loopback that misbehaves on purpose (hangs,
//! refuses, resets mid-body, throttles, fails, answers nothing or nonsense), tools that call it
//! with reqwest, and the real `Registry::call` pipeline in between.

#![forbid(unsafe_code)]
#![deny(unreachable_pub)]
