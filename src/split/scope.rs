//! What a handle opened from a snapshot token may read: the whole pinned table (a full token),
//! or only the scan splits of the fragments a split-scoped token carries.
//!
//! A split-scoped token holds the pinned manifest cut down to one split's fragments, so a worker
//! ships and opens bytes in proportion to its split rather than to the table. The handle it
//! opens sees only those fragments: a count, a scan or a search of the whole table on it would
//! answer for part of the table as if it were all of it. Every whole-table call therefore asks
//! the scope first and is refused; split calls are let through for scan splits inside it.

use crate::error::{HostError, Result};
use crate::snapshot::Snapshot;
use crate::split::{Split, SplitKind};

/// The reach of a handle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// The whole pinned table.
    #[default]
    Whole,
    /// Only scan splits of these fragments (sorted, distinct).
    Fragments(Vec<u64>),
}

impl Scope {
    /// The reach of a handle opened from a token that carries `fragments` (None: a full token;
    /// `crate::snapshot::open_token`).
    pub fn of_token(fragments: Option<Vec<u64>>) -> Scope {
        fragments.map_or(Scope::Whole, Scope::Fragments)
    }

    /// Whole-table work: refused on a split-scoped handle.
    pub fn check_whole(&self) -> Result<()> {
        match self {
            Scope::Whole => Ok(()),
            Scope::Fragments(ids) => Err(HostError::invalid(format!(
                "this dataset was opened from a split-scoped snapshot token (fragments {}): it reads \
                 scan splits of those fragments only; whole-table work needs a full snapshot token \
                 (lance_dataset_export_snapshot)",
                list(ids)
            ))),
        }
    }

    /// Work on `split`: any split on a whole handle; on a split-scoped handle, a scan split
    /// whose fragments the token carries.
    pub fn check_split(&self, split: &Split) -> Result<()> {
        let Scope::Fragments(ids) = self else { return Ok(()) };
        if split.kind != SplitKind::Scan {
            return Err(HostError::invalid(format!(
                "a {:?} split cannot run on a dataset opened from a split-scoped snapshot token, \
                 which carries scan splits only; open a full snapshot token for it",
                split.kind
            )));
        }
        if let Some(missing) = split.fragment_ids.iter().find(|f| ids.binary_search(f).is_err()) {
            return Err(HostError::invalid(format!(
                "the split reads fragment {missing}, which the split-scoped snapshot token of this \
                 dataset does not carry (fragments {})",
                list(ids)
            )));
        }
        Ok(())
    }
}

/// The split-scoped snapshot token of scan split `split` of `snapshot`, exported through a
/// handle of reach `scope`: the snapshot's token with the manifest cut down to the split's
/// fragments. Only scan splits (whole fragments or a row slice) get one: search, full-text and
/// change splits read index metadata, corpus statistics or other versions that reach beyond
/// their fragments.
pub fn export_split_token(snapshot: &Snapshot, scope: &Scope, split: &Split) -> Result<Vec<u8>> {
    split.check_snapshot(snapshot)?;
    scope.check_split(split)?;
    if split.kind != SplitKind::Scan {
        return Err(HostError::not_supported(format!(
            "split-scoped snapshot tokens are made for scan splits only, not for a {:?} split; \
             ship the full token (lance_dataset_export_snapshot) with it",
            split.kind
        )));
    }
    let mut ids = split.fragment_ids.clone();
    ids.sort_unstable();
    ids.dedup();
    snapshot.export_fragments_token(&ids)
}

fn list(ids: &[u64]) -> String {
    const SHOWN: usize = 8;
    let mut s = ids.iter().take(SHOWN).map(u64::to_string).collect::<Vec<_>>().join(", ");
    if ids.len() > SHOWN {
        s.push_str(&format!(", ... {} in all", ids.len()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::LanceErrorCode::LANCE_ERR_INVALID_ARGUMENT;

    fn split(kind: SplitKind, fragments: &[u64]) -> Split {
        Split {
            uri: "t".into(),
            version: 1,
            kind,
            fragment_ids: fragments.to_vec(),
            segments: vec![],
            column: String::new(),
            index_name: String::new(),
            metric: None,
            row_count: 1,
            rows: None,
            changes: None,
        }
    }

    #[test]
    fn a_scoped_handle_runs_scan_splits_of_its_fragments_only() {
        let scope = Scope::Fragments(vec![2, 5]);
        assert!(scope.check_split(&split(SplitKind::Scan, &[5])).is_ok());
        assert!(scope.check_split(&split(SplitKind::Scan, &[2, 5])).is_ok());
        let outside = scope.check_split(&split(SplitKind::Scan, &[2, 3])).unwrap_err();
        assert_eq!(outside.code, LANCE_ERR_INVALID_ARGUMENT);
        assert!(outside.message.contains("fragment 3"), "{}", outside.message);
        let flat = scope.check_split(&split(SplitKind::Flat, &[2])).unwrap_err();
        assert!(flat.message.contains("scan splits only"), "{}", flat.message);
        let whole = scope.check_whole().unwrap_err();
        assert!(whole.message.contains("fragments 2, 5"), "{}", whole.message);
        assert!(Scope::Whole.check_whole().is_ok());
        assert!(Scope::Whole.check_split(&split(SplitKind::Flat, &[7])).is_ok());
    }

    #[test]
    fn long_fragment_lists_are_cut_in_messages() {
        let err = Scope::Fragments((0..100).collect()).check_whole().unwrap_err();
        assert!(err.message.contains("0, 1, 2, 3, 4, 5, 6, 7, ... 100 in all"), "{}", err.message);
    }
}
