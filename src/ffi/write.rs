//! C ABI of writes: whole writes, staged writes (a worker's rows or row deletes) and their commit or abort.

use std::ffi::c_char;
use std::time::Duration;

use arrow::ffi_stream::FFI_ArrowArrayStream;

use crate::error::{HostError, Result};
use crate::write::staged::{self, StagedWrite};
use crate::write::changes_by_address;
use crate::write::preconditions::Preconditions;
use crate::write::{committer, table, WriteMode, WriteOptions, WriteSummary};

use super::handles::LanceDataset;
use super::scan::import_stream;
use super::sized::{init_out, out_slot, read_in, Extensible, Layout};
use super::{
    byte_list_arg, dataset_out, guard_code, handle_ref, into_array, kv_arg, opt_str_arg, out_arg, slice_arg,
    str_arg, str_list_arg,
};

/// What a write does (`LanceWriteParams.mode`).
#[repr(i32)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanceWriteMode {
    /// A new table; LANCE_ERR_INVALID_ARGUMENT if it exists.
    LANCE_WRITE_CREATE = 0,
    /// Rows added after the existing ones.
    LANCE_WRITE_APPEND = 1,
    /// A new version that holds only the written rows (the table is created if missing).
    LANCE_WRITE_OVERWRITE = 2,
}

/// Settings of a write, a staged write, a commit or a delete. Initialize with
/// `lance_write_params_init_v2(&p, sizeof p)`; 0 / NULL fields mean Lance's default. Since 0.6.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceWriteParams {
    /// `sizeof(LanceWriteParams)` as the caller compiled it (set by the init function).
    pub struct_size: usize,
    /// A `LanceWriteMode` (default LANCE_WRITE_CREATE).
    pub mode: i32,
    /// Commit retries after concurrent commits Lance can rebase over: 0 = Lance's default
    /// (20), negative = none.
    pub commit_retries: i32,
    /// Rows per data file (0 = Lance's default, 1,048,576).
    pub max_rows_per_file: u64,
    /// Rows per row group (0 = Lance's default, 1,024).
    pub max_rows_per_group: u64,
    /// Bytes per data file (0 = Lance's default, 90 GB).
    pub max_bytes_per_file: u64,
    /// Data storage format of a new table: "2.0", "2.1", "2.2", "stable" or "next"; NULL =
    /// Lance's default. An existing table keeps its format.
    pub storage_version: *const c_char,
    /// NULL-terminated key/value storage options (as for `lance_dataset_open`); NULL = none.
    pub storage_options: *const *const c_char,
    /// Commit message (stored as pylance stores one); NULL = none.
    pub commit_message: *const c_char,
    /// NULL-terminated key/value transaction properties stored with the commit; NULL = none.
    pub transaction_properties: *const *const c_char,
    /// Exactly-once key of a commit (e.g. the engine's query id): committing staged writes
    /// whose statement was already committed since they were planned returns that version and
    /// writes nothing. NULL = none.
    pub statement_id: *const c_char,
    /// Time budget of the commit's retries in milliseconds (0 = Lance's default, 30 s).
    pub retry_timeout_ms: u64,
    /// Since 0.14. The commit lands only as version `expected_version + 1`: the table must
    /// still be at `expected_version` when the new version is written (checked atomically with
    /// the write, nothing rebased), else LANCE_ERR_CONFLICT and nothing is committed. 0 = no
    /// such requirement. Honoured by `lance_table_write`, `lance_table_commit`,
    /// `lance_dataset_delete`, `lance_dataset_update`, `lance_dataset_merge_insert` and
    /// `lance_dataset_update_config`; a staged write or a create refuses it.
    pub expected_version: u64,
    /// Since 0.14. NULL-terminated key/value pairs the table's config (`lance_dataset_config`,
    /// pylance's `config()`) must hold at the version the commit lands on, e.g. a fencing token
    /// of the job allowed to commit; else LANCE_ERR_FAILED_PRECONDITION and nothing is
    /// committed. Checked atomically with the write, like `expected_version`. NULL = none.
    pub required_config: *const *const c_char,
    /// Since 0.14. 1: a new table (a create, or an overwrite that creates) keeps stable row ids,
    /// and with them the row versions change data needs (`lance_dataset_plan_changes`; pylance's
    /// `enable_stable_row_ids=True`). 0 = Lance's default (off); an existing table keeps its
    /// setting. Other values are LANCE_ERR_INVALID_ARGUMENT.
    pub stable_row_ids: u32,
}

impl Default for LanceWriteParams {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            mode: LanceWriteMode::LANCE_WRITE_CREATE as i32,
            commit_retries: 0,
            max_rows_per_file: 0,
            max_rows_per_group: 0,
            max_bytes_per_file: 0,
            storage_version: std::ptr::null(),
            storage_options: std::ptr::null(),
            commit_message: std::ptr::null(),
            transaction_properties: std::ptr::null(),
            statement_id: std::ptr::null(),
            retry_timeout_ms: 0,
            expected_version: 0,
            required_config: std::ptr::null(),
            stable_row_ids: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer and pointer fields. It has no 0.1
// layout (V0_SIZE is never used).
unsafe impl Extensible for LanceWriteParams {
    const NAME: &'static str = "LanceWriteParams";
    const MIN_SIZE: usize = 88;
    const V0_SIZE: usize = 80;
    fn initial() -> Self {
        Self::default()
    }
}

/// What a write did (`lance_table_write` and the others fill it when given). Set
/// `struct_size = sizeof(LanceWriteResult)` first. Since 0.6.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LanceWriteResult {
    /// `sizeof(LanceWriteResult)` as the caller compiled it (set by the caller).
    pub struct_size: usize,
    /// The version committed (or found, see `committed`); 0 for a staged write.
    pub version: u64,
    /// Rows written into new data files.
    pub rows_written: u64,
    /// Fragments written.
    pub fragments_written: u64,
    /// Data files written.
    pub files_written: u64,
    /// Bytes of those data files.
    pub bytes_written: u64,
    /// Rows deleted (a delete; a merge-insert's matched or unmatched-by-source deletes).
    pub rows_deleted: u64,
    /// Rows updated (an update; a merge-insert's matched rows replaced).
    pub rows_updated: u64,
    /// Rows inserted (a merge-insert's unmatched source rows).
    pub rows_inserted: u64,
    /// 1 when this call committed a new version; 0 for a staged write and for a commit whose
    /// statement id was already committed (`version` is then the version that holds it).
    pub committed: u8,
}

impl Default for LanceWriteResult {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>(),
            version: 0,
            rows_written: 0,
            fragments_written: 0,
            files_written: 0,
            bytes_written: 0,
            rows_deleted: 0,
            rows_updated: 0,
            rows_inserted: 0,
            committed: 0,
        }
    }
}

// SAFETY: repr(C), leading struct_size, alignment 8, integer fields. It has no 0.1 layout.
unsafe impl Extensible for LanceWriteResult {
    const NAME: &'static str = "LanceWriteResult";
    const MIN_SIZE: usize = 80;
    const V0_SIZE: usize = 72;
    fn initial() -> Self {
        Self::default()
    }
}

impl From<WriteSummary> for LanceWriteResult {
    fn from(s: WriteSummary) -> Self {
        Self {
            version: s.version,
            rows_written: s.rows_written,
            fragments_written: s.fragments_written,
            files_written: s.files_written,
            bytes_written: s.bytes_written,
            rows_deleted: s.rows_deleted,
            rows_updated: s.rows_updated,
            rows_inserted: s.rows_inserted,
            committed: u8::from(s.committed),
            ..Default::default()
        }
    }
}

pub(super) fn params_arg(p: *const LanceWriteParams) -> Result<WriteOptions> {
    let p = read_in(p, Layout::Sized, "params")?.unwrap_or_default();
    let mode = match p.mode {
        0 => WriteMode::Create,
        1 => WriteMode::Append,
        2 => WriteMode::Overwrite,
        m => {
            return Err(HostError::invalid(format!(
                "params->mode {m} is not a LanceWriteMode (0 create, 1 append, 2 overwrite)"
            )))
        }
    };
    let positive = |v: u64| (v > 0).then_some(v);
    Ok(WriteOptions {
        mode,
        max_rows_per_file: positive(p.max_rows_per_file),
        max_rows_per_group: positive(p.max_rows_per_group),
        max_bytes_per_file: positive(p.max_bytes_per_file),
        storage_version: opt_str_arg(p.storage_version, "params->storage_version")?.map(str::to_string),
        storage_options: kv_arg(p.storage_options, "params->storage_options")?,
        commit_message: opt_str_arg(p.commit_message, "params->commit_message")?.map(str::to_string),
        properties: kv_arg(p.transaction_properties, "params->transaction_properties")?,
        statement_id: opt_str_arg(p.statement_id, "params->statement_id")?.map(str::to_string),
        max_retries: match p.commit_retries {
            0 => None,
            n if n < 0 => Some(0),
            n => Some(n as u32),
        },
        retry_timeout: positive(p.retry_timeout_ms).map(Duration::from_millis),
        stable_row_ids: match p.stable_row_ids {
            0 => false,
            1 => true,
            v => return Err(HostError::invalid(format!("params->stable_row_ids is {v}: use 0 or 1"))),
        },
        preconditions: Preconditions {
            expected_version: positive(p.expected_version),
            required_config: kv_arg(p.required_config, "params->required_config")?.into_iter().collect(),
        },
    })
}

/// Refuse preconditions where the call commits nothing (they would be silently ignored).
fn no_preconditions(options: &WriteOptions, call: &str) -> Result<()> {
    if options.preconditions.is_empty() {
        Ok(())
    } else {
        Err(HostError::invalid(format!(
            "{call} commits nothing: params->expected_version and params->required_config apply to the commit"
        )))
    }
}

pub(super) fn write_result(out: *mut LanceWriteResult, summary: WriteSummary) -> Result<()> {
    if let Some(slot) = out_slot(out, Layout::Sized, "out_result")? {
        slot.write(&summary.into());
    }
    Ok(())
}

fn optional_dataset<'a>(at: *const LanceDataset) -> Result<Option<&'a LanceDataset>> {
    if at.is_null() {
        Ok(None)
    } else {
        handle_ref(at, "at").map(Some)
    }
}

fn staged_args(staged: *const *const u8, lens: *const usize, n: usize) -> Result<Vec<StagedWrite>> {
    byte_list_arg(staged, lens, n, "staged")?
        .into_iter()
        .enumerate()
        .map(|(i, bytes)| {
            StagedWrite::from_bytes(bytes).map_err(|e| HostError::new(e.code, format!("staged[{i}]: {}", e.message)))
        })
        .collect()
}

/// Fill `out`, a caller's struct of `struct_size` bytes (pass `sizeof *out`), with the default
/// write settings (create, Lance's file sizes and retries, no options) and set
/// `out->struct_size`.
///
/// Thread-safe. Returns LANCE_ERR_INVALID_ARGUMENT if `out` is NULL or `struct_size` is too
/// small; `out` is not written on failure.
#[no_mangle]
pub extern "C" fn lance_write_params_init_v2(out: *mut LanceWriteParams, struct_size: usize) -> i32 {
    guard_code(|| init_out(out, struct_size, "out"))
}

/// Write the batches of `data` to the table at `uri` as ONE new version: create a table, append
/// to it or overwrite it (`params->mode`; `params` NULL = create with defaults). `at` (may be
/// NULL) pins the version an append or overwrite is planned at; commits made since are rebased
/// over when compatible (concurrent appends), else the call fails with LANCE_ERR_CONFLICT.
/// Without `at`, the latest version is the plan. The batches must have the table's schema
/// (appends) — a different schema or a NULL in a non-nullable column is
/// LANCE_ERR_INVALID_ARGUMENT, and so is field metadata Lance 14.0.2 cannot write
/// (`lance-encoding:dict-size-ratio` outside (0, 1], a `lance-encoding:dict-max-size` that is
/// not a number, a packed flag on a list or map column; docs/writes.md), refused before anything
/// is written. `data` is read on the library's threads, one thread at a time; if its `get_next`
/// fails or hands a batch of another schema, the call fails with LANCE_ERR_HOST_STREAM (since
/// 0.11) carrying the stream's error. A create that fails leaves no directory at `uri`.
///
/// A failure commits nothing: readers never see part of a write. `*out_dataset` (if
/// `out_dataset` is not NULL) gets the new version pinned, owned by the caller (free with
/// `lance_dataset_free`); `out_result` (may be NULL) gets what was written. Takes ownership of
/// `data` (released, also on failure); borrows the rest. Thread-safe. Returns an error code;
/// the outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_table_write(
    uri: *const c_char,
    at: *const LanceDataset,
    data: *mut FFI_ArrowArrayStream,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let (reader, _) = import_stream(data, "data")?;
        let uri = str_arg(uri, "uri")?;
        let at = optional_dataset(at)?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = table::write(uri, at.map(|d| d.table()).transpose()?, reader, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Stage one worker's share of a write: write the batches of `data` into data files of the
/// table at `uri` WITHOUT committing, and return what was written as staged-write bytes
/// (`*out`, `*out_len`): versioned and checksummed, naming the table, the mode and the version
/// the write was planned at, small (file names and statistics, no rows), never credentials.
/// Ship them to the coordinator, which commits all shares of the statement with
/// `lance_table_commit` (or discards them with `lance_staged_write_abort`). Appends need `at`,
/// the coordinator's pinned version (e.g. opened on the worker with
/// `lance_snapshot_open`); a create has none; an overwrite has one when the table exists.
/// `out_result` (may be NULL) gets the rows, files and bytes written (version 0, committed 0).
/// A failing `data` stream is LANCE_ERR_HOST_STREAM, as for `lance_table_write`.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Takes ownership of
/// `data` (released, also on failure). Thread-safe. Returns an error code; outputs are not
/// written on failure.
#[no_mangle]
pub extern "C" fn lance_table_stage_write(
    uri: *const c_char,
    at: *const LanceDataset,
    data: *mut FFI_ArrowArrayStream,
    params: *const LanceWriteParams,
    out: *mut *mut u8,
    out_len: *mut usize,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let (reader, _) = import_stream(data, "data")?;
        let uri = str_arg(uri, "uri")?;
        let at = optional_dataset(at)?;
        let options = params_arg(params)?;
        no_preconditions(&options, "a staged write")?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let staged = staged::stage(uri, at.map(|d| d.table()).transpose()?, reader, &options)?;
        staged_out(&staged, out, out_len, out_result)
    })
}

/// Commit `num_staged` staged writes (`staged[i]` of `staged_lens[i]` bytes, from
/// `lance_table_stage_write` on any process) of one statement as ONE new version of the table at
/// `uri`: readers see all of their rows or none. All must be of `uri` and of one kind (the
/// params' mode is not used; the staged bytes say it): shares of one create, append or
/// overwrite; shares of one delete (one predicate, each fragment in one share); or one
/// merge-insert. The commit is planned at the version the
/// writes were planned at: concurrent appends committed since are rebased over; a change that
/// cannot be combined (an overwrite when any version was committed since its plan — checked at
/// the moment of the commit — or exhausted retries) is LANCE_ERR_CONFLICT, a create of a table
/// that now exists LANCE_ERR_INVALID_ARGUMENT, with nothing committed.
/// `params->commit_message`, `transaction_properties`, `commit_retries`, `retry_timeout_ms`
/// and `storage_options` apply. With `params->statement_id`, a repeated commit of a statement
/// already committed in any version since it was first planned (a retried coordinator, also
/// one that planned again) returns that version with `out_result->committed = 0` and writes
/// nothing; the commit records the first plan under `_lance_host/statements/` in the table's
/// directory. Damaged, truncated or foreign bytes are LANCE_ERR_CORRUPT (another format
/// version: LANCE_ERR_NOT_SUPPORTED) naming the index. Since 0.11 the commit checks every share
/// before committing and refuses with LANCE_ERR_INVALID_ARGUMENT, naming the share's index: a
/// share given twice or sharing a file with another, a file that is missing (aborted) or not a
/// plain name in the table's directory, a file whose footer disagrees with the share (rows,
/// format, columns, size), a deletion file that disagrees, a fragment the planned version does
/// not have, a planned version past the table's latest, a file some version already holds.
///
/// `*out_dataset` (if `out_dataset` is not NULL) gets the version pinned, owned by the caller;
/// `out_result` (may be NULL) what was committed. Borrows its arguments. Thread-safe. Returns
/// an error code; the outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_table_commit(
    uri: *const c_char,
    staged: *const *const u8,
    staged_lens: *const usize,
    num_staged: usize,
    params: *const LanceWriteParams,
    out_dataset: *mut *mut LanceDataset,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let uri = str_arg(uri, "uri")?;
        let writes = staged_args(staged, staged_lens, num_staged)?;
        let options = params_arg(params)?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let (snapshot, summary) = committer::commit(uri, writes, &options)?;
        write_result(out_result, summary)?;
        dataset_out(snapshot, out_dataset)
    })
}

/// Commit the staged writes of several tables TOGETHER (since 0.14): every table gets one new
/// version — what `lance_table_commit` would commit for it — or none does, also when the
/// coordinator is killed in the middle. Table `i` is `uris[i]` with `num_staged[i]` staged
/// writes (`staged[i][j]` of `staged_lens[i][j]` bytes) and `params[i]` (`params` NULL or an
/// entry NULL = defaults; per table: `statement_id`, `expected_version`, `required_config`,
/// `transaction_properties`, `commit_message`, `storage_options`). The tables must be managed by
/// one namespace that commits several tables at once (`batch_commit_tables` of the Lance
/// namespace spec), each opened through a catalog of that namespace in this process, on its
/// main branch; the namespace registers all new versions in one call. A table that is not
/// managed, tables of two namespaces, a namespace without batch commits, or a create share:
/// LANCE_ERR_NOT_SUPPORTED. A table given twice: LANCE_ERR_INVALID_ARGUMENT. When a table's
/// latest version moved after its shares were checked (a racing committer won), the commit is
/// prepared again on the new latest versions and sent again, up to the smallest
/// `commit_retries` of the tables (default 20); then LANCE_ERR_CONFLICT (the shares stay
/// valid). Every check of `lance_table_commit` applies per table (the message
/// names the table's index). In all of these cases nothing was committed. Any other error
/// (a lost answer of the namespace) may leave the outcome unknown: commit again with the same
/// statement ids, which returns the versions if they landed (`committed = 0` on every table;
/// a commit where some tables' statements landed and others' did not is refused).
///
/// `out_datasets` (may be NULL) is an array of `num_tables` slots: slot `i` gets table `i`'s new
/// version pinned, owned by the caller. `out_results` (may be NULL) is an array of `num_tables`
/// pointers (each may be NULL) to results with `struct_size` set. Borrows its arguments.
/// Thread-safe. Returns an error code; the outputs are not written on failure.
#[no_mangle]
pub extern "C" fn lance_commit_tables(
    num_tables: usize,
    uris: *const *const c_char,
    staged: *const *const *const u8,
    staged_lens: *const *const usize,
    num_staged: *const usize,
    params: *const *const LanceWriteParams,
    out_datasets: *mut *mut LanceDataset,
    out_results: *const *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let uris = str_list_arg(uris, num_tables, "uris")?;
        let staged = slice_arg(staged, num_tables, "staged")?;
        let lens = slice_arg(staged_lens, num_tables, "staged_lens")?;
        let counts = slice_arg(num_staged, num_tables, "num_staged")?;
        let params: &[*const LanceWriteParams] = if params.is_null() { &[] } else { slice_arg(params, num_tables, "params")? };
        let results: &[*mut LanceWriteResult] = if out_results.is_null() { &[] } else { slice_arg(out_results, num_tables, "out_results")? };
        for (i, r) in results.iter().enumerate() {
            out_slot(*r, Layout::Sized, &format!("out_results[{i}]"))?;
        }
        let mut tables = Vec::with_capacity(num_tables);
        for (i, uri) in uris.into_iter().enumerate() {
            let writes = staged_args(staged[i], lens[i], counts[i]).map_err(|e| e.context(&format!("table {i}")))?;
            let options = params_arg(params.get(i).copied().unwrap_or(std::ptr::null()))
                .map_err(|e| e.context(&format!("params[{i}]")))?;
            tables.push(crate::write::multi::TableCommit { uri, staged: writes, options });
        }
        let committed = crate::write::multi::commit_tables(tables)?;
        let slots: &mut [*mut LanceDataset] = if out_datasets.is_null() {
            &mut []
        } else {
            // SAFETY: the caller passes `num_tables` writable slots.
            unsafe { std::slice::from_raw_parts_mut(out_datasets, num_tables) }
        };
        for (i, (snapshot, summary)) in committed.into_iter().enumerate() {
            if let Some(r) = results.get(i) {
                write_result(*r, summary)?;
            }
            if let Some(slot) = slots.get_mut(i) {
                dataset_out(snapshot, slot as *mut *mut LanceDataset)?;
            }
        }
        Ok(())
    })
}

/// Discard staged writes that will not be committed: delete their data files and the deletion
/// files of staged deletes and merge-inserts (with the NULL-terminated key/value
/// `storage_options`, may be NULL). A file the table's latest version or the planned version
/// uses is never deleted, so aborting a write whose commit landed (a coordinator that lost the
/// answer) deletes nothing that version needs. Files already gone are fine (an abort may be
/// repeated). `out_files_deleted` (may be NULL) gets the number of files deleted.
///
/// Borrows its arguments. Thread-safe. Returns an error code (LANCE_ERR_CORRUPT for damaged
/// bytes, before anything is deleted).
#[no_mangle]
pub extern "C" fn lance_staged_write_abort(
    staged: *const *const u8,
    staged_lens: *const usize,
    num_staged: usize,
    storage_options: *const *const c_char,
    out_files_deleted: *mut u64,
) -> i32 {
    guard_code(|| {
        let writes = staged_args(staged, staged_lens, num_staged)?;
        let options = kv_arg(storage_options, "storage_options")?;
        let n = staged::abort(&writes, &options)?;
        if !out_files_deleted.is_null() {
            *out_arg(out_files_deleted, "out_files_deleted")? = n;
        }
        Ok(())
    })
}

/// Stage one worker's share of a row-level change (an engine's UPDATE, DELETE or MERGE that read
/// the rows it changes with `_rowaddr`): the rows at `row_addresses` (`num_addresses` values of
/// `_rowaddr` read from `dataset`'s pinned version) are deleted when the coordinator commits.
/// Nothing is written now: the returned staged-write bytes (`*out`, `*out_len`) carry the
/// addresses. The rows the worker writes instead (an update's new values, a merge's inserts) are
/// an ordinary staged append planned on the same version (`lance_table_stage_write` with
/// `dataset`). The coordinator commits every share of the statement — row deletes and appends
/// together — with `lance_table_commit` as ONE version: the addresses are merged into one
/// deletion file per fragment, and Lance is told exactly which rows changed, so a concurrent
/// commit that changed other rows is rebased over while one that changed any of the same rows
/// makes the commit LANCE_ERR_CONFLICT (two updates of one row never both land). The commit
/// refuses (LANCE_ERR_INVALID_ARGUMENT, nothing committed) an address two shares delete and a
/// row already deleted at the planned version. `(NULL, 0)` is a share that deletes nothing.
/// An address given twice or outside the pinned version's fragments is
/// LANCE_ERR_INVALID_ARGUMENT. `out_result` (may be NULL) gets `rows_deleted` (version 0,
/// committed 0). Aborting the share (`lance_staged_write_abort`) deletes nothing (it has no
/// files); abort the statement's appends with it.
///
/// Caller owns `*out`; free it with `lance_bytes_free(*out, *out_len)`. Borrows its arguments.
/// Thread-safe. Returns an error code; outputs are not written on failure. Since 0.13.
#[no_mangle]
pub extern "C" fn lance_dataset_stage_row_deletes(
    dataset: *const LanceDataset,
    row_addresses: *const u64,
    num_addresses: usize,
    out: *mut *mut u8,
    out_len: *mut usize,
    out_result: *mut LanceWriteResult,
) -> i32 {
    guard_code(|| {
        let ds = handle_ref(dataset, "dataset")?;
        let addresses = slice_arg(row_addresses, num_addresses, "row_addresses")?;
        out_arg(out, "out")?;
        out_arg(out_len, "out_len")?;
        out_slot(out_result, Layout::Sized, "out_result")?;
        let staged = changes_by_address::stage_row_deletes(ds.table()?, addresses)?;
        staged_out(&staged, out, out_len, out_result)
    })
}

/// Hand staged-write bytes and their summary to the caller.
pub(super) fn staged_out(staged: &StagedWrite, out: *mut *mut u8, out_len: *mut usize, out_result: *mut LanceWriteResult) -> Result<()> {
    let bytes = staged.to_bytes()?;
    write_result(out_result, staged.summary())?;
    let (p, n) = into_array(bytes);
    *out_arg(out, "out")? = p;
    *out_arg(out_len, "out_len")? = n;
    Ok(())
}
