//! `Registry::quarantine`: the text of calls that failed validation, kept redacted (unless the
//! application opts in to raw text) within its bounds of entries and bytes, and never logged.

use toolwright::observe::QuarantinePolicy;
use toolwright::prelude::*;

/// Pay an invoice.
#[tool(read_only)]
async fn pay(
    /// The invoice.
    invoice: String,
    /// The card number.
    #[arg(sensitive, length(min = 12, max = 19))]
    card: String,
    /// Cents.
    #[arg(range(min = 1, max = 100000))]
    amount: u32,
) -> Result<String, ToolError> {
    let _ = card;
    Ok(format!("{invoice} {amount}"))
}

const CARD: &str = "4111111111111111";

fn bad(id: &str) -> ToolCall {
    // Out of range: `schema_mismatch`.
    ToolCall::new(
        id,
        "pay",
        format!(r#"{{"invoice":"INV-{id}","card":"{CARD}","amount":0}}"#),
    )
}

#[tokio::test]
async fn a_failed_call_is_kept_redacted() {
    let registry = Registry::builder().tool(Pay).build().unwrap();
    let ok = registry
        .call(ToolCall::new(
            "c0",
            "pay",
            format!(r#"{{"invoice":"INV-1","card":"{CARD}","amount":5}}"#),
        ))
        .await;
    assert_eq!(ok.status(), Status::Success);
    let failed = registry.call(bad("c1")).await;
    assert_eq!(failed.error_kind(), Some(ErrorKind::SchemaMismatch));

    let entries = registry.quarantine().entries();
    assert_eq!(entries.len(), 1, "only the failed call is kept");
    let entry = &entries[0];
    assert_eq!(entry.tool, "pay");
    assert_eq!(entry.call_id, "c1");
    assert_eq!(entry.error_type, "schema_mismatch");
    assert!(entry.redacted);
    assert!(!entry.text.contains(CARD), "{}", entry.text);
    assert!(entry.text.contains("[redacted]"), "{}", entry.text);
    assert!(entry.text.contains("INV-c1"), "{}", entry.text);
    // Debug never shows the text.
    assert!(!format!("{entry:?}").contains("INV-c1"));
}

#[tokio::test]
async fn raw_text_is_kept_only_when_the_application_asks() {
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(QuarantinePolicy::new().raw_text(true))
        .build()
        .unwrap();
    let failed = registry.call(bad("c1")).await;
    let entries = registry.quarantine().entries();
    assert_eq!(entries.len(), 1);
    assert!(!entries[0].redacted);
    assert_eq!(Some(entries[0].text.as_str()), failed.raw_arguments());
}

#[tokio::test]
async fn unknown_tools_are_not_quarantined() {
    let registry = Registry::builder().tool(Pay).build().unwrap();
    registry
        .call(ToolCall::new("u1", "refund", r#"{"card":"4111"}"#))
        .await;
    assert!(registry.quarantine().entries().is_empty());
}

#[tokio::test]
async fn the_bounds_hold_under_ten_thousand_failed_calls() {
    const ENTRIES: u32 = 100;
    const BYTES: u32 = 4_096;
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(
            QuarantinePolicy::new()
                .max_entries(ENTRIES)
                .max_bytes(BYTES),
        )
        .build()
        .unwrap();
    for i in 0..10_000 {
        let outcome = registry.call(bad(&format!("c{i}"))).await;
        assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    }
    let entries = registry.quarantine().entries();
    assert!(!entries.is_empty());
    assert!(
        entries.len() <= ENTRIES as usize,
        "{} entries",
        entries.len()
    );
    let bytes: usize = entries
        .iter()
        .map(|e| e.tool.len() + e.call_id.len() + e.text.len())
        .sum();
    assert!(bytes <= BYTES as usize, "{bytes} bytes");
    // Each entry is about 70 bytes, so the byte cap allows ~58 of them here: the byte bound,
    // not the count, is the one that bites.
    assert!(
        entries.len() < ENTRIES as usize,
        "{} entries",
        entries.len()
    );
}

#[tokio::test]
async fn the_entry_cap_holds_when_entries_are_small() {
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(QuarantinePolicy::new().max_entries(10).max_bytes(1 << 20))
        .build()
        .unwrap();
    for i in 0..10_000 {
        registry.call(bad(&format!("c{i}"))).await;
    }
    let entries = registry.quarantine().entries();
    assert!(!entries.is_empty());
    assert!(entries.len() <= 10, "{} entries", entries.len());
}

#[tokio::test]
async fn an_off_quarantine_keeps_nothing() {
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(QuarantinePolicy::off())
        .build()
        .unwrap();
    registry.call(bad("c1")).await;
    assert!(registry.quarantine().entries().is_empty());
}

#[tokio::test]
async fn text_past_the_byte_cap_is_not_kept() {
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(QuarantinePolicy::new().max_bytes(64))
        .build()
        .unwrap();
    let long = format!(
        r#"{{"invoice":"{}","card":"{CARD}","amount":0}}"#,
        "I".repeat(200)
    );
    let outcome = registry.call(ToolCall::new("c1", "pay", long)).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert!(registry.quarantine().entries().is_empty());
    // A short one still fits.
    registry
        .call(ToolCall::new(
            "c2",
            "pay",
            r#"{"invoice":"I","card":"1","amount":0}"#,
        ))
        .await;
    assert_eq!(registry.quarantine().entries().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn entries_are_forgotten_after_their_time_to_live_oldest_first() {
    let ttl = std::time::Duration::from_secs(60);
    let registry = Registry::builder()
        .tool(Pay)
        .quarantine(QuarantinePolicy::new().time_to_live(ttl))
        .build()
        .unwrap();
    registry.call(bad("old")).await;
    tokio::time::advance(std::time::Duration::from_secs(40)).await;
    registry.call(bad("new")).await;
    let ids = |r: &Registry| -> Vec<String> {
        r.quarantine()
            .entries()
            .into_iter()
            .map(|e| e.call_id)
            .collect()
    };
    assert_eq!(ids(&registry), ["old", "new"]);
    let entries = registry.quarantine().entries();
    // `at` is wall-clock time: the older entry is 40 s older.
    let gap = entries[1].at.duration_since(entries[0].at).unwrap();
    assert_eq!(gap.as_secs(), 40, "{gap:?}");
    // 61 s after the first: it is gone, the second is not.
    tokio::time::advance(std::time::Duration::from_secs(21)).await;
    assert_eq!(ids(&registry), ["new"]);
    tokio::time::advance(std::time::Duration::from_secs(40)).await;
    assert!(ids(&registry).is_empty());
}

#[tokio::test]
async fn what_is_kept_is_redacted_on_every_read_and_cleared_on_demand() {
    let registry = Registry::builder().tool(Pay).build().unwrap();
    registry.call(bad("c1")).await;
    for _ in 0..2 {
        let entries = registry.quarantine().entries();
        assert_eq!(entries.len(), 1);
        assert!(!entries[0].text.contains(CARD), "{}", entries[0].text);
    }
    registry.quarantine().clear();
    assert!(registry.quarantine().entries().is_empty());
    registry.call(bad("c2")).await;
    assert_eq!(registry.quarantine().entries().len(), 1);
}
