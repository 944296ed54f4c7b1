//! Group keys: each key column's values numbered as first seen, and the group of each row
//! (`Fused::group_rows`; narrow keys by one lookup of their packed values, `group_packed`).

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use arrow_schema::DataType;

use super::{Fused, MAX_KEYS};

/// Numbers for values, as first seen: 128-bit codes in an open-addressed table, longer byte
/// strings in a map, NULL as one more value.
#[derive(Debug)]
pub(super) struct Numbering {
    codes: Vec<u128>,
    ids: Vec<u32>,
    bits: u32,
    long: HashMap<Box<[u8]>, u32>,
    null: Option<u32>,
    next: u32,
    /// codes in the table
    len: usize,
}

const EMPTY: u32 = u32::MAX;
/// The group of a row a unit does not keep (`Fused::group_rows`).
pub(super) const DROPPED: u32 = u32::MAX;

impl Numbering {
    pub(super) fn new() -> Self {
        let bits = 6;
        Numbering { codes: vec![0; 1 << bits], ids: vec![EMPTY; 1 << bits], bits, long: HashMap::new(), null: None, next: 0, len: 0 }
    }

    #[inline]
    fn slot(code: u128, bits: u32) -> usize {
        let x = (code as u64) ^ ((code >> 64) as u64).rotate_left(31);
        (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize
    }

    /// The number of `code`, and whether it is new.
    #[inline]
    fn code(&mut self, code: u128) -> (u32, bool) {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        loop {
            let id = self.ids[at];
            if id == EMPTY {
                let id = self.fresh();
                self.codes[at] = code;
                self.ids[at] = id;
                self.len += 1;
                if self.len * 2 > self.ids.len() {
                    self.grow();
                }
                return (id, true);
            }
            if self.codes[at] == code {
                return (id, false);
            }
            at = (at + 1) & mask;
        }
    }

    /// The number `code` was given (`insert`), if any.
    #[inline]
    fn find(&self, code: u128) -> Option<u32> {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        loop {
            match self.ids[at] {
                EMPTY => return None,
                id if self.codes[at] == code => return Some(id),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Gives `code` (not in the table) the number `id`.
    fn insert(&mut self, code: u128, id: u32) {
        let mask = (1usize << self.bits) - 1;
        let mut at = Self::slot(code, self.bits);
        while self.ids[at] != EMPTY {
            at = (at + 1) & mask;
        }
        self.codes[at] = code;
        self.ids[at] = id;
        self.len += 1;
        if self.len * 2 > self.ids.len() {
            self.grow();
        }
    }

    /// Values numbered so far.
    pub(super) fn count(&self) -> usize {
        self.next as usize
    }

    fn fresh(&mut self) -> u32 {
        let id = self.next;
        self.next += 1;
        id
    }

    fn grow(&mut self) {
        let bits = self.bits + 1;
        let mut codes = vec![0u128; 1 << bits];
        let mut ids = vec![EMPTY; 1 << bits];
        let mask = (1usize << bits) - 1;
        for (c, id) in self.codes.iter().zip(&self.ids) {
            if *id == EMPTY {
                continue;
            }
            let mut at = Self::slot(*c, bits);
            while ids[at] != EMPTY {
                at = (at + 1) & mask;
            }
            codes[at] = *c;
            ids[at] = *id;
        }
        (self.codes, self.ids, self.bits) = (codes, ids, bits);
    }

    #[inline]
    fn bytes(&mut self, v: &[u8]) -> (u32, bool) {
        if v.len() < 16 {
            let mut b = [0u8; 16];
            b.iter_mut().zip(v).for_each(|(d, s)| *d = *s);
            b[15] = v.len() as u8;
            return self.code(u128::from_le_bytes(b));
        }
        if let Some(id) = self.long.get(v) {
            return (*id, false);
        }
        let id = self.fresh();
        self.long.insert(v.into(), id);
        (id, true)
    }

    fn null(&mut self) -> (u32, bool) {
        match self.null {
            Some(id) => (id, false),
            None => {
                let id = self.fresh();
                self.null = Some(id);
                (id, true)
            }
        }
    }
}

/// A group key column: where it is in the units, its values' numbers, and its distinct values
/// in the order of their numbers (parts taken from the units).
#[derive(Debug)]
pub(super) struct KeyColumn {
    pub(super) at: usize,
    pub(super) numbers: Numbering,
    pub(super) values: Vec<ArrayRef>,
}

/// The offsets (as positions) and bytes of a string or binary column; `None` for other types.
fn var_parts(column: &ArrayRef) -> Option<(Vec<usize>, &[u8])> {
    fn parts<'a, O: arrow::array::OffsetSizeTrait>(offsets: &[O], values: &'a [u8]) -> (Vec<usize>, &'a [u8]) {
        (offsets.iter().map(|o| o.as_usize()).collect(), values)
    }
    Some(match column.data_type() {
        DataType::Utf8 => parts(column.as_string::<i32>().value_offsets(), column.as_string::<i32>().value_data()),
        DataType::LargeUtf8 => parts(column.as_string::<i64>().value_offsets(), column.as_string::<i64>().value_data()),
        DataType::Binary => parts(column.as_binary::<i32>().value_offsets(), column.as_binary::<i32>().value_data()),
        DataType::LargeBinary => parts(column.as_binary::<i64>().value_offsets(), column.as_binary::<i64>().value_data()),
        _ => return None,
    })
}

/// `f(row)` for each of `n` rows `kept` keeps (all when `None`), in order.
#[inline]
fn for_kept(kept: Option<&BooleanArray>, n: usize, f: impl FnMut(usize)) {
    match kept {
        None => (0..n).for_each(f),
        Some(k) => k.values().set_indices().for_each(f),
    }
}

/// The number of row `i`'s value of `column` in `numbers`, and whether it is new.
fn number_one(numbers: &mut Numbering, column: &ArrayRef, i: usize) -> (u32, bool) {
    if column.is_null(i) {
        return numbers.null();
    }
    match column.data_type() {
        DataType::Utf8 => numbers.bytes(column.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => numbers.bytes(column.as_string::<i64>().value(i).as_bytes()),
        DataType::Binary => numbers.bytes(column.as_binary::<i32>().value(i)),
        DataType::LargeBinary => numbers.bytes(column.as_binary::<i64>().value(i)),
        t => {
            let width = t.primitive_width().unwrap_or(0);
            let data = column.to_data();
            let at = (data.offset() + i) * width;
            let mut b = [0u8; 16];
            if let Some(v) = data.buffers().first().and_then(|raw| raw.as_slice().get(at..at + width)) {
                b[..width].copy_from_slice(v);
            }
            numbers.code(u128::from_le_bytes(b))
        }
    }
}

/// `key`'s new values, rows `rows` of `column`, kept in one part (a few rows: the unit's buffers
/// are not kept).
fn keep_values(key: &mut KeyColumn, column: &ArrayRef, rows: Vec<u32>) {
    if rows.is_empty() {
        return;
    }
    if let Ok(part) = arrow::compute::take(column.as_ref(), &UInt32Array::from(rows), None) {
        key.values.push(part);
    }
}

impl Fused {
    /// The group of each kept row of `batch`; `DROPPED` for the others.
    pub(super) fn group_rows(&mut self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Vec<u32> {
        let n = batch.num_rows();
        if self.keys.is_empty() {
            let mut out = vec![DROPPED; n];
            for_kept(kept, n, |i| out[i] = 0);
            return out;
        }
        if let Some(out) = self.group_packed(batch, kept) {
            return out;
        }
        let mut per_key: Vec<Vec<u32>> = Vec::with_capacity(self.keys.len());
        for key in &mut self.keys {
            let column = batch.column(key.at);
            let mut ids = vec![DROPPED; n];
            let mut new_rows: Vec<u32> = Vec::new();
            let nulls = column.logical_nulls();
            let numbers = &mut key.numbers;
            let var = var_parts(column);
            let width = column.data_type().primitive_width().unwrap_or(0);
            let data = column.to_data();
            let raw: &[u8] = match (&var, data.buffers().first()) {
                (None, Some(b)) => b.as_slice().get(data.offset() * width..).unwrap_or(&[]),
                _ => &[],
            };
            let mut put = |i: usize, (id, new): (u32, bool)| {
                ids[i] = id;
                if new {
                    new_rows.push(i as u32);
                }
            };
            let fixed = |i: usize| {
                let mut b = [0u8; 16];
                b[..width].copy_from_slice(&raw[i * width..(i + 1) * width]);
                u128::from_le_bytes(b)
            };
            // one loop per case, so that the row loop does not ask what the column is
            match (&var, &nulls) {
                (Some((offsets, values)), None) => for_kept(kept, n, |i| put(i, numbers.bytes(&values[offsets[i]..offsets[i + 1]]))),
                (None, None) => for_kept(kept, n, |i| put(i, numbers.code(fixed(i)))),
                (var, Some(nb)) => for_kept(kept, n, |i| {
                    let v = match var {
                        _ if nb.is_null(i) => numbers.null(),
                        Some((offsets, values)) => numbers.bytes(&values[offsets[i]..offsets[i + 1]]),
                        None => numbers.code(fixed(i)),
                    };
                    put(i, v)
                }),
            }
            keep_values(key, column, new_rows);
            per_key.push(ids);
        }
        if per_key.len() == 1 {
            return per_key.pop().unwrap_or_default();
        }
        let mut out = vec![DROPPED; n];
        let (tuples, group_keys) = (&mut self.tuples, &mut self.group_keys);
        for_kept(kept, n, |i| {
            let mut code = 0u128;
            let mut tuple = [0u32; MAX_KEYS];
            for (j, ids) in per_key.iter().enumerate() {
                code |= (ids[i] as u128) << (32 * j);
                tuple[j] = ids[i];
            }
            let (g, new) = tuples.code(code);
            if new {
                group_keys.push(tuple);
            }
            out[i] = g;
        });
        out
    }

    /// The groups of a unit whose two to four keys are all narrow here — fixed-width values of
    /// up to 8 bytes and strings or binary of up to 7, no NULL, 16 bytes together — found by one
    /// lookup per row of the keys' values packed into 128 bits (each key in a place and width
    /// fixed by its type, so the same values pack the same in every unit); a packed value not
    /// seen before is numbered through the keys' own numbers (`tuples`), as `group_rows` does.
    fn group_packed(&mut self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Option<Vec<u32>> {
        enum Narrow<'a> {
            Fixed(arrow::buffer::Buffer, usize),
            Var(Vec<usize>, &'a [u8]),
        }
        if self.keys.len() < 2 {
            return None;
        }
        let n = batch.num_rows();
        let mut narrow = Vec::with_capacity(self.keys.len());
        let mut bytes = 0;
        for key in &self.keys {
            let column = batch.column(key.at);
            if column.logical_null_count() > 0 {
                return None;
            }
            let var = var_parts(column);
            let (part, width) = match var {
                Some((offsets, values)) if offsets.windows(2).all(|w| w[1] - w[0] <= 7) => (Narrow::Var(offsets, values), 8),
                Some(_) => return None,
                None => {
                    let width = column.data_type().primitive_width().filter(|w| *w <= 8)?;
                    let data = column.to_data();
                    let raw = data.buffers().first()?;
                    if raw.len() < (data.offset() + n) * width {
                        return None;
                    }
                    let raw = raw.slice(data.offset() * width);
                    (Narrow::Fixed(raw, width), width)
                }
            };
            bytes += width;
            narrow.push(part);
        }
        if bytes > 16 {
            return None;
        }
        let code_of = |i: usize| -> u128 {
            let mut code = 0u128;
            let mut shift = 0;
            for part in &narrow {
                let (v, width) = match part {
                    Narrow::Fixed(raw, width) => {
                        let mut b = [0u8; 8];
                        b[..*width].copy_from_slice(&raw.as_slice()[i * width..(i + 1) * width]);
                        (u64::from_le_bytes(b), *width)
                    }
                    Narrow::Var(offsets, values) => {
                        let s = &values[offsets[i]..offsets[i + 1]];
                        let mut v = (s.len() as u64) << 56;
                        s.iter().enumerate().for_each(|(j, b)| v |= (*b as u64) << (8 * j));
                        (v, 8)
                    }
                };
                code |= (v as u128) << shift;
                shift += 8 * width;
            }
            code
        };
        const PENDING: u32 = DROPPED - 1;
        let mut out = vec![DROPPED; n];
        let mut missing = Vec::new();
        let packed = &self.packed;
        for_kept(kept, n, |i| match packed.find(code_of(i)) {
            Some(g) => out[i] = g,
            None => {
                out[i] = PENDING;
                missing.push(i);
            }
        });
        // each key's new values, taken once per unit (a table of many groups sees many)
        let mut new_values: Vec<Vec<u32>> = vec![Vec::new(); self.keys.len()];
        for i in missing {
            let code = code_of(i);
            if let Some(g) = self.packed.find(code) {
                out[i] = g;
                continue;
            }
            let mut tuple = [0u32; MAX_KEYS];
            let mut tuple_code = 0u128;
            for (j, key) in self.keys.iter_mut().enumerate() {
                let (id, new) = number_one(&mut key.numbers, batch.column(key.at), i);
                if new {
                    new_values[j].push(i as u32);
                }
                tuple[j] = id;
                tuple_code |= (id as u128) << (32 * j);
            }
            let (g, new) = self.tuples.code(tuple_code);
            if new {
                self.group_keys.push(tuple);
            }
            self.packed.insert(code, g);
            out[i] = g;
        }
        for (key, rows) in self.keys.iter_mut().zip(new_values) {
            keep_values(key, batch.column(key.at), rows);
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_given_as_first_seen_and_survive_growth() {
        let mut n = Numbering::new();
        let mut seen = Vec::new();
        for round in 0..2 {
            for v in 0..10_000u128 {
                let (id, new) = n.code(v * 7919);
                assert_eq!(new, round == 0);
                if round == 0 {
                    seen.push(id);
                } else {
                    assert_eq!(id, seen[v as usize]);
                }
            }
        }
        assert_eq!(seen, (0..10_000).collect::<Vec<u32>>());
        // short and long byte strings, the empty one and NULL are values of their own
        let mut b = Numbering::new();
        assert_eq!(b.bytes(b"").0, 0);
        assert_eq!(b.bytes(b"\0").0, 1, "a NUL byte differs from the empty string");
        assert_eq!(b.null().0, 2);
        let long = [7u8; 40];
        assert_eq!(b.bytes(&long), (3, true));
        assert_eq!(b.bytes(&long), (3, false));
        assert_eq!(b.bytes(&long[..15]), (4, true), "15 bytes are a code, 40 a key of the map");
        assert_eq!(b.null(), (2, false));
    }
}
