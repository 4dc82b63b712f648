//! Failure paths of validation through the real pipeline (`Registry::call`): the shape of the
//! text, semantic rules, hostile sizes, defaults and options, and many malformed inputs.
//!
//! Every test builds a registry from `#[tool]` functions and sends it the argument text a model
//! could send. Each failure is checked the way a model and an operator see it: the typed facts
//! (`error_kind`, `seam`, `retryable`) and the envelope (`error_type`, `message`, `errors[].path`),
//! and the message must name the field, what was expected and what came.

// `#[arg(validate = f)]` expands to a closure so that deref coercion applies (`fn(&str)` for a
// `String` argument); clippy reads it as user code. Reported for tool-macros to allow it there.
#![allow(clippy::redundant_closure)]

// The fixtures (one `#[tool]` per failure class) and the helpers every failure-path module
// shares, at the binary's root.
use super::*;

// ---------------------------------------------------------------------------------------------
// Shape: the text is not an object of the right fields
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn text_that_is_not_json_is_invalid_json() {
    let outcome = call("book_flight", r#"{"from": "SFO", "passengers": 2"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("not valid JSON"), "{envelope}");
    assert_eq!(paths(&outcome), [""]);
    assert!(
        envelope["expected_schema"].is_object(),
        "the model gets the schema to rebuild its call: {envelope}"
    );
}

#[tokio::test]
async fn an_empty_string_is_invalid_json_and_says_what_to_send() {
    let outcome = call("book_flight", "").await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("empty"), "{envelope}");
    assert!(message(&outcome).contains("JSON object"), "{envelope}");
    // Whitespace is as empty as nothing.
    let outcome = call("book_flight", "  \n ").await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("empty"));
}

#[tokio::test]
async fn null_is_a_schema_mismatch_at_the_root() {
    let outcome = call("book_flight", "null").await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), [""]);
    assert_eq!(
        message(&outcome),
        "the arguments must be a JSON object, got null"
    );
    assert_eq!(envelope["errors"][0]["got"], "null");
}

#[tokio::test]
async fn an_array_instead_of_an_object_is_a_schema_mismatch_at_the_root() {
    let outcome = call("book_flight", r#"[{"from":"SFO"}]"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), [""]);
    assert_eq!(
        message(&outcome),
        "the arguments must be a JSON object, got an array of 1 item"
    );
    assert_eq!(envelope["errors"][0]["expected"], "an object");
}

#[tokio::test]
async fn positional_arguments_in_an_array_are_not_read_as_fields() {
    // serde would fill a struct from an array by position; the schema promises an object.
    for arguments in [r#"["SFO",2,null,null]"#, " []", "[]"] {
        let outcome = call("book_flight", arguments).await;
        assert_rejected(&outcome, ErrorKind::SchemaMismatch);
        assert_eq!(paths(&outcome), [""], "{arguments}");
        assert!(message(&outcome).starts_with("the arguments must be a JSON object, got an array"));
    }
    let outcome = call("ping", "[]").await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let outcome = call("ping", " {} ").await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn a_field_given_twice_is_named() {
    let outcome = call("book_flight", r#"{"from":"SFO","from":"LAX"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(
        message(&outcome),
        "`from` is given more than once; send each argument once"
    );
    assert_eq!(envelope["errors"][0]["rule"], "duplicate");

    let outcome = call(
        "plan_trip",
        r#"{"legs":[{"from":"SFO","to":"LAX","to":"JFK"}]}"#,
    )
    .await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/legs/0/to"]);
}

#[tokio::test]
async fn an_integer_written_as_a_float_says_how_to_write_it() {
    // JSON Schema counts 2.0 as an integer, serde does not: the message says what to send.
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":2.0}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(
        message(&outcome),
        "`passengers`: expected an integer written without a decimal point or exponent, got number 2.0"
    );
    assert_eq!(envelope["errors"][0]["got"], "number 2.0");

    let outcome = call("slow", r#"{"delay_ms":18446744073709551616}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/delay_ms"]);
    assert!(
        message(&outcome).contains(
            "out of range for a 64-bit unsigned integer (0 to 18446744073709551615), got 18446744073709551616"
        ),
        "{}",
        message(&outcome)
    );
}

#[tokio::test]
async fn a_missing_required_field_is_named() {
    let outcome = call("book_flight", r#"{"passengers":2}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(message(&outcome), "`from` is required but missing");
    assert_eq!(envelope["errors"][0]["rule"], "required");
    assert!(envelope["errors"][0].get("got").is_none(), "{envelope}");
}

#[tokio::test]
async fn a_wrong_type_names_the_field_the_expected_type_and_what_came() {
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":"2"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(
        message(&outcome),
        "`passengers`: expected an integer, got string \"2\""
    );
    let error = &envelope["errors"][0];
    assert_eq!(error["path"], "/passengers");
    assert_eq!(error["rule"], "type");
    assert_eq!(error["expected"], "an integer");
    assert_eq!(error["got"], "string \"2\"");
}

#[tokio::test]
async fn a_value_out_of_range_names_the_bound_and_the_value() {
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":50}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(message(&outcome), "`passengers` must be at most 9, got 50");
    assert_eq!(envelope["errors"][0]["rule"], "range");
    assert_eq!(envelope["errors"][0]["expected"], "at most 9");
    assert_eq!(envelope["errors"][0]["got"], "50");

    // Below the bound, and below what the Rust type can hold: the schema reports it the same way.
    let outcome = call("book_flight", r#"{"from":"SFO","passengers":-1}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/passengers"]);
    assert_eq!(message(&outcome), "`passengers` must be at least 1, got -1");

    let outcome = call("refund", r#"{"amount":0}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(message(&outcome), "`amount` must be at least 0.01, got 0");
}

#[tokio::test]
async fn a_value_too_long_names_the_limit_and_the_length() {
    let note = "n".repeat(301);
    let outcome = call(
        "book_flight",
        &json!({"from": "SFO", "note": note}).to_string(),
    )
    .await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/note"]);
    assert_eq!(
        message(&outcome),
        "`note` must be at most 300 characters long, got 301 characters"
    );
    assert_eq!(envelope["errors"][0]["rule"], "length");

    let outcome = call("search_orders", r#"{"query":""}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(
        message(&outcome),
        "`query` must be non-empty, got 0 characters"
    );
}

#[tokio::test]
async fn a_pattern_mismatch_shows_the_pattern_and_the_value() {
    let outcome = call("book_flight", r#"{"from":"sfo"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/from"]);
    assert_eq!(
        message(&outcome),
        "`from` must be a string matching `^[A-Z]{3}$`, got \"sfo\""
    );
    assert_eq!(envelope["errors"][0]["rule"], "pattern");
}

#[tokio::test]
async fn a_value_not_in_one_of_lists_the_options() {
    let outcome = call("book_flight", r#"{"from":"SFO","cabin":"premium"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/cabin"]);
    assert_eq!(
        message(&outcome),
        "`cabin` must be one of \"economy\", \"business\", \"first\", got \"premium\""
    );
    assert_eq!(envelope["errors"][0]["rule"], "one_of");
}

#[tokio::test]
async fn two_violations_in_one_call_are_both_reported_each_with_its_path() {
    let outcome = call("search_orders", r#"{"query":"","max_results":50}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/query", "/max_results"]);
    let errors = envelope["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2);
    // The message says how many and where; each violation says what was expected and what came.
    assert_eq!(
        message(&outcome),
        "2 problems with the arguments, at `query` and `max_results`; `errors` lists each with what was expected and what came"
    );
    assert!(sentences(&outcome).contains("`query` must be non-empty"));
    assert!(sentences(&outcome).contains("`max_results` must be at most 20, got 50"));

    // Shape failures are collected too: two wrong types, found by the slow path.
    let outcome = call("schedule", r#"{"start":"9","end":true}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/end", "/start"]);
    assert!(message(&outcome).contains("`start`") && message(&outcome).contains("`end`"));
    assert!(sentences(&outcome).contains("`start`: expected an integer, got string \"9\""));
    assert!(sentences(&outcome).contains("`end`: expected an integer, got boolean true"));
}

#[tokio::test]
async fn an_unknown_argument_is_named_and_the_valid_ones_listed() {
    let outcome = call("book_flight", r#"{"from":"SFO","seat":"12A"}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::UnknownArgument);
    assert_eq!(paths(&outcome), ["/seat"]);
    assert_eq!(
        message(&outcome),
        "unknown argument `seat`; valid arguments are `cabin`, `from`, `note`, `passengers`"
    );
    assert_eq!(envelope["errors"][0]["got"], "`seat`");
}

#[tokio::test]
async fn an_unknown_argument_with_another_problem_is_a_schema_mismatch_listing_both() {
    let outcome = call(
        "book_flight",
        r#"{"from":"SFO","passengers":"2","seat":"1"}"#,
    )
    .await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/passengers", "/seat"]);
}

#[tokio::test]
async fn a_nested_error_inside_a_list_of_structs_has_its_full_path() {
    let outcome = call(
        "plan_trip",
        r#"{"legs":[{"from":7,"to":"LAX"},{"from":"LAX"}]}"#,
    )
    .await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let mut found = paths(&outcome);
    found.sort_unstable();
    assert_eq!(found, ["/legs/0/from", "/legs/1/to"]);
    assert!(
        sentences(&outcome).contains("`legs[0].from`: expected a string, got number 7"),
        "{envelope}"
    );
    assert!(
        sentences(&outcome).contains("`legs[1].to` is required but missing"),
        "{envelope}"
    );
    assert!(
        message(&outcome).contains("`legs[0].from`") && message(&outcome).contains("`legs[1].to`"),
        "{envelope}"
    );

    let outcome = call("plan_trip", r#"{"legs":[]}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(message(&outcome), "`legs` must be non-empty, got 0 items");
}

#[tokio::test]
async fn a_list_too_long_and_a_missing_field_are_both_reported_on_the_shape_path() {
    // The missing `to` fails the typed parse, so the slow path reports the list length too.
    let leg = r#"{"from":"SFO","to":"LAX"}"#;
    let text = format!(r#"{{"legs":[{leg},{leg},{leg},{leg},{{"from":"JFK"}}]}}"#);
    let outcome = call("plan_trip", &text).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let messages: Vec<&str> = outcome
        .violations()
        .iter()
        .map(|v| v.message.as_str())
        .collect();
    assert!(
        messages.contains(&"`legs` must be at most 4 items long, got 5 items"),
        "{messages:?}"
    );
    assert!(
        messages.contains(&"`legs[4].to` is required but missing"),
        "{messages:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Semantics
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_broken_business_rule_is_semantic_invalid() {
    let outcome = call("schedule", r#"{"start":18,"end":9}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SemanticInvalid);
    assert_eq!(
        message(&outcome),
        "`start` (18) must not be after `end` (9)",
        "{envelope}"
    );
    // The semantic rule runs only once the fields are valid.
    let outcome = call("schedule", r#"{"start":30,"end":9}"#).await;
    assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    let outcome = call("schedule", r#"{"start":9,"end":18}"#).await;
    assert_eq!(outcome.status(), Status::Success);
}

#[tokio::test]
async fn a_custom_field_check_reports_its_message_with_the_field() {
    let outcome = call("refund", r#"{"amount":10.005}"#).await;
    let envelope = assert_rejected(&outcome, ErrorKind::SchemaMismatch);
    assert_eq!(paths(&outcome), ["/amount"]);
    assert_eq!(
        message(&outcome),
        "`amount`: must be a whole number of cents, got 10.005"
    );
    assert_eq!(envelope["errors"][0]["rule"], "custom");
    let outcome = call("refund", r#"{"amount":10.25}"#).await;
    assert_eq!(outcome.status(), Status::Success);
}

// ---------------------------------------------------------------------------------------------
// Hostile sizes
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ten_thousand_levels_of_nesting_are_classified_without_overflowing_the_stack() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let outcome = call("book_flight", &deep).await;
    let envelope = assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(
        message(&outcome).contains("nested too deeply"),
        "{envelope}"
    );

    // Deep nesting inside a field, past the typed parse's first error.
    let deep_field = format!(
        r#"{{"from":{}1{}}}"#,
        r#"{"a":"#.repeat(10_000),
        "}".repeat(10_000)
    );
    let outcome = call("book_flight", &deep_field).await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(message(&outcome).contains("nested too deeply"));

    // And inside a field whose type accepts structure.
    let deep_legs = format!(r#"{{"legs":{}{}}}"#, "[".repeat(10_000), "]".repeat(10_000));
    let outcome = call("plan_trip", &deep_legs).await;
    assert_eq!(outcome.seam(), Some(Seam::Validation));
    assert!(outcome.to_model_string().len() < 8_192);
}

#[tokio::test]
async fn a_megabyte_string_is_classified_and_never_echoed_back() {
    let huge = "x".repeat(1 << 20);
    let cases = [
        // Too long for its field.
        (
            "search_orders",
            json!({ "query": huge }),
            "/query",
            ErrorKind::SchemaMismatch,
        ),
        // Breaks a pattern.
        (
            "book_flight",
            json!({ "from": huge }),
            "/from",
            ErrorKind::SchemaMismatch,
        ),
        // The wrong type.
        (
            "book_flight",
            json!({ "from": "SFO", "passengers": huge }),
            "/passengers",
            ErrorKind::SchemaMismatch,
        ),
        // Not one of the options.
        (
            "book_flight",
            json!({ "from": "SFO", "cabin": huge }),
            "/cabin",
            ErrorKind::SchemaMismatch,
        ),
    ];
    for (tool, arguments, path, kind) in cases {
        let outcome = call(tool, &arguments.to_string()).await;
        assert_rejected(&outcome, kind);
        assert_eq!(paths(&outcome), [path]);
        let envelope = outcome.to_model_string();
        assert!(
            envelope.len() < 4_096,
            "{tool} {path}: the envelope is {} bytes",
            envelope.len()
        );
        assert!(
            envelope.contains("1048576 characters"),
            "says how long it was: {envelope}"
        );
    }
}

#[tokio::test]
async fn a_megabyte_field_name_or_tool_name_is_never_echoed_back() {
    let huge = "k".repeat(1 << 20);
    let mut arguments = serde_json::Map::new();
    arguments.insert("from".into(), json!("SFO"));
    arguments.insert(huge.clone(), json!(1));
    let outcome = call("book_flight", &Value::Object(arguments).to_string()).await;
    assert_rejected(&outcome, ErrorKind::UnknownArgument);
    let envelope = outcome.to_model_string();
    assert!(envelope.len() < 4_096, "{} bytes", envelope.len());
    assert!(message(&outcome).contains("valid arguments are `cabin`"));

    let outcome = registry().call(ToolCall::new("c", huge, "{}")).await;
    assert_failure(&outcome, ErrorKind::UnknownTool, true);
    assert!(outcome.to_model_string().len() < 4_096);
}

#[tokio::test]
async fn a_megabyte_of_broken_json_is_not_echoed_back() {
    let broken = format!(r#"{{"from":"{}"#, "x".repeat(1 << 20));
    let outcome = call("book_flight", &broken).await;
    assert_rejected(&outcome, ErrorKind::InvalidJson);
    assert!(outcome.to_model_string().len() < 4_096);
}

// ---------------------------------------------------------------------------------------------
// Defaults and options
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_default_is_applied_when_the_field_is_missing() {
    let outcome = call("book_flight", r#"{"from":"SFO"}"#).await;
    assert_eq!(outcome.to_model_json()["data"]["seats"], 1);
    let outcome = call("search_orders", r#"{"query":"late"}"#).await;
    assert_eq!(
        outcome.to_model_json()["data"].as_array().map(Vec::len),
        Some(3),
        "max_results defaulted to 5, capped at 3 by the tool"
    );
    let outcome = call("search_orders", r#"{"query":"late","max_results":1}"#).await;
    assert_eq!(
        outcome.to_model_json()["data"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn an_option_may_be_omitted_or_null() {
    for arguments in [
        r#"{"from":"SFO"}"#,
        r#"{"from":"SFO","cabin":null}"#,
        r#"{"from":"SFO","cabin":null,"note":null}"#,
    ] {
        let outcome = call("book_flight", arguments).await;
        assert_eq!(outcome.status(), Status::Success, "{arguments}");
        assert_eq!(outcome.to_model_json()["data"]["cabin"], Value::Null);
    }
    let outcome = call("book_flight", r#"{"from":"SFO","cabin":"first"}"#).await;
    assert_eq!(outcome.to_model_json()["data"]["cabin"], "first");
}

// ---------------------------------------------------------------------------------------------
// Many malformed inputs
// ---------------------------------------------------------------------------------------------

/// SplitMix64: a small deterministic generator, so a failing input can be replayed by seed.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

const VALID: &str =
    r#"{"from":"SFO","passengers":2,"cabin":"business","note":"aisle, \"please\" é"}"#;

/// Swaps for a JSON value: another type, an edge value, or structure.
const VALUES: &[&str] = &[
    "null",
    "true",
    "0",
    "-1",
    "1.5",
    "1e400",
    "18446744073709551616",
    "\"\"",
    "\"2\"",
    "[]",
    "[1,2]",
    "{}",
    r#"{"a":1}"#,
    "\"\\ud800\"",
    "\"SFO\"",
    "NaN",
];

const NOISE: &[&str] = &[
    "{", "}", "[", "]", ",", ":", "\"", "\\", " ", "\u{0}", "é", "🙂", "\\u", "/*", "nul", "1",
];

fn mutate(rng: &mut SplitMix64, text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = rng.below(chars.len() + 1);
    let (head, tail): (String, String) =
        (chars[..at].iter().collect(), chars[at..].iter().collect());
    match rng.below(7) {
        // Truncation.
        0 => head,
        // A character flipped to another.
        1 => {
            let mut out = head;
            out.push_str(rng.pick::<&str>(NOISE));
            out.extend(tail.chars().skip(1));
            out
        }
        // Noise inserted.
        2 => format!("{head}{}{tail}", rng.pick(NOISE)),
        // A character deleted.
        3 => format!("{head}{}", tail.chars().skip(1).collect::<String>()),
        // A value swapped for another type or an edge value.
        4 => {
            let mut value: Value = serde_json::from_str(VALID).expect("valid");
            let field = *rng.pick(&["from", "passengers", "cabin", "note", "seat"]);
            let swapped = rng.pick(VALUES);
            let mut out = serde_json::to_string(&value).expect("serializes");
            if let Ok(v) = serde_json::from_str::<Value>(swapped) {
                value[field] = v;
                out = serde_json::to_string(&value).expect("serializes");
            } else {
                // Not JSON on its own (NaN, lone surrogates): splice the text in.
                out = out.replacen("2", swapped, 1);
            }
            out
        }
        // A field dropped or duplicated.
        5 => {
            let key = *rng.pick(&[
                "\"from\":\"SFO\",",
                "\"passengers\":2,",
                "\"cabin\":\"business\",",
            ]);
            if rng.below(2) == 0 {
                text.replacen(key, "", 1)
            } else {
                text.replacen(key, &format!("{key}{key}"), 1)
            }
        }
        // Wrapped in something that is not the object.
        _ => format!(
            "{}{text}{}",
            rng.pick(&["[", "\"", "{\"a\":", ""]),
            rng.pick(&["]", "\"", "}", ""])
        ),
    }
}

#[tokio::test]
async fn thousands_of_malformed_inputs_are_classified_at_the_validation_seam() {
    let registry = registry();
    let mut rng = SplitMix64(0x7001_5EED);
    let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
    for round in 0..3_000 {
        // Stack one to three mutations, so the inputs drift far from the valid text.
        let mut text = VALID.to_owned();
        for _ in 0..=rng.below(3) {
            text = mutate(&mut rng, &text);
        }
        let outcome = registry
            .call(ToolCall::new(
                format!("c{round}"),
                "book_flight",
                text.clone(),
            ))
            .await;
        let envelope = outcome.to_model_string();
        let reparsed: Value = serde_json::from_str(&envelope).expect("the envelope is JSON");
        match outcome.status() {
            Status::Success => {
                assert!(outcome.error_kind().is_none());
                assert!(
                    text.trim_start().starts_with('{'),
                    "round {round}: only an object is read as arguments: {text:?}"
                );
                assert_eq!(reparsed["status"], "success");
                *kinds.entry("success").or_default() += 1;
            }
            Status::Error => {
                let kind = outcome.error_kind().expect("an error has a kind");
                assert_eq!(
                    kind.seam(),
                    Seam::Validation,
                    "round {round}: {text:?} -> {envelope}"
                );
                assert!(matches!(
                    kind,
                    ErrorKind::InvalidJson | ErrorKind::SchemaMismatch | ErrorKind::UnknownArgument
                ));
                assert!(
                    !outcome.violations().is_empty(),
                    "round {round}: every rejection lists its problems: {text:?} -> {envelope}"
                );
                for v in outcome.violations() {
                    assert!(!v.message.is_empty());
                    assert!(v.path.is_empty() || v.path.starts_with('/'), "{v:?}");
                }
                assert_eq!(reparsed["error_type"], kind.as_str());
                assert_eq!(outcome.raw_arguments(), Some(text.as_str()));
                *kinds.entry(kind.as_str()).or_default() += 1;
            }
            other => panic!("round {round}: unexpected status {other}: {text:?}"),
        }
    }
    // The generator reaches every validation class, not only one of them.
    for kind in [
        "success",
        "invalid_json",
        "schema_mismatch",
        "unknown_argument",
    ] {
        assert!(kinds.get(kind).copied().unwrap_or(0) > 10, "{kinds:?}");
    }
}
