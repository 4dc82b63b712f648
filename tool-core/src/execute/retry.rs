//! Retry policy: how many attempts a call gets and how long to wait between them.
//!
//! # Capped full jitter
//!
//! Before retry `n` (0 for the first retry) the attempt loop sleeps
//!
//! ```text
//! sleep = U(0, min(cap, base * 2^n))        base = 250 ms, cap = 20 s
//! ```
//!
//! AWS's "Exponential Backoff and Jitter" (Marc Brooker, 2015) compared no jitter, equal jitter,
//! decorrelated jitter and full jitter for clients contending for one resource: full jitter did
//! the least total work and finished about as fast as the best, because spreading retries
//! uniformly over the whole interval breaks up the synchronized waves that plain exponential
//! backoff still produces. The cap keeps a long outage from pushing one call's wait past any
//! useful horizon; the call's deadline bounds the sum.
//!
//! A `rate_limited` failure that says how long to wait (`Retry-After`) is honoured instead: the
//! loop waits exactly that long, or gives up at once if the wait would pass the call's deadline.
//!
//! # Which failures are retried
//!
//! Only transient kinds ([`ErrorKind::is_transient`](crate::ErrorKind::is_transient):
//! `timeout`, `rate_limited`, `unavailable`). `not_found`, `bad_request`, `permission_denied`,
//! `auth_expired`, `conflict` and the rest would fail the same way again. A tool that is not
//! idempotent is retried only when it takes an [`IdempotencyKey`](crate::IdempotencyKey) (the
//! same key on every attempt, so the dependency can recognize the repeat) or when the error
//! proves the action never started ([`ToolError::never_started`](crate::ToolError::never_started),
//! set for refused connections; a `rate_limited` refusal counts as never started too);
//! otherwise a timeout is reported after one attempt, because the action may have happened, and
//! the envelope's `retryable` is `false` so the model checks before calling again.
//!
//! ```
//! use std::time::Duration;
//! use toolwright::{execute::RetryPolicy, Registry};
//!
//! let policy = RetryPolicy::new().max_attempts(4).base(Duration::from_millis(100));
//! assert_eq!(policy.ceiling(0), Duration::from_millis(100));
//! assert_eq!(policy.ceiling(3), Duration::from_millis(800));
//! let registry = Registry::builder().retry_policy(policy).build().unwrap();
//! # let _ = registry;
//! ```

use std::time::Duration;

use crate::runtime::random::RandomSource;

/// How many attempts a call gets and how the waits between them grow. Set registry-wide with
/// [`RegistryBuilder::retry_policy`](crate::RegistryBuilder::retry_policy); a tool's own
/// `#[tool(retries = N)]` overrides the attempt count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_attempts: u32,
    base: Duration,
    cap: Duration,
}

impl RetryPolicy {
    /// Three attempts in all, full jitter from a 250 ms base capped at 20 s.
    pub const fn new() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(20),
        }
    }

    /// One attempt: the framework never retries.
    pub const fn no_retries() -> Self {
        RetryPolicy::new().max_attempts(1)
    }

    /// Attempts in all, the first included (at least 1).
    pub const fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = if attempts == 0 { 1 } else { attempts };
        self
    }

    /// The ceiling of the first retry's wait (default 250 ms); each later retry doubles it.
    pub const fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// The largest ceiling any wait can have (default 20 s).
    pub const fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// Attempts in all.
    pub const fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The upper bound of the wait before retry `n` (0 for the first retry):
    /// `min(cap, base * 2^n)`.
    pub fn ceiling(&self, n: u32) -> Duration {
        2u32.checked_pow(n)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.cap, |d| d.min(self.cap))
    }

    /// A wait before retry `n`, drawn uniformly from `0..=ceiling(n)`.
    pub fn delay(&self, n: u32, random: &dyn RandomSource) -> Duration {
        let ceiling = u64::try_from(self.ceiling(n).as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(random.up_to(ceiling))
    }

    /// The default deadline of a call whose attempts each time out after `timeout`: every
    /// attempt may run to its timeout and every wait may reach its ceiling, and still finish.
    pub fn deadline_for(&self, timeout: Duration, attempts: u32) -> Duration {
        let attempts = attempts.max(1);
        let waits =
            (0..attempts - 1).fold(Duration::ZERO, |sum, n| sum.saturating_add(self.ceiling(n)));
        timeout.saturating_mul(attempts).saturating_add(waits)
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::random::SeededRandom;

    #[test]
    fn ceilings_double_from_the_base_up_to_the_cap() {
        let p = RetryPolicy::new();
        let ms = |n| p.ceiling(n).as_millis();
        assert_eq!(
            [ms(0), ms(1), ms(2), ms(6), ms(7)],
            [250, 500, 1000, 16000, 20000]
        );
        assert_eq!(p.ceiling(200), Duration::from_secs(20));
    }

    #[test]
    fn delays_stay_within_their_ceiling_and_spread_over_it() {
        let p = RetryPolicy::new();
        let random = SeededRandom::new(1);
        for n in 0..10 {
            let ceiling = p.ceiling(n);
            let delays: Vec<Duration> = (0..500).map(|_| p.delay(n, &random)).collect();
            assert!(delays.iter().all(|d| *d <= ceiling));
            let mean = delays.iter().sum::<Duration>() / 500;
            // Full jitter: the mean sits near half the ceiling, not near it or near zero.
            assert!(
                mean > ceiling * 4 / 10 && mean < ceiling * 6 / 10,
                "{n}: {mean:?}"
            );
        }
    }

    #[test]
    fn the_builders_set_what_they_name() {
        assert_eq!(RetryPolicy::new().attempts(), 3);
        assert_eq!(RetryPolicy::default(), RetryPolicy::new());
        assert_eq!(RetryPolicy::no_retries().attempts(), 1);
        assert_eq!(RetryPolicy::new().max_attempts(5).attempts(), 5);
        assert_eq!(
            RetryPolicy::new().max_attempts(0).attempts(),
            1,
            "at least one"
        );
        let p = RetryPolicy::new()
            .base(Duration::from_millis(100))
            .cap(Duration::from_millis(300));
        assert_eq!(p.ceiling(0), Duration::from_millis(100));
        assert_eq!(p.ceiling(1), Duration::from_millis(200));
        assert_eq!(p.ceiling(2), Duration::from_millis(300));
        assert_eq!(p.attempts(), 3, "base and cap leave the attempts alone");
    }

    #[test]
    fn the_default_deadline_covers_every_attempt_and_wait() {
        let p = RetryPolicy::new();
        assert_eq!(
            p.deadline_for(Duration::from_secs(2), 3),
            Duration::from_millis(6750)
        );
        assert_eq!(
            p.deadline_for(Duration::from_secs(2), 1),
            Duration::from_secs(2)
        );
    }
}
