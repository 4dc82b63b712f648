//! The retry decision: whether a failed attempt is tried again, and after how long. A function
//! of what it is given only (the attempt's failure, where the call is in its attempts, the
//! tool's retry rules and the jitter they draw from): no clock read, no breaker, no budget. The
//! attempt loop ([`Bounds::attempts`](super::Bounds::attempts)) asks it after every failed
//! attempt and applies the retry budget to a `Retry`.

use std::time::Duration;

use tokio::time::Instant;

use super::retry::RetryPolicy;
use crate::outcome::{ErrorKind, RetryStop};
use crate::runtime::random::RandomSource;

/// What a failed attempt says about trying again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Failed {
    pub(crate) kind: ErrorKind,
    /// The attempt provably did nothing (the tool said so, or the dependency throttled it).
    pub(crate) never_started: bool,
    /// How long the dependency asked to wait (`Retry-After`).
    pub(crate) retry_after: Option<Duration>,
}

/// Where the call is in its attempts when one fails.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attempted {
    /// The number of the attempt that failed (1 for the first).
    pub(crate) number: u32,
    /// When it ended.
    pub(crate) ended: Instant,
    /// When the whole call must be done.
    pub(crate) deadline: Instant,
}

/// A tool's retry rules, resolved when the registry is built, and the jitter they draw from.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    /// Attempts in all, the first included.
    pub(crate) max_attempts: u32,
    /// Idempotent, or takes an idempotency key: a transient failure may be repeated.
    pub(crate) retry_safe: bool,
    pub(crate) policy: RetryPolicy,
    pub(crate) random: &'a dyn RandomSource,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Try again after `wait` (the budget permitting).
    Retry { wait: Duration },
    /// The failure is the call's: `None` when it is not one that retrying could fix, otherwise
    /// why retrying it stopped.
    Stop(Option<RetryStop>),
}

/// Whether `failure` is retried, in this order: only a transient failure; only when repeating
/// it is safe (the tool is retry-safe, or the attempt never started); only while attempts are
/// left; only when the wait (`Retry-After`, else a full-jitter draw) ends before the deadline.
pub(crate) fn decide(failure: &Failed, attempts: &Attempted, rules: &Rules<'_>) -> Decision {
    if !failure.kind.is_transient() {
        return Decision::Stop(None);
    }
    if !rules.retry_safe && !failure.never_started {
        return Decision::Stop(Some(RetryStop::NotIdempotent));
    }
    if attempts.number >= rules.max_attempts {
        return Decision::Stop(Some(RetryStop::Attempts));
    }
    let wait = failure
        .retry_after
        .unwrap_or_else(|| rules.policy.delay(attempts.number - 1, rules.random));
    if attempts.ended + wait >= attempts.deadline {
        return Decision::Stop(Some(RetryStop::Deadline));
    }
    Decision::Retry { wait }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::random::SeededRandom;

    fn failed(kind: ErrorKind) -> Failed {
        Failed {
            kind,
            never_started: false,
            retry_after: None,
        }
    }

    fn at(number: u32, deadline_in: Duration) -> Attempted {
        let ended = Instant::now();
        Attempted {
            number,
            ended,
            deadline: ended + deadline_in,
        }
    }

    fn rules(random: &dyn RandomSource, retry_safe: bool) -> Rules<'_> {
        Rules {
            max_attempts: 3,
            retry_safe,
            policy: RetryPolicy::new(),
            random,
        }
    }

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn a_failure_retrying_cannot_fix_is_the_calls() {
        let random = SeededRandom::new(1);
        for kind in [
            ErrorKind::NotFound,
            ErrorKind::BadRequest,
            ErrorKind::PermissionDenied,
            ErrorKind::Conflict,
            ErrorKind::ToolPanicked,
        ] {
            let decision = decide(&failed(kind), &at(1, LONG), &rules(&random, true));
            assert_eq!(decision, Decision::Stop(None), "{kind:?}");
        }
    }

    #[test]
    fn a_transient_failure_of_a_safe_tool_is_retried_within_the_backoff_ceiling() {
        let random = SeededRandom::new(7);
        let rules = rules(&random, true);
        for (number, ceiling) in [(1, 250), (2, 500)] {
            for kind in [
                ErrorKind::Timeout,
                ErrorKind::Unavailable,
                ErrorKind::RateLimited,
            ] {
                match decide(&failed(kind), &at(number, LONG), &rules) {
                    Decision::Retry { wait } => {
                        assert!(wait <= Duration::from_millis(ceiling), "{wait:?}")
                    }
                    other => panic!("{kind:?} after attempt {number}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_wait() {
        let (a, b) = (SeededRandom::new(3), SeededRandom::new(3));
        let attempt = at(1, LONG);
        let failure = failed(ErrorKind::Timeout);
        assert_eq!(
            decide(&failure, &attempt, &rules(&a, true)),
            decide(&failure, &attempt, &rules(&b, true))
        );
    }

    #[test]
    fn a_tool_that_may_have_acted_is_not_repeated_unless_the_attempt_never_started() {
        let random = SeededRandom::new(1);
        let unsafe_rules = rules(&random, false);
        assert_eq!(
            decide(&failed(ErrorKind::Timeout), &at(1, LONG), &unsafe_rules),
            Decision::Stop(Some(RetryStop::NotIdempotent))
        );
        let refused = Failed {
            never_started: true,
            ..failed(ErrorKind::Unavailable)
        };
        assert!(matches!(
            decide(&refused, &at(1, LONG), &unsafe_rules),
            Decision::Retry { .. }
        ));
    }

    #[test]
    fn the_last_attempt_is_the_last() {
        let random = SeededRandom::new(1);
        assert_eq!(
            decide(
                &failed(ErrorKind::Timeout),
                &at(3, LONG),
                &rules(&random, true)
            ),
            Decision::Stop(Some(RetryStop::Attempts))
        );
        let one = Rules {
            max_attempts: 1,
            ..rules(&random, true)
        };
        assert_eq!(
            decide(&failed(ErrorKind::Timeout), &at(1, LONG), &one),
            Decision::Stop(Some(RetryStop::Attempts))
        );
    }

    #[test]
    fn retry_after_is_waited_exactly_or_not_at_all_past_the_deadline() {
        let random = SeededRandom::new(1);
        let rules = rules(&random, true);
        let asked = |ms| Failed {
            retry_after: Some(Duration::from_millis(ms)),
            ..failed(ErrorKind::RateLimited)
        };
        assert_eq!(
            decide(&asked(1_500), &at(1, LONG), &rules),
            Decision::Retry {
                wait: Duration::from_millis(1_500)
            }
        );
        assert_eq!(
            decide(&asked(1_500), &at(1, Duration::from_millis(1_500)), &rules),
            Decision::Stop(Some(RetryStop::Deadline))
        );
        assert!(matches!(
            decide(&asked(1_499), &at(1, Duration::from_millis(1_500)), &rules),
            Decision::Retry { .. }
        ));
    }

    #[test]
    fn a_drawn_wait_that_ends_at_the_deadline_stops() {
        // Every draw is at most the 250 ms ceiling: a deadline 1 ms away stops unless the
        // draw is 0, and the seed below does not draw 0.
        let random = SeededRandom::new(11);
        let rules = rules(&random, true);
        let decision = decide(
            &failed(ErrorKind::Unavailable),
            &at(1, Duration::from_nanos(1)),
            &rules,
        );
        assert_eq!(decision, Decision::Stop(Some(RetryStop::Deadline)));
    }
}
