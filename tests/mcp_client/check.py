"""The official Python MCP SDK's client driving examples/mcp_server over stdio and HTTP.

    python tests/mcp_client/check.py path/to/mcp_server

Every check raises on a mismatch, so the script exits non-zero and CI fails. Loopback only.
"""

import asyncio
import json
import socket
import subprocess
import sys
import time

import httpx2
from mcp import types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

TOOLS = ["get_order", "refund_order", "report_stats", "search_orders", "slow_report"]


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"  ok  {what}")


def envelope(result):
    text = json.loads(result.content[0].text)
    check(text == result.structured_content, "text content and structuredContent are one envelope")
    return result.structured_content


def answering(action):
    async def elicit(context, params):
        elicit.asked.append(params.message)
        return types.ElicitResult(action=action, content={} if action == "accept" else None)

    elicit.asked = []
    return elicit


async def main_cases(session, label, expected_tools=TOOLS):
    init = session.initialize_result if hasattr(session, "initialize_result") else None
    tools = (await session.list_tools()).tools
    check([t.name for t in tools] == expected_tools, f"{label}: tools/list names")
    for tool in tools:
        types.Tool.model_validate(tool.model_dump(by_alias=True, exclude_none=True))
        check(tool.input_schema["type"] == "object" and tool.output_schema is not None,
              f"{label}: {tool.name} has input and output schemas")
    search = next(t for t in tools if t.name == "search_orders")
    check(search.annotations.read_only_hint is True, f"{label}: readOnlyHint from read_only")

    good = await session.call_tool("search_orders", {"query": "ada"})
    check(good.is_error is False and envelope(good)["status"] == "success", f"{label}: good call")
    check(envelope(good)["data"][0]["id"] == "A1001", f"{label}: good call data")

    bad = await session.call_tool("search_orders", {"query": "", "max_results": 50})
    body = envelope(bad)
    check(bad.is_error is True and body["error_type"] == "schema_mismatch",
          f"{label}: malformed arguments are an isError result")
    check(len(body["errors"]) == 2, f"{label}: every violation reported")

    failing = await session.call_tool("get_order", {"order_id": "A9999"})
    check(failing.is_error is True and envelope(failing)["error_type"] == "not_found",
          f"{label}: a failing tool is an isError result")

    try:
        await session.call_tool("refund_everything", {})
        raise AssertionError(f"{label}: unknown tool answered with a result")
    except MCPError as e:
        check(e.code == -32602, f"{label}: unknown tool is JSON-RPC -32602")
        check("search_orders" in e.message and e.data["available_tools"] == expected_tools,
              f"{label}: unknown tool error lists the available tools")

    await session.send_ping()
    check(True, f"{label}: ping")


async def refund(session):
    await session.call_tool("search_orders", {"query": "ada"})
    result = await session.call_tool("refund_order", {"order_id": "A1001", "amount": 80.0})
    return envelope(result)


async def progress(session, label):
    seen = []

    async def on_progress(done, total, message):
        seen.append((done, total, message))

    result = await session.call_tool("slow_report", {"seconds": 1}, progress_callback=on_progress)
    check(envelope(result)["status"] == "success", f"{label}: a call with a progressToken succeeds")
    check(len(seen) >= 2, f"{label}: progress notifications arrived before the result ({len(seen)})")
    check(all(a[0] < b[0] for a, b in zip(seen, seen[1:])), f"{label}: progress increases")
    check(seen[-1][0] == 10 and seen[-1][1] == 10 and seen[-1][2] == "step 10 of 10",
          f"{label}: the last progress report (10 of 10) is delivered")
    check(len(seen) <= 10, f"{label}: at most one report per 100 ms step")


async def cancel_slow(session, label):
    before = envelope(await session.call_tool("report_stats", {}))["data"]
    task = asyncio.create_task(session.call_tool("slow_report", {"seconds": 3}))
    await asyncio.sleep(0.8)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    await asyncio.sleep(0.5)
    mid = envelope(await session.call_tool("report_stats", {}))["data"]
    await asyncio.sleep(3.0)
    after = envelope(await session.call_tool("report_stats", {}))["data"]
    check(after["started"] == before["started"] + 1, f"{label}: the slow call started")
    check(after["finished"] == before["finished"], f"{label}: the cancelled call never finished")
    check(after["steps"] == mid["steps"], f"{label}: the tool stopped when cancelled")


async def stdio(binary):
    print("== stdio")
    params = StdioServerParameters(command=binary, args=[])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await main_cases(session, "stdio")
            body = await refund(session)
            check(body["error_type"] == "approval_denied",
                  "stdio: no elicitation, a large refund is denied by the fallback approver")
            await progress(session, "stdio")
            await cancel_slow(session, "stdio")

    for action, expected in [("accept", "success"), ("decline", "approval_denied")]:
        elicit = answering(action)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                body = await refund(session)
                got = body["status"] if expected == "success" else body.get("error_type")
                check(got == expected, f"stdio: elicitation {action} -> {expected}")
                check(len(elicit.asked) == 1 and "refund_order" in elicit.asked[0],
                      f"stdio: the user was shown the tool and its arguments")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(binary, port, auth):
    args = [binary, "--http", f"127.0.0.1:{port}"] + (["--auth"] if auth else [])
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the HTTP server did not start")


async def http(binary):
    print("== streamable HTTP")
    port = free_port()
    proc = start_http(binary, port, auth=True)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        headers = {"Authorization": "Bearer support-token"}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await main_cases(session, "http")
                    await progress(session, "http")
                    await cancel_slow(session, "http")

                    # a second client at the same time: its own session
                    async with create_mcp_http_client(headers=headers) as client2:
                        async with streamable_http_client(url, http_client=client2) as (r2, w2):
                            async with ClientSession(r2, w2) as other:
                                await other.initialize()
                                result = await other.call_tool(
                                    "refund_order", {"order_id": "A1001", "amount": 5.0})
                                check(envelope(result)["error_type"] == "ungrounded_identifier",
                                      "http: two clients, separate sessions (no shared grounded ids)")

        guest_headers = {"Authorization": "Bearer guest-token"}
        async with create_mcp_http_client(headers=guest_headers) as client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    names = [t.name for t in (await session.list_tools()).tools]
                    check("refund_order" not in names, "http: a token without the scope does not see refund_order")

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient() as raw:
            r = await raw.post(url, json=init, headers=accept)
            check(r.status_code == 401 and "resource_metadata=" in r.headers.get("www-authenticate", ""),
                  "http: a missing token is 401 with the metadata challenge")
            r = await raw.post(url, json=init, headers={**accept, "Authorization": "Bearer nope"})
            check(r.status_code == 401, "http: a rejected token is 401")
            r = await raw.post(url, json=init, headers={**accept, **headers, "Origin": "http://evil.example"})
            check(r.status_code == 403, "http: a foreign Origin is 403")
            r = await raw.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
            check(r.status_code == 200 and r.json()["resource"] == url,
                  "http: protected-resource metadata is served")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def main():
    binary = sys.argv[1]
    await stdio(binary)
    await http(binary)
    print("all MCP client checks passed")


if __name__ == "__main__":
    asyncio.run(main())
