//! [`RedisStore`]: an idempotency store several replicas share, so a retried refund on replica B
//! sees the attempt replica A made.
//!
//! Each key is two Redis keys in one hash slot (a hash tag, so this works on Redis Cluster too):
//! the record `PREFIX{key}`, a hash of the fingerprint, the state, the stored outcome and the
//! count of unknown effects, kept for the key TTL; and the lock `PREFIX{key}:lock`, the running
//! call's token, set with `SET NX PX` for the lock TTL, so a crashed holder's lock expires on
//! the server's own clock.
//!
//! Both operations are one Lua script each, so they are atomic on the server and a successful
//! call costs exactly two round trips: `begin` (fingerprint check, replay, in-flight check and
//! `SET NX PX` in one `EVALSHA`) and the settlement (compare the token, then set, in one
//! `EVALSHA`). The scripts are loaded when the store connects; after a server restart the first
//! call reloads them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::store::{
    Begin, IdempotencyStore, Lease, Prior, Settled, StoreError, StoreFuture, DEFAULT_KEY_TTL,
};
use super::{Fingerprint, IdempotencyKey, StoredOutcome};

/// The default key prefix.
const DEFAULT_PREFIX: &str = "toolwright:idem:";

/// KEYS: record, lock. ARGV: fingerprint, token, lock TTL ms, record TTL ms.
const BEGIN: &str = r#"
local r = redis.call('HMGET', KEYS[1], 'fp', 'st', 'out', 'unk')
local unk = tonumber(r[4]) or 0
local prior = 'fresh'
if r[1] then
  if r[1] ~= ARGV[1] then return {'mismatch'} end
  if r[2] == 'd' then return {'replay', r[3]} end
  if r[2] == 'u' then prior = 'unknown' elseif r[2] == 'r' then prior = 'expired' end
end
if not redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then
  return {'in_flight', tostring(redis.call('PTTL', KEYS[2]))}
end
if prior == 'expired' then unk = unk + 1 end
redis.call('HSET', KEYS[1], 'fp', ARGV[1], 'st', 'r', 'tok', ARGV[2], 'unk', unk, 'pre', prior)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {'started', prior, tostring(unk)}
"#;

/// KEYS: record, lock. ARGV: token, mode (`d` done, `u` unknown effect, `x` release), key TTL
/// ms, stored outcome JSON (mode `d`). Returns 1 when the token still held the key, else 0.
const SETTLE: &str = r#"
local r = redis.call('HMGET', KEYS[1], 'tok', 'st', 'pre')
if r[1] ~= ARGV[1] or r[2] ~= 'r' then return 0 end
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
if ARGV[2] == 'd' then
  redis.call('HSET', KEYS[1], 'st', 'd', 'out', ARGV[4])
elseif ARGV[2] == 'u' then
  redis.call('HSET', KEYS[1], 'st', 'u')
  redis.call('HINCRBY', KEYS[1], 'unk', 1)
elseif r[3] == 'fresh' then
  redis.call('DEL', KEYS[1])
  return 1
else
  redis.call('HSET', KEYS[1], 'st', 'u')
end
redis.call('HDEL', KEYS[1], 'tok', 'pre')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"#;

/// The Redis [`IdempotencyStore`]: keys shared by every replica that points at one Redis.
///
/// Cheap to clone: clones share one multiplexed, self-reconnecting connection
/// ([`ConnectionManager`]).
///
/// ```no_run
/// use toolwright::idempotency::RedisStore;
///
/// # async fn demo() -> Result<(), toolwright::idempotency::StoreError> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379/").await?;
/// # let _ = store;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    inner: Arc<Inner>,
}

struct Inner {
    prefix: String,
    key_ttl: Duration,
    begin: Script,
    settle: Script,
}

impl RedisStore {
    /// Connects with the defaults: prefix `toolwright:idem:`, keys kept 24 h.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::builder().connect(url).await
    }

    /// A builder to change the defaults.
    pub fn builder() -> RedisStoreBuilder {
        RedisStoreBuilder {
            prefix: DEFAULT_PREFIX.to_owned(),
            key_ttl: DEFAULT_KEY_TTL,
            config: None,
        }
    }

    /// The prefix of every Redis key this store writes.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// How long a key is remembered after its last change.
    pub fn key_ttl(&self) -> Duration {
        self.inner.key_ttl
    }

    fn keys(&self, key: &IdempotencyKey) -> (String, String) {
        let record = format!("{}{{{}}}", self.inner.prefix, key.as_str());
        let lock = format!("{record}:lock");
        (record, lock)
    }

    async fn settle_with(
        &self,
        lease: &Lease,
        mode: &str,
        outcome: Option<&StoredOutcome>,
    ) -> Result<Settled, StoreError> {
        let (record, lock) = self.keys(lease.key());
        let mut conn = self.conn.clone();
        let held: i64 = self
            .inner
            .settle
            .key(record)
            .key(lock)
            .arg(token_text(lease.token()))
            .arg(mode)
            .arg(millis(self.inner.key_ttl))
            .arg(outcome.map(StoredOutcome::to_json).unwrap_or_default())
            .invoke_async(&mut conn)
            .await
            .map_err(StoreError::backend)?;
        Ok(if held == 1 {
            Settled::Recorded
        } else {
            Settled::LeaseLost
        })
    }
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.inner.prefix)
            .field("key_ttl", &self.inner.key_ttl)
            .finish()
    }
}

impl IdempotencyStore for RedisStore {
    fn begin<'a>(
        &'a self,
        key: &'a IdempotencyKey,
        fingerprint: &'a Fingerprint,
        lock_ttl: Duration,
    ) -> StoreFuture<'a, Begin> {
        Box::pin(async move {
            let (record, lock) = self.keys(key);
            let token = uuid::Uuid::new_v4().as_u128();
            let mut conn = self.conn.clone();
            let reply: Vec<String> = self
                .inner
                .begin
                .key(record)
                .key(lock)
                .arg(fingerprint.to_string())
                .arg(token_text(token))
                .arg(millis(lock_ttl).max(1))
                .arg(millis(self.inner.key_ttl.max(lock_ttl)).max(1))
                .invoke_async(&mut conn)
                .await
                .map_err(StoreError::backend)?;
            let field = |i: usize| reply.get(i).map(String::as_str);
            match field(0) {
                Some("started") => {
                    let prior = match field(1) {
                        Some("unknown") => Prior::UnknownEffect,
                        Some("expired") => Prior::LockExpired,
                        _ => Prior::Fresh,
                    };
                    let unknown_effects = field(2).and_then(|n| n.parse().ok()).unwrap_or(0);
                    Ok(Begin::Started(Lease::new(
                        key.clone(),
                        *fingerprint,
                        token,
                        prior,
                        unknown_effects,
                    )))
                }
                Some("replay") => {
                    let text = field(1).unwrap_or_default();
                    StoredOutcome::from_json(text)
                        .map(Begin::Replay)
                        .map_err(|e| StoreError::Corrupt(format!("stored outcome: {e}")))
                }
                Some("in_flight") => {
                    let ms: u64 = field(1).and_then(|n| n.parse().ok()).unwrap_or(0);
                    Ok(Begin::InFlight {
                        retry_after: Duration::from_millis(ms),
                    })
                }
                Some("mismatch") => Ok(Begin::Mismatch),
                other => Err(StoreError::Corrupt(format!("begin answered {other:?}"))),
            }
        })
    }

    fn complete<'a>(
        &'a self,
        lease: &'a Lease,
        outcome: StoredOutcome,
    ) -> StoreFuture<'a, Settled> {
        Box::pin(async move { self.settle_with(lease, "d", Some(&outcome)).await })
    }

    fn record_unknown_effect<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(self.settle_with(lease, "u", None))
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> StoreFuture<'a, Settled> {
        Box::pin(self.settle_with(lease, "x", None))
    }
}

/// Builds a [`RedisStore`].
#[derive(Debug, Clone)]
pub struct RedisStoreBuilder {
    prefix: String,
    key_ttl: Duration,
    config: Option<ConnectionManagerConfig>,
}

impl RedisStoreBuilder {
    /// The prefix of every Redis key the store writes (default `toolwright:idem:`). Give each
    /// application sharing one Redis its own.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long a key is remembered after its last change. Default 24 h.
    pub fn key_ttl(mut self, key_ttl: Duration) -> Self {
        self.key_ttl = key_ttl;
        self
    }

    /// Timeouts and reconnection policy of the connection [`connect`](Self::connect) opens
    /// (the `redis` crate's defaults otherwise).
    pub fn connection_config(mut self, config: ConnectionManagerConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// Connects to `url` (`redis://host:port/db`) and loads the scripts.
    pub async fn connect(self, url: &str) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(StoreError::backend)?;
        let config = self.config.clone().unwrap_or_default();
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(StoreError::backend)?;
        let store = self.build(conn);
        let mut conn = store.conn.clone();
        for script in [&store.inner.begin, &store.inner.settle] {
            script
                .load_async(&mut conn)
                .await
                .map_err(StoreError::backend)?;
        }
        Ok(store)
    }

    /// A store on a connection the application built. The scripts load on first use.
    pub fn build(self, conn: ConnectionManager) -> RedisStore {
        RedisStore {
            conn,
            inner: Arc::new(Inner {
                prefix: self.prefix,
                key_ttl: self.key_ttl,
                begin: Script::new(BEGIN),
                settle: Script::new(SETTLE),
            }),
        }
    }
}

fn token_text(token: u128) -> String {
    format!("{token:032x}")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
