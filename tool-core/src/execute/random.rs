//! Chance as a parameter: the [`RandomSource`] backoff jitter draws from.
//!
//! The default ([`ThreadRandom`]) is [`fastrand`]'s per-thread generator: no lock, no shared
//! state between tasks. Tests inject [`SeededRandom`] through
//! [`RegistryBuilder::random`](crate::RegistryBuilder::random) so every delay is reproducible.
//!
//! ```
//! use toolwright_core::execute::{RandomSource, SeededRandom};
//!
//! let a = SeededRandom::new(7);
//! let b = SeededRandom::new(7);
//! assert_eq!(a.up_to(1_000), b.up_to(1_000));
//! assert!(a.up_to(10) <= 10);
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

/// Uniform random integers for jitter.
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
