//! The most violations one failure lists, through the real pipeline.

use toolwright::prelude::*;

/// Sum some weights.
#[tool(read_only)]
async fn sum_weights(
    /// The weights, in grams.
    weights: Vec<u32>,
) -> Result<u64, ToolError> {
    Ok(weights.iter().map(|w| u64::from(*w)).sum())
}

/// An argument with a hundred thousand wrong items, under the size limit: the failure lists the
/// first `MAX_REPORTED_VIOLATIONS` and says so, instead of an envelope larger than the call.
#[tokio::test]
async fn a_flood_of_violations_is_cut_at_the_reported_maximum_and_says_so() {
    use toolwright::validate::MAX_REPORTED_VIOLATIONS;
    let registry = Registry::builder().tool(SumWeights).build().unwrap();
    let items = vec![r#""x""#; 100_000].join(",");
    let text = format!(r#"{{"weights":[{items}]}}"#);
    assert!(text.len() < toolwright::validate::DEFAULT_MAX_ARGUMENT_BYTES);
    let outcome = registry
        .call(ToolCall::new("c1", "sum_weights", text.clone()))
        .await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::SchemaMismatch));
    assert_eq!(outcome.violations().len(), MAX_REPORTED_VIOLATIONS);
    assert_eq!(outcome.violations()[0].path, "/weights/0");
    let envelope = outcome.to_model_string();
    assert!(
        envelope.contains("only the first 50 problems are listed"),
        "{envelope}"
    );
    assert!(envelope.len() < 20_000, "{} bytes", envelope.len());
    // A few wrong items are all listed, without the note.
    let few = registry
        .call(ToolCall::new(
            "c2",
            "sum_weights",
            r#"{"weights":[1,"x",3,"y"]}"#,
        ))
        .await;
    assert_eq!(few.violations().len(), 2);
    assert!(!few.to_model_string().contains("only the first"));
}
