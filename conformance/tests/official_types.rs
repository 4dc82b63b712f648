//! The fixtures against the official Rust definitions: MCP through `rmcp`'s model types,
//! OpenAI through `async-openai`'s. A round trip (deserialize, serialize, compare) proves no
//! field was silently dropped, since serde ignores unknown fields by default.

use async_openai::types::chat::{
    ChatCompletionMessageToolCalls, ChatCompletionRequestMessage, ChatCompletionTools,
    CreateChatCompletionResponse,
};
use async_openai::types::responses::{InputItem, OutputItem, Tool as ResponsesTool};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool as McpTool};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use toolwright_conformance::{deferred_registry, fixtures, registry, Fixture};

/// Deserializes into `T`, serializes back, and requires the same JSON.
fn round_trip<T: DeserializeOwned + Serialize>(fixture: &Fixture, value: &Value) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "{}__{}: not a {}: {e}\n{value:#}",
            fixture.kind,
            fixture.name,
            std::any::type_name::<T>()
        )
    });
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back,
        value,
        "{}__{}: {} dropped or changed fields",
        fixture.kind,
        fixture.name,
        std::any::type_name::<T>()
    );
    typed
}

fn of_kind(kind: &str) -> Vec<Fixture> {
    let found: Vec<Fixture> = fixtures().into_iter().filter(|f| f.kind == kind).collect();
    assert!(!found.is_empty(), "no fixtures of {kind}");
    found
}

#[test]
fn mcp_tool_definitions_are_rmcp_tools_with_the_metadata_hints() {
    let (registry, deferred) = (registry(), deferred_registry());
    for fixture in of_kind("mcp.tools") {
        for value in fixture.value.as_array().unwrap() {
            let tool: McpTool = round_trip(&fixture, value);
            let spec = registry
                .spec(&tool.name)
                .or_else(|| deferred.spec(&tool.name))
                .unwrap();
            let annotations = tool.annotations.as_ref().unwrap();
            assert_eq!(annotations.read_only_hint, Some(spec.read_only()));
            assert_eq!(annotations.idempotent_hint, Some(spec.idempotent()));
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&Value::from("object")),
                "{}",
                tool.name
            );
            assert_eq!(
                tool.output_schema.as_ref().unwrap().get("type"),
                Some(&Value::from("object"))
            );
        }
    }
}

#[test]
fn mcp_call_tool_results_are_rmcp_results() {
    for fixture in of_kind("mcp.call_tool_result") {
        let result: CallToolResult = round_trip(&fixture, &fixture.value);
        let structured = result.structured_content.unwrap();
        assert_eq!(
            result.is_error,
            Some(structured["status"] == "error"),
            "{}",
            fixture.name
        );
    }
}

#[test]
fn mcp_call_requests_are_rmcp_call_params() {
    for fixture in of_kind("mcp.call_tool_request") {
        let params: CallToolRequestParams = round_trip(&fixture, &fixture.value["params"]);
        let call = toolwright::providers::mcp::parse_request(&fixture.value).unwrap();
        assert_eq!(call.name(), params.name);
        let arguments: Value = serde_json::from_str(call.arguments()).unwrap();
        assert_eq!(Some(arguments), params.arguments.map(Value::Object));
    }
}

#[test]
fn openai_chat_exports_are_async_openai_tools() {
    for fixture in of_kind("openai.chat.tools") {
        for value in fixture.value.as_array().unwrap() {
            let tool: ChatCompletionTools = round_trip(&fixture, value);
            let ChatCompletionTools::Function(function) = tool else {
                panic!("{}: not a function tool", fixture.name)
            };
            assert_eq!(
                function.function.strict,
                Some(fixture.name.ends_with("_strict"))
            );
        }
    }
}

#[test]
fn openai_responses_exports_are_async_openai_tools() {
    for fixture in of_kind("openai.responses.tools") {
        for value in fixture.value.as_array().unwrap() {
            let tool: ResponsesTool = round_trip(&fixture, value);
            assert!(
                matches!(tool, ResponsesTool::Function(_)),
                "{}",
                fixture.name
            );
        }
    }
}

#[test]
fn openai_results_are_async_openai_messages_and_items() {
    for fixture in of_kind("openai.chat.tool_message") {
        let message: ChatCompletionRequestMessage = round_trip(&fixture, &fixture.value);
        assert!(matches!(message, ChatCompletionRequestMessage::Tool(_)));
    }
    for fixture in of_kind("openai.responses.function_call_output") {
        let item: InputItem = round_trip(&fixture, &fixture.value);
        let text = format!("{item:?}");
        assert!(text.contains("FunctionCallOutput"), "{text}");
    }
}

#[test]
fn openai_responses_the_parser_reads_are_async_openai_responses() {
    for fixture in of_kind("openai.chat.completion") {
        let response: CreateChatCompletionResponse =
            serde_json::from_value(fixture.value.clone()).unwrap();
        let official: Vec<(String, String, String)> = response.choices[0]
            .message
            .tool_calls
            .iter()
            .flatten()
            .filter_map(|c| match c {
                ChatCompletionMessageToolCalls::Function(f) => Some((
                    f.id.clone(),
                    f.function.name.clone(),
                    f.function.arguments.clone(),
                )),
                ChatCompletionMessageToolCalls::Custom(_) => None,
            })
            .collect();
        let ours: Vec<(String, String, String)> =
            toolwright::providers::openai::parse_calls(&fixture.value)
                .unwrap()
                .into_iter()
                .map(|c| (c.id().into(), c.name().into(), c.arguments().into()))
                .collect();
        assert_eq!(ours, official);
    }
    for fixture in of_kind("openai.responses.output") {
        let items: Vec<OutputItem> = serde_json::from_value(fixture.value.clone()).unwrap();
        let official: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                OutputItem::FunctionCall(call) => Some(call.call_id.clone()),
                _ => None,
            })
            .collect();
        let ours: Vec<String> = toolwright::providers::openai::parse_response_calls(&fixture.value)
            .unwrap()
            .into_iter()
            .map(|c| c.id().to_owned())
            .collect();
        assert_eq!(ours, official);
    }
}

#[test]
fn the_agents_openai_requests_are_async_openai_requests() {
    use async_openai::types::chat::CreateChatCompletionRequest;
    use async_openai::types::responses::CreateResponse;

    let chat = of_kind("openai.chat.request");
    assert_eq!(chat.len(), 2, "plain and streaming");
    for fixture in chat {
        let request: CreateChatCompletionRequest = serde_json::from_value(fixture.value.clone())
            .unwrap_or_else(|e| {
                panic!(
                    "{}: not a chat request: {e}\n{:#}",
                    fixture.name, fixture.value
                )
            });
        // system, user, assistant (3 calls), 3 results, assistant (2 calls), 2 results, answer
        assert_eq!(request.messages.len(), 10, "{}", fixture.name);
        let tool_results = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatCompletionRequestMessage::Tool(_)))
            .count();
        assert_eq!(tool_results, 5);
    }
    for fixture in of_kind("openai.responses.request") {
        let request: CreateResponse = serde_json::from_value(fixture.value.clone())
            .unwrap_or_else(|e| panic!("not a Responses request: {e}\n{:#}", fixture.value));
        assert!(request.instructions.is_some());
    }
}
