// Shared by check.mjs and check_next.mjs (.ci/run copies it beside them).
//
// Records what arrives on a client's transport, before the SDK dispatches it. The SDK runs a
// notification's handler in a later microtask and forgets the request's progress handler as
// soon as it reads the response, so a last report read in the same chunk as the response never
// reaches `onprogress` (the SDK reports "unknown token"). What the server promises (every report,
// the last one included, before the result) is checked on the wire.
export function recordWire(client) {
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
export function reportsBeforeAnswer(wire) {
  const answered = wire.findIndex((m) => m.id !== undefined && (m.result !== undefined || m.error !== undefined));
  const progress = (m) => m.method === "notifications/progress";
  const reports = wire.slice(0, answered < 0 ? wire.length : answered)
    .filter(progress)
    .map((m) => [m.params.progress, m.params.total, m.params.message]);
  return { reports, answered: answered >= 0, late: answered >= 0 && wire.slice(answered).some(progress) };
}
