//! Partition descriptors: what `ExecutePartitions` hands out and `ReadPartition` reads, in any
//! process. A descriptor names the table in the catalog (the reader describes it through its
//! own connection's catalog for credentials), carries the scan (columns, filter), the vector
//! search of a search split, and one lance-host split (URI, pinned version, fragments or index
//! segment; never credentials).
//!
//! Layout (little-endian): `LHADBC` `0x01`, the namespace parts, the table name, the columns
//! (flag, then the names), the filter (flag, then the text), the search (flag 0: none; 1: a vector
//! search — column, k u64, metric i32, nprobes u32, refine u32, use_index u8, the f32 vector; 2: a
//! full-text search — column, text, match i32, slop u32, k u64, the snapshot's BM25 statistics
//! as the library wrote them), the split bytes, and (format 2 on) the split's snapshot token
//! (flag, then the bytes: a scan split's split-scoped token, which ReadPartition opens instead of
//! reading the manifest from storage) — strings and byte runs as u32 length + bytes — then an
//! FNV-1a 64 checksum of everything before it. Format 1 descriptors (no token) are read too.

use adbc_core::error::{Error, Result, Status};

use crate::handles::{ScanSpec, TableRef};
use crate::search::VectorSearch;
use crate::text::TextSearch;

/// The search a partition's split runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Search {
    Vector(VectorSearch),
    /// A full-text search and the BM25 statistics of the whole snapshot.
    Text(TextSearch, Vec<u8>),
}

const MAGIC: &[u8] = b"LHADBC\x02";
/// Descriptors of the previous format: no snapshot token.
const MAGIC_1: &[u8] = b"LHADBC\x01";

#[derive(Debug, PartialEq)]
pub struct Partition {
    pub table: TableRef,
    pub spec: ScanSpec,
    /// The search the split runs (a search split), or None (a scan split).
    pub search: Option<Search>,
    pub split: Vec<u8>,
    /// The split's split-scoped snapshot token (scan splits), or None: the reader opens the
    /// split's table at its version from storage.
    pub token: Option<Vec<u8>>,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_strings(out: &mut Vec<u8>, items: &[String]) {
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for s in items {
        put(out, s.as_bytes());
    }
}

impl Partition {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        put_strings(&mut out, &self.table.namespace);
        put(&mut out, self.table.name.as_bytes());
        match &self.spec.columns {
            Some(cols) => {
                out.push(1);
                put_strings(&mut out, cols);
            }
            None => out.push(0),
        }
        match &self.spec.filter {
            Some(f) => {
                out.push(1);
                put(&mut out, f.as_bytes());
            }
            None => out.push(0),
        }
        match &self.search {
            Some(Search::Text(t, stats)) => {
                out.push(2);
                put(&mut out, t.column.as_bytes());
                put(&mut out, t.text.as_bytes());
                out.extend_from_slice(&t.match_kind.to_le_bytes());
                out.extend_from_slice(&t.slop.to_le_bytes());
                out.extend_from_slice(&t.k.to_le_bytes());
                put(&mut out, stats);
            }
            Some(Search::Vector(v)) => {
                out.push(1);
                put(&mut out, v.column.as_bytes());
                out.extend_from_slice(&v.k.to_le_bytes());
                out.extend_from_slice(&v.metric.to_le_bytes());
                out.extend_from_slice(&v.nprobes.to_le_bytes());
                out.extend_from_slice(&v.refine_factor.to_le_bytes());
                out.push(v.use_index as u8);
                let floats: Vec<u8> = v.vector.iter().flat_map(|f| f.to_le_bytes()).collect();
                put(&mut out, &floats);
            }
            None => out.push(0),
        }
        put(&mut out, &self.split);
        match &self.token {
            Some(t) => {
                out.push(1);
                put(&mut out, t);
            }
            None => out.push(0),
        }
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Partition> {
        let corrupt = |what: &str| {
            Error::with_message_and_status(
                format!("lance-host ADBC: not a partition of this driver ({what})"),
                Status::InvalidData,
            )
        };
        let format_1 = bytes.starts_with(MAGIC_1);
        if bytes.len() < MAGIC.len() + 8 || !(bytes.starts_with(MAGIC) || format_1) {
            if bytes.starts_with(b"LHADBC") {
                return Err(Error::with_message_and_status(
                    "lance-host ADBC: a partition of another driver version",
                    Status::NotImplemented,
                ));
            }
            return Err(corrupt("no descriptor header"));
        }
        let (body, sum) = bytes.split_at(bytes.len() - 8);
        if fnv1a(body) != u64::from_le_bytes(sum.try_into().unwrap()) {
            return Err(corrupt("checksum mismatch: truncated or damaged bytes"));
        }
        let mut r = Cursor {
            bytes: &body[MAGIC.len()..],
        };
        let namespace = r.strings().ok_or_else(|| corrupt("namespace"))?;
        let name = r.string().ok_or_else(|| corrupt("table name"))?;
        let columns = match r.byte().ok_or_else(|| corrupt("columns"))? {
            0 => None,
            1 => Some(r.strings().ok_or_else(|| corrupt("columns"))?),
            _ => return Err(corrupt("columns flag")),
        };
        let filter = match r.byte().ok_or_else(|| corrupt("filter"))? {
            0 => None,
            1 => Some(r.string().ok_or_else(|| corrupt("filter"))?),
            _ => return Err(corrupt("filter flag")),
        };
        let search = match r.byte().ok_or_else(|| corrupt("search"))? {
            0 => None,
            1 => {
                let column = r.string().ok_or_else(|| corrupt("search column"))?;
                let k =
                    u64::from_le_bytes(r.take(8).ok_or_else(|| corrupt("k"))?.try_into().unwrap());
                let metric = i32::from_le_bytes(
                    r.take(4)
                        .ok_or_else(|| corrupt("metric"))?
                        .try_into()
                        .unwrap(),
                );
                let nprobes = u32::from_le_bytes(
                    r.take(4)
                        .ok_or_else(|| corrupt("nprobes"))?
                        .try_into()
                        .unwrap(),
                );
                let refine_factor = u32::from_le_bytes(
                    r.take(4)
                        .ok_or_else(|| corrupt("refine"))?
                        .try_into()
                        .unwrap(),
                );
                let use_index = r.byte().ok_or_else(|| corrupt("use_index"))? != 0;
                let floats = r.run().ok_or_else(|| corrupt("vector"))?;
                if floats.len() % 4 != 0 {
                    return Err(corrupt("vector"));
                }
                let vector = floats
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                Some(Search::Vector(VectorSearch {
                    column,
                    vector,
                    k,
                    metric,
                    nprobes,
                    refine_factor,
                    use_index,
                }))
            }
            2 => {
                let column = r.string().ok_or_else(|| corrupt("text column"))?;
                let text = r.string().ok_or_else(|| corrupt("query text"))?;
                let match_kind = i32::from_le_bytes(
                    r.take(4)
                        .ok_or_else(|| corrupt("match"))?
                        .try_into()
                        .unwrap(),
                );
                let slop = u32::from_le_bytes(
                    r.take(4)
                        .ok_or_else(|| corrupt("slop"))?
                        .try_into()
                        .unwrap(),
                );
                let k =
                    u64::from_le_bytes(r.take(8).ok_or_else(|| corrupt("k"))?.try_into().unwrap());
                let stats = r.run().ok_or_else(|| corrupt("statistics"))?.to_vec();
                Some(Search::Text(
                    TextSearch {
                        column,
                        text,
                        match_kind,
                        slop,
                        k,
                    },
                    stats,
                ))
            }
            _ => return Err(corrupt("search flag")),
        };
        let split = r.run().ok_or_else(|| corrupt("split"))?.to_vec();
        let token = if format_1 {
            None
        } else {
            match r.byte().ok_or_else(|| corrupt("token"))? {
                0 => None,
                1 => Some(r.run().ok_or_else(|| corrupt("token"))?.to_vec()),
                _ => return Err(corrupt("token flag")),
            }
        };
        if !r.bytes.is_empty() {
            return Err(corrupt("trailing bytes"));
        }
        Ok(Partition {
            table: TableRef { namespace, name },
            spec: ScanSpec {
                columns,
                filter,
                limit: None,
                batch_size: None,
            },
            search,
            split,
            token,
        })
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(*b)
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (run, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(run)
    }
    fn u32(&mut self) -> Option<usize> {
        if self.bytes.len() < 4 {
            return None;
        }
        let (n, rest) = self.bytes.split_at(4);
        self.bytes = rest;
        Some(u32::from_le_bytes(n.try_into().ok()?) as usize)
    }
    fn run(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()?;
        if self.bytes.len() < n {
            return None;
        }
        let (run, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(run)
    }
    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.run()?.to_vec()).ok()
    }
    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()?;
        if n > self.bytes.len() {
            return None;
        }
        (0..n).map(|_| self.string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let p = Partition {
            table: TableRef {
                namespace: vec!["a".into(), "b c".into()],
                name: "t\u{e9}".into(),
            },
            spec: ScanSpec {
                columns: Some(vec!["x".into()]),
                filter: Some("x > 1".into()),
                limit: None,
                batch_size: None,
            },
            search: Some(Search::Vector(VectorSearch {
                column: "v".into(),
                vector: vec![0.5, -1.0, f32::MIN_POSITIVE],
                k: 7,
                metric: 2,
                nprobes: 3,
                refine_factor: 4,
                use_index: false,
            })),
            split: vec![1, 2, 3, 0, 255],
            token: None,
        };
        let bytes = p.encode();
        assert_eq!(Partition::decode(&bytes).unwrap(), p);
        // a scan split with its token
        let scan = Partition {
            search: None,
            token: Some(b"LHSN\x04token".to_vec()),
            ..Partition::decode(&bytes).unwrap()
        };
        let scan_bytes = scan.encode();
        assert_eq!(Partition::decode(&scan_bytes).unwrap(), scan);
        for cut in 0..scan_bytes.len() {
            assert!(
                Partition::decode(&scan_bytes[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
        // a format-1 descriptor (no token) of an earlier driver is read
        let mut old = MAGIC_1.to_vec();
        let body = &scan_bytes[MAGIC.len()..scan_bytes.len() - 8];
        let token_len = 1 + 4 + scan.token.as_ref().unwrap().len();
        old.extend_from_slice(&body[..body.len() - token_len]);
        let sum = fnv1a(&old);
        old.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(
            Partition::decode(&old).unwrap(),
            Partition {
                token: None,
                ..scan
            }
        );
        let text = Partition {
            search: Some(Search::Text(
                TextSearch {
                    column: "body".into(),
                    text: "lance \u{e9}t\u{e9}".into(),
                    match_kind: 2,
                    slop: 1,
                    k: 5,
                },
                vec![9, 8, 7],
            )),
            ..Partition::decode(&bytes).unwrap()
        };
        let text_bytes = text.encode();
        assert_eq!(Partition::decode(&text_bytes).unwrap(), text);
        for cut in 0..text_bytes.len() {
            assert!(
                Partition::decode(&text_bytes[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
        for cut in 0..bytes.len() {
            assert!(
                Partition::decode(&bytes[..cut]).is_err(),
                "truncated at {cut}"
            );
        }
        let mut flipped = bytes.clone();
        flipped[12] ^= 0x40;
        assert_eq!(
            Partition::decode(&flipped).unwrap_err().status,
            Status::InvalidData
        );
    }
}
