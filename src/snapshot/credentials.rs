//! Credentials that expire: storage options a namespace vends with `expires_at_millis` are
//! refreshed through that namespace before they expire, for every open, read and write of the
//! table in this process.
//!
//! When a catalog describes a table and the namespace's answer carries `expires_at_millis`, the
//! catalog records a refresher for the pair (table location, the options it returned). Every
//! door that opens or writes a location with storage options (`with_options`, `accessor`)
//! looks the pair up: found, Lance's object store gets an accessor with those options as its
//! first value and the refresher behind them, and asks the refresher for new options shortly
//! before the current ones expire (`refresh_offset_millis`, default: a minute before, or half
//! the remaining lifetime when that is shorter). So a snapshot opened through a catalog, a
//! snapshot token opened on a worker with the options that worker's own catalog described, a
//! staged write planned at such a snapshot: each keeps reading and writing past the lifetime
//! of the credentials it started with.
//!
//! The pair is the key because a table's vended options are the principal's: a caller that
//! opens the same location with other options (its own keys) never borrows the refresher. A
//! snapshot token carries no options (`token.rs`), so no secret travels with splits; a worker
//! refreshes through the catalog it was given. The registry keeps the most recent
//! `MAX_ENTRIES` pairs; an older pair opens with its options as they are (no refresh).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use lance_io::object_store::{StorageOptionsAccessor, StorageOptionsProvider};
use lance_namespace::models::DescribeTableRequest;
use lance_namespace::LanceNamespace;

/// The key Lance and the namespace spec use for the expiry of vended options (epoch ms).
pub const EXPIRES_AT_MILLIS: &str = "expires_at_millis";
/// How long before expiry Lance refreshes (ms), when the options say.
pub const REFRESH_OFFSET_MILLIS: &str = "refresh_offset_millis";
/// Lance's own default refresh offset.
const DEFAULT_OFFSET_MS: u64 = 60_000;
/// The most (location, options) pairs remembered.
const MAX_ENTRIES: usize = 4096;

/// Asks the namespace that vended a table's options for new ones (`DescribeTable`), on top of
/// the catalog's own storage options, as the catalog does.
pub struct NamespaceRefresh {
    pub namespace: Arc<dyn LanceNamespace>,
    pub table_id: Vec<String>,
    /// The catalog's own storage options (endpoint, region, ...); what is vended overrides them.
    pub base: HashMap<String, String>,
    /// Bound of one refresh.
    pub timeout: Duration,
    /// How messages name the catalog (no secrets).
    pub label: String,
}

impl fmt::Debug for NamespaceRefresh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.provider_id())
    }
}

#[async_trait]
impl StorageOptionsProvider for NamespaceRefresh {
    async fn fetch_storage_options(&self) -> lance::Result<Option<HashMap<String, String>>> {
        let mut req = DescribeTableRequest::new();
        req.id = Some(self.table_id.clone());
        let what = format!(
            "refreshing the storage credentials of table '{}' through the {}",
            self.table_id.join("."),
            self.label
        );
        let resp = tokio::time::timeout(self.timeout, self.namespace.describe_table(req))
            .await
            .map_err(|_| lance::Error::io(format!("{what}: timed out after {} ms", self.timeout.as_millis())))?
            .map_err(|e| lance::Error::io(format!("{what}: {e}")))?;
        let mut options = self.base.clone();
        options.extend(resp.storage_options.unwrap_or_default());
        Ok(Some(with_refresh_offset(options, now_ms())))
    }

    fn provider_id(&self) -> String {
        format!("lance-host:{}:{}", self.label, self.table_id.join("\u{1f}"))
    }
}

/// Asks the host for new options through a function it registered (a host with its own secret
/// store): `fetch(table_uri)` runs on a blocking thread of the runtime, one refresh of an
/// accessor at a time.
pub struct HostRefresh {
    pub uri: String,
    pub fetch: Arc<dyn Fn(&str) -> Result<HashMap<String, String>, String> + Send + Sync>,
    /// Distinguishes registrations of one table in provider ids.
    pub serial: u64,
}

impl fmt::Debug for HostRefresh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.provider_id())
    }
}

#[async_trait]
impl StorageOptionsProvider for HostRefresh {
    async fn fetch_storage_options(&self) -> lance::Result<Option<HashMap<String, String>>> {
        let (fetch, uri) = (self.fetch.clone(), self.uri.clone());
        let got = tokio::task::spawn_blocking(move || fetch(&uri))
            .await
            .map_err(|e| lance::Error::io(format!("the host's credential callback for table '{}' panicked: {e}", self.uri)))?;
        match got {
            Ok(options) => Ok(Some(with_refresh_offset(options, now_ms()))),
            Err(message) => Err(lance::Error::io(format!(
                "refreshing the storage credentials of table '{}' through the host's callback: {message}",
                self.uri
            ))),
        }
    }

    fn provider_id(&self) -> String {
        format!("lance-host:host-callback#{}:{}", self.serial, self.uri)
    }
}

/// Record `fetch` as the source of new options for the table at `uri` opened with `options`
/// (which must expire: `expires_at_millis`).
pub fn register_host(
    uri: &str,
    options: HashMap<String, String>,
    fetch: Arc<dyn Fn(&str) -> Result<HashMap<String, String>, String> + Send + Sync>,
) -> crate::error::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    if uri.is_empty() {
        return Err(crate::error::HostError::invalid("table uri is empty"));
    }
    if expires_at(&options).is_none() {
        return Err(crate::error::HostError::invalid(format!(
            "storage options registered for refresh must say when they expire ('{EXPIRES_AT_MILLIS}', epoch milliseconds)"
        )));
    }
    let provider = HostRefresh { uri: uri.to_string(), fetch, serial: SERIAL.fetch_add(1, Ordering::Relaxed) };
    register(uri, options, Arc::new(provider));
    Ok(())
}

/// Now, in epoch milliseconds (the unit of `expires_at_millis`).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// The expiry the options carry (epoch ms), if any; an unreadable value counts as expired.
pub fn expires_at(options: &HashMap<String, String>) -> Option<u64> {
    options.get(EXPIRES_AT_MILLIS).map(|v| v.trim().parse::<u64>().unwrap_or(0))
}

/// Whether the options carry an expiry that has passed.
pub fn expired(options: &HashMap<String, String>) -> bool {
    expires_at(options).is_some_and(|t| t <= now_ms())
}

/// `options` with a refresh offset Lance can honour: the namespace's own if it set one, else a
/// minute before expiry or half of the remaining lifetime, whichever is earlier (so short-lived
/// credentials are refreshed once per half-life, not on every request).
pub fn with_refresh_offset(mut options: HashMap<String, String>, now: u64) -> HashMap<String, String> {
    if options.contains_key(REFRESH_OFFSET_MILLIS) {
        return options;
    }
    if let Some(at) = expires_at(&options) {
        let offset = (at.saturating_sub(now) / 2).min(DEFAULT_OFFSET_MS).max(1);
        options.insert(REFRESH_OFFSET_MILLIS.to_string(), offset.to_string());
    }
    options
}

#[derive(Default)]
struct Registry {
    map: HashMap<(String, u128), Arc<dyn StorageOptionsProvider>>,
    order: VecDeque<(String, u128)>,
}

fn registry() -> &'static Mutex<Registry> {
    static R: OnceLock<Mutex<Registry>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(Registry::default()))
}

/// One spelling per table: no `file://` for absolute paths, no trailing '/', a branch location
/// (`<root>/tree/<branch>`) under its table's root.
fn table_key(uri: &str) -> String {
    let u = match uri.strip_prefix("file://") {
        Some(p) if p.starts_with('/') => p,
        _ => uri,
    };
    let u = u.trim_end_matches('/');
    match u.split_once("/tree/") {
        Some((root, _)) => root.to_string(),
        None => u.to_string(),
    }
}

/// The options as a key: every option counts (the data cache's credential hash), except the
/// refresh offset, which the library may add.
fn options_key(options: &HashMap<String, String>) -> u128 {
    if options.contains_key(REFRESH_OFFSET_MILLIS) {
        let mut o = options.clone();
        o.remove(REFRESH_OFFSET_MILLIS);
        return crate::datacache::Credential::of(&o).as_u128();
    }
    crate::datacache::Credential::of(options).as_u128()
}

/// Record that the table at `location`, opened with `options` (as a catalog described them),
/// refreshes them through `provider`. `options` are returned as they are to be used (with a
/// refresh offset); only options that expire are recorded.
pub(crate) fn register(
    location: &str,
    options: HashMap<String, String>,
    provider: Arc<dyn StorageOptionsProvider>,
) -> HashMap<String, String> {
    if expires_at(&options).is_none() {
        return options;
    }
    let options = with_refresh_offset(options, now_ms());
    let key = (table_key(location), options_key(&options));
    let mut r = registry().lock().unwrap_or_else(|p| p.into_inner());
    if r.map.insert(key.clone(), provider).is_none() {
        r.order.push_back(key);
        while r.order.len() > MAX_ENTRIES {
            if let Some(old) = r.order.pop_front() {
                r.map.remove(&old);
            }
        }
    }
    options
}

/// The refresher recorded for (`uri`'s table, `options`), if any.
pub(crate) fn refresher(uri: &str, options: &HashMap<String, String>) -> Option<Arc<dyn StorageOptionsProvider>> {
    if expires_at(options).is_none() {
        return None;
    }
    let key = (table_key(uri), options_key(options));
    registry().lock().unwrap_or_else(|p| p.into_inner()).map.get(&key).cloned()
}

/// The accessor an object store of `uri` opened with `options` gets: refreshing when a catalog
/// recorded a refresher for the pair, else the options as they are.
pub(crate) fn accessor(uri: &str, options: &HashMap<String, String>) -> Arc<StorageOptionsAccessor> {
    Arc::new(match refresher(uri, options) {
        Some(p) => StorageOptionsAccessor::with_initial_and_provider(with_refresh_offset(options.clone(), now_ms()), p),
        None => StorageOptionsAccessor::with_static_options(options.clone()),
    })
}

/// `builder` (of `uri`) with `options`, and their refresher when one is recorded.
pub(crate) fn with_options(
    builder: lance::dataset::builder::DatasetBuilder,
    uri: &str,
    options: HashMap<String, String>,
) -> lance::dataset::builder::DatasetBuilder {
    match refresher(uri, &options) {
        Some(p) => builder
            .with_storage_options(with_refresh_offset(options, now_ms()))
            .with_storage_options_provider(p),
        None => builder.with_storage_options(options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Fixed;
    #[async_trait]
    impl StorageOptionsProvider for Fixed {
        async fn fetch_storage_options(&self) -> lance::Result<Option<HashMap<String, String>>> {
            Ok(None)
        }
        fn provider_id(&self) -> String {
            "fixed".into()
        }
    }

    fn opts(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn refresh_offset_is_half_the_lifetime_at_most_a_minute() {
        let o = with_refresh_offset(opts(&[(EXPIRES_AT_MILLIS, "10000")]), 4000);
        assert_eq!(o[REFRESH_OFFSET_MILLIS], "3000");
        let o = with_refresh_offset(opts(&[(EXPIRES_AT_MILLIS, "10000000")]), 0);
        assert_eq!(o[REFRESH_OFFSET_MILLIS], "60000");
        let o = with_refresh_offset(opts(&[(EXPIRES_AT_MILLIS, "10"), (REFRESH_OFFSET_MILLIS, "5")]), 0);
        assert_eq!(o[REFRESH_OFFSET_MILLIS], "5");
        let o = with_refresh_offset(opts(&[("aws_region", "x")]), 0);
        assert!(!o.contains_key(REFRESH_OFFSET_MILLIS));
        assert!(expired(&opts(&[(EXPIRES_AT_MILLIS, "1")])));
        assert!(expired(&opts(&[(EXPIRES_AT_MILLIS, "soon")])), "an unreadable expiry is expired");
        assert!(!expired(&opts(&[("aws_region", "x")])));
    }

    #[test]
    fn refreshers_are_per_table_and_options() {
        let far = (now_ms() + 3_600_000).to_string();
        let vended = opts(&[("aws_access_key_id", "AKIAONE"), (EXPIRES_AT_MILLIS, far.as_str())]);
        let used = register("s3://b/creds_t1.lance/", vended.clone(), Arc::new(Fixed));
        assert!(refresher("s3://b/creds_t1.lance", &used).is_some());
        assert!(refresher("s3://b/creds_t1.lance/tree/dev", &used).is_some(), "a branch of the table");
        assert!(refresher("s3://b/creds_t2.lance", &used).is_none(), "another table");
        let mut other = used.clone();
        other.insert("aws_access_key_id".into(), "AKIATWO".into());
        assert!(refresher("s3://b/creds_t1.lance", &other).is_none(), "other credentials never borrow it");
        let static_opts = opts(&[("aws_access_key_id", "AKIAONE")]);
        assert_eq!(register("s3://b/creds_t3.lance", static_opts.clone(), Arc::new(Fixed)), static_opts);
        assert!(refresher("s3://b/creds_t3.lance", &static_opts).is_none(), "options that never expire");
    }
}
