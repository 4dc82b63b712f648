//! A lock-free, time-bucketed rolling window of two counters, shared by the breaker (calls,
//! failures) and the retry budget (first attempts, retries).
//!
//! The window is `buckets` slots of `width` each. A slot is one `AtomicU64` holding the bucket's
//! epoch (which `width`-long interval it counts) and both counters, so a record is a single
//! compare-and-swap and a reader never sees a counter of one interval paired with the epoch of
//! another. A slot found holding an old epoch is restarted by whoever writes to it next; readers
//! skip slots older than the window. This is the bucketed design of resilience4j's time-based
//! sliding window and of tower's `TpsBudget`, without their locks.
//!
//! Each thread writes to its own **stripe** of slots (threads are spread over the stripes round
//! robin, four stripes per core up to 32), so concurrent successes on different cores never fight
//! over one cache line; a reader, which only runs when a call failed or for stats, sums every
//! stripe. Stripes sit 128 bytes apart, past the adjacent-line prefetcher.
//!
//! Layout: epoch in the top 24 bits, counter `a` in the middle 20, counter `b` in the low 20. The
//! epoch is compared modulo 2^24, which can only mislead after a tool sat idle for exactly a
//! multiple of 2^24 buckets (194 days with 1 s buckets). A counter that would pass 2^20 - 1 in
//! one bucket stops counting for that bucket, both counters together, so their ratio stays true.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

const FIELD_BITS: u32 = 20;
const FIELD_MAX: u64 = (1 << FIELD_BITS) - 1;
const EPOCH_BITS: u32 = 24;
const EPOCH_MASK: u64 = (1 << EPOCH_BITS) - 1;

#[inline]
fn pack(epoch: u64, a: u64, b: u64) -> u64 {
    ((epoch & EPOCH_MASK) << (2 * FIELD_BITS)) | (a << FIELD_BITS) | b
}

#[inline]
fn unpack(word: u64) -> (u64, u64, u64) {
    (
        word >> (2 * FIELD_BITS),
        (word >> FIELD_BITS) & FIELD_MAX,
        word & FIELD_MAX,
    )
}

/// Slots per stripe are padded to a multiple of this many (128 bytes).
const STRIDE_UNIT: usize = 16;

/// How many stripes: four per core (threads are numbered round robin, and more stripes than
/// cores keeps two busy workers off one stripe), as a power of two, at most 32.
fn stripe_count() -> usize {
    static COUNT: OnceLock<usize> = OnceLock::new();
    *COUNT.get_or_init(|| {
        (4 * std::thread::available_parallelism().map_or(1, |n| n.get()))
            .next_power_of_two()
            .min(32)
    })
}

/// This thread's stripe, before reduction modulo the stripe count.
#[inline]
fn stripe_of_this_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE.with(|s| {
        let mut stripe = s.get();
        if stripe == usize::MAX {
            stripe = NEXT.fetch_add(1, Ordering::Relaxed);
            s.set(stripe);
        }
        stripe
    })
}

pub(crate) struct Window {
    /// `stripes` runs of `stride` slots; the first `buckets` of each run are used.
    slots: Box<[AtomicU64]>,
    buckets: usize,
    stride: usize,
    stripe_mask: usize,
    width_nanos: u64,
}

impl Window {
    /// A window of `span` split into `buckets` slots (at least one, each at least 1 ms).
    pub(crate) fn new(span: Duration, buckets: u32) -> Self {
        let buckets = buckets.max(1) as usize;
        let span_nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
        let width_nanos = (span_nanos / buckets as u64).max(1_000_000);
        let stride = buckets.div_ceil(STRIDE_UNIT) * STRIDE_UNIT;
        let stripes = stripe_count();
        Window {
            slots: (0..stripes * stride).map(|_| AtomicU64::new(0)).collect(),
            buckets,
            stride,
            stripe_mask: stripes - 1,
            width_nanos,
        }
    }

    fn used(&self) -> impl Iterator<Item = &AtomicU64> {
        self.slots
            .chunks(self.stride)
            .flat_map(move |stripe| &stripe[..self.buckets])
    }

    #[inline]
    fn epoch(&self, now_nanos: u64) -> u64 {
        now_nanos / self.width_nanos
    }

    /// Adds `a` and `b` to the bucket of `now_nanos`.
    #[inline]
    pub(crate) fn record(&self, now_nanos: u64, a: u64, b: u64) {
        let epoch = self.epoch(now_nanos);
        let tag = epoch & EPOCH_MASK;
        let stripe = stripe_of_this_thread() & self.stripe_mask;
        let slot = &self.slots[stripe * self.stride + (epoch % self.buckets as u64) as usize];
        let mut current = slot.load(Ordering::Relaxed);
        loop {
            let (old_tag, old_a, old_b) = unpack(current);
            let next = if old_tag == tag {
                if old_a + a > FIELD_MAX || old_b + b > FIELD_MAX {
                    return;
                }
                current + (a << FIELD_BITS) + b
            } else if (old_a | old_b) != 0
                && old_tag.wrapping_sub(tag) & EPOCH_MASK < EPOCH_MASK / 2
            {
                // The slot already counts a later interval: this record read the clock before
                // another thread moved the slot on. Dropping it is the honest choice.
                return;
            } else {
                pack(tag, a.min(FIELD_MAX), b.min(FIELD_MAX))
            };
            match slot.compare_exchange_weak(current, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// The sums of `a` and `b` over the buckets inside the window at `now_nanos`.
    pub(crate) fn totals(&self, now_nanos: u64) -> (u64, u64) {
        let tag = self.epoch(now_nanos) & EPOCH_MASK;
        let len = self.buckets as u64;
        let (mut a, mut b) = (0, 0);
        for slot in self.used() {
            let (slot_tag, slot_a, slot_b) = unpack(slot.load(Ordering::Acquire));
            if tag.wrapping_sub(slot_tag) & EPOCH_MASK < len {
                a += slot_a;
                b += slot_b;
            }
        }
        (a, b)
    }

    /// Forgets everything counted so far.
    pub(crate) fn clear(&self) {
        for slot in self.slots.iter() {
            slot.store(0, Ordering::Release);
        }
    }

    /// How long the window spans.
    pub(crate) fn span(&self) -> Duration {
        Duration::from_nanos(self.width_nanos.saturating_mul(self.buckets as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn counts_within_the_window_and_forgets_older_buckets() {
        let w = Window::new(Duration::from_secs(10), 10);
        w.record(0, 1, 0);
        w.record(SEC / 2, 1, 1);
        w.record(5 * SEC, 3, 2);
        assert_eq!(w.totals(5 * SEC), (5, 3));
        // At 10.5 s the bucket [0, 1) has left the window; [5, 6) has not.
        assert_eq!(w.totals(10 * SEC + SEC / 2), (3, 2));
        assert_eq!(w.totals(16 * SEC), (0, 0));
    }

    #[test]
    fn a_reused_slot_restarts_from_zero() {
        let w = Window::new(Duration::from_secs(2), 2);
        w.record(0, 7, 7);
        w.record(2 * SEC, 1, 0); // same slot, next lap
        assert_eq!(w.totals(2 * SEC), (1, 0));
    }

    #[test]
    fn a_full_bucket_stops_counting_both_fields() {
        let w = Window::new(Duration::from_secs(1), 1);
        w.record(0, FIELD_MAX - 1, 0);
        w.record(0, 1, 1);
        w.record(0, 1, 1);
        assert_eq!(w.totals(0), (FIELD_MAX, 1));
    }

    #[test]
    fn the_second_counter_has_its_own_limit() {
        let w = Window::new(Duration::from_secs(1), 1);
        w.record(0, 0, FIELD_MAX - 1);
        w.record(0, 1, 1);
        w.record(0, 1, 1);
        assert_eq!(w.totals(0), (1, FIELD_MAX));
    }

    #[test]
    fn a_record_older_than_its_slot_is_dropped() {
        // Two 1 s buckets: 1 s and 3 s share a slot. A record that read the clock at 1 s but
        // reached the slot after 3 s was counted must not wipe the later interval.
        for (a, b) in [(1, 0), (0, 1), (1, 1)] {
            let w = Window::new(Duration::from_secs(2), 2);
            w.record(3 * SEC, a, b);
            w.record(SEC, 5, 5);
            assert_eq!(w.totals(3 * SEC), (a, b), "{a}, {b}");
        }
        // An empty slot is simply taken, whatever epoch it last held.
        let w = Window::new(Duration::from_secs(2), 2);
        w.record(3 * SEC, 0, 0);
        w.record(SEC, 2, 1);
        assert_eq!(w.totals(SEC), (2, 1));
    }

    #[test]
    fn half_the_epoch_space_behind_counts_as_a_new_lap() {
        // 1 ms buckets, one slot: epochs are milliseconds, compared modulo 2^24.
        let ms = 1_000_000;
        let w = Window::new(Duration::from_millis(1), 1);
        w.record(EPOCH_MASK / 2 * ms, 1, 0);
        w.record(0, 0, 1);
        assert_eq!(
            w.totals(0),
            (0, 1),
            "exactly half way: the later record restarts the slot"
        );
        let w = Window::new(Duration::from_millis(1), 1);
        w.record((EPOCH_MASK / 2 - 1) * ms, 1, 0);
        w.record(0, 0, 1);
        assert_eq!(
            w.totals((EPOCH_MASK / 2 - 1) * ms),
            (1, 0),
            "less than half: dropped"
        );
    }

    #[test]
    fn clear_forgets_and_span_is_what_the_buckets_cover() {
        let w = Window::new(Duration::from_secs(10), 10);
        w.record(SEC, 3, 1);
        w.clear();
        assert_eq!(w.totals(SEC), (0, 0));
        assert_eq!(w.span(), Duration::from_secs(10));
        // Buckets are at least 1 ms wide.
        assert_eq!(
            Window::new(Duration::from_micros(100), 4).span(),
            Duration::from_millis(4)
        );
    }

    /// The window `new` builds on a machine with this many stripes (32 from 8 cores up).
    fn with_stripes(span: Duration, buckets: u32, stripes: usize) -> Window {
        let mut w = Window::new(span, buckets);
        w.slots = (0..stripes * w.stride).map(|_| AtomicU64::new(0)).collect();
        w.stripe_mask = stripes - 1;
        w
    }

    #[test]
    fn every_thread_counts_in_every_bucket() {
        // Twice as many threads as stripes, so every stripe is written, each thread in every
        // bucket of the window: with this machine's stripes and with the most there can be
        // (stripe numbers past the 16 slots of a stride, which a 2-core machine never has).
        for stripes in [stripe_count(), 32] {
            let w = std::sync::Arc::new(with_stripes(Duration::from_secs(10), 10, stripes));
            let threads = 2 * stripes;
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let w = std::sync::Arc::clone(&w);
                    std::thread::spawn(move || {
                        for second in 0..10 {
                            w.record(second * SEC, 1, 2);
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            let n = threads as u64 * 10;
            assert_eq!(w.totals(9 * SEC), (n, 2 * n), "{stripes} stripes");
        }
    }

    #[test]
    fn concurrent_records_are_not_lost() {
        let w = std::sync::Arc::new(Window::new(Duration::from_secs(10), 10));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let w = std::sync::Arc::clone(&w);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        w.record(SEC, 1, 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(w.totals(SEC), (40_000, 40_000));
    }
}
