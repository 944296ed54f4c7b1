//! A commit checks what it commits (issue 45): shares given twice, committed after their abort,
//! resealed after a change, spliced from another table, planned at versions the table does not
//! have; an overwrite racing an append; exactly once across re-planning; SQL text that does not
//! parse completely; the error kinds of a write's failures; the counts a write reports. Every
//! refusal leaves the table as it was; pylance checks the same cases in
//! tests/python/test_commit_checks.py.

use std::sync::{Arc, Barrier};

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance::dataset::transaction::Operation;
use lance_host::ffi::dataset::*;
use lance_host::ffi::changes_by_predicate::*;
use lance_host::ffi::write::*;
use lance_host::write::staged::StagedWrite;
use lance_host::LanceErrorCode::*;

use crate::common::*;
use crate::write::{commit, ids_of, params, result, rows, stage, table_uri, write, BreaksAfterOneBatch};

const APPEND: LanceWriteMode = LanceWriteMode::LANCE_WRITE_APPEND;
const CREATE: LanceWriteMode = LanceWriteMode::LANCE_WRITE_CREATE;
const OVERWRITE: LanceWriteMode = LanceWriteMode::LANCE_WRITE_OVERWRITE;

fn table(name: &str, ids: std::ops::Range<i64>) -> (String, Ds) {
    let uri = table_uri(name);
    let (v1, _) = write(&uri, std::ptr::null(), vec![rows(ids)], &params(CREATE)).unwrap();
    (uri, v1)
}

fn version_of(uri: &str) -> u64 {
    lance_dataset_version(Ds::open(uri, 0).ptr())
}

/// The staged bytes after `change` (resealed: a valid checksum, as a buggy host or proxy would
/// produce).
fn forged(bytes: &[u8], change: impl FnOnce(&mut StagedWrite)) -> Vec<u8> {
    let mut s = StagedWrite::from_bytes(bytes).unwrap();
    change(&mut s);
    s.to_bytes().unwrap()
}

fn new_fragments(s: &mut StagedWrite) -> &mut Vec<lance_table::format::Fragment> {
    match &mut s.transaction.operation {
        Operation::Append { fragments } | Operation::Overwrite { fragments, .. } => fragments,
        other => panic!("not an append: {other}"),
    }
}

/// A merge-insert spec on the key columns `on`, Lance's defaults otherwise.
fn merge_spec(on: &CStrs) -> LanceMergeInsert {
    let mut m = std::mem::MaybeUninit::<LanceMergeInsert>::uninit();
    assert_eq!(lance_merge_insert_init_v2(m.as_mut_ptr(), std::mem::size_of::<LanceMergeInsert>()), 0);
    let mut m = unsafe { m.assume_init() };
    m.on = on.ptrs.as_ptr();
    m.num_on = on.ptrs.len();
    m
}

fn abort(staged: &[Vec<u8>]) -> u64 {
    let ptrs: Vec<*const u8> = staged.iter().map(|b| b.as_ptr()).collect();
    let lens: Vec<usize> = staged.iter().map(|b| b.len()).collect();
    let mut deleted = 0u64;
    assert_eq!(lance_staged_write_abort(ptrs.as_ptr(), lens.as_ptr(), staged.len(), std::ptr::null(), &mut deleted), 0, "{}", last_message());
    deleted
}

/// The refusal of a commit: INVALID_ARGUMENT whose message holds `needle`; the table is still at
/// `version` with `ids`.
fn refused(uri: &str, staged: &[Vec<u8>], mode: LanceWriteMode, needle: &str, version: u64, ids: &[i64]) {
    let err = commit(uri, staged, &params(mode)).err().unwrap_or_else(|| panic!("the commit must be refused ({needle})"));
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    assert!(err.1.contains(needle), "expected '{needle}' in: {}", err.1);
    let latest = Ds::open(uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), version, "nothing committed");
    assert_eq!(ids_of(&latest), ids, "the table reads as before");
}

#[test]
fn a_share_given_twice_is_refused_whatever_the_order() {
    let (uri, v1) = table("twice", 0..10);
    let a1 = stage(&uri, v1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    let a2 = stage(&uri, v1.ptr(), vec![rows(20..30)], &params(APPEND)).unwrap();
    let before: Vec<i64> = (0..10).collect();
    refused(&uri, &[a1.clone(), a1.clone()], APPEND, "is staged write 0 again", 1, &before);
    refused(&uri, &[a2.clone(), a1.clone(), a2.clone()], APPEND, "is staged write 0 again", 1, &before);
    // a splice: a share that names another share's file besides its own
    let spliced = forged(&a2, |s| {
        let other = StagedWrite::from_bytes(&a1).unwrap();
        let Operation::Append { fragments } = other.transaction.operation else { unreachable!() };
        new_fragments(s).extend(fragments);
    });
    refused(&uri, &[a1.clone(), spliced], APPEND, "is also a file of staged write 0", 1, &before);
    // the two distinct shares commit, every row once
    let (v2, r) = commit(&uri, &[a1, a2], &params(APPEND)).unwrap();
    assert_eq!((r.version, r.rows_written, r.fragments_written), (2, 20, 2));
    assert_eq!(ids_of(&v2), (0..30).collect::<Vec<_>>());
}

#[test]
fn a_share_committed_after_its_abort_is_refused_and_the_table_stays_readable() {
    let (uri, v1) = table("after_abort", 0..10);
    let s = stage(&uri, v1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    assert_eq!(abort(&[s.clone()]), 1);
    refused(&uri, &[s], APPEND, "does not exist", 1, &(0..10).collect::<Vec<_>>());
}

#[test]
fn resealed_and_foreign_shares_are_refused() {
    let (uri, v1) = table("forged", 0..10);
    let before: Vec<i64> = (0..10).collect();
    let good = stage(&uri, v1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    // a share of another table, in this table's envelope
    let (other_uri, o1) = table("forged_other", 100..110);
    let foreign = stage(&other_uri, o1.ptr(), vec![rows(200..210)], &params(APPEND)).unwrap();
    let disguised = forged(&foreign, |s| s.uri = uri.clone());
    refused(&uri, &[disguised], APPEND, "does not exist in the table's directory", 1, &before);
    // row counts that disagree with the file's footer
    refused(&uri, &[forged(&good, |s| new_fragments(s)[0].physical_rows = Some(11))], APPEND, "holds 10 rows", 1, &before);
    // field ids and columns that are not the ones the file has (0.11.0's first cut did not
    // check them, and a resealed list committed a version no reader could open)
    for (fields, columns) in [(vec![0], vec![0]), (vec![1, 0], vec![0, 1]), (vec![0, 1], vec![1, 0]), (vec![0, 5], vec![0, 1])] {
        let wrong = forged(&good, |s| {
            let f = &mut new_fragments(s)[0].files[0];
            f.fields = Arc::from(fields);
            f.column_indices = Arc::from(columns);
        });
        refused(&uri, &[wrong], APPEND, "has the columns (field id, column) [(0, 0), (1, 1)]", 1, &before);
    }
    // a format version the file is not of, or one that does not exist
    refused(&uri, &[forged(&good, |s| {
        let f = &mut new_fragments(s)[0].files[0];
        (f.file_major_version, f.file_minor_version) = (0, 3);
    })], APPEND, "is of format", 1, &before);
    refused(&uri, &[forged(&good, |s| new_fragments(s)[0].files[0].file_major_version = 9)], APPEND, "names no known format", 1, &before);
    // a file size the file does not have
    refused(&uri, &[forged(&good, |s| new_fragments(s)[0].files[0].file_size_bytes = lance_io::utils::CachedFileSize::new(1 << 30))], APPEND, "the share says 1073741824", 1, &before);
    // a path out of the data directory, a name of another file of the table
    refused(&uri, &[forged(&good, |s| new_fragments(s)[0].files[0].path = "../../forged_other.lance/data/x.lance".into())], APPEND, "not a plain file name", 1, &before);
    let committed_file = {
        let ds = lance_host::snapshot::open(&uri, Default::default(), 0).unwrap();
        ds.dataset.manifest.fragments[0].files[0].path.clone()
    };
    refused(&uri, &[forged(&good, |s| new_fragments(s)[0].files[0].path = committed_file.clone())], APPEND, "already part of version 1", 1, &before);
    // a planned version the table does not have (2^64-1 panicked the commit in 0.10.5)
    for v in [u64::MAX, u64::MAX - 1, 2] {
        refused(&uri, &[forged(&good, |s| s.planned_at = v)], APPEND, "latest version is 1", 1, &before);
    }
    // the unchanged share still commits
    let (v2, _) = commit(&uri, &[good], &params(APPEND)).unwrap();
    assert_eq!(ids_of(&v2), (0..20).collect::<Vec<_>>());
}

#[test]
fn a_committed_share_is_not_committed_again_under_any_statement_id() {
    let (uri, v1) = table("recommit", 0..10);
    let s = stage(&uri, v1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    commit(&uri, &[s.clone()], &params(APPEND)).unwrap();
    let after: Vec<i64> = (0..20).collect();
    refused(&uri, &[s.clone()], APPEND, "already part of version 2", 2, &after);
    let id = cstr("another-statement");
    let mut p = params(APPEND);
    p.statement_id = id.as_ptr();
    let err = commit(&uri, &[s.clone()], &p).err().expect("refused under a new statement id");
    assert!(err.1.contains("already part of version 2"), "{}", err.1);
    // still refused after other versions came and went (found in the transactions since the plan)
    write(&uri, std::ptr::null(), vec![rows(20..25)], &params(APPEND)).unwrap();
    let del = cstr("id >= 10 AND id < 20");
    assert_eq!(lance_dataset_delete(Ds::open(&uri, 0).ptr(), del.as_ptr(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut()), 0, "{}", last_message());
    let now: Vec<i64> = (0..10).chain(20..25).collect();
    refused(&uri, &[s], APPEND, "already part of version", 4, &now);
}

#[test]
fn a_statement_is_committed_once_across_re_planning() {
    let (uri, v1) = table("replan", 0..10);
    let id = cstr("stmt-42");
    let mut p = params(APPEND);
    p.statement_id = id.as_ptr();
    let s = stage(&uri, v1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    let (_, r) = commit(&uri, &[s], &p).unwrap();
    assert_eq!((r.version, r.committed), (2, 1));
    // other writers move the table on
    write(&uri, std::ptr::null(), vec![rows(100..105)], &params(APPEND)).unwrap();
    write(&uri, std::ptr::null(), vec![rows(105..110)], &params(APPEND)).unwrap();
    // the coordinator restarts, pins the latest version, stages the statement afresh, commits it
    let latest = Ds::open(&uri, 0);
    assert_eq!(lance_dataset_version(latest.ptr()), 4);
    let again = stage(&uri, latest.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    let (found, r) = commit(&uri, &[again.clone()], &p).unwrap();
    assert_eq!((r.version, r.committed), (2, 0), "the version that holds the statement, nothing written");
    assert_eq!(lance_dataset_version(found.ptr()), 2);
    assert_eq!(version_of(&uri), 4, "no new version");
    let mut want: Vec<i64> = (0..20).chain(100..110).collect();
    want.sort();
    assert_eq!(ids_of(&Ds::open(&uri, 0)), want, "the statement's rows once");
    // the fresh share is aborted; a new statement id commits it
    assert_eq!(abort(&[again]), 1);
}

#[test]
fn cleanup_removes_the_records_of_statements_whose_versions_it_removed() {
    use lance_host::ffi::maintenance::{lance_dataset_cleanup, lance_dataset_create_tag};
    let (uri, v1) = table("statement_cleanup", 0..10);
    let records = std::path::Path::new(&uri).join("_lance_host").join("statements");
    let commit_as = |id: &str, at: &Ds, ids: std::ops::Range<i64>| {
        let id = cstr(id);
        let mut p = params(APPEND);
        p.statement_id = id.as_ptr();
        let s = stage(&uri, at.ptr(), vec![rows(ids)], &params(APPEND)).unwrap();
        commit(&uri, &[s], &p).map(|(_, r)| (r.version, r.committed)).unwrap()
    };
    assert_eq!(commit_as("old", &v1, 10..20), (2, 1));
    write(&uri, std::ptr::null(), vec![rows(20..25)], &params(APPEND)).unwrap();
    write(&uri, std::ptr::null(), vec![rows(25..30)], &params(APPEND)).unwrap();
    let v4 = Ds::open(&uri, 0);
    assert_eq!(commit_as("new", &v4, 30..40), (5, 1));
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 2, "one record per statement");
    // version 4 is kept by a tag: the statement first planned there keeps its record
    let tag = cstr("keep");
    assert_eq!(lance_dataset_create_tag(v4.ptr(), tag.as_ptr(), 4), 0, "{}", last_message());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (mut versions, mut bytes) = (0u64, 0u64);
    assert_eq!(lance_dataset_cleanup(v4.ptr(), 0, false, &mut versions, &mut bytes), 0, "{}", last_message());
    assert_eq!(versions, 3, "versions 1-3 removed");
    let left: Vec<String> = std::fs::read_dir(&records).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    let hex = |id: &str| id.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    assert_eq!(left, vec![hex("new")], "the record of 'old' (first planned at version 1) is gone");
    // the kept record still makes a re-planned retry of 'new' find its version
    let v5 = Ds::open(&uri, 0);
    assert_eq!(commit_as("new", &v5, 30..40), (5, 0));
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..40).collect::<Vec<_>>());
}

#[test]
fn two_coordinators_committing_one_statement_at_once_commit_it_once() {
    let (uri, _) = table("statement_race", 0..10);
    let races: usize = std::env::var("LANCE_HOST_STATEMENT_RACES").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let mut want: Vec<i64> = (0..10).collect();
    for round in 0..races {
        // both coordinators planned the statement at the same version and staged it themselves
        let at = Ds::open(&uri, 0);
        let base = 1000 * (round as i64 + 1);
        let a = stage(&uri, at.ptr(), vec![rows(base..base + 4)], &params(APPEND)).unwrap();
        let b = stage(&uri, at.ptr(), vec![rows(base..base + 4)], &params(APPEND)).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let go = |bytes: Vec<u8>, barrier: Arc<Barrier>, uri: String| {
            std::thread::spawn(move || {
                let id = cstr(&format!("race-{round}"));
                let mut p = params(APPEND);
                p.statement_id = id.as_ptr();
                barrier.wait();
                commit(&uri, &[bytes], &p).map(|(_, r)| (r.version, r.committed)).map_err(|e| e.1)
            })
        };
        let ta = go(a.clone(), barrier.clone(), uri.clone());
        let tb = go(b.clone(), barrier, uri.clone());
        let (ra, rb) = (ta.join().unwrap(), tb.join().unwrap());
        let (ra, rb) = (ra.unwrap_or_else(|e| panic!("round {round}: {e}")), rb.unwrap_or_else(|e| panic!("round {round}: {e}")));
        assert_eq!(ra.0, rb.0, "round {round}: both coordinators are told the one version that holds the statement");
        assert_eq!(ra.1 + rb.1, 1, "round {round}: exactly one of them committed ({ra:?}, {rb:?})");
        // the loser's share is aborted by its coordinator
        abort(&[if ra.1 == 0 { a } else { b }]);
        want.extend(base..base + 4);
        want.sort();
        assert_eq!(ids_of(&Ds::open(&uri, 0)), want, "round {round}: the statement's rows once");
    }
}

#[test]
fn an_overwrite_never_silently_drops_a_racing_append() {
    let (uri, _) = table("overwrite_race", 0..10);
    let races: usize = std::env::var("LANCE_HOST_OVERWRITE_RACES").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let (mut overwrites_won, mut appends_won) = (0, 0);
    for round in 0..races {
        let at = Ds::open(&uri, 0);
        let base = 1000 * (round as i64 + 1);
        let ow = stage(&uri, at.ptr(), vec![rows(base..base + 5)], &params(OVERWRITE)).unwrap();
        let ap = stage(&uri, at.ptr(), vec![rows(base + 500..base + 503)], &params(APPEND)).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let go = |bytes: Vec<u8>, mode: LanceWriteMode, barrier: Arc<Barrier>, uri: String| {
            std::thread::spawn(move || {
                barrier.wait();
                commit(&uri, &[bytes], &params(mode)).map(|(_, r)| r.version).map_err(|e| e.0)
            })
        };
        let o = go(ow.clone(), OVERWRITE, barrier.clone(), uri.clone());
        let a = go(ap.clone(), APPEND, barrier, uri.clone());
        let (o, a) = (o.join().unwrap(), a.join().unwrap());
        let ids = ids_of(&Ds::open(&uri, 0));
        let appended: Vec<i64> = (base + 500..base + 503).collect();
        match (o, a) {
            (Ok(ov), Ok(av)) => {
                assert!(ov < av, "round {round}: the overwrite (v{ov}) replaced the append (v{av}) without a conflict");
                assert!(appended.iter().all(|i| ids.contains(i)), "round {round}: the append's rows are gone");
                overwrites_won += 1;
            }
            (Err(code), Ok(_)) => {
                assert_eq!(code, LANCE_ERR_CONFLICT as i32, "round {round}");
                assert!(appended.iter().all(|i| ids.contains(i)), "round {round}");
                appends_won += 1;
                abort(&[ow]);
            }
            (Ok(_), Err(code)) => {
                // an append planned before an overwrite that landed first cannot be rebased
                assert_eq!(code, LANCE_ERR_CONFLICT as i32, "round {round}");
                assert_eq!(ids, (base..base + 5).collect::<Vec<_>>(), "round {round}");
                abort(&[ap]);
                overwrites_won += 1;
            }
            (Err(o), Err(a)) => panic!("round {round}: both commits failed ({o}, {a}): {}", last_message()),
        }
    }
    assert_eq!(overwrites_won + appends_won, races);
}

#[test]
fn sql_text_must_be_one_whole_expression_on_every_write_path() {
    let (uri, v1) = table("sql_text", 0..10);
    let all: Vec<i64> = (0..10).collect();
    for (pred, needle) in [
        ("1=1; DROP TABLE t", "offset 3"),
        ("id = 1) OR (1=1", "offset 6"),
        ("id = $1", "placeholder '$1'"),
        ("$1", "placeholder"),
    ] {
        let p = cstr(pred);
        let rc = lance_dataset_delete(v1.ptr(), p.as_ptr(), std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut());
        assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, needle);
        let mut out = (std::ptr::null_mut(), 0usize);
        let rc = lance_dataset_stage_delete(v1.ptr(), std::ptr::null(), p.as_ptr(), &mut out.0, &mut out.1, std::ptr::null_mut());
        assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, needle);
    }
    for (expr, needle) in [("val + 1, id = 0", "offset"), ("$1", "placeholder")] {
        let (c, e) = (cstrs(&["id"]), cstrs(&[expr]));
        let rc = lance_dataset_update(v1.ptr(), c.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, std::ptr::null(), std::ptr::null(), &mut std::ptr::null_mut(), std::ptr::null_mut());
        assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, needle);
    }
    let (c, e, w) = (cstrs(&["id"]), cstrs(&["id + 1"]), cstr("id < 3; DROP TABLE t"));
    let rc = lance_dataset_update(v1.ptr(), c.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, w.as_ptr(), std::ptr::null(), &mut std::ptr::null_mut(), std::ptr::null_mut());
    assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, "offset 6");
    // a merge condition
    let on = cstrs(&["id"]);
    let cond = cstr("target.id > 0; DROP TABLE t");
    let mut m = merge_spec(&on);
    m.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_UPDATE_IF as i32;
    m.when_matched_condition = cond.as_ptr();
    let mut data = crate::write::stream_of(vec![rows(5..15)]);
    let rc = lance_dataset_merge_insert(v1.ptr(), &mut data, &m, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, "offset 13");
    // and reads: a scan filter with trailing text
    let mut o = default_opts();
    let f = cstr("id < 3 OR 1=1; --");
    o.filter_sql = f.as_ptr();
    let err = scan(&v1, &o).err().expect("refused");
    assert_eq!(err.0, LANCE_ERR_INVALID_ARGUMENT as i32, "{}", err.1);
    assert_eq!(version_of(&uri), 1);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), all, "nothing deleted or updated");
}

/// A host stream whose second batch has another schema than the stream's.
pub(crate) fn stream_with_a_second_schema() -> FFI_ArrowArrayStream {
    let other = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let b2 = RecordBatch::try_new(other, vec![Arc::new(Int64Array::from_iter_values(50..60))]).unwrap();
    struct Two(Vec<RecordBatch>);
    impl Iterator for Two {
        type Item = Result<RecordBatch, arrow::error::ArrowError>;
        fn next(&mut self) -> Option<Self::Item> {
            (!self.0.is_empty()).then(|| Ok(self.0.remove(0)))
        }
    }
    impl arrow::record_batch::RecordBatchReader for Two {
        fn schema(&self) -> Arc<Schema> {
            crate::write::schema()
        }
    }
    FFI_ArrowArrayStream::new(Box::new(Two(vec![rows(40..50), b2])))
}

#[test]
fn a_host_streams_failure_is_its_own_error_kind() {
    let (uri, v1) = table("host_stream", 0..10);
    let u = cstr(&uri);
    let new_uri = table_uri("host_stream_new");
    let nu = cstr(&new_uri);
    // a staged create writes into the new table's directory, which other workers share: its
    // failure leaves the directory to cleanup, so it gets a path of its own here
    let staged_new = cstr(&table_uri("host_stream_staged_new"));
    for (target, at, mode) in [(&u, v1.ptr(), APPEND), (&u, v1.ptr(), OVERWRITE), (&nu, std::ptr::null(), CREATE)] {
        let stage_target = if mode == CREATE { &staged_new } else { target };
        for broken in 0..2 {
            let mut data = if broken == 0 {
                FFI_ArrowArrayStream::new(BreaksAfterOneBatch::new(rows(20..30), false))
            } else {
                stream_with_a_second_schema()
            };
            let mut out = std::ptr::null_mut();
            let rc = lance_table_write(target.as_ptr(), at, &mut data, &params(mode), &mut out, std::ptr::null_mut());
            assert_eq!(rc, LANCE_ERR_HOST_STREAM as i32, "{mode:?}: {}", last_message());
            let msg = last_message();
            assert!(msg.contains("the host's stream failed"), "{msg}");
            assert!(msg.contains(if broken == 0 { "the source query failed" } else { "schema" }), "{msg}");
            let mut data = if broken == 0 {
                FFI_ArrowArrayStream::new(BreaksAfterOneBatch::new(rows(20..30), false))
            } else {
                stream_with_a_second_schema()
            };
            let (mut b, mut n) = (std::ptr::null_mut(), 0usize);
            let rc = lance_table_stage_write(stage_target.as_ptr(), at, &mut data, &params(mode), &mut b, &mut n, std::ptr::null_mut());
            assert_eq!(rc, LANCE_ERR_HOST_STREAM as i32, "staged {mode:?}: {}", last_message());
        }
    }
    assert_eq!(version_of(&uri), 1);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..10).collect::<Vec<_>>());
    // a failed create leaves no directory where the table was to be
    assert!(!std::path::Path::new(&new_uri).exists(), "a failed create left {new_uri}");
}

#[test]
fn a_fail_rule_that_matches_and_a_default_index_name_in_use_have_their_codes() {
    let (uri, v1) = table("codes", 0..10);
    let on = cstrs(&["id"]);
    let mut m = merge_spec(&on);
    m.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_FAIL as i32;
    let mut data = crate::write::stream_of(vec![rows(5..15)]);
    let rc = lance_dataset_merge_insert(v1.ptr(), &mut data, &m, std::ptr::null(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_err(rc, LANCE_ERR_CONFLICT, "when_matched = fail");
    assert_eq!(version_of(&uri), 1);
    // a second BTREE index on `id` under Lance's default name
    use lance_host::ffi::index_build::*;
    let col = cstr("id");
    let mut p = std::mem::MaybeUninit::<LanceScalarIndexParams>::uninit();
    assert_eq!(lance_scalar_index_params_init_v2(p.as_mut_ptr(), std::mem::size_of::<LanceScalarIndexParams>()), 0);
    let p = unsafe { p.assume_init() };
    let mut out = std::ptr::null_mut();
    assert_eq!(lance_dataset_create_scalar_index(v1.ptr(), col.as_ptr(), std::ptr::null(), false, &p, &mut out), 0, "{}", last_message());
    let v2 = Ds(out);
    let mut out = std::ptr::null_mut();
    let rc = lance_dataset_create_scalar_index(v2.ptr(), col.as_ptr(), std::ptr::null(), false, &p, &mut out);
    assert_err(rc, LANCE_ERR_INVALID_ARGUMENT, "already exists");
}

#[test]
fn updates_and_merges_report_what_the_new_version_holds() {
    let (uri, v1) = table("counts", 0..100);
    let (c, e, w) = (cstrs(&["name"]), cstrs(&["'x'"]), cstr("id < 10"));
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_update(v1.ptr(), c.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, w.as_ptr(), std::ptr::null(), &mut out, &mut r), 0, "{}", last_message());
    let v2 = Ds(out);
    let new_files = |before: u64, after: u64| {
        let files = |v: u64| {
            let s = lance_host::snapshot::open(&uri, Default::default(), v).unwrap();
            s.dataset.manifest.fragments.iter().flat_map(|f| f.files.iter().map(|x| (x.path.clone(), f.id))).collect::<Vec<_>>()
        };
        let old = files(before);
        files(after).into_iter().filter(|f| !old.iter().any(|o| o.0 == f.0)).collect::<Vec<_>>()
    };
    let added = new_files(1, 2);
    assert!(!added.is_empty());
    assert_eq!((r.rows_updated, r.files_written), (10, added.len() as u64));
    assert!(r.bytes_written > 0 && r.fragments_written >= 1 && r.rows_written >= 10, "{r:?}");
    // a merge-insert: 10 updated, 20 inserted
    let on = cstrs(&["id"]);
    let mut m = merge_spec(&on);
    m.when_matched = LanceWhenMatched::LANCE_WHEN_MATCHED_UPDATE_ALL as i32;
    let mut data = crate::write::stream_of(vec![rows(90..120)]);
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_merge_insert(v2.ptr(), &mut data, &m, std::ptr::null(), &mut out, &mut r), 0, "{}", last_message());
    let _v3 = Ds(out);
    let added = new_files(2, 3);
    let fragments: std::collections::HashSet<u64> = added.iter().map(|f| f.1).collect();
    assert_eq!((r.files_written, r.fragments_written), (added.len() as u64, fragments.len() as u64), "{r:?}");
    assert!(r.fragments_written >= 1);
}

// ---- staged-bytes fuzzer -------------------------------------------------------------------
//
// Staged bytes mutated the ways a buggy host, proxy or attacker would (flipped, truncated and
// extended bytes; resealed changes of the planned version, row counts, file names, sizes and
// field ids; splices of another table's share; swapped tables; repeated shares), each
// committed to a fresh copy of one table, in child processes (a crash or abort fails the
// parent with its seed). The verdict of every commit: refused with a code and the table as it
// was, or committed and equal to the unmutated commit. `LANCE_HOST_STAGED_FUZZ_SEEDS` (children)
// and `LANCE_HOST_STAGED_FUZZ_ITERS` (commits per child) set the size; the long run is bench/staged_fuzz.sh (50 x 50 commits: 0 failures, 42 s).

#[test]
fn staged_bytes_fuzz_commits_refuse_cleanly_or_equal_the_unmutated_commit() {
    let dir = tempfile::tempdir().unwrap().keep();
    let t = dir.join("t.lance");
    let o = dir.join("o.lance");
    let (t_uri, o_uri) = (t.to_str().unwrap().to_string(), o.to_str().unwrap().to_string());
    let (t1, _) = write(&t_uri, std::ptr::null(), vec![rows(0..10)], &params(CREATE)).unwrap();
    let (o1, _) = write(&o_uri, std::ptr::null(), vec![rows(100..110)], &params(CREATE)).unwrap();
    let good = stage(&t_uri, t1.ptr(), vec![rows(10..20)], &params(APPEND)).unwrap();
    let other = stage(&o_uri, o1.ptr(), vec![rows(200..210)], &params(APPEND)).unwrap();
    std::fs::write(dir.join("good.bin"), &good).unwrap();
    std::fs::write(dir.join("other.bin"), &other).unwrap();
    let env_num = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let seeds = env_num("LANCE_HOST_STAGED_FUZZ_SEEDS", 3);
    let iters = env_num("LANCE_HOST_STAGED_FUZZ_ITERS", 8);
    let first = env_num("LANCE_HOST_STAGED_FUZZ_SEED", 0xC0FFEE);
    for seed in first..first + seeds {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "commit_checks::child_staged_bytes_fuzz", "--ignored", "--nocapture"])
            .env("LANCE_HOST_STAGED_FUZZ_DIR", &dir)
            .env("LANCE_HOST_STAGED_FUZZ_SEED", seed.to_string())
            .env("LANCE_HOST_STAGED_FUZZ_ITERS", iters.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("CHILD-OK"),
            "staged-bytes fuzz child with seed {seed} failed ({:?}): {stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
#[ignore = "run by staged_bytes_fuzz_commits_refuse_cleanly_or_equal_the_unmutated_commit"]
fn child_staged_bytes_fuzz() {
    use rand::{Rng, SeedableRng};
    let Ok(dir) = std::env::var("LANCE_HOST_STAGED_FUZZ_DIR") else { return };
    let dir = std::path::PathBuf::from(dir);
    let seed: u64 = std::env::var("LANCE_HOST_STAGED_FUZZ_SEED").unwrap().parse().unwrap();
    let iters: u64 = std::env::var("LANCE_HOST_STAGED_FUZZ_ITERS").unwrap().parse().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let good = std::fs::read(dir.join("good.bin")).unwrap();
    let other = std::fs::read(dir.join("other.bin")).unwrap();
    let o_uri = dir.join("o.lance").to_str().unwrap().to_string();
    let committed_file = lance_host::snapshot::open(dir.join("t.lance").to_str().unwrap(), Default::default(), 0)
        .unwrap()
        .dataset
        .manifest
        .fragments[0]
        .files[0]
        .path
        .clone();
    let other_file = {
        let s = StagedWrite::from_bytes(&other).unwrap();
        let Operation::Append { fragments } = &s.transaction.operation else { unreachable!() };
        fragments[0].files[0].path.clone()
    };
    let allowed = [LANCE_ERR_INVALID_ARGUMENT, LANCE_ERR_CORRUPT, LANCE_ERR_NOT_SUPPORTED, LANCE_ERR_NOT_FOUND, LANCE_ERR_CONFLICT, LANCE_ERR_FAILED_PRECONDITION]
        .map(|c| c as i32);
    for iter in 0..iters {
        let copy = dir.join(format!("copy-{seed}-{iter}.lance"));
        crate::edges::copy_dir(&dir.join("t.lance"), &copy);
        let uri = copy.to_str().unwrap().to_string();
        // the unmutated share, addressed to the copy
        let base = forged(&good, |s| s.uri = uri.clone());
        let kind = rng.random_range(0..16);
        let shares: Vec<Vec<u8>> = match kind {
            0 => {
                let mut b = base.clone();
                let i = rng.random_range(0..b.len());
                b[i] ^= 1 << rng.random_range(0..8);
                vec![b]
            }
            1 => vec![base[..rng.random_range(0..base.len())].to_vec()],
            2 => {
                let mut b = base.clone();
                b.extend((0..rng.random_range(1..64)).map(|_| rng.random::<u8>()));
                vec![b]
            }
            3 => {
                let v = [0, 1, 2, 3, u64::MAX, u64::MAX - 1, rng.random()][rng.random_range(0..7)];
                vec![forged(&base, |s| s.planned_at = v)]
            }
            4 => {
                let n = [0, 9, 11, 1 << 40, rng.random_range(0..100)][rng.random_range(0..5)];
                vec![forged(&base, |s| new_fragments(s)[0].physical_rows = Some(n))]
            }
            5 => {
                let names = [
                    committed_file.clone(),
                    other_file.clone(),
                    format!("../../o.lance/data/{other_file}"),
                    "..".into(),
                    String::new(),
                    "x/../../y.lance".into(),
                    format!("{}.lance", rng.random::<u64>()),
                ];
                let name = names[rng.random_range(0..names.len())].clone();
                vec![forged(&base, |s| new_fragments(s)[0].files[0].path = name)]
            }
            6 => {
                let fields: Vec<i32> = (0..rng.random_range(0..4)).map(|_| rng.random_range(-2..5)).collect();
                vec![forged(&base, |s| {
                    let f = &mut new_fragments(s)[0].files[0];
                    f.column_indices = Arc::from((0..fields.len() as i32).collect::<Vec<_>>());
                    f.fields = Arc::from(fields);
                })]
            }
            7 => {
                let size = [0u64, 1, 7, 1 << 30, rng.random_range(1..100_000)][rng.random_range(0..5)];
                vec![forged(&base, |s| {
                    new_fragments(s)[0].files[0].file_size_bytes = lance_io::utils::CachedFileSize::new(size);
                })]
            }
            8 => vec![forged(&base, |s| {
                let f = new_fragments(s)[0].clone();
                new_fragments(s).push(f);
            })],
            9 => {
                let theirs = StagedWrite::from_bytes(&other).unwrap();
                vec![forged(&base, |s| {
                    let Operation::Append { fragments } = theirs.transaction.operation else { unreachable!() };
                    new_fragments(s).extend(fragments);
                })]
            }
            10 => vec![forged(&base, |s| s.uri = o_uri.clone())],
            11 => {
                let (d, u, i) = (rng.random(), rng.random(), rng.random());
                vec![forged(&base, |s| {
                    s.counts.deleted = d;
                    s.counts.updated = u;
                    s.counts.inserted = i;
                })]
            }
            12 => {
                let id = rng.random();
                vec![forged(&base, |s| new_fragments(s)[0].id = id)]
            }
            13 => vec![base.clone(); rng.random_range(2..4)],
            14 => vec![forged(&base, |s| new_fragments(s)[0].files.clear())],
            _ => {
                let id = rng.random_range(0..5);
                vec![forged(&base, |s| {
                    new_fragments(s)[0].deletion_file = Some(lance_table::format::DeletionFile {
                        read_version: 1,
                        id,
                        file_type: lance_table::format::DeletionFileType::Array,
                        num_deleted_rows: Some(1),
                        base_id: None,
                    })
                })]
            }
        };
        let verdict = commit(&uri, &shares, &params(APPEND));
        let latest = Ds::open(&uri, 0);
        let ids = ids_of(&latest);
        match verdict {
            Ok(_) => assert_eq!(ids, (0..20).collect::<Vec<_>>(), "seed {seed} iter {iter} kind {kind}: committed, but not as the unmutated share"),
            Err((code, msg)) => {
                assert!(allowed.contains(&code), "seed {seed} iter {iter} kind {kind}: code {code}: {msg}");
                assert!(!msg.is_empty());
                assert_eq!(lance_dataset_version(latest.ptr()), 1, "seed {seed} iter {iter} kind {kind}: refused but committed: {msg}");
                assert_eq!(ids, (0..10).collect::<Vec<_>>(), "seed {seed} iter {iter} kind {kind}");
            }
        }
        let _ = std::fs::remove_dir_all(&copy);
    }
    println!("CHILD-OK");
}

/// A staged delete of `predicate` over the whole table at `at`, as bytes.
fn stage_delete_bytes(at: &Ds, predicate: &str) -> Vec<u8> {
    let p = cstr(predicate);
    let (mut out, mut len) = (std::ptr::null_mut(), 0usize);
    assert_eq!(lance_dataset_stage_delete(at.ptr(), std::ptr::null(), p.as_ptr(), &mut out, &mut len, std::ptr::null_mut()), 0, "{}", last_message());
    let bytes = unsafe { std::slice::from_raw_parts(out, len) }.to_vec();
    lance_host::ffi::split::lance_bytes_free(out, len);
    bytes
}

fn updated(s: &mut StagedWrite) -> &mut Vec<lance_table::format::Fragment> {
    match &mut s.transaction.operation {
        Operation::Delete { updated_fragments, .. } => updated_fragments,
        other => panic!("not a delete: {other}"),
    }
}

#[test]
fn forged_staged_deletes_are_refused() {
    let uri = table_uri("forged_delete");
    write(&uri, std::ptr::null(), vec![rows(0..10)], &params(CREATE)).unwrap();
    let (v2, _) = write(&uri, std::ptr::null(), vec![rows(10..20)], &params(APPEND)).unwrap();
    let before: Vec<i64> = (0..20).collect();
    let good = stage_delete_bytes(&v2, "id % 2 = 0");
    let other_fragment_file = {
        let s = lance_host::snapshot::open(&uri, Default::default(), 0).unwrap();
        s.dataset.manifest.fragments[1].files.clone()
    };
    let delete = LanceWriteMode::LANCE_WRITE_APPEND; // the kind comes from the bytes
    // a fragment the planned version does not have
    refused(&uri, &[forged(&good, |s| updated(s)[0].id = 77)], delete, "which version 2 of the table does not have", 2, &before);
    // a delete that swaps a fragment's data files for another fragment's
    refused(&uri, &[forged(&good, |s| updated(s)[0].files = other_fragment_file.clone())], delete, "changes the data files of fragment 0", 2, &before);
    // a deletion file whose count is not the file's
    refused(&uri, &[forged(&good, |s| updated(s)[0].deletion_file.as_mut().unwrap().num_deleted_rows = Some(3))], delete, "deletes 5 rows, the share says 3", 2, &before);
    // a deletion file that is not there
    refused(&uri, &[forged(&good, |s| updated(s)[0].deletion_file.as_mut().unwrap().id += 1)], delete, "does not exist", 2, &before);
    // the same fragment changed twice in one share
    refused(&uri, &[forged(&good, |s| {
        let f = updated(s)[0].clone();
        updated(s).push(f);
    })], delete, "in two staged deletes", 2, &before);
    // the real share commits: the even ids go
    let (v3, _) = commit(&uri, &[good.clone()], &params(delete)).unwrap();
    assert_eq!(ids_of(&v3), (0..20).filter(|i| i % 2 == 1).collect::<Vec<_>>());
    // and is not committed again
    refused(&uri, &[good], delete, "already part of version 3", 3, &(0..20).filter(|i| i % 2 == 1).collect::<Vec<_>>());
}

#[test]
fn a_rebased_update_counts_only_its_own_files() {
    // planned at version 1; another writer appends (version 2); the update is rebased over it
    // (version 3) and must not count the append's file as its own
    let (uri, v1) = table("rebased_counts", 0..100);
    write(&uri, std::ptr::null(), vec![rows(100..150)], &params(APPEND)).unwrap();
    let (c, e, w) = (cstrs(&["name"]), cstrs(&["'x'"]), cstr("id < 10"));
    let (mut out, mut r) = (std::ptr::null_mut(), result());
    assert_eq!(lance_dataset_update(v1.ptr(), c.ptrs.as_ptr(), e.ptrs.as_ptr(), 1, w.as_ptr(), std::ptr::null(), &mut out, &mut r), 0, "{}", last_message());
    let _v3 = Ds(out);
    assert_eq!(r.version, 3);
    let files = |v: u64| -> Vec<String> {
        let s = lance_host::snapshot::open(&uri, Default::default(), v).unwrap();
        s.dataset.manifest.fragments.iter().flat_map(|f| f.files.iter().map(|x| x.path.clone())).collect()
    };
    let (v2_files, v3_files) = (files(2), files(3));
    let own: Vec<&String> = v3_files.iter().filter(|f| !v2_files.contains(f)).collect();
    assert_eq!(r.files_written, own.len() as u64, "{r:?}: the append's file is not the update's");
    assert_eq!(r.rows_updated, 10);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), (0..150).collect::<Vec<_>>());
}

/// `bytes` (sealed as lance-host seals task and result bytes: magic, format, uri and JSON
/// blobs, crc32) with its JSON changed by `change`, resealed.
fn reseal_json(bytes: &[u8], change: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let body = &bytes[5..bytes.len() - 4];
    let ulen = u32::from_le_bytes(body[..4].try_into().unwrap()) as usize;
    let uri = &body[4..4 + ulen];
    let jlen = u32::from_le_bytes(body[4 + ulen..8 + ulen].try_into().unwrap()) as usize;
    let mut json: serde_json::Value = serde_json::from_slice(&body[8 + ulen..8 + ulen + jlen]).unwrap();
    change(&mut json);
    let json = serde_json::to_vec(&json).unwrap();
    let mut out = bytes[..5].to_vec();
    out.extend_from_slice(&(uri.len() as u32).to_le_bytes());
    out.extend_from_slice(uri);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn forged_compaction_results_are_refused() {
    use lance_host::write::compaction::{commit as commit_compaction, execute_task, plan, CompactOptions};
    let uri = table_uri("forged_compaction");
    write(&uri, std::ptr::null(), vec![rows(0..50)], &params(CREATE)).unwrap();
    for i in 1..4 {
        write(&uri, std::ptr::null(), vec![rows(i * 50..i * 50 + 50)], &params(APPEND)).unwrap();
    }
    let at = lance_host::snapshot::open(&uri, Default::default(), 0).unwrap();
    let options = CompactOptions { target_rows_per_fragment: Some(1000), ..Default::default() };
    let tasks = plan(&at, &options).unwrap();
    assert_eq!(tasks.len(), 1, "one task merges the four fragments");
    let result = execute_task(&at, &tasks[0]).unwrap();
    let all: Vec<i64> = (0..200).collect();
    let check_refused = |forged: Vec<u8>, needle: &str| {
        let err = commit_compaction(&at, &[&forged], &options).err().unwrap_or_else(|| panic!("must be refused: {needle}"));
        assert_eq!(err.code, LANCE_ERR_INVALID_ARGUMENT, "{}", err.message);
        assert!(err.message.contains(needle) && err.message.starts_with("compaction result 0"), "expected '{needle}' in: {}", err.message);
        assert_eq!(version_of(&uri), 4);
        assert_eq!(ids_of(&Ds::open(&uri, 0)), all);
    };
    let committed_file = at.dataset.manifest.fragments[0].files[0].path.clone();
    // the new fragment points at a file the table already holds (its rows would appear twice)
    check_refused(reseal_json(&result, |j| j["new_fragments"][0]["files"][0]["path"] = committed_file.clone().into()), "already part of version");
    // a file that does not exist
    check_refused(reseal_json(&result, |j| j["new_fragments"][0]["files"][0]["path"] = "gone.lance".into()), "does not exist");
    // rows that are not the replaced fragments' rows
    check_refused(reseal_json(&result, |j| j["new_fragments"][0]["physical_rows"] = 150.into()), "hold 150 rows");
    // the real result commits, every row once
    let (done, _) = commit_compaction(&at, &[&result], &options).unwrap();
    assert_eq!(done.dataset.manifest.fragments.len(), 1);
    assert_eq!(ids_of(&Ds::open(&uri, 0)), all);
}
