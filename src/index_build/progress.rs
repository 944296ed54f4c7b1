//! Progress of index builds: Lance's stage reports, passed to the receiver of the call context
//! bound to the calling thread (nothing when none is bound).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lance_index::progress::IndexBuildProgress;

use crate::cancel::{Progress, Token};

#[derive(Debug)]
struct ToContext {
    token: Token,
    /// Each open stage's total and unit, for its progress reports.
    stages: Mutex<HashMap<String, (u64, String)>>,
}

#[async_trait]
impl IndexBuildProgress for ToContext {
    async fn stage_start(&self, stage: &str, total: Option<u64>, unit: &str) -> lance_core::Result<()> {
        let total = total.unwrap_or(0);
        self.stages.lock().unwrap_or_else(|e| e.into_inner()).insert(stage.to_string(), (total, unit.to_string()));
        self.token.report(&Progress { stage, done: 0, total, unit });
        Ok(())
    }

    async fn stage_progress(&self, stage: &str, completed: u64) -> lance_core::Result<()> {
        let (total, unit) = self.stages.lock().unwrap_or_else(|e| e.into_inner()).get(stage).cloned().unwrap_or_default();
        self.token.report(&Progress { stage, done: completed, total, unit: &unit });
        Ok(())
    }

    async fn stage_complete(&self, stage: &str) -> lance_core::Result<()> {
        let (total, unit) = self.stages.lock().unwrap_or_else(|e| e.into_inner()).remove(stage).unwrap_or_default();
        self.token.report(&Progress { stage, done: total, total, unit: &unit });
        Ok(())
    }
}

/// The progress sink of a build started on this thread: the bound call context's receiver.
pub(crate) fn current() -> Arc<dyn IndexBuildProgress> {
    match crate::cancel::current() {
        Some(token) => Arc::new(ToContext { token, stages: Mutex::new(HashMap::new()) }),
        None => lance_index::progress::noop_progress(),
    }
}
