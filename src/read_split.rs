//! Reading a split a host scans, by its kind: a scan split (whole fragments or a row slice)
//! through the scanner, a change split through change data. The one dispatch by kind for
//! scans; vector-search and full-text splits are read by `search` and `fts`, whose functions
//! name their kinds.

use crate::error::{HostError, Result};
use crate::scan::{self, BatchReader, ScanOptions};
use crate::snapshot::Snapshot;
use crate::split::{Split, SplitKind};

/// Execute a scan split (its fragments, with the given scan options) on the split's snapshot.
pub fn scan_split(snapshot: &Snapshot, split: &Split, opts: &ScanOptions) -> Result<BatchReader> {
    split.check_snapshot(snapshot)?;
    if split.kind == SplitKind::Changes {
        return crate::changes::scan_changes(snapshot, split, opts);
    }
    if split.kind != SplitKind::Scan {
        return Err(HostError::invalid(format!(
            "split kind {:?} cannot be scanned; use the vector search of splits",
            split.kind
        )));
    }
    if opts.fragment_ids.is_some() {
        return Err(HostError::invalid(
            "fragment_ids must not be set when scanning a split (the split chooses them)",
        ));
    }
    let mut opts = opts.clone();
    opts.fragment_ids = Some(split.fragment_ids.clone());
    opts.row_slice = split.rows.map(|r| (split.fragment_ids[0], r));
    scan::scan(snapshot, &opts)
}
