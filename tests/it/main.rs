//! The root crate's integration tests, one binary: a module per file, named `<area>_<what>`
//! (`tests/README.md` maps each area and each promise to its file). One binary links the
//! dependency tree once; a file of its own under `tests/` would link it again.
//!
//! Run one file with `cargo test --all-features --test it <file name>::`, one area with
//! `cargo test --all-features --test it <area>_`. Binaries of their own: `failure_paths` (its
//! fixtures are every `#[tool]` of its binary, which `Registry::from_collected` collects),
//! `observe_spans` (it installs a process-wide OpenTelemetry subscriber, which would take the
//! events `support::capture` routes), `sim_replicas` (a process-wide panic hook; `scripts/sim.sh`
//! runs thousands of its seeds) and `macro_ui` (trybuild compiles its cases as a crate of
//! their own).

mod support;

// The examples the tests run, declared at the root as in each example's own `main.rs`, where
// they name each other (`crate::tools`).
#[path = "../../examples/replay_eval/corpus.rs"]
mod corpus;
#[path = "../../examples/replay_eval/eval.rs"]
mod eval;
#[cfg(feature = "review-page")]
#[path = "../../examples/approvals/shop.rs"]
mod shop;
#[path = "../../examples/replay_eval/tools.rs"]
mod tools;

mod agent_kept_runs;
mod agent_support_job;
mod conversation_store;
mod execute_attempts;
mod execute_breaker;
mod execute_breaker_promises;
mod execute_client_requests;
mod execute_fallback;
mod execute_fallback_promises;
mod execute_progress;
mod execute_tower_service;
mod guard_approval;
mod guard_approval_origin;
mod guard_approval_page;
mod guard_exactness;
mod guard_order;
mod guard_promises;
mod guard_provenance;
mod guard_result;
mod guard_review_router;
mod guide_pages;
mod idempotency_fingerprint_props;
mod idempotency_pipeline;
mod idempotency_promises;
mod idempotency_store;
mod observe_events;
mod observe_promises;
mod observe_quarantine;
mod observe_stats;
mod outcome_content;
mod outcome_database_errors;
mod outcome_recovery;
mod outcome_taxonomy;
mod providers_adapters;
mod providers_promises;
mod registry_data_types;
mod registry_descriptions;
mod registry_dynamic_tools;
mod registry_examples;
mod registry_live;
mod registry_schema;
mod registry_tool_forms;
mod registry_tool_search;
mod registry_toolsets;
mod repair_deterministic;
mod repair_pass;
mod repair_promises;
mod replay_changes;
mod replay_eval;
mod validate_bad_input;
mod validate_exact_bounds;
mod validate_hostile_input;
mod validate_pattern_differential;
mod validate_violation_cap;
