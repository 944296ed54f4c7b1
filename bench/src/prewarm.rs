//! `lance-host-bench prewarm`: the prewarm benchmark's one side (bench/prewarm.py).

use super::*;

/// Prewarm benchmark on one table (`s3://` through the local server): `mode` is
/// - `cold`: the 20 query vectors at `nprobes`, no prewarm;
/// - `warm`: a prewarm of every segment of `vec_idx`, then the same queries;
/// - `segment`: a prewarm of the first index-segment split's segment only, then the 20 queries
///   on that split alone;
/// - `interference`: one thread runs 30 queries while, after its third, the main thread
///   prewarms (`BENCH_PREWARM=0`: it does not), with a timestamp per query.
/// Prints a MARK pair around the prewarm and each query, then one JSON line.
pub(crate) fn run_prewarm(mode: &str, nprobes: u32, uri: &str, facts: &Facts) {
    use lance_host::ffi::index::*;
    use lance_host::ffi::session::*;
    use std::sync::atomic::Ordering::Relaxed;
    let host = Host::open(uri);
    let name = CString::new("vec_idx").unwrap();
    let t0 = Instant::now();
    let mut prewarm = serde_json::Value::Null;
    let do_prewarm = |uuids: Option<&[u8]>| -> serde_json::Value {
        mark("begin prewarm");
        let t = Instant::now();
        let mut io = LanceIoStats::default();
        let rc = match uuids {
            None => lance_dataset_prewarm_index_with_stats_v2(host.ds, name.as_ptr(), &mut io),
            Some(u) => lance_dataset_prewarm_index_segments_v2(host.ds, name.as_ptr(), u.as_ptr(), u.len(), &mut io),
        };
        assert_eq!(rc, 0);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        mark("end prewarm");
        serde_json::json!({"ms": ms, "read_requests": io.read_requests, "read_bytes": io.read_bytes,
            "index_read_requests": io.index_read_requests, "index_read_bytes": io.index_read_bytes,
            "segments_missed": io.index_cache_misses, "segments_hit": io.index_cache_hits})
    };
    let mut queries = Vec::new();
    let mut one = |i: usize, q: &[f32], run: &dyn Fn(&[f32]) -> Vec<i64>| {
        let (b0, i0) = (READ_BYTES.load(Relaxed), INDEX_READ_BYTES.load(Relaxed));
        mark(&format!("begin q{i}"));
        let t = Instant::now();
        let ids = run(q);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        mark(&format!("end q{i}"));
        let (b1, i1) = (READ_BYTES.load(Relaxed), INDEX_READ_BYTES.load(Relaxed));
        queries.push(serde_json::json!({"ms": ms, "index_bytes": i1 - i0, "other_bytes": (b1 - b0) - (i1 - i0),
            "recall": recall(&ids, &facts.truth[i])}));
    };
    match mode {
        "cold" | "warm" => {
            if mode == "warm" {
                prewarm = do_prewarm(None);
            }
            for (i, q) in facts.queries.iter().enumerate() {
                one(i, q, &|q| host.search(q, nprobes, 1, true));
            }
        }
        "segment" => {
            let col = CString::new("vec").unwrap();
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_vector_search(host.ds, col.as_ptr(), 0, true, u64::MAX, &mut plan), 0);
            let split = (0..lance_split_plan_count(plan))
                .map(|i| lance_split_plan_get(plan, i))
                .find(|sp| {
                    let seg = lance_split_kind(*sp) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32;
                    if !seg {
                        lance_split_free(*sp);
                    }
                    seg
                })
                .expect("an index segment split");
            lance_split_plan_free(plan);
            let mut uuid = [0u8; 16];
            assert_eq!(lance_split_segment_uuid(split, uuid.as_mut_ptr()), 0);
            prewarm = do_prewarm(Some(&uuid));
            let split_addr = split as usize;
            for (i, q) in facts.queries.iter().enumerate() {
                one(i, q, &|q| host.search_split(split_addr as *const LanceSplit, q, nprobes));
            }
            lance_split_free(split);
        }
        "interference" => {
            let with = std::env::var("BENCH_PREWARM").as_deref() != Ok("0");
            let done = std::sync::atomic::AtomicUsize::new(0);
            let lat: Vec<(f64, f64)> = std::thread::scope(|s| {
                let fg = s.spawn(|| {
                    (0..30)
                        .map(|i| {
                            let q = &facts.queries[i % facts.queries.len()];
                            let start = t0.elapsed().as_secs_f64() * 1e3;
                            let t = Instant::now();
                            host.search(q, nprobes, 1, true);
                            done.fetch_add(1, Relaxed);
                            (start, t.elapsed().as_secs_f64() * 1e3)
                        })
                        .collect()
                });
                while done.load(Relaxed) < 3 {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if with {
                    let start = t0.elapsed().as_secs_f64() * 1e3;
                    let mut io = LanceIoStats::default();
                    assert_eq!(lance_dataset_prewarm_index_with_stats_v2(host.ds, name.as_ptr(), &mut io), 0);
                    let end = t0.elapsed().as_secs_f64() * 1e3;
                    prewarm = serde_json::json!({"start_ms": start, "end_ms": end});
                }
                fg.join().unwrap()
            });
            queries = lat.iter().map(|(s, ms)| serde_json::json!({"start_ms": s, "ms": ms})).collect();
        }
        other => panic!("unknown prewarm mode {other}"),
    }
    let mut st = LanceSessionStats::default();
    assert_eq!(lance_session_stats_v2(&mut st), 0);
    let ru = rusage();
    println!(
        "{}",
        serde_json::json!({"mode": mode, "nprobes": nprobes, "prewarm": prewarm, "queries": queries,
            "maxrss_kb": ru.0, "index_cache_bytes": st.index_bytes, "index_cache_entries": st.index_entries})
    );
    lance_dataset_free(host.ds);
}
