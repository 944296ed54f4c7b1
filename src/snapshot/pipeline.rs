//! The one commit handler every commit of this library goes through, whatever its path:
//! one-call writes, staged commits, row-level changes, multi-table commits, and the handles a
//! snapshot token opens. It wraps the table's own handler (Lance's, or a managed table's
//! namespace door) and forwards every call to it, adding three things, each optional:
//!
//! - **checks** run before every attempt to write a version ([`Check`]): the commit's
//!   preconditions (expected version, required config), the statement-id guard. An attempt
//!   lands only on the version every check let through; the first refusal stops the commit and
//!   is what the commit reports.
//! - **stamped properties**: transaction properties (the statement id, the commit message)
//!   written into the version's transaction where the commit path cannot put them there itself
//!   (Lance's one-call delete, update and merge-insert build their transaction inside Lance).
//! - **a known location**: the manifest location a snapshot token shipped, answered without a
//!   request to storage.
//!
//! Once a commit landed, the handler forwards only: the dataset Lance returns keeps it for
//! later commits, which its checks and properties do not bind.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::BoxStream;
use lance_io::object_store::ObjectStore;
use lance_table::format::{IndexMetadata, Manifest, Transaction};
use lance_table::io::commit::{
    CommitError, CommitHandler, ManifestLocation, ManifestNamingScheme, ManifestWriter, PredecessorIdentity,
};
use object_store::path::Path;
use object_store::ObjectStore as OSObjectStore;

use crate::error::HostError;

/// A check before every attempt to write a version.
#[async_trait::async_trait]
pub(crate) trait Check: Send + Sync + std::fmt::Debug {
    /// Whether the attempt to write version `target` may go ahead: the table's latest version
    /// is then `target - 1` (the store writes a version only once). `inner` is the table's own
    /// handler, to resolve versions with.
    async fn before_attempt(
        &self,
        target: u64,
        base: &Path,
        store: &ObjectStore,
        inner: &dyn CommitHandler,
    ) -> std::result::Result<(), HostError>;
}

/// A manifest location known without asking storage (a snapshot token shipped it).
#[derive(Debug, Clone)]
pub(crate) struct KnownLocation {
    pub version: u64,
    pub naming_scheme: ManifestNamingScheme,
    pub size: Option<u64>,
    pub e_tag: Option<String>,
    pub identity: Option<String>,
}

/// The commit pipeline's handler. Build it with [`Pipeline::new`] and the `with_*` methods.
pub(crate) struct Pipeline {
    inner: Arc<dyn CommitHandler>,
    checks: Vec<Arc<dyn Check>>,
    stamp: HashMap<String, String>,
    known: Option<KnownLocation>,
    stopped: Mutex<Option<HostError>>,
    landed: AtomicBool,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("inner", &self.inner)
            .field("checks", &self.checks)
            .field("stamp", &self.stamp.keys().collect::<Vec<_>>())
            .field("known", &self.known.as_ref().map(|k| k.version))
            .finish()
    }
}

impl Pipeline {
    pub(crate) fn new(inner: Arc<dyn CommitHandler>) -> Self {
        Pipeline {
            inner,
            checks: Vec::new(),
            stamp: HashMap::new(),
            known: None,
            stopped: Mutex::new(None),
            landed: AtomicBool::new(false),
        }
    }

    pub(crate) fn with_check(mut self, check: Arc<dyn Check>) -> Self {
        self.checks.push(check);
        self
    }

    /// Properties to write into the transaction of the version the commit lands.
    pub(crate) fn with_stamp(mut self, properties: Option<Arc<HashMap<String, String>>>) -> Self {
        if let Some(p) = properties {
            self.stamp.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        self
    }

    pub(crate) fn with_known_location(mut self, known: KnownLocation) -> Self {
        self.known = Some(known);
        self
    }

    /// The refusal that stopped the commit, if a check stopped it.
    pub(crate) fn stopped(&self) -> Option<HostError> {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn live(&self) -> bool {
        !self.landed.load(Ordering::Acquire)
    }

    async fn before_attempt(
        &self,
        manifest: &Manifest,
        base: &Path,
        store: &ObjectStore,
        transaction: &mut Option<Transaction>,
    ) -> std::result::Result<(), CommitError> {
        if !self.live() {
            return Ok(());
        }
        for check in &self.checks {
            if let Err(e) = check.before_attempt(manifest.version, base, store, self.inner.as_ref()).await {
                let message = e.message.clone();
                self.stopped.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
                return Err(CommitError::OtherError(lance::Error::invalid_input(message)));
            }
        }
        if !self.stamp.is_empty() {
            self.stamp(manifest, base, store, transaction).await.map_err(CommitError::OtherError)?;
        }
        Ok(())
    }

    /// Write the stamped properties into the transaction the version will carry: the copy
    /// Lance inlines into the manifest (what Lance and pylance read first) and, when Lance did
    /// not inline it (a transaction over Lance's inline limit), the transaction file the
    /// manifest names, rewritten in place (written by this attempt, referenced by nothing yet).
    async fn stamp(
        &self,
        manifest: &Manifest,
        base: &Path,
        store: &ObjectStore,
        transaction: &mut Option<Transaction>,
    ) -> lance::Result<()> {
        if let Some(t) = transaction.as_mut() {
            t.inner.transaction_properties.extend(self.stamp.iter().map(|(k, v)| (k.clone(), v.clone())));
            return Ok(());
        }
        let Some(file) = manifest.transaction_file.as_deref() else {
            return Err(lance::Error::not_supported(
                "the commit's transaction properties (statement id, commit message) cannot be recorded: \
                 Lance wrote this version without a transaction",
            ));
        };
        use object_store::ObjectStoreExt;
        use prost::Message;
        let path = base.clone().join("_transactions").join(file);
        let bytes = store.inner.get(&path).await?.bytes().await?;
        let mut pb = lance_table::format::pb::Transaction::decode(bytes)
            .map_err(|e| lance::Error::invalid_input(format!("cannot read the transaction file {file}: {e}")))?;
        pb.transaction_properties.extend(self.stamp.iter().map(|(k, v)| (k.clone(), v.clone())));
        store.put(&path, &pb.encode_to_vec()).await.map(|_| ())
    }
}

#[async_trait::async_trait]
impl CommitHandler for Pipeline {
    fn is_version_not_found_definitive(&self) -> bool {
        // A refused attempt wrote nothing: Lance need not wait for its version to appear.
        self.stopped().is_some() || self.inner.is_version_not_found_definitive()
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
        match &self.known {
            Some(k) if k.version == version => Ok(ManifestLocation {
                version,
                path: k.naming_scheme.manifest_path(base, version),
                size: k.size,
                naming_scheme: k.naming_scheme,
                e_tag: k.e_tag.clone(),
                identity: k.identity.clone(),
            }),
            _ => self.inner.resolve_version_location(base, version, store).await,
        }
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
        mut transaction: Option<Transaction>,
    ) -> Result<ManifestLocation, CommitError> {
        self.before_attempt(manifest, base, store, &mut transaction).await?;
        let location = self.inner.commit(manifest, indices, base, store, writer, scheme, transaction).await?;
        self.landed.store(true, Ordering::Release);
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
        mut transaction: Option<Transaction>,
        predecessor: &PredecessorIdentity,
    ) -> Result<ManifestLocation, CommitError> {
        self.before_attempt(manifest, base, store, &mut transaction).await?;
        let location = self
            .inner
            .commit_after(manifest, indices, base, store, writer, scheme, transaction, predecessor)
            .await?;
        self.landed.store(true, Ordering::Release);
        Ok(location)
    }
    async fn forget_version(&self, base: &Path, version: u64, identity: &str) -> lance::Result<()> {
        self.inner.forget_version(base, version, identity).await
    }
    async fn delete(&self, base: &Path) -> lance::Result<()> {
        self.inner.delete(base).await
    }
}
