//! Row-level changes by row address: the write side of an engine's UPDATE, DELETE and MERGE
//! that read the rows they change (with `_rowaddr`) and then say what happens to each one.
//!
//! A worker stages the addresses of the rows it deletes (`stage_row_deletes`: no I/O, the
//! addresses travel in the staged bytes) and, for the rows it writes instead (an update's new
//! values, a merge's inserts), an ordinary staged append planned at the same version. The
//! coordinator commits all of them together: the addresses of every share are merged per
//! fragment into one new deletion file each (`resolve`), and the appended fragments are added,
//! as ONE Lance update in one version. Lance is told exactly which rows the change touched, so
//! a concurrent commit that deleted or changed other rows of the same fragments is rebased over,
//! and one that changed any of the same rows makes this commit fail with a conflict (two
//! updates of one row never both land).

use std::collections::{BTreeMap, HashMap};

use futures::StreamExt;
use lance::dataset::transaction::{Operation, TransactionBuilder, UpdateMode};
use lance::Dataset;
use lance_select::RowAddrTreeMap;
use lance_table::format::Fragment;

use super::staged::{RowCounts, StagedKind, StagedWrite};
use crate::error::{HostError, Result};
use crate::snapshot::Snapshot;

/// Fragments whose deletion files one commit writes at a time.
const PARALLEL_FRAGMENTS: usize = 8;

fn split_address(addr: u64) -> (u64, u32) {
    (addr >> 32, (addr & 0xFFFF_FFFF) as u32)
}

/// The physical row counts of a version's fragments, by fragment id.
struct Fragments {
    version: u64,
    rows: HashMap<u64, Option<usize>>,
}

impl Fragments {
    fn of(ds: &Dataset) -> Self {
        Fragments {
            version: ds.version().version,
            rows: ds.manifest.fragments.iter().map(|f| (f.id, f.physical_rows)).collect(),
        }
    }
}

/// An address checked against a version: its fragment is in the version and the row offset is
/// below the fragment's physical row count.
fn check_address(fragments: &Fragments, addr: u64) -> std::result::Result<(), String> {
    let (fragment, offset) = split_address(addr);
    let Some(rows) = fragments.rows.get(&fragment) else {
        return Err(format!(
            "row address {addr} points into fragment {fragment}, which version {} of the table does not have",
            fragments.version
        ));
    };
    match *rows {
        Some(n) if (offset as usize) < n => Ok(()),
        Some(n) => Err(format!("row address {addr} is row {offset} of fragment {fragment}, which has {n} rows")),
        None => Err(format!("fragment {fragment} has no row count (a table written by a very old Lance)")),
    }
}

/// Stage the deletion of the rows at `addresses` (`_rowaddr` values read from `at`) without
/// committing and without writing anything: the share carries the addresses, and the commit
/// turns the addresses of all shares into deletion files. Addresses outside `at`'s fragments or
/// given twice are LANCE_ERR_INVALID_ARGUMENT. No addresses is a share that deletes nothing (a
/// worker whose rows were all inserts).
pub fn stage_row_deletes(at: &Snapshot, addresses: &[u64]) -> Result<StagedWrite> {
    crate::metrics::op(crate::metrics::Op::Write);
    let uri = at.uri().to_string();
    let mut sorted = addresses.to_vec();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        return Err(HostError::invalid(format!("row address {} is given twice: a row is deleted once", w[0])));
    }
    // addresses are sorted: the largest of each fragment decides whether all of its are in range
    let mut largest: BTreeMap<u64, u64> = BTreeMap::new();
    for &addr in &sorted {
        largest.insert(split_address(addr).0, addr);
    }
    let fragments = Fragments::of(&at.dataset);
    for &addr in largest.values() {
        check_address(&fragments, addr).map_err(|why| HostError::invalid(format!("cannot stage row deletes of table '{uri}': {why}")))?;
    }
    let operation = Operation::Delete {
        updated_fragments: Vec::new(),
        deleted_fragment_ids: Vec::new(),
        predicate: String::new(),
    };
    Ok(StagedWrite {
        uri,
        kind: StagedKind::RowDeletes,
        planned_at: at.version(),
        counts: RowCounts {
            deleted: sorted.len() as u64,
            ..Default::default()
        },
        transaction: TransactionBuilder::new(at.version(), operation).build(),
        row_addresses: sorted,
    })
}

/// What the row deletes of one commit come to on the version they were planned at.
pub(crate) struct Resolved {
    /// The update: the fragments with new deletion files, the fragments all of whose rows are
    /// now deleted, and the appended fragments.
    pub operation: Operation,
    /// Every row the commit deletes (Lance's conflict check and rebase use it).
    pub affected: RowAddrTreeMap,
}

/// Merge the row deletes of `staged` per fragment and write one deletion file per fragment on
/// `planned` (the version every share was planned at); `new_fragments` are the appended rows.
/// Refuses (LANCE_ERR_INVALID_ARGUMENT, nothing written) an address two shares delete, an
/// address outside the planned version, and a row the planned version has already deleted —
/// each would make the commit delete other rows than the engine read. `written` gets the
/// deletion files written (relative to the table's root), also on failure: the caller deletes
/// them when the commit does not land.
pub(crate) async fn resolve(
    planned: &Dataset,
    staged: &[StagedWrite],
    new_fragments: Vec<Fragment>,
    written: &mut Vec<String>,
) -> Result<Resolved> {
    let refuse = |share: usize, why: String| HostError::invalid(format!("staged write {share} is refused: {why}; nothing was committed"));
    let fragments = Fragments::of(planned);
    let mut by_fragment: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut owner: HashMap<u64, usize> = HashMap::new();
    for (share, s) in staged.iter().enumerate() {
        for &addr in &s.row_addresses {
            if let Some(first) = owner.insert(addr, share) {
                return Err(refuse(
                    share,
                    if first == share {
                        format!("it deletes row address {addr} twice")
                    } else {
                        format!("it deletes row address {addr}, which staged write {first} also deletes (a row is deleted by one share; the same share twice?)")
                    },
                ));
            }
            check_address(&fragments, addr).map_err(|why| refuse(share, why))?;
            let (fragment, offset) = split_address(addr);
            by_fragment.entry(fragment).or_default().push(offset);
        }
    }
    let affected: RowAddrTreeMap = owner.keys().copied().collect();
    let mut jobs = Vec::with_capacity(by_fragment.len());
    for (id, offsets) in by_fragment {
        let f = usize::try_from(id)
            .ok()
            .and_then(|i| planned.get_fragment(i))
            .ok_or_else(|| HostError::internal(format!("fragment {id} was checked but cannot be opened")))?;
        jobs.push((f, offsets));
    }
    let version = planned.version().version;
    // First read every deletion vector: a row already deleted is refused before anything is written.
    let existing = futures::stream::iter(jobs.iter().map(|(f, _)| f.get_deletion_vector()))
        .buffered(PARALLEL_FRAGMENTS)
        .collect::<Vec<_>>()
        .await;
    for ((f, offsets), dv) in jobs.iter().zip(existing) {
        let dv = dv.map_err(|e| HostError::from_lance(&format!("cannot read the deletions of fragment {}", f.id()), e))?;
        if let Some(dv) = dv {
            if let Some(o) = offsets.iter().find(|o| dv.contains(**o)) {
                let addr = ((f.id() as u64) << 32) | u64::from(*o);
                let share = owner.get(&addr).copied().unwrap_or(0);
                return Err(refuse(
                    share,
                    format!("row address {addr} (row {o} of fragment {}) is already deleted in version {version}: it was not read from that version", f.id()),
                ));
            }
        }
    }
    let results = futures::stream::iter(jobs.into_iter().map(|(f, offsets)| async move {
        let id = f.id() as u64;
        f.extend_deletions(offsets).await.map(|r| (id, r.map(|f| f.metadata().clone())))
    }))
    .buffer_unordered(PARALLEL_FRAGMENTS)
    .collect::<Vec<_>>()
    .await;
    let mut updated = Vec::new();
    let mut removed = Vec::new();
    let mut failure = None;
    for r in results {
        match r {
            Ok((_, Some(fragment))) => {
                if let Some(df) = &fragment.deletion_file {
                    written.push(lance_table::io::deletion::relative_deletion_file_path(fragment.id, df));
                }
                updated.push(fragment);
            }
            Ok((id, None)) => removed.push(id),
            Err(e) => failure = Some(e),
        }
    }
    if let Some(e) = failure {
        return Err(HostError::from_lance("cannot write the deletion files of the row deletes", e));
    }
    updated.sort_by_key(|f| f.id);
    removed.sort_unstable();
    Ok(Resolved {
        operation: Operation::Update {
            removed_fragment_ids: removed,
            updated_fragments: updated,
            new_fragments,
            fields_modified: Vec::new(),
            compacted_sstables: Vec::new(),
            fields_for_preserving_frag_bitmap: Vec::new(),
            update_mode: Some(UpdateMode::RewriteRows),
            inserted_rows_filter: None,
            updated_fragment_offsets: None,
        },
        affected,
    })
}
