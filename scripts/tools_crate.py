#!/usr/bin/env python3
"""Writes a crate of N `#[tool]` functions (four parameters each) that depends on toolwright at
PATH, to measure what the macro and the registry compile per tool:

    python3 scripts/tools_crate.py /tmp/tools100 100 /work/main
    cd /tmp/tools100 && cargo llvm-lines --lib | head -30      # or: cargo build --release
"""
import os
import sys

out, count, toolwright = sys.argv[1], int(sys.argv[2]), os.path.abspath(sys.argv[3])
os.makedirs(os.path.join(out, "src"), exist_ok=True)
with open(os.path.join(out, "Cargo.toml"), "w") as f:
    f.write(f"""[package]
name = "tools{count}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
toolwright = {{ path = "{toolwright}" }}
tokio = {{ version = "1", features = ["rt", "macros"] }}

[workspace]
""")
lines = ["use toolwright::prelude::*;", ""]
for i in range(count):
    lines.append(f"""/// Tool number {i}: look something up.
#[tool(timeout_ms = 2000, read_only)]
pub async fn tool_{i}(
    /// What to look for.
    #[arg(length(min = 1, max = 200))]
    query: String,
    /// How many results.
    #[arg(range(min = 1, max = 50))]
    limit: u32,
    /// Only open items.
    open: Option<bool>,
    /// A tag.
    tag: Option<String>,
) -> Result<Vec<String>, ToolError> {{
    Ok(vec![format!("{{query}}{{limit}}{{open:?}}{{tag:?}}")])
}}
""")
lines.append("pub fn registry() -> Registry {")
lines.append("    Registry::builder()")
for i in range(count):
    name = "".join(p.capitalize() for p in f"tool_{i}".split("_"))
    lines.append(f"        .tool({name})")
lines.append("        .build()\n        .unwrap_or_else(|e| panic!(\"{e}\"))\n}")
with open(os.path.join(out, "src", "lib.rs"), "w") as f:
    f.write("\n".join(lines) + "\n")
