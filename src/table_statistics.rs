//! Planner statistics of a pinned snapshot: per fragment its physical rows, deleted rows and
//! bytes on disk; per column its bytes on disk. Each figure is exact or marked absent.
//!
//! Row counts and file sizes come from the manifest (no data read). Column sizes come from the
//! data files' own metadata (Lance's `calculate_data_stats`: one footer read per data file,
//! no data pages). Lance 14 keeps no null counts and no exact minimum or maximum per column,
//! so the library reports none rather than guess them.

use std::collections::HashMap;

use lance::dataset::statistics::DatasetStatisticsExt;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::{IoStats, OpStats};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentStatistics {
    pub id: u64,
    pub physical_rows: u64,
    pub deleted_rows: u64,
    /// Sum of the fragment's data file sizes; None when the manifest lacks one of them.
    pub bytes_on_disk: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnStatistics {
    /// Top-level column name.
    pub name: String,
    /// Bytes of the column (with its nested fields) in the data files, after encoding; None
    /// for files of the legacy (v1) format, which do not record it.
    pub bytes_on_disk: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStatistics {
    pub fragments: Vec<FragmentStatistics>,
    pub columns: Vec<ColumnStatistics>,
}

pub fn statistics(snapshot: &Snapshot) -> Result<(TableStatistics, IoStats)> {
    crate::metrics::op(crate::metrics::Op::Statistics);
    let stats = OpStats::default();
    let ds = stats.dataset(snapshot);
    let infos = snapshot.fragments_on(ds.clone())?;
    let manifest_frags = snapshot.dataset.fragments();
    let fragments = infos
        .iter()
        .map(|f| {
            let files = manifest_frags.iter().find(|m| m.id == f.id).map(|m| &m.files);
            let bytes_on_disk = files.and_then(|files| {
                files
                    .iter()
                    .map(|d| d.file_size_bytes.get().map(|n| n.get()))
                    .sum::<Option<u64>>()
            });
            FragmentStatistics {
                id: f.id,
                physical_rows: f.physical_rows,
                deleted_rows: f.deleted_rows,
                bytes_on_disk,
            }
        })
        .collect();
    let legacy = snapshot.storage_format().starts_with('0');
    let data = session::block_on(async move { ds.calculate_data_stats().await })?
        .map_err(|e| HostError::from_lance("cannot read column sizes", e))?;
    let by_field: HashMap<u32, u64> = data.fields.iter().map(|f| (f.id, f.bytes_on_disk)).collect();
    let schema = snapshot.dataset.schema();
    let columns = schema
        .fields
        .iter()
        .map(|field| {
            let mut total = 0u64;
            let mut stack = vec![field];
            while let Some(f) = stack.pop() {
                total += by_field.get(&(f.id as u32)).copied().unwrap_or(0);
                stack.extend(f.children.iter());
            }
            ColumnStatistics {
                name: field.name.clone(),
                bytes_on_disk: (!legacy).then_some(total),
            }
        })
        .collect();
    Ok((TableStatistics { fragments, columns }, stats.snapshot()))
}
