//! `lance-host-bench engine-*`: the engine-protocol benchmarks (bench/engine.py): split and token
//! sizes, a worker's open and scan of a shipped split, cancellation.

use super::*;

/// Engine-facing measurements (bench/engine.py):
/// - `engine-sizes <dir>`: tables of 10, 100 and 1,000 fragments; bytes of the snapshot token,
///   of one scan split, and of the manifest file;
/// - `engine-token <uri> <file>`: a coordinator pins the table and writes its snapshot token;
/// - `engine-worker <plain|token> <uri> <file>`: a cold worker opens the pinned table (from the
///   token or by URI and version) and scans its first split, MARK pairs around both;
/// - `engine-cancel <uri>`: through a delaying proxy in front of `BENCH_S3_ENDPOINT`, how long
///   `get_next` takes to return after `lance_stream_cancel`, and how far a call context's
///   deadline overshoots.
pub(crate) fn run_engine(args: &[String]) {
    use lance_host::ffi::session::*;
    match args[1].as_str() {
        "engine-sizes" => {
            let dir = std::path::Path::new(&args[2]);
            let mut out = Vec::new();
            for n in [10usize, 100, 1000] {
                let uri = dir.join(format!("frags{n}.lance")).to_string_lossy().into_owned();
                let _ = std::fs::remove_dir_all(&uri);
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(async {
                    let batch = lance_host_testkit::people_batch(0, n as i64 * 10);
                    let params = WriteParams { max_rows_per_file: 10, max_rows_per_group: 10, ..Default::default() };
                    let schema = batch.schema();
                    Dataset::write(RecordBatchIterator::new(vec![Ok(batch)], schema), uri.as_str(), Some(params)).await.unwrap();
                });
                let host = Host::open(&uri);
                let mut p = std::ptr::null_mut();
                let mut len = 0usize;
                assert_eq!(lance_dataset_export_snapshot(host.ds, &mut p, &mut len), 0);
                let token = len;
                lance_bytes_free(p, len);
                let mut plan = std::ptr::null_mut();
                assert_eq!(lance_dataset_plan_scan(host.ds, 0, &mut plan), 0);
                let split = lance_split_plan_get(plan, 0);
                assert_eq!(lance_split_serialize(split, &mut p, &mut len), 0);
                let split_bytes = len;
                lance_bytes_free(p, len);
                lance_split_free(split);
                lance_split_plan_free(plan);
                let manifest: u64 = std::fs::read_dir(std::path::Path::new(&uri).join("_versions"))
                    .unwrap()
                    .map(|e| e.unwrap().metadata().unwrap().len())
                    .max()
                    .unwrap_or(0);
                lance_dataset_free(host.ds);
                out.push(serde_json::json!({"fragments": n, "token_bytes": token, "split_bytes": split_bytes, "manifest_file_bytes": manifest}));
            }
            println!("{}", serde_json::Value::Array(out));
        }
        "engine-token" => {
            let host = Host::open(&args[2]);
            let mut p = std::ptr::null_mut();
            let mut len = 0usize;
            assert_eq!(lance_dataset_export_snapshot(host.ds, &mut p, &mut len), 0);
            std::fs::write(&args[3], unsafe { std::slice::from_raw_parts(p, len) }).unwrap();
            lance_bytes_free(p, len);
            println!("{}", serde_json::json!({"token_bytes": len, "version": lance_dataset_version(host.ds)}));
            lance_dataset_free(host.ds);
        }
        "engine-worker" => {
            let (mode, uri) = (&args[2], &args[3]);
            let token = std::fs::read(&args[4]).unwrap();
            let opts = storage_options(uri);
            let owned: Vec<CString> = opts.iter().flat_map(|(k, v)| [CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap()]).collect();
            let mut ptrs: Vec<*const std::ffi::c_char> = owned.iter().map(|c| c.as_ptr()).collect();
            ptrs.push(std::ptr::null());
            mark("begin open");
            let t = Instant::now();
            let ds = if mode == "token" {
                lance_snapshot_open(token.as_ptr(), token.len(), ptrs.as_ptr())
            } else {
                // What a worker does with a split: open the split's table at its version.
                let version = u64::from_le_bytes(token[5..13].try_into().unwrap());
                let c = CString::new(uri.as_str()).unwrap();
                lance_dataset_open(c.as_ptr(), ptrs.as_ptr(), version)
            };
            assert!(!ds.is_null());
            let open_ms = t.elapsed().as_secs_f64() * 1e3;
            mark("end open");
            mark("begin scan");
            let mut plan = std::ptr::null_mut();
            assert_eq!(lance_dataset_plan_scan(ds, 0, &mut plan), 0);
            let split = lance_split_plan_get(plan, 0);
            let (_o, cols) = cstrs(&["id"]);
            let mut o = LanceScanOptions::default();
            o.columns = cols.as_ptr();
            o.num_columns = 1;
            let mut st = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_split_scan_v2(ds, split, &o, &mut st), 0);
            let rows: usize = drain(st).iter().map(|b| b.num_rows()).sum();
            mark("end scan");
            lance_split_free(split);
            lance_split_plan_free(plan);
            lance_dataset_free(ds);
            println!("{}", serde_json::json!({"mode": mode, "open_ms": open_ms, "rows": rows}));
        }
        "engine-cancel" => {
            let ep = std::env::var("BENCH_S3_ENDPOINT").unwrap();
            let port: u16 = ep.rsplit(':').next().unwrap().parse().unwrap();
            let proxy = lance_host_testkit::DelayProxy::start(port, std::time::Duration::from_millis(20)).unwrap();
            std::env::set_var("BENCH_S3_ENDPOINT", format!("http://127.0.0.1:{}", proxy.port));
            let host = Host::open(&args[2]);
            let (_o, cols) = cstrs(&["id", "vec"]);
            let mut o = LanceScanOptions::default();
            o.columns = cols.as_ptr();
            o.num_columns = 2;
            o.batch_size = 256;
            let mut cancel_ms = Vec::new();
            let mut deadline_over_ms = Vec::new();
            let get_next = |st: &mut FFI_ArrowArrayStream| -> i32 {
                let mut a = arrow::ffi::FFI_ArrowArray::empty();
                unsafe { (st.get_next.unwrap())(st, &mut a) }
            };
            for i in 0..20u64 {
                let mut st = FFI_ArrowArrayStream::empty();
                assert_eq!(lance_dataset_scan_v2(host.ds, &o, &mut st), 0);
                let addr = &st as *const FFI_ArrowArrayStream as usize;
                let after = std::time::Duration::from_millis(100 + 15 * i);
                let canceller = std::thread::spawn(move || {
                    std::thread::sleep(after);
                    let at = Instant::now();
                    assert_eq!(lance_stream_cancel(addr as *const FFI_ArrowArrayStream), 0);
                    at
                });
                let rc = loop {
                    let rc = get_next(&mut st);
                    if rc != 0 {
                        break rc;
                    }
                };
                let back = Instant::now();
                let at = canceller.join().unwrap();
                assert_eq!(rc, 125);
                cancel_ms.push(back.saturating_duration_since(at).as_secs_f64() * 1e3);
                unsafe { (st.release.unwrap())(&mut st) };
                // A deadline instead of a cancel.
                let budget = 100 + 15 * i;
                let ctx = lance_call_context_new(budget);
                let started = Instant::now();
                assert_eq!(lance_call_context_enter(ctx), 0);
                let mut st = FFI_ArrowArrayStream::empty();
                let rc = lance_dataset_scan_v2(host.ds, &o, &mut st);
                assert_eq!(lance_call_context_enter(std::ptr::null()), 0);
                if rc == 0 {
                    while get_next(&mut st) == 0 {}
                    unsafe { (st.release.unwrap())(&mut st) };
                }
                deadline_over_ms.push(started.elapsed().as_secs_f64() * 1e3 - budget as f64);
                lance_call_context_free(ctx);
            }
            lance_dataset_free(host.ds);
            println!("{}", serde_json::json!({"cancel_ms": cancel_ms, "deadline_overshoot_ms": deadline_over_ms}));
        }
        other => panic!("unknown engine work {other}"),
    }
}
