#!/usr/bin/env python3
"""Writes a crate of N tools (four parameters each) to measure what a tool costs to compile:
with toolwright's `#[tool]` (depending on toolwright at PATH), or the same tools written for
rmcp 3.11 (`#[tool_router]` on an impl, parameters in a `Parameters<..>` struct per tool, the
structs above the impl; with `--structs-last`, below it, so that an edit of a method moves them).

    python3 scripts/tools_crate.py /tmp/tools100 100 /work/main
    python3 scripts/tools_crate.py /tmp/rmcp100 100 /work/main --rmcp
    python3 scripts/tools_crate.py /tmp/rmcp100 100 /work/main --rmcp --structs-last
    python3 scripts/tools_crate.py /tmp/tools100 100 /work/main --measure

`--measure` writes the crate, builds its dependencies, then times (debug) a clean build of the
crate alone and five kinds of rebuild, each after an edit that moves the text below it, three
times each (median): the first tool's doc comment made longer, the first tool's doc grown by a
line (the lines below move too), the last tool's doc comment made longer, a `//` comment line
added at the top of the file (which moves every tool, and in the rmcp crate every parameter
struct too, and changes nothing else), and the crate's own `//!` doc edited (which moves every
tool and changes the crate's attributes). Each rebuild reports its CPU seconds and how many
codegen units rustc compiled again (object files rewritten in the incremental cache: a count
that does not depend on the machine's load); the script reports the debug binary's size and the
`cargo llvm-lines` total (set `CARGO_TARGET_DIR` to share built dependencies between crates).
Times are CPU seconds (user + system) of the build, which move less than wall time on a
loaded machine. The lock file at PATH pins the dependencies, so both crates build
against the versions toolwright is tested with. Put the crates under /tmp, not in the repository.
"""
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = {a for a in sys.argv[1:] if a.startswith("--")}
out, count, toolwright = args[0], int(args[1]), os.path.abspath(args[2])
rmcp = "--rmcp" in flags
structs_last = "--structs-last" in flags
name = f"{'rmcp' if rmcp else 'tools'}{count}"


def pascal(snake):
    return "".join(p.capitalize() for p in snake.split("_"))


def toolwright_crate():
    deps = f"""toolwright = {{ path = "{toolwright}" }}
tokio = {{ version = "1", features = ["rt", "macros"] }}"""
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
        lines.append(f"        .tool({pascal(f'tool_{i}')})")
    lines.append("        .build()\n        .unwrap_or_else(|e| panic!(\"{e}\"))\n}")
    main = f"fn main() {{\n    println!(\"{{}}\", {name}::registry().names().len());\n}}\n"
    return deps, "\n".join(lines) + "\n", main


def rmcp_crate():
    deps = """rmcp = { version = "3.11", default-features = false, features = ["server", "macros"] }
serde = { version = "1", features = ["derive"] }
schemars = "1"
tokio = { version = "1", features = ["rt", "macros"] }"""
    lines = [
        "use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};",
        "use rmcp::{tool, tool_router, Json};",
        "use schemars::JsonSchema;",
        "use serde::Deserialize;",
        "",
        "#[derive(Clone)]",
        "pub struct Server {",
        "    pub tool_router: ToolRouter<Self>,",
        "}",
        "",
    ]
    structs = []
    for i in range(count):
        structs.append(f"""/// Arguments of tool number {i}.
#[derive(Deserialize, JsonSchema)]
pub struct Tool{i}Params {{
    /// What to look for.
    #[schemars(length(min = 1, max = 200))]
    query: String,
    /// How many results.
    #[schemars(range(min = 1, max = 50))]
    limit: u32,
    /// Only open items.
    open: Option<bool>,
    /// A tag.
    tag: Option<String>,
}}
""")
    # The structs above the impl (an edit of a method moves none of them), or below it.
    if not structs_last:
        lines.extend(structs)
    lines.append("#[tool_router]\nimpl Server {")
    for i in range(count):
        lines.append(f"""    /// Tool number {i}: look something up.
    #[tool(annotations(read_only_hint = true))]
    pub async fn tool_{i}(
        &self,
        Parameters(Tool{i}Params {{ query, limit, open, tag }}): Parameters<Tool{i}Params>,
    ) -> Result<Json<Vec<String>>, String> {{
        Ok(Json(vec![format!("{{query}}{{limit}}{{open:?}}{{tag:?}}")]))
    }}
""")
    lines.append("}\n")
    if structs_last:
        lines.extend(structs)
    lines.append("pub fn server() -> Server {\n    Server { tool_router: Server::tool_router() }\n}")
    main = f"fn main() {{\n    println!(\"{{}}\", {name}::server().tool_router.list_all().len());\n}}\n"
    return deps, "\n".join(lines) + "\n", main


deps, lib, main = rmcp_crate() if rmcp else toolwright_crate()
os.makedirs(os.path.join(out, "src"), exist_ok=True)
with open(os.path.join(out, "Cargo.toml"), "w") as f:
    f.write(f"""[package]
name = "{name}"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
{deps}

[profile.dev]
# As toolwright's CI builds: line tables, not full debuginfo.
debug = "line-tables-only"

[workspace]
""")
with open(os.path.join(out, "src", "lib.rs"), "w") as f:
    f.write(lib)
with open(os.path.join(out, "src", "main.rs"), "w") as f:
    f.write(main)
lock = os.path.join(toolwright, "Cargo.lock")
if os.path.exists(lock) and not os.path.exists(os.path.join(out, "Cargo.lock")):
    shutil.copy(lock, os.path.join(out, "Cargo.lock"))

if "--measure" not in flags:
    sys.exit(0)


def run(*cmd):
    """Runs a command in the crate; its wall and CPU seconds (user + system of the children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(done.stderr[-4000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.monotonic() - started, cpu, done.stdout


lib_path = os.path.join(out, "src", "lib.rs")


def edit(pattern, replacement):
    """Replaces the first line starting with `pattern` (after indentation) by `replacement`."""
    with open(lib_path) as f:
        text = f.read()
    text, n = re.subn(r"^(\s*)" + re.escape(pattern) + r"[^\n]*", lambda m: m.group(1) + replacement,
                      text, count=1, flags=re.M)
    assert n == 1, pattern
    with open(lib_path, "w") as f:
        f.write(text)


def prepend(line):
    with open(lib_path) as f:
        text = f.read()
    with open(lib_path, "w") as f:
        f.write(line + text)


target = os.environ.get("CARGO_TARGET_DIR", os.path.join(out, "target"))


def emitted_since(started):
    """How many object files of the crate (library and binary) rustc wrote again since
    `started`: the codegen units it did not reuse from the incremental cache. Unlike seconds, the
    count does not depend on the machine's load."""
    incremental = os.path.join(target, "debug", "incremental")
    count = 0
    for session_root in os.listdir(incremental):
        if not session_root.startswith(name + "-"):
            continue
        for root, _, files in os.walk(os.path.join(incremental, session_root)):
            count += sum(1 for f in files
                         if f.endswith(".o") and os.path.getmtime(os.path.join(root, f)) >= started)
    return count


def rebuilds(name, change):
    """The median CPU and wall seconds of three rebuilds, each after `change(round)`, and the
    median number of codegen units compiled again."""
    cpu, wall, units = [], [], []
    for r in range(3):
        change(r)
        started = time.time()
        w, c, _ = run("cargo", "build")
        cpu.append(c)
        wall.append(w)
        units.append(emitted_since(started))
    return (f"{name} {statistics.median(cpu):.1f} s CPU ({statistics.median(wall):.1f} s wall, "
            f"{statistics.median(units):.0f} codegen units)")


run("cargo", "build")  # dependencies
run("cargo", "clean", "-p", name)
clean_wall, clean_cpu, _ = run("cargo", "build")
last = count - 1
results = [
    f"clean build {clean_cpu:.1f} s CPU ({clean_wall:.1f} s wall)",
    rebuilds("first tool's doc edited", lambda r: edit(
        "/// Tool number 0:", f"/// Tool number 0: look something up{'!' * (r + 1)}")),
    rebuilds("first tool's doc grown by a line", lambda r: edit(
        "/// Tool number 0:", f"/// Tool number 0: look something up.\n/// More{'!' * (r + 1)}")),
    rebuilds("last tool's doc edited", lambda r: edit(
        f"/// Tool number {last}:", f"/// Tool number {last}: look something up{'!' * (r + 1)}")),
    rebuilds("a line added at the top", lambda r: edit(
        "// top", "// top" + " x" * (r + 1)) if r else prepend("// top\n")),
    rebuilds("the crate's doc edited", lambda r: edit(
        "//! Tools", "//! Tools" + " x" * (r + 1)) if r else prepend("//! Tools\n")),
]
binary = os.path.getsize(os.path.join(target, "debug", name))
_, _, lines = run("cargo", "llvm-lines", "--lib")
total = re.search(r"^\s*(\d+)\s.*\(TOTAL\)", lines, re.M)
results.append(f"debug binary {binary / 1e6:.1f} MB")
results.append(f"llvm-lines {total.group(1) if total else '?'}")
print(f"{name}: " + "; ".join(results))
print("\n".join(lines.splitlines()[:25]))
