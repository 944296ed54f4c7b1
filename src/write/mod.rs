//! Writes: whole-table writes in one process (`table`), staged writes that workers make and a
//! coordinator commits as one version (`staged`), and row-level changes — delete, update,
//! merge-insert (`changes_by_predicate`). What the host streams in is handed to Lance in slices that keep the
//! written pages small (`pages`). The read modules
//! know nothing of these; a write returns a new pinned [`Snapshot`](crate::snapshot::Snapshot).

pub mod committer;
pub mod compaction;
mod encoding;
pub mod maintenance;
pub mod multi;
mod pages;
pub mod preconditions;
pub mod source;
pub mod changes_by_address;
pub mod changes_by_predicate;
pub mod schema;
pub mod staged;
mod statement;
mod guarded;
pub mod table;
mod verify;

pub use source::Batches;

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use lance::dataset::{WriteMode as LanceWriteMode, WriteParams};
use lance_file::version::LanceFileVersion;
use lance_io::object_store::ObjectStoreParams;
use lance_table::format::Fragment;

use crate::error::{HostError, LanceErrorCode, Result};
use crate::session;

/// The transaction property pylance stores a commit message under (pylance reads it back as
/// the commit message).
pub const COMMIT_MESSAGE_KEY: &str = "__lance_commit_message";
/// The transaction property a statement id is stored under (exactly-once commits).
pub const STATEMENT_ID_KEY: &str = "lance_host.statement_id";

/// What a write does to the table (the C values of `LanceWriteMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WriteMode {
    /// A new table; fails if the table exists.
    #[default]
    Create,
    /// New rows after the existing ones; fails if the table does not exist.
    Append,
    /// A new version holding only the written rows (the table is created if missing).
    Overwrite,
}

impl WriteMode {
    fn to_lance(self) -> LanceWriteMode {
        match self {
            WriteMode::Create => LanceWriteMode::Create,
            WriteMode::Append => LanceWriteMode::Append,
            WriteMode::Overwrite => LanceWriteMode::Overwrite,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Create => "create",
            WriteMode::Append => "append",
            WriteMode::Overwrite => "overwrite",
        }
    }
}

/// Settings of a write or a commit. `None` / empty = Lance's default.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub mode: WriteMode,
    pub max_rows_per_file: Option<u64>,
    pub max_rows_per_group: Option<u64>,
    pub max_bytes_per_file: Option<u64>,
    /// Data storage format version of new files ("2.0", "2.1", "stable", ...); only for a
    /// table that is created (or overwritten); an existing table keeps its own.
    pub storage_version: Option<String>,
    pub storage_options: HashMap<String, String>,
    pub commit_message: Option<String>,
    /// Transaction properties stored with the commit (pylance's `transaction_properties`).
    pub properties: HashMap<String, String>,
    /// Exactly-once key of a commit: a commit whose statement id is already in a version
    /// committed since the work was planned returns that version instead of writing again.
    pub statement_id: Option<String>,
    /// Commit retries after a concurrent commit Lance can rebase over (None = Lance's 20).
    pub max_retries: Option<u32>,
    /// Time budget for those retries (None = Lance's 30 s).
    pub retry_timeout: Option<Duration>,
    /// What the version a commit lands on must be (`preconditions`).
    pub preconditions: preconditions::Preconditions,
    /// A new table keeps stable row ids (and row versions).
    pub stable_row_ids: bool,
}

impl WriteOptions {
    /// The transaction properties of a commit: the caller's, the commit message and the
    /// statement id.
    pub(crate) fn transaction_properties(&self) -> Option<Arc<HashMap<String, String>>> {
        let mut props = self.properties.clone();
        for key in [COMMIT_MESSAGE_KEY, STATEMENT_ID_KEY] {
            if props.contains_key(key) {
                // set through their own fields only, so they cannot disagree
                props.remove(key);
            }
        }
        if let Some(m) = &self.commit_message {
            props.insert(COMMIT_MESSAGE_KEY.to_string(), m.clone());
        }
        if let Some(id) = &self.statement_id {
            props.insert(STATEMENT_ID_KEY.to_string(), id.clone());
        }
        (!props.is_empty()).then(|| Arc::new(props))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("max_rows_per_file", self.max_rows_per_file),
            ("max_rows_per_group", self.max_rows_per_group),
            ("max_bytes_per_file", self.max_bytes_per_file),
        ] {
            if v == Some(0) {
                return Err(HostError::invalid(format!("{name} must be > 0 (0 is the default when unset)")));
            }
        }
        if let Some(id) = &self.statement_id {
            if id.is_empty() {
                return Err(HostError::invalid("statement_id must not be empty"));
            }
        }
        self.preconditions.validate()?;
        crate::datacache::table_uses_cache(&self.storage_options)?;
        Ok(())
    }

    /// The object-store parameters of a write to the table at `uri` (its options, refreshed
    /// through the catalog that vended them when one did: `snapshot::credentials`).
    pub(crate) fn store_params(&self, uri: &str) -> ObjectStoreParams {
        ObjectStoreParams {
            storage_options_accessor: Some(crate::snapshot::credentials::accessor(uri, &self.storage_options)),
            ..Default::default()
        }
    }

    /// Lance's write parameters for these options.
    pub(crate) fn lance_params(&self, uri: &str) -> Result<WriteParams> {
        self.validate()?;
        let mut p = WriteParams {
            mode: self.mode.to_lance(),
            store_params: Some(self.store_params(uri)),
            session: Some(session::global()?.lance.clone()),
            transaction_properties: self.transaction_properties(),
            enable_stable_row_ids: self.stable_row_ids,
            ..Default::default()
        };
        if let Some(n) = self.max_rows_per_file {
            p.max_rows_per_file = usize::try_from(n).map_err(|_| HostError::invalid("max_rows_per_file is too large"))?;
        }
        if let Some(n) = self.max_rows_per_group {
            p.max_rows_per_group = usize::try_from(n).map_err(|_| HostError::invalid("max_rows_per_group is too large"))?;
        }
        if let Some(n) = self.max_bytes_per_file {
            p.max_bytes_per_file = usize::try_from(n).map_err(|_| HostError::invalid("max_bytes_per_file is too large"))?;
        }
        if let Some(v) = &self.storage_version {
            p.data_storage_version = Some(parse_storage_version(v)?);
        }
        Ok(p)
    }
}

fn parse_storage_version(v: &str) -> Result<LanceFileVersion> {
    match LanceFileVersion::from_str(v) {
        Ok(LanceFileVersion::Legacy) | Err(_) => Err(HostError::invalid(format!(
            "unknown storage format version '{v}': use \"2.0\", \"2.1\", \"2.2\", \"stable\" or \"next\""
        ))),
        Ok(version) => Ok(version),
    }
}

/// What a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteSummary {
    /// The version the write created (or, for a repeated exactly-once commit, found).
    pub version: u64,
    pub rows_written: u64,
    pub fragments_written: u64,
    pub files_written: u64,
    pub bytes_written: u64,
    pub rows_deleted: u64,
    pub rows_updated: u64,
    pub rows_inserted: u64,
    /// False when an exactly-once commit found its statement already committed.
    pub committed: bool,
}

impl WriteSummary {
    pub(crate) fn of_fragments<'a>(fragments: impl IntoIterator<Item = &'a Fragment>) -> Self {
        let mut s = WriteSummary::default();
        for f in fragments {
            s.fragments_written += 1;
            s.rows_written += f.physical_rows.unwrap_or(0) as u64;
            for file in &f.files {
                s.files_written += 1;
                s.bytes_written += file.file_size_bytes.get().map(|n| n.get()).unwrap_or(0);
            }
        }
        s
    }
}

impl WriteSummary {
    /// What the commit that made `after` wrote, as `after` holds it: the data files it has and
    /// the version before it had not (and their bytes), and its new fragments (their rows).
    /// Row-level changes report their figures this way. Compared with the version just before
    /// `after` — not the version the change was planned at, whose successors may hold other
    /// writers' files (a commit rebased over an append) — read from the session's cache, where
    /// the commit left it.
    pub(crate) fn written_by_commit(after: &lance::Dataset) -> Result<Self> {
        let version = after.version().version;
        if version <= 1 {
            return Ok(Self::of_fragments(after.manifest.fragments.iter()));
        }
        let before = session::block_on(after.checkout_version(version - 1))?
            .map_err(|e| HostError::from_lance(&format!("cannot read version {} to count what version {version} wrote", version - 1), e))?;
        Ok(Self::between(&before, after))
    }

    fn between(before: &lance::Dataset, after: &lance::Dataset) -> Self {
        let old_files: std::collections::HashSet<&str> =
            before.manifest.fragments.iter().flat_map(|f| f.files.iter().map(|d| d.path.as_str())).collect();
        let old_ids: std::collections::HashSet<u64> = before.manifest.fragments.iter().map(|f| f.id).collect();
        let mut s = WriteSummary::default();
        for f in after.manifest.fragments.iter() {
            let mut new_files = 0;
            for file in f.files.iter().filter(|d| !old_files.contains(d.path.as_str())) {
                new_files += 1;
                s.files_written += 1;
                s.bytes_written += file.file_size_bytes.get().map(|n| n.get()).unwrap_or(0);
            }
            if new_files > 0 && (!old_ids.contains(&f.id) || new_files == f.files.len()) {
                s.fragments_written += 1;
                s.rows_written += f.physical_rows.unwrap_or(0) as u64;
            }
        }
        s
    }
}

/// A Lance failure of a commit: a conflict says which versions met.
pub(crate) fn commit_error(what: &str, planned_at: u64, e: lance::Error) -> HostError {
    let err = HostError::from_lance(what, e);
    if err.code == LanceErrorCode::LANCE_ERR_CONFLICT {
        HostError::new(
            LanceErrorCode::LANCE_ERR_CONFLICT,
            format!("{} (the work was planned at version {planned_at}; plan it again at the table's latest version)", err.message),
        )
    } else {
        err
    }
}
