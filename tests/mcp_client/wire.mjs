// Shared by check.mjs and check_next.mjs (.ci/run copies it beside them): the progress checks.
//
// Records what arrives on a client's transport, before the SDK dispatches it. The SDK runs a
// notification's handler in a later microtask and forgets the request's progress handler as
// soon as it reads the response, so a last report read in the same chunk as the response never
// reaches `onprogress` (the SDK reports "unknown token"). What the server promises (every report,
// the last one included, before the result) is checked on the wire.
function recordWire(client) {
  const transport = client.transport;
  const wire = [];
  const receive = transport.onmessage;
  transport.onmessage = (message, extra) => {
    wire.push(message);
    return receive?.call(transport, message, extra);
  };
  return { wire, restore: () => { transport.onmessage = receive; } };
}

// The progress reports on the wire before the first answer, as [progress, total, message], and
// whether any came after it.
function reportsBeforeAnswer(wire) {
  const answered = wire.findIndex((m) => m.id !== undefined && (m.result !== undefined || m.error !== undefined));
  const progress = (m) => m.method === "notifications/progress";
  const reports = wire.slice(0, answered < 0 ? wire.length : answered)
    .filter(progress)
    .map((m) => [m.params.progress, m.params.total, m.params.message]);
  return { reports, answered: answered >= 0, late: answered >= 0 && wire.slice(answered).some(progress) };
}

// A call with a progressToken, checked by the caller's own `call` (client, name, args, options),
// `check` (condition, what) and `envelope` (result -> the envelope).
export async function checkProgress(client, label, { call, check, envelope }) {
  const seen = [];
  const { wire, restore } = recordWire(client);
  let result;
  try {
    result = await call(client, "slow_report", { seconds: 1 }, {
      onprogress: (p) => seen.push([p.progress, p.total, p.message]),
    });
  } finally {
    restore();
  }
  check(envelope(result).status === "success", `${label}: a call with a progressToken succeeds`);
  check(seen.length >= 2, `${label}: the SDK handed over progress reports (${seen.length})`);
  // On the wire (see wire.mjs): the SDK may drop a last report read with the response.
  const { reports, answered, late } = reportsBeforeAnswer(wire);
  check(answered && !late, `${label}: every progress notification came before the result (${reports.length})`);
  check(reports.every((p, i) => i === 0 || reports[i - 1][0] < p[0]), `${label}: progress increases`);
  const last = reports[reports.length - 1];
  check(last?.[0] === 10 && last[1] === 10 && last[2] === "step 10 of 10",
    `${label}: the last progress report (10 of 10) is delivered`);
  check(reports.length <= 10, `${label}: at most one report per 100 ms step`);
}
