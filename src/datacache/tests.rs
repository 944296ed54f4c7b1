use super::*;
use foyer::Code;
use std::sync::atomic::AtomicU64;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::ObjectStoreExt;
use object_store::{
    CopyOptions, ListResult, MultipartUpload, PutMultipartOptions, PutOptions, PutPayload, PutResult,
    RenameOptions,
};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// An in-memory store that counts GETs and can be slowed down or made to fail.
#[derive(Debug, Default)]
struct Mock {
    inner: InMemory,
    gets: AtomicU64,
    bytes: AtomicU64,
    slow: AtomicBool,
    fail: AtomicBool,
}

impl std::fmt::Display for Mock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mock")
    }
}

#[async_trait::async_trait]
impl ObjectStore for Mock {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> object_store::Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(&self, l: &Path, o: PutMultipartOptions) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        self.gets.fetch_add(1, Ordering::SeqCst);
        if self.slow.load(Ordering::SeqCst) {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        if self.fail.load(Ordering::SeqCst) {
            return Err(generic("injected failure"));
        }
        let r = self.inner.get_opts(l, o).await?;
        self.bytes.fetch_add(r.range.end - r.range.start, Ordering::SeqCst);
        Ok(r)
    }
    fn delete_stream(&self, l: BoxStream<'static, object_store::Result<Path>>) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(l)
    }
    fn list(&self, p: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(p)
    }
    async fn list_with_delimiter(&self, p: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(p).await
    }
    async fn copy_opts(&self, f: &Path, t: &Path, o: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(f, t, o).await
    }
    async fn rename_opts(&self, f: &Path, t: &Path, o: RenameOptions) -> object_store::Result<()> {
        self.inner.rename_opts(f, t, o).await
    }
}

#[derive(Default)]
struct Obs {
    requests: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Observer for Obs {
    fn storage_read(&self, _path: &Path, _bytes: u64) {
        self.requests.fetch_add(1, Ordering::SeqCst);
    }
    fn cache_hit(&self, blocks: u64, _bytes: u64) {
        self.hits.fetch_add(blocks, Ordering::SeqCst);
    }
    fn cache_miss(&self, blocks: u64) {
        self.misses.fetch_add(blocks, Ordering::SeqCst);
    }
}

const FILE: &str = "bucket/t.lance/data/0001.lance";

fn content(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

async fn setup(len: usize, config: DataCacheConfig) -> (Arc<Mock>, Arc<dyn ObjectStore>, Arc<DataCache>, Vec<u8>) {
    let mock = Arc::new(Mock::default());
    let data = content(len, 7);
    mock.inner.put(&Path::from(FILE), data.clone().into()).await.unwrap();
    let inner: Arc<dyn ObjectStore> = mock.clone();
    let cache = DataCache::build(&config).await.unwrap().unwrap();
    (mock, inner, cache, data)
}

fn small(block: u64) -> DataCacheConfig {
    DataCacheConfig { memory_bytes: 64 << 20, block_bytes: block, ..Default::default() }
}

async fn read(cache: &Arc<DataCache>, inner: &Arc<dyn ObjectStore>, r: Range<u64>) -> (Bytes, Arc<Obs>) {
    let obs = Arc::new(Obs::default());
    let o: Arc<dyn Observer> = obs.clone();
    let opts = GetOptions { range: Some(GetRange::Bounded(r)), ..Default::default() };
    let got = cache.get_opts(inner, "s3$bucket|", &Path::from(FILE), opts, &o).await.unwrap();
    (got.bytes().await.unwrap(), obs)
}

#[test]
fn repeated_reads_hit_and_partial_reads_fetch_only_missing_blocks() {
    rt().block_on(async {
        let (mock, inner, cache, data) = setup(100_000, small(4096)).await;
        let (b, obs) = read(&cache, &inner, 5000..9000).await;
        assert_eq!(&b[..], &data[5000..9000]);
        assert_eq!(obs.requests.load(Ordering::SeqCst), 1);
        assert_eq!(obs.misses.load(Ordering::SeqCst), 2, "blocks 1 and 2");
        // Same read: from the cache, no request.
        let (b, obs) = read(&cache, &inner, 5000..9000).await;
        assert_eq!(&b[..], &data[5000..9000]);
        assert_eq!((obs.requests.load(Ordering::SeqCst), obs.hits.load(Ordering::SeqCst)), (0, 2));
        // A wider read: blocks 0 and 3..=4 are new, 1..=2 cached between them: one request
        // (the small gap is fetched again rather than making two requests).
        let before = mock.bytes.load(Ordering::SeqCst);
        let (b, obs) = read(&cache, &inner, 100..20000).await;
        assert_eq!(&b[..], &data[100..20000]);
        assert_eq!(obs.requests.load(Ordering::SeqCst), 1);
        assert_eq!(obs.hits.load(Ordering::SeqCst), 2);
        assert_eq!(mock.bytes.load(Ordering::SeqCst) - before, 4096 * 5);

        // The object's tail (short last block) and a read past the end.
        let (b, _) = read(&cache, &inner, 99_000..100_000).await;
        assert_eq!(&b[..], &data[99_000..]);
        let (b, obs) = read(&cache, &inner, 98_500..120_000).await;
        assert_eq!(&b[..], &data[98_500..]);
        assert_eq!(obs.requests.load(Ordering::SeqCst), 0);
        let s = cache.stats();
        assert!(s.hits >= 4 && s.misses >= 5 && s.storage_requests == mock.gets.load(Ordering::SeqCst), "{s:?}");
    });
}

#[test]
fn runs_separated_by_many_cached_blocks_are_separate_requests() {
    rt().block_on(async {
        let (mock, inner, cache, data) = setup(100_000, small(4096)).await;
        read(&cache, &inner, 2 * 4096..21 * 4096).await; // blocks 2..=20 cached
        let before = mock.bytes.load(Ordering::SeqCst);
        let (b, obs) = read(&cache, &inner, 0..100_000).await;
        assert_eq!(&b[..], &data[..]);
        // Missing 0..=1 and 21..=24, 19 cached blocks apart: two requests, only those bytes.
        assert_eq!(obs.requests.load(Ordering::SeqCst), 2);
        assert_eq!(mock.bytes.load(Ordering::SeqCst) - before, 2 * 4096 + (100_000 - 21 * 4096));
    });
}

#[test]
fn concurrent_misses_of_a_block_make_one_request() {
    rt().block_on(async {
        let (mock, inner, cache, data) = setup(50_000, small(65536)).await;
        mock.slow.store(true, Ordering::SeqCst);
        let reads = (0..8).map(|i| {
            let (cache, inner) = (cache.clone(), inner.clone());
            tokio::spawn(async move { read(&cache, &inner, 1000 + i * 100..2000 + i * 100).await.0 })
        });
        let got = futures::future::join_all(reads).await;
        for (i, b) in got.into_iter().enumerate() {
            let i = i as usize;
            assert_eq!(&b.unwrap()[..], &data[1000 + i * 100..2000 + i * 100]);
        }
        assert_eq!(mock.gets.load(Ordering::SeqCst), 1, "8 concurrent misses of one block");
    });
}

#[test]
fn failed_fills_do_not_poison_the_cache() {
    rt().block_on(async {
        let (mock, inner, cache, data) = setup(30_000, small(4096)).await;
        mock.fail.store(true, Ordering::SeqCst);
        let obs: Arc<dyn Observer> = Arc::new(Obs::default());
        let opts = GetOptions { range: Some(GetRange::Bounded(0..10_000)), ..Default::default() };
        assert!(cache.get_opts(&inner, "s3$bucket|", &Path::from(FILE), opts, &obs).await.is_err());
        assert!(cache.inflight.lock().unwrap().is_empty(), "a failed fill left in-flight entries");
        mock.fail.store(false, Ordering::SeqCst);
        let (b, obs) = read(&cache, &inner, 0..10_000).await;
        assert_eq!(&b[..], &data[..10_000]);
        assert_eq!(obs.requests.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn a_rewritten_object_is_not_served_from_old_blocks() {
    rt().block_on(async {
        let (mock, inner, cache, _) = setup(20_000, small(4096)).await;
        read(&cache, &inner, 0..4096).await;
        let new = content(20_000, 99);
        mock.inner.put(&Path::from(FILE), new.clone().into()).await.unwrap();
        // Block 0 is cached (old), block 1 is not: the miss sees the new e-tag.
        let (b, _) = read(&cache, &inner, 0..8192).await;
        assert_eq!(&b[..], &new[..8192]);
        let (b, _) = read(&cache, &inner, 0..8192).await;
        assert_eq!(&b[..], &new[..8192]);
    });
}

#[test]
fn memory_tier_stays_within_budget() {
    rt().block_on(async {
        let cfg = DataCacheConfig { memory_bytes: 256 << 10, block_bytes: 4096, ..Default::default() };
        let (_mock, inner, cache, data) = setup(2 << 20, cfg).await;
        for start in (0..data.len() as u64).step_by(64 << 10) {
            let (b, _) = read(&cache, &inner, start..start + (64 << 10)).await;
            assert_eq!(&b[..], &data[start as usize..start as usize + (64 << 10)]);
            assert!(cache.stats().memory_bytes <= 256 << 10, "{:?}", cache.stats());
        }
        let s = cache.stats();
        assert!(s.evictions > 0, "{s:?}");
    });
}

fn disk(dir: &std::path::Path) -> DataCacheConfig {
    DataCacheConfig {
        memory_bytes: 4 << 20,
        block_bytes: 4096,
        disk_dir: Some(dir.to_path_buf()),
        disk_bytes: 16 << 20,
    }
}

#[test]
fn disk_tier_survives_a_restart_and_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let data = content(200_000, 7);
    rt().block_on(async {
        let (_mock, inner, cache, _) = setup(200_000, disk(dir.path())).await;
        read(&cache, &inner, 0..200_000).await;
        assert!(cache.stats().disk_enabled);
        // A second instance on the same directory runs without the disk tier.
        let other = DataCache::build(&disk(dir.path())).await.unwrap().unwrap();
        assert!(!other.stats().disk_enabled);
        drop(other);
        cache.flush().await;
        cache.cache.close().await.unwrap();
    });
    rt().block_on(async {
        let (mock, inner, cache, _) = setup(200_000, disk(dir.path())).await;
        assert!(cache.stats().disk_enabled, "the lock was not released");
        let (b, obs) = read(&cache, &inner, 0..200_000).await;
        assert_eq!(&b[..], &data[..]);
        assert_eq!(mock.gets.load(Ordering::SeqCst), 0, "restart re-read storage: {:?}", cache.stats());
        assert!(obs.hits.load(Ordering::SeqCst) > 0);
        cache.cache.close().await.unwrap();
    });
}

/// A tracing subscriber that holds the thread it runs on at the disk tier's "submit task"
/// event of a cache entry: after the tier numbered the entry, before it queued it to its
/// writer. It tells `reached` once it holds, and lets go on `release` (or after 30 s).
struct HoldAtSubmit {
    reached: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for HoldAtSubmit {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut m = Message(String::new());
        event.record(&mut m);
        if m.0.contains("submit task") && m.0.contains("CacheEntry") {
            if let Some(tx) = self.reached.lock().unwrap().take() {
                let _ = tx.send(());
                let _ = self.release.lock().unwrap().recv_timeout(Duration::from_secs(30));
            }
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Two threads insert at once, and the first is held between the disk tier numbering its
/// entry and queueing it (the window a loaded machine opens by preempting a thread there).
/// Both entries must be found after a restart. The tier's recovery stops reading an engine
/// block at the first entry numbered lower than the one before it, so entries queued out of
/// their numbers' order were lost at the next start (issue 26) unless inserts are ordered.
#[test]
fn concurrent_inserts_survive_a_restart() {
    use std::sync::mpsc::channel;
    let dir = tempfile::tempdir().unwrap();
    let runtime = rt();
    let cache = runtime.block_on(DataCache::build(&disk(dir.path()))).unwrap().unwrap();
    let block = |seed: u8| Block {
        size: 1 << 20,
        e_tag: Some("\"e\"".into()),
        modified_ns: 1,
        data: Bytes::from(vec![seed; 4096]),
    };
    let (reached_tx, reached_rx) = channel();
    let (release_tx, release_rx) = channel();
    let hold = HoldAtSubmit { reached: Mutex::new(Some(reached_tx)), release: Mutex::new(release_rx) };
    let c = cache.clone();
    let first = std::thread::spawn(move || {
        tracing::subscriber::with_default(hold, || c.insert("first".into(), block(1)));
    });
    reached_rx.recv_timeout(Duration::from_secs(30)).expect("the first insert never reached the disk tier");
    let (done_tx, done_rx) = channel();
    let c = cache.clone();
    let second = std::thread::spawn(move || {
        c.insert("second".into(), block(2));
        let _ = done_tx.send(());
    });
    // Unordered inserts let the second one finish while the first is held; ordered ones make
    // it wait for the first. Either way, the first goes on after this.
    let overtook = done_rx.recv_timeout(Duration::from_secs(2)).is_ok();
    release_tx.send(()).unwrap();
    first.join().unwrap();
    second.join().unwrap();
    runtime.block_on(async {
        cache.flush().await;
        cache.cache.close().await.unwrap();
    });
    drop(cache);
    runtime.block_on(async {
        let cache = DataCache::build(&disk(dir.path())).await.unwrap().unwrap();
        assert!(cache.stats().disk_enabled);
        for (key, seed) in [("first", 1u8), ("second", 2)] {
            let got = cache.lookup(key).await;
            assert!(
                got.as_ref().is_some_and(|b| b.data.iter().all(|x| *x == seed) && b.data.len() == 4096),
                "'{key}' did not survive the restart (the second insert overtook the first: {overtook})"
            );
        }
        cache.cache.close().await.unwrap();
    });
}

#[test]
fn block_encoding_round_trips_and_detects_damage() {
    let b = Block { size: 1000, e_tag: Some("\"abc\"".into()), modified_ns: 42, data: Bytes::from(vec![7u8; 300]) };
    let mut buf = Vec::new();
    b.encode(&mut buf).unwrap();
    assert_eq!(buf.len(), b.estimated_size());
    let back = Block::decode(&mut buf.as_slice()).unwrap();
    assert!(back.same_object(&b));
    assert_eq!(back.data, b.data);
    assert_eq!(back.modified_ns, 42);
    for pos in [0, 10, 30, buf.len() / 2, buf.len() - 1] {
        let mut bad = buf.clone();
        bad[pos] ^= 0x40;
        assert!(Block::decode(&mut bad.as_slice()).is_err(), "flip at {pos} not detected");
    }
    assert!(Block::decode(&mut &buf[..buf.len() - 3]).is_err(), "truncation not detected");
}

#[test]
fn only_immutable_table_files_are_cacheable() {
    let yes = ["b/t.lance/data/abc.lance", "t.lance/_deletions/1-2-3.arrow", "w/t.lance/_indices/u/index.idx"];
    let no = ["t.lance/_versions/3.manifest", "t.lance/_latest.manifest", "t.lance/_transactions/x.txn", "data"];
    for p in yes {
        assert!(DataCache::cacheable(&Path::from(p)), "{p}");
    }
    for p in no {
        assert!(!DataCache::cacheable(&Path::from(p)), "{p}");
    }
}

#[test]
fn config_is_validated() {
    let ok = DataCacheConfig::default();
    ok.validate().unwrap();
    let bad = [
        DataCacheConfig { block_bytes: 3000, ..ok.clone() },
        DataCacheConfig { block_bytes: 1 << 30, ..ok.clone() },
        DataCacheConfig { memory_bytes: 1000, ..ok.clone() },
        DataCacheConfig { disk_bytes: 1 << 30, ..ok.clone() },
        DataCacheConfig { disk_dir: Some("/tmp/x".into()), disk_bytes: (64 << 16) - 1, ..ok.clone() },
        DataCacheConfig { disk_dir: Some("/tmp/x".into()), disk_bytes: 1 << 30, memory_bytes: 0, ..ok.clone() },
    ];
    for c in bad {
        assert!(c.validate().is_err(), "{c:?}");
    }
    DataCacheConfig { disk_dir: Some("/tmp/x".into()), disk_bytes: 64 << 16, ..ok }.validate().unwrap();
}
