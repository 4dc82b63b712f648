//! What checking one call's arguments costs at worst, for a tool defined at run time whose
//! schema came from somewhere else: each case is an argument of up to 1 MiB (the registry's
//! default limit) against a schema built to cost the most, through `registry.call`, the
//! median of 7 runs, on one worker of a current-thread runtime.
//!
//! ```text
//! cargo bench --bench hostile_validation
//! ```

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolwright::prelude::*;
use toolwright::providers::Provider;
use toolwright::{DynamicTool, Effect};

fn registry(schema: Value) -> Registry {
    let tool = DynamicTool::builder("hostile")
        .description("A tool whose schema came from somewhere else.")
        .input_schema(schema)
        .handler(|_, _| async { Ok(json!("ran")) })
        .effect(Effect::ReadOnly)
        .timeout(Duration::from_secs(60))
        .providers([Provider::Mcp])
        .build()
        .unwrap();
    Registry::builder().dynamic_tool(tool).build().unwrap()
}

fn array_of(items: Value, element: &str, count: usize) -> (Value, String) {
    let schema = json!({"type": "object", "properties": {"x": {"type": "array", "items": items}}});
    let elements = vec![element; count].join(",");
    (schema, format!("{{\"x\":[{elements}]}}"))
}

fn branches(count: usize, last: Option<Value>) -> Value {
    let mut list: Vec<Value> = (0..count)
        .map(|i| json!({"type": "integer", "minimum": i + 10}))
        .collect();
    list.extend(last);
    json!({ "anyOf": list })
}

fn doubling_chain(steps: usize) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..steps {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert(format!("d{steps}"), json!({"type": "integer"}));
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs})
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cases: Vec<(&str, Value, String)> = Vec::new();
    // 500,000 one-digit elements (1 MB): 7 steps each (the array's `items` and six branches),
    // near the 8 per element that 4 steps per byte allow; the branch that holds is the last.
    let (s, a) = array_of(branches(5, Some(json!({"type": "integer"}))), "1", 500_000);
    cases.push((
        "valid, near the step bound: 500,000 elements x a 6-branch anyOf",
        s,
        a,
    ));
    let (s, a) = array_of(branches(6, None), "1", 500_000);
    cases.push((
        "invalid, too large to list: the same, no branch holds",
        s,
        a,
    ));
    // 16,000 strings of 62 characters (1 MB): 7 steps each, so the report of every problem fits
    // its bound (1 step per 8 bytes) and is built.
    let string = format!("\"{}\"", "s".repeat(62));
    let (s, a) = array_of(branches(6, None), &string, 16_000);
    cases.push((
        "invalid, every problem listed: 16,000 strings x a 6-branch anyOf",
        s,
        a,
    ));
    let (s, a) = array_of(branches(20, None), "1", 100_000);
    cases.push((
        "too costly, refused unchecked: 100,000 elements x a 20-branch anyOf",
        s,
        a,
    ));
    let pattern: Vec<Value> = (0..3)
        .map(|i| json!({"type": "string", "pattern": format!("^(a|b)*{i}$")}))
        .collect();
    let long = "a".repeat(1_000_000);
    cases.push((
        "a 1 MB string x 3 patterns (anyOf)",
        json!({"type": "object", "properties": {"x": {"anyOf": pattern}}}),
        format!("{{\"x\":\"{long}\"}}"),
    ));
    cases.push((
        "a 9-byte argument x a 20-step doubling $ref chain",
        doubling_chain(20),
        r#"{"x":"s"}"#.to_owned(),
    ));
    let constants: Vec<Value> = (0..20_000).map(|i| json!(format!("v{i}"))).collect();
    let (s, a) = array_of(json!({ "enum": constants }), "\"zz\"", 200_000);
    cases.push(("200,000 elements x a 20,000-value enum, all wrong", s, a));

    println!("| case | bytes | outcome | median of 7 |");
    println!("|---|---|---|---|");
    for (name, schema, arguments) in cases {
        let registry = registry(schema);
        let mut times = Vec::new();
        let mut kind = String::new();
        for _ in 0..7 {
            let call = ToolCall::new("c1", "hostile", arguments.clone());
            let start = Instant::now();
            let outcome = runtime.block_on(registry.call(call));
            times.push(start.elapsed());
            kind = outcome
                .error_kind()
                .map_or_else(|| "ok".to_owned(), |k| k.as_str().to_owned());
        }
        times.sort();
        println!(
            "| {name} | {} | {kind} | {:.1} ms |",
            arguments.len(),
            times[3].as_secs_f64() * 1e3
        );
    }
}
