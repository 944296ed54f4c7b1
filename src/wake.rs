//! Non-blocking reads for hosts that run their own scheduler (`lance_stream_poll_next`): the
//! wake-up of a stream's latest pending poll. The host's wake-up is armed when a poll answers
//! PENDING and called once, from a library thread, when polling again may make progress. While
//! a poll runs, a wake only marks the slot (the poll then tries again instead of answering
//! PENDING), so the host's wake-up runs only after a PENDING answer — never for a poll that
//! returned a batch, the end or an error. The lock is held while the wake-up runs, so disarming
//! (a stream's release) waits for a wake-up in flight and none follows it.

use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};

use crate::error::Result;
use crate::scan::Polled;

/// Whom to wake: called at most once, on a library thread.
pub type WakeTarget = Box<dyn FnOnce() + Send>;

/// The wake-up of one stream's latest pending poll.
#[derive(Default)]
pub struct WakeSlot {
    state: Mutex<WakeState>,
}

#[derive(Default)]
struct WakeState {
    target: Option<WakeTarget>,
    /// A poll is running on the host's thread.
    polling: bool,
    /// A wake arrived while it ran.
    woken: bool,
}

impl WakeSlot {
    /// One poll: `poll` is asked for the next batch with a waker of this slot, again as long as
    /// a wake arrives while it answers PENDING; `target` (replacing the previous poll's) is
    /// armed only when the answer is PENDING.
    pub fn poll(self: &Arc<Self>, target: Option<WakeTarget>, mut poll: impl FnMut(&Waker) -> Result<Polled>) -> Result<Polled> {
        self.begin_poll(target);
        let waker = Waker::from(self.clone());
        let polled = loop {
            match poll(&waker) {
                Ok(Polled::Pending) if self.park() => continue,
                other => break other,
            }
        };
        if !matches!(polled, Ok(Polled::Pending)) {
            self.disarm();
        }
        polled
    }

    fn begin_poll(&self, target: Option<WakeTarget>) {
        if let Ok(mut s) = self.state.lock() {
            *s = WakeState { target, polling: true, woken: false };
        }
    }

    /// The poll answered PENDING: keep the target armed, unless a wake arrived while it ran
    /// (then poll again: true).
    fn park(&self) -> bool {
        let Ok(mut s) = self.state.lock() else { return false };
        if s.woken {
            s.woken = false;
            return true;
        }
        s.polling = false;
        false
    }

    /// Nobody to wake (the stream is released, or its poll answered anything but PENDING).
    pub fn disarm(&self) {
        if let Ok(mut s) = self.state.lock() {
            *s = WakeState::default();
        }
    }
}

impl Wake for WakeSlot {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.polling {
            s.woken = true;
            return;
        }
        if let Some(target) = s.target.take() {
            // a host wake-up that unwinds is a host bug, caught so the runtime thread survives
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(target));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counter() -> (Arc<AtomicUsize>, WakeTarget) {
        let n = Arc::new(AtomicUsize::new(0));
        let m = n.clone();
        (n, Box::new(move || {
            m.fetch_add(1, Ordering::SeqCst);
        }))
    }

    #[test]
    fn a_wake_during_the_poll_polls_again_and_the_target_runs_only_after_pending() {
        let slot = Arc::new(WakeSlot::default());
        let (calls, target) = counter();
        let mut polls = 0;
        let out = slot.poll(Some(target), |w| {
            polls += 1;
            if polls == 1 {
                w.wake_by_ref(); // progress arrived while polling: poll again, no wake-up
                return Ok(Polled::Pending);
            }
            Ok(Polled::Pending)
        });
        assert!(matches!(out, Ok(Polled::Pending)));
        assert_eq!(polls, 2);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        Waker::from(slot.clone()).wake_by_ref();
        Waker::from(slot.clone()).wake_by_ref();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "called once");
    }

    #[test]
    fn an_end_disarms_and_a_disarmed_slot_wakes_nobody() {
        let slot = Arc::new(WakeSlot::default());
        let (calls, target) = counter();
        assert!(matches!(slot.poll(Some(target), |_| Ok(Polled::End)), Ok(Polled::End)));
        Waker::from(slot.clone()).wake_by_ref();
        let (later, target) = counter();
        assert!(matches!(slot.poll(Some(target), |_| Ok(Polled::Pending)), Ok(Polled::Pending)));
        slot.disarm();
        Waker::from(slot.clone()).wake_by_ref();
        assert_eq!(calls.load(Ordering::SeqCst) + later.load(Ordering::SeqCst), 0);
    }
}
