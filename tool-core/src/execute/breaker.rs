//! The circuit breaker: one per tool, so a dead dependency fails fast instead of making every
//! conversation wait out its timeout.
//!
//! # States
//!
//! ```text
//!            failure rate >= threshold            cooldown over: first caller
//!            after min_calls in the window        takes the probe permit
//!   Closed ------------------------------> Open ------------------------> HalfOpen
//!     ^                                     ^                                |
//!     |                                     +--------- a probe fails --------+
//!     +----------- every probe succeeded (N of N) ---------------------------+
//! ```
//!
//! - **Closed**: calls run; each attempt's verdict lands in a time-bucketed rolling window
//!   (resilience4j's time-based sliding window, Polly's sampling duration). When, after at least
//!   `min_calls` in the window, the failure rate reaches the threshold, the breaker opens.
//! - **Open**: calls fail at once with `circuit_open` and `retry_after_ms` (the rest of the
//!   cooldown) instead of queueing on a dependency that is down. The cooldown grows by a factor
//!   each time a probe fails (re-open), up to a maximum, and starts over once the breaker closes.
//! - **HalfOpen**: exactly `probes` calls (default 1: one probe is enough to learn whether the
//!   dependency is back) are let through, each holding an atomic permit. A probe that is cancelled
//!   (its future dropped) or ends in a failure that says nothing about the dependency's health
//!   gives its permit back; one that fails re-opens the breaker; when all `probes` succeeded, the
//!   breaker closes.
//!
//! What counts: a failure of a kind for which
//! [`ErrorKind::counts_against_breaker`](crate::ErrorKind::counts_against_breaker) is true
//! (`timeout`, `rate_limited`, `unavailable`, `tool_panicked`, `invalid_result`). Validation
//! failures never reach the breaker (they are rejected before it), client errors (4xx other than
//! 429) are the caller's problem, and a cancelled call is neither a success nor a failure.
//!
//! Operators can [`force_open`](BreakerHandle::force_open) a breaker (take a tool out of service)
//! and [`reset`](BreakerHandle::reset) it. Every transition is a `tracing` event with target
//! `toolwright::breaker`.
//!
//! # Concurrency
//!
//! The state, the generation, the free probe permits and the successful probes share one
//! `AtomicU64`, so admission is a load on the success path and one compare-and-swap in half-open.
//! Transitions into `Open`, `Closed` and `ForcedOpen` (rare, by definition) serialize on a
//! per-breaker mutex so the cooldown deadline and the state that uses it are published together.
//! Every transition bumps the generation, and a permit only acts on the generation that issued it,
//! so a slow call admitted before a reset cannot close or trip the breaker after it.
//!
//! ```
//! use std::time::Duration;
//! use toolwright::{execute::BreakerPolicy, Registry};
//!
//! let registry = Registry::builder()
//!     .breaker(BreakerPolicy::new().failure_rate(0.5).min_calls(20).cooldown(Duration::from_secs(10)))
//!     .build()
//!     .unwrap();
//! # let _ = registry;
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::window::Window;
use crate::runtime::clock::{nanos_since, ClockHandle};

/// How a tool's breaker decides to open and when it tries again. Set registry-wide with
/// [`RegistryBuilder::breaker`](crate::RegistryBuilder::breaker), per tool with
/// [`RegistryBuilder::breaker_for`](crate::RegistryBuilder::breaker_for).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerPolicy {
    enabled: bool,
    failure_rate: f64,
    min_calls: u32,
    window: Duration,
    buckets: u32,
    cooldown: Duration,
    growth: u32,
    max_cooldown: Duration,
    probes: u32,
}

impl BreakerPolicy {
    /// Opens at a 50% failure rate (resilience4j's default) after at least 10 calls in a 30 s
    /// window (Polly's sampling duration) of 10 buckets; stays open 30 s,
    /// doubling on each failed probe up to 5 minutes; admits 1 probe in half-open.
    pub const fn new() -> Self {
        BreakerPolicy {
            enabled: true,
            failure_rate: 0.5,
            min_calls: 10,
            window: Duration::from_secs(30),
            buckets: 10,
            cooldown: Duration::from_secs(30),
            growth: 2,
            max_cooldown: Duration::from_secs(300),
            probes: 1,
        }
    }

    /// A breaker that never opens by itself (it can still be forced open by hand).
    pub const fn disabled() -> Self {
        let mut policy = BreakerPolicy::new();
        policy.enabled = false;
        policy
    }

    /// The failure rate, in `(0, 1]`, at which the breaker opens (default 0.5).
    pub const fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = if rate > 0.0 && rate <= 1.0 { rate } else { 1.0 };
        self
    }

    /// Calls the window must hold before the rate is judged (default 10, at least 1).
    pub const fn min_calls(mut self, calls: u32) -> Self {
        self.min_calls = if calls == 0 { 1 } else { calls };
        self
    }

    /// The span of the rolling window and its number of buckets (default 30 s, 10 buckets).
    pub const fn window(mut self, span: Duration, buckets: u32) -> Self {
        self.window = span;
        self.buckets = if buckets == 0 { 1 } else { buckets };
        self
    }

    /// How long the breaker stays open before admitting a probe (default 30 s).
    pub const fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Multiplies the cooldown by `factor` each time a probe fails, up to `max` (default ×2 up
    /// to 5 min). A factor of 1 keeps it constant.
    pub const fn cooldown_growth(mut self, factor: u32, max: Duration) -> Self {
        self.growth = if factor == 0 { 1 } else { factor };
        self.max_cooldown = max;
        self
    }

    /// Concurrent probes admitted in half-open, all of which must succeed to close (default 1,
    /// at most 65,535).
    pub const fn probes(mut self, probes: u32) -> Self {
        self.probes = if probes == 0 {
            1
        } else if probes > FIELD_MAX as u32 {
            FIELD_MAX as u32
        } else {
            probes
        };
        self
    }

    /// Whether the breaker opens by itself.
    pub const fn is_enabled(&self) -> bool {
        self.enabled
    }

    fn cooldown_after(&self, reopens: u32) -> Duration {
        let factor = self.growth.checked_pow(reopens).unwrap_or(u32::MAX);
        self.cooldown
            .checked_mul(factor)
            .map_or(self.max_cooldown, |d| {
                d.min(self.max_cooldown.max(self.cooldown))
            })
    }
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        BreakerPolicy::new()
    }
}

/// Where a breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerState {
    /// Calls run; failures are counted.
    Closed,
    /// Calls fail fast until the cooldown ends.
    Open,
    /// A limited number of probe calls run to test the dependency.
    HalfOpen,
    /// Opened by hand ([`BreakerHandle::force_open`]); stays open until [`BreakerHandle::reset`].
    ForcedOpen,
}

impl BreakerState {
    /// `closed`, `open`, `half_open` or `forced_open`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
            BreakerState::ForcedOpen => "forced_open",
        }
    }

    const fn bits(self) -> u64 {
        match self {
            BreakerState::Closed => 0,
            BreakerState::Open => 1,
            BreakerState::HalfOpen => 2,
            BreakerState::ForcedOpen => 3,
        }
    }

    const fn from_bits(bits: u64) -> Self {
        match bits & 0b11 {
            0 => BreakerState::Closed,
            1 => BreakerState::Open,
            2 => BreakerState::HalfOpen,
            _ => BreakerState::ForcedOpen,
        }
    }
}

impl fmt::Display for BreakerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// The state word: state (2 bits) | free probe permits (16) | successful probes (16) | generation (30).
const FIELD_MAX: u64 = 0xFFFF;
const FREE_SHIFT: u32 = 2;
const OK_SHIFT: u32 = 18;
const GEN_SHIFT: u32 = 34;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Word(u64);

impl Word {
    fn new(state: BreakerState, generation: u64, free: u64, ok: u64) -> Self {
        Word(
            state.bits()
                | (free & FIELD_MAX) << FREE_SHIFT
                | (ok & FIELD_MAX) << OK_SHIFT
                | generation << GEN_SHIFT,
        )
    }
    fn state(self) -> BreakerState {
        BreakerState::from_bits(self.0)
    }
    fn free(self) -> u64 {
        (self.0 >> FREE_SHIFT) & FIELD_MAX
    }
    fn ok(self) -> u64 {
        (self.0 >> OK_SHIFT) & FIELD_MAX
    }
    fn generation(self) -> u64 {
        self.0 >> GEN_SHIFT
    }
    fn next_generation(self) -> u64 {
        (self.generation() + 1) & ((1 << (64 - GEN_SHIFT)) - 1)
    }
}

/// Why the breaker refused a call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rejection {
    pub(crate) state: BreakerState,
    pub(crate) retry_after: Option<Duration>,
}

/// What one attempt says about the dependency's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Success,
    Failure,
    /// Neither: a client error, a cancellation.
    Neutral,
}

/// One tool's breaker at run time.
pub(crate) struct Breaker {
    tool: Arc<str>,
    policy: BreakerPolicy,
    /// What to tell callers turned away in half-open: the probe answers within the timeout.
    probe_wait: Duration,
    word: AtomicU64,
    /// End of the cooldown, nanoseconds since `origin`; written before the `Open` word it goes with.
    open_until: AtomicU64,
    /// Consecutive re-opens since the breaker last closed, for the cooldown's growth.
    reopens: AtomicU32,
    /// Times the breaker opened on its own (from closed, or again from half-open), since the
    /// registry was built; for [`Registry::stats`](crate::Registry::stats).
    openings: AtomicU64,
    /// (calls, failures) per bucket.
    window: Window,
    origin: Instant,
    transition: Mutex<()>,
}

impl Breaker {
    pub(crate) fn new(
        tool: Arc<str>,
        policy: BreakerPolicy,
        probe_wait: Duration,
        origin: Instant,
    ) -> Self {
        Breaker {
            tool,
            policy,
            probe_wait,
            word: AtomicU64::new(Word::new(BreakerState::Closed, 0, 0, 0).0),
            open_until: AtomicU64::new(0),
            reopens: AtomicU32::new(0),
            openings: AtomicU64::new(0),
            window: Window::new(policy.window, policy.buckets),
            origin,
            transition: Mutex::new(()),
        }
    }

    fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    fn cas(&self, current: Word, next: Word) -> Result<(), Word> {
        #[cfg(test)]
        tests::before_cas(self);
        self.word
            .compare_exchange(current.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(Word)
    }

    /// Asks to run one attempt.
    #[inline]
    pub(crate) fn admit(&self, now: Instant) -> Result<Permit<'_>, Rejection> {
        let mut word = self.load();
        loop {
            match word.state() {
                BreakerState::Closed => {
                    return Ok(Permit {
                        breaker: self,
                        generation: word.generation(),
                        probe: false,
                        done: false,
                    })
                }
                BreakerState::ForcedOpen => {
                    return Err(Rejection {
                        state: BreakerState::ForcedOpen,
                        retry_after: None,
                    })
                }
                BreakerState::Open => {
                    let until = self.open_until.load(Ordering::Acquire);
                    let again = self.load();
                    if again != word {
                        word = again;
                        continue;
                    }
                    let now = nanos_since(self.origin, now);
                    if now < until {
                        return Err(Rejection {
                            state: BreakerState::Open,
                            retry_after: Some(Duration::from_nanos(until - now)),
                        });
                    }
                    // The cooldown is over: this caller becomes the first probe.
                    let generation = word.next_generation();
                    let probes = u64::from(self.policy.probes);
                    let next = Word::new(BreakerState::HalfOpen, generation, probes - 1, 0);
                    match self.cas(word, next) {
                        Ok(()) => {
                            tracing::info!(
                                target: "toolwright::breaker",
                                tool = %self.tool,
                                from = "open",
                                to = "half_open",
                                probes,
                                "circuit breaker half-open: admitting a probe"
                            );
                            return Ok(Permit {
                                breaker: self,
                                generation,
                                probe: true,
                                done: false,
                            });
                        }
                        Err(seen) => word = seen,
                    }
                }
                BreakerState::HalfOpen => {
                    if word.free() == 0 {
                        return Err(Rejection {
                            state: BreakerState::HalfOpen,
                            retry_after: Some(self.probe_wait),
                        });
                    }
                    let next = Word(word.0 - (1 << FREE_SHIFT));
                    match self.cas(word, next) {
                        Ok(()) => {
                            return Ok(Permit {
                                breaker: self,
                                generation: word.generation(),
                                probe: true,
                                done: false,
                            })
                        }
                        Err(seen) => word = seen,
                    }
                }
            }
        }
    }

    /// `at`: nanoseconds since the breaker's origin.
    #[inline]
    fn record(&self, permit: &Permit<'_>, verdict: Verdict, at: u64) {
        if permit.probe {
            match verdict {
                Verdict::Success => self.probe_succeeded(permit.generation),
                Verdict::Failure => self.trip(permit.generation, BreakerState::HalfOpen, at),
                Verdict::Neutral => self.return_permit(permit.generation),
            }
            return;
        }
        if !self.policy.enabled {
            return;
        }
        match verdict {
            Verdict::Success => self.window.record(at, 1, 0),
            Verdict::Failure => {
                self.window.record(at, 1, 1);
                let (calls, failures) = self.window.totals(at);
                if calls >= u64::from(self.policy.min_calls)
                    && failures as f64 >= self.policy.failure_rate * calls as f64
                {
                    self.trip(permit.generation, BreakerState::Closed, at);
                }
            }
            Verdict::Neutral => {}
        }
    }

    fn return_permit(&self, generation: u64) {
        let mut word = self.load();
        while word.state() == BreakerState::HalfOpen && word.generation() == generation {
            match self.cas(word, Word(word.0 + (1 << FREE_SHIFT))) {
                Ok(()) => return,
                Err(seen) => word = seen,
            }
        }
    }

    fn probe_succeeded(&self, generation: u64) {
        let mut word = self.load();
        while word.state() == BreakerState::HalfOpen && word.generation() == generation {
            if word.ok() + 1 >= u64::from(self.policy.probes) {
                self.close(generation);
                return;
            }
            match self.cas(word, Word(word.0 + (1 << OK_SHIFT))) {
                Ok(()) => return,
                Err(seen) => word = seen,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.transition
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Half-open -> closed, if the breaker is still in the generation the probes ran in.
    fn close(&self, generation: u64) {
        let _guard = self.lock();
        let mut word = self.load();
        while word.state() == BreakerState::HalfOpen && word.generation() == generation {
            self.window.clear();
            match self.cas(
                word,
                Word::new(BreakerState::Closed, word.next_generation(), 0, 0),
            ) {
                Ok(()) => {
                    self.reopens.store(0, Ordering::Relaxed);
                    tracing::info!(
                        target: "toolwright::breaker",
                        tool = %self.tool,
                        from = "half_open",
                        to = "closed",
                        "circuit breaker closed: the probe succeeded"
                    );
                    return;
                }
                Err(seen) => word = seen,
            }
        }
    }

    /// Closed or half-open -> open, if the breaker is still where the failing call found it.
    fn trip(&self, generation: u64, from: BreakerState, at: u64) {
        let _guard = self.lock();
        let mut word = self.load();
        if word.state() != from || word.generation() != generation {
            return;
        }
        let reopens = match from {
            BreakerState::HalfOpen => self.reopens.load(Ordering::Relaxed).saturating_add(1),
            _ => 0,
        };
        let cooldown = self.policy.cooldown_after(reopens);
        let until = at.saturating_add(u64::try_from(cooldown.as_nanos()).unwrap_or(u64::MAX));
        // Published before the word: a reader that sees this `Open` sees this deadline.
        self.open_until.store(until, Ordering::Release);
        loop {
            let next = Word::new(BreakerState::Open, word.next_generation(), 0, 0);
            match self.cas(word, next) {
                Ok(()) => break,
                Err(seen) if seen.state() == from && seen.generation() == generation => {
                    word = seen;
                }
                Err(_) => return,
            }
        }
        self.reopens.store(reopens, Ordering::Relaxed);
        self.openings.fetch_add(1, Ordering::Relaxed);
        let cooldown_ms = cooldown.as_millis() as u64;
        if from == BreakerState::Closed {
            let (calls, failures) = self.window.totals(at);
            tracing::warn!(
                target: "toolwright::breaker",
                tool = %self.tool,
                from = "closed",
                to = "open",
                calls,
                failures,
                cooldown_ms,
                "circuit breaker opened: failure rate crossed the threshold"
            );
        } else {
            tracing::warn!(
                target: "toolwright::breaker",
                tool = %self.tool,
                from = "half_open",
                to = "open",
                reopens,
                cooldown_ms,
                "circuit breaker re-opened: the probe failed"
            );
        }
    }

    fn force_open(&self) {
        let _guard = self.lock();
        let mut word = self.load();
        loop {
            let from = word.state();
            if from == BreakerState::ForcedOpen {
                return;
            }
            let next = Word::new(BreakerState::ForcedOpen, word.next_generation(), 0, 0);
            match self.cas(word, next) {
                Ok(()) => {
                    tracing::warn!(
                        target: "toolwright::breaker",
                        tool = %self.tool,
                        from = from.as_str(),
                        to = "forced_open",
                        "circuit breaker forced open by hand"
                    );
                    return;
                }
                Err(seen) => word = seen,
            }
        }
    }

    fn reset(&self) {
        let _guard = self.lock();
        let mut word = self.load();
        loop {
            self.window.clear();
            let from = word.state();
            let next = Word::new(BreakerState::Closed, word.next_generation(), 0, 0);
            match self.cas(word, next) {
                Ok(()) => {
                    self.reopens.store(0, Ordering::Relaxed);
                    tracing::info!(
                        target: "toolwright::breaker",
                        tool = %self.tool,
                        from = from.as_str(),
                        to = "closed",
                        "circuit breaker reset by hand"
                    );
                    return;
                }
                Err(seen) => word = seen,
            }
        }
    }

    fn stats(&self, now: Instant) -> BreakerStats {
        let word = self.load();
        let at = nanos_since(self.origin, now);
        let (calls, failures) = self.window.totals(at);
        let retry_after = match word.state() {
            BreakerState::Open => {
                let until = self.open_until.load(Ordering::Acquire);
                Some(Duration::from_nanos(until.saturating_sub(at)))
            }
            _ => None,
        };
        BreakerStats {
            state: word.state(),
            calls,
            failures,
            retry_after,
            window: self.window.span(),
        }
    }
}

/// Leave to run one attempt. Dropped without a verdict (the call was cancelled), a probe gives
/// its permit back so the next caller can probe.
pub(crate) struct Permit<'a> {
    breaker: &'a Breaker,
    generation: u64,
    probe: bool,
    done: bool,
}

impl Permit<'_> {
    /// Reports the attempt's verdict; `at` is nanoseconds since the breaker's origin.
    #[inline]
    pub(crate) fn record(mut self, verdict: Verdict, at: u64) {
        self.done = true;
        self.breaker.record(&self, verdict, at);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.done && self.probe {
            self.breaker.return_permit(self.generation);
        }
    }
}

/// A snapshot of a breaker, for stats and dashboards.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerStats {
    /// The state.
    pub state: BreakerState,
    /// Calls counted in the rolling window (in the closed state).
    pub calls: u64,
    /// Failures among them.
    pub failures: u64,
    /// The rest of the cooldown, while open.
    pub retry_after: Option<Duration>,
    /// The span of the rolling window.
    pub window: Duration,
}

/// A tool's breaker, from [`Registry::breaker`](crate::Registry::breaker): read its state, take
/// the tool out of service, put it back. Cheap to clone.
///
/// ```
/// # use toolwright::{execute::BreakerState, Registry};
/// # fn demo(registry: &Registry) {
/// if let Some(breaker) = registry.breaker("refund_order") {
///     breaker.force_open(); // every call now fails fast with circuit_open
///     assert_eq!(breaker.state(), BreakerState::ForcedOpen);
///     breaker.reset();
/// }
/// # }
/// ```
#[derive(Clone)]
pub struct BreakerHandle {
    pub(crate) breaker: Arc<Breaker>,
    pub(crate) clock: ClockHandle,
}

impl BreakerHandle {
    /// The tool this breaker guards.
    pub fn tool(&self) -> &str {
        &self.breaker.tool
    }

    /// The current state. An open breaker whose cooldown is over reports `Open` until the next
    /// call takes the probe.
    pub fn state(&self) -> BreakerState {
        self.breaker.load().state()
    }

    /// State, window counts and the rest of the cooldown.
    pub fn stats(&self) -> BreakerStats {
        self.breaker.stats(self.clock.now())
    }

    /// Opens the breaker until [`BreakerHandle::reset`]: every call fails fast with
    /// `circuit_open`.
    pub fn force_open(&self) {
        self.breaker.force_open();
    }

    /// Closes the breaker and forgets its window and its cooldown growth.
    pub fn reset(&self) {
        self.breaker.reset();
    }

    /// How many times the breaker opened on its own (its failure rate crossed the threshold,
    /// or a half-open probe failed) since the registry was built; a forced opening is not
    /// counted.
    pub fn openings(&self) -> u64 {
        self.breaker.openings.load(Ordering::Relaxed)
    }

    /// The policy the breaker runs with.
    pub fn policy(&self) -> &BreakerPolicy {
        &self.breaker.policy
    }
}

impl fmt::Debug for BreakerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerHandle")
            .field("tool", &self.breaker.tool)
            .field("state", &self.state())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Another thread's move on a breaker.
    type Move = Box<dyn FnOnce(&Breaker)>;

    thread_local! {
        /// What another thread does on this breaker between this thread's load of the state
        /// word and its next compare-and-swap: set by [`race`], run once by [`before_cas`].
        static RACE: RefCell<Option<Move>> = RefCell::new(None);
    }

    /// Runs `other` (another thread's move, made here) just before this thread's next
    /// compare-and-swap of the breaker's word.
    fn race(other: impl FnOnce(&Breaker) + 'static) {
        RACE.with(|r| *r.borrow_mut() = Some(Box::new(other)));
    }

    pub(super) fn before_cas(breaker: &Breaker) {
        if let Some(other) = RACE.with(|r| r.borrow_mut().take()) {
            other(breaker);
        }
    }

    #[test]
    fn a_state_prints_as_its_word() {
        for (state, word) in [
            (BreakerState::Closed, "closed"),
            (BreakerState::Open, "open"),
            (BreakerState::HalfOpen, "half_open"),
            (BreakerState::ForcedOpen, "forced_open"),
        ] {
            assert_eq!((state.to_string(), state.as_str()), (word.to_owned(), word));
        }
    }

    #[test]
    fn the_cooldown_grows_per_reopen_up_to_its_maximum() {
        let p = BreakerPolicy::new();
        let secs = |n| p.cooldown_after(n).as_secs();
        assert_eq!(
            [secs(0), secs(1), secs(2), secs(3), secs(4), secs(40)],
            [30, 60, 120, 240, 300, 300]
        );
        let flat = BreakerPolicy::new().cooldown_growth(1, Duration::from_secs(300));
        assert_eq!(flat.cooldown_after(9), Duration::from_secs(30));
    }

    #[test]
    fn out_of_range_settings_are_brought_into_range() {
        let p = BreakerPolicy::new();
        assert_eq!(p.failure_rate(0.25).failure_rate, 0.25);
        assert_eq!(p.failure_rate(1.0).failure_rate, 1.0);
        assert_eq!(
            p.failure_rate(0.0).failure_rate,
            1.0,
            "never opens on no failures"
        );
        assert_eq!(p.failure_rate(1.5).failure_rate, 1.0);
        assert_eq!(p.failure_rate(-0.5).failure_rate, 1.0);
        assert_eq!(p.min_calls(0).min_calls, 1);
        assert_eq!(p.min_calls(20).min_calls, 20);
        let w = p.window(Duration::from_secs(60), 0);
        assert_eq!((w.window, w.buckets), (Duration::from_secs(60), 1));
        assert_eq!(p.window(Duration::from_secs(60), 6).buckets, 6);
        assert_eq!(
            p.cooldown(Duration::from_secs(5)).cooldown,
            Duration::from_secs(5)
        );
        let g = p.cooldown_growth(0, Duration::from_secs(90));
        assert_eq!((g.growth, g.max_cooldown), (1, Duration::from_secs(90)));
        assert_eq!(p.cooldown_growth(3, Duration::from_secs(90)).growth, 3);
        assert_eq!(p.probes(0).probes, 1);
        assert_eq!(p.probes(4).probes, 4);
        assert_eq!(p.probes(65_535).probes, 65_535);
        assert_eq!(p.probes(70_000).probes, 65_535, "the state word's field");
        assert!(p.is_enabled());
        assert!(!BreakerPolicy::disabled().is_enabled());
        assert_eq!(BreakerPolicy::default(), p);
    }

    #[test]
    fn generations_count_up_and_wrap_within_their_field() {
        let w = Word::new(BreakerState::Open, 41, 0, 0);
        assert_eq!(w.next_generation(), 42);
        let last = (1 << (64 - GEN_SHIFT)) - 1;
        let w = Word::new(BreakerState::Closed, last, 0, 0);
        assert_eq!(w.generation(), last);
        assert_eq!(
            w.next_generation(),
            0,
            "wraps instead of spilling out of the word"
        );
    }

    /// A breaker that opens on its first failure, cools down for 1 s (2 s after a failed
    /// probe), and closes after `probes` successful probes; and the instant `secs` after its
    /// origin with that instant in nanoseconds, as `admit` and `record` take them.
    fn one_strike(probes: u32) -> (Breaker, impl Fn(u64) -> (Instant, u64)) {
        let origin = Instant::now();
        let policy = BreakerPolicy::new()
            .min_calls(1)
            .failure_rate(0.5)
            .cooldown(Duration::from_secs(1))
            .probes(probes);
        let breaker = Breaker::new("t".into(), policy, Duration::from_millis(100), origin);
        let at = move |secs: u64| (origin + Duration::from_secs(secs), secs * 1_000_000_000);
        (breaker, at)
    }

    fn admitted(breaker: &Breaker, (now, _): (Instant, u64)) -> Permit<'_> {
        breaker
            .admit(now)
            .unwrap_or_else(|r| panic!("refused in {:?}", r.state))
    }

    /// Opens `breaker`, lets one half-open generation take `probes` probes and fail, and opens
    /// a second half-open generation, both of whose probes are out. Returns the first
    /// generation's unused probe (now stale) and the second generation's two probes.
    fn stale_and_current<'b>(
        breaker: &'b Breaker,
        at: &impl Fn(u64) -> (Instant, u64),
    ) -> (Permit<'b>, Permit<'b>, Permit<'b>) {
        admitted(breaker, at(0)).record(Verdict::Failure, at(0).1);
        assert_eq!(breaker.load().state(), BreakerState::Open);
        let failing = admitted(breaker, at(2));
        let stale = admitted(breaker, at(2));
        failing.record(Verdict::Failure, at(2).1);
        assert_eq!(breaker.load().state(), BreakerState::Open);
        let first = admitted(breaker, at(10));
        let second = admitted(breaker, at(10));
        assert_eq!(breaker.load().state(), BreakerState::HalfOpen);
        assert!(breaker.admit(at(10).0).is_err(), "both probes are out");
        (stale, first, second)
    }

    #[test]
    fn a_stale_probes_success_does_not_count_toward_closing_a_later_half_open() {
        let (breaker, at) = one_strike(2);
        let (stale, first, second) = stale_and_current(&breaker, &at);
        stale.record(Verdict::Success, at(11).1);
        first.record(Verdict::Success, at(11).1);
        assert_eq!(
            breaker.load().state(),
            BreakerState::HalfOpen,
            "one of this generation's two probes succeeded, not two"
        );
        second.record(Verdict::Success, at(11).1);
        assert_eq!(breaker.load().state(), BreakerState::Closed);
    }

    #[test]
    fn a_stale_probes_failure_does_not_reopen_a_later_half_open() {
        let (breaker, at) = one_strike(2);
        let (stale, first, second) = stale_and_current(&breaker, &at);
        let openings = breaker.openings.load(Ordering::Relaxed);
        stale.record(Verdict::Failure, at(11).1);
        assert_eq!(breaker.load().state(), BreakerState::HalfOpen);
        assert_eq!(breaker.openings.load(Ordering::Relaxed), openings);
        first.record(Verdict::Success, at(11).1);
        second.record(Verdict::Success, at(11).1);
        assert_eq!(breaker.load().state(), BreakerState::Closed);
    }

    #[test]
    fn a_stale_probe_given_back_frees_no_slot_of_a_later_half_open() {
        let (breaker, at) = one_strike(2);
        let (stale, first, second) = stale_and_current(&breaker, &at);
        stale.record(Verdict::Neutral, at(11).1);
        assert!(
            breaker.admit(at(11).0).is_err(),
            "the later generation's two probes are still out"
        );
        drop((first, second));
        assert!(breaker.admit(at(11).0).is_ok(), "their slots came back");
    }

    #[test]
    fn a_probe_that_ends_neutral_gives_its_slot_to_the_next_caller() {
        let (breaker, at) = one_strike(1);
        admitted(&breaker, at(0)).record(Verdict::Failure, at(0).1);
        let probe = admitted(&breaker, at(2));
        assert!(breaker.admit(at(2).0).is_err(), "the one probe is out");
        probe.record(Verdict::Neutral, at(2).1);
        assert_eq!(breaker.load().state(), BreakerState::HalfOpen);
        let again = admitted(&breaker, at(2));
        assert!(breaker.admit(at(2).0).is_err(), "and is out again");
        again.record(Verdict::Success, at(3).1);
        assert_eq!(breaker.load().state(), BreakerState::Closed);
    }

    #[test]
    fn a_permit_from_before_a_reset_or_a_forced_opening_changes_nothing() {
        let (breaker, at) = one_strike(1);
        admitted(&breaker, at(0)).record(Verdict::Failure, at(0).1);
        let probe = admitted(&breaker, at(2));
        breaker.reset();
        probe.record(Verdict::Failure, at(2).1);
        assert_eq!(breaker.load().state(), BreakerState::Closed);
        let closed = admitted(&breaker, at(3));
        breaker.force_open();
        closed.record(Verdict::Failure, at(3).1);
        assert_eq!(breaker.load().state(), BreakerState::ForcedOpen);
    }

    #[test]
    fn a_failed_probe_reopens_even_when_another_probe_is_given_back_as_it_trips() {
        let (breaker, at) = one_strike(2);
        admitted(&breaker, at(0)).record(Verdict::Failure, at(0).1);
        let failing = admitted(&breaker, at(2));
        let cancelled = admitted(&breaker, at(2));
        let generation = cancelled.generation;
        // The other probe is cancelled on another thread between the trip's read of the word
        // and its compare-and-swap: the swap fails on the freed slot and must be tried again.
        std::mem::forget(cancelled);
        race(move |b| b.return_permit(generation));
        failing.record(Verdict::Failure, at(2).1);
        assert!(RACE.with(|r| r.borrow().is_none()), "the race was run");
        assert_eq!(breaker.load().state(), BreakerState::Open);
        assert_eq!(breaker.openings.load(Ordering::Relaxed), 2);
        assert_eq!(breaker.reopens.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_close_that_finds_a_later_half_open_changes_nothing() {
        // A probe's success saw its own half-open and went to close it; before the close
        // took the lock, another probe failed (open again) and the cooldown let a later
        // half-open begin. The close must leave that later generation alone.
        let (breaker, at) = one_strike(2);
        let (stale, first, second) = stale_and_current(&breaker, &at);
        let before = breaker.load();
        breaker.close(stale.generation);
        assert_eq!(
            breaker.load().0,
            before.0,
            "the later half-open is untouched"
        );
        drop((stale, first, second));
    }

    #[test]
    fn the_state_word_round_trips() {
        let w = Word::new(BreakerState::HalfOpen, 12345, 7, 3);
        assert_eq!(
            (w.state(), w.generation(), w.free(), w.ok()),
            (BreakerState::HalfOpen, 12345, 7, 3)
        );
    }
}
