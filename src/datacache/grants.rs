//! Which credentials this process has seen storage accept for which objects: the data cache
//! serves a cached block only to a caller whose credentials storage accepted for that object,
//! recently. Without this, a read with credentials that cannot read an object would get the
//! rows another caller's read left in the cache (a shared executor serving several users, a key
//! that was rotated out).
//!
//! A grant is recorded when a read of the object with those credentials reached storage and
//! succeeded; a read served wholly from the cache without a fresh grant first asks storage for
//! the object's metadata (one HEAD request) with the caller's credentials, and fails as storage
//! fails it. Grants expire after `GRANT_TTL`, so a key revoked at the server stops being served
//! from the cache within that time. Keys are hashes (secrets are never kept), keyed with a
//! random seed per process; the map holds at most `MAX_GRANTS` entries (beyond that, expired
//! ones are dropped, then everything: the cost is one HEAD per object read again).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long storage's acceptance of a credential for an object is trusted.
pub const GRANT_TTL: Duration = Duration::from_secs(300);

/// The most grants kept.
const MAX_GRANTS: usize = 1 << 16;

/// A credential, as the hash of the storage options that carry it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Credential(u128);

fn seeds() -> &'static (std::hash::RandomState, std::hash::RandomState) {
    static SEEDS: OnceLock<(std::hash::RandomState, std::hash::RandomState)> = OnceLock::new();
    SEEDS.get_or_init(|| (std::hash::RandomState::new(), std::hash::RandomState::new()))
}

fn hash128(value: &impl Hash) -> u128 {
    let (a, b) = seeds();
    let mut ha = a.build_hasher();
    let mut hb = b.build_hasher();
    value.hash(&mut ha);
    value.hash(&mut hb);
    ((ha.finish() as u128) << 64) | hb.finish() as u128
}

impl Credential {
    /// The credential of a store opened with `options`: every option counts (keys, secrets,
    /// session tokens, profiles, endpoints), so any change is another credential. Credentials
    /// Lance finds in the environment are the process's own and the same for every open.
    pub fn of(options: &HashMap<String, String>) -> Credential {
        let mut pairs: Vec<(String, &String)> = options.iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        pairs.sort();
        Credential(hash128(&pairs))
    }

    /// The hash (for keying other per-credential records).
    pub fn as_u128(self) -> u128 {
        self.0
    }
}

/// The grants of this process.
#[derive(Debug, Default)]
pub struct Grants {
    map: Mutex<HashMap<u128, Instant>>,
}

impl Grants {
    fn key(credential: Credential, root: &str, location: &str) -> u128 {
        hash128(&(credential.0, root, location))
    }

    /// Whether storage accepted `credential` for the object within `GRANT_TTL`.
    pub fn fresh(&self, credential: Credential, root: &str, location: &str) -> bool {
        let key = Self::key(credential, root, location);
        let map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&key).is_some_and(|at| at.elapsed() < GRANT_TTL)
    }

    /// Storage accepted `credential` for the object just now.
    pub fn record(&self, credential: Credential, root: &str, location: &str) {
        let key = Self::key(credential, root, location);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_GRANTS && !map.contains_key(&key) {
            map.retain(|_, at| at.elapsed() < GRANT_TTL);
            if map.len() >= MAX_GRANTS {
                map.clear();
            }
        }
        map.insert(key, Instant::now());
    }

    /// The number of grants held (for tests).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_per_credential_and_object() {
        let g = Grants::default();
        let good = Credential::of(&HashMap::from([("aws_access_key_id".into(), "A".into())]));
        let bad = Credential::of(&HashMap::from([("aws_access_key_id".into(), "B".into())]));
        let same = Credential::of(&HashMap::from([("AWS_ACCESS_KEY_ID".into(), "A".into())]));
        assert_ne!(good, bad);
        assert_eq!(good, same);
        g.record(good, "s3://b", "t/data/x.lance");
        assert!(g.fresh(good, "s3://b", "t/data/x.lance"));
        assert!(!g.fresh(bad, "s3://b", "t/data/x.lance"));
        assert!(!g.fresh(good, "s3://b", "t/data/y.lance"));
        assert!(!g.fresh(good, "s3://c", "t/data/x.lance"));
    }

    #[test]
    fn the_map_stays_bounded() {
        let g = Grants::default();
        let c = Credential::of(&HashMap::new());
        for i in 0..(MAX_GRANTS + 10) {
            g.record(c, "r", &format!("data/{i}"));
        }
        assert!(g.len() <= MAX_GRANTS, "{}", g.len());
        assert!(g.fresh(c, "r", &format!("data/{}", MAX_GRANTS + 9)));
    }
}
