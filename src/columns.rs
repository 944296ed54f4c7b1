//! Names of the columns the library adds to search results, in one place for every module
//! that produces or merges them.

/// Distance of a vector-search row (float32, smaller is nearer).
pub const DISTANCE: &str = "_distance";
/// The query's position in a batch search's output.
pub const QUERY_INDEX: &str = "query_index";
/// The score column of full-text results (float32, higher is better).
pub const SCORE: &str = "_score";
/// The fused score column of a reciprocal-rank-fusion merge.
pub const RELEVANCE: &str = "_relevance_score";
