#!/usr/bin/env python3
"""Writes a crate of N tools (four parameters each) to measure what a tool costs to compile:
with toolwright's `#[tool]` (depending on toolwright at PATH), or the same tools written for
rmcp 3.11 (`#[tool_router]` on an impl, parameters in a `Parameters<..>` struct per tool, the
structs above the impl; with `--structs-last`, below it, so that an edit of a method moves them).

    python3 scripts/tools_crate.py /tmp/tools100 100 /work/main
    python3 scripts/tools_crate.py /tmp/rmcp100 100 /work/main --rmcp
    python3 scripts/tools_crate.py /tmp/rmcp100 100 /work/main --rmcp --structs-last
    python3 scripts/tools_crate.py /tmp/tools100 100 /work/main --measure

`--runtime` writes a crate whose `main` measures the compiled tools at run time instead:
build time and live heap of the N-tool registry, each provider's export (time, compact size), a successful
call in the N-tool registry against one of its first 10 tools alone (interleaved rounds,
median ratio), and with all but 10 tools deferred, what a session is shown before it searched
and the search's latency. Run it with `cargo run --release` in the crate.

    python3 scripts/tools_crate.py /tmp/tools1000 1000 /work/main --runtime
    (cd /tmp/tools1000 && cargo run --release)

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


RUNTIME_MAIN = r"""use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Instant;

/// Counts the live heap, to weigh a built registry.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's arguments; the
// counter is only arithmetic beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

use toolwright::providers::Provider;
use toolwright::{Registry, Session, ToolCall};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut builds = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        black_box(CRATE::registry());
        builds.push(start.elapsed().as_secs_f64() * 1e3);
    }
    println!("COUNT compiled tools: build median {:.2} ms", median(&mut builds));
    let before = LIVE.load(Ordering::Relaxed);
    let all = CRATE::registry();
    let held = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "  live heap of the registry: {:.2} MiB ({:.1} KiB per tool)",
        held as f64 / (1024.0 * 1024.0),
        held as f64 / 1024.0 / COUNT as f64
    );
    for &provider in Provider::ALL {
        let mut times = Vec::new();
        let mut size = 0;
        for _ in 0..9 {
            let start = Instant::now();
            let exported = all.export(provider).expect("exports");
            times.push(start.elapsed().as_secs_f64() * 1e3);
            size = serde_json::to_string(&exported).map_or(0, |t| t.len());
        }
        println!("  export {provider:?}: median {:.2} ms, {} bytes", median(&mut times), size);
    }
    let small = CRATE::first(10);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let side = |registry: &Registry| {
        let calls: Vec<_> = (0..200)
            .map(|i| ToolCall::new(format!("c{i}"), "tool_3", r#"{"query":"cable","limit":5}"#))
            .collect();
        rt.block_on(async {
            let start = Instant::now();
            for call in calls {
                let outcome = registry.call(black_box(call)).await;
                assert!(outcome.is_ok(), "{}", outcome.to_model_string());
            }
            start.elapsed().as_nanos() as f64 / 200.0
        })
    };
    let (mut a, mut b, mut r) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..220 {
        let ten = side(&small);
        let many = side(&all);
        if round >= 20 {
            a.push(ten);
            b.push(many);
            r.push(many / ten);
        }
    }
    println!(
        "  call tool_3: 10 tools {:.0} ns, COUNT tools {:.0} ns, median ratio {:.3} (200 interleaved rounds of 200 calls)",
        median(&mut a), median(&mut b), median(&mut r)
    );
    let deferred = CRATE::deferred();
    let session = Session::new("bench");
    let shown = deferred.export_for(&session, Provider::Anthropic).expect("exports");
    println!(
        "  all but 10 deferred: {} tools shown before a search, {} bytes (Anthropic)",
        shown.as_array().map_or(0, Vec::len),
        serde_json::to_string(&shown).map_or(0, |t| t.len())
    );
    let mut searches = Vec::new();
    for i in 0..1000 {
        let query = format!("tool number {} look something up", i % COUNT);
        let start = Instant::now();
        black_box(deferred.search(&session, &query, 5));
        searches.push(start.elapsed().as_secs_f64() * 1e6);
    }
    println!("  Registry::search median {:.1} us", median(&mut searches));
}
"""


def toolwright_crate():
    deps = f"""toolwright = {{ path = "{toolwright}" }}
tokio = {{ version = "1", features = ["rt", "macros"] }}
serde_json = "1\""""
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
    if "--runtime" in flags:
        lines.append("/// The first `n` tools (at most 10).")
        lines.append("pub fn first(n: usize) -> Registry {")
        lines.append("    let mut b = Registry::builder();")
        for i in range(min(count, 10)):
            lines.append(f"    if n > {i} {{ b = b.tool({pascal(f'tool_{i}')}); }}")
        lines.append("    b.build().unwrap_or_else(|e| panic!(\"{e}\"))\n}")
        lines.append("/// Every tool, all but the first 10 deferred.")
        lines.append("pub fn deferred() -> Registry {")
        lines.append("    registry_builder()")
        lines.append(f"        .deferred((10..{count}).map(|i| format!(\"tool_{{i}}\")))")
        lines.append("        .build()\n        .unwrap_or_else(|e| panic!(\"{e}\"))\n}")
        lines.append("fn registry_builder() -> toolwright::RegistryBuilder {")
        lines.append("    Registry::builder()")
        for i in range(count):
            lines.append(f"        .tool({pascal(f'tool_{i}')})")
        lines.append("}")
        main = RUNTIME_MAIN.replace("CRATE", name).replace("COUNT", str(count))
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
