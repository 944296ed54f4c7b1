//! Writes small, deterministic Lance warehouses for lance-host's tests and demo, and reports
//! the facts it wrote so tests can assert on them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow_array::types::Float32Type;
use arrow_array::{
    FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch, RecordBatchIterator,
    StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use lance::dataset::{Dataset, WriteMode, WriteParams};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Dimension of the `embedding` column.
pub const DIM: i32 = 16;
/// Rows per data file when writing (so every write produces several fragments).
pub const ROWS_PER_FILE: usize = 100;

const CATEGORIES: [&str; 4] = ["alpha", "beta", "gamma", "delta"];

/// Facts about what was written, as `key -> value` (also written to `<root>/FIXTURE`).
#[derive(Debug, Default, Clone)]
pub struct Facts(pub BTreeMap<String, String>);

impl Facts {
    fn set(&mut self, key: &str, value: impl ToString) {
        self.0.insert(key.to_string(), value.to_string());
    }
    pub fn get(&self, key: &str) -> &str {
        self.0
            .get(key)
            .unwrap_or_else(|| panic!("fixture fact '{key}' missing"))
    }
    pub fn get_u64(&self, key: &str) -> u64 {
        self.get(key).parse().expect("numeric fact")
    }
    pub fn to_text(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }
}

pub fn people_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("category", DataType::Utf8, true),
        Field::new("score", DataType::Float64, true),
        Field::new(
            "embedding",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DIM),
            true,
        ),
    ]))
}

/// Deterministic vector of row `id` (seeded by the id).
pub fn embedding_of(id: i64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(id as u64 ^ 0x5eed);
    (0..DIM).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Deterministic score of row `id`.
pub fn score_of(id: i64) -> f64 {
    ((id * 37) % 1000) as f64 / 10.0
}

pub fn category_of(id: i64) -> &'static str {
    CATEGORIES[(id % CATEGORIES.len() as i64) as usize]
}

/// Rows `start..end` of the people table.
pub fn people_batch(start: i64, end: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..end).collect();
    let names: Vec<String> = ids.iter().map(|i| format!("person-{i}")).collect();
    let cats: Vec<&str> = ids.iter().map(|i| category_of(*i)).collect();
    let scores: Vec<f64> = ids.iter().map(|i| score_of(*i)).collect();
    let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        ids.iter()
            .map(|i| Some(embedding_of(*i).into_iter().map(Some).collect::<Vec<_>>())),
        DIM,
    );
    RecordBatch::try_new(
        people_schema(),
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(names)),
            Arc::new(StringArray::from(cats)),
            Arc::new(Float64Array::from(scores)),
            Arc::new(vectors),
        ],
    )
    .expect("people batch")
}

fn events_batch(start: i64, end: i64) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("event_id", DataType::Int64, false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
        Field::new("kind", DataType::Utf8, false),
        Field::new("value", DataType::Float32, true),
    ]));
    let ids: Vec<i64> = (start..end).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(TimestampMillisecondArray::from(
                ids.iter()
                    .map(|i| 1_700_000_000_000 + i * 60_000)
                    .collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                ids.iter()
                    .map(|i| if i % 3 == 0 { "click" } else { "view" })
                    .collect::<Vec<_>>(),
            )),
            Arc::new(Float32Array::from(
                ids.iter().map(|i| *i as f32 * 0.5).collect::<Vec<_>>(),
            )),
        ],
    )
    .expect("events batch")
}

/// Storage options used when writing (empty for local paths).
pub type StorageOptions = std::collections::HashMap<String, String>;

fn params(mode: WriteMode, rows_per_file: usize, opts: &StorageOptions) -> WriteParams {
    let store_params = (!opts.is_empty()).then(|| lance::io::ObjectStoreParams {
        storage_options_accessor: Some(Arc::new(
            lance::io::StorageOptionsAccessor::with_static_options(opts.clone()),
        )),
        ..Default::default()
    });
    WriteParams {
        mode,
        max_rows_per_file: rows_per_file,
        max_rows_per_group: rows_per_file,
        store_params,
        ..Default::default()
    }
}

pub async fn write_batch(
    uri: &str,
    batch: RecordBatch,
    mode: WriteMode,
    opts: &StorageOptions,
) -> Result<Dataset, Error> {
    write_batch_rows(uri, batch, mode, ROWS_PER_FILE, opts).await
}

async fn write_batch_rows(
    uri: &str,
    batch: RecordBatch,
    mode: WriteMode,
    rows_per_file: usize,
    opts: &StorageOptions,
) -> Result<Dataset, Error> {
    let schema = batch.schema();
    let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
    Ok(Dataset::write(reader, uri, Some(params(mode, rows_per_file, opts))).await?)
}

/// The people table: version 1 = ids 0..300 (3 fragments), version 2 = + ids 300..500
/// (2 more fragments), version 3 = rows with id % 10 == 0 deleted.
pub async fn write_people(
    uri: &str,
    facts: &mut Facts,
    prefix: &str,
    opts: &StorageOptions,
) -> Result<(), Error> {
    write_batch(uri, people_batch(0, 300), WriteMode::Create, opts).await?;
    facts.set(&format!("{prefix}.v1.rows"), 300);
    let mut ds = write_batch(uri, people_batch(300, 500), WriteMode::Append, opts).await?;
    facts.set(&format!("{prefix}.v2.rows"), 500);
    ds.delete("id % 10 = 0").await?;
    let visible: Vec<i64> = (0..500).filter(|i| i % 10 != 0).collect();
    facts.set(&format!("{prefix}.v3.rows"), visible.len());
    facts.set(&format!("{prefix}.v3.sum_id"), visible.iter().sum::<i64>());
    facts.set(
        &format!("{prefix}.v3.rows_id_lt_100"),
        visible.iter().filter(|i| **i < 100).count(),
    );
    facts.set(&format!("{prefix}.v1.sum_id"), (0..300i64).sum::<i64>());
    facts.set(&format!("{prefix}.versions"), 3);
    facts.set(&format!("{prefix}.fragments"), 5);
    facts.set(&format!("{prefix}.dim"), DIM);
    facts.set(&format!("{prefix}.uri"), uri);
    Ok(())
}

/// The events table: version 1 = 250 rows, version 2 = + 150 rows.
pub async fn write_events(uri: &str, facts: &mut Facts, prefix: &str) -> Result<(), Error> {
    let none = StorageOptions::new();
    write_batch(uri, events_batch(0, 250), WriteMode::Create, &none).await?;
    write_batch(uri, events_batch(250, 400), WriteMode::Append, &none).await?;
    facts.set(&format!("{prefix}.v1.rows"), 250);
    facts.set(&format!("{prefix}.v2.rows"), 400);
    facts.set(
        &format!("{prefix}.v2.clicks"),
        (0..400).filter(|i| i % 3 == 0).count(),
    );
    facts.set(&format!("{prefix}.versions"), 2);
    facts.set(&format!("{prefix}.uri"), uri);
    Ok(())
}

/// Namespaces of the nested (manifest layout) warehouse, as paths.
pub const NESTED_NAMESPACES: &[&[&str]] = &[
    &["bulk"],
    &["prod"],
    &["prod", "analytics"],
    &["prod", "analytics", "daily"],
    &["staging"],
];

/// Tables of the nested warehouse: (namespace path, table name, rows).
pub fn nested_tables() -> Vec<(Vec<&'static str>, String, i64)> {
    let mut t = vec![
        (vec![], "top".to_string(), 12),
        (vec!["prod"], "orders".to_string(), 40),
        (vec!["prod", "analytics"], "clicks".to_string(), 75),
        (vec!["prod", "analytics", "daily"], "rollup".to_string(), 5),
        (vec!["staging"], "scratch".to_string(), 3),
    ];
    for i in 0..7 {
        t.push((vec!["bulk"], format!("t{i:02}"), 10 + i));
    }
    t
}

/// A warehouse in the manifest layout with nested namespaces, written through Lance's
/// directory namespace.
pub async fn write_nested_warehouse(root: &Path, facts: &mut Facts) -> Result<(), Error> {
    use lance_namespace::models::CreateNamespaceRequest;
    if root.exists() {
        std::fs::remove_dir_all(root)?;
    }
    std::fs::create_dir_all(root)?;
    let root_str = root.to_str().ok_or("non-UTF-8 path")?.to_string();
    let ns = lance_namespace_impls::ConnectBuilder::new("dir")
        .property("root", &root_str)
        .connect()
        .await?;
    for path in NESTED_NAMESPACES {
        let mut req = CreateNamespaceRequest::new();
        req.id = Some(path.iter().map(|s| s.to_string()).collect());
        ns.create_namespace(req).await?;
    }
    for (path, name, rows) in nested_tables() {
        let mut id: Vec<String> = path.iter().map(|s| s.to_string()).collect();
        id.push(name.clone());
        let batch = events_batch(0, rows);
        let schema = batch.schema();
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema);
        Dataset::write_into_namespace(reader, ns.clone(), id.clone(), None).await?;
        facts.set(&format!("nested.{}.rows", id.join("$")), rows);
    }
    facts.set("nested.root", &root_str);
    Ok(())
}

/// Element type width of the `vectors` table's vector columns.
pub const VDIM: i32 = 16;
/// Rows per data file of the `vectors` table.
pub const VROWS_PER_FILE: usize = 300;

pub fn vectors_schema() -> SchemaRef {
    let fsl = |name: &str, t: DataType, dim: i32| {
        Field::new(
            name,
            DataType::FixedSizeList(Arc::new(Field::new("item", t, true)), dim),
            true,
        )
    };
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("category", DataType::Utf8, true),
        fsl("embedding", DataType::Float32, VDIM),
        fsl("embedding_hnsw", DataType::Float32, VDIM),
        fsl("embedding_f16", DataType::Float16, VDIM),
        fsl("embedding_f64", DataType::Float64, VDIM),
        fsl("bits", DataType::UInt8, 8),
    ]))
}

/// Deterministic vector of row `id` in the `vectors` table: clustered around a few centres so
/// IVF partitions are meaningful.
pub fn vector_of(id: i64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(id as u64 * 7919 + 17);
    let centre = (id % 8) as f32;
    (0..VDIM)
        .map(|d| {
            let c = if (d as f32 - centre).abs() < 2.0 { 3.0 } else { 0.0 };
            c + rng.random_range(-1.0f32..1.0)
        })
        .collect()
}

/// Deterministic bit vector (8 bytes) of row `id`.
pub fn bits_of(id: i64) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(id as u64 ^ 0xb175);
    (0..8).map(|_| rng.random::<u8>()).collect()
}

pub fn vector_category_of(id: i64) -> &'static str {
    if id % 5 == 0 {
        "rare"
    } else {
        "common"
    }
}

pub fn vectors_batch(start: i64, end: i64) -> RecordBatch {
    use arrow_array::types::{Float16Type, Float64Type, UInt8Type};
    let ids: Vec<i64> = (start..end).collect();
    let v32 = |f: fn(i64) -> Vec<f32>| {
        FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            ids.iter().map(|i| Some(f(*i).into_iter().map(Some).collect::<Vec<_>>())),
            VDIM,
        )
    };
    let hnsw_vec = |i: i64| vector_of(i + 100_000);
    let f16 = FixedSizeListArray::from_iter_primitive::<Float16Type, _, _>(
        ids.iter().map(|i| {
            Some(
                vector_of(*i)
                    .into_iter()
                    .map(|x| Some(half::f16::from_f32(x)))
                    .collect::<Vec<_>>(),
            )
        }),
        VDIM,
    );
    let f64s = FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
        ids.iter().map(|i| Some(vector_of(*i).into_iter().map(|x| Some(x as f64)).collect::<Vec<_>>())),
        VDIM,
    );
    let bits = FixedSizeListArray::from_iter_primitive::<UInt8Type, _, _>(
        ids.iter().map(|i| Some(bits_of(*i).into_iter().map(Some).collect::<Vec<_>>())),
        8,
    );
    RecordBatch::try_new(
        vectors_schema(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringArray::from(
                ids.iter().map(|i| vector_category_of(*i)).collect::<Vec<_>>(),
            )),
            Arc::new(v32(vector_of)),
            Arc::new(v32(hnsw_vec)),
            Arc::new(f16),
            Arc::new(f64s),
            Arc::new(bits),
        ],
    )
    .expect("vectors batch")
}

/// Whether row `id` of the `vectors` table is deleted in the latest version.
pub fn vector_deleted(id: i64) -> bool {
    id % 7 == 3
}

/// The vectors table (latest version):
/// - ids 0..1200 in 4 fragments, indexed by `emb_pq` (IVF_PQ, L2) — segment 1;
/// - ids 1200..1800 in 2 fragments appended, then `optimize` adds segment 2 of `emb_pq`;
/// - `emb_cos` (IVF_FLAT, cosine) on the same column and `emb_hnsw` (IVF_HNSW_SQ, L2) on
///   `embedding_hnsw`, built over the first 1800 rows;
/// - `id_btree` (BTREE) on `id`;
/// - ids 1800..2100 appended afterwards (one fragment no index covers);
/// - rows with `id % 7 == 3` deleted.
pub async fn write_vectors(uri: &str, facts: &mut Facts, opts: &StorageOptions) -> Result<(), Error> {
    use lance::index::vector::VectorIndexParams;
    use lance::index::DatasetIndexExt;
    use lance_index::optimize::OptimizeOptions;
    use lance_index::vector::hnsw::builder::HnswBuildParams;
    use lance_index::vector::ivf::IvfBuildParams;
    use lance_index::vector::sq::builder::SQBuildParams;
    use lance_index::IndexType;
    use lance_linalg::distance::MetricType;

    let write = |batch: RecordBatch, mode: WriteMode| write_batch_rows(uri, batch, mode, VROWS_PER_FILE, opts);
    let mut ds = write(vectors_batch(0, 1200), WriteMode::Create).await?;
    const PQ_PARTITIONS: usize = 4;
    const HNSW_PARTITIONS: usize = 2;
    let pq = VectorIndexParams::ivf_pq(PQ_PARTITIONS, 8, 4, MetricType::L2, 20);
    ds.create_index(&["embedding"], IndexType::Vector, Some("emb_pq".into()), &pq, true)
        .await?;
    ds = write(vectors_batch(1200, 1800), WriteMode::Append).await?;
    let mut append = OptimizeOptions::append();
    append.index_names = Some(vec!["emb_pq".to_string()]);
    ds.optimize_indices(&append).await?;
    let cos = VectorIndexParams::ivf_flat(4, MetricType::Cosine);
    ds.create_index(&["embedding"], IndexType::Vector, Some("emb_cos".into()), &cos, true)
        .await?;
    let hnsw = VectorIndexParams::with_ivf_hnsw_sq_params(
        MetricType::L2,
        IvfBuildParams::new(HNSW_PARTITIONS),
        HnswBuildParams::default(),
        SQBuildParams::default(),
    );
    ds.create_index(&["embedding_hnsw"], IndexType::Vector, Some("emb_hnsw".into()), &hnsw, true)
        .await?;
    let btree = lance_index::scalar::ScalarIndexParams::for_builtin(
        lance_index::scalar::BuiltinIndexType::BTree,
    );
    ds.create_index(&["id"], IndexType::Scalar, Some("id_btree".into()), &btree, true)
        .await?;
    ds = write(vectors_batch(1800, 2100), WriteMode::Append).await?;
    ds.delete("id % 7 = 3").await?;
    let visible = (0..2100).filter(|i| !vector_deleted(*i)).count();
    facts.set("vectors.rows", visible);
    facts.set("vectors.total_ids", 2100);
    facts.set("vectors.fragments", 7);
    facts.set("vectors.uncovered_fragments", 1);
    facts.set("vectors.dim", VDIM);
    facts.set("vectors.uri", uri);
    facts.set("vectors.version", ds.version().version);
    facts.set("vectors.emb_pq.partitions", PQ_PARTITIONS);
    facts.set("vectors.emb_hnsw.partitions", HNSW_PARTITIONS);
    Ok(())
}

/// Rows of the blobs table.
pub const BLOB_ROWS: i64 = 40;

/// Length of row `id`'s blob in the blobs table: None = null; empty, small (inline), medium
/// (packed) and 300,000-byte (dedicated) values.
pub fn blob_len(id: i64) -> Option<usize> {
    match id % 10 {
        7 => None,
        3 => Some(0),
        1 | 6 => Some(300_000),
        _ => Some(((id * 997) % 20_000) as usize),
    }
}

/// Byte `j` of row `id`'s blob (every value is this function, so readers can check any range).
pub fn blob_byte(id: i64, j: usize) -> u8 {
    ((id as usize * 31 + j * 7) % 251) as u8
}

pub fn blob_deleted(id: i64) -> bool {
    id % 13 == 5
}

/// The blobs table (file format 2.2): `id` and a Blob v2 column `payload` (inline up to 4 KiB,
/// packed up to 64 KiB, dedicated above; nulls and empty values), 20 rows per fragment, rows
/// with `blob_deleted(id)` deleted.
pub async fn write_blobs(uri: &str, facts: &mut Facts, opts: &StorageOptions) -> Result<(), Error> {
    use lance::blob::{blob_field_with_options, BlobArrayBuilder, BlobFieldOptions};
    let field = blob_field_with_options(
        "payload",
        true,
        BlobFieldOptions::default()
            .with_inline_size_threshold(4096)
            .with_dedicated_size_threshold(std::num::NonZeroUsize::new(65_536).unwrap()),
    );
    let mut blobs = BlobArrayBuilder::new(BLOB_ROWS as usize);
    for id in 0..BLOB_ROWS {
        match blob_len(id) {
            None => blobs.push_null()?,
            Some(0) => blobs.push_empty()?,
            Some(n) => blobs.push_bytes((0..n).map(|j| blob_byte(id, j)).collect::<Vec<u8>>())?,
        }
    }
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false), field]));
    let batch = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..BLOB_ROWS)), blobs.finish()?],
    )?;
    let mut p = params(WriteMode::Create, 20, opts);
    p.data_storage_version = Some(lance_file::version::LanceFileVersion::V2_2);
    let reader = RecordBatchIterator::new(vec![Ok(batch.clone())], batch.schema());
    let mut ds = Dataset::write(reader, uri, Some(p)).await?;
    ds.delete("id % 13 = 5").await?;
    facts.set("blobs.uri", uri);
    facts.set("blobs.rows", (0..BLOB_ROWS).filter(|i| !blob_deleted(*i)).count());
    Ok(())
}

/// Write the people and vectors tables under an object-store `root` (e.g. `s3://bucket/wh`)
/// with `opts`; facts use the prefixes `people` and `vectors`.
pub async fn write_remote_tables(root: &str, opts: &StorageOptions) -> Result<Facts, Error> {
    let root = root.trim_end_matches('/');
    let mut facts = Facts::default();
    write_people(&format!("{root}/people.lance"), &mut facts, "people", opts).await?;
    write_vectors(&format!("{root}/vectors.lance"), &mut facts, opts).await?;
    facts.set("root", root);
    Ok(facts)
}

/// Words of the docs table: a Zipf-like draw from 200 words `t000`..`t199` (seeded per row),
/// with the phrase "quick brown fox" planted in every 6th row.
pub fn doc_text(id: i64) -> String {
    let mut state = (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1234_5678;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let len = 4 + (next() % 24) as usize;
    let mut words: Vec<String> = (0..len)
        .map(|_| {
            // Squaring a uniform draw favours small ranks (a Zipf-like skew).
            let u = (next() % 10_000) as f64 / 10_000.0;
            format!("t{:03}", (u * u * 200.0) as usize)
        })
        .collect();
    if id % 6 == 0 {
        let at = (next() % (words.len() as u64 + 1)) as usize;
        for (i, w) in ["quick", "brown", "fox"].iter().enumerate() {
            words.insert(at + i, w.to_string());
        }
    }
    words.join(" ")
}

/// Dimension of the docs table's `emb` column (for hybrid search; no vector index: flat).
pub const DOCS_DIM: i32 = 8;

pub fn doc_embedding(id: i64) -> Vec<f32> {
    (0..DOCS_DIM as i64).map(|j| (((id * 31 + j * 17) % 97) as f32) / 97.0).collect()
}

pub fn docs_batch(start: i64, end: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..end).collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
        Field::new(
            "emb",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DOCS_DIM),
            false,
        ),
    ]));
    let texts: Vec<String> = ids.iter().map(|i| doc_text(*i)).collect();
    let emb = arrow_array::FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        ids.iter().map(|i| Some(doc_embedding(*i).into_iter().map(Some).collect::<Vec<_>>())),
        DOCS_DIM,
    );
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(arrow_array::StringArray::from(texts)),
            Arc::new(emb),
        ],
    )
    .expect("docs batch")
}

pub const DOCS_ROWS: i64 = 1400;

pub fn doc_deleted(id: i64) -> bool {
    id % 11 == 3
}

/// The docs table for full-text search: ids 0..800 indexed by INVERTED index `text_idx` (with
/// positions), ids 800..1200 appended and indexed as a second segment, ids 1200..1400 an
/// unindexed tail, then rows with `doc_deleted(id)` deleted. 200 rows per fragment.
pub async fn write_docs(uri: &str, facts: &mut Facts, opts: &StorageOptions) -> Result<(), Error> {
    use lance::index::DatasetIndexExt;
    use lance_index::optimize::OptimizeOptions;
    use lance_index::scalar::inverted::InvertedIndexParams;
    use lance_index::IndexType;
    let mut ds = write_batch_rows(uri, docs_batch(0, 800), WriteMode::Create, 200, opts).await?;
    let params = InvertedIndexParams::default().with_position(true);
    ds.create_index(&["text"], IndexType::Inverted, Some("text_idx".into()), &params, true)
        .await?;
    let mut ds = write_batch_rows(uri, docs_batch(800, 1200), WriteMode::Append, 200, opts).await?;
    ds.optimize_indices(&OptimizeOptions::append())
        .await?;
    let mut ds = write_batch_rows(uri, docs_batch(1200, DOCS_ROWS), WriteMode::Append, 200, opts).await?;
    ds.delete("id % 11 = 3").await?;
    facts.set("docs.uri", uri);
    facts.set("docs.rows", (0..DOCS_ROWS).filter(|i| !doc_deleted(*i)).count());
    Ok(())
}

/// Write the warehouse under `root` (created if missing; existing tables are replaced) and
/// the `FIXTURE` facts file beside them.
pub async fn write_warehouse(root: &Path) -> Result<Facts, Error> {
    std::fs::create_dir_all(root)?;
    let root = std::fs::canonicalize(root)?;
    let mut facts = Facts::default();
    for name in ["people.lance", "events.lance"] {
        let p = root.join(name);
        if p.exists() {
            std::fs::remove_dir_all(&p)?;
        }
    }
    let people = root.join("people.lance");
    let none = StorageOptions::new();
    write_people(people.to_str().ok_or("non-UTF-8 path")?, &mut facts, "people", &none).await?;
    let events = root.join("events.lance");
    write_events(events.to_str().ok_or("non-UTF-8 path")?, &mut facts, "events").await?;
    facts.set("root", root.display());
    write_nested_warehouse(&root.join("nested"), &mut facts).await?;
    let vectors = root.join("vectors.lance");
    if vectors.exists() {
        std::fs::remove_dir_all(&vectors)?;
    }
    write_vectors(vectors.to_str().ok_or("non-UTF-8 path")?, &mut facts, &none).await?;
    let docs = root.join("docs.lance");
    if docs.exists() {
        std::fs::remove_dir_all(&docs)?;
    }
    write_docs(docs.to_str().ok_or("non-UTF-8 path")?, &mut facts, &none).await?;
    let blobs = root.join("blobs.lance");
    if blobs.exists() {
        std::fs::remove_dir_all(&blobs)?;
    }
    write_blobs(blobs.to_str().ok_or("non-UTF-8 path")?, &mut facts, &none).await?;
    std::fs::write(root.join("FIXTURE"), facts.to_text())?;
    Ok(facts)
}

/// Index types of the verified matrix: (index name = vector column name, Lance index type).
pub const MATRIX_VECTOR_INDEXES: [(&str, &str); 6] = [
    ("ivf_flat", "IVF_FLAT"),
    ("ivf_sq", "IVF_SQ"),
    ("ivf_pq", "IVF_PQ"),
    ("ivf_hnsw_flat", "IVF_HNSW_FLAT"),
    ("ivf_hnsw_sq", "IVF_HNSW_SQ"),
    ("ivf_hnsw_pq", "IVF_HNSW_PQ"),
];
/// Scalar indexes of the matrix table: (index name, column, Lance index type).
/// The INVERTED index of the matrix table (with positions): (index name, column).
pub const MATRIX_TEXT_INDEX: (&str, &str) = ("text_inverted", "text");
pub const MATRIX_SCALAR_INDEXES: [(&str, &str, &str); 2] =
    [("id_btree", "id", "BTREE"), ("category_bitmap", "category", "BITMAP")];
/// Rows of the matrix table: 0..MATRIX_INDEXED are covered by every index, the rest are
/// appended afterwards; rows with `matrix_deleted(id)` are deleted last.
pub const MATRIX_ROWS: i64 = 1000;
pub const MATRIX_INDEXED: i64 = 800;

pub fn matrix_deleted(id: i64) -> bool {
    id % 11 == 5
}

pub fn matrix_category(id: i64) -> &'static str {
    CATEGORIES[(id % 4) as usize]
}

fn matrix_batch(start: i64, end: i64) -> RecordBatch {
    let mut fields = vec![
        Field::new("id", DataType::Int64, false),
        Field::new("category", DataType::Utf8, false),
    ];
    let mut columns: Vec<Arc<dyn arrow_array::Array>> = vec![
        Arc::new(Int64Array::from_iter_values(start..end)),
        Arc::new(StringArray::from_iter_values((start..end).map(matrix_category))),
    ];
    fields.push(Field::new(MATRIX_TEXT_INDEX.1, DataType::Utf8, true));
    columns.push(Arc::new(StringArray::from_iter_values((start..end).map(doc_text))));
    for (name, _) in MATRIX_VECTOR_INDEXES {
        fields.push(Field::new(
            name,
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), VDIM),
            true,
        ));
        columns.push(Arc::new(FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
            (start..end).map(|i| Some(vector_of(i).into_iter().map(Some).collect::<Vec<_>>())),
            VDIM,
        )));
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("matrix batch")
}

/// One table of the verified matrix in Lance file format `format` ("2.0", "2.1" or "2.2"):
/// ids 0..MATRIX_INDEXED, then one index of each type in `MATRIX_VECTOR_INDEXES` (each on its
/// own column, L2, 2 partitions), `MATRIX_SCALAR_INDEXES` and `MATRIX_TEXT_INDEX`, then ids
/// MATRIX_INDEXED..MATRIX_ROWS appended unindexed, then the `matrix_deleted` rows deleted.
pub async fn write_matrix_table(uri: &str, format: &str, opts: &StorageOptions) -> Result<(), Error> {
    use lance::index::vector::VectorIndexParams;
    use lance::index::DatasetIndexExt;
    use lance_file::version::LanceFileVersion;
    use lance_index::scalar::{BuiltinIndexType, ScalarIndexParams};
    use lance_index::vector::hnsw::builder::HnswBuildParams;
    use lance_index::vector::ivf::IvfBuildParams;
    use lance_index::vector::pq::PQBuildParams;
    use lance_index::vector::sq::builder::SQBuildParams;
    use lance_index::IndexType;
    use lance_linalg::distance::MetricType as M;

    let version = match format {
        "2.0" => LanceFileVersion::V2_0,
        "2.1" => LanceFileVersion::V2_1,
        "2.2" => LanceFileVersion::V2_2,
        other => return Err(format!("unknown file format {other}").into()),
    };
    let write = |batch: RecordBatch, mode: WriteMode| {
        let mut p = params(mode, 400, opts);
        p.data_storage_version = Some(version);
        let schema = batch.schema();
        async move {
            Dataset::write(RecordBatchIterator::new(vec![Ok(batch)], schema), uri, Some(p)).await
        }
    };
    let mut ds = write(matrix_batch(0, MATRIX_INDEXED), WriteMode::Create).await?;
    let ivf = || IvfBuildParams::new(2);
    for (name, kind) in MATRIX_VECTOR_INDEXES {
        let p = match kind {
            "IVF_FLAT" => VectorIndexParams::with_ivf_flat_params(M::L2, ivf()),
            "IVF_SQ" => VectorIndexParams::with_ivf_sq_params(M::L2, ivf(), SQBuildParams::default()),
            "IVF_PQ" => VectorIndexParams::with_ivf_pq_params(M::L2, ivf(), PQBuildParams::new(4, 8)),
            "IVF_HNSW_FLAT" => VectorIndexParams::ivf_hnsw(M::L2, ivf(), HnswBuildParams::default()),
            "IVF_HNSW_SQ" => VectorIndexParams::with_ivf_hnsw_sq_params(
                M::L2,
                ivf(),
                HnswBuildParams::default(),
                SQBuildParams::default(),
            ),
            "IVF_HNSW_PQ" => VectorIndexParams::with_ivf_hnsw_pq_params(
                M::L2,
                ivf(),
                HnswBuildParams::default(),
                PQBuildParams::new(4, 8),
            ),
            other => return Err(format!("unknown index type {other}").into()),
        };
        ds.create_index(&[name], IndexType::Vector, Some(name.into()), &p, true).await?;
    }
    for (name, column, kind) in MATRIX_SCALAR_INDEXES {
        let builtin = if kind == "BTREE" { BuiltinIndexType::BTree } else { BuiltinIndexType::Bitmap };
        let p = ScalarIndexParams::for_builtin(builtin);
        ds.create_index(&[column], IndexType::Scalar, Some(name.into()), &p, true).await?;
    }
    let (name, column) = MATRIX_TEXT_INDEX;
    let p = lance_index::scalar::inverted::InvertedIndexParams::default().with_position(true);
    ds.create_index(&[column], IndexType::Inverted, Some(name.into()), &p, true).await?;
    let mut ds = write(matrix_batch(MATRIX_INDEXED, MATRIX_ROWS), WriteMode::Append).await?;
    ds.delete("id % 11 = 5").await?;
    Ok(())
}

/// A TCP proxy on 127.0.0.1 that delays every chunk the upstream server sends back by a fixed
/// time: a deliberately slow object store for cancellation and deadline tests. Stops (and
/// closes its listener) on drop; open connections end when either side closes.
pub struct DelayProxy {
    pub port: u16,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl DelayProxy {
    pub fn start(upstream_port: u16, delay: std::time::Duration) -> std::io::Result<DelayProxy> {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopping = stop.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", upstream_port)) else { continue };
                let (mut c_read, mut u_write) = (client.try_clone().unwrap(), upstream.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n @ 1..) = c_read.read(&mut buf) {
                        if u_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = u_write.shutdown(Shutdown::Write);
                });
                let (mut u_read, mut c_write) = (upstream, client);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16 * 1024];
                    while let Ok(n @ 1..) = u_read.read(&mut buf) {
                        std::thread::sleep(delay);
                        if c_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = c_write.shutdown(Shutdown::Both);
                });
            }
        });
        Ok(DelayProxy { port, stop })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Faults a [`FaultProxy`] injects, changeable while it runs. Counters say how many of each
/// were injected.
#[derive(Debug, Default, Clone)]
pub struct Faults {
    /// Added before every response is sent.
    pub latency: std::time::Duration,
    /// The next N requests get this status (e.g. 503) without reaching the server.
    pub status_burst: Option<(u16, u32)>,
    /// The next N responses are cut mid-body and the connection closed.
    pub reset_next: u32,
    /// The next N responses announce their full length but send only half of the body.
    pub truncate_next: u32,
    /// Every request whose path contains this gets 404, persistently.
    pub not_found: Option<String>,
    /// When set, a request signed with another access key id (SigV4 `Credential=<key>/...`, or
    /// unsigned) gets 403 AccessDenied: the server's authentication, which moto leaves off.
    pub allowed_access_key: Option<String>,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct FaultCounts {
    pub requests: u64,
    pub statuses: u64,
    pub resets: u64,
    pub truncations: u64,
    pub not_found: u64,
    /// Requests refused for their credentials, and the HEAD requests among them.
    pub denied: u64,
    pub denied_heads: u64,
}

/// An HTTP proxy on 127.0.0.1 in front of an S3-compatible server that injects latency, status
/// bursts (500/503), connection resets mid-body, truncated bodies and persistent 404s on
/// chosen objects, and refuses requests signed with an access key it does not allow. It handles one request per upstream connection (it asks the server to close
/// after each), so every fault applies to exactly one request. Stops on drop.
pub struct FaultProxy {
    pub port: u16,
    faults: Arc<std::sync::Mutex<(Faults, FaultCounts)>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl FaultProxy {
    pub fn start(upstream_port: u16) -> std::io::Result<FaultProxy> {
        use std::net::TcpListener;
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let faults: Arc<std::sync::Mutex<(Faults, FaultCounts)>> = Arc::default();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (f, s) = (faults.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let f = f.clone();
                std::thread::spawn(move || {
                    let _ = serve(client, upstream_port, &f);
                });
            }
        });
        Ok(FaultProxy { port, faults, stop })
    }

    pub fn set(&self, faults: Faults) {
        self.faults.lock().unwrap().0 = faults;
    }

    pub fn counts(&self) -> FaultCounts {
        self.faults.lock().unwrap().1
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Serve the requests of one client connection.
fn serve(
    mut client: std::net::TcpStream,
    upstream_port: u16,
    faults: &std::sync::Mutex<(Faults, FaultCounts)>,
) -> std::io::Result<()> {
    use std::io::{Read, Write};
    client.set_read_timeout(Some(std::time::Duration::from_secs(120)))?;
    let mut pending: Vec<u8> = Vec::new();
    loop {
        // One request head (and body, if it announces one).
        let head_end = loop {
            if let Some(i) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut buf = [0u8; 16 * 1024];
            let n = client.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            pending.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&pending[..head_end]).into_owned();
        let body_len = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
            .unwrap_or(0);
        while pending.len() < head_end + body_len {
            let mut buf = [0u8; 16 * 1024];
            let n = client.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            pending.extend_from_slice(&buf[..n]);
        }
        let request: Vec<u8> = pending.drain(..head_end + body_len).collect();
        let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let access_key = head.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            if !name.trim().eq_ignore_ascii_case("authorization") {
                return None;
            }
            let cred = value.split("Credential=").nth(1)?;
            Some(cred.split('/').next().unwrap_or("").to_string())
        });
        // Decide this request's fault.
        let (latency, status, reset, truncate, not_found) = {
            let mut g = faults.lock().unwrap();
            let (f, c) = &mut *g;
            c.requests += 1;
            let mut status = None;
            if let Some(allowed) = &f.allowed_access_key {
                if access_key.as_deref() != Some(allowed.as_str()) {
                    status = Some(403);
                    c.denied += 1;
                    if head.starts_with("HEAD ") {
                        c.denied_heads += 1;
                    }
                }
            }
            if let (None, Some((code, n))) = (status, f.status_burst) {
                if n > 0 {
                    status = Some(code);
                    f.status_burst = (n > 1).then_some((code, n - 1));
                    c.statuses += 1;
                }
            }
            let not_found = status.is_none() && f.not_found.as_ref().is_some_and(|p| path.contains(p.as_str()));
            if not_found {
                c.not_found += 1;
            }
            let reset = status.is_none() && !not_found && f.reset_next > 0;
            if reset {
                f.reset_next -= 1;
                c.resets += 1;
            }
            let truncate = status.is_none() && !not_found && !reset && f.truncate_next > 0;
            if truncate {
                f.truncate_next -= 1;
                c.truncations += 1;
            }
            (f.latency, status, reset, truncate, not_found)
        };
        std::thread::sleep(latency);
        if let Some(code) = status.or(not_found.then_some(404)) {
            let reason = match code {
                403 => "Forbidden",
                404 => "Not Found",
                500 => "Internal Server Error",
                503 => "Service Unavailable",
                _ => "Error",
            };
            let body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{}</Code><Message>injected by the fault proxy</Message><Key>{path}</Key></Error>",
                match code {
                    403 => "AccessDenied",
                    404 => "NoSuchKey",
                    _ => "ServiceUnavailable",
                }
            );
            write!(
                client,
                "HTTP/1.1 {code} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
                body.len()
            )?;
            // A response to HEAD has no body (its length is the one GET would have).
            if !head.starts_with("HEAD ") {
                client.write_all(body.as_bytes())?;
            }
            continue;
        }
        // Forward on a fresh upstream connection that closes after this one response.
        let mut upstream = std::net::TcpStream::connect(("127.0.0.1", upstream_port))?;
        let head_text = String::from_utf8_lossy(&request[..head_end]).into_owned();
        let mut new_head = String::new();
        for line in head_text.split("\r\n") {
            if line.is_empty() || line.to_ascii_lowercase().starts_with("connection:") {
                continue;
            }
            new_head.push_str(line);
            new_head.push_str("\r\n");
        }
        new_head.push_str("Connection: close\r\n\r\n");
        upstream.write_all(new_head.as_bytes())?;
        upstream.write_all(&request[head_end..])?;
        let mut response = Vec::new();
        upstream.read_to_end(&mut response)?;
        let split = response.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4).unwrap_or(response.len());
        // Keep the client connection open for its next request.
        let resp_head = String::from_utf8_lossy(&response[..split]).replace("Connection: close", "Connection: keep-alive");
        let body = &response[split..];
        if reset || truncate {
            client.write_all(resp_head.as_bytes())?;
            client.write_all(&body[..body.len() / 2])?;
            client.flush()?;
            let _ = client.shutdown(std::net::Shutdown::Both);
            return Ok(());
        }
        client.write_all(resp_head.as_bytes())?;
        client.write_all(body)?;
    }
}
