//! The error taxonomy pinned by literals: the `error_type` strings are a contract with the model,
//! so every string, seam and `retryable` default is written out here as the README's table
//! states it. A renamed string, a kind moved to another seam or a changed default fails this
//! test; so does a README table that no longer says what the code does.

use std::str::FromStr;

use toolwright::prelude::*;

/// `(kind, error_type, seam, retryable, transient, counts against the breaker)`, in the order of
/// the README's table. The strings are literals on purpose: never build them from the code.
const TABLE: &[(ErrorKind, &str, &str, bool, bool, bool)] = &[
    (
        ErrorKind::InvalidJson,
        "invalid_json",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::UnknownTool,
        "unknown_tool",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::UnknownArgument,
        "unknown_argument",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::SchemaMismatch,
        "schema_mismatch",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::SemanticInvalid,
        "semantic_invalid",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::UngroundedIdentifier,
        "ungrounded_identifier",
        "validation",
        true,
        false,
        false,
    ),
    (
        ErrorKind::Unauthorized,
        "unauthorized",
        "validation",
        false,
        false,
        false,
    ),
    (
        ErrorKind::ApprovalDenied,
        "approval_denied",
        "validation",
        false,
        false,
        false,
    ),
    (
        ErrorKind::IdempotencyMismatch,
        "idempotency_mismatch",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::DuplicateInFlight,
        "duplicate_in_flight",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::CircuitOpen,
        "circuit_open",
        "execution",
        true,
        false,
        false,
    ),
    (ErrorKind::Timeout, "timeout", "execution", true, true, true),
    (
        ErrorKind::RateLimited,
        "rate_limited",
        "execution",
        true,
        true,
        true,
    ),
    (
        ErrorKind::Unavailable,
        "unavailable",
        "execution",
        true,
        true,
        true,
    ),
    (
        ErrorKind::AuthExpired,
        "auth_expired",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::PermissionDenied,
        "permission_denied",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::NotFound,
        "not_found",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::Conflict,
        "conflict",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::BadRequest,
        "bad_request",
        "execution",
        false,
        false,
        false,
    ),
    (
        ErrorKind::ToolPanicked,
        "tool_panicked",
        "execution",
        false,
        false,
        true,
    ),
    (
        ErrorKind::InvalidResult,
        "invalid_result",
        "interpretation",
        false,
        false,
        true,
    ),
];

#[test]
fn every_kind_has_the_string_seam_and_defaults_of_the_contract() {
    for &(kind, error_type, seam, retryable, transient, breaker) in TABLE {
        assert_eq!(kind.as_str(), error_type, "{kind:?}");
        assert_eq!(kind.to_string(), error_type, "{kind:?} Display");
        assert_eq!(kind.seam().as_str(), seam, "{kind:?} seam");
        assert_eq!(kind.model_retryable(), retryable, "{kind:?} retryable");
        assert_eq!(kind.is_transient(), transient, "{kind:?} transient");
        assert_eq!(kind.counts_against_breaker(), breaker, "{kind:?} breaker");
        assert_eq!(
            ErrorKind::from_str(error_type).ok(),
            Some(kind),
            "{error_type} parses"
        );
    }
}

#[test]
fn the_table_lists_every_kind_once_in_taxonomy_order() {
    let listed: Vec<ErrorKind> = TABLE.iter().map(|row| row.0).collect();
    assert_eq!(
        listed,
        ErrorKind::ALL,
        "a kind was added, removed or reordered"
    );
}

#[test]
fn strings_outside_the_contract_do_not_parse() {
    for near_miss in [
        "",
        "Timeout",
        "schema-mismatch",
        "unknown",
        " timeout",
        "not found",
    ] {
        assert!(ErrorKind::from_str(near_miss).is_err(), "{near_miss:?}");
    }
}

#[test]
fn the_readme_table_says_what_the_code_does() {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Error taxonomy")
        .nth(1)
        .expect("the README has an Error taxonomy section");
    let rows: Vec<(String, String, bool)> = section
        .lines()
        .skip_while(|line| !line.starts_with("| error_type"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            (cells[1].to_owned(), cells[2].to_owned(), cells[3] == "yes")
        })
        .collect();
    let expected: Vec<(String, String, bool)> = TABLE
        .iter()
        .map(|&(_, error_type, seam, retryable, _, _)| {
            (error_type.to_owned(), seam.to_owned(), retryable)
        })
        .collect();
    assert_eq!(rows, expected);
}

#[tokio::test]
async fn the_envelope_carries_the_contract_strings() {
    /// Look up a parcel.
    #[tool(read_only)]
    async fn track(
        /// The parcel.
        parcel: String,
    ) -> Result<String, ToolError> {
        Ok(parcel)
    }
    let registry = Registry::builder().tool(Track).build().unwrap();

    let cases = [
        (ToolCall::new("c1", "track", "{"), "invalid_json"),
        (ToolCall::new("c2", "trak", "{}"), "unknown_tool"),
        (
            ToolCall::new("c3", "track", r#"{"parcel":"P1","x":1}"#),
            "unknown_argument",
        ),
        (
            ToolCall::new("c4", "track", r#"{"parcel":7}"#),
            "schema_mismatch",
        ),
    ];
    for (call, error_type) in cases {
        let envelope = registry.call(call).await.to_model_json();
        assert_eq!(envelope["error_type"], error_type, "{envelope}");
        assert_eq!(envelope["seam"], "validation", "{envelope}");
        assert_eq!(envelope["retryable"], true, "{envelope}");
        assert_eq!(envelope["status"], "error", "{envelope}");
    }
}
