//! An upstream tool's questions (a 2026-07-28 input-required result), asked of the proxy's own
//! client through the call's `ToolContext`, all of one round together, and answered in the
//! shapes the upstream reads.

use futures_util::future::try_join_all;
use rmcp::model::{InputRequiredResult, InputResponses};
use serde_json::{json, Value};
use toolwright_core::ask::{Reply, Sampling};
use toolwright_core::{ToolContext, ToolError};

/// The answers to every question of `asked`, under the upstream's keys.
pub(super) async fn answers(
    ctx: &ToolContext,
    tool: &str,
    round: usize,
    asked: &InputRequiredResult,
) -> Result<InputResponses, ToolError> {
    let requests = asked.input_requests.clone().unwrap_or_default();
    if requests.is_empty() {
        return Err(ToolError::invalid_result(format!(
            "the upstream asked for input to `{tool}` and named no question"
        )));
    }
    let answers = requests.into_iter().map(|(key, request)| async move {
        let request = serde_json::to_value(&request).unwrap_or_default();
        // The same question keeps its name each time the call runs; a later round's
        // questions are told apart from the first's.
        let name = if round == 0 {
            key.clone()
        } else {
            format!("{key}~{round}")
        };
        let answer = answer(ctx, tool, &name, &request).await?;
        Ok::<_, ToolError>((key, answer))
    });
    Ok(try_join_all(answers).await?.into_iter().collect())
}

/// One question, asked through `ctx`, answered as the upstream's request method wants.
async fn answer(
    ctx: &ToolContext,
    tool: &str,
    name: &str,
    request: &Value,
) -> Result<Value, ToolError> {
    let params = &request["params"];
    match request["method"].as_str().unwrap_or_default() {
        "elicitation/create" => {
            let Some(schema) = params.get("requestedSchema") else {
                return Err(ToolError::invalid_result(format!(
                    "the upstream's question for `{tool}` is not a form (a URL elicitation), which the proxy does not pass on"
                )));
            };
            let message = params["message"].as_str().unwrap_or_default();
            Ok(match ctx.ask_schema(name, message, schema.clone()).await? {
                Reply::Accepted(content) => json!({"action": "accept", "content": content}),
                Reply::Declined => json!({"action": "decline"}),
                Reply::Dismissed => json!({"action": "cancel"}),
            })
        }
        "sampling/createMessage" => {
            let sampling = sampling(tool, params)?;
            let sampled = ctx.sample_named(name, sampling).await?;
            let mut result = json!({
                "role": "assistant",
                "content": {"type": "text", "text": sampled.text()},
                "model": sampled.model(),
            });
            if let Some(reason) = sampled.stop_reason() {
                result["stopReason"] = reason.into();
            }
            Ok(result)
        }
        "roots/list" => {
            let roots: Vec<Value> = ctx
                .roots_named(name)
                .await?
                .iter()
                .map(|root| match root.name() {
                    Some(named) => json!({"uri": root.uri(), "name": named}),
                    None => json!({"uri": root.uri()}),
                })
                .collect();
            Ok(json!({"roots": roots}))
        }
        other => Err(ToolError::invalid_result(format!(
            "the upstream asked `{tool}`'s client for `{other}`, which the proxy does not pass on"
        ))),
    }
}

/// A `sampling/createMessage` request's text messages as a [`Sampling`].
fn sampling(tool: &str, params: &Value) -> Result<Sampling, ToolError> {
    let unreadable = |why: &str| {
        ToolError::invalid_result(format!(
            "the upstream's sampling request for `{tool}` cannot be passed on: {why}"
        ))
    };
    let messages = params["messages"]
        .as_array()
        .filter(|m| !m.is_empty())
        .ok_or_else(|| unreadable("it has no messages"))?;
    let mut sampling: Option<Sampling> = None;
    for message in messages {
        let text = match &message["content"] {
            Value::Object(block) if block.get("type") == Some(&json!("text")) => block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            _ => return Err(unreadable("a message that is not one text block")),
        };
        let user = message["role"] == "user";
        sampling = Some(match sampling {
            None if user => Sampling::new(text),
            None => Sampling::new("").assistant(text),
            Some(s) if user => s.user(text),
            Some(s) => s.assistant(text),
        });
    }
    let mut sampling = sampling.ok_or_else(|| unreadable("it has no messages"))?;
    if let Some(max) = params["maxTokens"].as_u64() {
        sampling = sampling.with_max_tokens(u32::try_from(max).unwrap_or(u32::MAX));
    }
    if let Some(system) = params["systemPrompt"].as_str() {
        sampling = sampling.with_system(system);
    }
    if let Some(temperature) = params["temperature"].as_f64() {
        sampling = sampling.with_temperature(temperature);
    }
    for stop in params["stopSequences"].as_array().into_iter().flatten() {
        if let Some(stop) = stop.as_str() {
            sampling = sampling.with_stop(stop);
        }
    }
    Ok(sampling)
}
