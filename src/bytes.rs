//! The envelope every lance-host byte format shares (splits, full-text statistics, staged
//! writes, compaction tasks and results): a 4-byte magic, a format byte, the body, and a crc32
//! of everything before it, little endian. `open` checks the envelope; `Reader` reads a body.

use crate::error::{HostError, LanceErrorCode, Result};

/// Bytes that failed a check: damaged, truncated or not ours.
pub(crate) fn corrupt(kind: &str, what: &str) -> HostError {
    HostError::new(LanceErrorCode::LANCE_ERR_CORRUPT, format!("invalid {kind} bytes: {what}"))
}

/// `magic | format | body | crc32`.
pub(crate) fn seal(magic: &[u8; 4], format: u8, body: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(9 + body.len());
    b.extend_from_slice(magic);
    b.push(format);
    b.extend_from_slice(body);
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    b
}

/// Check the envelope of `bytes` (`kind` names the format in messages): the magic, a format in
/// `formats` (another one is LANCE_ERR_NOT_SUPPORTED: bytes of another library version), the
/// checksum. Returns the format and the body.
pub(crate) fn open<'a>(bytes: &'a [u8], magic: &[u8; 4], formats: &[u8], kind: &str) -> Result<(u8, &'a [u8])> {
    if bytes.len() < 4 || &bytes[..4] != magic {
        return Err(corrupt(kind, &format!("not lance-host {kind} bytes (bad magic)")));
    }
    let Some(&format) = bytes.get(4) else {
        return Err(corrupt(kind, "truncated"));
    };
    if !formats.contains(&format) {
        let known: Vec<String> = formats.iter().map(u8::to_string).collect();
        return Err(HostError::not_supported(format!(
            "{kind} format {format} is not supported (this library reads format {}): the bytes come from another lance-host version",
            known.join(" and ")
        )));
    }
    if bytes.len() < 9 {
        return Err(corrupt(kind, "truncated"));
    }
    let (sealed, tail) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(sealed) != u32::from_le_bytes(tail.try_into().expect("4 bytes")) {
        return Err(corrupt(kind, "checksum mismatch (truncated or corrupted)"));
    }
    Ok((format, &sealed[5..]))
}

/// Little-endian writer of a body.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub(crate) fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// u32 length + bytes.
    pub(crate) fn blob(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }
}

/// Reads a body front to back; `None` = truncated or a length above `max_len`.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    max_len: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8], pos: usize, max_len: usize) -> Self {
        Self { b, pos, max_len }
    }
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.b.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.take(4).map(|s| u32::from_le_bytes(s.try_into().expect("4 bytes")))
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")))
    }
    /// u32 length + bytes.
    pub(crate) fn blob(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        if n > self.max_len {
            return None;
        }
        self.take(n)
    }
    pub(crate) fn string(&mut self) -> Option<String> {
        String::from_utf8(self.blob()?.to_vec()).ok()
    }
    pub(crate) fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trip_and_damage() {
        let mut w = Writer::default();
        w.u8(7).u64(42).blob(b"table");
        let sealed = seal(b"TEST", 3, &w.0);
        let (format, body) = open(&sealed, b"TEST", &[2, 3], "test").unwrap();
        assert_eq!(format, 3);
        let mut r = Reader::new(body, 0, 100);
        assert_eq!(r.u8(), Some(7));
        assert_eq!(r.u64(), Some(42));
        assert_eq!(r.string().as_deref(), Some("table"));
        assert_eq!(r.remaining(), 0);
        assert_eq!(r.u8(), None);

        assert_eq!(open(&sealed, b"XXXX", &[3], "test").unwrap_err().code, LanceErrorCode::LANCE_ERR_CORRUPT);
        assert_eq!(open(&sealed, b"TEST", &[1], "test").unwrap_err().code, LanceErrorCode::LANCE_ERR_NOT_SUPPORTED);
        let mut flipped = sealed.clone();
        flipped[7] ^= 1;
        assert_eq!(open(&flipped, b"TEST", &[3], "test").unwrap_err().code, LanceErrorCode::LANCE_ERR_CORRUPT);
        for n in 0..sealed.len() {
            assert!(open(&sealed[..n], b"TEST", &[3], "test").is_err(), "prefix of {n} bytes");
        }
        let mut long = Reader::new(&sealed, 0, 2);
        long.take(6); // magic, format, the u8: next is the u64 42, read as a length
        assert_eq!(long.blob(), None, "a length above max_len is refused");
    }
}

/// Deterministic damage for the fuzz tests of the encodings (tests only): a xorshift64 stream
/// and the three ways bytes in transit get damaged.
#[cfg(test)]
pub(crate) struct Damage(u64);

#[cfg(test)]
impl Damage {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next pseudo-random number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A copy of `good` (not empty) with one bit flipped (`kind` 0), cut short (1) or with one
    /// byte inserted (any other).
    pub(crate) fn apply(&mut self, good: &[u8], kind: usize) -> Vec<u8> {
        let mut b = good.to_vec();
        match kind {
            0 => {
                let pos = (self.next() as usize) % b.len();
                b[pos] ^= 1 << (self.next() % 8);
            }
            1 => b.truncate((self.next() as usize) % b.len()),
            _ => {
                let pos = (self.next() as usize) % b.len();
                b.insert(pos, self.next() as u8);
            }
        }
        b
    }
}
