// The official TypeScript MCP SDK v2 client (`@modelcontextprotocol/client`, pinned in
// tests/mcp_conformance/package.json) driving examples/mcp_server over MCP 2026-07-28, the
// stateless revision (no initialize, no session: every request carries its protocol version
// and client capabilities in `_meta`), over streamable HTTP and stdio. check.mjs does the
// same with the v1 SDK over 2025-11-25.
//
//     node tests/mcp_client/check_next.mjs path/to/mcp_server
//
// The v2 client speaks 2025-11-25 unless told otherwise (`versionNegotiation.mode` defaults to
// 'legacy'); this script pins `{ pin: "2026-07-28" }` and checks, on the wire, that no
// `initialize` is sent and every request carries the 2026-07-28 `_meta` envelope. That
// revision has no server-initiated requests: approval reaches a client that declared
// elicitation as an input-required result (the client answers through its elicitation handler
// and calls again), and one that did not gets the server's fallback approver. A request joins
// a conversation (grounded ids) only through `_meta` "dev.toolwright/conversation".
//
// ESM resolves packages next to the script, so run a copy placed beside the installed
// node_modules, with wire.mjs (.ci/run copies both into target/mcp-conformance). Every check throws on a
// mismatch, so the script exits non-zero and CI fails. Loopback only.

import { spawn } from "node:child_process";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

import { Client, ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { checkProgress } from "./wire.mjs";

const REVISION = "2026-07-28";
const VERSION_KEY = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities";
const CONVERSATION_KEY = "dev.toolwright/conversation";
const TOOLS = ["get_order", "refund_order", "report_stats", "search_orders", "slow_report"];

function check(condition, what) {
  if (!condition) throw new Error(`check failed: ${what}`);
  console.log(`  ok  ${what}`);
}

// A check whose failure is the server's fault, not the client's or this script's: it fails
// the run all the same, saying so.
function serverCheck(condition, what, bug) {
  if (!condition) throw new Error(`check failed: ${what}\n  SERVER BUG: ${bug}`);
  console.log(`  ok  ${what}`);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

function envelope(result) {
  const text = JSON.parse(result.content[0].text);
  check(same(text, result.structuredContent), "text content and structuredContent are one envelope");
  return result.structuredContent;
}

const call = (client, name, args, options, meta) =>
  client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, options);

const inConversation = (key) => ({ [CONVERSATION_KEY]: key });
let conversations = 0;
const newKey = (label) => `check-next-${label}-${process.pid}-${++conversations}`;

// Every client this script opens, closed at the end even on failure.
const open = new Set();

// A v2 client pinned to 2026-07-28 (or in another negotiation mode). `answer` ("accept" or
// "decline") declares the elicitation capability and answers every question so, recording it;
// without it the client declares no elicitation, and a handler still records any question
// (there must be none). 2026-07-28 has no server-initiated requests: a question reaches the
// client in an input-required result, which the client fulfils through this handler and then
// sends the call again with the answer.
function newClient(mode = { pin: REVISION }, answer = undefined) {
  const client = new Client(
    { name: "toolwright-check-next", version: "0" },
    { capabilities: answer ? { elicitation: { form: {} } } : {}, versionNegotiation: { mode } },
  );
  const asked = [];
  const errors = [];
  const handler = async (request) => {
    asked.push(request.params?.message ?? JSON.stringify(request));
    return answer === "accept" ? { action: "accept", content: {} } : { action: "decline" };
  };
  try {
    client.setRequestHandler("elicitation/create", handler);
  } catch (error) {
    // The SDK may refuse a handler for an undeclared capability; then none can be asked.
    if (answer) throw error;
  }
  client.onerror = (error) => errors.push(error);
  open.add(client);
  return { client, asked, errors };
}

// Connects, then records every message the client sends and every server-to-client request
// it receives on that transport.
async function start(opened, transport) {
  const sent = [];
  const inbound = [];
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    sent.push(message);
    return send(message, options);
  };
  await opened.client.connect(transport);
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (message.method !== undefined && message.id !== undefined) inbound.push(message);
    return receive?.(message, extra);
  };
  return { ...opened, transport, sent, inbound };
}

async function close(client) {
  open.delete(client);
  await client.close();
}

function wire(c, label) {
  check(c.client.getNegotiatedProtocolVersion() === REVISION && c.client.getProtocolEra() === "modern",
    `${label}: the v2 client negotiated ${REVISION} (${c.client.getNegotiatedProtocolVersion()}, ${c.client.getProtocolEra()})`);
  const discover = c.client.getDiscoverResult();
  check(discover?.supportedVersions?.includes(REVISION) && discover?.capabilities?.tools != null,
    `${label}: server/discover offers ${REVISION} and the tools capability`);
}

function sentEnvelopes(c, label) {
  const requests = c.sent.filter((m) => m.method !== undefined && m.id !== undefined);
  check(requests.length > 0 && !requests.some((m) => m.method === "initialize"),
    `${label}: no initialize was sent (${requests.length} requests)`);
  check(requests.every((m) => m.params?._meta?.[VERSION_KEY] === REVISION && m.params._meta[CAPABILITIES_KEY] != null),
    `${label}: every request carried _meta ${VERSION_KEY} ${REVISION} and ${CAPABILITIES_KEY}`);
  const named = requests.filter((m) => m.params?._meta?.[CONVERSATION_KEY] !== undefined);
  check(named.length > 0 && named.every((m) => m.params._meta[VERSION_KEY] === REVISION),
    `${label}: a call's own _meta (the conversation key) went out beside the 2026-07-28 envelope`);
}

function noServerRequests(c, label) {
  check(c.inbound.length === 0,
    `${label}: no server-to-client request arrived (${c.inbound.map((m) => m.method).join(", ")})`);
}

async function mainCases(c, label, expectedTools = TOOLS) {
  const { client } = c;
  const { tools } = await client.listTools();
  check(same(tools.map((t) => t.name), expectedTools), `${label}: tools/list names`);
  for (const tool of tools) {
    check(tool.inputSchema?.type === "object" && tool.outputSchema != null,
      `${label}: ${tool.name} has an object inputSchema and an outputSchema`);
  }
  const search = tools.find((t) => t.name === "search_orders");
  check(search.annotations?.readOnlyHint === true, `${label}: readOnlyHint from read_only`);

  const good = await call(client, "search_orders", { query: "ada" });
  const goodBody = envelope(good);
  check(good.isError !== true && goodBody.status === "success", `${label}: good call`);
  check(goodBody.data[0].id === "A1001", `${label}: good call data`);

  const bad = await call(client, "search_orders", { query: "ada", max_results: "many" });
  const body = envelope(bad);
  check(bad.isError === true && body.error_type === "schema_mismatch",
    `${label}: an argument of the wrong type is an isError schema_mismatch`);
  check(body.errors?.length === 1 && body.errors[0].path === "/max_results" && body.message.includes("max_results"),
    `${label}: the mismatch names the field (max_results)`);

  const both = envelope(await call(client, "search_orders", { query: "", max_results: 50 }));
  check(both.error_type === "schema_mismatch" && both.errors.length === 2, `${label}: every violation reported`);

  const failing = await call(client, "get_order", { order_id: "A9999" });
  check(failing.isError === true && envelope(failing).error_type === "not_found",
    `${label}: a failing tool is an isError result`);

  let unknown;
  try {
    const result = await call(client, "refund_everything", {});
    throw new Error(`${label}: unknown tool answered with a result: ${JSON.stringify(result)}`);
  } catch (e) {
    if (!(e instanceof ProtocolError)) throw e;
    unknown = e;
  }
  check(unknown.code === -32602, `${label}: unknown tool is JSON-RPC -32602`);
  check(unknown.message.includes("refund_everything") && unknown.data?.tool === "refund_everything",
    `${label}: unknown tool error names it`);
  check(same(unknown.data?.available_tools, expectedTools), `${label}: unknown tool error lists the available tools`);

  // 2026-07-28 has no ping (the v2 client refuses to send one); server/discover answers any time.
  const again = await client.discover();
  check(again.supportedVersions?.includes(REVISION), `${label}: server/discover again, mid-conversation`);
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
  serverCheck(after.finished === before.finished, `${label}: the cancelled call never finished`,
    "the server ran the cancelled call to completion");
  serverCheck(after.steps === mid.steps, `${label}: the tool stopped when cancelled`,
    `the tool kept running after the client cancelled (steps ${mid.steps} -> ${after.steps})`);
}

// refund_order requires approval, and needs an order id grounded in the same conversation
// (hence the conversation key). Over 2026-07-28 the server sends no server-initiated requests:
// a client that declared no elicitation gets examples/mcp_server's fallback approver
// (refund_policy: up to $50 approved, more denied) and is asked nothing.
async function approvalByFallback(c, label) {
  const { client } = c;
  const key = inConversation(newKey(label));
  await call(client, "search_orders", { query: "ada" }, undefined, key);
  const large = await call(client, "refund_order", { order_id: "A1001", amount: 80.0 }, undefined, key);
  const denied = envelope(large);
  check(large.isError === true && denied.error_type === "approval_denied",
    `${label}: no elicitation capability: a $80 refund is approval_denied`);
  check(denied.message.includes("refund_order") && denied.message.includes("refunds over $50"),
    `${label}: by the server's fallback approver, which says why (${JSON.stringify(denied.message)})`);
  const small = envelope(await call(client, "refund_order", { order_id: "A1001", amount: 5.0 }, undefined, key));
  check(small.status === "success" && small.data.order_id === "A1001" && small.data.amount === 5,
    `${label}: no elicitation capability: a $5 refund is approved by the fallback approver`);
  check(c.asked.length === 0, `${label}: the client without elicitation was asked nothing (${c.asked.length})`);
  noServerRequests(c, label);
}

// A client that declared elicitation is asked in an input-required result: the v2 client shows
// the question to its handler and sends the call again with the answer and the sealed
// requestState. Still no server-to-client request.
async function approvalAsked(connect, label, answer, expected) {
  const c = await connect(answer);
  const key = inConversation(newKey(label));
  await call(c.client, "search_orders", { query: "ada" }, undefined, key);
  const body = envelope(await call(c.client, "refund_order", { order_id: "A1001", amount: 80.0 }, undefined, key));
  const got = expected === "success" ? body.status : body.error_type;
  check(got === expected, `${label}: elicitation ${answer} -> ${expected} (${JSON.stringify(body.message ?? body.status)})`);
  check(c.asked.length === 1 && c.asked[0].includes("refund_order"),
    `${label}: the user was asked once, shown the tool's name`);
  const refunds = c.sent.filter((m) => m.method === "tools/call" && m.params?.name === "refund_order");
  const retry = refunds[1];
  check(refunds.length === 2 && refunds[0].params.requestState === undefined
      && typeof retry?.params?.requestState === "string"
      && retry.params.inputResponses?.toolwright_approval?.action === answer
      && retry.params._meta?.[CONVERSATION_KEY] === key[CONVERSATION_KEY]
      && retry.id !== refunds[0].id,
    `${label}: the answer went back in a second tools/call (new id, inputResponses, requestState, same _meta)`);
  noServerRequests(c, label);
  check(c.errors.length === 0, `${label}: the client reported no errors (${c.errors.map(String).join("; ")})`);
  await close(c.client);
}

// `_meta` "dev.toolwright/conversation" joins stateless requests into one conversation:
// search_orders grounds order ids, refund_order's order_id must be grounded.
async function conversationKey(c, label) {
  const { client } = c;
  const refund = (meta) => call(client, "refund_order", { order_id: "A1001", amount: 5.0 }, undefined, meta);
  const search = (meta) => call(client, "search_orders", { query: "ada" }, undefined, meta);

  const key = inConversation(newKey(label));
  await search(key);
  const grounded = envelope(await refund(key));
  check(grounded.status === "success" && grounded.data.order_id === "A1001",
    `${label}: with the conversation key on both calls, the id search_orders returned is grounded`);

  const other = envelope(await refund(inConversation(newKey(label))));
  check(other.error_type === "ungrounded_identifier" && other.errors?.[0]?.path === "/order_id",
    `${label}: another conversation key does not see that id (ungrounded_identifier)`);

  await search(undefined);
  const keyless = envelope(await refund(undefined));
  serverCheck(keyless.error_type === "ungrounded_identifier",
    `${label}: without the key each request is its own conversation (ungrounded_identifier)`,
    `over ${REVISION} a request without "${CONVERSATION_KEY}" in _meta must be a conversation of its ` +
    `own, yet after a keyless search_orders on the same ${label} connection the keyless ` +
    `refund_order {"order_id":"A1001","amount":5} got ${JSON.stringify(keyless.status === "success" ? keyless.status : keyless.error_type)}: ` +
    `the connection carried the grounded id from one stateless request to the next`);
}

async function stdio(binary) {
  console.log("== stdio (2026-07-28)");
  const transport = () => new StdioClientTransport({ command: binary, args: [], stderr: "inherit" });

  const auto = await start(newClient("auto"), transport());
  check(auto.client.getNegotiatedProtocolVersion() === REVISION,
    `stdio: versionNegotiation 'auto' selects ${REVISION} (${auto.client.getNegotiatedProtocolVersion()})`);
  // The probe ran on a sibling process; this one has had no message yet.
  check((await auto.client.listTools()).tools.length === TOOLS.length, "stdio: and the connection it opened serves");
  await close(auto.client);

  const c = await start(newClient(), transport());
  wire(c, "stdio");
  await mainCases(c, "stdio");
  await progress(c.client, "stdio");
  await cancelSlow(c.client, "stdio");
  await approvalByFallback(c, "stdio");
  sentEnvelopes(c, "stdio");
  check(c.errors.length === 0, `stdio: the client reported no errors (${c.errors.map(String).join("; ")})`);
  const eliciting = (answer) => start(newClient(undefined, answer), transport());
  await approvalAsked(eliciting, "stdio", "accept", "success");
  await approvalAsked(eliciting, "stdio", "decline", "approval_denied");
  await conversationKey(c, "stdio");
  await close(c.client);
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
  console.log("== streamable HTTP (2026-07-28)");
  const port = await freePort();
  const proc = await startHttp(binary, port, true);
  const url = `http://127.0.0.1:${port}/mcp`;
  // Every HTTP exchange of the clients: the request's headers, the response's status and
  // session header.
  const exchanges = [];
  const recording = async (input, init) => {
    const response = await fetch(input, init);
    exchanges.push({
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      status: response.status,
      session: response.headers.get("mcp-session-id"),
    });
    return response;
  };
  const bearer = (token) => new StreamableHTTPClientTransport(new URL(url), {
    fetch: recording,
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  try {
    const auto = await start(newClient("auto"), bearer("support-token"));
    check(auto.client.getNegotiatedProtocolVersion() === REVISION,
      `http: versionNegotiation 'auto' selects ${REVISION} (${auto.client.getNegotiatedProtocolVersion()})`);
    await close(auto.client);

    const c = await start(newClient(), bearer("support-token"));
    wire(c, "http");
    await mainCases(c, "http");
    await progress(c.client, "http");
    await cancelSlow(c.client, "http");
    await approvalByFallback(c, "http");
    await conversationKey(c, "http");
    sentEnvelopes(c, "http");
    check(c.errors.length === 0, `http: the client reported no errors (${c.errors.map(String).join("; ")})`);
    const posts = exchanges.filter((e) => e.method === "POST");
    check(posts.length > 0 && posts.every((e) => e.headers.get("mcp-protocol-version") === REVISION),
      `http: every POST carried MCP-Protocol-Version ${REVISION} (${posts.length})`);
    check(exchanges.every((e) => e.session === null && !e.headers.has("mcp-session-id")),
      "http: no Mcp-Session-Id, either way");
    await close(c.client);

    const eliciting = (answer) => start(newClient(undefined, answer), bearer("support-token"));
    await approvalAsked(eliciting, "http", "accept", "success");
    await approvalAsked(eliciting, "http", "decline", "approval_denied");

    const guest = await start(newClient(), bearer("guest-token"));
    const names = (await guest.client.listTools()).tools.map((t) => t.name);
    check(!names.includes("refund_order") && names.includes("search_orders"),
      "http: a token without the scope does not see refund_order");
    await close(guest.client);

    // A raw 2026-07-28 request: no initialize before it, the token still required.
    const list = JSON.stringify({
      jsonrpc: "2.0", id: 1, method: "tools/list",
      params: { _meta: { [VERSION_KEY]: REVISION, [CAPABILITIES_KEY]: {} } },
    });
    const headers = {
      Accept: "application/json, text/event-stream", "Content-Type": "application/json",
      "MCP-Protocol-Version": REVISION, "Mcp-Method": "tools/list",
    };
    const post = (extra) => fetch(url, { method: "POST", body: list, headers: { ...headers, ...extra } });
    let r = await post({});
    check(r.status === 401 && (r.headers.get("www-authenticate") ?? "").includes("resource_metadata="),
      "http: a 2026-07-28 request without a token is 401 with the metadata challenge");
    r = await post({ Authorization: "Bearer support-token" });
    const text = await r.text();
    check(r.status === 200 && r.headers.get("mcp-session-id") === null && text.includes("search_orders"),
      "http: a lone 2026-07-28 tools/list with a token is answered, without a session");
  } finally {
    await Promise.allSettled([...open].map(close));
    await stopHttp(proc);
  }
}

async function main() {
  const binary = process.argv[2];
  if (!binary) throw new Error("usage: node check_next.mjs path/to/mcp_server");
  try {
    await http(binary);
    await stdio(binary);
  } finally {
    await Promise.allSettled([...open].map(close));
  }
  console.log("all MCP client checks passed (TypeScript SDK v2, 2026-07-28)");
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error instanceof Error ? error.stack ?? error.message : error);
    process.exit(1);
  },
);
