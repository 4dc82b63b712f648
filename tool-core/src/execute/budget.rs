//! The retry budget: per tool, retries may not exceed a share of first attempts over a rolling
//! window, so a dead dependency cannot multiply its own load.
//!
//! # Why a budget and not only an attempt cap
//!
//! An attempt cap bounds one call; it does nothing for the fleet. With 3 attempts per call, a
//! dependency that fails every request receives three times its normal traffic exactly when it
//! can least take it, and every layer that retries multiplies that again (a retry storm). Google's
//! SRE book ("Handling Overload", client-side retry budgets) caps retries at about 10% of
//! requests per client; Finagle's `RetryBudget` and tower's `TpsBudget` (which cites it) allow
//! 20% of requests plus a small floor of retries per second, Envoy's retry budget also defaults
//! to 20%. toolwright follows them: every first attempt **deposits**, every retry **withdraws**,
//! and a retry is allowed only while
//!
//! ```text
//! retries in window + 1 <= ratio * first attempts in window + min_per_second * window seconds
//! ```
//!
//! When the budget is spent the call fails with its last error, and the message says that the
//! budget stopped it ([`RetryStop::Budget`](crate::RetryStop::Budget)).
//!
//! The floor lets a tool that is called rarely still retry a transient blip; it is 1 retry per
//! second rather than Finagle's 10 because tool calls are far rarer than RPCs, and a floor of
//! 100 retries per 10 s window would never bind for a tool called a few times a minute.
//!
//! ```
//! use std::time::Duration;
//! use toolwright::{execute::RetryBudget, Registry};
//!
//! let registry = Registry::builder()
//!     .retry_budget(RetryBudget::new(0.1).min_per_second(0).window(Duration::from_secs(30)))
//!     .build()
//!     .unwrap();
//! # let _ = registry;
//! ```

use std::fmt;
use std::time::Duration;

use super::window::Window;

/// How many retries a tool may spend: a ratio of first attempts over a rolling window, plus a
/// floor. Set registry-wide with
/// [`RegistryBuilder::retry_budget`](crate::RegistryBuilder::retry_budget).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudget {
    ratio: f64,
    min_per_second: u32,
    window: Duration,
    unlimited: bool,
}

impl RetryBudget {
    /// A budget that allows `ratio` retries per first attempt (0.2 = one retry per five calls),
    /// with the default floor (1 retry per second) and window (10 s).
    pub const fn new(ratio: f64) -> Self {
        RetryBudget {
            ratio: if ratio.is_finite() && ratio > 0.0 {
                ratio
            } else {
                0.0
            },
            min_per_second: 1,
            window: Duration::from_secs(10),
            unlimited: false,
        }
    }

    /// No budget: only the attempt cap and the deadline bound retries.
    pub const fn unlimited() -> Self {
        let mut budget = RetryBudget::new(0.0);
        budget.unlimited = true;
        budget
    }

    /// Retries allowed per second regardless of traffic (default 1), so rarely called tools can
    /// still retry.
    pub const fn min_per_second(mut self, retries: u32) -> Self {
        self.min_per_second = retries;
        self
    }

    /// How long a deposit counts (default 10 s, tower's and Finagle's default; at least 1 s).
    pub const fn window(mut self, window: Duration) -> Self {
        self.window = if window.as_secs() == 0 {
            Duration::from_secs(1)
        } else {
            window
        };
        self
    }

    /// The share of first attempts that may be retried.
    pub const fn ratio(&self) -> f64 {
        self.ratio
    }

    /// Whether this budget never refuses a retry.
    pub const fn is_unlimited(&self) -> bool {
        self.unlimited
    }
}

impl Default for RetryBudget {
    /// 20% of first attempts plus 1 retry per second, over 10 s.
    fn default() -> Self {
        RetryBudget::new(0.2)
    }
}

/// A [`RetryBudget`] at run time: the registry keeps one per tool; anything else that retries
/// (an agent's model calls, say) can keep its own. Times are nanoseconds since an origin the
/// owner picks (any fixed `Instant`), so a paused test clock drives it too.
///
/// ```
/// use toolwright::execute::{Budget, RetryBudget};
///
/// let budget = Budget::new(RetryBudget::new(0.5).min_per_second(0));
/// budget.deposit(0);
/// budget.deposit(1);
/// assert!(budget.withdraw(2)); // one retry per two first attempts
/// assert!(!budget.withdraw(3));
/// ```
pub struct Budget {
    policy: RetryBudget,
    /// (first attempts, retries) per bucket.
    window: Window,
    reserve: u64,
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("policy", &self.policy)
            .finish()
    }
}

impl Budget {
    /// A budget with nothing deposited yet.
    pub fn new(policy: RetryBudget) -> Self {
        let reserve = u64::from(policy.min_per_second).saturating_mul(policy.window.as_secs());
        Budget {
            policy,
            window: Window::new(policy.window, 10),
            reserve,
        }
    }

    /// A first attempt: it earns `ratio` retries for the rest of the window.
    #[inline]
    pub fn deposit(&self, at: u64) {
        if !self.policy.unlimited {
            self.window.record(at, 1, 0);
        }
    }

    /// Takes one retry from the budget; `false` when it is spent. Concurrent withdrawals may
    /// overdraw by the number of racing callers, as in tower; the bound holds in the long run.
    pub fn withdraw(&self, at: u64) -> bool {
        if self.policy.unlimited {
            return true;
        }
        let (first_attempts, retries) = self.window.totals(at);
        let earned = (first_attempts as f64 * self.policy.ratio).floor() as u64;
        if retries < self.reserve.saturating_add(earned) {
            self.window.record(at, 0, 1);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn retries_are_held_to_the_ratio_of_first_attempts() {
        let budget = Budget::new(RetryBudget::new(0.2).min_per_second(0));
        assert!(!budget.withdraw(0), "nothing deposited, no floor");
        for _ in 0..100 {
            budget.deposit(0);
        }
        let granted = (0..100).filter(|_| budget.withdraw(0)).count();
        assert_eq!(granted, 20);
    }

    #[test]
    fn the_floor_allows_retries_without_traffic() {
        let budget = Budget::new(
            RetryBudget::new(0.2)
                .min_per_second(1)
                .window(Duration::from_secs(10)),
        );
        let granted = (0..50).filter(|_| budget.withdraw(0)).count();
        assert_eq!(granted, 10);
    }

    #[test]
    fn deposits_expire_with_the_window() {
        let policy = RetryBudget::new(1.0).min_per_second(0);
        let fresh = Budget::new(policy);
        fresh.deposit(0);
        assert!(fresh.withdraw(9 * SEC));
        let stale = Budget::new(policy);
        stale.deposit(0);
        assert!(!stale.withdraw(11 * SEC));
    }

    #[test]
    fn an_unlimited_budget_never_refuses() {
        let budget = Budget::new(RetryBudget::unlimited());
        assert!((0..1000).all(|_| budget.withdraw(0)));
    }

    #[test]
    fn the_policy_reports_what_it_was_given() {
        assert_eq!(RetryBudget::new(0.3).ratio(), 0.3);
        assert_eq!(RetryBudget::default().ratio(), 0.2);
        // Nonsense ratios mean no retries earned, not a panic or a negative budget.
        for nonsense in [-1.0, f64::NAN, f64::INFINITY, 0.0] {
            assert_eq!(RetryBudget::new(nonsense).ratio(), 0.0, "{nonsense}");
        }
        assert!(RetryBudget::unlimited().is_unlimited());
        assert!(!RetryBudget::new(0.2).is_unlimited());
        assert!(!RetryBudget::default().is_unlimited());
    }
}
