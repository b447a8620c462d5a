//! [`WriteBatch`]: an ordered group of puts, deletes and range deletes applied atomically.
//!
//! The encoding is also the WAL record payload (see `docs/format.md`, "Write batch"):
//! `seq: fixed64 | count: fixed32 | record*`, a record being `kind: u8 | key: varint-prefixed |
//! value: varint-prefixed` (value absent for deletes; for range deletes it is the exclusive end;
//! for merges the operand). An operation on a column family other than the default one sets
//! the kind's high bit and follows it with the family's id: `kind | 0x80 : u8 | family:
//! varint32 | key | value`; that form naming family 0 is corruption, so each operation has
//! one encoding and a batch of the default family alone keeps the bytes it always had.
//! Depends on `coding`, `types`, `options` (limits), `error`.

use crate::coding::{put_length_prefixed, put_varint32, Decoder};
use crate::error::{Error, Result};
use crate::options::{MAX_BATCH_SIZE, MAX_KEY_SIZE, MAX_VALUE_SIZE};
use crate::types::{SeqNo, ValueKind, MAX_SEQ};

const HEADER: usize = 12;
/// The kind byte's flag for an operation on a family other than the default one.
const FAMILY_FLAG: u8 = 0x80;

/// An atomic group of writes. Later operations in a batch override earlier ones on the same key.
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// First limit violation seen while building; reported when the batch is written.
    invalid: Option<String>,
    /// Whether the batch holds a merge operand (the write path then checks them with the
    /// database's merge operator).
    has_merge: bool,
    /// Whether an operation is on the default family.
    has_default: bool,
    /// The other families operations name, ascending, without repeats.
    other_families: Vec<u32>,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// One operation of a decoded batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Sets the key (first) to the value (second).
    Put(&'a [u8], &'a [u8]),
    /// Removes the key.
    Delete(&'a [u8]),
    /// Removes every key in `[start, end)` (start first, exclusive end second).
    DeleteRange(&'a [u8], &'a [u8]),
    /// Merges the operand (second) into the key (first) with the database's merge operator.
    Merge(&'a [u8], &'a [u8]),
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER],
            count: 0,
            invalid: None,
            has_merge: false,
            has_default: false,
            other_families: Vec::new(),
        }
    }

    fn check_key(&mut self, key: &[u8]) {
        if key.len() > MAX_KEY_SIZE && self.invalid.is_none() {
            self.invalid = Some(format!(
                "key of {} bytes exceeds the limit of {MAX_KEY_SIZE}",
                key.len()
            ));
        }
    }

    fn push(&mut self, kind: ValueKind, key: &[u8], value: Option<&[u8]>) {
        self.push_in(0, kind, key, value);
    }

    /// Appends one operation of family `family` (0: the default family).
    pub(crate) fn push_in(
        &mut self,
        family: u32,
        kind: ValueKind,
        key: &[u8],
        value: Option<&[u8]>,
    ) {
        self.check_key(key);
        if family == 0 {
            self.has_default = true;
            self.rep.push(kind as u8);
        } else {
            if let Err(at) = self.other_families.binary_search(&family) {
                self.other_families.insert(at, family);
            }
            self.rep.push(kind as u8 | FAMILY_FLAG);
            put_varint32(&mut self.rep, family);
        }
        put_length_prefixed(&mut self.rep, key);
        if let Some(v) = value {
            put_length_prefixed(&mut self.rep, v);
        }
        self.count += 1;
    }

    fn check_value(&mut self, v: &[u8]) {
        if v.len() > MAX_VALUE_SIZE && self.invalid.is_none() {
            self.invalid = Some(format!(
                "value of {} bytes exceeds the limit of {MAX_VALUE_SIZE}",
                v.len()
            ));
        }
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let v = value.as_ref();
        self.check_value(v);
        self.push(ValueKind::Put, key.as_ref(), Some(v));
    }

    /// Merges `operand` into `key` with the database's merge operator
    /// (`Options::merge_operator`; writing the batch fails without one).
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        let v = operand.as_ref();
        self.check_value(v);
        self.has_merge = true;
        self.push(ValueKind::Merge, key.as_ref(), Some(v));
    }

    /// Whether the batch holds a merge operand.
    pub fn has_merge(&self) -> bool {
        self.has_merge
    }

    /// Removes `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.push(ValueKind::Delete, key.as_ref(), None);
    }

    /// Removes every key in `[start, end)`. An empty or inverted range is a no-op.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let end = end.as_ref();
        self.check_key(end);
        self.push(ValueKind::RangeDelete, start.as_ref(), Some(end));
    }

    /// Sets `key` to `value` in column family `cf`. The batch records the family's id: write
    /// it to the database the handle is of.
    pub fn put_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) {
        let v = value.as_ref();
        self.check_value(v);
        self.push_in(cf.id(), ValueKind::Put, key.as_ref(), Some(v));
    }

    /// Removes `key` from column family `cf`.
    pub fn delete_cf(&mut self, cf: &crate::ColumnFamily, key: impl AsRef<[u8]>) {
        self.push_in(cf.id(), ValueKind::Delete, key.as_ref(), None);
    }

    /// Merges `operand` into `key` of column family `cf` (see [`WriteBatch::merge`]).
    pub fn merge_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) {
        let v = operand.as_ref();
        self.check_value(v);
        self.has_merge = true;
        self.push_in(cf.id(), ValueKind::Merge, key.as_ref(), Some(v));
    }

    /// Removes every key in `[start, end)` of column family `cf`.
    pub fn delete_range_cf(
        &mut self,
        cf: &crate::ColumnFamily,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) {
        let end = end.as_ref();
        self.check_key(end);
        self.push_in(cf.id(), ValueKind::RangeDelete, start.as_ref(), Some(end));
    }

    /// Whether an operation names a column family other than the default one.
    pub fn has_column_families(&self) -> bool {
        !self.other_families.is_empty()
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch holds no operations.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Makes room for `additional` more encoded bytes (before appending many batches).
    pub fn reserve(&mut self, additional: usize) {
        self.rep.reserve(additional);
    }

    /// Encoded size in bytes.
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Removes every operation, leaving an empty batch that can be reused.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER);
        self.rep[..HEADER].fill(0);
        self.count = 0;
        self.invalid = None;
        self.has_merge = false;
        self.has_default = false;
        self.other_families.clear();
    }

    /// Checks the size limits; a batch that fails is not written at all.
    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(m) = &self.invalid {
            return Err(Error::invalid(m.clone()));
        }
        if self.rep.len() > MAX_BATCH_SIZE {
            return Err(Error::invalid(format!(
                "write batch of {} bytes exceeds the limit of {MAX_BATCH_SIZE}",
                self.rep.len()
            )));
        }
        Ok(())
    }

    /// Appends another batch's operations after this one's, so that both commit as one atomic
    /// batch (the engine's group commit; a server's commit groups). A limit violation of
    /// `other` carries over: the combined batch is refused when written.
    pub fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER..]);
        self.count += other.count;
        self.has_merge |= other.has_merge;
        self.has_default |= other.has_default;
        for &f in &other.other_families {
            if let Err(at) = self.other_families.binary_search(&f) {
                self.other_families.insert(at, f);
            }
        }
        if self.invalid.is_none() {
            self.invalid.clone_from(&other.invalid);
        }
    }

    /// Stamps the first sequence number and returns the encoded batch.
    pub(crate) fn encode_with_seq(&mut self, seq: SeqNo) -> &[u8] {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }

    /// Iterates the operations in order, of every column family: see
    /// [`WriteBatch::iter_cf`] for which family each is in.
    pub fn iter(&self) -> impl Iterator<Item = BatchOp<'_>> + '_ {
        self.iter_cf().map(|(_, op)| op)
    }

    /// Iterates the operations in order, each with its column family's id (0: the default).
    pub fn iter_cf(&self) -> impl Iterator<Item = (u32, BatchOp<'_>)> + '_ {
        // A batch built through the API always decodes.
        BatchIter {
            d: Decoder::new(&self.rep[HEADER..]),
        }
        .map_while(|r| r.ok())
    }

    /// The ids of the column families the batch writes, in ascending order, without repeats.
    /// (The default family for a batch without operations.)
    pub(crate) fn families(&self) -> impl Iterator<Item = u32> + '_ {
        let default = self.has_default || self.other_families.is_empty();
        default
            .then_some(0)
            .into_iter()
            .chain(self.other_families.iter().copied())
    }
}

impl WriteBatch {
    /// Decodes an encoded batch (a WAL record payload): its first sequence number and its
    /// operations. Untrusted input: any inconsistency is `Corruption`.
    pub fn decode(rec: &[u8]) -> Result<(SeqNo, WriteBatch)> {
        let (seq, count, ops) = decode_ops(rec)?;
        let mut batch = WriteBatch::new();
        for op in ops {
            let (family, op) = op?;
            match op {
                BatchOp::Put(k, v) => {
                    batch.check_value(v);
                    batch.push_in(family, ValueKind::Put, k, Some(v))
                }
                BatchOp::Delete(k) => batch.push_in(family, ValueKind::Delete, k, None),
                BatchOp::DeleteRange(s, e) => {
                    batch.check_key(e);
                    batch.push_in(family, ValueKind::RangeDelete, s, Some(e))
                }
                BatchOp::Merge(k, v) => {
                    batch.check_value(v);
                    batch.has_merge = true;
                    batch.push_in(family, ValueKind::Merge, k, Some(v))
                }
            }
        }
        if batch.count != count {
            return Err(Error::corruption(format!(
                "write batch header counts {count} records but holds {}",
                batch.count
            )));
        }
        Ok((seq, batch))
    }
}

/// An encoded batch's first sequence number, its record count, and its operations with their
/// column families, decoded in place (recovery reads whole WALs this way). Untrusted input: a
/// bad header is `Corruption` here, a malformed operation an `Err` from the iterator; the
/// caller checks the count.
pub(crate) fn decode_ops(
    rec: &[u8],
) -> Result<(SeqNo, u32, impl Iterator<Item = Result<FamilyOp<'_>>> + '_)> {
    let mut d = Decoder::new(rec);
    let (Some(seq), Some(count)) = (d.fixed64(), d.fixed32()) else {
        return Err(Error::corruption("write batch shorter than its header"));
    };
    if count == 0 || seq == 0 || seq.saturating_add(count as u64 - 1) > MAX_SEQ {
        return Err(Error::corruption(format!(
            "write batch with sequence {seq} and count {count} is invalid"
        )));
    }
    Ok((seq, count, BatchIter { d }))
}

/// An operation with its column family's id.
pub(crate) type FamilyOp<'a> = (u32, BatchOp<'a>);

struct BatchIter<'a> {
    d: Decoder<'a>,
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<(u32, BatchOp<'a>)>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.d.is_empty() {
            return None;
        }
        let r = (|| {
            let byte = self.d.u8()?;
            let family = if byte & FAMILY_FLAG != 0 {
                // The flagged form never names the default family: one encoding per operation.
                self.d.varint32().filter(|&f| f != 0)?
            } else {
                0
            };
            let kind = ValueKind::from_u8(byte & !FAMILY_FLAG)?;
            let key = self.d.length_prefixed()?;
            let op = match kind {
                ValueKind::Put => BatchOp::Put(key, self.d.length_prefixed()?),
                ValueKind::Delete => BatchOp::Delete(key),
                ValueKind::RangeDelete => BatchOp::DeleteRange(key, self.d.length_prefixed()?),
                ValueKind::Merge => BatchOp::Merge(key, self.d.length_prefixed()?),
            };
            Some((family, op))
        })();
        match r {
            Some(op) => Some(Ok(op)),
            None => {
                self.d = Decoder::new(&[]);
                Some(Err(Error::corruption("malformed write batch record")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        let mut b = WriteBatch::new();
        b.put("a", "1");
        b.delete("b");
        b.delete_range("c", "d");
        b.merge("e", "+1");
        let enc = b.encode_with_seq(42).to_vec();
        let (seq, d) = WriteBatch::decode(&enc).unwrap();
        assert_eq!((seq, d.len()), (42, 4));
        assert!(d.has_merge());
        let ops: Vec<_> = d.iter().collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"a", b"1"),
                BatchOp::Delete(b"b"),
                BatchOp::DeleteRange(b"c", b"d"),
                BatchOp::Merge(b"e", b"+1")
            ]
        );
        assert!(WriteBatch::decode(&enc[..enc.len() - 1]).is_err());
        assert!(WriteBatch::decode(&enc[..5]).is_err());
        let mut zero = enc.clone();
        zero[..8].fill(0);
        assert!(WriteBatch::decode(&zero).is_err());
    }

    #[test]
    fn oversized_key_is_rejected() {
        let mut b = WriteBatch::new();
        b.put("ok", "v");
        b.put(vec![0u8; MAX_KEY_SIZE + 1], "v");
        assert!(b.validate().is_err());
    }

    #[test]
    fn append_concatenates_and_keeps_violations() {
        let mut a = WriteBatch::new();
        a.put("a", "1");
        let mut b = WriteBatch::new();
        b.delete("b");
        b.put("c", "3");
        a.append(&b);
        assert_eq!(a.len(), 3);
        let enc = a.encode_with_seq(7).to_vec();
        let (_, d) = WriteBatch::decode(&enc).unwrap();
        let ops: Vec<_> = d.iter().collect();
        assert_eq!(
            ops,
            vec![
                BatchOp::Put(b"a", b"1"),
                BatchOp::Delete(b"b"),
                BatchOp::Put(b"c", b"3")
            ]
        );
        assert!(a.validate().is_ok());
        let mut bad = WriteBatch::new();
        bad.delete(vec![0u8; MAX_KEY_SIZE + 1]);
        a.append(&bad);
        assert!(a.validate().is_err());
    }
}
