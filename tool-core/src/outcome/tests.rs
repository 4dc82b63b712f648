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

/// Every field an outcome reports reads back from its written form, and writing it again gives
/// the same text.
#[test]
fn an_outcome_written_out_reads_back_whole() {
    let schema = Arc::new(ToolSchema::new(serde_json::json!({"type": "object"})));
    let mut failed = shape_failure(&schema);
    {
        let failure = failed.failure.as_deref_mut().unwrap();
        failure.violations.push(Violation {
            path: "/n".into(),
            rule: "type",
            expected: "integer".into(),
            got: Some("\"two\"".into()),
            message: "`n` must be an integer, got \"two\"".into(),
        });
        failure.violations.push(Violation {
            path: "/m".into(),
            rule: "an_app_rule",
            expected: "even".into(),
            got: None,
            message: "`m` must be even".into(),
        });
        failure.available_tools = Some(Arc::from(vec!["count".to_owned()]));
        failure.retry_after = Some(Duration::from_millis(1500));
        failure.retryable = false;
    }
    failed.raw_arguments = Some(r#"{"n":"two"}"#.into());
    failed.repaired_by = Fixes::EMPTY.with(Fix::TrailingComma).with(Fix::Model);
    failed.attempts = 2;
    failed.elapsed = Duration::from_micros(2_500);
    failed.history = Some(Box::new(Attempts(vec![
        AttemptRecord {
            number: 1,
            waited: Duration::ZERO,
            elapsed: Duration::from_micros(900),
            error: Some(ErrorKind::Timeout),
        },
        AttemptRecord {
            number: 2,
            waited: Duration::from_micros(250_000),
            elapsed: Duration::from_micros(1_000),
            error: Some(ErrorKind::Timeout),
        },
    ])));
    failed.retry_stop = Some(RetryStop::Attempts);

    let mut ok = Outcome::success(
        "call_2".into(),
        Arc::from("count"),
        Status::Success,
        RawValue::from_string(r#"{"n":2}"#.into()).unwrap(),
    );
    ok.marks.set(Marks::REPLAYED);
    ok.marks.set(Marks::CONTENT);
    ok.degraded = Some(ErrorKind::Unavailable);

    for outcome in [failed, ok] {
        let text = serde_json::to_string(&outcome).unwrap();
        let back: Outcome = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_string(&back)
                .unwrap()
                .replace("an_app_rule", "custom"),
            text.replace("an_app_rule", "custom")
        );
        assert_eq!(
            back.to_model_string(),
            outcome.to_model_string().replace("an_app_rule", "custom")
        );
        assert_eq!(back.call_id(), outcome.call_id());
        assert_eq!(back.status(), outcome.status());
        assert_eq!(back.attempts(), outcome.attempts());
        assert_eq!(back.elapsed(), outcome.elapsed());
        assert_eq!(back.attempt_history(), outcome.attempt_history());
        assert_eq!(back.retry_stop(), outcome.retry_stop());
        assert_eq!(back.repaired_by(), outcome.repaired_by());
        assert_eq!(back.raw_arguments(), outcome.raw_arguments());
        assert_eq!(back.is_replayed(), outcome.is_replayed());
        assert_eq!(back.is_degraded(), outcome.is_degraded());
        assert_eq!(back.retryable(), outcome.retryable());
        assert_eq!(back.retry_after(), outcome.retry_after());
    }
    // An error without its failure is refused, not read as a success.
    let broken = r#"{"call_id":"c","tool":"t","status":"error","attempts":1,"elapsed_us":0}"#;
    assert!(serde_json::from_str::<Outcome>(broken).is_err());
}

/// A plain success is written by its own short path: the same text as the envelope's writer,
/// its tree and serde write of it. Every other success (a fallback's, a replay's, a repaired
/// call's, an empty result's) takes the envelope's path and keeps what it says.
#[test]
fn a_plain_success_is_written_as_its_envelope_says() {
    let data =
        |text: &str| RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}"));
    let success = |status, text: &str| {
        Outcome::success("call_1".to_owned(), Arc::from("lookup"), status, data(text))
    };
    let mut plain = Vec::new();
    for attempts in [0, 1, 7, u16::MAX] {
        let mut outcome = success(Status::Success, r#"{"a":"x\"y\n","n":[1,2.5,null]}"#);
        outcome.attempts = attempts;
        plain.push(outcome);
    }
    plain.push(success(Status::Success, r#""café \" \\ \n""#));
    let mut degraded = success(Status::Success, "1");
    degraded.degraded = Some(ErrorKind::Timeout);
    let mut replayed = success(Status::Success, "2");
    replayed.marks = Marks(Marks::REPLAYED);
    let mut repaired = success(Status::Success, "3");
    repaired.repaired_by = Fixes::default().with(Fix::CodeFence);
    let others = [degraded, replayed, repaired, success(Status::Empty, "[]")];
    for outcome in &plain {
        assert!(outcome.plain_success().is_some());
    }
    for outcome in &others {
        assert!(outcome.plain_success().is_none());
    }
    for outcome in plain.iter().chain(&others) {
        let text = outcome.to_model_string();
        let written = serde_json::to_string(&outcome.envelope()).unwrap_or_default();
        assert_eq!(text, written);
        assert_eq!(text, outcome.to_model_json().to_string());
    }
    assert_eq!(
        plain[1].to_model_string(),
        r#"{"status":"success","data":{"a":"x\"y\n","n":[1,2.5,null]},"attempts":1}"#
    );
    assert!(!plain[0].to_model_string().contains("attempts"));
}
