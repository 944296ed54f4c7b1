//! The `fastant` API the dependency tree uses (`Instant`, `Atomic`, `Anchor`,
//! `is_tsc_available`), built on `std::time::Instant`: an instant is the nanoseconds since a
//! process-wide anchor taken at the first call. Nothing runs when the library loads.

use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The process's anchor: the monotonic instant of the first call, and the wall clock then.
fn anchor() -> &'static (std::time::Instant, SystemTime) {
    static ANCHOR: OnceLock<(std::time::Instant, SystemTime)> = OnceLock::new();
    ANCHOR.get_or_init(|| (std::time::Instant::now(), SystemTime::now()))
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether the clock reads the CPU's time-stamp counter: never here (the monotonic clock is read).
pub fn is_tsc_available() -> bool {
    false
}

/// A monotonic instant: nanoseconds since the process's anchor.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The current instant.
    pub fn now() -> Instant {
        Instant(nanos(anchor().0.elapsed()))
    }

    /// The time from `earlier` to this instant; zero when `earlier` is later.
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }

    /// The time from `earlier` to this instant, or None when `earlier` is later.
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.0.checked_sub(earlier.0).map(Duration::from_nanos)
    }

    /// The time from `earlier` to this instant; zero when `earlier` is later.
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// The time since this instant.
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// This instant moved later by `duration`, or None past the representable range.
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        u64::try_from(duration.as_nanos()).ok().and_then(|d| self.0.checked_add(d)).map(Instant)
    }

    /// This instant moved earlier by `duration`, or None before the anchor.
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        u64::try_from(duration.as_nanos()).ok().and_then(|d| self.0.checked_sub(d)).map(Instant)
    }

    /// This instant as nanoseconds since the Unix epoch, by `anchor`'s wall clock.
    pub fn as_unix_nanos(&self, anchor: &Anchor) -> u64 {
        anchor.unix_nanos.saturating_add(self.0).saturating_sub(anchor.at.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    fn add(self, other: Duration) -> Instant {
        self.checked_add(other).expect("overflow when adding a duration to an instant")
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, other: Duration) {
        *self = *self + other;
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    fn sub(self, other: Duration) -> Instant {
        self.checked_sub(other).expect("overflow when subtracting a duration from an instant")
    }
}

impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, other: Duration) {
        *self = *self - other;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;

    fn sub(self, other: Instant) -> Duration {
        self.duration_since(other)
    }
}

impl std::fmt::Debug for Instant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Instant({} ns)", self.0)
    }
}

/// A pairing of an instant with the wall clock, to turn instants into Unix times.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    at: Instant,
    unix_nanos: u64,
}

impl Default for Anchor {
    fn default() -> Anchor {
        Anchor::new()
    }
}

impl Anchor {
    /// The current instant and the wall clock now.
    pub fn new() -> Anchor {
        let at = Instant::now();
        let wall = anchor().1 + Duration::from_nanos(at.0);
        Anchor { at, unix_nanos: nanos(wall.duration_since(UNIX_EPOCH).unwrap_or_default()) }
    }
}

#[cfg(feature = "atomic")]
pub use atomic::Atomic;

#[cfg(feature = "atomic")]
mod atomic {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::Instant;

    /// An instant that threads read and write atomically.
    #[derive(Debug, Default)]
    pub struct Atomic(AtomicU64);

    impl Atomic {
        /// An atomic holding `v`.
        pub fn new(v: Instant) -> Self {
            Atomic(AtomicU64::new(v.0))
        }

        /// The instant held.
        pub fn load(&self, order: Ordering) -> Instant {
            Instant(self.0.load(order))
        }

        /// Holds `val` from now on.
        pub fn store(&self, val: Instant, order: Ordering) {
            self.0.store(val.0, order)
        }

        /// Holds `val`; returns the instant held before.
        pub fn swap(&self, val: Instant, order: Ordering) -> Instant {
            Instant(self.0.swap(val.0, order))
        }

        /// Holds the later of `val` and the instant held; returns the instant held before.
        pub fn fetch_max(&self, val: Instant, order: Ordering) -> Instant {
            Instant(self.0.fetch_max(val.0, order))
        }

        /// Holds the earlier of `val` and the instant held; returns the instant held before.
        pub fn fetch_min(&self, val: Instant, order: Ordering) -> Instant {
            Instant(self.0.fetch_min(val.0, order))
        }

        /// The instant held.
        pub fn into_instant(self) -> Instant {
            Instant(self.0.into_inner())
        }
    }

    impl From<Instant> for Atomic {
        fn from(v: Instant) -> Self {
            Atomic::new(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use super::*;

    #[test]
    fn instants_follow_the_monotonic_clock() {
        let a = Instant::now();
        std::thread::sleep(Duration::from_millis(5));
        let b = Instant::now();
        assert!(b > a);
        assert!(b.duration_since(a) >= Duration::from_millis(5));
        assert_eq!(a.duration_since(b), Duration::ZERO);
        assert_eq!(a.checked_duration_since(b), None);
        assert!(a.elapsed() >= Duration::from_millis(5));
        assert_eq!((a + Duration::from_nanos(7)) - a, Duration::from_nanos(7));
        assert_eq!((a + Duration::from_secs(1)) - Duration::from_secs(1), a);
        assert_eq!(Instant(3).checked_sub(Duration::from_nanos(4)), None);
        assert_eq!(Instant(u64::MAX).checked_add(Duration::from_nanos(1)), None);
    }

    #[test]
    fn unix_times_follow_the_wall_clock() {
        let anchor = Anchor::new();
        let later = Instant::now() + Duration::from_secs(2);
        let wall = nanos(SystemTime::now().duration_since(UNIX_EPOCH).unwrap());
        let got = later.as_unix_nanos(&anchor);
        // two seconds ahead of the wall clock, within a generous margin for a loaded machine
        assert!(got > wall + 1_000_000_000 && got < wall + 3_000_000_000, "{got} vs {wall}");
    }

    #[cfg(feature = "atomic")]
    #[test]
    fn atomics_hold_instants() {
        let a = Instant::now();
        let b = a + Duration::from_millis(1);
        let cell = Atomic::new(a);
        assert_eq!(cell.load(Ordering::Relaxed), a);
        assert_eq!(cell.fetch_max(b, Ordering::Relaxed), a);
        assert_eq!(cell.fetch_min(a, Ordering::Relaxed), b);
        assert_eq!(cell.swap(b, Ordering::Relaxed), a);
        cell.store(a, Ordering::Relaxed);
        assert_eq!(cell.into_instant(), a);
        assert_eq!(Atomic::from(b).load(Ordering::Relaxed), b);
    }
}
