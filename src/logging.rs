//! Host logging: Lance's log records (and its tracing events, which reach the `log` facade when
//! no tracing subscriber is installed) go to one sink the host registers, filtered by a level.
//! Without a sink nothing is logged anywhere — the library never writes to stdout or stderr.

use std::sync::{OnceLock, RwLock};

use crate::error::{HostError, Result};

/// Receives (level, target, message); called on any thread, possibly concurrently.
pub type Sink = Box<dyn Fn(log::Level, &str, &str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);
static INSTALLED: OnceLock<bool> = OnceLock::new();

struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        if let Ok(guard) = SINK.read() {
            if let Some(sink) = guard.as_ref() {
                let message = record.args().to_string();
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    sink(record.level(), record.target(), &message)
                }));
            }
        }
    }

    fn flush(&self) {}
}

/// Route log records at or above `level` to `sink` (None: log nothing). Fails if another
/// logger already owns the process's `log` facade.
pub fn set_sink(sink: Option<Sink>, level: log::LevelFilter) -> Result<()> {
    static LOGGER: HostLogger = HostLogger;
    let installed = *INSTALLED.get_or_init(|| log::set_logger(&LOGGER).is_ok());
    if !installed {
        return Err(HostError::precondition(
            "another logger is already installed in this process; lance-host cannot route its logs",
        ));
    }
    let off = sink.is_none();
    *SINK.write().unwrap_or_else(|e| e.into_inner()) = sink;
    log::set_max_level(if off { log::LevelFilter::Off } else { level });
    Ok(())
}

thread_local! {
    static QUIET: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}
static HOOK: std::sync::Once = std::sync::Once::new();

/// `catch_unwind` for panics the library catches and reports itself (at the C boundary, and
/// Lance's SQL planner on input it does not implement): the panic's message goes to the host's
/// log sink (at ERROR) instead of the process's stderr. Panics anywhere else keep the process's
/// own panic hook, which this one delegates to.
pub fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(|q| q.get()) > 0 {
                log::error!(target: "lance_host", "caught panic: {info}");
            } else {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(q.get() + 1));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(q.get() - 1));
    r
}
