//! Hostile input at the C boundary: a seeded random driver calls every kind of entry point with
//! mutated arguments — random and invalid-UTF-8 strings, huge and zero sizes, random and
//! damaged split, token and Substrait bytes, contradictory options — on the shared fixture.
//! Goal: 0 crashes, aborts or hangs; every failure carries a code and a message; every stream
//! either ends or fails with an errno and a message. `LANCE_HOST_FUZZ_SEED` and
//! `LANCE_HOST_FUZZ_ITERS` override the seed and the number of calls.

use std::collections::BTreeMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::ffi_stream::FFI_ArrowArrayStream;
use lance_host::ffi::catalog::*;
use lance_host::ffi::dataset::*;
use lance_host::ffi::index::*;
use lance_host::ffi::split::*;
use lance_host::ffi::scan::*;
use lance_host::ffi::search::*;
use lance_host::ffi::take::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::*;
use crate::vector::vectors_uri;

const WORDS: &[&str] = &[
    "id", "category", "embedding", "embedding_hnsw", "_rowid", "_rowaddr", "no_such", "<", ">=", "=",
    "AND", "OR", "NOT", "(", ")", "'", "''", "1", "-1", "1e309", "NULL", "%", "--", ";", "\\", "7",
    "'rare'", "IS", "IN", "LIKE", "*", "\u{fffd}", "é", "\u{1F600}",
];

fn size(rng: &mut StdRng) -> u64 {
    match rng.random_range(0..10) {
        0 => 0,
        1 => 1,
        2 => rng.random_range(2..50),
        3 => 1 << 20,
        4 => 1 << 40,
        5 => u64::MAX,
        6 => i64::MAX as u64,
        7 => u32::MAX as u64,
        _ => rng.random_range(0..5000),
    }
}

fn text(rng: &mut StdRng) -> String {
    match rng.random_range(0..8) {
        0 => String::new(),
        1 => "x".repeat(if rng.random_bool(0.3) { 1 << 20 } else { 300 }),
        2 => (0..rng.random_range(1..30)).map(|_| rng.random_range(32u8..127) as char).collect(),
        3 => (0..rng.random_range(1..20)).map(|_| char::from_u32(rng.random_range(0x80..0x2FFFF)).unwrap_or('?')).collect(),
        _ => (0..rng.random_range(1..7)).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect::<Vec<_>>().join(" "),
    }
}

/// A C string argument: NULL, invalid UTF-8, or text (interior NULs removed).
enum Arg {
    Null,
    Bytes(Vec<u8>),
}

impl Arg {
    fn random(rng: &mut StdRng) -> Arg {
        match rng.random_range(0..10) {
            0 => Arg::Null,
            1 => Arg::Bytes(vec![0xc3, 0x28, 0]),
            2 => Arg::Bytes(vec![0xff, 0xfe, b'a', 0]),
            _ => Arg::Bytes(CString::new(text(rng).replace('\0', "")).unwrap().into_bytes_with_nul()),
        }
    }
    fn of(s: &str) -> Arg {
        Arg::Bytes(CString::new(s).unwrap().into_bytes_with_nul())
    }
    fn ptr(&self) -> *const c_char {
        match self {
            Arg::Null => std::ptr::null(),
            Arg::Bytes(b) => b.as_ptr() as *const c_char,
        }
    }
}

fn bytes(rng: &mut StdRng, valid: &[u8]) -> Vec<u8> {
    let mut b = match rng.random_range(0..3) {
        0 => (0..rng.random_range(0..200)).map(|_| rng.random()).collect(),
        _ => valid.to_vec(),
    };
    for _ in 0..rng.random_range(0..4) {
        match rng.random_range(0..4) {
            0 if !b.is_empty() => {
                let i = rng.random_range(0..b.len());
                b[i] ^= 1 << rng.random_range(0..8);
            }
            1 if !b.is_empty() => b.truncate(rng.random_range(0..b.len())),
            2 => b.extend((0..rng.random_range(1..20)).map(|_| rng.random::<u8>())),
            _ => {}
        }
    }
    b
}

struct Tally {
    calls: u64,
    ok: u64,
    errors: BTreeMap<String, u64>,
    stream_errors: BTreeMap<i32, u64>,
}

impl Tally {
    /// Record a call's code; a failure must have a known code and a message.
    fn code(&mut self, what: &str, code: i32) {
        self.calls += 1;
        if code == 0 {
            self.ok += 1;
            return;
        }
        let name = unsafe { CStr::from_ptr(lance_host::ffi::error::lance_error_code_name(code)) }.to_string_lossy().into_owned();
        assert_ne!(name, "LANCE_ERR_UNKNOWN", "{what}: unknown code {code}");
        assert_eq!(last_code(), code, "{what}: last error code differs from the returned one");
        let msg = last_message();
        assert!(!msg.is_empty(), "{what}: failure {name} without a message");
        assert!(msg.len() <= 4096, "{what}: a message of {} bytes", msg.len());
        *self.errors.entry(name).or_default() += 1;
    }
    fn ptr<T>(&mut self, what: &str, p: *mut T) -> Option<*mut T> {
        if p.is_null() {
            self.code(what, last_code());
            assert_ne!(last_code(), 0, "{what}: NULL without an error");
            None
        } else {
            self.code(what, 0);
            Some(p)
        }
    }
    /// Drain a stream: it ends, or fails with an errno and a message.
    fn stream(&mut self, what: &str, mut st: FFI_ArrowArrayStream) {
        let mut batches = 0;
        loop {
            let mut a = arrow::ffi::FFI_ArrowArray::empty();
            let rc = unsafe { (st.get_next.unwrap())(&mut st, &mut a) };
            if rc != 0 {
                let p = unsafe { (st.get_last_error.unwrap())(&mut st) };
                assert!(!p.is_null(), "{what}: stream error {rc} without a message");
                let msg = unsafe { CStr::from_ptr(p) }.to_string_lossy();
                assert!(!msg.is_empty() && msg.len() <= 4096, "{what}: stream message {msg:?}");
                *self.stream_errors.entry(rc).or_default() += 1;
                break;
            }
            if a.is_released() {
                break;
            }
            batches += 1;
            if batches > 100_000 {
                panic!("{what}: endless stream");
            }
        }
        unsafe { (st.release.unwrap())(&mut st) };
    }
}

fn split_bytes(ds: &Ds, vector: bool) -> Vec<Vec<u8>> {
    let mut plan = std::ptr::null_mut();
    let col = cstr("embedding");
    let rc = if vector {
        lance_dataset_plan_vector_search(ds.ptr(), col.as_ptr(), 1, true, 0, &mut plan)
    } else {
        lance_dataset_plan_scan(ds.ptr(), 0, &mut plan)
    };
    assert_eq!(rc, 0);
    let mut out = Vec::new();
    for i in 0..lance_split_plan_count(plan) {
        let s = lance_split_plan_get(plan, i);
        let mut p = std::ptr::null_mut();
        let mut n = 0;
        assert_eq!(lance_split_serialize(s, &mut p, &mut n), 0);
        out.push(unsafe { std::slice::from_raw_parts(p, n) }.to_vec());
        lance_bytes_free(p, n);
        lance_split_free(s);
    }
    lance_split_plan_free(plan);
    out
}

#[test]
fn hostile_input_never_crashes_and_always_explains_itself() {
    let seed: u64 = std::env::var("LANCE_HOST_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x1a2b_3c4d);
    let iters: u64 = std::env::var("LANCE_HOST_FUZZ_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(1500);
    let mut rng = StdRng::seed_from_u64(seed);
    let uri = vectors_uri();
    let ds = Ds::open(&uri, 0);
    let scan_splits = split_bytes(&ds, false);
    let vector_splits = split_bytes(&ds, true);
    let mut tp = std::ptr::null_mut();
    let mut tn = 0;
    assert_eq!(lance_dataset_export_snapshot(ds.ptr(), &mut tp, &mut tn), 0);
    let token = unsafe { std::slice::from_raw_parts(tp, tn) }.to_vec();
    lance_bytes_free(tp, tn);
    let mut t = Tally { calls: 0, ok: 0, errors: BTreeMap::new(), stream_errors: BTreeMap::new() };

    // A watchdog: no single call may hang.
    let current = Arc::new(AtomicU64::new(0));
    let started_at = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    {
        let (current, started_at) = (current.clone(), started_at.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_secs(1));
            let s = started_at.load(Ordering::SeqCst);
            if s > 0 && epoch.elapsed().as_secs() > s + 120 {
                eprintln!("fuzz: call {} (seed {seed}) did not return within 120 s", current.load(Ordering::SeqCst));
                std::process::abort();
            }
        });
    }

    for i in 0..iters {
        current.store(i, Ordering::SeqCst);
        started_at.store(epoch.elapsed().as_secs().max(1), Ordering::SeqCst);
        let op = rng.random_range(0..13);
        match op {
            0 => {
                // open
                let u = if rng.random_bool(0.5) { Arg::of(&uri) } else { Arg::random(&mut rng) };
                let (k, v) = (Arg::random(&mut rng), Arg::random(&mut rng));
                let opts = [k.ptr(), v.ptr(), std::ptr::null()];
                let opts_ptr = if rng.random_bool(0.5) { std::ptr::null() } else { opts.as_ptr() };
                if let Some(p) = t.ptr("open", lance_dataset_open(u.ptr(), opts_ptr, size(&mut rng))) {
                    lance_dataset_free(p);
                }
            }
            1 | 2 | 3 => {
                // scan / explain / count with random options
                let cols: Vec<Arg> = (0..rng.random_range(0..4)).map(|_| if rng.random_bool(0.6) { Arg::of(WORDS[rng.random_range(0..6)]) } else { Arg::random(&mut rng) }).collect();
                let col_ptrs: Vec<*const c_char> = cols.iter().map(Arg::ptr).collect();
                let filter = if rng.random_bool(0.5) { Arg::Null } else { Arg::random(&mut rng) };
                let substrait = bytes(&mut rng, b"");
                let frags: Vec<u64> = (0..rng.random_range(0..4)).map(|_| if rng.random_bool(0.7) { rng.random_range(0..8) } else { size(&mut rng) }).collect();
                let mut o = default_opts();
                o.columns = col_ptrs.as_ptr();
                o.num_columns = col_ptrs.len();
                o.filter_sql = filter.ptr();
                if rng.random_bool(0.1) {
                    o.filter_substrait = substrait.as_ptr();
                    o.filter_substrait_len = substrait.len();
                }
                o.limit = if rng.random_bool(0.5) { -1 } else { size(&mut rng) as i64 };
                o.offset = if rng.random_bool(0.5) { 0 } else { size(&mut rng) as i64 };
                o.batch_size = if rng.random_bool(0.5) { 0 } else { size(&mut rng) };
                o.with_row_id = rng.random();
                o.with_row_addr = rng.random();
                o.fragment_ids = frags.as_ptr();
                o.num_fragment_ids = frags.len();
                o.scan_in_order = rng.random();
                o.batch_readahead = size(&mut rng) as u32;
                o.fragment_readahead = size(&mut rng) as u32;
                o.io_buffer_bytes = if rng.random_bool(0.5) { 0 } else { size(&mut rng) };
                if rng.random_bool(0.05) {
                    // A struct_size from a broken or older caller (never larger than the struct:
                    // the driver stays memory-safe).
                    o.struct_size = rng.random_range(0..o.struct_size);
                }
                match op {
                    1 => {
                        let mut st = FFI_ArrowArrayStream::empty();
                        let rc = lance_dataset_scan_v2(ds.ptr(), &o, &mut st);
                        t.code("scan", rc);
                        if rc == 0 {
                            t.stream("scan", st);
                        }
                    }
                    2 => {
                        let mut out = std::ptr::null_mut();
                        let rc = lance_dataset_explain_scan_v2(ds.ptr(), &o, &mut out);
                        t.code("explain", rc);
                        if rc == 0 {
                            lance_string_free(out);
                        }
                    }
                    _ => {
                        let mut n = 0;
                        t.code("count", lance_dataset_count_rows_where_v2(ds.ptr(), filter.ptr(), &mut n, std::ptr::null_mut()));
                    }
                }
            }
            4 | 5 => {
                // split scan / split search on random or damaged split bytes
                let pool = if op == 4 { &scan_splits } else { &vector_splits };
                let pick = rng.random_range(0..pool.len());
                let b = bytes(&mut rng, &pool[pick]);
                let Some(split) = t.ptr("deserialize", lance_split_deserialize(b.as_ptr(), b.len())) else { continue };
                let mut st = FFI_ArrowArrayStream::empty();
                if op == 4 {
                    let rc = lance_split_scan_v2(ds.ptr(), split, &default_opts(), &mut st);
                    t.code("split scan", rc);
                    if rc == 0 {
                        t.stream("split scan", st);
                    }
                } else {
                    let dim = match rng.random_range(0..4) {
                        0 => 16,
                        1 => 0,
                        2 => rng.random_range(1..64),
                        _ => 17,
                    };
                    let element = rng.random_range(-1..8);
                    // A buffer large enough for `dim` elements of any type.
                    let buf: Vec<f64> = (0..dim).map(|_| rng.random_range(-1e3..1e3)).collect();
                    let col = if rng.random_bool(0.8) { Arg::of("embedding") } else { Arg::random(&mut rng) };
                    let pre = if rng.random_bool(0.7) { Arg::Null } else { Arg::random(&mut rng) };
                    let cols: Vec<Arg> = (0..rng.random_range(0..3)).map(|_| Arg::of(WORDS[rng.random_range(0..6)])).collect();
                    let col_ptrs: Vec<*const c_char> = cols.iter().map(Arg::ptr).collect();
                    let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
                    assert_eq!(lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>()), 0);
                    let mut q = unsafe { q.assume_init() };
                    q.column = col.ptr();
                    q.vector = if rng.random_bool(0.05) { std::ptr::null() } else { buf.as_ptr() as *const _ };
                    q.dimension = dim;
                    q.element_type = element;
                    q.k = size(&mut rng);
                    q.metric = rng.random_range(-1..6);
                    q.nprobes = size(&mut rng) as u32;
                    q.refine_factor = size(&mut rng) as u32;
                    q.ef = size(&mut rng) as u32;
                    q.prefilter_sql = pre.ptr();
                    q.columns = col_ptrs.as_ptr();
                    q.num_columns = col_ptrs.len();
                    q.with_row_id = rng.random();
                    q.defer_refine = rng.random();
                    let rc = lance_split_search_v2(ds.ptr(), split, &q, &mut st);
                    t.code("split search", rc);
                    if rc == 0 {
                        t.stream("split search", st);
                    }
                }
                lance_split_free(split);
            }
            6 => {
                // take
                let n = match rng.random_range(0..4) {
                    0 => 0,
                    1 => 100_000,
                    _ => rng.random_range(1..50),
                };
                let ids: Vec<u64> = (0..n).map(|_| if rng.random_bool(0.7) { rng.random_range(0..2100) } else { size(&mut rng) }).collect();
                let dup = rng.random_bool(0.2);
                let cols: Vec<Arg> = (0..if dup { 3 } else { rng.random_range(0..3) })
                    .map(|_| if dup { Arg::of("id") } else { Arg::of(WORDS[rng.random_range(0..6)]) })
                    .collect();
                let col_ptrs: Vec<*const c_char> = cols.iter().map(Arg::ptr).collect();
                let mut st = FFI_ArrowArrayStream::empty();
                let rc = lance_dataset_take_rows(ds.ptr(), ids.as_ptr(), ids.len(), col_ptrs.as_ptr(), col_ptrs.len(), &mut st);
                t.code("take", rc);
                if dup && rc == 0 {
                    panic!("take accepted a column requested 3 times");
                }
                if rc == 0 {
                    t.stream("take", st);
                }
            }
            7 => {
                // merge small scans with random k / offset
                let mut streams: Vec<FFI_ArrowArrayStream> = (0..rng.random_range(0..3))
                    .map(|_| {
                        let mut st = FFI_ArrowArrayStream::empty();
                        assert_eq!(lance_dataset_scan_v2(ds.ptr(), &default_opts(), &mut st), 0);
                        st
                    })
                    .collect();
                let mut out = FFI_ArrowArrayStream::empty();
                let rc = lance_topk_merge(streams.as_mut_ptr(), streams.len(), size(&mut rng), size(&mut rng), &mut out);
                t.code("merge", rc);
                if rc == 0 {
                    t.stream("merge", out);
                }
            }
            8 => {
                // per-segment prewarm with random bytes and names
                let name = if rng.random_bool(0.6) { Arg::of("emb_pq") } else { Arg::random(&mut rng) };
                let b = bytes(&mut rng, &[0u8; 32]);
                t.code("prewarm segments", lance_dataset_prewarm_index_segments_v2(ds.ptr(), name.ptr(), b.as_ptr(), b.len(), std::ptr::null_mut()));
            }
            9 => {
                // snapshot tokens, damaged
                let b = bytes(&mut rng, &token);
                if let Some(p) = t.ptr("snapshot open", lance_snapshot_open(b.as_ptr(), b.len(), std::ptr::null())) {
                    lance_dataset_free(p);
                }
            }
            10 => {
                // dir catalogs with random roots and properties
                let (k1, v1) = (Arg::of(if rng.random_bool(0.7) { "root" } else { "type" }), Arg::random(&mut rng));
                let (k2, v2) = (Arg::random(&mut rng), Arg::random(&mut rng));
                let props = [k1.ptr(), v1.ptr(), k2.ptr(), v2.ptr(), std::ptr::null()];
                if let Some(cat) = t.ptr("catalog open", lance_catalog_open(props.as_ptr())) {
                    let mut tables = std::ptr::null_mut();
                    let rc = lance_catalog_list_tables(cat, std::ptr::null(), 0, &mut tables);
                    t.code("list tables", rc);
                    if rc == 0 {
                        lance_string_list_free(tables);
                    }
                    lance_catalog_free(cat);
                }
            }
            11 => {
                // vector planning with random column, metric and grouping
                let col = if rng.random_bool(0.5) { Arg::of(WORDS[rng.random_range(0..4)]) } else { Arg::random(&mut rng) };
                let mut plan = std::ptr::null_mut();
                let rc = lance_dataset_plan_vector_search(ds.ptr(), col.ptr(), rng.random_range(-2..7), rng.random(), size(&mut rng), &mut plan);
                t.code("plan vector", rc);
                if rc == 0 {
                    lance_split_plan_free(plan);
                }
            }
            _ => {
                // refine with a candidate stream that is not one (a plain scan) or an empty k
                let mut cands = FFI_ArrowArrayStream::empty();
                assert_eq!(lance_dataset_scan_v2(ds.ptr(), &default_opts(), &mut cands), 0);
                let buf = vec![0.5f32; 16];
                let col = cstr("embedding");
                let mut q = std::mem::MaybeUninit::<LanceVectorQuery>::uninit();
                assert_eq!(lance_vector_query_init_v2(q.as_mut_ptr(), std::mem::size_of::<LanceVectorQuery>()), 0);
                let mut q = unsafe { q.assume_init() };
                q.column = col.as_ptr();
                q.vector = buf.as_ptr() as *const _;
                q.dimension = 16;
                q.k = size(&mut rng);
                let mut out = FFI_ArrowArrayStream::empty();
                let rc = lance_dataset_refine_v2(ds.ptr(), &q, &mut cands, &mut out);
                t.code("refine", rc);
                if rc == 0 {
                    t.stream("refine", out);
                }
            }
        }
    }
    started_at.store(0, Ordering::SeqCst);
    println!(
        "FUZZ seed={seed} calls={} ok={} errors={:?} stream_errors={:?}",
        t.calls, t.ok, t.errors, t.stream_errors
    );
    assert!(t.ok > 0 && !t.errors.is_empty(), "the driver exercised only one outcome");
    assert!(!t.errors.contains_key("LANCE_ERR_PANIC"), "a panic was caught at the boundary: a bug to fix");
}
