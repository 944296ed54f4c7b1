//! Blob columns: per-row descriptors and range reads of one blob without materialising it.

use std::collections::HashMap;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use lance::dataset::BlobFile;
use lance_core::datatypes::BlobKind;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

/// Where a blob's bytes live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// In the data file, next to the row.
    Inline,
    /// A slice of a blob file shared by several rows.
    Packed,
    /// A blob file of its own.
    Dedicated,
    /// An object outside the table, named by a URI.
    External,
    /// An immutable object the table owns, outside its data files.
    Managed,
}

/// One row's blob: its size and where it lives (None: the value is null).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobInfo {
    pub row_id: u64,
    pub size: u64,
    pub kind: Kind,
    /// The object of an external blob.
    pub uri: Option<String>,
}

/// The blobs of some rows of one blob column, ready for range reads. Holds what it reads
/// from, so it outlives the dataset handle that created it; reads may run concurrently.
pub struct Blobs {
    column: String,
    row_ids: Vec<u64>,
    files: Vec<Option<BlobFile>>,
    stats: OpStats,
    /// Set for a table on the local file system (see `LocalFiles`).
    local: Option<LocalFiles>,
}

/// Reads of a local table's blobs as positioned reads (`pread`) on the calling thread, each
/// file opened once per set. Lance's own read goes through its I/O scheduler: a task on a
/// worker thread and a blocking read on another thread, several thread wake-ups for a few
/// bytes: 77–148 µs per 100-byte read from Python on 2 cores, 3 µs this way (bench/PATHS.md).
/// The bytes are the same: a blob's range is `position + offset` of its data path (inline
/// blobs in the data file, packed and dedicated ones in their blob file; Lance files are never
/// rewritten in place). External and managed blobs, large ranges (which stay cancellable on
/// Lance's path) and files that cannot be opened here take Lance's path.
#[derive(Default)]
struct LocalFiles(Mutex<HashMap<String, Option<Arc<std::fs::File>>>>);

/// Largest range read on the calling thread; larger ones go through Lance (cancellable).
const LOCAL_READ_MAX: u64 = 4 << 20;

impl LocalFiles {
    /// The open file of `path` (an object-store path of the local file system: absolute,
    /// without its leading '/'), or None when it cannot be opened here.
    fn file(&self, path: &str) -> Option<Arc<std::fs::File>> {
        let mut files = self.0.lock().unwrap_or_else(|p| p.into_inner());
        files
            .entry(path.to_string())
            .or_insert_with(|| std::fs::File::open(std::path::Path::new("/").join(path)).ok().map(Arc::new))
            .clone()
    }
}

/// Whether `column` of the snapshot is a blob column (Blob v2 or a blob-encoded binary).
fn check_blob_column(snapshot: &Snapshot, column: &str) -> Result<()> {
    let schema = snapshot.dataset.schema();
    let Some(field) = schema.field(column) else {
        return Err(HostError::invalid(format!(
            "unknown column '{column}' in table '{}'",
            snapshot.uri()
        )));
    };
    if !field.is_blob() {
        return Err(HostError::invalid(format!(
            "column '{column}' is not a blob column (its type is {}); blob reads need a Blob v2 \
             column or a binary column with blob encoding",
            field.data_type()
        )));
    }
    Ok(())
}

/// Resolve the blobs of `column` for `row_ids` (request order, duplicates kept): one take of
/// the column's descriptors, no payload bytes. A missing or deleted row is NOT_FOUND.
pub fn take_blobs(snapshot: &Snapshot, column: &str, row_ids: &[u64]) -> Result<Blobs> {
    crate::metrics::op(crate::metrics::Op::Take);
    check_blob_column(snapshot, column)?;
    let stats = OpStats::default();
    let ds = stats.dataset_uncached(snapshot);
    if row_ids.is_empty() {
        return Ok(Blobs { column: column.to_string(), row_ids: Vec::new(), files: Vec::new(), stats, local: None });
    }
    if !snapshot.dataset.manifest().uses_stable_row_ids() {
        let mut unique = row_ids.to_vec();
        unique.sort_unstable();
        unique.dedup();
        crate::take::validate_addresses(snapshot, ds.clone(), &unique)?;
    }
    let (ids, col) = (row_ids.to_vec(), column.to_string());
    let files = session::block_on(async move { ds.take_blobs(&ids, &col).await })?
        .map_err(|e| HostError::from_lance(&format!("cannot take the blobs of column '{column}'"), e))
        .map_err(|e| e.with_local_paths(snapshot.uri()))?;
    if files.len() != row_ids.len() {
        return Err(HostError::internal(format!(
            "the take of {} blobs returned {}",
            row_ids.len(),
            files.len()
        )));
    }
    let local = snapshot.is_local().then(LocalFiles::default);
    Ok(Blobs { column: column.to_string(), row_ids: row_ids.to_vec(), files, stats, local })
}

impl Blobs {
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The I/O of the take and of every read so far.
    pub fn stats(&self) -> &OpStats {
        &self.stats
    }

    fn file(&self, index: usize) -> Result<Option<&BlobFile>> {
        match self.files.get(index) {
            Some(f) => Ok(f.as_ref()),
            None => Err(HostError::invalid(format!(
                "blob index {index} is out of range: the set holds {} blobs",
                self.files.len()
            ))),
        }
    }

    /// The row id blob `index` was taken for.
    pub fn row_id(&self, index: usize) -> Result<u64> {
        self.file(index)?;
        Ok(self.row_ids[index])
    }

    /// Row `index`'s blob, or None when its value is null.
    pub fn info(&self, index: usize) -> Result<Option<BlobInfo>> {
        let Some(f) = self.file(index)? else { return Ok(None) };
        let kind = match f.kind() {
            BlobKind::Inline => Kind::Inline,
            BlobKind::Packed => Kind::Packed,
            BlobKind::Dedicated => Kind::Dedicated,
            BlobKind::External => Kind::External,
            BlobKind::Managed | BlobKind::ManagedWithBase => Kind::Managed,
        };
        Ok(Some(BlobInfo {
            row_id: self.row_ids[index],
            size: f.size(),
            kind,
            uri: f.uri().map(str::to_string),
        }))
    }

    /// Bytes `offset .. offset + length` of blob `index`, read with requests for that range
    /// only. The range must lie within the blob; a null blob has no bytes to read.
    pub fn read(&self, index: usize, offset: u64, length: u64) -> Result<bytes::Bytes> {
        let file = self.file(index)?.ok_or_else(|| {
            HostError::invalid(format!(
                "blob {index} (row id {}) of column '{}' is null: it has no bytes to read",
                self.row_ids[index], self.column
            ))
        })?;
        let end = offset.checked_add(length).filter(|end| *end <= file.size()).ok_or_else(|| {
            HostError::invalid(format!(
                "range offset {offset} length {length} is past the end of blob {index} (row id {}), \
                 which holds {} bytes",
                self.row_ids[index],
                file.size()
            ))
        })?;
        if length == 0 {
            return Ok(bytes::Bytes::new());
        }
        if let Some(data) = self.read_local(index, file, offset, length)? {
            return Ok(data);
        }
        let range = offset..end;
        let data = session::block_on(async { file.read_range(range).await })?
            .map_err(|e| HostError::from_lance(&format!("cannot read blob {index} of column '{}'", self.column), e))?;
        if data.len() as u64 != length {
            return Err(HostError::internal(format!(
                "a read of {length} bytes of blob {index} returned {}",
                data.len()
            )));
        }
        Ok(data)
    }

    /// `read` of a local table's blob on the calling thread (`LocalFiles`); None = take
    /// Lance's path. The range was checked against the blob's size.
    fn read_local(&self, index: usize, file: &BlobFile, offset: u64, length: u64) -> Result<Option<bytes::Bytes>> {
        let Some(local) = &self.local else { return Ok(None) };
        if length > LOCAL_READ_MAX || !matches!(file.kind(), BlobKind::Inline | BlobKind::Packed | BlobKind::Dedicated) {
            return Ok(None);
        }
        let Some(f) = local.file(file.data_path().as_ref()) else { return Ok(None) };
        let Some(at) = file.position().checked_add(offset) else { return Ok(None) };
        crate::cancel::Watch::current().check("the read was not started")?;
        let mut buf = vec![0u8; length as usize];
        f.read_exact_at(&mut buf, at).map_err(|e| {
            HostError::new(
                crate::error::LanceErrorCode::LANCE_ERR_IO,
                format!("cannot read blob {index} of column '{}': {e}", self.column),
            )
        })?;
        Ok(Some(bytes::Bytes::from(buf)))
    }
}
