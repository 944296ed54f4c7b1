//! Cancellation and deadlines. A `Token` is cancelled by the host (from any thread) or expires
//! at its deadline. Blocking calls observe the token bound to the calling thread (the "call
//! context"); streams observe their own token and the one bound when they were created.
//! Stopping drops the operation's futures on the runtime, which ends its I/O and decoding.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{HostError, LanceErrorCode, Result};

/// Why an operation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Cancelled,
    TimedOut,
}

impl Stop {
    pub fn error(self, what: &str) -> HostError {
        match self {
            Stop::Cancelled => HostError::new(LanceErrorCode::LANCE_ERR_CANCELLED, format!("{what}: cancelled")),
            Stop::TimedOut => HostError::new(
                LanceErrorCode::LANCE_ERR_TIMEOUT,
                format!("{what}: the call context's deadline passed"),
            ),
        }
    }
}

/// A progress report of a long call: `stage` (Lance's stage name, e.g. "train_ivf",
/// "shuffle", "load_data"), units `done` of `total` (0 = unknown), and what a unit is.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub stage: &'a str,
    pub done: u64,
    pub total: u64,
    pub unit: &'a str,
}

/// Receives the progress reports of the calls bound to a call context; called from library
/// threads, one report at a time.
pub type Reporter = Arc<dyn Fn(&Progress) + Send + Sync>;

struct Inner {
    cancelled: tokio::sync::watch::Sender<bool>,
    deadline: Option<Instant>,
    progress: std::sync::Mutex<Option<Reporter>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}

/// A cancellation handle with an optional deadline; clones share state.
#[derive(Debug, Clone)]
pub struct Token {
    inner: Arc<Inner>,
}

impl Token {
    pub fn new(timeout: Option<Duration>) -> Token {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        Token {
            inner: Arc::new(Inner {
                cancelled: tokio::sync::watch::Sender::new(false),
                deadline,
                progress: std::sync::Mutex::new(None),
            }),
        }
    }

    /// Set (or clear) the progress receiver of the calls bound to this token.
    pub fn set_progress(&self, reporter: Option<Reporter>) {
        *self.inner.progress.lock().unwrap_or_else(|e| e.into_inner()) = reporter;
    }

    /// Send one report to the receiver, if any; reports are serialized.
    pub fn report(&self, p: &Progress) {
        let guard = self.inner.progress.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = guard.as_ref() {
            r(p);
        }
    }

    /// Cancel; idempotent, callable from any thread.
    pub fn cancel(&self) {
        self.inner.cancelled.send_replace(true);
    }

    /// Whether (and why) the token has stopped.
    pub fn stopped_now(&self) -> Option<Stop> {
        if *self.inner.cancelled.borrow() {
            return Some(Stop::Cancelled);
        }
        match self.inner.deadline {
            Some(d) if Instant::now() >= d => Some(Stop::TimedOut),
            _ => None,
        }
    }

    /// Completes when the token is cancelled or its deadline passes (never otherwise).
    pub async fn stopped(&self) -> Stop {
        let mut rx = self.inner.cancelled.subscribe();
        let cancelled = async move {
            let _ = rx.wait_for(|c| *c).await;
        };
        match self.inner.deadline {
            Some(d) => {
                tokio::select! {
                    _ = cancelled => Stop::Cancelled,
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(d)) => Stop::TimedOut,
                }
            }
            None => {
                cancelled.await;
                Stop::Cancelled
            }
        }
    }
}

/// Tokens an operation observes (its own and the call context's); stops at the first.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    tokens: Vec<Token>,
}

impl Watch {
    /// The call context bound to this thread, if any.
    pub fn current() -> Watch {
        Watch {
            tokens: current().into_iter().collect(),
        }
    }

    pub fn with(mut self, token: Token) -> Watch {
        self.tokens.push(token);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn stopped_now(&self) -> Option<Stop> {
        self.tokens.iter().find_map(Token::stopped_now)
    }

    pub async fn stopped(&self) -> Stop {
        if self.tokens.is_empty() {
            return std::future::pending().await;
        }
        let waits: Vec<_> = self.tokens.iter().map(|t| Box::pin(t.stopped())).collect();
        futures::future::select_all(waits).await.0
    }

    /// Fail now if stopped.
    pub fn check(&self, what: &str) -> Result<()> {
        match self.stopped_now() {
            Some(s) => Err(s.error(what)),
            None => Ok(()),
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Token>> = const { RefCell::new(None) };
}

/// Bind `token` to the calling thread (None unbinds).
pub fn set_current(token: Option<Token>) {
    CURRENT.with(|c| *c.borrow_mut() = token);
}

/// The token bound to the calling thread.
pub fn current() -> Option<Token> {
    CURRENT.with(|c| c.borrow().clone())
}
