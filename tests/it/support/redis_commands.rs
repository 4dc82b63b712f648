//! Commands a test sends to its own `redis-server`: moving the server's clock forward for some
//! keys, and reading how many commands of a kind it ran.
#![allow(dead_code)]

use std::time::Duration;

use toolwright::redis::{self, aio::MultiplexedConnection};

/// Shortens every TTL under a prefix by ARGV[2] ms, deleting keys it runs out: the server's
/// clock, moved forward for this test's keys only.
const ADVANCE: &str = r#"
local by = tonumber(ARGV[2])
for _, k in ipairs(redis.call('KEYS', ARGV[1])) do
  local ttl = redis.call('PTTL', k)
  if ttl >= 0 then
    if ttl <= by then redis.call('DEL', k) else redis.call('PEXPIRE', k, ttl - by) end
  end
end
return 1
"#;

/// Every key under `prefix` lives `by` less, as if the server's clock had moved on.
pub async fn advance(raw: &MultiplexedConnection, prefix: &str, by: Duration) {
    let _: i64 = redis::Script::new(ADVANCE)
        .arg(format!("{prefix}*"))
        .arg(u64::try_from(by.as_millis()).unwrap())
        .invoke_async(&mut raw.clone())
        .await
        .unwrap();
}

/// Commands this server has run on behalf of clients, by name (`INFO commandstats`).
pub async fn command_calls(raw: &MultiplexedConnection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut raw.clone())
        .await
        .unwrap();
    let prefix = format!("cmdstat_{name}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}
