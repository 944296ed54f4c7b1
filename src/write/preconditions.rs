//! Commit preconditions: a commit that lands only if the table is still at the version the
//! caller names, and only if the table's config holds the values the caller names (a fencing
//! token). Both are checked where the commit becomes visible, not before it: the checks run in
//! the commit handler, on the version Lance is about to write. The store writes a version only
//! if it does not exist yet, so the version before it is the table's latest at that instant;
//! a precondition that holds there holds for the commit, and an attempt that would land
//! anywhere else (Lance rebasing over a concurrent commit) is refused before it is written.
//!
//! Costs: the version check is free (the attempt's version is known); the config check reads
//! the manifest of the version the commit lands on (one or two small requests per attempt).

use std::collections::BTreeMap;
use std::sync::Arc;

use lance_io::object_store::ObjectStore;
use lance_table::io::commit::CommitHandler;
use object_store::path::Path;

use crate::error::{HostError, LanceErrorCode, Result};

/// What a commit requires of the version it lands on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The commit must become version `v + 1`: the table is still at `v` when it lands.
    pub expected_version: Option<u64>,
    /// The table's config (Lance's `config`, pylance's `config()`) at the version the commit
    /// lands on must hold each key with this value.
    pub required_config: BTreeMap<String, String>,
}

impl Preconditions {
    pub fn is_empty(&self) -> bool {
        self.expected_version.is_none() && self.required_config.is_empty()
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.expected_version == Some(0) {
            return Err(HostError::invalid("expected_version 0 is no version of a table (0 means none)"));
        }
        if let Some(k) = self.required_config.keys().find(|k| k.is_empty()) {
            return Err(HostError::invalid(format!("required_config has an empty key ('{k}')")));
        }
        Ok(())
    }

    /// The refusal of a commit that would land on `latest` (None when it may).
    pub(crate) fn version_refusal(&self, latest: u64) -> Option<HostError> {
        let expected = self.expected_version?;
        (latest != expected).then(|| {
            HostError::new(
                LanceErrorCode::LANCE_ERR_CONFLICT,
                format!(
                    "the commit requires the table to be at version {expected}, and it is at version {latest}: nothing was committed"
                ),
            )
        })
    }

    /// The refusal of a commit whose predecessor has `config` (None when it may land).
    pub(crate) fn config_refusal(&self, version: u64, config: &std::collections::HashMap<String, String>) -> Option<HostError> {
        for (key, want) in &self.required_config {
            let have = config.get(key);
            if have != Some(want) {
                let found = have.map_or_else(|| "is not set".to_string(), |v| format!("is '{v}'"));
                return Some(HostError::precondition(format!(
                    "the commit requires table config '{key}' = '{want}', and at version {version} it {found}: nothing was committed"
                )));
            }
        }
        None
    }
}

/// The preconditions as a check of the commit pipeline, before each attempt to write a
/// version. The config check reads the manifest of the version the attempt lands on.
#[derive(Debug)]
pub(crate) struct PreconditionCheck(pub Preconditions);

#[async_trait::async_trait]
impl crate::snapshot::pipeline::Check for PreconditionCheck {
    async fn before_attempt(
        &self,
        target: u64,
        base: &Path,
        store: &ObjectStore,
        inner: &dyn CommitHandler,
    ) -> std::result::Result<(), HostError> {
        let landing_on = target.saturating_sub(1);
        if let Some(e) = self.0.version_refusal(landing_on) {
            return Err(e);
        }
        if self.0.required_config.is_empty() {
            return Ok(());
        }
        let what = "cannot read the table's config to check the commit's required_config";
        let location = inner
            .resolve_version_location(base, landing_on, &store.inner)
            .await
            .map_err(|e| HostError::from_lance(what, e))?;
        let manifest = lance_table::io::manifest::read_manifest(store, &location.path, location.size)
            .await
            .map_err(|e| HostError::from_lance(what, e))?;
        match self.0.config_refusal(landing_on, &manifest.config) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The handler a commit of the table at `uri` wraps: `inner` when the commit path has one
/// (a prepared multi-table commit's), else the table's own (a managed table's namespace door
/// included). Tables whose handler depends on storage options (`s3+ddb://`) cannot have
/// checks: their handler is chosen by Lance.
pub(crate) async fn table_handler(
    uri: &str,
    store_params: &lance_io::object_store::ObjectStoreParams,
    inner: Option<Arc<dyn CommitHandler>>,
) -> Result<Arc<dyn CommitHandler>> {
    if uri.starts_with("s3+ddb") {
        return Err(HostError::not_supported(
            "commit checks (expected_version, required_config, statement_id on row-level changes) are not supported on s3+ddb:// tables",
        ));
    }
    match inner {
        Some(h) => Ok(h),
        None => crate::snapshot::managed::commit_handler(uri, store_params)
            .await
            .map_err(|e| HostError::from_lance(&format!("cannot commit to table '{uri}'"), e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_what_was_required_and_found() {
        let pre = Preconditions {
            expected_version: Some(4),
            required_config: [("fence".to_string(), "job-7".to_string())].into(),
        };
        assert!(pre.version_refusal(4).is_none());
        let e = pre.version_refusal(5).expect("refused");
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_CONFLICT);
        assert!(e.message.contains("version 4") && e.message.contains("version 5"), "{}", e.message);
        let mut config = std::collections::HashMap::new();
        let e = pre.config_refusal(4, &config).expect("refused when unset");
        assert_eq!(e.code, LanceErrorCode::LANCE_ERR_FAILED_PRECONDITION);
        assert!(e.message.contains("is not set"), "{}", e.message);
        config.insert("fence".to_string(), "job-8".to_string());
        let e = pre.config_refusal(4, &config).expect("refused when different");
        assert!(e.message.contains("'job-8'"), "{}", e.message);
        config.insert("fence".to_string(), "job-7".to_string());
        assert!(pre.config_refusal(4, &config).is_none());
        assert!(Preconditions { expected_version: Some(0), ..Default::default() }.validate().is_err());
        assert!(Preconditions::default().is_empty());
    }
}
