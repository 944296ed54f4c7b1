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
use std::sync::{Arc, Mutex};

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

/// A table's commit handler with the preconditions checked before each attempt to write a
/// version. The first refusal is kept: the commit reports it instead of Lance's error.
pub(crate) struct Checked {
    inner: Arc<dyn CommitHandler>,
    pre: Preconditions,
    refused: Mutex<Option<HostError>>,
    /// Set once a commit landed: the preconditions were of that commit, and the dataset Lance
    /// returns keeps this handler for its later commits, which they do not bind.
    landed: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked").field("inner", &self.inner).field("pre", &self.pre).finish()
    }
}

impl Checked {
    pub(crate) fn new(inner: Arc<dyn CommitHandler>, pre: Preconditions) -> Self {
        Checked {
            inner,
            pre,
            refused: Mutex::new(None),
            landed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The refusal that stopped the commit, if one did.
    pub(crate) fn refusal(&self) -> Option<HostError> {
        self.refused.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn refuse(&self, e: HostError) -> lance_table::io::commit::CommitError {
        let message = e.message.clone();
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        lance_table::io::commit::CommitError::OtherError(lance::Error::invalid_input(message))
    }

    /// Whether the attempt to write version `target` may go ahead.
    async fn check(&self, target: u64, base: &Path, store: &ObjectStore) -> std::result::Result<(), lance_table::io::commit::CommitError> {
        if self.landed.load(std::sync::atomic::Ordering::Acquire) {
            return Ok(());
        }
        let landing_on = target.saturating_sub(1);
        if let Some(e) = self.pre.version_refusal(landing_on) {
            return Err(self.refuse(e));
        }
        if self.pre.required_config.is_empty() {
            return Ok(());
        }
        let location = self
            .inner
            .resolve_version_location(base, landing_on, &store.inner)
            .await
            .map_err(lance_table::io::commit::CommitError::OtherError)?;
        let manifest = lance_table::io::manifest::read_manifest(store, &location.path, location.size)
            .await
            .map_err(lance_table::io::commit::CommitError::OtherError)?;
        match self.pre.config_refusal(landing_on, &manifest.config) {
            Some(e) => Err(self.refuse(e)),
            None => Ok(()),
        }
    }
}

mod handler_impl {
    use futures::stream::BoxStream;
    use lance_io::object_store::ObjectStore;
    use lance_table::format::{IndexMetadata, Manifest, Transaction};
    use lance_table::io::commit::{
        CommitError, CommitHandler, ManifestLocation, ManifestNamingScheme, ManifestWriter, PredecessorIdentity,
    };
    use object_store::path::Path;
    use object_store::ObjectStore as OSObjectStore;

    use super::Checked;

    #[async_trait::async_trait]
    impl CommitHandler for Checked {
        fn is_version_not_found_definitive(&self) -> bool {
            // A refused attempt wrote nothing: Lance need not wait for its version to appear.
            self.refusal().is_some() || self.inner.is_version_not_found_definitive()
        }
        fn propagate_commit_error_after_success(&self) -> bool {
            self.inner.propagate_commit_error_after_success()
        }
        async fn resolve_latest_location(&self, base: &Path, store: &ObjectStore) -> lance::Result<ManifestLocation> {
            self.inner.resolve_latest_location(base, store).await
        }
        async fn resolve_version_location(
            &self,
            base: &Path,
            version: u64,
            store: &dyn OSObjectStore,
        ) -> lance::Result<ManifestLocation> {
            self.inner.resolve_version_location(base, version, store).await
        }
        async fn version_exists(
            &self,
            base: &Path,
            version: u64,
            store: &dyn OSObjectStore,
            scheme: ManifestNamingScheme,
        ) -> lance::Result<bool> {
            self.inner.version_exists(base, version, store, scheme).await
        }
        fn list_detached_manifest_locations<'a>(
            &self,
            base: &Path,
            store: &'a ObjectStore,
        ) -> BoxStream<'a, lance::Result<ManifestLocation>> {
            self.inner.list_detached_manifest_locations(base, store)
        }
        fn list_manifest_locations<'a>(
            &self,
            base: &Path,
            store: &'a ObjectStore,
            sorted_descending: bool,
        ) -> BoxStream<'a, lance::Result<ManifestLocation>> {
            self.inner.list_manifest_locations(base, store, sorted_descending)
        }
        fn list_manifest_locations_since<'a>(
            &self,
            base: &Path,
            store: &'a ObjectStore,
            since: u64,
        ) -> BoxStream<'a, lance::Result<ManifestLocation>> {
            self.inner.list_manifest_locations_since(base, store, since)
        }
        async fn commit(
            &self,
            manifest: &mut Manifest,
            indices: Option<Vec<IndexMetadata>>,
            base: &Path,
            store: &ObjectStore,
            writer: ManifestWriter,
            scheme: ManifestNamingScheme,
            transaction: Option<Transaction>,
        ) -> Result<ManifestLocation, CommitError> {
            self.check(manifest.version, base, store).await?;
            let location = self.inner.commit(manifest, indices, base, store, writer, scheme, transaction).await?;
            self.landed.store(true, std::sync::atomic::Ordering::Release);
            Ok(location)
        }
        fn supports_predecessor_condition(&self) -> bool {
            self.inner.supports_predecessor_condition()
        }
        async fn resolve_latest_identity(
            &self,
            base: &Path,
            store: &ObjectStore,
        ) -> lance::Result<Option<PredecessorIdentity>> {
            self.inner.resolve_latest_identity(base, store).await
        }
        async fn resolve_identity(
            &self,
            base: &Path,
            store: &ObjectStore,
            version: u64,
        ) -> lance::Result<Option<PredecessorIdentity>> {
            self.inner.resolve_identity(base, store, version).await
        }
        async fn commit_after(
            &self,
            manifest: &mut Manifest,
            indices: Option<Vec<IndexMetadata>>,
            base: &Path,
            store: &ObjectStore,
            writer: ManifestWriter,
            scheme: ManifestNamingScheme,
            transaction: Option<Transaction>,
            predecessor: &PredecessorIdentity,
        ) -> Result<ManifestLocation, CommitError> {
            self.check(manifest.version, base, store).await?;
            let location = self
                .inner
                .commit_after(manifest, indices, base, store, writer, scheme, transaction, predecessor)
                .await?;
            self.landed.store(true, std::sync::atomic::Ordering::Release);
            Ok(location)
        }
        async fn forget_version(&self, base: &Path, version: u64, identity: &str) -> lance::Result<()> {
            self.inner.forget_version(base, version, identity).await
        }
        async fn delete(&self, base: &Path) -> lance::Result<()> {
            self.inner.delete(base).await
        }
    }
}

/// The commit handler of a commit of the table at `uri` with preconditions: the table's own
/// handler (or `inner`, already wrapped) checked before each attempt. Tables whose handler
/// depends on storage options (`s3+ddb://`) are refused: their handler is chosen by Lance.
pub(crate) async fn handler(
    uri: &str,
    store_params: &lance_io::object_store::ObjectStoreParams,
    inner: Option<Arc<dyn CommitHandler>>,
    pre: &Preconditions,
) -> Result<Arc<Checked>> {
    if uri.starts_with("s3+ddb") {
        return Err(HostError::not_supported(
            "commit preconditions (expected_version, required_config) are not supported on s3+ddb:// tables",
        ));
    }
    let inner = match inner {
        Some(h) => h,
        None => crate::catalog::managed::commit_handler(uri, store_params)
            .await
            .map_err(|e| HostError::from_lance(&format!("cannot commit to table '{uri}'"), e))?,
    };
    Ok(Arc::new(Checked::new(inner, pre.clone())))
}

/// `at` opened again at its version with a commit handler that checks the preconditions of
/// `options` (None when it has none): for the one-call row changes (delete, update,
/// merge-insert), which commit through their dataset's handler.
pub(crate) fn checked_snapshot(
    at: &crate::snapshot::Snapshot,
    options: &super::WriteOptions,
) -> Result<Option<(crate::snapshot::Snapshot, Arc<Checked>)>> {
    let pre = &options.preconditions;
    if pre.is_empty() {
        return Ok(None);
    }
    pre.validate()?;
    let uri = at.uri().to_string();
    let version = at.version();
    let storage = at.storage_options.clone();
    let lance_session = crate::session::global()?.lance.clone();
    let store_params = options.store_params();
    let pre = pre.clone();
    let what = format!("cannot open table '{uri}' at version {version} to commit with preconditions");
    let (dataset, checked) = crate::session::block_on(async move {
        let checked = handler(&uri, &store_params, None, &pre).await?;
        let dataset = crate::catalog::managed::builder(&uri)
            .map_err(|e| HostError::from_lance(&what, e))?
            .with_session(lance_session)
            .with_storage_options(storage)
            .with_version(version)
            .with_commit_handler(checked.clone())
            .load()
            .await
            .map_err(|e| HostError::from_lance(&what, e))?;
        Ok::<_, HostError>((dataset, checked))
    })??;
    Ok(Some((
        crate::snapshot::Snapshot {
            dataset: Arc::new(dataset),
            storage_options: at.storage_options.clone(),
        },
        checked,
    )))
}

/// The error a failed commit reports: its precondition's refusal when one stopped it.
pub(crate) fn refusal_or(checked: &Option<(crate::snapshot::Snapshot, Arc<Checked>)>, err: HostError) -> HostError {
    checked.as_ref().and_then(|(_, c)| c.refusal()).unwrap_or(err)
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
