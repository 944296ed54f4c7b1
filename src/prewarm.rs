//! Loading a named index (all its segments) into the process-wide index cache.

use std::sync::Arc;

use futures::TryStreamExt;
use lance::index::DatasetIndexExt;
use lance::Dataset;

use crate::error::{HostError, Result};
use crate::index::{self, IndexInfo};
use crate::plan::vector_column;
use crate::session;
use crate::snapshot::Snapshot;
use crate::stats::{IoStats, OpStats};

/// Block until every segment of index `name` in the snapshot is in the session's index cache;
/// returns the I/O the prewarm caused.
///
/// Lance's prewarm loads each segment's structures; for vector indexes a one-row warm-up
/// search per segment then caches what the first real search would otherwise still load
/// (measured: one index-cache entry per segment), so later searches in the process are
/// served entirely from the cache.
pub fn prewarm_index(snapshot: &Snapshot, name: &str) -> Result<IoStats> {
    if name.is_empty() {
        return Err(HostError::invalid("index name is empty"));
    }
    let info = index::find_index(snapshot, name)?;
    let stats = OpStats::default();
    let ds = stats.dataset(snapshot);
    let what = format!("cannot prewarm index '{name}'");
    let owned = name.to_string();
    let ds2 = ds.clone();
    session::block_on(async move { ds2.prewarm_index(&owned).await })?
        .map_err(|e| HostError::from_lance(&what, e))?;
    if info.is_vector() {
        warm_up_searches(snapshot, ds, &info, &stats).map_err(|e| e.context(&what))?;
    }
    Ok(stats.snapshot())
}

fn warm_up_searches(snapshot: &Snapshot, ds: Arc<Dataset>, info: &IndexInfo, stats: &OpStats) -> Result<()> {
    let (dim, element) = vector_column(snapshot, &info.column)?;
    let zeros: Arc<dyn arrow::array::Array> =
        Arc::new(arrow::array::Float32Array::from(vec![0.0f32; dim as usize]));
    let query = arrow::compute::cast(&zeros, &element)
        .map_err(|e| HostError::internal(format!("cannot build warm-up query: {e}")))?;
    let metric = info.metric.map(|m| m.to_lance());
    for seg in &info.segments {
        if seg.fragment_ids.is_empty() {
            continue;
        }
        let mut scanner = ds.scan();
        let lance_err = |e| HostError::from_lance("warm-up search failed", e);
        scanner.project(&[] as &[&str]).map_err(lance_err)?;
        scanner.with_row_id();
        scanner.prefilter(true);
        scanner.nearest(&info.column, query.as_ref(), 1).map_err(lance_err)?;
        scanner.with_index_segments(vec![seg.uuid]).map_err(lance_err)?;
        if let Some(m) = metric {
            scanner.distance_metric(m);
        }
        stats.attach(&mut scanner);
        session::block_on(async move {
            let stream = scanner.try_into_stream().await?;
            stream.try_collect::<Vec<_>>().await.map(|_| ())
        })?
        .map_err(lance_err)?;
    }
    Ok(())
}
