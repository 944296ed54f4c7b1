//! The commit pipeline for the one-call row-level changes (delete, update, merge-insert), which
//! Lance plans and commits inside one call through their dataset's commit handler: the
//! planned version is opened again with the pipeline's handler, which carries the commit's
//! checks (preconditions, the statement-id guard) and writes the commit's transaction
//! properties (statement id, commit message) into the version's transaction. A statement
//! found committed already is answered with its version, nothing is committed again.

use std::sync::Arc;

use lance_io::object_store::ObjectStore;

use crate::snapshot::pipeline::{Check, Pipeline};
use super::statement::{self, Guard};
use super::WriteOptions;
use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;

/// What a row-level change does: answer with the version its statement landed in, or run.
pub(crate) enum Guarded {
    /// The statement was committed before (a retry): the version it landed in.
    Found(Snapshot),
    Run(Run),
}

/// A row-level change ready to run: on `on(at)`, then `failed` to explain a failure.
pub(crate) struct Run {
    reopened: Option<Snapshot>,
    pipeline: Option<Arc<Pipeline>>,
    guard: Option<Arc<Guard>>,
}

impl Run {
    /// The snapshot the change runs on: `at` itself, or `at`'s version opened again with the
    /// pipeline's handler.
    pub(crate) fn on<'a>(&'a self, at: &'a Snapshot) -> &'a Snapshot {
        self.reopened.as_ref().unwrap_or(at)
    }

    /// A failed change as the caller sees it: the version another commit of the same statement
    /// landed in while this one ran (Ok), else the check that refused it, else `err`.
    pub(crate) fn failed(&self, at: &Snapshot, err: HostError) -> Result<Snapshot> {
        if let Some(version) = self.guard.as_ref().and_then(|g| g.found()) {
            return open_version(at, version);
        }
        Err(self.pipeline.as_ref().and_then(|p| p.stopped()).unwrap_or(err))
    }
}

fn open_version(at: &Snapshot, version: u64) -> Result<Snapshot> {
    let ds = at.dataset.clone();
    let found = session::block_on(async move { ds.checkout_version(version).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot open version {version} of table '{}'", at.uri()), e))?;
    Ok(Snapshot {
        dataset: Arc::new(found),
        storage_options: at.storage_options.clone(),
    })
}

/// Prepare a row-level change planned on `at` with `options`: look for its statement, record
/// it, and build the pipeline its commit goes through.
pub(crate) fn prepare(at: &Snapshot, options: &WriteOptions) -> Result<Guarded> {
    let properties = options.transaction_properties();
    let pre = &options.preconditions;
    if pre.is_empty() && properties.is_none() {
        return Ok(Guarded::Run(Run {
            reopened: None,
            pipeline: None,
            guard: None,
        }));
    }
    pre.validate()?;
    if at.uri().starts_with("s3+ddb") && pre.is_empty() && options.statement_id.is_none() {
        // Lance chooses such a table's handler: the commit message cannot be stamped (as before 0.15)
        return Ok(Guarded::Run(Run {
            reopened: None,
            pipeline: None,
            guard: None,
        }));
    }
    let uri = at.uri().to_string();
    let planned_at = at.version();
    let storage = at.storage_options.clone();
    let lance_session = session::global()?.lance.clone();
    let store_params = WriteOptions {
        storage_options: storage.clone(),
        ..Default::default()
    }
    .store_params(&uri);
    let statement_id = options.statement_id.clone();
    let pre = pre.clone();
    let what = format!("cannot commit to table '{uri}' (planned at version {planned_at})");
    let prepared = session::block_on(async move {
        let open = |version: Option<u64>, handler: Option<Arc<Pipeline>>| {
            let (session, storage, uri) = (lance_session.clone(), storage.clone(), uri.clone());
            async move {
                let b = crate::snapshot::managed::builder(&uri)?.with_session(session);
                let mut b = crate::snapshot::credentials::with_options(b, &uri, storage);
                if let Some(v) = version {
                    b = b.with_version(v);
                }
                if let Some(h) = handler {
                    b = b.with_commit_handler(h);
                }
                b.load().await
            }
        };
        let mut checks: Vec<Arc<dyn Check>> = Vec::new();
        if !pre.is_empty() {
            checks.push(Arc::new(super::preconditions::PreconditionCheck(pre.clone())));
        }
        let mut guard = None;
        if let Some(id) = &statement_id {
            // Exactly once: the statement in any version since it was first planned.
            let latest = Arc::new(open(None, None).await.map_err(|e| HostError::from_lance(&what, e))?);
            let newest = latest.version().version;
            if planned_at > newest {
                return Err(HostError::invalid(format!(
                    "the change was planned at version {planned_at}, but the table's latest version is {newest}"
                )));
            }
            let (store, base) = ObjectStore::from_uri_and_params(lance_session.store_registry(), &uri, &store_params)
                .await
                .map_err(|e| HostError::from_lance(&what, e))?;
            let since = statement::first_planned(&store, &base, id, planned_at)
                .await
                .map_err(|e| HostError::from_lance(&format!("cannot read the record of statement '{id}'"), e))?;
            if let Some((version, _)) = statement::find(&latest, since, id).await? {
                return Ok(Err(version));
            }
            // before the commit: a caller killed after it leaves the record in place
            statement::record(&store, &base, id, since)
                .await
                .map_err(|e| HostError::from_lance(&format!("cannot record statement '{id}'"), e))?;
            let g = Arc::new(Guard::new(latest, id));
            checks.push(g.clone());
            guard = Some(g);
        }
        let inner = super::preconditions::table_handler(&uri, &store_params, None).await?;
        let pipeline = Arc::new(
            checks.into_iter().fold(Pipeline::new(inner), |p, c| p.with_check(c)).with_stamp(properties),
        );
        let reopened = open(Some(planned_at), Some(pipeline.clone())).await.map_err(|e| HostError::from_lance(&what, e))?;
        Ok(Ok((reopened, pipeline, guard)))
    })??;
    match prepared {
        Err(version) => Ok(Guarded::Found(open_version(at, version)?)),
        Ok((reopened, pipeline, guard)) => Ok(Guarded::Run(Run {
            reopened: Some(Snapshot {
                dataset: Arc::new(reopened),
                storage_options: at.storage_options.clone(),
            }),
            pipeline: Some(pipeline),
            guard,
        })),
    }
}
