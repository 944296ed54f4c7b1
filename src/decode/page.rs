//! One Lance 2.1+ mini-block page of a column without nulls, decoded straight into the
//! buffers of the Arrow array the host receives.
//!
//! A mini-block page is a buffer of chunks (each a header, its value buffers, padded to 8 bytes),
//! a buffer of one metadata word per chunk (the chunk's size in 8-byte words and the log2 of its
//! value count) and, for a dictionary page, a buffer holding the dictionary. Lance's decoder
//! decompresses every chunk into a block of its own, appends the block into a builder and, for a
//! dictionary, appends every value one call at a time; here flat values are copied once,
//! bit-packed values are unpacked into the output and dictionary values gathered into it. Every
//! other value compression is handed to Lance's own decompressor for the chunk. A page this file
//! does not know how to read is refused by `PagePlan::new` (`None`), and the caller reads the
//! column with Lance's decoder instead.

use std::ops::Range;
use std::sync::Arc;

use arrow::datatypes::DataType;
use bytes::Bytes;
use lance_encoding::buffer::LanceBuffer;
use lance_encoding::compression::{
    BlockDecompressor, DecompressionStrategy, DefaultDecompressionStrategy, MiniBlockDecompressor,
};
use lance_encoding::data::DataBlock;
use lance_encoding::format::metadata::{
    self as md, compressive_encoding::Compression, page_layout::Layout, CompressiveEncoding,
};

/// Chunk data is padded to this many bytes (Lance's mini-block alignment).
const ALIGN: usize = 8;
/// Values per inline bit-packed block.
const PACKED: usize = 1024;

/// What one value of the output array is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out {
    /// `n` bytes per value (integers, floats, decimals, dates, times)
    Fixed(usize),
    /// bytes with offsets (strings and binary)
    Var,
}

impl Out {
    /// The output kind of an Arrow type this decoder produces, if any.
    pub fn of(dt: &DataType) -> Option<Out> {
        use DataType::*;
        Some(match dt {
            Int8 | UInt8 => Out::Fixed(1),
            Int16 | UInt16 | Float16 => Out::Fixed(2),
            Int32 | UInt32 | Float32 | Date32 | Time32(_) => Out::Fixed(4),
            Int64 | UInt64 | Float64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => Out::Fixed(8),
            Decimal128(_, _) => Out::Fixed(16),
            Utf8 | Binary | LargeUtf8 | LargeBinary => Out::Var,
            _ => return None,
        })
    }
}

/// How a chunk's value buffers are stored.
#[derive(Debug)]
enum Codec {
    /// `n` bytes per value, as they are
    Flat(usize),
    /// Lance's inline bit-packing of `n`-byte words: per block of 1024 values, a word giving
    /// the bit width, then the packed values
    Packed(usize),
    /// strings as Lance writes them plainly: per chunk, `rows + 1` offsets of `n` bytes (from
    /// the chunk's start, the first past the offsets), then the bytes
    Strings(usize),
    /// anything else Lance's own chunk decompressor reads
    Lance(Arc<dyn MiniBlockDecompressor>),
}

/// A page dictionary, decoded once per page.
#[derive(Debug)]
enum Dict {
    Fixed { width: usize, values: LanceBuffer, items: usize },
    Var { offsets: Vec<u64>, values: LanceBuffer },
}

impl Dict {
    fn items(&self) -> usize {
        match self {
            Dict::Fixed { items, .. } => *items,
            Dict::Var { offsets, .. } => offsets.len() - 1,
        }
    }
}

/// One chunk of a page: its rows (from the page's first) and its bytes in the chunk buffer.
#[derive(Debug, Clone)]
struct Chunk {
    first: u64,
    rows: u64,
    bytes: Range<u64>,
}

/// A page's layout as read from the file's column metadata, before its metadata buffers are read.
#[derive(Debug)]
pub struct PageLayout {
    rows: u64,
    out: Out,
    codec: Codec,
    /// the definition levels' decompressor of a page with nulls (level 0: a value, 1: NULL)
    def: Option<Arc<dyn BlockDecompressor>>,
    dictionary: Option<(Arc<dyn BlockDecompressor>, u64)>,
    buffers: usize,
    large: bool,
    /// file positions: chunk metadata words, chunk data, dictionary
    words: Range<u64>,
    data: Range<u64>,
    dict: Option<Range<u64>>,
}

/// A page ready to decode any of its rows.
#[derive(Debug)]
pub struct PagePlan {
    rows: u64,
    out: Out,
    codec: Codec,
    def: Option<Arc<dyn BlockDecompressor>>,
    dict: Option<Dict>,
    buffers: usize,
    large: bool,
    data_pos: u64,
    chunks: Vec<Chunk>,
}

fn flat_bytes(e: &CompressiveEncoding) -> Option<usize> {
    match e.compression.as_ref()? {
        Compression::Flat(f) if f.data.is_none() && matches!(f.bits_per_value, 8 | 16 | 32 | 64 | 128) => {
            Some(f.bits_per_value as usize / 8)
        }
        _ => None,
    }
}

fn codec(e: &CompressiveEncoding, out: Out, dictionary: bool) -> Option<Codec> {
    let strategy = DefaultDecompressionStrategy::default();
    let fixed = |n: usize| dictionary || out == Out::Fixed(n);
    match e.compression.as_ref()? {
        Compression::Flat(_) => flat_bytes(e).filter(|n| fixed(*n)).map(Codec::Flat),
        Compression::InlineBitpacking(b)
            if b.values.is_none() && matches!(b.uncompressed_bits_per_value, 8 | 16 | 32 | 64) =>
        {
            let n = b.uncompressed_bits_per_value as usize / 8;
            fixed(n).then_some(Codec::Packed(n))
        }
        Compression::Variable(v) if out == Out::Var && !dictionary && v.values.is_none() => {
            match v.offsets.as_deref().and_then(flat_bytes) {
                Some(n @ (4 | 8)) => Some(Codec::Strings(n)),
                _ => strategy.create_miniblock_decompressor(e, &strategy).ok().map(|d| Codec::Lance(Arc::from(d))),
            }
        }
        // compressions whose chunks Lance decompresses to plain values of the page's kind
        Compression::Variable(_) | Compression::Fsst(_) if out == Out::Var && !dictionary => {
            strategy.create_miniblock_decompressor(e, &strategy).ok().map(|d| Codec::Lance(Arc::from(d)))
        }
        Compression::Rle(_) | Compression::General(_) | Compression::ByteStreamSplit(_) if out != Out::Var || dictionary => {
            strategy.create_miniblock_decompressor(e, &strategy).ok().map(|d| Codec::Lance(Arc::from(d)))
        }
        _ => None,
    }
}

impl PageLayout {
    /// The layout of a page of `rows` rows with these buffers, if this decoder reads it into an
    /// array of kind `out`.
    pub fn new(layout: &md::PageLayout, buffers: &[(u64, u64)], rows: u64, out: Out) -> Option<PageLayout> {
        let Some(Layout::MiniBlockLayout(m)) = layout.layout.as_ref() else { return None };
        let all_valid = m.layers.len() == 1 && m.layers[0] == md::RepDefLayer::RepdefAllValidItem as i32;
        let nullable = m.layers.len() == 1 && m.layers[0] == md::RepDefLayer::RepdefNullableItem as i32;
        let def = match (&m.def_compression, all_valid, nullable) {
            (None, true, false) => None,
            (Some(d), false, true) => {
                let strategy = DefaultDecompressionStrategy::default();
                Some(Arc::from(strategy.create_block_decompressor(d).ok()?))
            }
            _ => return None,
        };
        if m.rep_compression.is_some()
            || m.repetition_index_depth != 0
            || m.num_items != rows
            || buffers.len() < 2
        {
            return None;
        }
        let codec = codec(m.value_compression.as_ref()?, out, m.dictionary.is_some())?;
        let parts = match &codec {
            Codec::Lance(d) => d.num_buffers(),
            _ => 1,
        };
        if m.num_buffers as usize != parts {
            return None;
        }
        let dictionary = match &m.dictionary {
            None => None,
            Some(d) => {
                if buffers.len() < 3 || !matches!(codec, Codec::Flat(_) | Codec::Packed(_) | Codec::Lance(_)) {
                    return None;
                }
                let strategy = DefaultDecompressionStrategy::default();
                Some((Arc::from(strategy.create_block_decompressor(d).ok()?), m.num_dictionary_items))
            }
        };
        let range = |(p, n): (u64, u64)| p..p.checked_add(n).unwrap_or(u64::MAX);
        Some(PageLayout {
            rows,
            out,
            codec,
            def,
            buffers: m.num_buffers as usize,
            large: m.has_large_chunk,
            words: range(buffers[0]),
            data: range(buffers[1]),
            dict: dictionary.as_ref().map(|_| range(buffers[2])),
            dictionary,
        })
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The file ranges `plan` needs: the chunk metadata words and the dictionary, if any.
    pub fn metadata_ranges(&self) -> Vec<Range<u64>> {
        std::iter::once(self.words.clone()).chain(self.dict.clone()).collect()
    }

    /// The page ready to decode, from the bytes of `metadata_ranges` (in that order); `None`
    /// when the metadata is not what this decoder expects (the caller then reads the column
    /// with Lance's decoder, which judges the page).
    pub fn plan(self, mut bytes: Vec<Bytes>) -> Option<PagePlan> {
        let dict_bytes = if self.dict.is_some() { bytes.pop() } else { None };
        let words = bytes.pop()?;
        let word = if self.large { 4 } else { 2 };
        if words.len() % word != 0 {
            return None;
        }
        let words: Vec<u32> = words
            .chunks_exact(word)
            .map(|w| if self.large { u32::from_le_bytes([w[0], w[1], w[2], w[3]]) } else { u16::from_le_bytes([w[0], w[1]]) as u32 })
            .collect();
        let mut chunks = Vec::with_capacity(words.len());
        let (mut first, mut at) = (0u64, 0u64);
        for (i, w) in words.iter().enumerate() {
            let size = ((*w >> 4) as u64 + 1) * ALIGN as u64;
            let log = w & 0x0F;
            let rows = if i + 1 == words.len() {
                self.rows.checked_sub(first)?
            } else if log == 0 {
                return None;
            } else {
                1u64 << log
            };
            chunks.push(Chunk { first, rows, bytes: at..at + size });
            first = first.checked_add(rows)?;
            at += size;
        }
        if first != self.rows || at != self.data.end - self.data.start || (self.rows > 0 && chunks.is_empty()) {
            return None;
        }
        let dict = match (self.dictionary, dict_bytes) {
            (None, None) => None,
            (Some((decompressor, items)), Some(bytes)) => {
                let block = decompressor.decompress(Some(LanceBuffer::from_bytes(bytes, 1)), items).ok()?;
                let dict = match (block, self.out) {
                    (DataBlock::FixedWidth(f), Out::Fixed(width))
                        if f.bits_per_value as usize == width * 8
                            && f.num_values == items
                            && f.data.len() >= width * items as usize =>
                    {
                        Dict::Fixed { width, values: f.data, items: items as usize }
                    }
                    (DataBlock::VariableWidth(v), Out::Var) if v.num_values == items => {
                        Dict::Var { offsets: offsets_of(&v.offsets, v.bits_per_offset, items as usize)?, values: v.data }
                    }
                    _ => return None,
                };
                Some(dict)
            }
            _ => return None,
        };
        Some(PagePlan {
            rows: self.rows,
            out: self.out,
            codec: self.codec,
            def: self.def,
            dict,
            buffers: self.buffers,
            large: self.large,
            data_pos: self.data.start,
            chunks,
        })
    }
}

/// `n + 1` offsets of a variable-width block as u64, checked to rise within `values`.
fn offsets_of(raw: &[u8], bits: u8, n: usize) -> Option<Vec<u64>> {
    let offsets: Vec<u64> = match bits {
        32 => raw.chunks_exact(4).take(n + 1).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64).collect(),
        64 => raw.chunks_exact(8).take(n + 1).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default())).collect(),
        _ => return None,
    };
    (offsets.len() == n + 1 && offsets.windows(2).all(|w| w[0] <= w[1])).then_some(offsets)
}

/// The decoded values of some rows: fixed-width bytes, or offsets (from 0) and bytes.
#[derive(Debug, Default)]
pub struct Decoded {
    pub values: Vec<u8>,
    pub offsets: Vec<u64>,
    /// per row, whether it holds a value; `None` while every row so far does
    pub validity: Option<Vec<bool>>,
    pub rows: usize,
}

impl Decoded {
    /// Record the validity of the `rows` rows a chunk appended (`None`: all hold values).
    fn valid(&mut self, rows: usize, levels: Option<&[u16]>) {
        match levels {
            None => {
                if let Some(v) = &mut self.validity {
                    v.resize(v.len() + rows, true);
                }
            }
            Some(levels) => {
                let done = self.rows;
                let v = self.validity.get_or_insert_with(|| vec![true; done]);
                v.extend(levels.iter().map(|l| *l == 0));
            }
        }
        self.rows += rows;
    }
}

fn corrupt(what: impl std::fmt::Display) -> String {
    format!("a mini-block chunk is not readable: {what}")
}

impl PagePlan {
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// About how many bytes one decoded value takes (sizes batches by memory): the width of a
    /// fixed-width value; for strings, the dictionary's mean value or twice the page's stored
    /// bytes per value (compressed strings grow when decoded), plus the offset.
    pub fn value_bytes(&self) -> u64 {
        match (self.out, &self.dict) {
            (Out::Fixed(n), _) => n as u64,
            (Out::Var, Some(Dict::Var { offsets, values })) => values.len() as u64 / (offsets.len() as u64).max(1) + 8,
            (Out::Var, _) => {
                let stored = self.chunks.last().map(|c| c.bytes.end).unwrap_or(0);
                2 * stored / self.rows.max(1) + 8
            }
        }
    }

    /// How the page's values are stored, in a word (tests and logs).
    pub fn nullable(&self) -> bool {
        self.def.is_some()
    }

    pub fn kind(&self) -> &'static str {
        match (&self.codec, &self.dict) {
            (Codec::Flat(_), None) => "flat",
            (Codec::Packed(_), None) => "packed",
            (Codec::Strings(_), _) => "strings",
            (Codec::Lance(_), None) => "lance-codec",
            (Codec::Flat(_), Some(_)) => "dictionary+flat",
            (Codec::Packed(_), Some(_)) => "dictionary+packed",
            (Codec::Lance(_), Some(_)) => "dictionary+lance-codec",
        }
    }

    /// The chunk indices holding the page's rows `rows`, and the bytes of the chunk buffer they
    /// span (relative to the buffer's start) — what a read of `rows` must fetch.
    pub fn chunks_for(&self, rows: &Range<u64>) -> (Range<usize>, Range<u64>) {
        let first = self.chunks.partition_point(|c| c.first + c.rows <= rows.start);
        let end = self.chunks.partition_point(|c| c.first < rows.end).max(first);
        let bytes = if first < end {
            self.chunks[first].bytes.start..self.chunks[end - 1].bytes.end
        } else {
            0..0
        };
        (first..end, bytes)
    }

    /// The file range of `bytes` of the chunk buffer.
    pub fn file_range(&self, bytes: &Range<u64>) -> Range<u64> {
        self.data_pos + bytes.start..self.data_pos + bytes.end
    }

    /// The page's first row of chunk `i`.
    pub fn chunk_first(&self, i: usize) -> u64 {
        self.chunks[i].first
    }

    /// Decode chunks `which` from `data` (the chunk buffer's bytes from the first of them on),
    /// appending their values to `out`.
    pub fn decode(&self, which: Range<usize>, data: &Bytes, out: &mut Decoded) -> Result<(), String> {
        let base = which.start.min(self.chunks.len());
        let base = self.chunks.get(base).map(|c| c.bytes.start).unwrap_or(0);
        let mut scratch = Vec::new();
        for c in &self.chunks[which] {
            let at = (c.bytes.start - base) as usize..(c.bytes.end - base) as usize;
            let chunk = data.get(at.clone()).ok_or_else(|| corrupt("the read is shorter than the chunk"))?;
            let mut buffers = self.buffers_of(chunk)?;
            let levels = match &self.def {
                None => None,
                Some(d) => {
                    let r = buffers.remove(0);
                    Some(levels(d.as_ref(), data.slice(at.start + r.start..at.start + r.end), c.rows)?)
                }
            };
            self.decode_chunk(data.slice(at), &buffers, c.rows as usize, out, &mut scratch)?;
            out.valid(c.rows as usize, levels.as_deref());
        }
        Ok(())
    }

    /// The value buffers of one chunk: after a 2-byte level count, one size per buffer (2 or 4
    /// bytes), padded to 8; each buffer padded to 8.
    /// With definition levels, their 2-byte size follows the level count and their bytes come
    /// first (padded to 8); they are returned first.
    fn buffers_of(&self, chunk: &[u8]) -> Result<Vec<Range<usize>>, String> {
        let size = if self.large { 4 } else { 2 };
        let levels = if self.def.is_some() { 2 } else { 0 };
        let header = (2 + levels + self.buffers * size).next_multiple_of(ALIGN);
        if chunk.len() < header {
            return Err(corrupt("shorter than its header"));
        }
        let mut at = header;
        let mut out = Vec::with_capacity(self.buffers + 1);
        if self.def.is_some() {
            let n = u16::from_le_bytes([chunk[2], chunk[3]]) as usize;
            let end = at.checked_add(n).filter(|e| *e <= chunk.len()).ok_or_else(|| corrupt("levels pass its end"))?;
            out.push(at..end);
            at = end.next_multiple_of(ALIGN);
        }
        for b in 0..self.buffers {
            let p = 2 + levels + b * size;
            let n = if self.large {
                u32::from_le_bytes([chunk[p], chunk[p + 1], chunk[p + 2], chunk[p + 3]]) as usize
            } else {
                u16::from_le_bytes([chunk[p], chunk[p + 1]]) as usize
            };
            let end = at.checked_add(n).filter(|e| *e <= chunk.len()).ok_or_else(|| corrupt("a buffer passes its end"))?;
            out.push(at..end);
            at = end.next_multiple_of(ALIGN);
        }
        Ok(out)
    }

    fn decode_chunk(
        &self,
        chunk: Bytes,
        buffers: &[Range<usize>],
        rows: usize,
        out: &mut Decoded,
        scratch: &mut Vec<u64>,
    ) -> Result<(), String> {
        match (&self.codec, &self.dict) {
            (Codec::Flat(n), None) => {
                let b = &chunk[buffers[0].clone()];
                let need = rows * n;
                let v = b.get(..need).ok_or_else(|| corrupt(format!("{} bytes for {rows} values of {n}", b.len())))?;
                out.values.extend_from_slice(v);
            }
            (Codec::Packed(n), None) => unpack(*n, &chunk[buffers[0].clone()], rows, &mut out.values)?,
            (Codec::Strings(n), None) => strings(*n, &chunk[buffers[0].clone()], rows, out)?,
            (Codec::Strings(_), Some(_)) => return Err(corrupt("a dictionary of plain strings")),
            (Codec::Flat(_) | Codec::Packed(_), Some(dict)) => {
                scratch.clear();
                indices(&self.codec, &chunk[buffers[0].clone()], rows, scratch)?;
                gather(dict, scratch, out)?;
            }
            (Codec::Lance(d), dict) => {
                let parts = buffers.iter().map(|r| LanceBuffer::from_bytes(chunk.slice(r.clone()), 1)).collect();
                let block = d.decompress(parts, rows as u64).map_err(|e| corrupt(e))?;
                match (block, dict, self.out) {
                    (DataBlock::FixedWidth(f), None, Out::Fixed(n)) if f.bits_per_value as usize == n * 8 => {
                        let v = f.data.get(..rows * n).ok_or_else(|| corrupt("too few values"))?;
                        out.values.extend_from_slice(v);
                    }
                    (DataBlock::FixedWidth(f), Some(dict), _) => {
                        scratch.clear();
                        let n = f.bits_per_value as usize / 8;
                        indices(&Codec::Flat(n), &f.data, rows, scratch)?;
                        gather(dict, scratch, out)?;
                    }
                    (DataBlock::VariableWidth(v), None, Out::Var) => {
                        let offsets = offsets_of(&v.offsets, v.bits_per_offset, rows).ok_or_else(|| corrupt("bad offsets"))?;
                        append_var(out, &offsets, &v.data)?;
                    }
                    (other, _, _) => return Err(corrupt(format!("an unexpected {} block", other.name()))),
                }
            }
        }
        Ok(())
    }
}

/// The `rows` definition levels of a chunk (one per row: this decoder reads pages of one
/// nullable item layer only).
fn levels(d: &dyn BlockDecompressor, bytes: Bytes, rows: u64) -> Result<Vec<u16>, String> {
    let block = d.decompress(Some(LanceBuffer::from_bytes(bytes, 1)), rows).map_err(corrupt)?;
    match block {
        DataBlock::FixedWidth(f) if f.bits_per_value == 16 && f.num_values == rows && f.data.len() as u64 == 2 * rows => {
            let levels: Vec<u16> = f.data.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
            if let Some(bad) = levels.iter().find(|l| **l > 1) {
                return Err(corrupt(format!("definition level {bad} in a page of one nullable layer")));
            }
            Ok(levels)
        }
        other => Err(corrupt(format!("definition levels as a {} block", other.name()))),
    }
}

/// Append the `rows` strings of a plain string chunk (`Codec::Strings`) to `out`.
fn strings(n: usize, chunk: &[u8], rows: usize, out: &mut Decoded) -> Result<(), String> {
    let need = (rows + 1) * n;
    let raw = chunk.get(..need).ok_or_else(|| corrupt(format!("{} bytes for {} offsets", chunk.len(), rows + 1)))?;
    let at = |i: usize| -> u64 {
        let b = &raw[i * n..i * n + n];
        if n == 4 { u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64 } else { u64::from_le_bytes(b.try_into().unwrap_or_default()) }
    };
    let first = at(0);
    if first < need as u64 {
        return Err(corrupt(format!("values at {first} overlap {} offsets", rows + 1)));
    }
    if out.offsets.is_empty() {
        out.offsets.push(0);
    }
    let base = out.values.len() as u64;
    let mut previous = first;
    out.offsets.reserve(rows);
    for i in 1..=rows {
        let o = at(i);
        if o < previous {
            return Err(corrupt(format!("offset {o} after {previous}")));
        }
        previous = o;
        out.offsets.push(base + (o - first));
    }
    let bytes = chunk.get(first as usize..previous as usize).ok_or_else(|| corrupt("offsets pass the chunk"))?;
    out.values.extend_from_slice(bytes);
    Ok(())
}

/// Append `rows` values of `offsets` (n + 1, rising) into `values`.
fn append_var(out: &mut Decoded, offsets: &[u64], values: &[u8]) -> Result<(), String> {
    let (first, last) = (offsets[0] as usize, *offsets.last().unwrap_or(&0) as usize);
    let v = values.get(first..last).ok_or_else(|| corrupt("offsets pass the values"))?;
    if out.offsets.is_empty() {
        out.offsets.push(0);
    }
    let base = out.values.len() as u64;
    out.offsets.extend(offsets[1..].iter().map(|o| base + (o - offsets[0])));
    out.values.extend_from_slice(v);
    Ok(())
}

/// Unpack `rows` (≤ 1024) `n`-byte words of one inline bit-packed block, appending them to `out`.
fn unpack(n: usize, block: &[u8], rows: usize, out: &mut Vec<u8>) -> Result<(), String> {
    macro_rules! unpack_as {
        ($t:ty) => {{
            let bits = <$t>::BITS as usize;
            let width = block.get(..n).map(|w| {
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(w);
                u64::from_le_bytes(b) as usize
            });
            let width = width.ok_or_else(|| corrupt("a bit-packed block without its width"))?;
            if width > bits || rows > PACKED {
                return Err(corrupt(format!("bit width {width} of {bits}-bit values, {rows} rows")));
            }
            let words = PACKED * width / bits;
            let packed = &block[n..];
            if packed.len() != words * n {
                return Err(corrupt(format!("{} packed bytes for width {width}", packed.len())));
            }
            let input: Vec<$t> = packed.chunks_exact(n).map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or_default())).collect();
            let mut values = vec![0 as $t; PACKED];
            // SAFETY: the kernel reads `PACKED * width / bits` words and writes `PACKED` values;
            // both lengths were checked above, and `width <= bits`.
            unsafe { <$t as lance_bitpacking::BitPacking>::unchecked_unpack(width, &input, &mut values) };
            out.reserve(rows * n);
            for v in &values[..rows] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }};
    }
    match n {
        1 => unpack_as!(u8),
        2 => unpack_as!(u16),
        4 => unpack_as!(u32),
        8 => unpack_as!(u64),
        _ => return Err(corrupt(format!("{n}-byte packed words"))),
    }
    Ok(())
}

/// `rows` dictionary indices of a flat or bit-packed buffer, into `out`.
fn indices(codec: &Codec, buf: &[u8], rows: usize, out: &mut Vec<u64>) -> Result<(), String> {
    let (n, bytes) = match codec {
        Codec::Flat(n) => (*n, None),
        Codec::Packed(n) => {
            let mut b = Vec::with_capacity(rows * n);
            unpack(*n, buf, rows, &mut b)?;
            (*n, Some(b))
        }
        Codec::Lance(_) | Codec::Strings(_) => return Err(corrupt("dictionary indices of an unexpected kind")),
    };
    let src = bytes.as_deref().unwrap_or(buf);
    let src = src.get(..rows * n).ok_or_else(|| corrupt("too few dictionary indices"))?;
    match n {
        1 => out.extend(src.iter().map(|b| *b as u64)),
        2 => out.extend(src.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]]) as u64)),
        4 => out.extend(src.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64)),
        8 => out.extend(src.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))),
        _ => return Err(corrupt(format!("{n}-byte dictionary indices"))),
    }
    Ok(())
}

/// Dictionary values of `W` bytes at `idx` (checked below the item count) appended to `out`.
fn gather_fixed<const W: usize>(values: &[u8], idx: &[u64], out: &mut Decoded) {
    let (items, _) = values.as_chunks::<W>();
    out.values.reserve(idx.len() * W);
    for i in idx {
        out.values.extend_from_slice(&items[*i as usize]);
    }
}

fn gather(dict: &Dict, idx: &[u64], out: &mut Decoded) -> Result<(), String> {
    let items = dict.items() as u64;
    if let Some(bad) = idx.iter().find(|i| **i >= items) {
        return Err(corrupt(format!("dictionary index {bad} of {items} items")));
    }
    match dict {
        Dict::Fixed { width, values, .. } => match width {
            1 => gather_fixed::<1>(values, idx, out),
            2 => gather_fixed::<2>(values, idx, out),
            4 => gather_fixed::<4>(values, idx, out),
            8 => gather_fixed::<8>(values, idx, out),
            16 => gather_fixed::<16>(values, idx, out),
            w => return Err(corrupt(format!("{w}-byte dictionary values"))),
        },
        Dict::Var { offsets, values } => {
            if out.offsets.is_empty() {
                out.offsets.push(0);
            }
            for i in idx {
                let (a, b) = (offsets[*i as usize] as usize, offsets[*i as usize + 1] as usize);
                let v = values.get(a..b).ok_or_else(|| corrupt("a dictionary value passes its buffer"))?;
                out.values.extend_from_slice(v);
                out.offsets.push(out.values.len() as u64);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod corrupt_input {
    //! Chunks that are not what their page says are errors with a message, never a panic or a
    //! read past the bytes (the differential test covers the readable pages).
    use super::*;

    fn le32(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn bad_plain_string_chunks_are_refused() {
        let mut out = Decoded::default();
        // 2 rows: 3 offsets (12 bytes), then "abc"
        let mut ok = le32(&[12, 13, 15]);
        ok.extend_from_slice(b"abc");
        strings(4, &ok, 2, &mut out).unwrap();
        assert_eq!((out.offsets.clone(), out.values.clone()), (vec![0, 1, 3], b"abc".to_vec()));
        for (bytes, rows, why) in [
            (le32(&[12, 14, 13]), 2, "after"),       // offsets go down
            (le32(&[12, 13, 99]), 2, "pass"),        // past the chunk
            (le32(&[4, 13, 15]), 2, "overlap"),      // values inside the offset table
            (le32(&[12]), 2, "offsets"),             // too short for its offsets
        ] {
            let e = strings(4, &bytes, rows, &mut Decoded::default()).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn bad_bit_packed_blocks_are_refused() {
        let mut out = Vec::new();
        // width 40 for 32-bit words
        let e = unpack(4, &le32(&[40]), 10, &mut out).unwrap_err();
        assert!(e.contains("bit width 40"), "{e}");
        // width 3 needs 1024 * 3 / 32 = 96 words after the width; 95 given
        let mut block = le32(&[3]);
        block.extend(le32(&[0; 95]));
        assert!(unpack(4, &block, 10, &mut out).unwrap_err().contains("packed bytes"));
        // no width at all, and more rows than a block holds
        assert!(unpack(4, &[1, 2], 1, &mut out).is_err());
        assert!(unpack(4, &le32(&[0]), PACKED + 1, &mut out).unwrap_err().contains("rows"));
        assert!(out.is_empty(), "nothing appended on a refusal");
    }

    #[test]
    fn dictionary_indices_past_the_dictionary_are_refused() {
        let dict = Dict::Fixed { width: 4, values: LanceBuffer::from(le32(&[7, 8])), items: 2 };
        let mut out = Decoded::default();
        gather(&dict, &[1, 0, 1], &mut out).unwrap();
        assert_eq!(out.values, le32(&[8, 7, 8]));
        let e = gather(&dict, &[0, 2], &mut Decoded::default()).unwrap_err();
        assert!(e.contains("index 2 of 2"), "{e}");
        let e = indices(&Codec::Flat(4), &le32(&[1]), 2, &mut Vec::new()).unwrap_err();
        assert!(e.contains("too few"), "{e}");
    }

    #[test]
    fn chunk_headers_that_pass_their_chunk_are_refused() {
        let plan = PagePlan {
            rows: 4,
            out: Out::Fixed(4),
            codec: Codec::Flat(4),
            def: None,
            dict: None,
            buffers: 1,
            large: false,
            data_pos: 0,
            chunks: vec![Chunk { first: 0, rows: 4, bytes: 0..24 }],
        };
        // header: level count, buffer size 16, padding to 8; then 16 bytes of values
        let mut chunk = vec![4, 0, 16, 0, 0, 0, 0, 0];
        chunk.extend(le32(&[1, 2, 3, 4]));
        let mut out = Decoded::default();
        plan.decode(0..1, &Bytes::from(chunk.clone()), &mut out).unwrap();
        assert_eq!(out.values, le32(&[1, 2, 3, 4]));
        chunk[2] = 200; // a buffer larger than the chunk
        assert!(plan.decode(0..1, &Bytes::from(chunk.clone()), &mut Decoded::default()).unwrap_err().contains("passes"));
        chunk[2] = 8; // a buffer holding fewer values than the chunk's rows
        assert!(plan.decode(0..1, &Bytes::from(chunk), &mut Decoded::default()).unwrap_err().contains("bytes for 4 values"));
        // a read shorter than the chunk
        assert!(plan.decode(0..1, &Bytes::from(vec![4u8, 0]), &mut Decoded::default()).unwrap_err().contains("shorter"));
    }
}
