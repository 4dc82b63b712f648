use super::*;

fn shape_failure(schema: &Arc<ToolSchema>) -> Outcome {
    let mut failure = Failure::new(ErrorKind::SchemaMismatch, "`n` must be an integer");
    failure.expected_schema = Some(Arc::clone(schema));
    Outcome::failed("call_1".to_owned(), Arc::from("count"), failure)
}

#[test]
fn a_failed_calls_text_envelope_is_its_tree_written_out_first_and_later() {
    let schema = Arc::new(ToolSchema::new(serde_json::json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "a \"quoted\" count\nof caf\u{e9}s \u{1f600}"}},
        "required": ["n"],
    })));
    let outcome = shape_failure(&schema);
    let tree = outcome.to_model_json().to_string();
    assert!(tree.contains("expected_schema"));
    assert_eq!(
        outcome.to_model_string(),
        tree,
        "written on the first failure"
    );
    assert_eq!(outcome.to_model_string(), tree, "copied on a later one");
    // Another schema with other text is never answered with the first one's.
    let other = Arc::new(ToolSchema::new(
        serde_json::json!({"type": "object", "properties": {}}),
    ));
    let outcome = shape_failure(&other);
    assert_eq!(
        outcome.to_model_string(),
        outcome.to_model_json().to_string()
    );
}

#[test]
fn a_schemas_text_is_written_once_and_shared_by_its_failures() {
    let schema = Arc::new(ToolSchema::new(serde_json::json!({"title": "once"})));
    let first = schema.text().map(std::ptr::from_ref);
    let _ = shape_failure(&schema).to_model_string();
    assert_eq!(schema.text().map(std::ptr::from_ref), first);
    assert_eq!(
        schema.text().map(RawValue::get),
        Some(r#"{"title":"once"}"#)
    );
}

#[test]
fn error_type_strings_round_trip_and_are_unique() {
    let mut seen = std::collections::HashSet::new();
    for kind in ErrorKind::ALL {
        assert!(seen.insert(kind.as_str()), "duplicate {kind}");
        assert_eq!(kind.as_str().parse::<ErrorKind>(), Ok(*kind));
    }
    assert_eq!(seen.len(), 21);
    assert!("schema_missmatch".parse::<ErrorKind>().is_err());
}

#[test]
fn only_transient_kinds_are_retried_by_the_framework() {
    let transient: Vec<_> = ErrorKind::ALL.iter().filter(|k| k.is_transient()).collect();
    assert_eq!(
        transient,
        [
            &ErrorKind::Timeout,
            &ErrorKind::RateLimited,
            &ErrorKind::Unavailable
        ]
    );
}

#[test]
fn validation_failures_never_count_against_a_breaker() {
    for kind in ErrorKind::ALL
        .iter()
        .filter(|k| k.seam() == Seam::Validation)
    {
        assert!(!kind.counts_against_breaker(), "{kind}");
    }
}
