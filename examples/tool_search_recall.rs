//! How often the tool search finds the right tool, on the Berkeley Function Calling Leaderboard
//! (BFCL v4, as the `bfcl-eval` package on PyPI ships it).
//!
//! Every function of four of its sets (`simple_python`, `multiple`, `live_simple`,
//! `live_multiple`: definitions and requests written by the BFCL authors and, for the `live`
//! sets, contributed by users) becomes one deferred tool of one registry, one per name (the
//! first definition of a name wins; the `live` sets repeat functions under reworded
//! descriptions, as no registry could hold them): its name, its
//! description, its parameters' names, descriptions and enum values. BFCL's types are not JSON
//! Schema and the search does not read types, so each parameter is a string or an object here,
//! and the tools target MCP only (some parameter names, such as `año_vehiculo`, are not ones
//! every provider accepts). Each request is searched over all of them; the function its ground
//! truth calls first must come back. Printed: recall@1 and recall@5, per set and overall.
//!
//! ```text
//! pip download bfcl-eval==2026.3.23 --no-deps -d /tmp/bfcl
//! (cd /tmp/bfcl && unzip -q bfcl_eval-2026.3.23-py3-none-any.whl)
//! cargo run --release --example tool_search_recall -- /tmp/bfcl/bfcl_eval/data
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{json, Map, Value};
use toolwright::dynamic::DynamicTool;
use toolwright::providers::Provider;
use toolwright::{Registry, Session};

const SETS: &[&str] = &["simple_python", "multiple", "live_simple", "live_multiple"];

/// One request: its set, the text the user wrote, and the tool it must find.
struct Case {
    set: &'static str,
    query: String,
    tool: String,
}

/// A name every provider accepts (`^[a-zA-Z0-9_-]{1,64}$`), made unique in `taken`.
fn tool_name(name: &str, taken: &mut HashMap<String, usize>) -> String {
    let mut clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(56)
        .collect();
    let seen = taken.entry(clean.clone()).or_insert(0);
    *seen += 1;
    if *seen > 1 {
        clean.push_str(&format!("_{seen}"));
    }
    clean
}

/// The parameters as the search reads them: names, descriptions, enum values (nested too).
fn properties(parameters: &Value) -> Value {
    let mut out = Map::new();
    if let Some(props) = parameters.get("properties").and_then(Value::as_object) {
        for (name, property) in props {
            let mut schema = Map::new();
            if let Some(d) = property.get("description").and_then(Value::as_str) {
                schema.insert("description".into(), json!(d));
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                let strings: Vec<&Value> = values.iter().filter(|v| v.is_string()).collect();
                if !strings.is_empty() {
                    schema.insert("enum".into(), json!(strings));
                }
            }
            if property.get("properties").is_some() {
                schema.insert("type".into(), json!("object"));
                schema.insert(
                    "properties".into(),
                    properties(property)["properties"].clone(),
                );
            } else {
                schema.insert("type".into(), json!("string"));
            }
            out.insert(name.clone(), Value::Object(schema));
        }
    }
    json!({ "type": "object", "properties": out })
}

fn read_lines(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect()
}

fn main() -> ExitCode {
    let Some(dir) = std::env::args().nth(1).map(PathBuf::from) else {
        eprintln!("usage: tool_search_recall BFCL_DATA_DIR (see the example's docs)");
        return ExitCode::from(2);
    };
    match run(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(dir: &Path) -> Result<(), String> {
    // BFCL's name -> the tool's name here.
    let mut tools: HashMap<String, String> = HashMap::new();
    let mut taken = HashMap::new();
    let mut builder = Registry::builder();
    let mut cases = Vec::new();
    for &set in SETS {
        let questions = read_lines(&dir.join(format!("BFCL_v4_{set}.json")))?;
        let answers = read_lines(&dir.join(format!("possible_answer/BFCL_v4_{set}.json")))?;
        let answers: HashMap<&str, &Value> = answers
            .iter()
            .filter_map(|a| Some((a["id"].as_str()?, a)))
            .collect();
        for question in &questions {
            let mut here: HashMap<String, String> = HashMap::new();
            for function in question["function"].as_array().into_iter().flatten() {
                let name = function["name"].as_str().unwrap_or_default().to_owned();
                let description = function["description"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                // One tool per name, as in a registry: the first definition of a name wins (the
                // `live` sets repeat a function under reworded descriptions).
                let key = name.clone();
                let registered = match tools.get(&key) {
                    Some(registered) => registered.clone(),
                    None => {
                        let registered = tool_name(&name, &mut taken);
                        let tool = DynamicTool::builder(registered.clone())
                            .description(description)
                            .input_schema(properties(&function["parameters"]))
                            .providers([Provider::Mcp])
                            .handler(|_args, _ctx| async { Ok(json!(null)) })
                            .build()
                            .map_err(|e| format!("{name}: {e}"))?;
                        builder = builder.dynamic_tool(tool);
                        tools.insert(key, registered.clone());
                        registered
                    }
                };
                here.insert(name, registered);
            }
            let id = question["id"].as_str().unwrap_or_default();
            let Some(answer) = answers.get(id) else {
                continue;
            };
            let Some(called) = answer["ground_truth"][0]
                .as_object()
                .and_then(|call| call.keys().next())
            else {
                continue;
            };
            let Some(tool) = here.get(called) else {
                continue;
            };
            // The user's last message of the first turn: what they asked.
            let query = question["question"][0]
                .as_array()
                .and_then(|turn| turn.iter().rev().find(|m| m["role"] == "user"))
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_owned();
            cases.push(Case {
                set,
                query,
                tool: tool.clone(),
            });
        }
    }
    let names: Vec<String> = tools.values().cloned().collect();
    let registry = builder
        .deferred(names)
        .max_argument_bytes(1 << 20)
        .build()
        .map_err(|e| e.to_string())?;
    let session = Session::new("recall");
    let mut by_set: Vec<(&str, usize, usize, usize)> = Vec::new();
    let (mut total, mut at1, mut at5) = (0, 0, 0);
    for &set in SETS {
        let (mut n, mut one, mut five) = (0, 0, 0);
        for case in cases.iter().filter(|c| c.set == set) {
            let hits = registry.search(&session, &case.query, 5);
            n += 1;
            if hits.first().is_some_and(|h| h.name == case.tool) {
                one += 1;
            }
            if hits.iter().any(|h| h.name == case.tool) {
                five += 1;
            }
        }
        by_set.push((set, n, one, five));
        total += n;
        at1 += one;
        at5 += five;
    }
    println!(
        "tool search recall on BFCL v4 ({} distinct functions as deferred tools, {} requests)",
        tools.len(),
        total
    );
    for (set, n, one, five) in by_set {
        println!(
            "  {set:<14} {n:>5} requests: recall@1 {:5.1}%, recall@5 {:5.1}%",
            100.0 * one as f64 / n.max(1) as f64,
            100.0 * five as f64 / n.max(1) as f64
        );
    }
    println!(
        "  {:<14} {total:>5} requests: recall@1 {:5.1}%, recall@5 {:5.1}%",
        "all",
        100.0 * at1 as f64 / total.max(1) as f64,
        100.0 * at5 as f64 / total.max(1) as f64
    );
    Ok(())
}
