//! [`RedisConversationStore`]: conversations every replica of a service shares, and that outlive
//! a restart of any of them.
//!
//! A conversation `c` is a few Redis keys under `PREFIX{c}:` (a hash tag, so they share one hash
//! slot): `ids:KIND`, a sorted set of the grounded ids of one kind in the order they were
//! grounded (bounded: the oldest are popped first); `fail`, a hash of failures in a row per
//! category and tool; `appr`, a hash from `(principal, fingerprint)` to the call's ticket; and
//! `keys`, the set of those keys, so every write refreshes the idle TTL of them all. A ticket is a
//! hash `PREFIXt:ID` that expires on its own TTL; the queue of waiting tickets is the sorted set
//! `PREFIXwaiting`.
//!
//! Every operation is one Lua script, so it is atomic on the server and costs one round trip:
//! `prepare` (grounded checks and the edited arguments of an approved call), `record` (ids,
//! failure counts), `review` (use a decision or file a ticket), `decide` (at most once),
//! `waiting` (a filtered page). Reading one ticket is one `HGETALL`. After a server restart the
//! first call of each script loads it again.
//!
//! A kept run is a hash `PREFIXrun:ID` (`body`, `holder`, `until`, the holder's lease end in
//! the server's milliseconds), expiring on the run's TTL; creating, claiming and saving it are
//! one script each, timed by the server's clock (`TIME`), so replicas whose clocks disagree
//! agree on whose lease passed. A save refused for its size runs a script of its own that, in
//! the same step as the holder check, drops `body` and sets `outgrown` (the refused size): a
//! claim then answers outgrown, and no replica continues from the body saved before.
//!
//! The single-use tokens a principal used ([`ConversationStore::redeem`]) are a sorted set
//! `PREFIXused{+PRINCIPAL}` scored by each token's expiry in the server's milliseconds: one
//! script drops the expired, refuses a token still in the set or a set at its bound, and adds
//! the token, so two replicas redeeming one token at once cannot both succeed.
//!
//! The places held under a cap ([`ConversationStore::hold_slot`]) are a sorted set per scope,
//! `PREFIXslots:SCOPE`, scored by each place's expiry in the server's milliseconds: one script
//! drops the expired places of every scope asked for, refuses when one is at its cap, and adds
//! the place to all of them.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::memory::FailureCategory;
use super::redeem::Redeemed;
use super::runs::{RunClaim, MAX_RUN_BYTES};
use super::slots::{SlotCap, SlotHold};
use super::store::{
    now_ms, sized, CallRecord, ConversationFuture, ConversationStore, ConversationStoreBuilder,
    ConversationStoreError as Error, Decided, Decision, FailureCounts, Prepare, Prepared, Review,
    Ticket, TicketRequest, TicketState, WaitingPage, WaitingQuery,
};

/// Refreshes the idle TTL of every key of the conversation under `base`.
const TOUCH: &str = r#"
local function touch(base, idle)
  for _, k in ipairs(redis.call('SMEMBERS', base .. 'keys')) do
    redis.call('PEXPIRE', k, idle)
  end
  redis.call('PEXPIRE', base .. 'keys', idle)
end
"#;

/// The server's clock in milliseconds, for leases.
const NOW: &str = r#"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function held_by_other(k, holder)
  local h = redis.call('HMGET', k, 'holder', 'until')
  return h[1] and h[1] ~= '' and h[1] ~= holder and tonumber(h[2] or '0') > now
end
"#;

/// KEYS: the run. ARGV: holder, lease ms, ttl ms, body. Returns 1 when created, 0 when it
/// lives.
const CREATE_RUN: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'body', ARGV[4], 'holder', ARGV[1], 'until', now + tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[3]), tonumber(ARGV[2])))
return 1
"#;

/// KEYS: the run. ARGV: holder, lease ms. Returns {'claimed', body}, {'busy'},
/// {'outgrown', bytes} or {'unknown'}.
const CLAIM_RUN: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local outgrown = redis.call('HGET', KEYS[1], 'outgrown')
if outgrown then return {'outgrown', outgrown} end
if held_by_other(KEYS[1], ARGV[1]) then return {'busy'} end
local lease = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'until', now + lease)
if redis.call('PTTL', KEYS[1]) < lease then redis.call('PEXPIRE', KEYS[1], lease) end
return {'claimed', redis.call('HGET', KEYS[1], 'body')}
"#;

/// KEYS: the run. ARGV: holder, body, ttl ms, hold ms (0 releases the hold). Returns 1 when
/// saved, 0 when another holds it.
const SAVE_RUN: &str = r#"
if held_by_other(KEYS[1], ARGV[1]) then return 0 end
local hold = tonumber(ARGV[4])
if hold > 0 then
  redis.call('HSET', KEYS[1], 'body', ARGV[2], 'holder', ARGV[1], 'until', now + hold)
else
  redis.call('HSET', KEYS[1], 'body', ARGV[2], 'holder', '', 'until', 0)
end
redis.call('HDEL', KEYS[1], 'outgrown')
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[3]), hold))
return 1
"#;

/// A save refused for its size. KEYS: the run. ARGV: holder, bytes refused, ttl ms. Returns
/// 1 when the run is left outgrown (its body dropped, its hold as it was), 0 when another
/// holds it.
const OUTGROW_RUN: &str = r#"
if held_by_other(KEYS[1], ARGV[1]) then return 0 end
redis.call('HDEL', KEYS[1], 'body')
redis.call('HSET', KEYS[1], 'outgrown', ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1
"#;

/// KEYS: the principal's used tokens (a sorted set scored by expiry, in the server's
/// milliseconds). ARGV: token, ttl ms, most per principal. Returns 1 when marked now, 0 when
/// used already, 2 when the principal is full.
const REDEEM: &str = r#"
local used = redis.call('ZSCORE', KEYS[1], ARGV[1])
if used and tonumber(used) > now then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 2 end
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
"#;

/// KEYS: one sorted set per cap's scope, scored by each place's expiry in the server's
/// milliseconds. ARGV: slot, lease ms, then each cap's most. Returns {0, 0} when held, {i, n}
/// when cap i (from 1) holds n places already.
const HOLD_SLOT: &str = r#"
local slot = ARGV[1]
local lease = tonumber(ARGV[2])
for i, k in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', k, '-inf', now)
  if not redis.call('ZSCORE', k, slot) then
    local held = redis.call('ZCARD', k)
    if held >= tonumber(ARGV[2 + i]) then return {i, held} end
  end
end
for _, k in ipairs(KEYS) do
  redis.call('ZADD', k, now + lease, slot)
  if redis.call('PTTL', k) < lease then redis.call('PEXPIRE', k, lease) end
end
return {0, 0}
"#;

/// KEYS: base. ARGV: idle ms, ticket prefix, n, n (kind, id) pairs, edited field or ''.
/// Returns {edited or '', '1'/'0' per id}.
const PREPARE: &str = r#"
local base = KEYS[1]
local n = tonumber(ARGV[3])
local out = {''}
for i = 0, n - 1 do
  if redis.call('ZSCORE', base .. 'ids:' .. ARGV[4 + 2 * i], ARGV[5 + 2 * i]) then
    out[#out + 1] = '1'
  else
    out[#out + 1] = '0'
  end
end
local field = ARGV[4 + 2 * n]
if field and field ~= '' then
  local t = redis.call('HGET', base .. 'appr', field)
  if t then
    local r = redis.call('HMGET', ARGV[2] .. t, 'st', 'edited')
    if (r[1] == 'a' or r[1] == 'u') and r[2] then out[1] = 'e' .. r[2] end
  end
end
touch(base, ARGV[1])
return out
"#;

/// KEYS: base. ARGV: idle ms, max ids per kind, cleared ('' or '+tool'), number of kinds,
/// then per kind: kind, count, ids...; then number of failures, then (category, tool) pairs.
/// Returns {had failures (0/1), count per failure...}.
const RECORD: &str = r#"
local base = KEYS[1]
local max = tonumber(ARGV[2])
local out = {0}
if ARGV[3] ~= '' then
  local tool = string.sub(ARGV[3], 2)
  for _, f in ipairs(redis.call('HKEYS', base .. 'fail')) do
    local t = string.sub(f, 3)
    if t == tool then
      out[1] = 1
      redis.call('HDEL', base .. 'fail', f)
    elseif t == '' then
      redis.call('HDEL', base .. 'fail', f)
    end
  end
end
local i = 5
for _ = 1, tonumber(ARGV[4]) do
  local key = base .. 'ids:' .. ARGV[i]
  local c = tonumber(ARGV[i + 1])
  i = i + 2
  redis.call('SADD', base .. 'keys', key, base .. 'n')
  for j = 0, c - 1 do
    if not redis.call('ZSCORE', key, ARGV[i + j]) then
      redis.call('ZADD', key, redis.call('INCR', base .. 'n'), ARGV[i + j])
    end
  end
  i = i + c
  local over = redis.call('ZCARD', key) - max
  if over > 0 then redis.call('ZPOPMIN', key, over) end
end
local nf = tonumber(ARGV[i])
i = i + 1
if nf > 0 then redis.call('SADD', base .. 'keys', base .. 'fail') end
for _ = 1, nf do
  out[#out + 1] = redis.call('HINCRBY', base .. 'fail', ARGV[i] .. ':' .. ARGV[i + 1], 1)
  i = i + 2
end
touch(base, ARGV[1])
return out
"#;

/// KEYS: base. ARGV: idle ms, ticket prefix, waiting key, sequence key, field
/// (principal NL fingerprint), fingerprint, ticket TTL ms, tool, call id, redacted arguments,
/// asked at ms, principal ('' or '+p'), conversation, random suffix.
/// Returns {'approved'} | {'denied', reason} | {'pending', ticket}.
const REVIEW: &str = r#"
local base = KEYS[1]
local field = ARGV[5]
local t = redis.call('HGET', base .. 'appr', field)
if t then
  local tk = ARGV[2] .. t
  local r = redis.call('HMGET', tk, 'st', 'efp', 'reason')
  if r[1] then
    local original = r[2] and r[2] ~= ARGV[6]
    if r[1] == 'w' or (r[1] == 'a' and original) then
      touch(base, ARGV[1])
      return {'pending', t}
    end
    if r[1] == 'a' or r[1] == 'd' then
      redis.call('HSET', tk, 'st', 'u')
      redis.call('HDEL', base .. 'appr', field)
      touch(base, ARGV[1])
      if r[1] == 'a' then return {'approved'} end
      return {'denied', r[3] or ''}
    end
  end
end
local seq = redis.call('INCR', ARGV[4])
local id = 't' .. seq .. '-' .. ARGV[14]
local tk = ARGV[2] .. id
redis.call('HSET', tk, 'seq', seq, 'conv', ARGV[13], 'pr', ARGV[12], 'tool', ARGV[8],
  'call', ARGV[9], 'fp', ARGV[6], 'args', ARGV[10], 'at', ARGV[11], 'st', 'w',
  'ttl', ARGV[7], 'base', base)
redis.call('PEXPIRE', tk, ARGV[7])
redis.call('ZADD', ARGV[3], seq, id)
redis.call('HSET', base .. 'appr', field, id)
if redis.call('PTTL', base .. 'appr') < tonumber(ARGV[7]) then
  redis.call('PEXPIRE', base .. 'appr', ARGV[7])
end
touch(base, ARGV[1])
return {'pending', id}
"#;

/// KEYS: ticket. ARGV: mode (a approve, d deny, e approve with edits), reason, edited
/// arguments, edited fingerprint, edited redacted, waiting key, ticket id.
/// Returns {'done'} | {'unknown'} | {'already', state, reason}.
const DECIDE: &str = r#"
local r = redis.call('HMGET', KEYS[1], 'st', 'reason', 'ttl', 'base', 'pr')
if not r[1] then return {'unknown'} end
if r[1] ~= 'w' then return {'already', r[1], r[2] or ''} end
if ARGV[1] == 'd' then
  redis.call('HSET', KEYS[1], 'st', 'd', 'reason', ARGV[2])
else
  redis.call('HSET', KEYS[1], 'st', 'a')
end
if ARGV[1] == 'e' then
  redis.call('HSET', KEYS[1], 'edited', ARGV[3], 'efp', ARGV[4], 'eshown', ARGV[5])
  local appr = r[4] .. 'appr'
  redis.call('HSET', appr, r[5] .. '\n' .. ARGV[4], ARGV[7])
  if redis.call('PTTL', appr) < tonumber(r[3]) then redis.call('PEXPIRE', appr, r[3]) end
end
redis.call('PEXPIRE', KEYS[1], r[3])
redis.call('ZREM', ARGV[6], ARGV[7])
return {'done'}
"#;

/// KEYS: waiting. ARGV: after, limit, principal ('' any, else '+p'), tool ('' any, else
/// '+tool'), ticket prefix, most entries to scan. Returns {{next or ''}, {ticket fields}...}.
const WAITING: &str = r#"
local out = {{''}}
local cursor = ARGV[1]
local limit = tonumber(ARGV[2])
local budget = tonumber(ARGV[6])
local last = nil
while budget > 0 do
  local batch = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. cursor, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
  if #batch == 0 then return out end
  for i = 1, #batch, 2 do
    local id, seq = batch[i], batch[i + 1]
    budget = budget - 1
    local t = redis.call('HGETALL', ARGV[5] .. id)
    if #t == 0 then
      redis.call('ZREM', KEYS[1], id)
    else
      local h = {}
      for j = 1, #t, 2 do h[t[j]] = t[j + 1] end
      local ok = (ARGV[3] == '' or h['pr'] == ARGV[3]) and (ARGV[4] == '' or '+' .. h['tool'] == ARGV[4])
      if ok then
        if #out > limit then
          out[1] = {last}
          return out
        end
        t[#t + 1] = 'id'
        t[#t + 1] = id
        out[#out + 1] = t
        last = seq
      end
    end
    cursor = seq
    if budget <= 0 then
      out[1] = {cursor}
      return out
    end
  end
end
return out
"#;

/// The Redis [`ConversationStore`]: every replica that points at one Redis shares its
/// conversations, and a restarted replica finds them where it left them.
///
/// Cheap to clone: clones share one multiplexed, self-reconnecting connection. The same server
/// as the idempotency store's is fine; give each application sharing it its own
/// [`prefix`](ConversationStoreBuilder::prefix).
///
/// ```no_run
/// use std::time::Duration;
/// use toolwright_core::conversation::RedisConversationStore;
///
/// # async fn demo() -> Result<(), toolwright_core::conversation::ConversationStoreError> {
/// let store = RedisConversationStore::builder()
///     .idle_ttl(Duration::from_secs(7 * 24 * 3600))
///     .connect("redis://127.0.0.1:6379/")
///     .await?;
/// # let _ = store;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisConversationStore {
    conn: ConnectionManager,
    inner: Arc<Inner>,
}

struct Inner {
    prefix: String,
    idle_ttl: Duration,
    max_ids: usize,
    prepare: Script,
    record: Script,
    review: Script,
    decide: Script,
    waiting: Script,
    create_run: Script,
    claim_run: Script,
    save_run: Script,
    outgrow_run: Script,
    redeem: Script,
    hold_slot: Script,
}

impl RedisConversationStore {
    /// Connects with the defaults: prefix `toolwright:conv:`, conversations idle 24 h forgotten,
    /// 10,000 ids per kind.
    pub async fn connect(url: &str) -> Result<RedisConversationStore, Error> {
        RedisConversationStore::builder().connect(url).await
    }

    /// A builder to change the defaults.
    pub fn builder() -> ConversationStoreBuilder<RedisConversationStore> {
        ConversationStoreBuilder::new()
    }

    /// The prefix of every Redis key this store writes.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    fn base(&self, conversation: &str) -> String {
        format!("{}{{{conversation}}}:", self.inner.prefix)
    }

    fn tickets(&self) -> String {
        format!("{}t:", self.inner.prefix)
    }

    fn waiting_key(&self) -> String {
        format!("{}waiting", self.inner.prefix)
    }

    fn run_key(&self, run: &str) -> String {
        format!("{}run:{run}", self.inner.prefix)
    }

    /// The principal's used single-use tokens, a key of its own (and hash slot).
    fn used_key(&self, principal: Option<&str>) -> String {
        format!("{}used{{{}}}", self.inner.prefix, principal_text(principal))
    }

    fn slots_key(&self, scope: &str) -> String {
        format!("{}slots:{scope}", self.inner.prefix)
    }
}

impl fmt::Debug for RedisConversationStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisConversationStore")
            .field("prefix", &self.inner.prefix)
            .field("idle_ttl", &self.inner.idle_ttl)
            .field("max_ids", &self.inner.max_ids)
            .finish()
    }
}

fn principal_text(principal: Option<&str>) -> String {
    principal.map_or_else(String::new, |p| format!("+{p}"))
}

fn approval_field(principal: Option<&str>, fingerprint: &str) -> String {
    format!("{}\n{fingerprint}", principal_text(principal))
}

fn category_text(category: FailureCategory) -> &'static str {
    match category {
        FailureCategory::Schema => "s",
        FailureCategory::UnknownTool => "u",
        FailureCategory::Semantic => "m",
        FailureCategory::CircuitOpen => "c",
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// The size of the save that outgrew run `run` (its `outgrown` field).
fn outgrown_bytes(run: &str, bytes: &str) -> Result<usize, Error> {
    bytes
        .parse()
        .map_err(|_| Error::Corrupt(format!("run {run}: `outgrown` is not a number: {bytes:?}")))
}

fn state_of(code: &str, reason: Option<&str>) -> Result<TicketState, Error> {
    Ok(match code {
        "w" => TicketState::Waiting,
        "a" => TicketState::Approved,
        "d" => TicketState::Denied {
            reason: reason.unwrap_or_default().to_owned(),
        },
        "u" => TicketState::Used,
        other => return Err(Error::Corrupt(format!("ticket state {other:?}"))),
    })
}

/// A ticket from its hash fields.
fn ticket_of(id: String, h: &HashMap<String, String>) -> Result<Ticket, Error> {
    let field = |name: &str| {
        h.get(name)
            .cloned()
            .ok_or_else(|| Error::Corrupt(format!("ticket {id} has no `{name}`")))
    };
    let number = |name: &str| -> Result<u64, Error> {
        field(name)?
            .parse()
            .map_err(|_| Error::Corrupt(format!("ticket {id}: `{name}` is not a number")))
    };
    let principal = field("pr")?;
    Ok(Ticket {
        seq: number("seq")?,
        conversation: field("conv")?,
        principal: principal.strip_prefix('+').map(str::to_owned),
        tool: field("tool")?,
        call_id: field("call")?,
        fingerprint: field("fp")?,
        arguments: field("args")?,
        asked_at_ms: number("at")?,
        state: state_of(&field("st")?, h.get("reason").map(String::as_str))?,
        edited_arguments: h.get("eshown").cloned(),
        id,
    })
}

impl ConversationStore for RedisConversationStore {
    fn prepare<'a>(
        &'a self,
        conversation: &'a str,
        prepare: &'a Prepare,
    ) -> ConversationFuture<'a, Prepared> {
        Box::pin(async move {
            let mut invocation = self.inner.prepare.key(self.base(conversation));
            invocation
                .arg(millis(self.inner.idle_ttl))
                .arg(self.tickets())
                .arg(prepare.ids.len());
            for (kind, id) in &prepare.ids {
                invocation.arg(kind).arg(id);
            }
            invocation.arg(
                prepare
                    .edited_for
                    .as_ref()
                    .map(|(p, fp)| approval_field(p.as_deref(), fp))
                    .unwrap_or_default(),
            );
            let reply: Vec<String> = invocation
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            let (edited, flags) = reply
                .split_first()
                .ok_or_else(|| Error::Corrupt("prepare answered nothing".to_owned()))?;
            Ok(Prepared {
                grounded: flags.iter().map(|f| f == "1").collect(),
                edited: edited.strip_prefix('e').map(str::to_owned),
            })
        })
    }

    fn record<'a>(
        &'a self,
        conversation: &'a str,
        turn: &'a CallRecord,
    ) -> ConversationFuture<'a, FailureCounts> {
        Box::pin(async move {
            let mut invocation = self.inner.record.key(self.base(conversation));
            invocation
                .arg(millis(self.inner.idle_ttl))
                .arg(self.inner.max_ids)
                .arg(
                    turn.cleared
                        .as_deref()
                        .map_or_else(String::new, |t| format!("+{t}")),
                )
                .arg(turn.ids.len());
            for (kind, ids) in &turn.ids {
                invocation.arg(kind).arg(ids.len()).arg(ids);
            }
            invocation.arg(turn.failures.len());
            for (tool, category) in &turn.failures {
                invocation.arg(category_text(*category)).arg(tool);
            }
            let reply: Vec<u32> = invocation
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            let (had, counts) = reply
                .split_first()
                .ok_or_else(|| Error::Corrupt("record answered nothing".to_owned()))?;
            Ok(FailureCounts {
                counts: counts.to_vec(),
                had_failures: *had == 1,
            })
        })
    }

    fn review<'a>(&'a self, request: &'a TicketRequest) -> ConversationFuture<'a, Review> {
        Box::pin(async move {
            let reply: Vec<String> = self
                .inner
                .review
                .key(self.base(&request.conversation))
                .arg(millis(self.inner.idle_ttl))
                .arg(self.tickets())
                .arg(self.waiting_key())
                .arg(format!("{}tseq", self.inner.prefix))
                .arg(approval_field(
                    request.principal.as_deref(),
                    &request.fingerprint,
                ))
                .arg(&request.fingerprint)
                .arg(millis(request.expire_after))
                .arg(&request.tool)
                .arg(&request.call_id)
                .arg(&request.arguments)
                .arg(now_ms())
                .arg(principal_text(request.principal.as_deref()))
                .arg(&request.conversation)
                .arg(format!("{:08x}", fastrand::u32(..)))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match reply.as_slice() {
                [a] if a == "approved" => Ok(Review::Approved),
                [d, reason] if d == "denied" => Ok(Review::Denied(reason.clone())),
                [p, ticket] if p == "pending" => Ok(Review::Pending(ticket.clone())),
                other => Err(Error::Corrupt(format!("review answered {other:?}"))),
            }
        })
    }

    fn decide<'a>(
        &'a self,
        ticket: &'a str,
        decision: &'a Decision,
    ) -> ConversationFuture<'a, Decided> {
        Box::pin(async move {
            let (mode, reason, edited) = match decision {
                Decision::Approve => ("a", "", None),
                Decision::Deny(reason) => ("d", reason.as_str(), None),
                Decision::ApproveWith {
                    arguments,
                    fingerprint,
                    redacted,
                } => ("e", "", Some((arguments, fingerprint, redacted))),
            };
            let none = String::new();
            let (arguments, fingerprint, redacted) = edited.unwrap_or((&none, &none, &none));
            let reply: Vec<String> = self
                .inner
                .decide
                .key(format!("{}{ticket}", self.tickets()))
                .arg(mode)
                .arg(reason)
                .arg(arguments)
                .arg(fingerprint)
                .arg(redacted)
                .arg(self.waiting_key())
                .arg(ticket)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match reply.as_slice() {
                [d] if d == "done" => Ok(Decided::Done),
                [u] if u == "unknown" => Ok(Decided::Unknown),
                [a, state, reason] if a == "already" => {
                    Ok(Decided::AlreadyDecided(state_of(state, Some(reason))?))
                }
                other => Err(Error::Corrupt(format!("decide answered {other:?}"))),
            }
        })
    }

    fn ticket<'a>(&'a self, ticket: &'a str) -> ConversationFuture<'a, Option<Ticket>> {
        Box::pin(async move {
            let fields: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(format!("{}{ticket}", self.tickets()))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            if fields.is_empty() {
                return Ok(None);
            }
            ticket_of(ticket.to_owned(), &fields).map(Some)
        })
    }

    fn waiting<'a>(&'a self, query: &'a WaitingQuery) -> ConversationFuture<'a, WaitingPage> {
        Box::pin(async move {
            let reply: Vec<Vec<String>> = self
                .inner
                .waiting
                .key(self.waiting_key())
                .arg(query.after)
                .arg(query.limit)
                .arg(principal_text(query.principal.as_deref()))
                .arg(
                    query
                        .tool
                        .as_deref()
                        .map_or_else(String::new, |t| format!("+{t}")),
                )
                .arg(self.tickets())
                .arg(query.limit.saturating_mul(10).max(1000))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            let mut rows = reply.into_iter();
            let next = rows
                .next()
                .and_then(|n| n.into_iter().next())
                .filter(|n| !n.is_empty())
                .map(|n| {
                    n.parse()
                        .map_err(|_| Error::Corrupt(format!("waiting cursor {n:?}")))
                })
                .transpose()?;
            let mut tickets = Vec::new();
            for row in rows {
                let mut fields: HashMap<String, String> = HashMap::new();
                let mut pairs = row.into_iter();
                while let (Some(k), Some(v)) = (pairs.next(), pairs.next()) {
                    fields.insert(k, v);
                }
                let id = fields.remove("id").unwrap_or_default();
                tickets.push(ticket_of(id, &fields)?);
            }
            Ok(WaitingPage { tickets, next })
        })
    }

    fn create_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        lease: Duration,
        ttl: Duration,
    ) -> ConversationFuture<'a, bool> {
        Box::pin(async move {
            sized(body)?;
            let created: i64 = self
                .inner
                .create_run
                .key(self.run_key(run))
                .arg(holder)
                .arg(millis(lease))
                .arg(millis(ttl))
                .arg(body)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            Ok(created == 1)
        })
    }

    fn claim_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, RunClaim> {
        Box::pin(async move {
            let reply: Vec<String> = self
                .inner
                .claim_run
                .key(self.run_key(run))
                .arg(holder)
                .arg(millis(lease))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match reply.as_slice() {
                [c, body] if c == "claimed" => Ok(RunClaim::Claimed(body.clone())),
                [b] if b == "busy" => Ok(RunClaim::Busy),
                [u] if u == "unknown" => Ok(RunClaim::Unknown),
                [o, bytes] if o == "outgrown" => Ok(RunClaim::Outgrown {
                    bytes: outgrown_bytes(run, bytes)?,
                    limit: MAX_RUN_BYTES,
                }),
                other => Err(Error::Corrupt(format!("claim answered {other:?}"))),
            }
        })
    }

    fn save_run<'a>(
        &'a self,
        run: &'a str,
        holder: &'a str,
        body: &'a str,
        ttl: Duration,
        hold: Option<Duration>,
    ) -> ConversationFuture<'a, bool> {
        Box::pin(async move {
            if let Err(error) = sized(body) {
                let outgrown: i64 = self
                    .inner
                    .outgrow_run
                    .key(self.run_key(run))
                    .arg(holder)
                    .arg(body.len())
                    .arg(millis(ttl))
                    .invoke_async(&mut self.conn.clone())
                    .await
                    .map_err(Error::backend)?;
                return if outgrown == 1 { Err(error) } else { Ok(false) };
            }
            let saved: i64 = self
                .inner
                .save_run
                .key(self.run_key(run))
                .arg(holder)
                .arg(body)
                .arg(millis(ttl))
                .arg(hold.map_or(0, millis))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            Ok(saved == 1)
        })
    }

    fn load_run<'a>(&'a self, run: &'a str) -> ConversationFuture<'a, Option<String>> {
        Box::pin(async move {
            let (body, outgrown): (Option<String>, Option<String>) = redis::cmd("HMGET")
                .arg(self.run_key(run))
                .arg("body")
                .arg("outgrown")
                .query_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match outgrown {
                Some(bytes) => Err(Error::TooLarge {
                    what: "a run",
                    bytes: outgrown_bytes(run, &bytes)?,
                    limit: MAX_RUN_BYTES,
                }),
                None => Ok(body),
            }
        })
    }

    /// One script on the principal's sorted set of used tokens, timed by the server's clock.
    fn redeem<'a>(
        &'a self,
        principal: Option<&'a str>,
        token: &'a str,
        ttl: Duration,
        max_per_principal: usize,
    ) -> ConversationFuture<'a, Redeemed> {
        Box::pin(async move {
            let answer: i64 = self
                .inner
                .redeem
                .key(self.used_key(principal))
                .arg(token)
                .arg(millis(ttl))
                .arg(max_per_principal)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match answer {
                1 => Ok(Redeemed::Now),
                0 => Ok(Redeemed::AlreadyUsed),
                2 => Ok(Redeemed::Full),
                other => Err(Error::Corrupt(format!("redeem answered {other}"))),
            }
        })
    }

    fn hold_slot<'a>(
        &'a self,
        caps: &'a [SlotCap<'a>],
        slot: &'a str,
        lease: Duration,
    ) -> ConversationFuture<'a, SlotHold> {
        Box::pin(async move {
            let mut invocation = self.inner.hold_slot.prepare_invoke();
            for cap in caps {
                invocation.key(self.slots_key(cap.scope));
            }
            invocation.arg(slot).arg(millis(lease));
            for cap in caps {
                invocation.arg(cap.most);
            }
            let answer: Vec<i64> = invocation
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(Error::backend)?;
            match answer[..] {
                [0, _] => Ok(SlotHold::Held),
                [i, held] if i >= 1 && (i as usize) <= caps.len() && held >= 0 => {
                    Ok(SlotHold::Full {
                        cap: i as usize - 1,
                        held: held as usize,
                    })
                }
                _ => Err(Error::Corrupt(format!("hold_slot answered {answer:?}"))),
            }
        })
    }

    fn release_slot<'a>(
        &'a self,
        scopes: &'a [&'a str],
        slot: &'a str,
    ) -> ConversationFuture<'a, ()> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            for scope in scopes {
                pipe.zrem(self.slots_key(scope), slot).ignore();
            }
            pipe.query_async::<()>(&mut self.conn.clone())
                .await
                .map_err(Error::backend)
        })
    }
}

impl ConversationStoreBuilder<RedisConversationStore> {
    /// The prefix of every Redis key the store writes (default `toolwright:conv:`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Connects to `url` (`redis://host:port/db`) and loads the scripts.
    pub async fn connect(self, url: &str) -> Result<RedisConversationStore, Error> {
        self.connect_with(url, ConnectionManagerConfig::default())
            .await
    }

    /// Connects with the connection's timeouts and reconnection policy given.
    pub async fn connect_with(
        self,
        url: &str,
        config: ConnectionManagerConfig,
    ) -> Result<RedisConversationStore, Error> {
        let client = redis::Client::open(url).map_err(Error::backend)?;
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(Error::backend)?;
        let store = self.build(conn);
        let mut conn = store.conn.clone();
        let inner = &store.inner;
        for script in [
            &inner.prepare,
            &inner.record,
            &inner.review,
            &inner.decide,
            &inner.waiting,
            &inner.create_run,
            &inner.claim_run,
            &inner.save_run,
            &inner.outgrow_run,
            &inner.redeem,
            &inner.hold_slot,
        ] {
            script.load_async(&mut conn).await.map_err(Error::backend)?;
        }
        Ok(store)
    }

    /// A store on a connection the application built. The scripts load on first use.
    pub fn build(self, conn: ConnectionManager) -> RedisConversationStore {
        let with_touch = |body: &str| Script::new(&format!("{TOUCH}{body}"));
        RedisConversationStore {
            conn,
            inner: Arc::new(Inner {
                prefix: self.prefix,
                idle_ttl: self.idle_ttl,
                max_ids: self.max_ids,
                prepare: with_touch(PREPARE),
                record: with_touch(RECORD),
                review: with_touch(REVIEW),
                decide: Script::new(DECIDE),
                waiting: Script::new(WAITING),
                create_run: Script::new(&format!("{NOW}{CREATE_RUN}")),
                claim_run: Script::new(&format!("{NOW}{CLAIM_RUN}")),
                save_run: Script::new(&format!("{NOW}{SAVE_RUN}")),
                outgrow_run: Script::new(&format!("{NOW}{OUTGROW_RUN}")),
                redeem: Script::new(&format!("{NOW}{REDEEM}")),
                hold_slot: Script::new(&format!("{NOW}{HOLD_SLOT}")),
            }),
        }
    }
}
