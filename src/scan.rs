//! Scans of a pinned snapshot delivered as Arrow record batch readers.

use arrow::record_batch::RecordBatchReader;
use lance::dataset::scanner::Scanner;
use lance_file::reader::{FileReaderOptions, DEFAULT_READ_CHUNK_SIZE};
use lance_io::object_store::DEFAULT_MAX_IOP_SIZE;
use lance_table::format::Fragment;

use crate::error::{HostError, Result};
use crate::session;
use crate::snapshot::Snapshot;
use crate::io_stats::OpStats;

/// Name of the row id meta column.
pub const ROW_ID: &str = "_rowid";
/// Name of the row address meta column.
pub const ROW_ADDR: &str = "_rowaddr";

/// What to read from a snapshot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScanOptions {
    /// Columns to return, in order; empty = every column of the schema.
    pub columns: Vec<String>,
    pub filter_sql: Option<String>,
    /// A serialized Substrait `ExtendedExpression` holding one boolean expression.
    pub filter_substrait: Option<Vec<u8>>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub batch_size: Option<u64>,
    pub with_row_id: bool,
    pub with_row_addr: bool,
    /// Restrict the scan to these fragments, in this order; `None` = every fragment.
    pub fragment_ids: Option<Vec<u64>>,
    /// Restrict the scan to physical rows of one fragment (a scan split's row slice).
    pub row_slice: Option<(u64, crate::split::RowSlice)>,
    pub scan_in_order: bool,
    pub batch_readahead: Option<u32>,
    pub fragment_readahead: Option<u32>,
    /// Bytes of reads the scan may queue ahead of decoding; None = the session's default.
    pub io_buffer_bytes: Option<u64>,
    /// Sort the rows by these keys (before offset and limit); empty = storage order.
    pub order_by: Vec<SortKey>,
    /// A runtime key-set filter (a join's build-side keys), ANDed with the other filters.
    pub key_filter: Option<crate::key_filter::KeyFilter>,
    /// A predicate the host may tighten while the scan runs, applied to each batch it returns.
    pub dynamic_filter: Option<crate::dynamic_filter::DynamicFilter>,
}


/// One key of an ordered scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub column: String,
    pub ascending: bool,
    pub nulls_first: bool,
}

/// Parse `column [ASC|DESC] [NULLS FIRST|NULLS LAST], ...` (names optionally quoted with `"` or
/// a backtick; keywords in any case). Defaults: ASC; NULLS FIRST for ASC, NULLS LAST for DESC.
/// Empty or blank text is no ordering.
pub fn parse_order_by(text: &str) -> Result<Vec<SortKey>> {
    let bad = |why: String| HostError::invalid(format!("order_by '{}': {why}", text.escape_debug()));
    let mut keys = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return Ok(keys);
    }
    loop {
        // the column: quoted, or up to white space or a comma
        let (column, after) = match rest.chars().next() {
            Some(q @ ('"' | '`')) => {
                let end = rest[1..].find(q).ok_or_else(|| bad(format!("the quoted name starting at {q} is not closed")))?;
                (rest[1..1 + end].to_string(), &rest[2 + end..])
            }
            _ => {
                let end = rest.find(|c: char| c.is_whitespace() || c == ',').unwrap_or(rest.len());
                (rest[..end].to_string(), &rest[end..])
            }
        };
        if column.is_empty() {
            return Err(bad("a sort key has no column".to_string()));
        }
        let (item, next) = match after.find(',') {
            Some(i) => (&after[..i], Some(&after[i + 1..])),
            None => (after, None),
        };
        let words: Vec<String> = item.split_whitespace().map(str::to_ascii_uppercase).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (ascending, nulls) = match words.as_slice() {
            [] => (true, None),
            ["ASC"] => (true, None),
            ["DESC"] => (false, None),
            ["NULLS", n] => (true, Some(*n)),
            ["ASC", "NULLS", n] => (true, Some(*n)),
            ["DESC", "NULLS", n] => (false, Some(*n)),
            _ => return Err(bad(format!("cannot read '{}' after column '{column}' (ASC, DESC, NULLS FIRST, NULLS LAST)", item.trim()))),
        };
        let nulls_first = match nulls {
            None => ascending,
            Some("FIRST") => true,
            Some("LAST") => false,
            Some(other) => return Err(bad(format!("NULLS {other}: FIRST or LAST"))),
        };
        keys.push(SortKey { column, ascending, nulls_first });
        match next {
            Some(n) => {
                rest = n.trim();
                if rest.is_empty() {
                    return Err(bad("a sort key is missing after the last comma".to_string()));
                }
            }
            None => return Ok(keys),
        }
    }
}

/// The orderings Lance sorts by, checked against the snapshot's schema: top-level columns of
/// primitive types only (what a sort compares the same way everywhere), among the scan's
/// `columns` when it names any (Lance cannot plan a sort by a column it does not return).
fn orderings(
    snapshot: &Snapshot,
    keys: &[SortKey],
    columns: &[String],
) -> Result<Vec<lance::dataset::scanner::ColumnOrdering>> {
    let schema = arrow_schema::Schema::from(snapshot.dataset.schema());
    let mut out = Vec::with_capacity(keys.len());
    for k in keys {
        let field = schema
            .field_with_name(&k.column)
            .map_err(|_| HostError::invalid(format!("order_by names column '{}', which the table does not have", k.column)))?;
        if !columns.is_empty() && !columns.iter().any(|c| c == &k.column) {
            return Err(HostError::invalid(format!(
                "order_by column '{}' is not one of the scan's columns: sort by columns the scan returns",
                k.column
            )));
        }
        if field.data_type().is_nested() || matches!(field.data_type(), arrow_schema::DataType::Dictionary(..)) {
            return Err(HostError::invalid(format!(
                "order_by column '{}' is of type {}: sort by columns of primitive types",
                k.column,
                field.data_type()
            )));
        }
        out.push(lance::dataset::scanner::ColumnOrdering {
            ascending: k.ascending,
            nulls_first: k.nulls_first,
            column_name: k.column.clone(),
        });
    }
    Ok(out)
}

/// Check projected column names against the snapshot's schema, naming the first unknown one.
pub fn validate_columns(snapshot: &Snapshot, columns: &[String]) -> Result<()> {
    let schema = snapshot.dataset.schema();
    let mut seen = std::collections::HashSet::with_capacity(columns.len());
    for c in columns {
        if !seen.insert(c.as_str()) {
            return Err(HostError::invalid(format!("column '{c}' is requested more than once")));
        }
        if c == ROW_ID || c == ROW_ADDR {
            continue;
        }
        if schema.field(c).is_none() {
            return Err(HostError::invalid(format!(
                "unknown column '{c}' (table '{}' at version {})",
                snapshot.uri(),
                snapshot.version()
            )));
        }
    }
    Ok(())
}

/// Project `columns` (empty = all): checks every name, hands the data columns to the scanner
/// and leaves the meta columns (`_rowid`, `_rowaddr`) to the caller.
pub fn project(snapshot: &Snapshot, scanner: &mut Scanner, columns: &[String]) -> Result<()> {
    if columns.is_empty() {
        return Ok(());
    }
    validate_columns(snapshot, columns)?;
    let data: Vec<&String> = columns
        .iter()
        .filter(|c| c.as_str() != ROW_ID && c.as_str() != ROW_ADDR)
        .collect();
    scanner
        .project(&data)
        .map_err(|e| HostError::from_lance("invalid projection", e))?;
    Ok(())
}

/// Reject an SQL filter that Lance's planner cannot handle before it reaches a scan. Lance's
/// parser panics on a few constructs it does not implement (a placeholder such as `$1`, some
/// literal forms); those are the caller's input, so they are INVALID_ARGUMENT here rather than
/// a panic. Other parse errors are left to the scanner, which reports them with its own words.
pub fn check_sql_filter(snapshot: &Snapshot, sql: &str) -> Result<()> {
    crate::sql_text::check_expression("the filter", sql)?;
    let schema = std::sync::Arc::new(snapshot.arrow_schema());
    let planner = lance_datafusion::planner::Planner::new(schema);
    match crate::logging::catch_quietly(|| planner.parse_filter(sql).map(|_| ())) {
        Ok(_) => Ok(()),
        Err(_) => Err(HostError::invalid(format!(
            "filter uses SQL that Lance cannot plan (a placeholder or an unsupported literal form): {sql}"
        ))),
    }
}

/// Resolve fragment ids to the snapshot's fragments, naming the first id not in it.
pub fn resolve_fragments(snapshot: &Snapshot, ids: &[u64]) -> Result<Vec<Fragment>> {
    let all = snapshot.dataset.fragments();
    ids.iter()
        .map(|id| {
            all.iter().find(|f| f.id == *id).cloned().ok_or_else(|| {
                HostError::not_found(format!(
                    "fragment id {id} is not in table '{}' at version {}",
                    snapshot.uri(),
                    snapshot.version()
                ))
            })
        })
        .collect()
}

/// The fragments a read covers — `ids` (None = all), or the one of a row slice — and the
/// physical rows of the slice, for readers that take them as such (`crate::decode`).
pub fn read_fragments(
    snapshot: &Snapshot,
    ids: Option<&[u64]>,
    slice: Option<(u64, crate::split::RowSlice)>,
) -> Result<(Vec<Fragment>, Option<std::ops::Range<u64>>)> {
    Ok(match (ids, slice) {
        (_, Some((f, s))) => (resolve_fragments(snapshot, &[f])?, Some(s.offset..s.offset.saturating_add(s.count))),
        (Some(ids), None) => (resolve_fragments(snapshot, ids)?, None),
        (None, None) => (snapshot.dataset.fragments().as_ref().clone(), None),
    })
}

/// The row addresses of physical rows `slice` of `fragment`, checked against the fragment's
/// physical row count in the snapshot's manifest.
pub fn slice_rows(
    snapshot: &Snapshot,
    fragment: u64,
    slice: crate::split::RowSlice,
) -> Result<lance::dataset::scanner::RowAddrTreeMap> {
    let frag = resolve_fragments(snapshot, &[fragment])?.remove(0);
    let physical = frag.physical_rows.map(|n| n as u64);
    let end = slice.offset.checked_add(slice.count);
    match (physical, end) {
        (Some(p), Some(e)) if slice.count > 0 && e <= p && u32::try_from(fragment).is_ok() => {
            let base = fragment << 32;
            let mut rows = lance::dataset::scanner::RowAddrTreeMap::new();
            rows.insert_range(base + slice.offset..base + e);
            Ok(rows)
        }
        (None, _) => Err(HostError::not_supported(format!(
            "fragment {fragment} has no physical row count in the manifest; plan whole-fragment splits"
        ))),
        _ => Err(HostError::invalid(format!(
            "rows {}..{} are not inside fragment {fragment} ({} physical rows)",
            slice.offset,
            slice.offset.saturating_add(slice.count),
            physical.unwrap_or(0)
        ))),
    }
}

/// Reject bytes that are not a serialized Substrait `ExtendedExpression` with one expression
/// before they reach the planner.
fn validate_substrait(bytes: &[u8]) -> Result<()> {
    use datafusion_substrait::substrait::proto::ExtendedExpression;
    use prost::Message;
    let envelope = ExtendedExpression::decode(bytes).map_err(|e| {
        HostError::invalid(format!(
            "filter_substrait is not a serialized Substrait ExtendedExpression: {e}"
        ))
    })?;
    if envelope.referred_expr.len() != 1 {
        return Err(HostError::invalid(format!(
            "filter_substrait must hold exactly one expression, found {}",
            envelope.referred_expr.len()
        )));
    }
    Ok(())
}

fn to_i64(name: &str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| HostError::invalid(format!("{name} {v} is too large")))
}

/// Apply scan options to a Lance scanner (shared by plain scans and scan splits).
pub fn configure_scanner(
    snapshot: &Snapshot,
    scanner: &mut Scanner,
    opts: &ScanOptions,
) -> Result<()> {
    let lance_err = |e| HostError::from_lance("invalid scan options", e);
    if opts.dynamic_filter.is_some() && (opts.limit.is_some() || opts.offset.is_some()) {
        return Err(HostError::invalid(
            "a scan with a dynamic filter takes no limit or offset (the filter applies to the rows the scan produces; limit the rows after it)",
        ));
    }
    if let Some(f) = opts.dynamic_filter.as_ref().filter(|f| f.table() != snapshot.uri()) {
        return Err(HostError::invalid(format!(
            "the dynamic filter was made for table '{}', not '{}'",
            f.table(),
            snapshot.uri()
        )));
    }
    let added = dynamic_filter_columns(opts);
    if added.is_empty() {
        project(snapshot, scanner, &opts.columns)?;
    } else {
        project(snapshot, scanner, &[opts.columns.clone(), added].concat())?;
    }
    let wants_row_id = opts.with_row_id || opts.columns.iter().any(|c| c == ROW_ID);
    let wants_row_addr = opts.with_row_addr || opts.columns.iter().any(|c| c == ROW_ADDR);
    if wants_row_id {
        scanner.with_row_id();
    }
    if wants_row_addr {
        scanner.with_row_address();
    }
    // Each filter given is set on the scanner and read back as an expression Lance planned;
    // more than one are ANDed (a front end's Substrait filter and a back end's runtime SQL
    // filter and key set).
    // A lone SQL or Substrait filter is handed to Lance as it is (parsed once, by Lance).
    let combined = opts.key_filter.is_some() || (opts.filter_sql.is_some() && opts.filter_substrait.is_some());
    let mut parts = Vec::new();
    if let Some(sql) = &opts.filter_sql {
        if sql.trim().is_empty() {
            return Err(HostError::invalid("filter_sql is empty"));
        }
        check_sql_filter(snapshot, sql)?;
        scanner.filter(sql).map_err(lance_err)?;
        if combined {
            parts.push(scanner.get_expr_filter().map_err(lance_err)?);
        }
    }
    if let Some(bytes) = &opts.filter_substrait {
        if bytes.is_empty() {
            return Err(HostError::invalid("filter_substrait is empty"));
        }
        validate_substrait(bytes)?;
        scanner.filter_substrait(bytes).map_err(lance_err)?;
        if combined {
            parts.push(scanner.get_expr_filter().map_err(lance_err)?);
        }
    }
    if let Some(k) = &opts.key_filter {
        parts.push(Some(crate::key_filter::expr(snapshot, k)?));
    }
    if combined {
        let all = parts.into_iter().flatten().reduce(lance::deps::datafusion::logical_expr::Expr::and);
        if let Some(all) = all {
            scanner.filter_expr(all);
        }
    }
    if opts.limit.is_some() || opts.offset.is_some() {
        let limit = opts.limit.map(|v| to_i64("limit", v)).transpose()?;
        let offset = opts.offset.map(|v| to_i64("offset", v)).transpose()?;
        scanner.limit(limit, offset).map_err(lance_err)?;
    }
    if let Some(bs) = opts.batch_size {
        if bs == 0 {
            return Err(HostError::invalid("batch_size must be positive"));
        }
        scanner.batch_size(bs as usize);
    }
    if let Some(ids) = &opts.fragment_ids {
        scanner.with_fragments(resolve_fragments(snapshot, ids)?);
    }
    if let Some((fragment, slice)) = opts.row_slice {
        scanner.with_physical_row_addr_prefilter(slice_rows(snapshot, fragment, slice)?);
    }
    scanner.scan_in_order(opts.scan_in_order);
    if !opts.order_by.is_empty() {
        scanner.order_by(Some(orderings(snapshot, &opts.order_by, &opts.columns)?)).map_err(lance_err)?;
    }
    apply_memory_bounds(snapshot, scanner, opts)
}

/// Rows a filtered scan of a local table reads to estimate how many rows its filter keeps.
const SAMPLE_ROWS: i64 = 8192;
/// The share of sampled rows kept from which a filtered local scan reads every column together
/// with the filter's columns (early materialization).
const EARLY_FROM_SHARE: f64 = 0.05;

/// On a local disk Lance reads the columns wider than 10 bytes (and strings) of a filtered scan
/// after the filter, by row address, which pays off when the filter keeps few rows (Lance
/// assumes 0.1 %) and costs up to 3x when it keeps many (bench/SCAN_FILTERED.md). The filter is
/// tried on the first rows of the scan's first fragment (its own columns only); from 5 % kept,
/// every column is read with the filter's. An estimate that cannot be made (no filter, filters
/// on row ids, a runtime key set, a row limit or an order, an object store) leaves Lance's
/// choice. The answer is
/// the same either way; only the reading differs.
fn choose_materialization(snapshot: &Snapshot, scanner: &mut Scanner, opts: &ScanOptions, stats: &OpStats) {
    // a key set (up to millions of values) would be hashed once more just for the estimate
    if !snapshot.is_local() || opts.limit.is_some() || !opts.order_by.is_empty() || opts.key_filter.is_some() {
        return;
    }
    let Ok(Some(filter)) = scanner.get_expr_filter() else {
        return;
    };
    if sampled_share(snapshot, &filter, opts, stats).is_some_and(|share| share >= EARLY_FROM_SHARE) {
        scanner.materialization_style(lance::dataset::scanner::MaterializationStyle::AllEarly);
    }
}

/// The share of the first `SAMPLE_ROWS` rows of the scan's first fragment that `filter` keeps
/// (None when it cannot be told). Its reads count in the scan's I/O statistics (`stats`).
fn sampled_share(
    snapshot: &Snapshot,
    filter: &lance::deps::datafusion::logical_expr::Expr,
    opts: &ScanOptions,
    stats: &OpStats,
) -> Option<f64> {
    use arrow::array::{Array, BooleanArray};
    let columns = lance_datafusion::planner::Planner::column_names_in_expr(filter);
    if columns.is_empty() || columns.iter().any(|c| c.starts_with("_row")) {
        return None;
    }
    let mut sample = stats.dataset(snapshot).scan();
    sample.project(&columns).ok()?;
    let first = opts.fragment_ids.as_ref().and_then(|ids| ids.first().copied()).or(opts.row_slice.map(|(f, _)| f));
    if let Some(id) = first {
        sample.with_fragments(resolve_fragments(snapshot, &[id]).ok()?);
    }
    sample.limit(Some(SAMPLE_ROWS), None).ok()?;
    sample.with_file_reader_options(reader_options());
    let batch = session::block_on(async move { sample.try_into_batch().await }).ok()?.ok()?;
    if batch.num_rows() == 0 {
        return None;
    }
    let planner = lance_datafusion::planner::Planner::new(batch.schema());
    let kept = planner.create_physical_expr(filter).ok()?.evaluate(&batch).ok()?.into_array(batch.num_rows()).ok()?;
    let kept = kept.as_any().downcast_ref::<BooleanArray>()?;
    Some(kept.true_count() as f64 / batch.num_rows() as f64)
}

/// Bound what a scan holds in flight: the scan's own settings, else the session's defaults.
/// A session value of 0 means "automatic": for local tables the library's bounds
/// (`LANCE_DEFAULT_SCAN_IO_BUFFER_BYTES`, `LANCE_DEFAULT_SCAN_FRAGMENT_READAHEAD`), for object
/// stores Lance's own defaults, whose deeper read-ahead hides request latency.
pub fn apply_memory_bounds(
    snapshot: &Snapshot,
    scanner: &mut Scanner,
    opts: &ScanOptions,
) -> Result<()> {
    let config = &session::global()?.config;
    let local = snapshot.is_local();
    let auto = |v: u64, local_default: u64| match v {
        0 if local => Some(local_default),
        0 => None,
        v => Some(v),
    };
    let batches = auto(u64::from(config.scan_batch_readahead), 0).filter(|v| *v > 0);
    if let Some(n) = opts.batch_readahead.map(u64::from).or(batches) {
        scanner.batch_readahead(n.max(1) as usize);
    }
    let fragments = auto(
        u64::from(config.scan_fragment_readahead),
        u64::from(session::LANCE_DEFAULT_SCAN_FRAGMENT_READAHEAD),
    );
    if let Some(n) = opts.fragment_readahead.map(u64::from).or(fragments) {
        scanner.fragment_readahead(n.max(1) as usize);
    }
    let io = auto(config.scan_io_buffer_bytes, session::LANCE_DEFAULT_SCAN_IO_BUFFER_BYTES);
    if let Some(bytes) = opts.io_buffer_bytes.or(io) {
        if bytes == 0 {
            return Err(HostError::invalid("io_buffer_bytes must be positive"));
        }
        scanner.io_buffer_size(bytes);
    }
    scanner.with_file_reader_options(reader_options());
    Ok(())
}

/// How a scan reads its data files. Lance's file reader cuts a read into 8 MiB pieces, which its
/// I/O scheduler merges back into one request (then splits at the store's request size,
/// `LANCE_MAX_IOP_SIZE`, 16 MiB unless the process sets it) and finally copies together into a new
/// buffer. With pieces as large as the store's request size, a page up to that size is read into
/// one buffer and decoded from there, without the copy (a larger page is still split by the store
/// and copied once). The requests sent to the store are the same either way: local files and
/// object stores alike (tested on both by counting page-sized buffers and read requests).
fn reader_options() -> FileReaderOptions {
    FileReaderOptions {
        read_chunk_size: (*DEFAULT_MAX_IOP_SIZE).max(DEFAULT_READ_CHUNK_SIZE),
        ..FileReaderOptions::default()
    }
}

/// The scanner of a scan of the snapshot, with the scan's own I/O counters attached.
fn prepared_scan(snapshot: &Snapshot, opts: &ScanOptions) -> Result<(Scanner, OpStats)> {
    let (mut scanner, stats) = configured_scan(snapshot, opts)?;
    for_lance(snapshot, &mut scanner, opts, &stats);
    Ok((scanner, stats))
}

/// A scanner of the snapshot with every option of `opts` checked and set, and the scan's own
/// I/O counters (not yet attached: `for_lance`).
fn configured_scan(snapshot: &Snapshot, opts: &ScanOptions) -> Result<(Scanner, OpStats)> {
    let stats = OpStats::default();
    let mut scanner = stats.dataset(snapshot).scan();
    configure_scanner(snapshot, &mut scanner, opts)?;
    Ok((scanner, stats))
}

/// What a configured scanner needs before Lance's scanner reads: its materialization (a local
/// filtered scan reads a sample for it) and the I/O counters.
fn for_lance(snapshot: &Snapshot, scanner: &mut Scanner, opts: &ScanOptions, stats: &OpStats) {
    choose_materialization(snapshot, scanner, opts, stats);
    stats.attach(scanner);
}

/// The columns a scan reads only for its dynamic filter: the filter's columns the host's
/// projection leaves out (none when it projects every column).
fn dynamic_filter_columns(opts: &ScanOptions) -> Vec<String> {
    match &opts.dynamic_filter {
        Some(f) if !opts.columns.is_empty() => f.columns().into_iter().filter(|c| !opts.columns.contains(c)).collect(),
        _ => Vec::new(),
    }
}

/// A scan of a local table — columns, optionally a SQL filter; no limit, order, row ids,
/// runtime filters or memory settings; whole fragments or a row slice — read by the library's
/// own decoder when it reads every page the scan touches (`crate::decode`); `None` leaves the scan
/// to Lance's scanner. The filter is the expression Lance planned on `scanner` (a filter on a
/// column an index covers stays with Lance, which answers it from the index); the decoder reads
/// the projected columns and the filter's, keeps the rows the filter keeps (NULL as false) and
/// hands on the projected columns. Batches are as Lance would cut them (`batch_size`, else
/// Lance's default; a filter leaves fewer rows in some), in storage order; the options were
/// checked by `configure_scanner` before.
fn own_scan(snapshot: &Snapshot, opts: &ScanOptions, scanner: &Scanner, stats: &OpStats) -> Result<Option<BatchReader>> {
    let plain = opts.filter_substrait.is_none()
        && opts.limit.is_none()
        && opts.offset.is_none()
        && !opts.with_row_id
        && !opts.with_row_addr
        && opts.order_by.is_empty()
        && opts.key_filter.is_none()
        && opts.dynamic_filter.is_none()
        // a row slice with a fragment list is a split's: the list names the slice's fragment
        && match (&opts.fragment_ids, opts.row_slice) {
            (Some(ids), Some((f, _))) => ids.as_slice() == [f],
            _ => true,
        };
    // a host that bounds a scan's memory (read-ahead, I/O buffer) gets Lance's scanner, which
    // those settings govern; the decoder keeps two units of ~16 MiB per core in flight
    let config = &session::global()?.config;
    let bounded = opts.batch_readahead.is_some()
        || opts.fragment_readahead.is_some()
        || opts.io_buffer_bytes.is_some()
        || config.scan_io_buffer_bytes != 0
        || config.scan_batch_readahead != 0
        || config.scan_fragment_readahead != 0;
    if crate::decode::disabled() || !snapshot.is_local() || !plain || bounded {
        return Ok(None);
    }
    let filter = match opts.filter_sql {
        None => None,
        Some(_) => match scanner.get_expr_filter() {
            Ok(Some(f)) => Some(f),
            _ => return Ok(None),
        },
    };
    let mut columns: Vec<String> = if opts.columns.is_empty() {
        snapshot.arrow_schema().fields().iter().map(|f| f.name().clone()).collect()
    } else {
        opts.columns.clone()
    };
    if columns.is_empty() || columns.iter().any(|c| c == ROW_ID || c == ROW_ADDR) {
        return Ok(None);
    }
    let projected = columns.len();
    let filtered: Vec<String> = filter.iter().flat_map(|f| f.column_refs()).map(|c| c.name.clone()).collect();
    for c in &filtered {
        if !columns.contains(c) {
            columns.push(c.clone());
        }
    }
    let ds = stats.dataset(snapshot);
    let (fragments, rows) = read_fragments(snapshot, opts.fragment_ids.as_deref(), opts.row_slice)?;
    let batch = lance::dataset::scanner::get_default_batch_size()
        .map(|n| n as u64)
        .or(opts.batch_size)
        .unwrap_or(8192);
    let cannot = |e| HostError::from_lance("cannot start scan", e);
    let stream = session::block_on(async move {
        if !filtered.is_empty() && crate::decode::indexed(&ds, &filtered).await.unwrap_or(true) {
            return Ok(None);
        }
        // a plan that fails (a missing file, say) leaves the scan to Lance, which reports it
        let Ok(Some(plan)) = crate::decode::plan(&ds, &fragments, rows, &columns).await else {
            return Ok(None);
        };
        let plan = match &filter {
            None => plan,
            Some(f) => match plan.with_filter(f, projected) {
                Ok(plan) => plan,
                Err(_) => return Ok(None),
            },
        };
        // one partition (storage order), two batches per core decoded at a time
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let exec = plan.with_batch_rows(batch).into_exec(1, 2 * cores)?;
        let ctx = std::sync::Arc::new(lance::deps::datafusion::execution::TaskContext::default());
        Ok::<_, lance::Error>(Some(exec.execute(0, ctx)?))
    })?
    .map_err(cannot)?;
    crate::metrics::scan_read(stream.is_some());
    let Some(stream) = stream else { return Ok(None) };
    let schema = stream.schema();
    let stream = futures::TryStreamExt::map_err(stream, lance::Error::from);
    Ok(Some(BatchReader::from_stream(schema, Box::pin(stream))?.with_stats(stats.clone()).reading(snapshot)))
}

/// Start a scan of the snapshot; the reader carries the scan's own I/O statistics.
pub fn scan(snapshot: &Snapshot, opts: &ScanOptions) -> Result<BatchReader> {
    crate::metrics::op(crate::metrics::Op::Scan);
    let (mut scanner, stats) = configured_scan(snapshot, opts)?;
    // the library's decoder first; Lance's scanner (and its materialization sample) otherwise
    if let Some(reader) = own_scan(snapshot, opts, &scanner, &stats)? {
        return Ok(reader);
    }
    for_lance(snapshot, &mut scanner, opts, &stats);
    let reader = BatchReader::start(scanner, "cannot start scan")?.with_stats(stats).reading(snapshot);
    match &opts.dynamic_filter {
        None => Ok(reader),
        Some(f) => {
            let applied = crate::dynamic_filter::Applied::new(f.clone(), &reader.schema(), &dynamic_filter_columns(opts))?;
            Ok(reader.with_dynamic_filter(applied))
        }
    }
}

/// The plan Lance would run for this scan (which index answers the filter, what is pushed into
/// the read), as Lance's own plan text; nothing is read but the sample of a filtered local scan
/// (`choose_materialization`).
pub fn explain_scan(snapshot: &Snapshot, opts: &ScanOptions) -> Result<String> {
    let (scanner, _) = prepared_scan(snapshot, opts)?;
    Ok(crate::error::local_paths(snapshot.uri(), &explain(scanner)?))
}

/// Lance's verbose plan text of a prepared scanner.
pub fn explain(scanner: Scanner) -> Result<String> {
    session::block_on(async move { scanner.explain_plan(true).await })?
        .map_err(|e| HostError::from_lance("cannot plan", e))
}

pub use crate::stream::{BatchReader, BoxedBatchStream, Polled, PREFETCH_BATCHES};
