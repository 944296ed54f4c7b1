//! lance-host through its C ABI: the `host` side of each piece of work.

use super::*;

pub(crate) struct Host {
    pub(crate) ds: *mut LanceDataset,
}
unsafe impl Send for Host {}
unsafe impl Sync for Host {}

impl Host {
    pub(crate) fn open(uri: &str) -> Host {
        configure_data_cache();
        let opts = storage_options(uri);
        let owned: Vec<CString> = opts.iter().flat_map(|(k, v)| [CString::new(k.as_str()).unwrap(), CString::new(v.as_str()).unwrap()]).collect();
        let mut ptrs: Vec<*const std::ffi::c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let c = CString::new(uri).unwrap();
        let ds = lance_dataset_open(c.as_ptr(), if opts.is_empty() { std::ptr::null() } else { ptrs.as_ptr() }, 0);
        assert!(!ds.is_null(), "open failed");
        Host { ds }
    }

    pub(crate) fn scan_opts(&self, cols: &[*const std::ffi::c_char], filter: Option<&CString>) -> LanceScanOptions {
        let mut o = LanceScanOptions::default();
        o.columns = cols.as_ptr();
        o.num_columns = cols.len();
        o.filter_sql = filter.map(|f| f.as_ptr()).unwrap_or(std::ptr::null());
        o.io_buffer_bytes = env_u64("BENCH_IO_BUFFER");
        o.batch_readahead = env_u64("BENCH_BATCH_READAHEAD") as u32;
        o.fragment_readahead = env_u64("BENCH_FRAGMENT_READAHEAD") as u32;
        o
    }

    pub(crate) fn scan(&self, cols: &[&str], filter: Option<&str>) -> usize {
        let (_o, ptrs) = cstrs(cols);
        let f = filter.map(|f| CString::new(f).unwrap());
        let o = self.scan_opts(&ptrs, f.as_ref());
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_scan_v2(self.ds, &o, &mut st), 0);
        ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    pub(crate) fn scan_2t(&self, cols: &[&str]) -> usize {
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_scan(self.ds, 0, &mut plan), 0);
        let n = lance_split_plan_count(plan);
        let splits: Vec<usize> = (0..n).map(|i| lance_split_plan_get(plan, i) as usize).collect();
        lance_split_plan_free(plan);
        let total: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|t| {
                    let splits = &splits;
                    s.spawn(move || {
                        let (_o, ptrs) = cstrs(cols);
                        let o = self.scan_opts(&ptrs, None);
                        let mut rows = 0;
                        for sp in splits.iter().skip(t).step_by(2) {
                            let mut st = FFI_ArrowArrayStream::empty();
                            assert_eq!(lance_split_scan_v2(self.ds, *sp as *const LanceSplit, &o, &mut st), 0);
                            rows += ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum::<usize>();
                        }
                        rows
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        for sp in splits {
            lance_split_free(sp as *mut LanceSplit);
        }
        total
    }

    pub(crate) fn take(&self, ids: &[u64]) -> usize {
        let (_o, ptrs) = cstrs(&["id", "price"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, ids.as_ptr(), ids.len(), ptrs.as_ptr(), 2, &mut st), 0);
        ArrowArrayStreamReader::try_new(st).unwrap().map(|b| b.unwrap().num_rows()).sum()
    }

    /// One index-segment split alone (its own re-rank), the winners' ids taken by row id.
    pub(crate) fn search_split(&self, split: *const LanceSplit, q: &[f32], nprobes: u32) -> Vec<i64> {
        let col = CString::new("vec").unwrap();
        let (_o, cols) = cstrs(&["_rowid"]);
        let mut query = LanceVectorQuery::default();
        query.column = col.as_ptr();
        query.vector = q.as_ptr() as _;
        query.dimension = q.len();
        query.k = K as u64;
        query.nprobes = nprobes;
        query.refine_factor = REFINE;
        query.columns = cols.as_ptr();
        query.num_columns = 1;
        query.with_row_id = true;
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_split_search_v2(self.ds, split, &query, &mut st), 0);
        let rowids = u64s(&drain(st), "_rowid");
        let (_o, idcol) = cstrs(&["id"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, rowids.as_ptr(), rowids.len(), idcol.as_ptr(), 1, &mut st), 0);
        i64s(&drain(st), "id")
    }

    /// Plan + every split + merge (+ one global refine), `threads` workers; `defer`: the
    /// index-segment splits return approximate candidates re-ranked once after the merge.
    pub(crate) fn search(&self, q: &[f32], nprobes: u32, threads: usize, defer: bool) -> Vec<i64> {
        let col = CString::new("vec").unwrap();
        let mut plan = std::ptr::null_mut();
        assert_eq!(lance_dataset_plan_vector_search(self.ds, col.as_ptr(), 0, true, u64::MAX, &mut plan), 0);
        let n = lance_split_plan_count(plan);
        let splits: Vec<usize> = (0..n).map(|i| lance_split_plan_get(plan, i) as usize).collect();
        lance_split_plan_free(plan);
        let (_o, cols) = cstrs(&["_rowid"]);
        let mut query = LanceVectorQuery::default();
        query.column = col.as_ptr();
        query.vector = q.as_ptr() as _;
        query.dimension = q.len();
        query.k = K as u64;
        query.nprobes = nprobes;
        query.refine_factor = REFINE;
        query.defer_refine = defer;
        query.columns = cols.as_ptr();
        query.num_columns = 1;
        query.with_row_id = true;
        let qaddr = &query as *const LanceVectorQuery as usize;
        let mut results: Vec<(bool, FFI_ArrowArrayStream)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let splits = &splits;
                    s.spawn(move || {
                        // Start every split of this worker first (they run concurrently on the
                        // library's runtime), then collect their results.
                        let started: Vec<(bool, FFI_ArrowArrayStream)> = splits
                            .iter()
                            .skip(t)
                            .step_by(threads)
                            .map(|sp| {
                                let sp = *sp as *const LanceSplit;
                                let mut st = FFI_ArrowArrayStream::empty();
                                let rc = lance_split_search_v2(self.ds, sp, qaddr as *const LanceVectorQuery, &mut st);
                                assert_eq!(rc, 0);
                                (lance_split_kind(sp) == LanceSplitKind::LANCE_SPLIT_INDEX_SEGMENT as i32, st)
                            })
                            .collect();
                        let mut out = Vec::new();
                        for (seg, st) in started {
                            // Workers hand finished results to the coordinator.
                            let batches = drain(st);
                            let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| Arc::new(Schema::empty()));
                            let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
                            out.push((seg, FFI_ArrowArrayStream::new(Box::new(reader))));
                        }
                        out
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        for sp in splits {
            lance_split_free(sp as *mut LanceSplit);
        }
        let mut finals: Vec<FFI_ArrowArrayStream> = Vec::new();
        if defer {
            let mut approx: Vec<FFI_ArrowArrayStream> = Vec::new();
            for (seg, st) in results.drain(..) {
                if seg { approx.push(st) } else { finals.push(st) }
            }
            let mut merged = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_topk_merge(approx.as_mut_ptr(), approx.len(), K as u64 * REFINE as u64, 0, &mut merged), 0);
            let mut refined = FFI_ArrowArrayStream::empty();
            assert_eq!(lance_dataset_refine_v2(self.ds, &query, &mut merged, &mut refined), 0);
            finals.push(refined);
        } else {
            finals.extend(results.drain(..).map(|r| r.1));
        }
        let mut out = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_topk_merge(finals.as_mut_ptr(), finals.len(), K as u64, 0, &mut out), 0);
        let top = drain(out);
        // Late materialization: the winners' ids.
        let rowids = u64s(&top, "_rowid");
        let (_o, idcol) = cstrs(&["id"]);
        let mut st = FFI_ArrowArrayStream::empty();
        assert_eq!(lance_dataset_take_rows(self.ds, rowids.as_ptr(), rowids.len(), idcol.as_ptr(), 1, &mut st), 0);
        i64s(&drain(st), "id")
    }
}
