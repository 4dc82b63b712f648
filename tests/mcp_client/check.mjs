// The official TypeScript MCP SDK's client driving examples/mcp_server over stdio and HTTP:
// the same checks as check.py, with `@modelcontextprotocol/sdk` (pinned in
// tests/mcp_conformance/package.json).
//
//     node tests/mcp_client/check.mjs path/to/mcp_server
//
// ESM resolves packages next to the script, so run a copy placed beside the installed
// node_modules, with wire.mjs (.ci/run copies both into target/mcp-conformance). Every check throws on a
// mismatch, so the script exits non-zero and CI fails. Loopback only.

import { spawn } from "node:child_process";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  McpError,
  ToolSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { checkProgress } from "./wire.mjs";

const TOOLS = ["get_order", "refund_order", "report_stats", "search_orders", "slow_report"];

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`  ok  ${what}`);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function envelope(result) {
  const text = JSON.parse(result.content[0].text);
  check(same(text, result.structuredContent), "text content and structuredContent are one envelope");
  return result.structuredContent;
}

const call = (client, name, args, options) =>
  client.callTool({ name, arguments: args }, CallToolResultSchema, options);

// Every client this script opens, closed at the end even on failure.
const open = new Set();

function newClient(capabilities = {}) {
  const client = new Client({ name: "toolwright-check", version: "0" }, { capabilities });
  open.add(client);
  return client;
}

async function start(client, transport) {
  await client.connect(transport);
  return client;
}

async function close(client) {
  open.delete(client);
  await client.close();
}

function answering(client, action) {
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return action === "accept" ? { action, content: {} } : { action };
  });
  return asked;
}

async function mainCases(client, label, expectedTools = TOOLS) {
  const { tools } = await client.listTools();
  check(same(tools.map((t) => t.name), expectedTools), `${label}: tools/list names`);
  for (const tool of tools) {
    ToolSchema.parse(tool);
    check(tool.inputSchema.type === "object" && tool.outputSchema != null,
      `${label}: ${tool.name} passes the SDK's ToolSchema and has input and output schemas`);
  }
  const search = tools.find((t) => t.name === "search_orders");
  check(search.annotations?.readOnlyHint === true, `${label}: readOnlyHint from read_only`);

  const good = await call(client, "search_orders", { query: "ada" });
  check(good.isError === false && envelope(good).status === "success", `${label}: good call`);
  check(envelope(good).data[0].id === "A1001", `${label}: good call data`);

  const bad = await call(client, "search_orders", { query: "", max_results: 50 });
  const body = envelope(bad);
  check(bad.isError === true && body.error_type === "schema_mismatch",
    `${label}: malformed arguments are an isError result`);
  check(body.errors.length === 2, `${label}: every violation reported`);

  const failing = await call(client, "get_order", { order_id: "A9999" });
  check(failing.isError === true && envelope(failing).error_type === "not_found",
    `${label}: a failing tool is an isError result`);

  let unknown;
  try {
    const result = await call(client, "refund_everything", {});
    throw new Error(`${label}: unknown tool answered with a result: ${JSON.stringify(result)}`);
  } catch (e) {
    if (!(e instanceof McpError)) throw e;
    unknown = e;
  }
  check(unknown.code === -32602, `${label}: unknown tool is JSON-RPC -32602`);
  check(unknown.message.includes("search_orders") && same(unknown.data?.available_tools, expectedTools),
    `${label}: unknown tool error lists the available tools`);

  await client.ping();
  check(true, `${label}: ping`);
}

async function refund(client) {
  await call(client, "search_orders", { query: "ada" });
  return envelope(await call(client, "refund_order", { order_id: "A1001", amount: 80.0 }));
}

// The progress checks, shared (wire.mjs), with this script's own helpers.
const progress = (client, label) => checkProgress(client, label, { call, check, envelope });

async function cancelSlow(client, label) {
  const stats = async () => envelope(await call(client, "report_stats", {})).data;
  const before = await stats();
  const abort = new AbortController();
  const pending = call(client, "slow_report", { seconds: 3 }, { signal: abort.signal }).then(
    (result) => ({ result }),
    (error) => ({ error }),
  );
  await sleep(800);
  abort.abort("the user gave up");
  const outcome = await pending;
  check(outcome.error !== undefined, `${label}: the aborted call rejects`);
  await sleep(500);
  const mid = await stats();
  await sleep(3000);
  const after = await stats();
  check(after.started === before.started + 1, `${label}: the slow call started`);
  check(after.finished === before.finished, `${label}: the cancelled call never finished`);
  check(after.steps === mid.steps, `${label}: the tool stopped when cancelled`);
}

async function stdio(binary) {
  console.log("== stdio");
  const transport = () => new StdioClientTransport({ command: binary, args: [], stderr: "inherit" });
  let client = await start(newClient(), transport());
  await mainCases(client, "stdio");
  const body = await refund(client);
  check(body.error_type === "approval_denied",
    "stdio: no elicitation, a large refund is denied by the fallback approver");
  await progress(client, "stdio");
  await cancelSlow(client, "stdio");
  await close(client);

  for (const [action, expected] of [["accept", "success"], ["decline", "approval_denied"]]) {
    client = newClient({ elicitation: {} });
    const asked = answering(client, action);
    await start(client, transport());
    const body = await refund(client);
    const got = expected === "success" ? body.status : body.error_type;
    check(got === expected, `stdio: elicitation ${action} -> ${expected}`);
    check(asked.length === 1 && asked[0].includes("refund_order"),
      "stdio: the user was shown the tool's name");
    await close(client);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function startHttp(binary, port, auth) {
  const args = ["--http", `127.0.0.1:${port}`, ...(auth ? ["--auth"] : [])];
  const proc = spawn(binary, args, { stdio: ["ignore", "inherit", "inherit"] });
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`the HTTP server exited (${proc.exitCode})`);
    const up = await new Promise((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port }, () => { socket.destroy(); resolve(true); });
      socket.once("error", () => resolve(false));
    });
    if (up) return proc;
    await sleep(100);
  }
  proc.kill();
  throw new Error("the HTTP server did not start");
}

function stopHttp(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  const exited = new Promise((resolve) => proc.once("exit", resolve));
  proc.kill("SIGTERM");
  const killer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
  return exited.finally(() => clearTimeout(killer));
}

async function http(binary) {
  console.log("== streamable HTTP");
  const port = await freePort();
  const proc = await startHttp(binary, port, true);
  const url = `http://127.0.0.1:${port}/mcp`;
  const bearer = (token) => new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  try {
    const client = await start(newClient(), bearer("support-token"));
    await mainCases(client, "http");
    await progress(client, "http");
    await cancelSlow(client, "http");

    // a second client at the same time: its own session
    const other = await start(newClient(), bearer("support-token"));
    check(other.transport.sessionId && other.transport.sessionId !== client.transport.sessionId,
      "http: the second client got its own Mcp-Session-Id");
    const result = await call(other, "refund_order", { order_id: "A1001", amount: 5.0 });
    check(envelope(result).error_type === "ungrounded_identifier",
      "http: two clients, separate sessions (no shared grounded ids)");
    await close(other);
    await close(client);

    const guest = await start(newClient(), bearer("guest-token"));
    const names = (await guest.listTools()).tools.map((t) => t.name);
    check(!names.includes("refund_order"), "http: a token without the scope does not see refund_order");
    await close(guest);

    const init = JSON.stringify({
      jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
    });
    const accept = { Accept: "application/json, text/event-stream", "Content-Type": "application/json" };
    const post = (headers) => fetch(url, { method: "POST", body: init, headers: { ...accept, ...headers } });
    let r = await post({});
    check(r.status === 401 && (r.headers.get("www-authenticate") ?? "").includes("resource_metadata="),
      "http: a missing token is 401 with the metadata challenge");
    r = await post({ Authorization: "Bearer nope" });
    check(r.status === 401, "http: a rejected token is 401");
    r = await post({ Authorization: "Bearer support-token", Origin: "http://evil.example" });
    check(r.status === 403, "http: a foreign Origin is 403");
    r = await fetch(`http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`);
    check(r.status === 200 && (await r.json()).resource === url, "http: protected-resource metadata is served");
  } finally {
    await Promise.allSettled([...open].map(close));
    await stopHttp(proc);
  }
}

async function main() {
  const binary = process.argv[2];
  if (!binary) throw new Error("usage: node check.mjs path/to/mcp_server");
  try {
    await stdio(binary);
    await http(binary);
  } finally {
    await Promise.allSettled([...open].map(close));
  }
  console.log("all MCP client checks passed (TypeScript SDK)");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error instanceof Error ? error.stack ?? error.message : error);
    process.exit(1);
  },
);
