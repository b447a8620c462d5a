//! Target `batch`: `WriteBatch::decode`, the WAL record payload decoder.
//!
//! Properties: when decoding succeeds, the operations equal those of an independent parser
//! written from `docs/format.md` ("Write batch"), column families included, the count matches
//! the header, and re-encoding the operations canonically (the reference encoder) decodes to an
//! equal batch.

use strata::batch::BatchOp;
use strata::WriteBatch;

use crate::util::{log_records, real_db};

#[derive(Debug, PartialEq, Eq)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
}

/// An operation with its column family's id (0: the default family).
type FamilyOp = (u32, Op);

fn varint(d: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let (&b, rest) = d.split_first()?;
        *d = rest;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b < 0x80 {
            return Some(v);
        }
    }
    None
}

fn prefixed(d: &mut &[u8]) -> Option<Vec<u8>> {
    let n = usize::try_from(varint(d)?).ok()?;
    if n > d.len() {
        return None;
    }
    let (a, b) = d.split_at(n);
    *d = b;
    Some(a.to_vec())
}

/// The family of a flagged operation: a varint32 (at most 5 bytes, at most 2³²−1), never 0.
fn family(d: &mut &[u8]) -> Option<u32> {
    let before = d.len();
    let v = varint(d)?;
    let family = u32::try_from(v).ok().filter(|f| *f != 0)?;
    (before - d.len() <= 5).then_some(family)
}

/// The reference parser: the operations after the 12-byte header, each with its column
/// family, or `None` if malformed.
fn reference(data: &[u8]) -> Option<(u64, u32, Vec<FamilyOp>)> {
    let seq = u64::from_le_bytes(data.get(..8)?.try_into().ok()?);
    let count = u32::from_le_bytes(data.get(8..12)?.try_into().ok()?);
    let mut d = &data[12..];
    let mut ops = Vec::new();
    while !d.is_empty() {
        let (&byte, rest) = d.split_first()?;
        d = rest;
        let fam = if byte & 0x80 != 0 { family(&mut d)? } else { 0 };
        let kind = byte & 0x7f;
        let key = prefixed(&mut d)?;
        ops.push((fam, match kind {
            1 => Op::Put(key, prefixed(&mut d)?),
            0 => Op::Delete(key),
            2 => Op::DeleteRange(key, prefixed(&mut d)?),
            3 => Op::Merge(key, prefixed(&mut d)?),
            _ => return None,
        }));
    }
    Some((seq, count, ops))
}

fn put_prefixed(out: &mut Vec<u8>, s: &[u8]) {
    let mut n = s.len() as u64;
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
    out.extend_from_slice(s);
}

fn encode(seq: u64, ops: &[FamilyOp]) -> Vec<u8> {
    let mut out = seq.to_le_bytes().to_vec();
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for (fam, op) in ops {
        let kind = match op {
            Op::Delete(_) => 0,
            Op::Put(..) => 1,
            Op::DeleteRange(..) => 2,
            Op::Merge(..) => 3,
        };
        if *fam == 0 {
            out.push(kind);
        } else {
            out.push(kind | 0x80);
            let mut n = *fam as u64;
            while n >= 0x80 {
                out.push(n as u8 | 0x80);
                n >>= 7;
            }
            out.push(n as u8);
        }
        match op {
            Op::Put(k, v) => {
                put_prefixed(&mut out, k);
                put_prefixed(&mut out, v);
            }
            Op::Delete(k) => {
                put_prefixed(&mut out, k);
            }
            Op::DeleteRange(s, e) => {
                put_prefixed(&mut out, s);
                put_prefixed(&mut out, e);
            }
            Op::Merge(k, v) => {
                put_prefixed(&mut out, k);
                put_prefixed(&mut out, v);
            }
        }
    }
    out
}

fn ops_of(b: &WriteBatch) -> Vec<FamilyOp> {
    b.iter_cf()
        .map(|(fam, op)| {
            let op = match op {
                BatchOp::Put(k, v) => Op::Put(k.to_vec(), v.to_vec()),
                BatchOp::Delete(k) => Op::Delete(k.to_vec()),
                BatchOp::DeleteRange(s, e) => Op::DeleteRange(s.to_vec(), e.to_vec()),
                BatchOp::Merge(k, v) => Op::Merge(k.to_vec(), v.to_vec()),
            };
            (fam, op)
        })
        .collect()
}

pub fn run(data: &[u8]) {
    let Ok((seq, batch)) = WriteBatch::decode(data) else {
        return;
    };
    let (rseq, count, rops) = reference(data).expect("decode accepted a malformed batch");
    let ops = ops_of(&batch);
    assert_eq!(seq, rseq);
    assert_eq!(ops, rops, "decoded operations differ from the format");
    assert_eq!(batch.len(), count as usize);
    assert!(batch.size_in_bytes() <= data.len(), "decoded batch larger than its encoding");
    let canon = encode(seq, &ops);
    let (seq2, again) = WriteBatch::decode(&canon).expect("canonical encoding decodes");
    assert_eq!(seq2, seq);
    assert_eq!(again, batch, "canonical re-encoding decodes differently");
}

pub fn seeds() -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = real_db()
        .logs
        .iter()
        .flat_map(|l| log_records(l))
        .take(64)
        .collect();
    out.push(encode(
        5,
        &[
            (0, Op::Put(b"a".to_vec(), vec![0; 200])),
            (0, Op::Delete(vec![0xff; 130])),
            (0, Op::DeleteRange(b"a".to_vec(), b"b".to_vec())),
        ],
    ));
    // Operations of column families, a large id among them.
    out.push(encode(
        9,
        &[
            (2, Op::Put(b"a".to_vec(), b"1".to_vec())),
            (0, Op::Merge(b"c".to_vec(), vec![1; 8])),
            (300, Op::Delete(b"b".to_vec())),
            (u32::MAX, Op::DeleteRange(b"a".to_vec(), b"z".to_vec())),
        ],
    ));
    out
}
