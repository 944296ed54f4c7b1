//! Loading a named index (all its segments) into the process-wide index cache.

use lance::index::DatasetIndexExt;

use crate::error::{HostError, Result};
use crate::index;
use crate::session;
use crate::snapshot::Snapshot;

/// Block until every segment of index `name` in the snapshot is in the session's index cache.
pub fn prewarm_index(snapshot: &Snapshot, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(HostError::invalid("index name is empty"));
    }
    index::find_index(snapshot, name)?;
    let ds = snapshot.dataset.clone();
    let name = name.to_string();
    let what = format!("cannot prewarm index '{name}'");
    session::block_on(async move { ds.prewarm_index(&name).await })?
        .map_err(|e| HostError::from_lance(&what, e))
}
