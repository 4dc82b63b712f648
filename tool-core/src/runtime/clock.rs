//! The clock every timeout, backoff sleep, breaker cooldown and budget window reads (public as
//! `execute::Clock`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;

/// A future that completes at an instant of a [`Clock`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A source of time for the execution seam: reading it and waiting on it.
///
/// Time as a parameter: the [`Clock`] every timeout, backoff sleep, breaker cooldown and budget
/// window reads.
///
/// The default is tokio's own clock ([`TokioClock`]), so a test that starts the runtime with
/// `#[tokio::test(start_paused = true)]` runs every timing rule of the execution seam on paused
/// time: a 30 s cooldown or a 20 s backoff takes no wall time and the result is deterministic.
/// Inject another clock with [`RegistryBuilder::clock`](crate::RegistryBuilder::clock) when time
/// must be driven by hand (for example from a multi-threaded test, where tokio's clock cannot be
/// paused).
///
/// ```
/// use std::time::Duration;
/// use toolwright::execute::{Clock, TokioClock};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let clock = TokioClock;
/// let start = clock.now();
/// clock.sleep_until(start + Duration::from_secs(30)).await; // paused: no wall time, exact
/// assert_eq!(clock.now() - start, Duration::from_secs(30));
/// # }
/// ```
///
/// Instants are tokio's [`Instant`], which any clock can produce (`Instant::from_std`).
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Instant;

    /// A future that completes once [`Clock::now`] has reached `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;
}

/// tokio's clock: [`tokio::time::Instant::now`] and [`tokio::time::sleep_until`]. Paused and
/// advanced by tokio's test utilities. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(tokio::time::sleep_until(deadline))
    }
}

/// The clock a registry runs on. tokio's clock is a variant rather than a trait object so the
/// success path reads it, and arms its timeout, without a virtual call or an allocation.
#[derive(Clone, Default)]
pub(crate) enum ClockHandle {
    #[default]
    Tokio,
    Custom(Arc<dyn Clock>),
}

impl ClockHandle {
    pub(crate) fn new<C: Clock>(clock: C) -> Self {
        ClockHandle::Custom(Arc::new(clock))
    }

    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self {
            ClockHandle::Tokio => Instant::now(),
            ClockHandle::Custom(clock) => clock.now(),
        }
    }

    /// A boxed sleep: it is only needed between attempts, so it stays out of the size of the
    /// attempt loop's future.
    pub(crate) fn sleep_until(&self, deadline: Instant) -> Sleep {
        match self {
            ClockHandle::Tokio => Box::pin(tokio::time::sleep_until(deadline)),
            ClockHandle::Custom(clock) => clock.sleep_until(deadline),
        }
    }

    /// Runs `body` until `deadline` (see [`Bounded`]).
    pub(crate) fn run_until<F: Future>(&self, deadline: Instant, body: F) -> Bounded<'_, F> {
        Bounded {
            body,
            clock: self,
            deadline,
            timer: None,
        }
    }
}

pin_project_lite::pin_project! {
    /// `body` bounded by `deadline`: `None` when the deadline came first (the body is dropped
    /// with this future), with a flag that says whether the body ever had to wait.
    ///
    /// The timer is armed only once the body has returned `Pending`: a tool that answers on its
    /// first poll never creates one, and one that waits on I/O pays for the timer it needs. A
    /// named future rather than an `async fn`, so the body is stored once in the call's future
    /// instead of once per layer of `async fn` it is passed through.
    pub(crate) struct Bounded<'a, F> {
        #[pin]
        body: F,
        clock: &'a ClockHandle,
        deadline: Instant,
        timer: Option<Sleep>,
    }
}

impl<F: Future> Future for Bounded<'_, F> {
    type Output = (Option<F::Output>, bool);

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(output) = this.body.poll(cx) {
            return Poll::Ready((Some(output), this.timer.is_some()));
        }
        let (clock, deadline) = (*this.clock, *this.deadline);
        let timer = this.timer.get_or_insert_with(|| match clock {
            ClockHandle::Tokio => Box::pin(tokio::time::sleep_until(deadline)),
            ClockHandle::Custom(clock) => clock.sleep_until(deadline),
        });
        timer.as_mut().poll(cx).map(|()| (None, true))
    }
}

impl fmt::Debug for ClockHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockHandle::Tokio => f.write_str("TokioClock"),
            ClockHandle::Custom(_) => f.write_str("CustomClock"),
        }
    }
}

/// Nanoseconds from `origin` to `now`, the time base of the rolling windows (saturating: a
/// window lives far shorter than 584 years).
#[inline]
pub(crate) fn nanos_since(origin: Instant, now: Instant) -> u64 {
    let d = now.saturating_duration_since(origin);
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

/// `Duration` in milliseconds for messages and envelopes, rounded up so "retry after 0 ms" is
/// never said of a wait that is not over.
pub(crate) fn ceil_millis(d: Duration) -> u64 {
    let ms = d.as_millis() + u128::from(!d.subsec_nanos().is_multiple_of(1_000_000));
    u64::try_from(ms).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_are_rounded_up_never_down() {
        let ms = |nanos| ceil_millis(Duration::from_nanos(nanos));
        assert_eq!(ms(0), 0);
        assert_eq!(ms(1), 1, "a wait that is not over is never 0 ms");
        assert_eq!(ms(1_000_000), 1);
        assert_eq!(ms(1_000_001), 2);
        assert_eq!(ms(2_500_000), 3);
        assert_eq!(ceil_millis(Duration::from_secs(90)), 90_000);
        assert_eq!(ceil_millis(Duration::MAX), u64::MAX, "saturates");
    }

    #[test]
    fn nanos_since_counts_from_the_origin_and_never_goes_negative() {
        let origin = Instant::now();
        let later = origin + Duration::from_millis(1_500) + Duration::from_nanos(7);
        assert_eq!(nanos_since(origin, later), 1_500_000_007);
        assert_eq!(nanos_since(origin, origin), 0);
        assert_eq!(nanos_since(later, origin), 0);
    }
}
