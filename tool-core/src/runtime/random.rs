//! The random source backoff jitter draws from (public as `execute::RandomSource`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Uniform random integers for jitter.
///
/// Chance as a parameter: the [`RandomSource`] backoff jitter draws from.
///
/// The default ([`ThreadRandom`]) is [`fastrand`]'s per-thread generator: no lock, no shared
/// state between tasks. Tests inject [`SeededRandom`] through
/// [`RegistryBuilder::random`](crate::RegistryBuilder::random) so every delay is reproducible.
///
/// ```
/// use toolwright::execute::{RandomSource, SeededRandom};
///
/// let a = SeededRandom::new(7);
/// let b = SeededRandom::new(7);
/// assert_eq!(a.up_to(1_000), b.up_to(1_000));
/// assert!(a.up_to(10) <= 10);
/// ```
pub trait RandomSource: Send + Sync + 'static {
    /// A uniformly distributed integer in `0..=max`.
    fn up_to(&self, max: u64) -> u64;
}

/// fastrand's thread-local generator, seeded from the OS. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThreadRandom;

impl RandomSource for ThreadRandom {
    fn up_to(&self, max: u64) -> u64 {
        fastrand::u64(0..=max)
    }
}

/// A deterministic generator from a seed, for tests and replays. Draws are serialized by a
/// mutex; jitter is drawn only before a retry, never on the success path.
pub struct SeededRandom(Mutex<fastrand::Rng>);

impl SeededRandom {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SeededRandom(Mutex::new(fastrand::Rng::with_seed(seed)))
    }
}

impl RandomSource for SeededRandom {
    fn up_to(&self, max: u64) -> u64 {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .u64(0..=max)
    }
}

impl fmt::Debug for SeededRandom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SeededRandom")
    }
}

/// The random source a registry runs with.
#[derive(Clone, Default)]
pub(crate) enum RandomHandle {
    #[default]
    Thread,
    Custom(Arc<dyn RandomSource>),
}

impl RandomHandle {
    pub(crate) fn new<R: RandomSource>(random: R) -> Self {
        RandomHandle::Custom(Arc::new(random))
    }
}

impl RandomSource for RandomHandle {
    fn up_to(&self, max: u64) -> u64 {
        match self {
            RandomHandle::Thread => ThreadRandom.up_to(max),
            RandomHandle::Custom(r) => r.up_to(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `draws` draws of `0..=max`: every one in range, and more than one value seen.
    fn spread(random: &dyn RandomSource, max: u64) -> std::collections::BTreeSet<u64> {
        let seen: std::collections::BTreeSet<u64> = (0..200).map(|_| random.up_to(max)).collect();
        assert!(seen.iter().all(|n| *n <= max), "{seen:?}");
        seen
    }

    #[test]
    fn every_source_draws_over_the_whole_range() {
        let sources: [&dyn RandomSource; 4] = [
            &ThreadRandom,
            &SeededRandom::new(3),
            &RandomHandle::Thread,
            &RandomHandle::new(SeededRandom::new(3)),
        ];
        for random in sources {
            let seen = spread(random, 1_000);
            assert!(seen.len() > 100, "{seen:?}");
            assert!(seen.iter().any(|n| *n > 500), "{seen:?}");
            assert_eq!(spread(random, 0), [0].into());
        }
    }

    #[test]
    fn a_handle_draws_from_the_source_it_was_given() {
        let handle = RandomHandle::new(SeededRandom::new(11));
        let same = SeededRandom::new(11);
        for _ in 0..20 {
            assert_eq!(handle.up_to(u64::MAX), same.up_to(u64::MAX));
        }
    }
}
