//! What trying the deterministic repair rules costs on a call they cannot repair, for a 1 KB
//! argument text (target: under 5 us), and on one they can, for comparison.
//!
//! Three 1 KB texts against a ten-field schema:
//! - `invalid_json_unrepairable`: truncated JSON (the model's output was cut off): the text
//!   stage reads it to the end, finds nothing it may fix, and gives up.
//! - `type_error_unrepairable`: valid JSON with `"twelve"` for an integer: the value stage
//!   parses it and walks it beside the schema, and changes nothing.
//! - `repairable`: the same arguments in a code fence, with a trailing comma and `"12"` for the
//!   integer: every stage runs and the text is written again.
//!
//! (Inside the registry, a failure no rule can fix at all, a bound or a missing field, is not
//! even tried: that costs one pass over the violations.)
//!
//! `cargo bench --bench repair`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use toolwright::repair::DeterministicRepair;
use toolwright::serde_json::{self, json, Value};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "pattern": "^C[0-9]{5}$"},
            "subject": {"type": "string", "maxLength": 200},
            "body": {"type": "string", "maxLength": 2000},
            "priority": {"type": "string", "enum": ["low", "normal", "high"]},
            "count": {"type": "integer", "minimum": 1, "maximum": 50},
            "notify": {"type": "boolean", "default": false},
            "tags": {"type": "array", "items": {"type": "string"}},
            "amount": {"type": "number"},
            "note": {"type": ["string", "null"]},
            "window": {"$ref": "#/$defs/Window"}
        },
        "required": ["customer_id", "subject", "body", "priority", "count"],
        "additionalProperties": false,
        "$defs": {
            "Window": {
                "type": "object",
                "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}},
                "required": ["from", "to"],
                "additionalProperties": false
            }
        }
    })
}

/// A little over 1 KB of arguments with `count` as given.
fn arguments(count: &str) -> String {
    let body = "The parcel arrived with a dented corner and the customer would like a replacement sent before the weekend; they are happy to return the damaged one. ".repeat(4);
    let tags: Vec<String> = (0..30).map(|i| format!("\"tag-{i}\"")).collect();
    format!(
        r#"{{"customer_id": "C12345", "subject": "Damaged parcel, replacement wanted", "body": "{body}", "priority": "high", "count": {count}, "notify": true, "tags": [{}], "amount": 129.5, "note": null, "window": {{"from": 9, "to": 17}}}}"#,
        tags.join(", ")
    )
}

fn bench(c: &mut Criterion) {
    let schema = schema();
    let rules = DeterministicRepair::default();
    let valid = arguments("12");
    let truncated = valid[..valid.len() - 40].to_owned();
    let type_error = arguments("\"twelve\"");
    let quoted = arguments("\"12\"");
    let open = &quoted[..quoted.len() - 1];
    let repairable = format!("```json\n{open},}}\n```");
    for (name, text) in [
        ("invalid_json_unrepairable", &truncated),
        ("type_error_unrepairable", &type_error),
        ("repairable", &repairable),
    ] {
        println!("{name}: {} bytes", text.len());
        assert!(text.len() >= 1024, "{name} is under 1 KB");
        let repaired = rules.repair(&schema, text);
        assert_eq!(repaired.is_some(), name == "repairable", "{name}");
        c.bench_function(&format!("deterministic_repair/{name}"), |b| {
            b.iter(|| rules.repair(black_box(&schema), black_box(text)))
        });
    }
}

/// For scale on a loaded machine: reading the same 1 KB into a `serde_json::Value`, which the
/// registry's slow path does anyway to report every violation.
fn reference(c: &mut Criterion) {
    let text = arguments("\"twelve\"");
    c.bench_function("reference/serde_json_value_1kb", |b| {
        b.iter(|| serde_json::from_str::<Value>(black_box(&text)))
    });
}

criterion_group!(benches, bench, reference);
criterion_main!(benches);
