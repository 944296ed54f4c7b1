//! Shared fixture and helpers: the warehouse is written once per test process by the testkit,
//! and every helper goes through the exported C functions.

use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;

use arrow::array::{Array, Int64Array, RecordBatch};
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use lance_host::ffi::dataset::*;
use lance_host::ffi::error::*;
use lance_host::ffi::scan::*;
use lance_host_testkit::Facts;

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub facts: Facts,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

/// The shared warehouse (people + events tables), written on first use.
pub fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        if let Some(root) = std::env::var_os("LANCE_HOST_TEST_WAREHOUSE") {
            // A child process re-uses its parent's warehouse.
            let root = PathBuf::from(root);
            let text = std::fs::read_to_string(root.join("FIXTURE")).expect("FIXTURE");
            let facts = Facts(
                text.lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            return Fixture {
                _dir: tempfile::tempdir().unwrap(),
                root,
                facts,
            };
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("warehouse");
        // The testkit uses its own runtime, separate from the library's.
        let facts = std::thread::spawn({
            let root = root.clone();
            move || {
                tokio::runtime::Runtime::new()
                    .unwrap()
                    .block_on(lance_host_testkit::write_warehouse(&root))
                    .expect("write warehouse")
            }
        })
        .join()
        .unwrap();
        let root = std::fs::canonicalize(root).unwrap();
        Fixture {
            _dir: dir,
            root,
            facts,
        }
    })
}

pub fn people_uri() -> String {
    fixture().facts.get("people.uri").to_string()
}

pub fn events_uri() -> String {
    fixture().facts.get("events.uri").to_string()
}

pub fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

pub fn last_code() -> i32 {
    lance_last_error_code() as i32
}

pub fn last_message() -> String {
    unsafe { CStr::from_ptr(lance_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// Assert that `code` is `expected` and the thread's last error message contains `needle`.
#[track_caller]
pub fn assert_err(code: i32, expected: lance_host::LanceErrorCode, needle: &str) {
    assert_eq!(
        code, expected as i32,
        "expected {expected:?}, got code {code}: {}",
        last_message()
    );
    assert_eq!(last_code(), expected as i32);
    let msg = last_message();
    assert!(
        msg.contains(needle),
        "message {msg:?} does not mention {needle:?}"
    );
}

/// An owned dataset handle freed on drop.
#[derive(Debug)]
pub struct Ds(pub *mut LanceDataset);

impl Ds {
    pub fn open(uri: &str, version: u64) -> Ds {
        let u = cstr(uri);
        let p = lance_dataset_open(u.as_ptr(), std::ptr::null(), version);
        assert!(!p.is_null(), "open {uri}@{version}: {}", last_message());
        Ds(p)
    }
    pub fn ptr(&self) -> *const LanceDataset {
        self.0
    }
}

impl Drop for Ds {
    fn drop(&mut self) {
        lance_dataset_free(self.0);
    }
}

unsafe impl Send for Ds {}
unsafe impl Sync for Ds {}

/// Owned C strings plus the pointer array a C caller would build.
pub struct CStrs {
    _owned: Vec<CString>,
    pub ptrs: Vec<*const c_char>,
}

pub fn cstrs(items: &[&str]) -> CStrs {
    let owned: Vec<CString> = items.iter().map(|s| cstr(s)).collect();
    let ptrs = owned.iter().map(|c| c.as_ptr()).collect();
    CStrs {
        _owned: owned,
        ptrs,
    }
}

/// A NULL-terminated key/value array as a C caller builds it; keep the first element alive
/// while the pointers are used.
pub fn kv(pairs: &[(&str, &str)]) -> (CStrs, Vec<*const c_char>) {
    let flat: Vec<&str> = pairs.iter().flat_map(|(k, v)| [*k, *v]).collect();
    let strs = cstrs(&flat);
    let mut ptrs = strs.ptrs.clone();
    ptrs.push(std::ptr::null());
    (strs, ptrs)
}

/// Import a C stream and read it to the end.
pub fn read_stream(stream: FFI_ArrowArrayStream) -> Result<Vec<RecordBatch>, String> {
    let reader = ArrowArrayStreamReader::try_new(stream).map_err(|e| e.to_string())?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// Scan through the C ABI and collect all batches.
pub fn scan(ds: &Ds, opts: &LanceScanOptions) -> Result<Vec<RecordBatch>, (i32, String)> {
    let mut stream = FFI_ArrowArrayStream::empty();
    let code = lance_dataset_scan_v2(ds.ptr(), opts, &mut stream);
    if code != 0 {
        return Err((code, last_message()));
    }
    read_stream(stream).map_err(|m| (-1, m))
}

pub fn default_opts() -> LanceScanOptions {
    let mut o = std::mem::MaybeUninit::<LanceScanOptions>::uninit();
    assert_eq!(lance_scan_options_init_v2(o.as_mut_ptr(), std::mem::size_of::<LanceScanOptions>()), 0);
    unsafe { o.assume_init() }
}

pub fn total_rows(batches: &[RecordBatch]) -> usize {
    batches.iter().map(|b| b.num_rows()).sum()
}

/// All values of an Int64 column across batches.
pub fn i64_column(batches: &[RecordBatch], name: &str) -> Vec<i64> {
    let mut out = Vec::new();
    for b in batches {
        let col = b
            .column_by_name(name)
            .unwrap_or_else(|| panic!("column {name} missing"));
        let ints = col.as_any().downcast_ref::<Int64Array>().expect("int64");
        out.extend((0..ints.len()).map(|i| ints.value(i)));
    }
    out
}

pub fn u64_column(batches: &[RecordBatch], name: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for b in batches {
        let col = b
            .column_by_name(name)
            .unwrap_or_else(|| panic!("column {name} missing"));
        let ints = col
            .as_any()
            .downcast_ref::<arrow::array::UInt64Array>()
            .expect("uint64");
        out.extend((0..ints.len()).map(|i| ints.value(i)));
    }
    out
}

/// Run one ignored test of this binary in a fresh process (empty session and caches), with the
/// shared warehouse and `envs`; returns its stdout after checking it printed `CHILD-OK`.
pub fn run_child(test: &str, envs: &[(&str, &std::ffi::OsStr)]) -> String {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--ignored", "--nocapture"])
        .env("LANCE_HOST_TEST_WAREHOUSE", fixture().root.as_os_str());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.contains("CHILD-OK"),
        "child {test} failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Read a stream to its end through the C callbacks; returns its batches and its I/O
/// statistics (final at the end), then releases it.
pub fn collect_with_stats(stream: &mut FFI_ArrowArrayStream) -> (Vec<RecordBatch>, LanceIoStats) {
    let mut schema = arrow::ffi::FFI_ArrowSchema::empty();
    assert_eq!(unsafe { (stream.get_schema.unwrap())(stream, &mut schema) }, 0);
    let mut out = Vec::new();
    loop {
        let mut array = arrow::ffi::FFI_ArrowArray::empty();
        let rc = unsafe { (stream.get_next.unwrap())(stream, &mut array) };
        if rc != 0 {
            let msg = unsafe { std::ffi::CStr::from_ptr((stream.get_last_error.unwrap())(stream)) };
            panic!("stream failed: {}", msg.to_string_lossy());
        }
        if array.is_released() {
            break;
        }
        let data = unsafe { arrow::ffi::from_ffi(array, &schema) }.unwrap();
        out.push(RecordBatch::from(arrow::array::StructArray::from(data)));
    }
    let mut stats = LanceIoStats::default();
    assert_eq!(lance_stream_io_stats_v2(stream, &mut stats), 0, "{}", last_message());
    unsafe { (stream.release.unwrap())(stream) };
    assert!(stream.release.is_none());
    (out, stats)
}

/// `collect_with_stats`, keeping only the number of rows.
pub fn drain_in_place(stream: &mut FFI_ArrowArrayStream) -> (usize, LanceIoStats) {
    let (batches, stats) = collect_with_stats(stream);
    (total_rows(&batches), stats)
}

/// Add one operation's I/O counters to a running total.
pub fn add_io(total: &mut LanceIoStats, s: &LanceIoStats) {
    total.read_requests += s.read_requests;
    total.read_bytes += s.read_bytes;
    total.index_read_requests += s.index_read_requests;
    total.index_read_bytes += s.index_read_bytes;
    total.index_cache_hits += s.index_cache_hits;
    total.index_cache_misses += s.index_cache_misses;
    total.data_cache_hits += s.data_cache_hits;
    total.data_cache_misses += s.data_cache_misses;
    total.data_cache_hit_bytes += s.data_cache_hit_bytes;
}

/// The test binary's allocator: the system allocator, counting allocations of at least
/// `large_allocs_from` bytes while that is non-zero (0, the default, counts nothing). A test
/// that uses it runs in its own process (`run_child`), since other tests allocate concurrently.
pub struct CountingAlloc;

static LARGE_FROM: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static LARGE_COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Start counting allocations of `bytes` or more (0 stops counting); returns the count so far.
pub fn large_allocs_from(bytes: usize) -> usize {
    use std::sync::atomic::Ordering;
    LARGE_FROM.store(bytes, Ordering::SeqCst);
    LARGE_COUNT.swap(0, Ordering::SeqCst)
}

fn count_large(size: usize) {
    use std::sync::atomic::Ordering;
    let from = LARGE_FROM.load(Ordering::Relaxed);
    if from != 0 && size >= from {
        LARGE_COUNT.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_large(layout.size());
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_large(layout.size());
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        count_large(new_size);
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}
