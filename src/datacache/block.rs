//! One cached block and its encoding on the disk tier (magic, fields, CRC-32).

use std::io::{Read, Write};

use bytes::Bytes;
use foyer::Code;
use object_store::path::Path;
use object_store::ObjectMeta;

use super::LANCE_MAX_DATA_CACHE_BLOCK_BYTES;

/// One cached block (or, with empty data and block `u64::MAX`, an object's metadata).
#[derive(Debug, Clone)]
pub struct Block {
    /// Size of the whole object.
    pub(super) size: u64,
    pub(super) e_tag: Option<String>,
    pub(super) modified_ns: i64,
    pub(super) data: Bytes,
}

const BLOCK_MAGIC: u32 = 0x4C48_4231; // "LHB1"

impl Block {
    pub(super) fn meta(&self, location: &Path) -> ObjectMeta {
        ObjectMeta {
            location: location.clone(),
            last_modified: chrono_from_ns(self.modified_ns),
            size: self.size,
            e_tag: self.e_tag.clone(),
            version: None,
        }
    }

    pub(super) fn from_meta(meta: &ObjectMeta, data: Bytes) -> Self {
        Self {
            size: meta.size,
            e_tag: meta.e_tag.clone(),
            modified_ns: meta.last_modified.timestamp_nanos_opt().unwrap_or(0),
            data,
        }
    }

    pub(super) fn weight(&self) -> usize {
        self.data.len() + self.e_tag.as_ref().map_or(0, |e| e.len()) + 64
    }

    pub(super) fn same_object(&self, other: &Block) -> bool {
        self.size == other.size && self.e_tag == other.e_tag
    }
}

fn chrono_from_ns(ns: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_nanos(ns)
}

fn code_err(msg: &str) -> foyer::Error {
    foyer::Error::io_error(std::io::Error::new(std::io::ErrorKind::InvalidData, msg.to_string()))
}

impl Code for Block {
    fn encode(&self, w: &mut impl Write) -> foyer::Result<()> {
        let etag = self.e_tag.as_deref().unwrap_or("");
        let mut head = Vec::with_capacity(40 + etag.len());
        head.extend_from_slice(&BLOCK_MAGIC.to_le_bytes());
        head.extend_from_slice(&self.size.to_le_bytes());
        head.extend_from_slice(&self.modified_ns.to_le_bytes());
        head.push(self.e_tag.is_some() as u8);
        head.extend_from_slice(&(etag.len() as u32).to_le_bytes());
        head.extend_from_slice(etag.as_bytes());
        head.extend_from_slice(&(self.data.len() as u64).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&head);
        crc.update(&self.data);
        w.write_all(&head).map_err(foyer::Error::io_error)?;
        w.write_all(&self.data).map_err(foyer::Error::io_error)?;
        w.write_all(&crc.finalize().to_le_bytes()).map_err(foyer::Error::io_error)
    }

    fn decode(r: &mut impl Read) -> foyer::Result<Self> {
        let mut crc = crc32fast::Hasher::new();
        let mut read = |n: usize, crc: &mut crc32fast::Hasher| -> foyer::Result<Vec<u8>> {
            let mut buf = vec![0u8; n];
            r.read_exact(&mut buf).map_err(foyer::Error::io_error)?;
            crc.update(&buf);
            Ok(buf)
        };
        let u32_of = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes"));
        let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let fixed = read(25, &mut crc)?;
        if u32_of(&fixed[0..4]) != BLOCK_MAGIC {
            return Err(code_err("data cache block: bad magic"));
        }
        let size = u64_of(&fixed[4..12]);
        let modified_ns = u64_of(&fixed[12..20]) as i64;
        let has_etag = fixed[20] == 1;
        let etag_len = u32_of(&fixed[21..25]) as usize;
        if etag_len > 4096 {
            return Err(code_err("data cache block: bad e-tag length"));
        }
        let etag = read(etag_len, &mut crc)?;
        let data_len = u64_of(&read(8, &mut crc)?) as usize;
        if data_len as u64 > LANCE_MAX_DATA_CACHE_BLOCK_BYTES {
            return Err(code_err("data cache block: bad length"));
        }
        let data = read(data_len, &mut crc)?;
        let mut stored = [0u8; 4];
        r.read_exact(&mut stored).map_err(foyer::Error::io_error)?;
        if u32::from_le_bytes(stored) != crc.finalize() {
            return Err(code_err("data cache block: checksum mismatch"));
        }
        let e_tag = if has_etag {
            Some(String::from_utf8(etag).map_err(|_| code_err("data cache block: e-tag not UTF-8"))?)
        } else {
            None
        };
        Ok(Block { size, e_tag, modified_ns, data: Bytes::from(data) })
    }

    fn estimated_size(&self) -> usize {
        4 + 8 + 8 + 1 + 4 + self.e_tag.as_ref().map_or(0, |e| e.len()) + 8 + self.data.len() + 4
    }
}
