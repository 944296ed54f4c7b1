//! A namespace that commits versions of several tables together: the directory namespace with
//! version tracking, plus `batch_commit_tables` / `batch_create_table_versions` (which the
//! directory namespace answers "not implemented").
//!
//! A batch is all or nothing for every writer that commits through this server: under one lock
//! (which single-table `create_table_version` calls take too) every entry is checked first — one
//! version per table, each exactly the table's latest + 1, each staging manifest present — then
//! the batch is written to a journal file (renamed into place: the commit point), then each
//! version is published, then the journal is removed. A server stopped between the journal and
//! the last publish finishes the batch when it starts again (every publish is idempotent).
//! A writer that bypasses the namespace and takes one of the versions between the check and the
//! publish makes the publish fail; the versions of the batch published before it are then
//! removed again and the batch fails.
//!
//! The namespace is the source of its tables' versions: it records the newest version it
//! registered for each table (main branch; `<warehouse>/_batch_commits/registered.json`), and
//! a version written to storage past it by a writer that bypassed the namespace is not listed,
//! described or opened as latest (its commits through the namespace then conflict).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lance_namespace::error::NamespaceError;
use lance_namespace::models::*;
use lance_namespace::{Error, LanceNamespace, Result};

pub struct BatchCommitNamespace {
    state: Arc<State>,
}

struct State {
    inner: Arc<dyn LanceNamespace>,
    /// Where journals live: `<warehouse>/_batch_commits/`.
    journal_dir: PathBuf,
    /// Held by every commit and by reads of versions: a reader through the namespace sees a
    /// batch all or not at all.
    lock: tokio::sync::Mutex<()>,
    /// The newest version registered through this namespace, per table (main branch).
    registered: std::sync::Mutex<std::collections::HashMap<String, i64>>,
    /// A test fault (`--lose-answer-marker`): while this file exists, the next commit that
    /// lands removes it and answers with an error, as if its answer were lost on the way back.
    lose_marker: Option<PathBuf>,
}

fn table_key(id: &[String]) -> String {
    id.join("/")
}

impl std::fmt::Debug for BatchCommitNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchCommitNamespace").field("journal_dir", &self.state.journal_dir).finish()
    }
}

fn invalid(message: String) -> Error {
    NamespaceError::InvalidInput { message }.into()
}

fn internal(message: String) -> Error {
    NamespaceError::Internal { message }.into()
}

/// The local file of an object-store path of this (local) warehouse.
fn local_file(object_path: &str) -> PathBuf {
    Path::new("/").join(object_path.trim_start_matches('/'))
}

impl BatchCommitNamespace {
    /// Wrap `inner` (a directory namespace over `root`, with version tracking) and finish any
    /// batch a previous run of the server journaled but did not publish completely.
    pub async fn open(
        inner: Arc<dyn LanceNamespace>,
        root: &str,
        lose_marker: Option<PathBuf>,
    ) -> std::result::Result<Self, String> {
        let journal_dir = Path::new(root).join("_batch_commits");
        let registered = match std::fs::read_to_string(journal_dir.join("registered.json")) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("damaged registered.json: {e}"))?,
            Err(_) => std::collections::HashMap::new(),
        };
        let ns = State {
            inner,
            journal_dir,
            lock: tokio::sync::Mutex::new(()),
            registered: std::sync::Mutex::new(registered),
            lose_marker,
        };
        let mut pending: Vec<PathBuf> = match std::fs::read_dir(&ns.journal_dir) {
            Ok(dir) => dir
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect(),
            Err(_) => Vec::new(),
        };
        pending.sort();
        for journal in pending {
            let text = std::fs::read_to_string(&journal).map_err(|e| format!("cannot read {}: {e}", journal.display()))?;
            let entries: Vec<CreateTableVersionRequest> =
                serde_json::from_str(&text).map_err(|e| format!("damaged journal {}: {e}", journal.display()))?;
            for entry in entries {
                let (id, version, branch) = (entry.id.clone(), entry.version, entry.branch.clone());
                ns.inner
                    .create_table_version(entry)
                    .await
                    .map_err(|e| format!("cannot finish journaled batch {}: {e}", journal.display()))?;
                ns.record(id.as_deref(), branch.as_deref(), version).map_err(|e| e.to_string())?;
            }
            std::fs::remove_file(&journal).map_err(|e| format!("cannot remove {}: {e}", journal.display()))?;
        }
        Ok(BatchCommitNamespace { state: Arc::new(ns) })
    }

    /// Run `entries` as one batch to its end even when the caller goes away (a client that
    /// disconnects drops the request's future; the batch must not stop half-way).
    async fn commit(&self, entries: Vec<CreateTableVersionRequest>) -> Result<Vec<CreateTableVersionResponse>> {
        let state = self.state.clone();
        let published = tokio::spawn(async move { state.commit_versions(entries).await })
            .await
            .map_err(|e| internal(format!("the batch commit task failed: {e}")))??;
        self.state.lose_answer()?;
        Ok(published)
    }
}

impl State {
    /// The test fault: a commit that landed answers with an error once per marker file.
    fn lose_answer(&self) -> Result<()> {
        match &self.lose_marker {
            Some(marker) if std::fs::remove_file(marker).is_ok() => Err(internal(
                "the commit landed but its answer was lost (test fault --lose-answer-marker)".into(),
            )),
            _ => Ok(()),
        }
    }

    /// Record that `version` of table `id` was registered here (main branch only).
    fn record(&self, id: Option<&[String]>, branch: Option<&str>, version: i64) -> Result<()> {
        let (Some(id), None | Some("main")) = (id, branch) else { return Ok(()) };
        let mut r = self.registered.lock().unwrap_or_else(|p| p.into_inner());
        let newest = r.entry(table_key(id)).or_insert(version);
        *newest = (*newest).max(version);
        std::fs::create_dir_all(&self.journal_dir).map_err(|e| internal(format!("cannot create {}: {e}", self.journal_dir.display())))?;
        let tmp = self.journal_dir.join("registered.json.tmp");
        let text = serde_json::to_string(&*r).map_err(|e| internal(e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| internal(format!("cannot write the version record: {e}")))?;
        std::fs::rename(&tmp, self.journal_dir.join("registered.json"))
            .map_err(|e| internal(format!("cannot place the version record: {e}")))
    }

    /// Forget table `id` (dropped or deregistered): a table made again under its name starts over.
    fn forget(&self, id: Option<&[String]>) -> Result<()> {
        let Some(id) = id else { return Ok(()) };
        let mut r = self.registered.lock().unwrap_or_else(|p| p.into_inner());
        if r.remove(&table_key(id)).is_none() {
            return Ok(());
        }
        let tmp = self.journal_dir.join("registered.json.tmp");
        let text = serde_json::to_string(&*r).map_err(|e| internal(e.to_string()))?;
        std::fs::write(&tmp, text).map_err(|e| internal(format!("cannot write the version record: {e}")))?;
        std::fs::rename(&tmp, self.journal_dir.join("registered.json"))
            .map_err(|e| internal(format!("cannot place the version record: {e}")))
    }

    /// The newest version registered here for table `id` (None: none, or a branch).
    fn newest(&self, id: Option<&[String]>, branch: Option<&str>) -> Option<i64> {
        let (Some(id), None | Some("main")) = (id, branch) else { return None };
        self.registered.lock().unwrap_or_else(|p| p.into_inner()).get(&table_key(id)).copied()
    }

    async fn latest(&self, id: &[String]) -> Result<i64> {
        let listed = self
            .inner
            .list_table_versions(ListTableVersionsRequest {
                id: Some(id.to_vec()),
                descending: Some(true),
                limit: Some(1),
                ..Default::default()
            })
            .await?;
        Ok(listed.versions.first().map_or(0, |v| v.version))
    }

    /// Commit `entries` (one new version of each of their tables) all together or not at all.
    async fn commit_versions(&self, entries: Vec<CreateTableVersionRequest>) -> Result<Vec<CreateTableVersionResponse>> {
        if entries.is_empty() {
            return Err(invalid("a batch commit needs at least one table version".into()));
        }
        let _held = self.lock.lock().await;
        let mut seen = std::collections::HashSet::new();
        for (i, e) in entries.iter().enumerate() {
            let id = e.id.clone().ok_or_else(|| invalid(format!("entry {i} names no table")))?;
            if e.branch.is_some() {
                return Err(NamespaceError::Unsupported {
                    message: format!("entry {i}: this server commits batches on the main branch only"),
                }
                .into());
            }
            if !seen.insert(id.clone()) {
                return Err(invalid(format!("table {id:?} appears twice in one batch")));
            }
            let latest = self.latest(&id).await?;
            if e.version != latest + 1 {
                return Err(NamespaceError::ConcurrentModification {
                    message: format!(
                        "table {id:?} is at version {latest}, so version {} cannot be committed: nothing was committed",
                        e.version
                    ),
                }
                .into());
            }
            if !local_file(&e.manifest_path).is_file() {
                return Err(invalid(format!("entry {i}: staging manifest '{}' does not exist", e.manifest_path)));
            }
        }
        // The commit point: the journal in place.
        std::fs::create_dir_all(&self.journal_dir).map_err(|e| internal(format!("cannot create the journal directory: {e}")))?;
        let name = format!(
            "{:020}-{}",
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            std::process::id()
        );
        let journal = self.journal_dir.join(format!("{name}.json"));
        let staged = self.journal_dir.join(format!("{name}.tmp"));
        let text = serde_json::to_string(&entries).map_err(|e| internal(e.to_string()))?;
        std::fs::write(&staged, text).map_err(|e| internal(format!("cannot write the journal: {e}")))?;
        std::fs::rename(&staged, &journal).map_err(|e| internal(format!("cannot place the journal: {e}")))?;
        let recorded: Vec<(Vec<String>, i64)> =
            entries.iter().map(|e| (e.id.clone().unwrap_or_default(), e.version)).collect();
        let mut published: Vec<CreateTableVersionResponse> = Vec::with_capacity(entries.len());
        for entry in entries {
            match self.inner.create_table_version(entry).await {
                Ok(r) => published.push(r),
                Err(e) => {
                    // another writer took a version past the namespace: take the batch back
                    for r in &published {
                        if let Some(v) = &r.version {
                            let _ = std::fs::remove_file(local_file(&v.manifest_path));
                        }
                    }
                    let _ = std::fs::remove_file(&journal);
                    return Err(e);
                }
            }
        }
        for (id, version) in &recorded {
            self.record(Some(id), None, *version)?;
        }
        std::fs::remove_file(&journal).map_err(|e| internal(format!("cannot remove the journal: {e}")))?;
        Ok(published)
    }
}

/// The trait implementation: the batch operations and `create_table_version` here, every other
/// operation answered by the directory namespace.
macro_rules! namespace_impl {
    ({ $($own:tt)* } $($method:ident($request:ty $(, $data:ident)?) -> $response:ty;)*) => {
        #[async_trait::async_trait]
        impl LanceNamespace for BatchCommitNamespace {
            $($own)*
            $(
                async fn $method(&self, request: $request $(, $data: Bytes)?) -> Result<$response> {
                    self.state.inner.$method(request $(, $data)?).await
                }
            )*
            fn namespace_id(&self) -> String {
                format!("batch-commit({})", self.state.inner.namespace_id())
            }
        }
    };
}

namespace_impl! {
    {
        async fn create_table_version(&self, request: CreateTableVersionRequest) -> Result<CreateTableVersionResponse> {
            let state = self.state.clone();
            tokio::spawn(async move {
                let _held = state.lock.lock().await;
                let (id, version, branch) = (request.id.clone(), request.version, request.branch.clone());
                let answer = state.inner.create_table_version(request).await?;
                state.record(id.as_deref(), branch.as_deref(), version)?;
                state.lose_answer()?;
                Ok(answer)
            })
            .await
            .map_err(|e| internal(format!("the commit task failed: {e}")))?
        }

        async fn list_table_versions(&self, mut request: ListTableVersionsRequest) -> Result<ListTableVersionsResponse> {
            let _held = self.state.lock.lock().await;
            let Some(newest) = self.state.newest(request.id.as_deref(), request.branch.as_deref()) else {
                return self.state.inner.list_table_versions(request).await;
            };
            // versions past the newest registered one were not committed through the namespace
            let limit = request.limit.take();
            let descending = request.descending == Some(true);
            let mut listed = self.state.inner.list_table_versions(request).await?;
            listed.versions.retain(|v| v.version <= newest);
            listed.versions.sort_by_key(|v| if descending { -v.version } else { v.version });
            if let Some(n) = limit.filter(|n| *n > 0) {
                listed.versions.truncate(n as usize);
            }
            listed.page_token = None;
            Ok(listed)
        }

        async fn describe_table_version(&self, mut request: DescribeTableVersionRequest) -> Result<DescribeTableVersionResponse> {
            let _held = self.state.lock.lock().await;
            if let Some(newest) = self.state.newest(request.id.as_deref(), request.branch.as_deref()) {
                match request.version {
                    None => request.version = Some(newest),
                    Some(v) if v > newest => {
                        return Err(NamespaceError::TableVersionNotFound {
                            message: format!("version {v} was not committed through this namespace (its latest is {newest})"),
                        }
                        .into())
                    }
                    Some(_) => {}
                }
            }
            self.state.inner.describe_table_version(request).await
        }

        async fn describe_table(&self, mut request: DescribeTableRequest) -> Result<DescribeTableResponse> {
            if request.version.is_none() && request.tag.is_none() && request.branch.is_none() {
                request.version = self.state.newest(request.id.as_deref(), None);
            }
            self.state.inner.describe_table(request).await
        }

        async fn drop_table(&self, request: DropTableRequest) -> Result<DropTableResponse> {
            let id = request.id.clone();
            let answer = self.state.inner.drop_table(request).await?;
            self.state.forget(id.as_deref())?;
            Ok(answer)
        }

        async fn deregister_table(&self, request: DeregisterTableRequest) -> Result<DeregisterTableResponse> {
            let id = request.id.clone();
            let answer = self.state.inner.deregister_table(request).await?;
            self.state.forget(id.as_deref())?;
            Ok(answer)
        }

        async fn batch_create_table_versions(
            &self,
            request: BatchCreateTableVersionsRequest,
        ) -> Result<BatchCreateTableVersionsResponse> {
            let entries = request
                .entries
                .into_iter()
                .map(|e| CreateTableVersionRequest {
                    id: Some(e.id),
                    version: e.version,
                    branch: e.branch,
                    manifest_path: e.manifest_path,
                    manifest_size: e.manifest_size,
                    e_tag: e.e_tag,
                    metadata: e.metadata,
                    naming_scheme: e.naming_scheme,
                    ..Default::default()
                })
                .collect();
            let published = self.commit(entries).await?;
            Ok(BatchCreateTableVersionsResponse {
                versions: published.into_iter().filter_map(|r| r.version.map(|v| *v)).collect(),
                ..Default::default()
            })
        }

        async fn batch_commit_tables(&self, request: BatchCommitTablesRequest) -> Result<BatchCommitTablesResponse> {
            let mut entries = Vec::with_capacity(request.operations.len());
            for (i, op) in request.operations.into_iter().enumerate() {
                let others = op.declare_table.is_some() || op.delete_table_versions.is_some() || op.deregister_table.is_some();
                match (op.create_table_version, others) {
                    (Some(c), false) => entries.push(*c),
                    _ => {
                        return Err(NamespaceError::Unsupported {
                            message: format!("operation {i}: this server commits create_table_version operations only"),
                        }
                        .into())
                    }
                }
            }
            let published = self.commit(entries).await?;
            Ok(BatchCommitTablesResponse {
                results: published
                    .into_iter()
                    .map(|r| CommitTableResult {
                        create_table_version: Some(Box::new(r)),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
    }
    list_namespaces(ListNamespacesRequest) -> ListNamespacesResponse;
    describe_namespace(DescribeNamespaceRequest) -> DescribeNamespaceResponse;
    create_namespace(CreateNamespaceRequest) -> CreateNamespaceResponse;
    drop_namespace(DropNamespaceRequest) -> DropNamespaceResponse;
    namespace_exists(NamespaceExistsRequest) -> ();
    list_tables(ListTablesRequest) -> ListTablesResponse;
    register_table(RegisterTableRequest) -> RegisterTableResponse;
    table_exists(TableExistsRequest) -> ();
    count_table_rows(CountTableRowsRequest) -> i64;
    create_table(CreateTableRequest, data) -> CreateTableResponse;
    declare_table(DeclareTableRequest) -> DeclareTableResponse;
    insert_into_table(InsertIntoTableRequest, data) -> InsertIntoTableResponse;
    merge_insert_into_table(MergeInsertIntoTableRequest, data) -> MergeInsertIntoTableResponse;
    update_table(UpdateTableRequest) -> UpdateTableResponse;
    delete_from_table(DeleteFromTableRequest) -> DeleteFromTableResponse;
    query_table(QueryTableRequest) -> Bytes;
    create_table_index(CreateTableIndexRequest) -> CreateTableIndexResponse;
    list_table_indices(ListTableIndicesRequest) -> ListTableIndicesResponse;
    describe_table_index_stats(DescribeTableIndexStatsRequest) -> DescribeTableIndexStatsResponse;
    describe_transaction(DescribeTransactionRequest) -> DescribeTransactionResponse;
    alter_transaction(AlterTransactionRequest) -> AlterTransactionResponse;
    create_table_scalar_index(CreateTableIndexRequest) -> CreateTableScalarIndexResponse;
    drop_table_index(DropTableIndexRequest) -> DropTableIndexResponse;
    list_all_tables(ListTablesRequest) -> ListTablesResponse;
    restore_table(RestoreTableRequest) -> RestoreTableResponse;
    rename_table(RenameTableRequest) -> RenameTableResponse;
    batch_delete_table_versions(BatchDeleteTableVersionsRequest) -> BatchDeleteTableVersionsResponse;
    update_table_schema_metadata(UpdateTableSchemaMetadataRequest) -> UpdateTableSchemaMetadataResponse;
    update_field_metadata(UpdateFieldMetadataRequest) -> UpdateFieldMetadataResponse;
    get_table_stats(GetTableStatsRequest) -> GetTableStatsResponse;
    explain_table_query_plan(ExplainTableQueryPlanRequest) -> String;
    analyze_table_query_plan(AnalyzeTableQueryPlanRequest) -> String;
    alter_table_add_columns(AlterTableAddColumnsRequest) -> AlterTableAddColumnsResponse;
    alter_table_alter_columns(AlterTableAlterColumnsRequest) -> AlterTableAlterColumnsResponse;
    alter_table_drop_columns(AlterTableDropColumnsRequest) -> AlterTableDropColumnsResponse;
    alter_table_backfill_columns(AlterTableBackfillColumnsRequest) -> AlterTableBackfillColumnsResponse;
    refresh_materialized_view(RefreshMaterializedViewRequest) -> RefreshMaterializedViewResponse;
    create_materialized_view(CreateMaterializedViewRequest) -> CreateMaterializedViewResponse;
    list_table_tags(ListTableTagsRequest) -> ListTableTagsResponse;
    get_table_tag_version(GetTableTagVersionRequest) -> GetTableTagVersionResponse;
    create_table_tag(CreateTableTagRequest) -> CreateTableTagResponse;
    delete_table_tag(DeleteTableTagRequest) -> DeleteTableTagResponse;
    update_table_tag(UpdateTableTagRequest) -> UpdateTableTagResponse;
    create_table_branch(CreateTableBranchRequest) -> CreateTableBranchResponse;
    list_table_branches(ListTableBranchesRequest) -> ListTableBranchesResponse;
    delete_table_branch(DeleteTableBranchRequest) -> DeleteTableBranchResponse;
}
